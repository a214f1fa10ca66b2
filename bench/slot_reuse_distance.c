/* slot_reuse_distance: how many frees of same-size blocks pass before a freed block's
 * address is handed out again, under whichever allocator is preloaded (issue 36).
 *
 * For each size: free a victim block, then malloc and free a block of the same size
 * until malloc returns the victim's address, counting the frees in between (the
 * victim's own free not counted); TRIALS trials a size, one after the other. Prints one
 * line per size: "size min median max" (LIMIT when the address never came back).
 *
 *   out/bench/slot_reuse_distance [-t trials] [-l limit] [size ...]
 *   LD_PRELOAD=/path/to/lib.so out/bench/slot_reuse_distance
 *
 * Without sizes it takes the usable size of every rampart size class from 16 B to
 * 16 KiB (the request that fills a class's slot, canary excluded: sizeclass.h), so
 * every allocator is asked the same requests. Built by bench/bench.mk
 * (make out/bench/slot_reuse_distance), or by hand:
 *   cc -O2 -Isrc -DCONFIG_SLOT_CANARY=1 -o slot_reuse_distance bench/slot_reuse_distance.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slab/sizeclass.h"

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}

/* One call site for the victim and the churn: an allocator with call-site partitions
 * (rampart's partitions, on by default) hands a freed slot only to allocations of its
 * own partition, chosen from the address malloc returns to, so a churn at another site
 * than the victim's would measure how long a slot waits for a site of another partition
 * (under rampart: forever, but 1 time in 16). The empty asm keeps the call from being
 * a tail call, whose return address would be the caller's. */
static __attribute__((noinline)) void *site_malloc(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : "+r"(p));
	return p;
}

/* The block is written so that an allocator that hands out untouched memory and one
 * that does not are asked the same thing; volatile keeps the compiler from pairing the
 * malloc and free away. */
static long frees_until_back(size_t n, long limit)
{
	char *volatile p = site_malloc(n);
	if (!p) return -1;
	p[0] = 1;
	void *victim = p;
	free(p);
	for (long k = 1; k <= limit; k++) {
		char *volatile q = site_malloc(n);
		if (!q) return -1;
		q[0] = 1;
		free(q);
		if ((void *)q == victim) return k;
	}
	return limit;
}

static int measure(size_t n, int trials, long limit, long *v)
{
	for (int t = 0; t < trials; t++) {
		v[t] = frees_until_back(n, limit);
		if (v[t] < 0) {
			fprintf(stderr, "slot_reuse_distance: malloc(%zu) failed\n", n);
			return 1;
		}
	}
	qsort(v, (size_t)trials, sizeof *v, cmp_long);
	printf("%zu %ld %ld %ld\n", n, v[0], v[trials / 2], v[trials - 1]);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	int trials = 15;
	long limit = 1000000;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-t") && i + 1 < argc) trials = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-l") && i + 1 < argc) limit = atol(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [-t trials] [-l limit] [size ...]\n", argv[0]);
			return 2;
		}
	}
	if (trials < 1 || trials > 1000 || limit < 1) {
		fprintf(stderr, "slot_reuse_distance: trials 1..1000, limit >= 1\n");
		return 2;
	}
	/* The results array is taken before any measuring, so the measured classes see no
	 * allocation of the program's own in between (stdout's buffer is one, at the first
	 * line, in whichever class it falls). */
	long *v = malloc((size_t)trials * sizeof *v);
	if (!v) return 1;
	int failed = 0;
	if (i < argc) {
		for (; i < argc && !failed; i++) failed = measure((size_t)strtoul(argv[i], NULL, 0), trials, limit, v);
	} else {
		for (unsigned c = 1; c < SC_COUNT && sc_size(c) <= 16384 && !failed; c++)
			failed = measure(sc_usable(c), trials, limit, v);
	}
	free(v);
	return failed;
}
