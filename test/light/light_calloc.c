/*
 * light_calloc — built against the light variant (out/light/librampart.a), which has
 * zero-on-free but no write-after-free check: calloc must still return zeros after a
 * program wrote into a freed slot that calloc then hands out.
 *
 * The light variant picks the first free slot of a slab and has no slot quarantine,
 * so a freed slot between live neighbours is the next one handed out: the test
 * checks that it really got the dirtied slot back, or it would prove nothing. The
 * victim and the callocs that take it back are made at one call site (site.h): with
 * call-site partitions only its own site takes a freed slot back.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rampart.h"
#include "../site.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))

static int failures;
static bool canaries; /* the build keeps 8 bytes of every slot for a canary */

#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		if (!(cond)) {                                                             \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);                        \
			printf(__VA_ARGS__);                                               \
			printf("\n");                                                      \
			failures++;                                                        \
		}                                                                          \
	} while (0)

/* Dirty a freed slot of n-byte blocks, then calloc the same size until the slot
 * comes back; every calloc'ed byte must be zero. */
static void dirty_then_calloc(size_t n)
{
	enum { LIVE = 8, TRIES = 64 };
	unsigned char *live[LIVE], *got[TRIES];
	for (int i = 0; i < LIVE; i++) live[i] = site_calloc(1, n);
	unsigned char *victim = live[LIVE / 2];
	size_t usable = malloc_usable_size(victim);
	free(victim);
	/* The bug of some other part of the program: a write through a stale pointer. The
	 * slab stays open (it has live slots), so the write lands. Built without canaries
	 * (a slot of 16 bytes is all usable), a free checks a free neighbour's first 16 and
	 * last 8 bytes, which are then the program's: the write keeps off them, or the
	 * next free of a neighbour would catch it before calloc can show anything. It keeps
	 * within the n bytes calloc hands out, too: past them, in a class that keeps the
	 * requested size, it would be in the new owner's slack, which that owner's free
	 * finds written (docs/slab.md, "The slack"). */
	size_t from = canaries ? 0 : 16, to = MIN(canaries ? usable : usable - 8, n);
	if (to > from) memset(victim + from, 0xa5, to - from);
	int reused = -1;
	for (int t = 0; t < TRIES; t++) {
		got[t] = site_calloc(1, n);
		CHECK(got[t] != NULL, "calloc(1, %zu) failed", n);
		if (!got[t]) break;
		size_t bad = 0;
		for (size_t b = 0; b < n; b++) bad += got[t][b] != 0;
		CHECK(bad == 0, "calloc(1, %zu) returned %zu non-zero bytes (slot %p)", n, bad, (void *)got[t]);
		if (got[t] == victim) {
			reused = t;
			break;
		}
	}
	CHECK(reused >= 0, "size %zu: the dirtied slot %p never came back", n, (void *)victim);
	for (int t = 0; t <= (reused >= 0 ? reused : TRIES - 1); t++) free(got[t]);
	for (int i = 0; i < LIVE; i++)
		if (i != LIVE / 2) free(live[i]);
}

int main(void)
{
	void *probe = malloc(1);
	canaries = malloc_usable_size(probe) < 16;
	free(probe);
	static const size_t sizes[] = {1, 8, 24, 40, 100, 200, 1000, 4000, 20000};
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) dirty_then_calloc(sizes[i]);
	/* calloc's product form, and a count that overflows. */
	unsigned char *keep = malloc(88), *a = site_calloc(1, 88); /* keep holds the slab open */
	free(a);
	memset(a, 0xff, 88);
	unsigned char *b = site_calloc(11, 8);
	CHECK(b == a, "calloc(11, 8) did not reuse the dirtied slot");
	for (int i = 0; i < 88; i++) CHECK(b[i] == 0, "calloc(11, 8) byte %d is %#x", i, b[i]);
	free(b);
	free(keep);
	volatile size_t huge = (size_t)1 << 40; /* hidden from the compiler's own check */
	CHECK(calloc(huge, huge) == NULL, "overflowing calloc succeeded");
	printf("light_calloc: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
