/*
 * startup_calls — what rampart's set-up and each size class's first use cost a process in
 * system calls (issue 37: every process started pays them).
 *
 * The program runs itself again under `strace -f -c` (skipped where strace is missing or
 * cannot trace here), as a child that allocates one block in each of K small classes and
 * exits: once with RAMPART_OPTIONS=passthrough (glibc's allocator: the loader's calls and
 * glibc's few), once with rampart for K = 1, once for K = 25. Asserts:
 *  - the set-up (rampart with one class, less passthrough) stays within SETUP_MAX calls:
 *    one getrandom for every key and window place, the policy file, the backend's probe,
 *    the window checks and the metadata (docs/slab.md, "What a process pays at start-up");
 *  - each class more costs at most CLASS_MAX calls on average: the first growth of its
 *    nursery cell mapped read-write with its first slab open in the same set-up (guard_grow_open: mmap and a
 *    madvise for the markers on each side; under the mprotect backend mmap and mprotect),
 *    and now and then a growth of a metadata block.
 * Counts, not times: the bounds hold under both guard backends (the mprotect one opens
 * the first slab with one mprotect instead of markers).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"
#include "slab/sizeclass.h"

#define SETUP_MAX 32
#define CLASS_MAX 3.5
/* Where the kernel names mappings (PR_SET_VMA_ANON_NAME), every fresh mapping carries
 * one more call (its label): the bounds grow by that much. */
#define LABEL_SETUP 6
#define LABEL_CLASS 1.0
#define MANY 25

static const char *strace_path(void)
{
	static const char *const where[] = {"/usr/bin/strace", "/bin/strace", "/usr/local/bin/strace"};
	for (size_t i = 0; i < sizeof where / sizeof *where; i++)
		if (access(where[i], X_OK) == 0) return where[i];
	return NULL;
}

/* All system calls of `self child k` under strace -f -c; -1 where strace could not run it. */
static long count_calls(const char *strace, const char *options, int k)
{
	char out[] = "/tmp/rampart-startup-calls-XXXXXX";
	int fd = mkstemp(out);
	CHECK(fd >= 0);
	close(fd);
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	CHECK(n > 0);
	self[n] = 0;
	char karg[16];
	snprintf(karg, sizeof karg, "%d", k);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		setenv("RAMPART_OPTIONS", options, 1);
		execl(strace, strace, "-f", "-c", "-qq", "-o", out, self, "child", karg, (char *)NULL);
		_exit(127);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	long total = -1;
	FILE *f = fopen(out, "r");
	if (f && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		char line[256];
		while (fgets(line, sizeof line, f)) {
			double pct, secs;
			long usecs, calls;
			char name[32];
			/* "100.00    0.000423           3       110        14 total" (errors optional) */
			if (strstr(line, " total") && sscanf(line, "%lf %lf %ld %ld", &pct, &secs, &usecs, &calls) == 4 &&
			    sscanf(line + strlen(line) - 7, " %31s", name) == 1)
				total = calls;
		}
	}
	if (f) fclose(f);
	unlink(out);
	return total;
}

static bool labels_work(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	bool ok = prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)p, 4096UL, (unsigned long)"test") == 0;
	munmap(p, 4096);
	return ok;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "child") == 0) {
		/* One block in each of the k smallest classes. */
		unsigned k = (unsigned)atoi(argv[2]);
		for (unsigned c = 1; c <= k && c < SC_COUNT; c++) {
			volatile char *p = malloc(sc_usable(c));
			if (!p) return 1;
			p[0] = 1;
		}
		return 0;
	}
	const char *strace = strace_path();
	if (!strace) test_skip("strace is not installed");
	const char *env = getenv("RAMPART_OPTIONS");
	char with[256];
	snprintf(with, sizeof with, "%s", env ? env : "");
	char passthrough[300];
	snprintf(passthrough, sizeof passthrough, "%s%spassthrough", with, *with ? "," : "");
	long base = count_calls(strace, passthrough, 1);
	if (base < 0) test_skip("strace cannot trace here (ptrace refused?)");
	long one = count_calls(strace, with, 1), many = count_calls(strace, with, MANY);
	CHECK(one > 0 && many > 0);
	bool labels = labels_work();
	long setup_max = SETUP_MAX + (labels ? LABEL_SETUP : 0);
	double per_class = (double)(many - one) / (MANY - 1), class_max = CLASS_MAX + (labels ? LABEL_CLASS : 0);
	/* Built without a nursery, a class starts in its region: its first slab opens with a
	 * call of its own after the growth. */
	if (!CONFIG_SLAB_NURSERY_PAGES) class_max += 1;
	printf("system calls: passthrough %ld, rampart with 1 class %ld (set-up %ld, at most %ld), with %d classes %ld "
	       "(%.2f a class more, at most %.1f)%s\n",
	       base, one, one - base, setup_max, MANY, many, per_class, class_max, labels ? "; labels work here" : "");
	fflush(stdout); /* CHECK leaves by _exit */
	CHECK(one - base <= setup_max);
	CHECK(per_class <= class_max);
	return 0;
}
