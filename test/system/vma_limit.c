/* vma_limit.c — near the VMA limit rampart makes fewer guards, never a failed
 * allocation (issue 34, item 3).
 *
 * With the kernel's default vm.max_map_count (65530), a program holds 100,000 live
 * 200 KB blocks, and separately 30 million live 48-byte blocks, under both backends.
 * Under the mprotect scheme each guarded large block and each PROT_NONE guard slab costs
 * up to two VMAs: without a budget the first run stopped at 32,743 blocks, the second at
 * 15.7 million, and then every mapping failed, the program's own (fopen) included. Here:
 * every allocation succeeds, the process keeps room for mappings of its own (an mmap and
 * an fopen afterwards), everything frees, and the guards left out are counted in
 * malloc_info and said once on stderr. The test reads the limit and skips when it
 * is not the default (a machine with a higher limit would prove nothing; a lower one
 * would need smaller counts). Each case runs in a child of its own.
 *
 * argv[1] == "large-alone": the large case alone, for the parent to read its stderr. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "../harness.h"

/* musl's <malloc.h> does not declare it; rampart defines it under both C libraries. */
void malloc_stats(void);

#define LARGE_COUNT 100000
#define LARGE_SIZE 204800
#define SMALL_COUNT 30000000L
#define SMALL_SIZE 48

/* "N guards left out" from malloc_stats' report on stderr (under glibc and musl). */
static unsigned long guards_omitted(void)
{
	char path[] = "/tmp/rampart-vma-stats-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) return 0;
	unlink(path);
	fflush(stderr);
	int saved = dup(2);
	dup2(fd, 2);
	malloc_stats();
	dup2(saved, 2);
	close(saved);
	char buf[4096];
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	const char *at = strstr(buf, " guards left out");
	if (!at) return 0;
	while (at > buf && at[-1] >= '0' && at[-1] <= '9') at--;
	return strtoul(at, NULL, 10);
}

/* After the blocks: the program can still map and open files of its own. */
static bool program_still_maps(void)
{
	void *m = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) return false;
	/* a mapping between two of another kind: the kernel cannot merge it away */
	if (mprotect((char *)m + 4096, 4096, PROT_READ)) return false;
	munmap(m, 1 << 16);
	FILE *f = fopen("/proc/self/status", "r");
	if (!f) return false;
	fclose(f);
	return true;
}

static int large_case(void)
{
	static char *v[LARGE_COUNT];
	for (int i = 0; i < LARGE_COUNT; i++) {
		v[i] = malloc(LARGE_SIZE);
		if (!v[i]) {
			printf("FAIL: malloc(%d) gave NULL after %d live blocks (%ld VMAs)\n", LARGE_SIZE, i, count_vmas());
			return 1;
		}
		v[i][0] = v[i][LARGE_SIZE - 1] = (char)i;
	}
	long vmas = count_vmas();
	bool maps = program_still_maps();
	unsigned long omitted = guards_omitted();
	printf("%d live %d-byte blocks: %ld VMAs, %lu guards left out, the program %s map\n", LARGE_COUNT, LARGE_SIZE,
	       vmas, omitted, maps ? "can still" : "can NOT");
	for (int i = 0; i < LARGE_COUNT; i++) {
		if (v[i][0] != (char)i || v[i][LARGE_SIZE - 1] != (char)i) {
			printf("FAIL: block %d lost its contents\n", i);
			return 1;
		}
		free(v[i]);
	}
	if (!maps) return 1;
	if (!strcmp(rampart_guard_backend(), "mprotect") && !omitted) {
		printf("FAIL: the mprotect scheme at this count must have left guards out\n");
		return 1;
	}
	if (!strcmp(rampart_guard_backend(), "madvise") && omitted) {
		printf("FAIL: guards left out under the madvise backend, where they cost no VMA\n");
		return 1;
	}
	return 0;
}

static int small_case(void)
{
	char **v = malloc(SMALL_COUNT * sizeof *v);
	if (!v) return 1;
	for (long i = 0; i < SMALL_COUNT; i++) {
		v[i] = malloc(SMALL_SIZE);
		if (!v[i]) {
			printf("FAIL: malloc(%d) gave NULL after %ld live blocks (%ld VMAs)\n", SMALL_SIZE, i, count_vmas());
			return 1;
		}
		v[i][0] = (char)i;
	}
	long vmas = count_vmas();
	bool maps = program_still_maps();
	printf("%ld live %d-byte blocks: %ld VMAs, %lu guards left out, the program %s map\n", SMALL_COUNT, SMALL_SIZE,
	       vmas, guards_omitted(), maps ? "can still" : "can NOT");
	for (long i = 0; i < SMALL_COUNT; i++) {
		if (v[i][0] != (char)i) {
			printf("FAIL: block %ld lost its contents\n", i);
			return 1;
		}
		free(v[i]);
	}
	free(v);
	return maps ? 0 : 1;
}

static int in_child(int (*fn)(void))
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		int rc = fn();
		fflush(stdout);
		_exit(rc);
	}
	int st;
	waitpid(pid, &st, 0);
	if (WIFEXITED(st)) return WEXITSTATUS(st);
	printf("FAIL: the case died by signal %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	return 1;
}

/* The first guard left out is said once on stderr, whatever verbose is: a process that
 * lost guards must be visible to whoever runs it. */
static int says_once(void)
{
	if (strcmp(rampart_guard_backend(), "mprotect")) return 0; /* nothing is left out */
	char path[] = "/tmp/rampart-vma-limit-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) return 1;
	unlink(path);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd, 2);
		const char *opts = getenv("RAMPART_OPTIONS");
		char env[256];
		snprintf(env, sizeof env, "RAMPART_OPTIONS=%s", opts ? opts : "");
		char *const argv[] = {"vma_limit", "large-alone", NULL};
		char *const envp[] = {env, NULL};
		execve("/proc/self/exe", argv, envp);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	char buf[8192];
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	int said = 0;
	for (const char *s = buf; (s = strstr(s, "fewer guards")); s++) said++;
	printf("the large case exited %d and said 'fewer guards' %d times\n",
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1, said);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 && said == 1 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "large-alone")) return large_case();
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
	long limit = 0;
	if (!f || fscanf(f, "%ld", &limit) != 1) limit = 0;
	if (f) fclose(f);
	if (limit != 65530) test_skip("vm.max_map_count is %ld, not the default 65530 the counts are for", limit);
	free(malloc(1));
	printf("guard backend: %s\n", rampart_guard_backend());
	int failed = in_child(large_case);
	failed |= in_child(small_case);
	failed |= says_once();
	printf("%s\n", failed ? "FAIL" : "ok");
	return failed ? 1 : 0;
}
