/*
 * site.h — one call site for a test's allocations. With call-site partitions (rampart's
 * option partitions, on by default) a freed small block is handed out again only to an
 * allocation of its own partition, chosen from where the allocation returns to, and a
 * freed large block's region only to a large one of its own: a test that frees a block
 * and expects a later allocation to get its slot or region back (to see a check fire at
 * the reuse, or the quarantine's wait) makes both through site_malloc. Whether a block
 * goes to another site is system/partitions' and system/large_partitions' business.
 */
#ifndef RAMPART_TEST_SITE_H
#define RAMPART_TEST_SITE_H

#include <stdlib.h>

/* malloc from one place in the program, whoever calls it. The empty asm keeps the call
 * from being a tail call, whose return address would be the caller's. */
static __attribute__((__noinline__, __unused__)) void *site_malloc(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : "+r"(p));
	return p;
}

/* calloc from one place (another than site_malloc's). */
static __attribute__((__noinline__, __unused__)) void *site_calloc(size_t count, size_t n)
{
	void *p = calloc(count, n);
	__asm__ volatile("" : "+r"(p));
	return p;
}

#endif
