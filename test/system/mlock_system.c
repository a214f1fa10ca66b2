/*
 * mlock_system.c — rampart under locked memory:
 *  1. mlockall(MCL_FUTURE|MCL_ONFAULT), then 200 large allocations: all succeed.
 *  2. Unprivileged (uid 65534) with a small RLIMIT_MEMLOCK after mlockall(MCL_FUTURE):
 *     allocations fail with NULL/ENOMEM, and freeing earlier blocks never aborts.
 *  3. After mlockall(MCL_CURRENT), a region made earlier (under the madvise backend
 *     when that is the one in use) still gets working guards.
 * Each part runs in its own child; the program exits 0 only if all passed.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../harness.h"
#include "rampart.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

/* Runs fn in a child: 0 passed, 1 failed; a part that cannot run here (its child exits
 * 77, having said why) counts as neither. */
static int run(const char *name, void (*fn)(void))
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		quiet_child();
		alarm(60);
		fn();
		fflush(stdout);
		_exit(0);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == TEST_SKIPPED) {
		printf("skip  %s\n", name);
		return 0;
	}
	if (WIFSIGNALED(st)) printf("FAIL  %s: killed by signal %d (%s)\n", name, WTERMSIG(st), strsignal(WTERMSIG(st)));
	else printf("%s  %s%s\n", ok ? "ok  " : "FAIL", name, ok ? "" : " (see stderr)");
	fflush(stdout);
	return !ok;
}

/* A part that locks more than this process may (unprivileged, RLIMIT_MEMLOCK) cannot
 * run here: its child says so and exits 77. */
static void lock_all_or_skip(int flags, size_t bytes)
{
	if (!may_lock(bytes)) {
		printf("      locks about %zu MiB: needs root (CAP_IPC_LOCK) or a larger RLIMIT_MEMLOCK\n", bytes >> 20);
		fflush(stdout);
		_exit(TEST_SKIPPED);
	}
	CHECK(mlockall(flags) == 0);
}

static void future_onfault_200(void)
{
	lock_all_or_skip(MCL_FUTURE | MCL_ONFAULT, 160 * MiB);
	static unsigned char *p[200];
	for (int i = 0; i < 200; i++) {
		size_t n = 256 * KiB + (size_t)(i % 16) * 64 * KiB;
		errno = 0;
		p[i] = malloc(n);
		if (!p[i]) fprintf(stderr, "allocation %d of %zu bytes: %s\n", i, n, strerror(errno));
		CHECK(p[i] != NULL);
		p[i][0] = (unsigned char)i;
		p[i][n - 1] = (unsigned char)i;
	}
	for (int i = 0; i < 200; i++) CHECK(p[i][0] == (unsigned char)i);
	/* The guards work on locked memory too. */
	CHECK(inaccessible(p[7] - 1));
	CHECK(inaccessible(p[7] + malloc_usable_size(p[7])));
	for (int i = 0; i < 200; i++) free(p[i]);
	CHECK(inaccessible(p[3]));
	printf("      backend after: %s\n", rampart_guard_backend());
}

static void unprivileged_memlock(void)
{
	/* Blocks made before the lock, small and large. */
	static unsigned char *early[40];
	for (int i = 0; i < 40; i++) {
		early[i] = malloc(i % 2 ? 300 * KiB : 200);
		CHECK(early[i]);
		memset(early[i], 9, i % 2 ? 300 * KiB : 200);
	}
	struct rlimit lim = {64 * KiB, 64 * KiB};
	CHECK(setrlimit(RLIMIT_MEMLOCK, &lim) == 0);
	if (getuid() == 0) {
		CHECK(setgroups(0, NULL) == 0);
		CHECK(setresgid(65534, 65534, 65534) == 0);
		CHECK(setresuid(65534, 65534, 65534) == 0);
	}
	CHECK(mlockall(MCL_FUTURE) == 0);
	int failed = 0;
	for (int i = 0; i < 20; i++) {
		errno = 0;
		void *p = malloc(MiB);
		if (!p) {
			CHECK(errno == ENOMEM);
			failed++;
		} else {
			free(p);
		}
	}
	CHECK(failed > 0); /* a new 1 MiB mapping cannot be locked within 64 KiB */
	errno = 0;
	void *al = aligned_alloc(2 * MiB, 2 * MiB);
	CHECK(al == NULL && errno == ENOMEM);
	/* Freeing what was allocated before never aborts, and the blocks become unreachable. */
	for (int i = 0; i < 40; i++) {
		unsigned char *p = early[i];
		unsigned char *q = i % 4 == 1 ? realloc(p, 100 * KiB) : p; /* shrink: closes a tail */
		if (i % 4 == 1) CHECK(q);
		free(q);
		if (i % 2) CHECK(inaccessible(p + 200 * KiB));
	}
	printf("      %d of 20 allocations refused; backend %s\n", failed, rampart_guard_backend());
}

static void current_after_region(void)
{
	const char *before = rampart_guard_backend();
	unsigned char *p = malloc(2 * MiB);
	unsigned char *v = malloc(MiB);
	CHECK(p && v);
	memset(p, 5, 2 * MiB);
	memset(v, 6, MiB);
	lock_all_or_skip(MCL_CURRENT, 4 * MiB);
	unsigned char *q = realloc(p, 512 * KiB);
	CHECK(q == p);
	CHECK(inaccessible(q + 512 * KiB));
	CHECK(inaccessible(q + 2 * MiB - 1));
	CHECK(child_faults(q + MiB, true));
	CHECK(child_faults(q + 512 * KiB, false));
	CHECK(q[512 * KiB - 1] == 5);
	free(v);
	CHECK(inaccessible(v));
	CHECK(child_faults(v + 100, true));
	free(q);
	CHECK(child_faults(q, false));
	munlockall();
	printf("      backend before: %s, after: %s\n", before, rampart_guard_backend());
}

int main(void)
{
	alarm(200);
	free(malloc(1)); /* the allocator starts before any part */
	printf("backend: %s\n", rampart_guard_backend());
	int failed = 0;
	failed += run("mlockall(MCL_FUTURE|MCL_ONFAULT) then 200 large allocations", future_onfault_200);
	failed += run("unprivileged, RLIMIT_MEMLOCK 64 KiB, mlockall(MCL_FUTURE): ENOMEM, frees never abort",
		      unprivileged_memlock);
	failed += run("mlockall(MCL_CURRENT): an earlier region still gets working guards", current_after_region);
	printf("%d failed\n", failed);
	return failed ? 1 : 0;
}
