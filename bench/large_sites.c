/* large_sites: large blocks freed at one call site and wanted at another (issue 49,
 * "Large blocks"): what call-site partitions cost a program whose sites take turns.
 *
 *   large_sites [SITES [BLOCKS [SIZE [ROUNDS]]]]
 *
 * Each round, each of SITES call sites (1 to 4; 2 by default) in turn allocates BLOCKS
 * blocks of SIZE bytes (8 and 256 KiB by default), writes one byte in every page and
 * frees them all; ROUNDS rounds (2,000). With one partition an allocator that reuses
 * freed blocks hands one site's freed blocks to the next site; with partitions each site
 * gets back only its own, from its turn a round before. Prints minor page faults per
 * block and microseconds per block (the machine may be shared: faults and system calls
 * are what to compare). Run it with LD_PRELOAD set to the allocator to measure. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "clock.h"

/* One call site each: the empty asm keeps the call from being a tail call, whose return
 * address would be the caller's. */
#define SITE(name)                                                                         \
	static __attribute__((noinline)) void *name(size_t n)                               \
	{                                                                                  \
		void *p = malloc(n);                                                       \
		__asm__ volatile("" : "+r"(p));                                            \
		return p;                                                                  \
	}
SITE(site0)
SITE(site1)
SITE(site2)
SITE(site3)
static void *(*const sites[])(size_t) = {site0, site1, site2, site3};

enum { MAX_BLOCKS = 64 };

int main(int argc, char **argv)
{
	int nsites = argc > 1 ? atoi(argv[1]) : 2;
	int blocks = argc > 2 ? atoi(argv[2]) : 8;
	size_t size = argc > 3 ? strtoul(argv[3], NULL, 0) : 256 << 10;
	long rounds = argc > 4 ? strtol(argv[4], NULL, 0) : 2000;
	if (nsites < 1 || nsites > 4 || blocks < 1 || blocks > MAX_BLOCKS) {
		fprintf(stderr, "usage: large_sites [SITES 1-4 [BLOCKS 1-%d [SIZE [ROUNDS]]]]\n", MAX_BLOCKS);
		return 2;
	}
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	volatile unsigned char *b[MAX_BLOCKS];
	long f0 = minor_faults();
	double t0 = now_us();
	for (long r = 0; r < rounds; r++) {
		for (int s = 0; s < nsites; s++) {
			for (int i = 0; i < blocks; i++) {
				b[i] = sites[s](size);
				if (!b[i]) return 1;
				for (size_t o = 0; o < size; o += page) b[i][o] = (unsigned char)r;
			}
			for (int i = 0; i < blocks; i++) free((void *)b[i]);
		}
	}
	double n = (double)rounds * nsites * blocks;
	printf("%d sites, %d blocks of %zu: %.2f minor faults and %.2f us per block\n", nsites, blocks, size,
	       (double)(minor_faults() - f0) / n, (now_us() - t0) / n);
	return 0;
}
