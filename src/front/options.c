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
	const char *doc;
};

#define OPTION_FITS(key, kind, def, most, doc) OPTION_FITS_##kind(key, def, most)
RAMPART_OPTION_TABLE(OPTION_FITS)
#undef OPTION_FITS

static const struct key keys[] = {
#define OPTION_KEY(key, kind, def, most, doc) \
	{#key, OPTION_##kind, offsetof(struct options, key), most, doc},
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

/* Store value v in a field of a kind with words. */
static void store_word(enum option_kind kind, void *field, int v)
{
	switch (kind) {
#define OPTION_KIND_STORE(kind, type, words)      \
	case OPTION_##kind: {                     \
		type t = (type)v;                 \
		memcpy(field, &t, sizeof t);      \
		return;                           \
	}
		RAMPART_OPTION_KINDS(OPTION_KIND_STORE)
#undef OPTION_KIND_STORE
	}
}

/* A word value: its value in *v; else a complaint naming the words expected ("expected
 * auto, madvise or mprotect"), and false. */
static bool parse_word(const struct key *key, const char *v, size_t vlen, const char *src, int *out)
{
	const struct option_word *words = option_words(key->kind);
	for (const struct option_word *w = words; w->word; w++)
		if (word_is(v, vlen, w->word)) {
			*out = w->value;
			return true;
		}
	char what[128];
	struct out o = out_string(what, sizeof what);
	out_str(&o, " for ");
	out_str(&o, key->name);
	out_str(&o, ": expected ");
	size_t shown = 0, n = 0;
	for (const struct option_word *w = words; w->word; w++) shown += w->use != OPTION_WORD_ACCEPTED;
	for (const struct option_word *w = words; w->word; w++) {
		if (w->use == OPTION_WORD_ACCEPTED) continue;
		if (n++) out_str(&o, n == shown ? " or " : ", ");
		out_str(&o, w->word);
	}
	complain(src, "bad value ", v, vlen, what, SIZE_MAX);
	return false;
}

/* What a word value may not be in this build, or NULL. A build without canaries has
 * nothing for the exit check to look at, one without zero-on-free nothing for the
 * write-after-free check to compare with: saying so beats a check that passes
 * whatever happened. */
static const char *refused_word(const struct key *key, int v)
{
	if (v && !CONFIG_SLOT_CANARY && key->offset == offsetof(struct options, check_at_exit))
		return " for check_at_exit: this build has no slot canaries (CONFIG_SLOT_CANARY=0)";
	if (v && !CONFIG_ZERO_ON_FREE && key->offset == offsetof(struct options, write_after_free_check))
		return " for write_after_free_check: this build does not zero freed slots (CONFIG_ZERO_ON_FREE=0)";
	return NULL;
}

/* What a number may not be, or NULL: the partitions are the top bits of a hash (base/
 * partition.h), so a power of two. */
static const char *refused_number(const struct key *key, size_t num)
{
	if (key->offset == offsetof(struct options, partitions) && (!num || (num & (num - 1))))
		return " for partitions: expected a power of two";
	return NULL;
}

/* A PATH value into its field. */
static void set_path(struct options *o, const struct key *key, const char *v, size_t vlen, const char *src)
{
	char what[96];
	struct out w = out_string(what, sizeof what);
	out_str(&w, " for ");
	out_str(&w, key->name);
	if (vlen >= OPTIONS_PATH_MAX || memchr(v, 0, vlen)) {
		out_str(&w, ": too long (at most ");
		return complain(src, "bad value ", v, vlen, what, OPTIONS_PATH_MAX - 1);
	}
	char *field = (char *)o + key->offset;
	memcpy(field, v, vlen);
	field[vlen] = 0;
	/* A file for the report asks for one: stats_file alone turns it on, as stats=1 (a
	 * later stats=0 turns it off again), except where the file is ignored. */
	if (key->offset == offsetof(struct options, stats_file) && vlen && o->stats == STATS_OFF && !getauxval(AT_SECURE))
		o->stats = STATS_TEXT;
}

/* A SIZE or COUNT value into its field, within the table's bound. */
static void set_number(struct options *o, const struct key *key, const char *v, size_t vlen, const char *src)
{
	char what[96];
	struct out w = out_string(what, sizeof what);
	out_str(&w, " for ");
	out_str(&w, key->name);
	size_t num;
	if (!parse_number(v, vlen, key->kind == OPTION_SIZE, &num)) {
		out_str(&w, key->kind == OPTION_SIZE ? ": expected a byte count, optionally with k, m or g"
					: ": expected a whole number");
		return complain(src, "bad value ", v, vlen, what, SIZE_MAX);
	}
	if (num > key->most) {
		out_str(&w, ": too big (at most ");
		return complain(src, "bad value ", v, vlen, what, key->most);
	}
	const char *refused = refused_number(key, num);
	if (refused) return complain(src, "bad value ", v, vlen, refused, SIZE_MAX);
	memcpy((char *)o + key->offset, &num, sizeof num);
}

/* A value of one of the word kinds (the table's words for that kind). */
static void set_word(struct options *o, const struct key *key, const char *v, size_t vlen, const char *src)
{
	int w;
	if (!parse_word(key, v, vlen, src, &w)) return;
	const char *refused = refused_word(key, w);
	if (refused) return complain(src, "bad value ", v, vlen, refused, SIZE_MAX);
	if (key->kind == OPTION_PROFILE) {
		/* Its options set where it stands; where it came from, for the reports. */
		options_set_profile(o, (enum profile)w);
		struct out from = out_string(o->profile_from, sizeof o->profile_from);
		out_str(&from, src);
		return;
	}
	store_word(key->kind, (char *)o + key->offset, w);
}

static void parse_entry(struct options *o, const char *k, size_t klen, const char *v, size_t vlen, const char *src)
{
	const struct key *key = NULL;
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (word_is(k, klen, keys[i].name)) key = &keys[i];
	if (!key) complain(src, "unknown key ", k, klen, "; RAMPART_OPTIONS=help=1 lists the keys", SIZE_MAX);
	else if (option_words(key->kind)->word) set_word(o, key, v, vlen, src);
	else if (key->kind == OPTION_PATH) set_path(o, key, v, vlen, src);
	else set_number(o, key, v, vlen, src);
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

static bool set_by_profile(const char *name)
{
#define OPTION_IN_PROFILE(opt, value) \
	if (!strcmp(name, #opt)) return true;
	RAMPART_PROFILE_LIGHT(OPTION_IN_PROFILE)
#undef OPTION_IN_PROFILE
	return false;
}

static bool named_in(const char *name, const char *const *names)
{
	for (size_t i = 0; names[i]; i++)
		if (!strcmp(names[i], name)) return true;
	return false;
}

void options_say_rest(struct out *w, const struct options *o, const char *const *elsewhere)
{
	char num[24];
	const char *sep = "";
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const struct key *k = &keys[i];
		if (set_by_profile(k->name) || named_in(k->name, elsewhere)) continue;
		out_str(w, sep);
		out_str(w, k->name);
		out_str(w, "=");
		out_str(w, option_value_text(k->kind, (const char *)o + k->offset, num));
		sep = ", ";
	}
}

int options_value(const struct options *o, const char *name, unsigned long *value)
{
	const struct key *k = name ? key_named(name) : NULL;
	if (!k || k->kind == OPTION_PATH) return -1;
	const char *field = (const char *)o + k->offset;
	if (k->kind == OPTION_SIZE || k->kind == OPTION_COUNT) *value = *(const size_t *)field;
	else *value = (unsigned long)option_word_field(k->kind, field);
	return 0;
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
		char values[64];
		out_str(&o, option_values_text(keys[i].kind, values));
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
