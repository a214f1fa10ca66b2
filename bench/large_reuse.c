/* large_reuse: the cost of freeing a large block and asking for one of the same size
 * again (issue 37, "Large blocks").
 *
 *   large_reuse [SIZE [ITERATIONS]]
 *
 * Each iteration allocates SIZE bytes (256 KiB by default), writes one byte in every
 * page (what a program filling a buffer does first) and frees it. Prints microseconds
 * per iteration (malloc, the writes and free: the writes' page faults are where a
 * freed block's dropped pages cost) and minor page faults per iteration. Run it with
 * LD_PRELOAD set to the allocator to measure. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "clock.h"

/* One call site for the warm-up and the measured loop: under call-site partitions
 * (rampart's partitions, on by default) a freed block's region goes back only to a
 * large block of its own partition, chosen from the address malloc returns to, so
 * warm-up blocks of another site would settle nothing the measured loop reuses. The
 * empty asm keeps the call from being a tail call, whose return address would be the
 * caller's. */
static __attribute__((noinline)) void *site_malloc(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : "+r"(p));
	return p;
}

int main(int argc, char **argv)
{
	size_t size = argc > 1 ? strtoul(argv[1], NULL, 0) : 256 << 10;
	long iters = argc > 2 ? strtol(argv[2], NULL, 0) : 20000;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned sum = 0;
	for (int warm = 0; warm < 16; warm++) { /* settle: the first blocks are fresh everywhere */
		volatile unsigned char *p = site_malloc(size);
		if (!p) return 1;
		for (size_t i = 0; i < size; i += page) p[i] = 1;
		free((void *)p);
	}
	long f0 = minor_faults();
	double t0 = now_us();
	for (long it = 0; it < iters; it++) {
		volatile unsigned char *p = site_malloc(size);
		if (!p) return 1;
		sum += p[size / 2];
		for (size_t i = 0; i < size; i += page) p[i] = (unsigned char)it;
		free((void *)p);
	}
	double t1 = now_us();
	long f1 = minor_faults();
	printf("size %zu: %.2f us per free + malloc + first write of every page, %.2f minor faults per block (%u)\n",
	       size, (t1 - t0) / (double)iters, (double)(f1 - f0) / (double)iters, sum);
	return 0;
}
