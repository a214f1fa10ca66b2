/*
 * class_spread — the first slabs of the small size classes are far apart, at random:
 * one leaked block of one class tells little of where another class's blocks are.
 *
 * One block of every class, in a fresh process: each class's first block lies in its
 * own nursery cell (or, built without a nursery, in its own region), each cell at a
 * random place in a slot of its own, the slots in a random order and together at
 * least 2^CONFIG_SLAB_NURSERY_SHIFT bytes wide. Asserts that the blocks of the classes
 * whose first slab always fits a cell do not all lie within half the nursery's width
 * (narrower in builds whose regions are too small for it: the test works it out). Packed
 * side by side, as they once were, they all lay within 7.4 MiB.
 *
 * A false failure needs the m classes' slots (a random m of the n = arenas x classes
 * slots) all within about half of them: at most n * (L / n)^m with L = n / 2 + 2 slots;
 * the program works the bound out, prints it, and skips rather than assert where it is
 * above 1e-9 (too few classes fit a cell). With the defaults, m = 43 of n = 236 slots:
 * about 1e-10. Regions (no nursery) lie 2^CONFIG_SLAB_REGION_SHIFT bytes apart, farther.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../harness.h"
#include "slab/sizeclass.h"

int main(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	/* The window laid out at its full size needs a quarter of the address space (the
	 * top is near the stack): with less, rampart shrinks the regions and the nursery. */
	size_t need = ((size_t)CONFIG_SLAB_ARENAS * SC_COUNT + 1 + CONFIG_SLAB_SPILL_REGIONS) << CONFIG_SLAB_REGION_SHIFT;
	int here;
	if ((uintptr_t)&here / 4 < need) test_skip("the address space is too short for the full slab window");
	size_t cell = (size_t)CONFIG_SLAB_NURSERY_PAGES * pg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	unsigned m = 0;
	for (unsigned c = 1; c < SC_COUNT; c++) {
		void *p = malloc(sc_usable(c));
		CHECK(p != NULL);
		/* Slots up to an eighth of a cell come in slabs of 64 KiB worth of slots or
		 * 4 slots, a little more for rounding to pages (make sizeclass-table): their
		 * first slab fits a cell after the longest lead (a quarter of it) and a closed
		 * page. */
		if (sc_size(c) > (cell ? cell / 8 : 16384)) continue;
		m++;
		lo = (uintptr_t)p < lo ? (uintptr_t)p : lo;
		hi = (uintptr_t)p > hi ? (uintptr_t)p : hi;
	}
	/* The nursery's width W as slab_setup.c lays it out: n slots, each the smallest power
	 * of two from a cell up that makes them at least 2^CONFIG_SLAB_NURSERY_SHIFT wide,
	 * narrowed to half a region at most (a build with small regions, e.g. check-arm64's);
	 * no nursery past that, nor without cells: the classes are in their regions, a
	 * region apart or more. The blocks must spread over at least W / 2. */
	unsigned n = CONFIG_SLAB_ARENAS * SC_COUNT;
	size_t region = (size_t)1 << CONFIG_SLAB_REGION_SHIFT, want = region / 2;
	if (cell) {
		size_t slot = cell;
		while (n * slot < (size_t)1 << CONFIG_SLAB_NURSERY_SHIFT) slot *= 2;
		while (slot > cell && n * slot > region / 2) slot /= 2;
		if (n * slot <= region / 2) want = n * slot / 2;
	}
	double bound = n;
	for (unsigned i = 0; i < m; i++) bound *= (double)(n / 2 + 2) / n;
	printf("%u classes' first blocks span 2^%d bytes or more; a false failure: below %.1e\n", m,
	       hi > lo ? 63 - __builtin_clzl(hi - lo) : 0, bound);
	fflush(stdout);
	if (bound > 1e-9) test_skip("only %u classes fit a cell: a false failure would be too likely", m);
	CHECK(hi - lo >= want);
	return 0;
}
