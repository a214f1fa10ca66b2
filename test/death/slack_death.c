/*
 * slack_death — a write past the requested size that stays inside the slot (into its
 * slack, before the canary) is fatal at the block's free, in every class that keeps
 * the requested size (a dirty extent per slot: 128 bytes, then 256 and up), so that no
 * byte of it is handed to the slot's next owner (docs/slab.md, "The slack").
 *
 *   block of n bytes, a byte written between n and the usable size (one past n too)
 *     -> caught at its free, at its free by another arena's thread, at a
 *        malloc_usable_size or malloc_object_size, at a realloc that grows it in place
 *   the same write after the free -> caught at the next owner's free, or when the next
 *     owner asks for more than the last one did, at its allocation
 *
 * Controls: blocks written to their full request, or to their usable size once they
 * asked for it, freed in every class without a report.
 */
#include "../harness.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

#include "rampart.h"
#include "slab/sizeclass.h"
#include "../all_arenas.h"
#include "../profile.h"
#include "../site.h"

/* The byte past the request that each case writes (changed, whatever it was: a fixed
 * value could equal what is there). */
static void poke(char *p, size_t at) { p[at] ^= 0x5a; }

static void overflow_free(size_t n, size_t at)
{
	char *p = malloc(n);
	memset(p, 'r', n);
	poke(p, at);
	free(p);
}

/* Class 128 (usable 120): 105 bytes asked, extent 112, slack 112..119. (Without
 * canaries its usable size is 128 and a request in it is 113 or more: no slack.) */
static void slack_128(void) { overflow_free(105, 115); }
static void slack_1000(void) { overflow_free(1000, 1010); }
/* One byte past the request: extents are kept to the byte. */
static void off_by_one_1000(void) { overflow_free(1000, 1000); }
static void off_by_one_5001(void) { overflow_free(5001, 5001); }
/* Above 64 KiB extents are kept in 2-byte units: one past an even request. */
static void off_by_one_100000(void) { overflow_free(100000, 100000); }
static void slack_5000(void) { overflow_free(5000, 5100); }
/* Half a page past the request: in class 16384 (usable 16376) from 14400. */
static void slack_pages(void) { overflow_free(14400, 16370); }
static void slack_100000(void) { overflow_free(100000, 110000); }

static void *free_it(void *p)
{
	free(p);
	return NULL;
}

/* Freed by a thread of another arena: the free without the lock (a batch) sees the
 * slack written and leaves the report to the locked path. */
static void slack_other_thread(void)
{
	char *p = malloc(5000);
	poke(p, 5100);
	pthread_t t;
	if (pthread_create(&t, NULL, free_it, p) || pthread_join(t, NULL)) _exit(3);
}

static void slack_usable_size(void)
{
	char *p = malloc(1000);
	poke(p, 1010);
	volatile size_t u = malloc_usable_size(p);
	(void)u;
}

static void slack_object_size(void)
{
	char *p = malloc(5000);
	poke(p, 5050);
	volatile size_t u = malloc_object_size(p);
	(void)u;
}

/* 4,700 and 5,100 bytes share class 5120: the realloc stays in place and takes in the
 * bytes the overflow wrote. */
static void slack_realloc_grow(void)
{
	char *p = malloc(4700);
	poke(p, 5000);
	p = realloc(p, 5100);
	if (p) p[0] = 0;
}

/* A stale pointer writes into the freed slot past what its owner asked for: the
 * allocations that follow (at its call site: site.h) ask as much, so the slot's reuse scans only that far, and
 * the next owner's free finds the write. */
static void slack_after_free(void)
{
	char *p = site_malloc(5000);
	free(p);
	poke(p, 5100);
	for (int k = 0; k < 300000; k++) free(site_malloc(5000));
}

/* The same write, and the next owner asks for more than the last one did: its
 * allocation scans what it takes in and finds it (the write-after-free check). */
static void slack_after_free_bigger(void)
{
	char *p = site_malloc(4700);
	free(p);
	poke(p, 5000);
	for (int k = 0; k < 300000; k++) free(site_malloc(5100));
}

/* Controls: in every class, a block written to its request, one written to its usable
 * size after asking it, one grown in place and written, one allocated by calloc;
 * freed here and by another thread. */
static void controls(void)
{
	for (unsigned c = 1; c < SC_COUNT; c++) {
		size_t u = sc_usable(c), lo = sc_usable(c - 1) + 1, n = (lo + u) / 2;
		char *p = malloc(n);
		memset(p, 'a', n);
		free(p);
		p = malloc(lo);
		memset(p, 'b', malloc_usable_size(p));
		free(p);
		p = malloc(lo);
		memset(p, 'c', lo);
		char *q = realloc(p, u);
		if (q != p) _exit(4); /* the same class: in place */
		memset(q, 'd', u);
		free(q);
		p = calloc(1, n);
		for (size_t i = 0; i < n; i++)
			if (p[i]) _exit(5);
		memset(p, 'e', n);
		pthread_t t;
		if (pthread_create(&t, NULL, free_it, p) || pthread_join(t, NULL)) _exit(3);
	}
}

/* A case the build can catch: DIE_FATAL with the slack's report; else not run, and
 * what is missing said. */
#define SLACK_REPORT "into the slot's slack"
#define CAUGHT_WITH(cfg, says, what) (cfg) ? DIE_FATAL : DIE_NOT_BUILT, (cfg) ? says : what
#define ZERO_ON_FREE "zero-on-free (CONFIG_ZERO_ON_FREE=0): a slot's bytes past the request are not known"
#define SLACK CAUGHT_WITH(CONFIG_ZERO_ON_FREE, SLACK_REPORT, ZERO_ON_FREE)

static struct death_case cases[] = {
	/* First: where every case is compiled out, the skip names the last one's reason. */
	{"write after free at 5000 of 4700 bytes, next owner asks 5100", slack_after_free_bigger, DIE_FATAL,
	 "write after free"}, /* unless the check is off (main) */
	{"105 bytes in class 128, a byte written at 115, then free", slack_128,
	 CAUGHT_WITH(CONFIG_ZERO_ON_FREE && CONFIG_SLOT_CANARY, SLACK_REPORT,
		     "zero-on-free or canaries (without canaries class 128 has no slack)")},
	{"1000 bytes, a byte written at 1010, then free", slack_1000, SLACK},
	{"1000 bytes, a byte written at 1000 (one past), then free", off_by_one_1000, SLACK},
	{"5001 bytes, a byte written at 5001 (one past), then free", off_by_one_5001, SLACK},
	{"100000 bytes, a byte written at 100000 (one past), then free", off_by_one_100000, SLACK},
	{"5000 bytes, a byte written at 5100, then free", slack_5000, SLACK},
	{"14400 bytes, a byte written at 16370, then free", slack_pages, SLACK},
	{"100000 bytes, a byte written at 110000, then free", slack_100000, SLACK},
	{"5000 bytes, a byte written at 5100, freed by another thread", slack_other_thread, SLACK},
	{"1000 bytes, a byte written at 1010, then malloc_usable_size", slack_usable_size, SLACK},
	{"5000 bytes, a byte written at 5050, then malloc_object_size", slack_object_size, SLACK},
	{"4700 bytes, a byte written at 5000, then realloc to 5100", slack_realloc_grow, SLACK},
	{"write after free at 5100 of 5000 bytes, found at the next free", slack_after_free, SLACK},
	{"every class: requests, usable sizes, realloc, calloc, written and freed", controls, DIE_NOT, NULL},
};

int main(int argc, char **argv)
{
	(void)argc;
	all_arenas(argv); /* the free by another arena's thread */
	if (!test_waf_check()) death_not_on(&cases[0], "write-after-free check (write_after_free_check=off)");
	return death_run_all(cases, sizeof cases / sizeof *cases);
}
