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

enum kind { K_GUARD, K_BOOL, K_STATS, K_SIZE, K_COUNT, K_ONOFF, K_ONERROR };

struct key {
	const char *name;
	enum kind kind;
	size_t offset;  /* of the field in struct options */
	size_t max;     /* K_SIZE, K_COUNT: largest accepted value */
	const char *help;
};

#define F(field) offsetof(struct options, field)
static const struct key keys[] = {
	{"guard", K_GUARD, F(guard), 0, "auto|madvise|mprotect  guard backend (default auto: probe)"},
	{"check_at_exit", K_BOOL, F(check_at_exit), 0, "0|1  check every live slot's canary at exit (default 0)"},
	{"stats", K_STATS, F(stats), 0, "0|1|text|json  statistics report on stderr at exit (default 0)"},
	{"verbose", K_BOOL, F(verbose), 0, "0|1  say at start-up what was chosen (default 0)"},
	{"help", K_BOOL, F(help), 0, "1  print this list"},
	{"large_quarantine_bytes", K_SIZE, F(large_quarantine_bytes), (size_t)1 << 46,
	 "SIZE  address space the large-region quarantine holds"},
	{"large_quarantine_entries", K_COUNT, F(large_quarantine_entries), CONFIG_REGION_QUARANTINE_FIFO,
	 "N  FIFO entries of the large-region quarantine"},
	{"large_cache_bytes", K_SIZE, F(large_cache_bytes), (size_t)1 << 46,
	 "SIZE  address space the large-region reuse cache holds"},
	{"large_cache_entries", K_COUNT, F(large_cache_entries), CONFIG_CACHE_ENTRIES,
	 "N  regions the reuse cache holds (0: no cache)"},
	{"large_cache_decay_ms", K_COUNT, F(large_cache_decay_ms), (size_t)1 << 40,
	 "N  milliseconds a cached region may stay idle"},
	{"large_refill_bytes", K_SIZE, F(large_refill_bytes), (size_t)1 << 46,
	 "SIZE  most bytes of new large blocks populated up front, earned by touched ones freed (0: off)"},
	{"arenas", K_COUNT, F(arenas), CONFIG_SLAB_ARENAS,
	 "N  slab arenas threads are spread over (0: one per CPU the process may run on)"},
	{"passthrough", K_BOOL, F(passthrough), 0,
	 "0|1  hand every call to the C library's allocator, for the life of the process (default 0;"
	 " the bare word passthrough means 1)"},
	{"sized_free", K_ONOFF, F(sized_free), 0,
	 "on|off  abort on a sized free or sized delete whose size does not match (default on)"},
	{"on_error", K_ONERROR, F(on_error), 0,
	 "abort|report  report an invalid, double or mis-sized free and carry on (default abort)"},
};
#undef F

void options_default(struct options *o)
{
	*o = (struct options){
		.guard = GUARD_AUTO,
		.large_quarantine_bytes = CONFIG_REGION_QUARANTINE_BYTES,
		.large_quarantine_entries = CONFIG_REGION_QUARANTINE_FIFO,
		.large_cache_bytes = CONFIG_CACHE_BYTES,
		.large_cache_entries = CONFIG_CACHE_ENTRIES,
		.large_cache_decay_ms = CONFIG_CACHE_DECAY_MS,
		.large_refill_bytes = CONFIG_LARGE_REFILL_BYTES,
		.sized_free = true,
		.on_error = ON_ERROR_ABORT,
	};
}

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
	case K_GUARD: {
		enum guard_backend g;
		if (word_is(v, vlen, "auto")) g = GUARD_AUTO;
		else if (word_is(v, vlen, "madvise")) g = GUARD_MADVISE;
		else if (word_is(v, vlen, "mprotect")) g = GUARD_MPROTECT;
		else return complain(src, "bad value ", v, vlen, " for guard: expected auto, madvise or mprotect", SIZE_MAX);
		memcpy(field, &g, sizeof g);
		return;
	}
	case K_BOOL: {
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
	case K_ONOFF: {
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
		memcpy(field, &b, sizeof b);
		return;
	}
	case K_ONERROR: {
		enum on_error e;
		if (word_is(v, vlen, "abort")) e = ON_ERROR_ABORT;
		else if (word_is(v, vlen, "report")) e = ON_ERROR_REPORT;
		else return complain(src, "bad value ", v, vlen, " for on_error: expected abort or report", SIZE_MAX);
		memcpy(field, &e, sizeof e);
		return;
	}
	case K_STATS: {
		enum stats_report s;
		if (word_is(v, vlen, "0")) s = STATS_OFF;
		else if (word_is(v, vlen, "1") || word_is(v, vlen, "text")) s = STATS_TEXT;
		else if (word_is(v, vlen, "json")) s = STATS_JSON;
		else return complain(src, "bad value ", v, vlen, " for stats: expected 0, 1, text or json", SIZE_MAX);
		memcpy(field, &s, sizeof s);
		return;
	}
	case K_SIZE:
	case K_COUNT: {
		char what[96];
		struct out w = out_string(what, sizeof what);
		out_str(&w, " for ");
		out_str(&w, key->name);
		if (!parse_number(v, vlen, key->kind == K_SIZE, &num)) {
			out_str(&w, key->kind == K_SIZE ? ": expected a byte count, optionally with k, m or g"
							: ": expected a whole number");
			return complain(src, "bad value ", v, vlen, what, SIZE_MAX);
		}
		if (num > key->max) {
			out_str(&w, ": too big (at most ");
			return complain(src, "bad value ", v, vlen, what, key->max);
		}
		memcpy(field, &num, sizeof num);
		return;
	}
	}
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
	char buf[3072]; /* the whole list: one write */
	struct out o = out_fd(STDERR_FILENO, buf, sizeof buf);
	struct options d;
	options_default(&d);
	out_str(&o, "rampart: RAMPART_OPTIONS=key=value[,key=value...] (',' or ':' between entries; "
		    "SIZE takes k, m or g):\n");
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		out_str(&o, "  ");
		out_str(&o, keys[i].name);
		out_str(&o, "=");
		out_str(&o, keys[i].help);
		if (keys[i].kind == K_SIZE || keys[i].kind == K_COUNT) {
			size_t v;
			memcpy(&v, (const char *)&d + keys[i].offset, sizeof v);
			out_str(&o, " (default ");
			out_num(&o, v);
			out_str(&o, ", at most ");
			out_num(&o, keys[i].max);
			out_str(&o, ")");
		}
		out_str(&o, "\n");
	}
#ifdef CONFIG_POLICY_PATH
	if (CONFIG_POLICY_PATH[0])
		out_str(&o, "rampart: the same entries per program, set by root: " CONFIG_POLICY_PATH " (rampart.conf(5))\n");
#endif
	out_flush(&o); /* errno unchanged: start-up happens inside the program's malloc */
}
