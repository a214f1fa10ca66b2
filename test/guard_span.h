/*
 * guard_span.h — the set-up the guard layer's unit tests (Check) share: a region of its
 * own whose open span, between one-page guards, holds a pattern the case can check its
 * neighbours by, and is locked where the case is about locked memory.
 */
#ifndef RAMPART_TEST_GUARD_SPAN_H
#define RAMPART_TEST_GUARD_SPAN_H

#include <check.h>
#include <sys/mman.h>

#include "guard/guard.h"

/* p[i] = seed + 7 i: each byte tells where it was. */
static inline void fill(char *p, size_t n, char seed)
{
	for (size_t i = 0; i < n; i++) p[i] = (char)(seed + i * 7);
}

/* Map r: len open bytes (whole pages) between one-page guards, unnamed, filled from seed
 * and mlocked when locked; *lead is the span's offset in r, the span is returned. */
static inline char *open_span(struct guard_region *r, size_t *lead, size_t len, char seed, bool locked)
{
	size_t trail = os_page;
	*lead = os_page;
	ck_assert(guard_map(r, lead, len, &trail, 0, NULL));
	char *p = (char *)(r->base + *lead);
	fill(p, len, seed);
	if (locked) ck_assert_int_eq(mlock(p, len), 0);
	return p;
}

#endif
