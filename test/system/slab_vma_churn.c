/*
 * slab_vma_churn.c — the slab VMA count levels off under steady churn.
 *
 * The pattern of a program that builds a big table of small objects and drops it,
 * again and again (a Python dict of two million entries, say): 300,000 blocks of
 * three small classes allocated, then all freed in allocation order, 12 rounds. The
 * VMA count at the peak and after the drop is taken every round; those of the last
 * three rounds may exceed those of rounds 2-4 (round 1 fills the quarantines and sets
 * the high-water mark) by at most MARGIN, and no peak may exceed round 2's by more than
 * 5% + MARGIN (round 2 is the first to allocate while the slot quarantines are full:
 * the slots they hold, 24,576 of the three classes, take slabs of their own). Measured before the fix, under mprotect: the peak went from 1,453
 * VMAs in round 1 to about 2,800 (closed slabs reopened as islands with an anon_vma of
 * their own, which never merge again), and the count after the drop kept growing (the
 * slabs left open wandered over the area). Runs under both backends; nothing is timed.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "rampart.h"

#define N 300000
#define ROUNDS 12
#define MARGIN 24

static void *p[N];
static const size_t sizes[] = {40, 56, 100};

static long max3(const long *v, int from)
{
	long m = v[from];
	for (int i = from + 1; i < from + 3; i++) m = v[i] > m ? v[i] : m;
	return m;
}

int main(void)
{
	alarm(120);
	free(malloc(1));
	long peak[ROUNDS], drop[ROUNDS];
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < N; i++) {
			p[i] = malloc(sizes[i % 3]);
			if (!p[i]) {
				printf("FAIL  round %d, allocation %d: %s\n", r, i, strerror(errno));
				return 1;
			}
			memset(p[i], r + 1, 8);
		}
		peak[r] = count_vmas();
		for (int i = 0; i < N; i++) free(p[i]);
		drop[r] = count_vmas();
	}
	printf("backend %s, VMAs per round (peak/after the drop):", rampart_guard_backend());
	for (int r = 0; r < ROUNDS; r++) printf(" %ld/%ld", peak[r], drop[r]);
	printf("\n");
	long early_peak = max3(peak, 1), late_peak = max3(peak, ROUNDS - 3);
	long early_drop = max3(drop, 1), late_drop = max3(drop, ROUNDS - 3);
	printf("peak: rounds 2-4 %ld, last 3 %ld; after the drop: rounds 2-4 %ld, last 3 %ld\n", early_peak,
	       late_peak, early_drop, late_drop);
	int rc = 0;
	for (int r = 2; r < ROUNDS; r++)
		if (peak[r] > peak[1] + peak[1] / 20 + MARGIN) {
			printf("FAIL  round %d peaks at %ld VMAs, round 2 at %ld\n", r + 1, peak[r], peak[1]);
			rc = 1;
			break;
		}
	if (late_peak > early_peak + MARGIN) {
		printf("FAIL  the peak VMA count keeps growing (by %ld)\n", late_peak - early_peak);
		rc = 1;
	}
	if (late_drop > early_drop + MARGIN) {
		printf("FAIL  the VMA count after the drop keeps growing (by %ld)\n", late_drop - early_drop);
		rc = 1;
	}
	printf(rc ? "FAIL\n" : "ok\n");
	return rc;
}
