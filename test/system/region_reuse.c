/*
 * region_reuse.c — how many frees until a new large block overlaps a freed one's pages
 * (issue 36, item 2). A victim block is freed, then malloc + free of the same size repeat
 * until a new block overlaps a page of the victim, whoever put it there: rampart reusing
 * the region or the kernel placing a new mapping in its hole. The distance is the number
 * of that malloc after the victim's free (1: the very next block). 15 trials a size, each
 * size in a child of its own. The victim and the blocks after it come from one call site
 * (site_malloc): another site's allocation would not get the region back from rampart at
 * all while the two sites' partitions differ (system/large_partitions).
 *
 * Without a limit: for 200,000 B, 1 MiB, 4 MiB and 32 MiB, the smallest distance is at
 * least CONFIG_REGION_QUARANTINE_MIN + 1 (a region leaves the quarantine at the earliest
 * after that many more frees, and only then can it be reused), and for 200,000 B and 1 MiB
 * the median is at least 1,000 (the ring alone holds 1,024 frees).
 *
 * Under RLIMIT_AS of 1 GiB (re-executed, so rampart starts under it) the quarantine may
 * hold a sixteenth of the limit, 64 MiB: a region waits at least
 * CONFIG_REGION_QUARANTINE_MIN frees when the regions freed after it are no bigger than
 * a sixteenth of that, 4 MiB — asserted for 200,000 B and 1 MiB. Bigger ones may leave
 * earlier and are then unmapped, not reused by rampart; the kernel places the next block
 * where it likes (often right there): their figures are printed, not asserted.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"
#include "../profile.h"
#include "../site.h"
#include "rampart.h"

#define TRIALS 15
/* Frees tried before a trial gives up. The sizes whose figures are only printed get a
 * shorter walk: under the madvise backend each closed 32 MiB block is 8,192 guard
 * markers to write and to clear again, and 5,000 of them a trial made this test the
 * slowest in the suite for an assertion of min >= 1. */
#define CAP 5000
#define CAP_PRINTED 300
#define MiB ((size_t)1 << 20)

static size_t page;

static bool overlaps(uintptr_t a, uintptr_t b, size_t len)
{
	uintptr_t a0 = a & ~(page - 1), b0 = b & ~(page - 1);
	uintptr_t a1 = (a + len + page - 1) & ~(page - 1), b1 = (b + len + page - 1) & ~(page - 1);
	return a0 < b1 && b0 < a1;
}

static int cmp(const void *x, const void *y)
{
	long a = *(const long *)x, b = *(const long *)y;
	return (a > b) - (a < b);
}

/* In a child: TRIALS distances for size; exits 0 when the asserted bounds hold. */
static int measure(size_t size, long want_min, long want_median, long cap)
{
	long d[TRIALS];
	for (int t = 0; t < TRIALS; t++) {
		void *victim = site_malloc(size);
		CHECK(victim != NULL);
		uintptr_t v = (uintptr_t)victim;
		free(victim);
		long i;
		for (i = 1; i < cap; i++) {
			void *q = site_malloc(size);
			CHECK(q != NULL);
			bool hit = overlaps((uintptr_t)q, v, size);
			free(q);
			if (hit) break;
		}
		d[t] = i;
	}
	qsort(d, TRIALS, sizeof *d, cmp);
	bool ok = d[0] >= want_min && d[TRIALS / 2] >= want_median;
	printf("%s  %9zu B: min %ld median %ld max %ld%s (asserted: min >= %ld, median >= %ld)\n", ok ? "ok  " : "FAIL",
	       size, d[0], d[TRIALS / 2], d[TRIALS - 1], d[TRIALS - 1] >= cap ? " (capped)" : "", want_min,
	       want_median);
	fflush(stdout);
	return ok ? 0 : 1;
}

static int run_size(size_t size, long want_min, long want_median, long cap)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) _exit(measure(size, want_min, want_median, cap));
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

static int limited(void)
{
	struct rlimit rl;
	CHECK(getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY);
	printf("under RLIMIT_AS %lu MiB (quarantine bound %lu MiB):\n", (unsigned long)(rl.rlim_cur >> 20),
	       (unsigned long)(rl.rlim_cur >> 24));
	int failed = 0;
	failed += run_size(200000, CONFIG_REGION_QUARANTINE_MIN + 1, 0, CAP);
	failed += run_size(1 * MiB, CONFIG_REGION_QUARANTINE_MIN + 1, 0, CAP);
	failed += run_size(4 * MiB, 1, 0, CAP_PRINTED);
	failed += run_size(32 * MiB, 1, 0, CAP_PRINTED);
	return failed != 0;
}

int main(int argc, char **argv)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	if (!test_region_quarantine())
		test_skip("no region quarantine in this process (large_quarantine=off: profile %s)",
			  test_profile_light() ? "light" : "strong");
	if (test_option("large_quarantine_entries") < 1000 || test_option("large_quarantine_bytes") < 2 * ((size_t)1 << 30))
		test_skip("this process's region quarantine is shorter than the default one");
	if (argc == 2 && !strcmp(argv[1], "limited")) return limited();
	printf("guard backend %s, no limit:\n", rampart_guard_backend());
	int failed = 0;
	failed += run_size(200000, CONFIG_REGION_QUARANTINE_MIN + 1, 1000, CAP);
	failed += run_size(1 * MiB, CONFIG_REGION_QUARANTINE_MIN + 1, 1000, CAP);
	failed += run_size(4 * MiB, CONFIG_REGION_QUARANTINE_MIN + 1, 0, CAP);
	failed += run_size(32 * MiB, CONFIG_REGION_QUARANTINE_MIN + 1, 0, CAP);

	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		struct rlimit rl = {(rlim_t)1 << 30, (rlim_t)1 << 30};
		CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
		execl("/proc/self/exe", argv[0], "limited", (char *)NULL);
		perror("exec");
		_exit(2);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	printf("%d failed\n", failed);
	return failed != 0;
}
