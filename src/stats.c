/* stats.c — storage for the counters and the public snapshot. */
#define _GNU_SOURCE
#include "stats.h"

#include <errno.h>
#include <unistd.h>

#include "../include/rampart.h"

_Atomic unsigned long stat_counters[STAT_COUNT];

_Static_assert(sizeof(struct rampart_stats) / sizeof(unsigned long) == STAT_COUNT,
	       "struct rampart_stats must list every counter in enum stat order");

__attribute__((visibility("default"))) void rampart_get_stats(struct rampart_stats *out)
{
	unsigned long *dst = (unsigned long *)out;
	for (int i = 0; i < STAT_COUNT; i++)
		dst[i] = atomic_load_explicit(&stat_counters[i], memory_order_relaxed);
}

/* --- reports --- */

void out_flush(struct out *o)
{
	int saved = errno;
	for (size_t done = 0; done < o->n;) {
		ssize_t w = write(o->fd, o->buf + done, o->n - done);
		if (w < 0 && errno == EINTR) continue;
		if (w <= 0) break;
		done += (size_t)w;
	}
	o->n = 0;
	errno = saved;
}

void out_str(struct out *o, const char *s)
{
	for (; *s; s++) {
		if (o->n == sizeof o->buf) out_flush(o);
		o->buf[o->n++] = *s;
	}
}

void out_num(struct out *o, unsigned long v)
{
	char tmp[24];
	int n = 0;
	do tmp[n++] = (char)('0' + v % 10); while (v /= 10);
	char s[24];
	int i = 0;
	while (n) s[i++] = tmp[--n];
	s[i] = 0;
	out_str(o, s);
}

void out_fixed(struct out *o, unsigned long v, unsigned decimals)
{
	unsigned long scale = 1;
	for (unsigned i = 0; i < decimals; i++) scale *= 10;
	out_num(o, v / scale);
	if (!decimals) return;
	out_str(o, ".");
	unsigned long frac = v % scale;
	for (unsigned long d = scale / 10; d; d /= 10) {
		char c[2] = {(char)('0' + frac / d % 10), 0};
		out_str(o, c);
	}
}
