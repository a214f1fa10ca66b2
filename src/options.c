/* options.c — the RAMPART_OPTIONS parser. No allocation: it walks the string in place. */
#define _GNU_SOURCE
#include "options.h"

#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "os.h"

static bool word_is(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && memcmp(s, w, n) == 0;
}

void options_parse(struct options *o, const char *text)
{
	*o = (struct options){.guard = GUARD_AUTO};
	for (const char *p = text; p && *p;) {
		size_t n = strcspn(p, ",");
		const char *eq = memchr(p, '=', n);
		size_t klen = eq ? (size_t)(eq - p) : n;
		const char *v = eq ? eq + 1 : p + n;
		size_t vlen = (size_t)(p + n - v);
		if (word_is(p, klen, "guard") && word_is(v, vlen, "auto")) o->guard = GUARD_AUTO;
		else if (word_is(p, klen, "guard") && word_is(v, vlen, "madvise")) o->guard = GUARD_MADVISE;
		else if (word_is(p, klen, "guard") && word_is(v, vlen, "mprotect")) o->guard = GUARD_MPROTECT;
		else if (n) os_warn("ignoring unknown RAMPART_OPTIONS entry: ", p);
		p += n;
		if (*p == ',') p++;
	}
}

void options_read(struct options *o)
{
	options_parse(o, getauxval(AT_SECURE) ? NULL : getenv("RAMPART_OPTIONS"));
}
