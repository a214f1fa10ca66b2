/* options.c — the RAMPART_OPTIONS parser. No allocation: it walks the string in place
 * and formats its messages into fixed buffers. */
#define _GNU_SOURCE
#include "front/options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "base/report.h"
#include "base/text.h"

/* The parser's keys, from the table in base/option_table.h. */
struct key {
	const char *name;
	enum option_kind kind;
	size_t offset; /* of the field in struct options */
	size_t most;   /* OPTION_SIZE, OPTION_COUNT: largest accepted value */
	const char *values, *doc;
};

#define OPTION_FITS(key, kind, def, most, doc) OPTION_FITS_##kind(key, def, most)
RAMPART_OPTION_TABLE(OPTION_FITS)
#undef OPTION_FITS

static const struct key keys[] = {
#define OPTION_KEY(key, kind, def, most, doc) \
	{#key, OPTION_##kind, offsetof(struct options, key), most, OPTION_VALUES_##kind, doc},
	RAMPART_OPTION_TABLE(OPTION_KEY)
#undef OPTION_KEY
};

static bool word_is(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && memcmp(s, w, n) == 0;
}

/* "<source>: <a>'<quoted>'<b>" as one warning line. */
static void complain(const char *source, const char *a, const char *q, size_t qlen, const char *b, size_t num)
{
	char msg[240];
	struct out o = out_string(msg, sizeof msg);
	out_str(&o, source);
	out_str(&o, ": ");
	out_str(&o, a);
	out_str(&o, "'");
	out_mem(&o, q, MIN(qlen, (size_t)64));
	out_str(&o, "'");
	out_str(&o, b);
	if (num != SIZE_MAX) {
		out_num(&o, num);
		out_str(&o, ")");
	}
	report_warn(WARN_OPTION, msg);
}

/* A decimal count, optionally followed by k, m or g (powers of 1024) for sizes. */
static bool parse_number(const char *v, size_t n, bool suffix, size_t *out)
{
	size_t x = 0, i = 0, shift = 0;
	if (!n) return false;
	for (; i < n && v[i] >= '0' && v[i] <= '9'; i++) {
		if (x > (SIZE_MAX - 9) / 10) return false;
		x = x * 10 + (size_t)(v[i] - '0');
	}
	if (!i) return false;
	if (i < n && suffix && i + 1 == n) {
		char c = v[i] | 0x20;
		shift = c == 'k' ? 10 : c == 'm' ? 20 : c == 'g' ? 30 : 0;
		if (!shift) return false;
		if (x > (SIZE_MAX >> shift)) return false;
		x <<= shift;
		i++;
	}
	if (i != n) return false;
	*out = x;
	return true;
}

static void parse_entry(struct options *o, const char *k, size_t klen, const char *v, size_t vlen, const char *src)
{
	const struct key *key = NULL;
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (word_is(k, klen, keys[i].name)) key = &keys[i];
	if (!key) {
		complain(src, "unknown key ", k, klen, "; RAMPART_OPTIONS=help=1 lists the keys", SIZE_MAX);
		return;
	}
	char *field = (char *)o + key->offset;
	size_t num;
	switch (key->kind) {
	case OPTION_GUARD: {
		enum guard_backend g;
		if (word_is(v, vlen, "auto")) g = GUARD_AUTO;
		else if (word_is(v, vlen, "madvise")) g = GUARD_MADVISE;
		else if (word_is(v, vlen, "mprotect")) g = GUARD_MPROTECT;
		else return complain(src, "bad value ", v, vlen, " for guard: expected auto, madvise or mprotect", SIZE_MAX);
		memcpy(field, &g, sizeof g);
		return;
	}
	case OPTION_BOOL: {
		bool b;
		if (word_is(v, vlen, "0")) b = false;
		else if (word_is(v, vlen, "1")) b = true;
		else {
			char what[64];
			struct out w = out_string(what, sizeof what);
			out_str(&w, " for ");
			out_str(&w, key->name);
			out_str(&w, ": expected 0 or 1");
			return complain(src, "bad value ", v, vlen, what, SIZE_MAX);
		}
		/* A build without canaries has nothing for the exit check to look at: saying so
		 * beats a check that passes whatever happened. */
		if (b && !CONFIG_SLOT_CANARY && key->offset == offsetof(struct options, check_at_exit))
			return complain(src, "bad value ", v, vlen,
					" for check_at_exit: this build has no slot canaries (CONFIG_SLOT_CANARY=0)", SIZE_MAX);
		memcpy(field, &b, sizeof b);
		return;
	}
	case OPTION_ONOFF: {
		bool b;
		if (word_is(v, vlen, "on") || word_is(v, vlen, "1")) b = true;
		else if (word_is(v, vlen, "off") || word_is(v, vlen, "0")) b = false;
		else {
			char what[64];
			struct out w = out_string(what, sizeof what);
			out_str(&w, " for ");
			out_str(&w, key->name);
			out_str(&w, ": expected on or off");
			return complain(src, "bad value ", v, vlen, what, SIZE_MAX);
		}
		/* Without zero-on-free a freed slot holds its last owner's bytes: there is
		 * nothing the check could compare with. */
		if (b && !CONFIG_ZERO_ON_FREE && key->offset == offsetof(struct options, write_after_free_check))
			return complain(src, "bad value ", v, vlen,
					" for write_after_free_check: this build does not zero freed slots "
					"(CONFIG_ZERO_ON_FREE=0)", SIZE_MAX);
		memcpy(field, &b, sizeof b);
		return;
	}
	case OPTION_PROFILE: {
		enum profile pr;
		if (word_is(v, vlen, "strong")) pr = PROFILE_STRONG;
		else if (word_is(v, vlen, "light")) pr = PROFILE_LIGHT;
		else return complain(src, "bad value ", v, vlen, " for profile: expected strong or light", SIZE_MAX);
		options_set_profile(o, pr);
		struct out w = out_string(o->profile_from, sizeof o->profile_from);
		out_str(&w, src);
		return;
	}
	case OPTION_ONERROR: {
		enum on_error e;
		if (word_is(v, vlen, "abort")) e = ON_ERROR_ABORT;
		else if (word_is(v, vlen, "report")) e = ON_ERROR_REPORT;
		else return complain(src, "bad value ", v, vlen, " for on_error: expected abort or report", SIZE_MAX);
		memcpy(field, &e, sizeof e);
		return;
	}
	case OPTION_MTE: {
		enum mte_option m;
		if (word_is(v, vlen, "sync")) m = MTE_OPTION_SYNC;
		else if (word_is(v, vlen, "async")) m = MTE_OPTION_ASYNC;
		else if (word_is(v, vlen, "off")) m = MTE_OPTION_OFF;
		else return complain(src, "bad value ", v, vlen, " for mte: expected sync, async or off", SIZE_MAX);
		memcpy(field, &m, sizeof m);
		return;
	}
	case OPTION_STATS: {
		enum stats_report s;
		if (word_is(v, vlen, "0")) s = STATS_OFF;
		else if (word_is(v, vlen, "1") || word_is(v, vlen, "text")) s = STATS_TEXT;
		else if (word_is(v, vlen, "json")) s = STATS_JSON;
		else return complain(src, "bad value ", v, vlen, " for stats: expected 0, 1, text or json", SIZE_MAX);
		memcpy(field, &s, sizeof s);
		return;
	}
	case OPTION_PATH: {
		char what[96];
		struct out w = out_string(what, sizeof what);
		out_str(&w, " for ");
		out_str(&w, key->name);
		if (vlen >= OPTIONS_PATH_MAX || memchr(v, 0, vlen)) {
			out_str(&w, ": too long (at most ");
			return complain(src, "bad value ", v, vlen, what, OPTIONS_PATH_MAX - 1);
		}
		memcpy(field, v, vlen);
		field[vlen] = 0;
		/* A file for the report asks for one: stats_file alone turns it on, as stats=1
		 * (a later stats=0 turns it off again), except where the file is ignored. */
		if (key->offset == offsetof(struct options, stats_file) && vlen && o->stats == STATS_OFF &&
		    !getauxval(AT_SECURE))
			o->stats = STATS_TEXT;
		return;
	}
	case OPTION_SIZE:
	case OPTION_COUNT: {
		char what[96];
		struct out w = out_string(what, sizeof what);
		out_str(&w, " for ");
		out_str(&w, key->name);
		if (!parse_number(v, vlen, key->kind == OPTION_SIZE, &num)) {
			out_str(&w, key->kind == OPTION_SIZE ? ": expected a byte count, optionally with k, m or g"
						: ": expected a whole number");
			return complain(src, "bad value ", v, vlen, what, SIZE_MAX);
		}
		if (num > key->most) {
			out_str(&w, ": too big (at most ");
			return complain(src, "bad value ", v, vlen, what, key->most);
		}
		memcpy(field, &num, sizeof num);
		return;
	}
	}
}

/* The key named name, or NULL. */
static const struct key *key_named(const char *name)
{
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (!strcmp(keys[i].name, name)) return &keys[i];
	return NULL;
}

void options_say_profile(struct out *w, const struct options *o)
{
	char num[24];
	out_str(w, "profile ");
	out_str(w, option_value_text(OPTION_PROFILE, &o->profile, num));
	out_str(w, " (");
	out_str(w, options_profile_from(o));
	out_str(w, ":");
	const char *sep = " ";
#define OPTION_SAY(opt, value)                                                                         \
	do {                                                                                           \
		const struct key *k_ = key_named(#opt);                                                \
		out_str(w, sep);                                                                       \
		out_str(w, #opt "=");                                                                  \
		out_str(w, option_value_text(k_->kind, (const char *)o + k_->offset, num));            \
		sep = ", ";                                                                            \
	} while (0);
	RAMPART_PROFILE_LIGHT(OPTION_SAY)
#undef OPTION_SAY
	out_str(w, ")");
}

int options_value(const struct options *o, const char *name, unsigned long *value)
{
	const struct key *k = name ? key_named(name) : NULL;
	if (!k || k->kind == OPTION_PATH) return -1;
	const char *field = (const char *)o + k->offset;
	switch (k->kind) {
	case OPTION_BOOL:
	case OPTION_ONOFF: *value = *(const bool *)field; return 0;
	case OPTION_SIZE:
	case OPTION_COUNT: *value = *(const size_t *)field; return 0;
	case OPTION_GUARD: *value = (unsigned long)*(const enum guard_backend *)field; return 0;
	case OPTION_STATS: *value = (unsigned long)*(const enum stats_report *)field; return 0;
	case OPTION_ONERROR: *value = (unsigned long)*(const enum on_error *)field; return 0;
	case OPTION_MTE: *value = (unsigned long)*(const enum mte_option *)field; return 0;
	case OPTION_PROFILE: *value = (unsigned long)*(const enum profile *)field; return 0;
	case OPTION_PATH: break;
	}
	return -1;
}

static bool is_space(char c) { return c == ' ' || c == '\t'; }

/* Trim spaces and tabs at both ends of [*s, *s + *n). */
static void trim(const char **s, size_t *n)
{
	while (*n && is_space(**s)) (*s)++, (*n)--;
	while (*n && is_space((*s)[*n - 1])) (*n)--;
}

void options_apply(struct options *o, const char *text, size_t len, const char *source)
{
	const char *end = text + len;
	for (const char *p = text; p && p < end;) {
		size_t n = 0;
		while (p + n < end && p[n] != ',' && p[n] != ':') n++;
		const char *e = p;
		size_t en = n;
		trim(&e, &en);
		if (en) {
			const char *eq = memchr(e, '=', en);
			if (!eq) {
				if (word_is(e, en, "passthrough")) o->passthrough = true;
				else complain(source, "entry ", e, en,
					      " has no '=' (the grammar is key=value, separated by ',' or ':')", SIZE_MAX);
			} else {
				const char *k = e, *v = eq + 1;
				size_t klen = (size_t)(eq - e), vlen = (size_t)(e + en - v);
				trim(&k, &klen);
				trim(&v, &vlen);
				parse_entry(o, k, klen, v, vlen, source);
			}
		}
		p += n;
		if (p < end) p++;
	}
}

void options_parse(struct options *o, const char *text)
{
	options_default(o);
	if (text) options_apply(o, text, strlen(text), "RAMPART_OPTIONS");
}

void options_read(struct options *o)
{
	options_parse(o, getauxval(AT_SECURE) ? NULL : getenv("RAMPART_OPTIONS"));
	if (o->help) options_help();
}

void options_help(void)
{
	struct options d;
	options_default(&d);
	char buf[3072]; /* the whole list: one write */
	struct out o = out_fd(STDERR_FILENO, buf, sizeof buf);
	out_str(&o, "rampart: RAMPART_OPTIONS=key=value[,key=value...] (',' or ':' between entries; "
		    "SIZE takes k, m or g):\n");
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		char num[24];
		out_str(&o, "  ");
		out_str(&o, keys[i].name);
		out_str(&o, "=");
		out_str(&o, keys[i].values);
		out_str(&o, "  ");
		out_str(&o, keys[i].doc);
		out_str(&o, " (default ");
		out_str(&o, option_value_text(keys[i].kind, (const char *)&d + keys[i].offset, num));
		if (keys[i].kind == OPTION_SIZE || keys[i].kind == OPTION_COUNT) {
			out_str(&o, ", at most ");
			out_num(&o, keys[i].most);
		}
		out_str(&o, ")\n");
	}
	if (CONFIG_POLICY_PATH[0])
		out_str(&o, "rampart: the same entries per program, set by root: " CONFIG_POLICY_PATH
			    " (rampart.conf(5))\n");
	out_flush(&o); /* keeps errno: start-up happens inside the program's malloc */
}
