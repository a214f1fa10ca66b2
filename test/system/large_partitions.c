/*
 * large_partitions — call-site partitions of large blocks (docs/large.md, "Call-site
 * partitions"): a region freed by a block of one partition is handed to no large
 * allocation of another, neither from the reuse cache (after the region quarantine under
 * strong, at once under light) nor from light's cache of blocks kept with their pages;
 * its own partition still reuses it. The program runs itself again in children, each
 * one experiment, under profile=strong and profile=light (the suite runs it under both
 * guard backends: under markers light keeps freed blocks with their pages, under
 * mprotect it does not, so both caches are crossed):
 *
 *   named X Y  partition X (malloc_partition's id) allocates N large blocks among live
 *              ones of a third partition, writes every page and frees them; partition Y
 *              churns the same size (each allocation frees the block allocated LIVE
 *              steps earlier), CHURN allocations: enough frees to push X's regions
 *              through the region quarantine (1,024 frees and a random number more)
 *              into the reuse cache. Ids 0 and 1 (distinct partitions by construction)
 *              never overlap; ids 0 and 0 do.
 *   realloc    partition 0's blocks grown by a realloc, which moves them: the old
 *              regions stay partition 0's (partition 1 never takes them, 0 does).
 *   off        partitions=1: ids are ignored, and Y takes X's regions.
 * Each child prints "hits H first F" (Y's blocks that overlap one of X's freed blocks,
 * and the step of the first); the parent judges.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"
#include "rampart.h"
#include "reexec_run.h"

enum { N = 64, PIN_EVERY = 4, LIVE = 8, CHURN = 3000, PIN_ID = 2 };
static const size_t sizes[] = {256 << 10, 1 << 20};

/* --- the child: one experiment --------------------------------------------------- */

/* A realloc at a call site of its own. The empty asm keeps it a call (a tail call would
 * make the site its caller's). */
static __attribute__((noinline)) void *site_realloc(void *p, size_t n)
{
	void *q = realloc(p, n);
	__asm__ volatile("" : "+r"(q));
	return q;
}

static void *make(unsigned long id, size_t n)
{
	void *p = malloc_partition(n, id);
	CHECK(p != NULL);
	return p;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

/* The starts of the freed blocks, sorted, each `freed_len` bytes long. */
static uintptr_t freed[N];
static size_t freed_len;

/* Does [p, p + n) overlap one of the freed blocks? */
static bool overlaps(const void *p, size_t n)
{
	uintptr_t q = (uintptr_t)p;
	size_t lo = 0, hi = N; /* the first start above q */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (freed[mid] <= q) lo = mid + 1;
		else hi = mid;
	}
	return (lo > 0 && freed[lo - 1] + freed_len > q) || (lo < N && freed[lo] < q + n);
}

/* Blocks of a third partition, live among X's. */
static void *pins[N / PIN_EVERY];

/* X's N blocks among live ones of PIN_ID, every page written (so that light may keep
 * them with their pages), their places kept sorted in freed[]; not freed here. */
static void allocate_x(unsigned long id, size_t n, void **out)
{
	for (int i = 0; i < N; i++) {
		if (i % PIN_EVERY == 0) pins[i / PIN_EVERY] = make(PIN_ID, n);
		out[i] = make(id, n);
		memset(out[i], 0x5a, n);
		freed[i] = (uintptr_t)out[i];
	}
	qsort(freed, N, sizeof *freed, cmp_ptr);
	freed_len = n;
}

/* Y churns; prints its blocks that overlap one of the freed ones, and the first step. */
static void churn(unsigned long id, size_t n)
{
	static void *live[LIVE];
	long hits = 0, first = -1;
	for (long r = 0; r < CHURN; r++) {
		free(live[r % LIVE]);
		void *p = live[r % LIVE] = make(id, n);
		if (!overlaps(p, n)) continue;
		if (first < 0) first = r;
		hits++;
	}
	for (int j = 0; j < LIVE; j++) free(live[j]), live[j] = NULL;
	printf("hits %ld first %ld\n", hits, first);
}

static int named(unsigned long x, unsigned long y, size_t n)
{
	static void *v[N];
	allocate_x(x, n, v);
	for (int i = 0; i < N; i++) free(v[i]);
	churn(y, n);
	return 0;
}

/* Partition 0's blocks moved by a realloc (growing one fourfold cannot stay in place:
 * its trail guard is at most an eighth of it): the moved blocks are freed, then
 * partition 1 churns and never takes an old region, then partition 0 does. */
static int moved(size_t n)
{
	static void *v[N];
	allocate_x(0, n, v);
	for (int i = 0; i < N; i++) {
		void *q = site_realloc(v[i], 4 * n);
		CHECK(q != NULL && q != v[i]);
		v[i] = q;
	}
	for (int i = 0; i < N; i++) free(v[i]);
	churn(1, n);
	churn(0, n);
	return 0;
}

static int child(char **argv)
{
	size_t n = sizes[atoi(argv[2]) % (int)(sizeof sizes / sizeof *sizes)];
	if (!strcmp(argv[1], "named")) return named(strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10), n);
	if (!strcmp(argv[1], "realloc")) return moved(n);
	return 2;
}

/* --- the parent ----------------------------------------------------------------- */


static bool never(const struct outcome *o) { return o->lines == 1 && o->hits[0] == 0; }
static bool reused(const struct outcome *o) { return o->lines == 1 && o->hits[0] > 0; }
static bool realloc_rule(const struct outcome *o) { return o->lines == 2 && !o->hits[0] && o->hits[1] > 0; }

int main(int argc, char **argv)
{
	if (argc >= 3) return child(argv);
	if (access("/proc/self/exe", X_OK)) test_skip("cannot run itself again: no /proc/self/exe");
	static const char *const profiles[] = {"profile=strong", "profile=light"};
	for (size_t p = 0; p < sizeof profiles / sizeof *profiles; p++) {
		const char *opt = profiles[p];
		char *apart[] = {"named", "0", "1", NULL}, *same[] = {"named", "0", "0", NULL};
		each(opt, "partition 1 never takes partition 0's freed large regions", 8, apart, never);
		each(opt, "partition 0 takes its own freed large regions back", 4, same, reused);
		char *re[] = {"realloc", NULL};
		each(opt, "regions a realloc moved blocks out of stay their partition's", 2, re, realloc_rule);
		char off[64];
		snprintf(off, sizeof off, "%s,partitions=1", opt);
		each(off, "partitions=1: partition ids ignored, the freed regions taken", 2, apart, reused);
	}
	printf("large_partitions: %s\n", failed ? "FAILED" : "ok");
	return failed ? 1 : 0;
}
