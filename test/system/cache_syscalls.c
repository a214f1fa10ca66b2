/* cache_syscalls.c — on a reuse-cache hit a large malloc + free pair costs at most
 * three system calls under the madvise backend (the free maps the span afresh, so
 * nothing a program did to the block survives, and installs its markers; the malloc
 * takes them out) and two under mprotect (a fresh PROT_NONE mapping; an mprotect), plus
 * one where the kernel names mappings (the fresh span carries its region's name). Re-runs itself under strace, counting the memory system calls made
 * between two marker calls (getppid) around 10,000 pairs, after a warm-up that fills
 * the quarantine and the cache. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"
#include "rampart.h"

#define PAIRS 10000
#define SIZE (1 << 20)

static void pairs(int n)
{
	for (int i = 0; i < n; i++) {
		char *volatile p = malloc(SIZE);
		if (!p) exit(3);
		p[0] = 1;
		p[SIZE - 1] = 2;
		free(p);
	}
}

static int work(void)
{
	struct rampart_stats a, b;
	pairs(1000);
	rampart_get_stats(&a);
	getppid(); /* marker: the measured window starts */
	pairs(PAIRS);
	getppid(); /* marker: it ends */
	rampart_get_stats(&b);
	printf("window-misses %lu hits %lu\n", b.cache_misses - a.cache_misses, b.cache_hits - a.cache_hits);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "work")) return work();
	/* Where strace is missing or may not trace (ptrace refused: a container, a seccomp
	 * filter) nothing can be counted; once it traces /bin/true, a failure is ours. */
	if (system("strace -f -qq -o /dev/null true >/dev/null 2>&1") != 0)
		test_skip("strace cannot trace here (not installed, or ptrace refused)");
	char trace[] = "/tmp/rampart-strace-XXXXXX";
	int fd = mkstemp(trace);
	if (fd < 0) return 2;
	close(fd);
	char cmd[512];
	snprintf(cmd, sizeof cmd,
		 "strace -f -qq -o %s -e trace=getppid,mmap,munmap,mprotect,madvise,mremap,prctl,process_madvise "
		 "%s work",
		 trace, argv[0]);
	FILE *child = popen(cmd, "r");
	long misses = -1, hits = -1;
	char line[1024];
	while (child && fgets(line, sizeof line, child)) sscanf(line, "window-misses %ld hits %ld", &misses, &hits);
	int st = child ? pclose(child) : -1;
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || misses < 0) {
		printf("FAIL: the run under strace failed: status %d\n", st);
		unlink(trace);
		return 1;
	}
	FILE *f = fopen(trace, "r");
	int markers = 0;
	long counts[8] = {0};
	const char *names[8] = {"mmap", "munmap", "mprotect", "madvise", "mremap", "prctl", "process_madvise", NULL};
	while (f && fgets(line, sizeof line, f)) {
		/* "PID  call(...)": skip the pid and however many spaces follow it. */
		const char *call = line;
		while (*call >= '0' && *call <= '9') call++;
		while (*call == ' ') call++;
		if (!strncmp(call, "getppid(", 8)) {
			markers++;
			continue;
		}
		if (markers != 1) continue;
		for (int i = 0; names[i]; i++) {
			size_t n = strlen(names[i]);
			if (!strncmp(call, names[i], n) && call[n] == '(') counts[i]++;
		}
	}
	if (f) fclose(f);
	unlink(trace);
	long total = 0;
	printf("system calls during %d malloc+free pairs of %d bytes (backend %s):\n", PAIRS, SIZE,
	       rampart_guard_backend());
	for (int i = 0; names[i]; i++) {
		printf("  %-16s %ld\n", names[i], counts[i]);
		total += counts[i];
	}
	printf("  %-16s %ld (%.3f per pair)\n", "total", total, (double)total / PAIRS);
	if (markers != 2) {
		printf("FAIL: expected 2 markers in the trace, saw %d\n", markers);
		return 1;
	}
	/* A miss maps a new region: mmap, two guard installs (or one mprotect), a label. */
	printf("  cache hits %ld, misses %ld in the window\n", hits, misses);
	long per_pair = strcmp(rampart_guard_backend(), "madvise") ? 2 : 3;
	for (int i = 0; names[i]; i++)
		if (!strcmp(names[i], "prctl") && counts[i] > 0) per_pair++;
	if (total > per_pair * PAIRS + 4 * misses) {
		printf("FAIL: more than %ld system calls per pair on a cache hit\n", per_pair);
		return 1;
	}
	printf("ok\n");
	return 0;
}
