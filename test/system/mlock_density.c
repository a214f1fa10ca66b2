/*
 * mlock_density.c — guard-slab density after mlockall moves the slab regions to
 * PROT_NONE guards.
 *
 * After mlockall(MCL_CURRENT|MCL_FUTURE) guard markers cannot be installed (EINVAL on
 * locked mappings), the madvise backend is latched off and every guard slab becomes a
 * PROT_NONE hole costing up to two VMAs. Guard positions must then follow the
 * mprotect interval (a guard every slab_guard_interval_mprotect slabs), not the
 * madvise one (every slab): 400,000 live 200-byte blocks (about 5,500 slabs of the
 * 224-byte class) add about 1,450 VMAs at the mprotect spacing and about 11,000 at the
 * madvise spacing. The bound asserted, 3,000, sits well between the two.
 * Needs mlockall of about 100 MB: root (CAP_IPC_LOCK) or a large RLIMIT_MEMLOCK.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../harness.h"
#include "rampart.h"

#define N 400000
#define SIZE 200
#define BOUND 3000

static unsigned char *p[N];

int main(void)
{
	alarm(120);
	free(malloc(SIZE)); /* start the allocator (and its backend) before the lock */
	const char *before_backend = rampart_guard_backend();
	struct rlimit lim = {RLIM_INFINITY, RLIM_INFINITY};
	(void)setrlimit(RLIMIT_MEMLOCK, &lim); /* raising works for root; else the current one */
	if (!may_lock((size_t)128 << 20))
		test_skip("locks about 100 MB: needs root (CAP_IPC_LOCK) or a larger RLIMIT_MEMLOCK than uid %d has",
			  (int)geteuid());
	if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
		printf("FAIL  mlockall: %s\n", strerror(errno));
		return 1;
	}
	long before = count_vmas();
	for (int i = 0; i < N; i++) {
		p[i] = malloc(SIZE);
		if (!p[i]) {
			printf("FAIL  allocation %d: %s\n", i, strerror(errno));
			return 1;
		}
		p[i][0] = (unsigned char)i;
		p[i][SIZE - 1] = (unsigned char)i;
	}
	long after = count_vmas();
	int rc = 0;
	for (int i = 0; i < N; i++)
		if (p[i][0] != (unsigned char)i || p[i][SIZE - 1] != (unsigned char)i) {
			printf("FAIL  block %d lost its contents\n", i);
			rc = 1;
			break;
		}
	printf("backend %s, after mlockall %s: %d live %d-byte blocks added %ld VMAs (%ld -> %ld)\n",
	       before_backend, rampart_guard_backend(), N, SIZE, after - before, before, after);
	if (after - before > BOUND) {
		printf("FAIL  more than %d VMAs: guard slabs are placed at the madvise spacing\n", BOUND);
		rc = 1;
	}
	for (int i = 0; i < N; i++) free(p[i]);
	printf("after freeing them all: %ld VMAs\n", count_vmas());
	munlockall();
	printf(rc ? "FAIL\n" : "ok\n");
	return rc;
}
