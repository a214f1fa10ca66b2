/* huge_hold.c — a freed huge block (256 MiB and up) keeps its address out of reach
 * for a quarantine period, holding no memory and few VMAs (issue 34, item 7).
 *
 * Unmapped at once, its addresses would go straight to the next huge request, and a
 * dangling pointer would write into the new block. Here:
 *  - a victim block is freed, then 16 blocks of the same size are allocated and freed
 *    (the huge quarantine's FIFO floor): none of them overlaps the victim, and the
 *    victim faults;
 *  - the held regions hold no memory (resident set back to where it was) and cost at
 *    most one VMA each;
 *  - a double free of the victim is still caught (in a child: it must die by SIGABRT);
 *  - under RLIMIT_AS (in a child) huge blocks keep coming: the held ones give way. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "../harness.h"
#include "../profile.h"

#define HUGE ((size_t)256 << 20)
#define FLOOR 16

static long resident_mib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size = 0, res = 0;
	if (f) {
		if (fscanf(f, "%ld %ld", &size, &res) != 2) res = 0;
		fclose(f);
	}
	return res * sysconf(_SC_PAGESIZE) / (1 << 20);
}

int main(void)
{
	if (!test_region_quarantine())
		test_skip("no region quarantine in this process (large_quarantine=off, profile light): huge blocks are "
			  "unmapped at once");
	free(malloc(1));
	printf("guard backend: %s\n", rampart_guard_backend());
	/* Under RLIMIT_AS (set before the process held anything) the held regions give way
	 * to new huge blocks: 40 blocks of 1 GiB, one at a time, under 3 GiB. */
	pid_t pid = fork();
	if (pid == 0) {
		struct rlimit rl = {(rlim_t)3 << 30, (rlim_t)3 << 30};
		if (setrlimit(RLIMIT_AS, &rl)) _exit(3);
		for (int i = 0; i < 40; i++) {
			char *p = malloc((size_t)1 << 30);
			if (!p) _exit(10 + i);
			p[0] = 1;
			free(p);
		}
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("FAIL: under RLIMIT_AS = 3 GiB, 1 GiB blocks stopped coming (status %d)\n", st);
		return 1;
	}
	long rss0 = resident_mib(), vmas0 = count_vmas();
	char *victim = malloc(HUGE);
	if (!victim) {
		printf("FAIL: malloc(256 MiB)\n");
		return 1;
	}
	memset(victim, 0x11, HUGE);
	free(victim);
	int failures = 0;
	if (!inaccessible(victim) || !inaccessible(victim + HUGE - 1)) {
		printf("FAIL: the freed huge block is still reachable\n");
		failures++;
	}
	for (int i = 0; i < FLOOR; i++) {
		size_t len = HUGE + (size_t)(i % 4) * (64 << 20);
		char *p = malloc(len);
		if (!p) {
			printf("FAIL: malloc(%zu MiB) after %d frees\n", len >> 20, i);
			return 1;
		}
		if (p < victim + HUGE && victim < p + len) {
			printf("FAIL: block %d at %p overlaps the huge block freed %d frees before\n", i, (void *)p, i + 1);
			failures++;
		}
		p[0] = p[len - 1] = 1;
		free(p);
	}
	long rss1 = resident_mib(), vmas1 = count_vmas();
	struct rampart_heap_stats h;
	rampart_get_heap_stats(&h);
	printf("after %d huge frees: resident %ld -> %ld MiB, VMAs %ld -> %ld, %lu large regions quarantined (%lu MiB)\n",
	       FLOOR + 1, rss0, rss1, vmas0, vmas1, h.large_quarantined, h.large_quarantined_bytes >> 20);
	if (rss1 > rss0 + 16) {
		printf("FAIL: the held huge regions keep memory\n");
		failures++;
	}
	if (vmas1 > vmas0 + FLOOR + 2) {
		printf("FAIL: more than one VMA per held huge region\n");
		failures++;
	}
	if (h.large_quarantined < FLOOR) {
		printf("FAIL: fewer than %d huge regions held\n", FLOOR);
		failures++;
	}
	if (!inaccessible(victim)) {
		printf("FAIL: the victim's range became reachable\n");
		failures++;
	}

	/* A double free of a held huge block. */
	pid = fork();
	if (pid == 0) {
		char *p = malloc(HUGE);
		free(p);
		free(p);
		_exit(0);
	}

	waitpid(pid, &st, 0);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT) {
		printf("FAIL: a double free of a held huge block was not fatal (status %d)\n", st);
		failures++;
	}

	printf("%s\n", failures ? "FAIL" : "ok");
	return failures ? 1 : 0;
}
