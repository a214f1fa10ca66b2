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

/* One key=value entry (key and value not terminated); false if either is unknown,
 * in which case o is left as it was. */
static bool parse_entry(struct options *o, const char *k, size_t klen, const char *v, size_t vlen)
{
	if (word_is(k, klen, "guard")) {
		if (word_is(v, vlen, "auto")) o->guard = GUARD_AUTO;
		else if (word_is(v, vlen, "madvise")) o->guard = GUARD_MADVISE;
		else if (word_is(v, vlen, "mprotect")) o->guard = GUARD_MPROTECT;
		else return false;
		return true;
	}
	if (word_is(k, klen, "check_at_exit")) {
		if (word_is(v, vlen, "0")) o->check_at_exit = false;
		else if (word_is(v, vlen, "1")) o->check_at_exit = true;
		else return false;
		return true;
	}
	return false;
}

void options_parse(struct options *o, const char *text)
{
	*o = (struct options){.guard = GUARD_AUTO, .check_at_exit = false};
	for (const char *p = text; p && *p;) {
		size_t n = strcspn(p, ",");
		const char *eq = memchr(p, '=', n);
		/* An entry without '=' is unknown whatever it says: no key takes no value. */
		if (n && (!eq || !parse_entry(o, p, (size_t)(eq - p), eq + 1, (size_t)(p + n - eq - 1)))) {
			char entry[64]; /* the entry alone, not the rest of the string */
			size_t len = MIN(n, sizeof entry - 1);
			memcpy(entry, p, len);
			entry[len] = 0;
			os_warn("ignoring unknown RAMPART_OPTIONS entry: ", entry);
		}
		p += n;
		if (*p == ',') p++;
	}
}

void options_read(struct options *o)
{
	options_parse(o, getauxval(AT_SECURE) ? NULL : getenv("RAMPART_OPTIONS"));
}
