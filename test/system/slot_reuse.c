/*
 * slot_reuse — a freed slot of every size class comes back only after a number of
 * later frees that is unpredictable and long: never before its class's FIFO has
 * passed it (the floor), and, from 16 B to 16 KiB, after as many frees at the median as
 * hardened_malloc's, measured side by side (issue 36, item 1).
 *
 * For each class: free a block, then allocate and free blocks of the same size until
 * the freed address is handed out again, counting the frees in between; TRIALS trials
 * per class. Prints min / median / max per class (the README quotes them) and fails if
 * a class
 *  - hands a slot back after fewer frees than its FIFO holds (the floor): 2 x the
 *    random array's entries, which are slot_quarantine_bytes of slots rounded up
 *    to a power of two, at least 4 (slab_setup.c);
 *  - takes the same count in every trial (the random array's draws are not random);
 *  - up to 16 KiB, in the default sizing, has a median below hardened_malloc's for the
 *    same request (HM_MEDIAN).
 * Then the same floor with malloc_trim called between the frees, and for a slot freed
 * by a thread of another arena that exits at once: neither lets a slot out early. And
 * in a child after fork, whose quarantine starts empty (slab_class.h, class_random): a
 * slot freed in the parent before the fork is not handed out in the child, and one
 * freed in the child waits at least the floor.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"
#include "../profile.h"
#include "../site.h"
#include "slab/slab_class.h"

/* Trials per class: with 15 the median is the 8th count, which lies below the FIFO's
 * length plus a twentieth of the random array's in fewer than 1 run in 10^6 per class,
 * while the FIFO alone is longer than every HM_MEDIAN (the figures in
 * bench/results/2026-11-27-issue36-slot-reuse.md). */
enum { TRIALS = 15, LIMIT = 2000000 };

/* hardened_malloc's median frees until reuse for the usable size of each of rampart's
 * classes 1..43 (16 B to 16 KiB slots), over 151 and over 301 trials, the larger of the
 * two: bench/results/2026-11-27-issue36-slot-reuse.md, measured with
 * bench/slot_reuse_distance.c under LD_PRELOAD. */
static const long HM_MEDIAN[] = {
	0,
	14224, 6819, 7413, 3533, 3735, 3542, 3664, 1771,                 /* 16 .. 128 */
	1865, 1757, 1782, 1740, 872,                                     /* 144 .. 256 */
	884, 868, 912, 916, 440,                                         /* 288 .. 512 */
	442, 442, 435, 447, 220,                                         /* 576 .. 1 KiB */
	238, 211, 228, 228, 112,                                         /* 1152 .. 2 KiB */
	110, 117, 110, 112, 56,                                          /* 2304 .. 4 KiB */
	56, 56, 58, 54, 31,                                              /* 4608 .. 8 KiB */
	29, 30, 29, 28, 14,                                              /* 9216 .. 16 KiB */
};
#define HM_CLASSES (sizeof HM_MEDIAN / sizeof *HM_MEDIAN)
/* The sizing HM_MEDIAN holds for: slot_quarantine_bytes under profile strong. */
#define DEFAULT_SLOT_QUARANTINE_BYTES 131072

int malloc_trim(size_t pad);

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}

/* The FIFO's length for class c: no slot comes back before it has passed. */
static long fifo_floor(unsigned c)
{
	uint64_t want = ((uint64_t)test_option("slot_quarantine_bytes") + sc_size(c) - 1) / sc_size(c);
	uint64_t n = SLOT_Q_MIN_RANDOM;
	while (n < want && n < SLOT_Q_MAX_RANDOM) n <<= 1;
	return (long)(n << SLOT_Q_FIFO_SHIFT);
}

/* Frees between the free of `victim` and its address coming back from malloc(n),
 * calling malloc_trim after every free when `trim`. */
static long frees_until(void *victim, size_t n, bool trim)
{
	for (long k = 1; k <= LIMIT; k++) {
		void *q = site_malloc(n);
		if (!q) return -1;
		free(q);
		if (trim) malloc_trim(0);
		/* By address: under arm64 memory tagging the slot's next owner's pointer
		 * carries another tag than the victim's (docs/mte.md). */
		if (((uintptr_t)q & (((uintptr_t)1 << 56) - 1)) == ((uintptr_t)victim & (((uintptr_t)1 << 56) - 1)))
			return k;
	}
	return LIMIT;
}

static long frees_until_back(size_t n, bool trim)
{
	void *p = site_malloc(n);
	if (!p) return -1;
	free(p);
	if (trim) malloc_trim(0);
	return frees_until(p, n, trim);
}

static void *free_and_exit(void *p)
{
	free(p);
	return NULL;
}

/* A block allocated here, freed by a new thread (of the next arena: its free waits in
 * that thread's batch), which exits at once: the batch enters the quarantine then. */
static long frees_after_thread_exit(size_t n)
{
	void *p = site_malloc(n);
	pthread_t t;
	if (!p || pthread_create(&t, NULL, free_and_exit, p) || pthread_join(t, NULL)) return -1;
	return frees_until(p, n, false);
}

/* min / median / max of TRIALS counts of `measure` for class c; false if one failed. */
static bool trials(unsigned c, long (*measure)(unsigned), long *v)
{
	for (int t = 0; t < TRIALS; t++)
		if ((v[t] = measure(c)) < 0) return false;
	qsort(v, TRIALS, sizeof *v, cmp_long);
	return true;
}

/* In a child: the parent's freed `victim` (class c) stays out through ROUNDS times
 * the random array and the FIFO together, and a slot freed in the child waits at
 * least the floor. Exit status 0 when both hold. */
enum { ROUNDS = 8 };
static int child_after_fork(unsigned c, void *victim)
{
	size_t n = sc_usable(c);
	long floor = fifo_floor(c), span = ROUNDS * (floor + floor / (1 << SLOT_Q_FIFO_SHIFT));
	for (long k = 1; k <= span; k++) {
		void *q = site_malloc(n);
		if (!q) return 2;
		free(q);
		if (((uintptr_t)q & (((uintptr_t)1 << 56) - 1)) == ((uintptr_t)victim & (((uintptr_t)1 << 56) - 1))) {
			printf("FAIL: class %u: a slot freed before the fork came back in the child after %ld frees\n",
			       c, k);
			return 1;
		}
	}
	long back = frees_until_back(n, false);
	if (back < floor) {
		printf("FAIL: class %u: in the child a slot came back after %ld frees, floor %ld\n", c, back, floor);
		return 1;
	}
	printf("fork, class %u (%zu): the parent's slot stayed out for %ld frees; a child's slot came back after %ld, floor %ld\n",
	       c, sc_size(c), span, back, floor);
	return 0;
}

static bool fork_case(unsigned c)
{
	void *victim = site_malloc(sc_usable(c));
	if (!victim) return false;
	free(victim);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) return false;
	if (pid == 0) {
		int rc = child_after_fork(c, victim);
		fflush(stdout);
		_exit(rc);
	}
	int st;
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static long plain(unsigned c) { return frees_until_back(sc_usable(c), false); }
static long trimmed(unsigned c) { return frees_until_back(sc_usable(c), true); }
static long thread_exit(unsigned c) { return frees_after_thread_exit(sc_usable(c)); }

int main(void)
{
	if (!test_slot_quarantine()) /* profile light: the freed slot is the next one out */
		test_skip("no slot quarantine in this process (slot_quarantine_bytes=0: profile %s)",
			  test_profile_light() ? "light" : "strong");
	_Static_assert(HM_CLASSES == 44, "HM_MEDIAN covers the classes of 16 B to 16 KiB slots");
	bool compare = test_option("slot_quarantine_bytes") >= DEFAULT_SLOT_QUARANTINE_BYTES;
	int failed = 0;
	long v[TRIALS];
	printf("class  size  frees before reuse: min  median  max   floor  hardened_malloc median\n");
	for (unsigned c = 1; c < SC_COUNT; c++) {
		if (!trials(c, plain, v)) {
			printf("FAIL: malloc(%zu) failed\n", sc_usable(c));
			return 1;
		}
		long floor = fifo_floor(c), hm = c < HM_CLASSES ? HM_MEDIAN[c] : 0;
		const char *bad = v[0] < floor                       ? "   <- below the floor"
				  : v[0] == v[TRIALS - 1]            ? "   <- predictable"
				  : compare && v[TRIALS / 2] < hm    ? "   <- median below hardened_malloc's"
								     : "";
		char hm_text[24] = "-";
		if (hm) snprintf(hm_text, sizeof hm_text, "%ld", hm);
		printf("%5u %6zu  %8ld %7ld %7ld %7ld  %s%s\n", c, sc_size(c), v[0], v[TRIALS / 2], v[TRIALS - 1],
		       floor, hm_text, bad);
		failed |= *bad != 0;
	}
	if (!compare)
		printf("slot_quarantine_bytes below strong's: medians not compared with hardened_malloc's\n");

	/* malloc_trim between frees (it gives the slot that left the quarantine back to its
	 * slab, and the calling thread's batches to the quarantine): never earlier. Classes
	 * with short FIFOs, so the trims stay few. */
	static const unsigned trim_classes[] = {23, 33, 43, SC_COUNT - 1}; /* 1, 4, 16, 128 KiB */
	static const unsigned exit_classes[] = {1, 8, 23, 43};             /* 16 B, 128 B, 1 and 16 KiB */
	for (unsigned j = 0; j < 2 * 4; j++) {
		bool trim = j < 4;
		unsigned c = trim ? trim_classes[j] : exit_classes[j - 4];
		if (!trials(c, trim ? trimmed : thread_exit, v)) {
			printf("FAIL: malloc(%zu) or a thread failed\n", sc_usable(c));
			return 1;
		}
		bool bad = v[0] < fifo_floor(c);
		printf("%s, class %u (%zu): min %ld median %ld max %ld, floor %ld%s\n",
		       trim ? "malloc_trim after every free" : "freed by a thread that exits", c, sc_size(c), v[0],
		       v[TRIALS / 2], v[TRIALS - 1], fifo_floor(c), bad ? "   <- below the floor" : "");
		failed |= bad;
	}
	/* The classes churned above: their quarantines are full, drawn at random. */
	for (unsigned j = 0; j < 4; j++) failed |= !fork_case(exit_classes[j]);
	printf("slot_reuse: %s\n", failed ? "FAIL" : "ok");
	return failed;
}
