/*
 * slot_reuse — a freed slot of every size class comes back only after a number of
 * later frees that is unpredictable: never at once, and not a constant.
 *
 * For each class: free a block, then allocate and free blocks of the same size until
 * the freed address is handed out again, counting the frees in between; several trials
 * per class. Prints min / median / max per class (the README quotes them) and fails if
 * any class hands a slot back after fewer than MIN_FREES frees or after the same count
 * in every trial.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../harness.h"
#include "slab/sizeclass.h"

enum { TRIALS = 9, LIMIT = 300000, MIN_FREES = 2 };

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}

/* Frees between the free of a block of n bytes and its address coming back. */
static long frees_until_back(size_t n)
{
	void *p = malloc(n);
	if (!p) return -1;
	free(p);
	for (long k = 1; k <= LIMIT; k++) {
		void *q = malloc(n);
		if (!q) return -1;
		free(q);
		if (q == p) return k;
	}
	return LIMIT;
}

int main(void)
{
	if (!CONFIG_SLOT_QUARANTINE) /* VARIANT=light: the freed slot is the next one out */
		test_skip("this build has no slot quarantine (CONFIG_SLOT_QUARANTINE=0)");
	int failed = 0;
	printf("class  size  frees before reuse: min  median  max\n");
	for (unsigned c = 1; c < SC_COUNT; c++) {
		size_t n = sc_usable(c);
		long v[TRIALS];
		for (int t = 0; t < TRIALS; t++) v[t] = frees_until_back(n);
		qsort(v, TRIALS, sizeof *v, cmp_long);
		bool bad = v[0] < MIN_FREES || v[0] == v[TRIALS - 1];
		printf("%5u %6zu  %8ld %7ld %7ld%s\n", c, sc_size(c), v[0], v[TRIALS / 2], v[TRIALS - 1],
		       bad ? "   <- predictable" : "");
		failed |= bad;
	}
	printf("slot_reuse: %s\n", failed ? "FAIL" : "ok");
	return failed;
}
