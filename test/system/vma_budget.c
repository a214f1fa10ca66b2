/* vma_budget.c — correct programs never run out of mappings, and guards left out near the
 * VMA limit come back once the process is clear of it (issue 47, programs 1 to 3).
 *
 * Each program runs in a child of its own, at the sizes the review used, and ends with
 * the probe: the program's own mmap of 1 MiB split by an mprotect, a pthread_create,
 * malloc(300000) and malloc(3000) (a class not used before) all succeed.
 *  1 lru:        2.8 million blocks of 120 B, the blocks of every other page freed (an
 *                LRU cache dropping half its entries), malloc_trim. Under the mprotect
 *                scheme each closed slab between open ones split its area: 65,531 VMAs
 *                and every mapping refused, before closes near the limit gave the pages
 *                back in place.
 *  2 recover:    4.4 million blocks of 120 B, all freed, malloc_trim: the VMAs fall, so
 *                later blocks get guards again: two malloc(200000) each fault one byte
 *                past their end and one byte before their start, and a new class's
 *                slabs and those blocks leave no guard out.
 *  3 live-large: 16,400 live blocks of 132 KiB (about 32,800 VMAs under the mprotect
 *                scheme, half the limit): the next two malloc(200000) are still guarded.
 * The counts are the kernel's default limit's; the test skips under any other.
 * Built twice: system/vma_budget (default) and light/vma_budget (the light variant). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "../harness.h"

/* musl's <malloc.h> does not declare them; rampart defines them under both C libraries. */
void malloc_stats(void);
int malloc_trim(size_t pad);
size_t malloc_usable_size(void *p);

/* A figure of malloc_stats' text report on stderr: the number before text. */
static long report_figure(const char *text)
{
	char path[] = "/tmp/rampart-vma-budget-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) return -1;
	unlink(path);
	fflush(stderr);
	int saved = dup(2);
	dup2(fd, 2);
	malloc_stats();
	dup2(saved, 2);
	close(saved);
	static char buf[8192];
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	const char *at = strstr(buf, text);
	if (!at) return -1;
	while (at > buf && at[-1] >= '0' && at[-1] <= '9') at--;
	return strtol(at, NULL, 10);
}

static long guards_omitted(void) { return report_figure(" guards left out"); }

static void *thread_body(void *arg) { return arg; }

/* The program can still map, split a mapping of its own, start a thread and allocate. */
static bool probe(const char *when)
{
	bool ok = true;
	char *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mprotect(m + 4096, 4096, PROT_READ)) {
		printf("FAIL: %s: the program's own mmap/mprotect: %s\n", when, strerror(errno));
		ok = false;
	}
	if (m != MAP_FAILED) munmap(m, 1 << 20);
	pthread_t t;
	int err = pthread_create(&t, NULL, thread_body, NULL);
	if (err) {
		printf("FAIL: %s: pthread_create: %s\n", when, strerror(err));
		ok = false;
	} else {
		pthread_join(t, NULL);
	}
	void *a = malloc(300000), *b = malloc(3000);
	if (!a || !b) {
		printf("FAIL: %s: malloc(300000) %p, malloc(3000) %p\n", when, a, b);
		ok = false;
	}
	free(a);
	free(b);
	printf("%s: %ld VMAs, %ld guards left out; the program's own calls %s\n", when, count_vmas(), guards_omitted(),
	       ok ? "succeed" : "FAIL");
	return ok;
}

/* Does a one-byte write at p kill a child with SIGSEGV? */
static bool write_faults(char *p)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		quiet_child();
		*(volatile char *)p = 1;
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV;
}

/* Two malloc(200000) in a row: each has a guard past its end and before its start. */
static bool large_blocks_guarded(const char *when)
{
	char *a = malloc(200000), *b = malloc(200000);
	if (!a || !b) return false;
	bool ok = true;
	char *edges[4] = {a + malloc_usable_size(a), a - 1, b + malloc_usable_size(b), b - 1};
	for (int i = 0; i < 4; i++) {
		if (!write_faults(edges[i])) {
			printf("FAIL: %s: a write %s block %c does not fault: no guard\n", when, i % 2 ? "before" : "past",
			       i < 2 ? 'a' : 'b');
			ok = false;
		}
	}
	free(a);
	free(b);
	return ok;
}

static int cmp_page(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

#define LRU_COUNT 2800000L
#define RECOVER_COUNT 4400000L
#define BLOCK 120

static int lru(void)
{
	char **v = malloc(LRU_COUNT * sizeof *v);
	if (!v) return 1;
	for (long i = 0; i < LRU_COUNT; i++) {
		if (!(v[i] = malloc(BLOCK))) {
			printf("FAIL: malloc(%d) number %ld gave NULL (%ld VMAs)\n", BLOCK, i, count_vmas());
			return 1;
		}
		v[i][0] = (char)i;
	}
	printf("lru: %ld blocks of %d B: %ld VMAs\n", LRU_COUNT, BLOCK, count_vmas());
	/* The pages the blocks lie on, in address order: every other one is dropped (by
	 * address parity alone, a layout with a guard after every slab puts them all on
	 * one side). */
	uintptr_t *pages = malloc(LRU_COUNT * sizeof *pages);
	if (!pages) return 1;
	for (long i = 0; i < LRU_COUNT; i++) pages[i] = (uintptr_t)v[i] >> 12;
	qsort(pages, LRU_COUNT, sizeof *pages, cmp_page);
	long distinct = 0;
	for (long i = 0; i < LRU_COUNT; i++)
		if (!i || pages[i] != pages[i - 1]) pages[distinct++] = pages[i];
	long freed = 0;
	for (long i = 0; i < LRU_COUNT; i++) {
		uintptr_t *at = bsearch(&(uintptr_t){(uintptr_t)v[i] >> 12}, pages, (size_t)distinct, sizeof *pages, cmp_page);
		if ((at - pages) & 1) {
			free(v[i]);
			v[i] = NULL;
			freed++;
		}
	}
	free(pages);
	malloc_trim(0);
	printf("lru: %ld freed (the blocks of every other page of %ld), trimmed\n", freed, distinct);
	bool ok = probe("lru, after the trim");
	for (long i = 0; i < LRU_COUNT; i++) {
		if (v[i] && v[i][0] != (char)i) {
			printf("FAIL: block %ld lost its contents\n", i);
			return 1;
		}
		free(v[i]);
	}
	free(v);
	return ok ? 0 : 1;
}

static int recover(void)
{
	char **v = malloc(RECOVER_COUNT * sizeof *v);
	if (!v) return 1;
	for (long i = 0; i < RECOVER_COUNT; i++)
		if (!(v[i] = malloc(BLOCK))) {
			printf("FAIL: malloc(%d) number %ld gave NULL (%ld VMAs)\n", BLOCK, i, count_vmas());
			return 1;
		}
	printf("recover: %ld blocks of %d B: %ld VMAs, %ld guards left out\n", RECOVER_COUNT, BLOCK, count_vmas(),
	       guards_omitted());
	for (long i = 0; i < RECOVER_COUNT; i++) free(v[i]);
	free(v);
	malloc_trim(0);
	bool ok = probe("recover, all freed and trimmed");
	long omitted = guards_omitted();
	ok &= large_blocks_guarded("recover");
	/* A class first used now: enough slabs of it for guard slabs at either interval. */
	enum { NEW_CLASS = 2900, NEW_COUNT = 2000 };
	static void *w[NEW_COUNT];
	for (int i = 0; i < NEW_COUNT; i++) w[i] = malloc(NEW_CLASS);
	for (int i = 0; i < NEW_COUNT; i++) free(w[i]);
	long after = guards_omitted();
	if (after != omitted) {
		printf("FAIL: recover: %ld guards left out after the VMAs fell (%ld before)\n", after - omitted, omitted);
		ok = false;
	}
	return ok ? 0 : 1;
}

#define LIVE_LARGE 16400

static int live_large(void)
{
	static char *v[LIVE_LARGE];
	for (int i = 0; i < LIVE_LARGE; i++)
		if (!(v[i] = malloc(132 << 10))) {
			printf("FAIL: malloc(132 KiB) number %d gave NULL (%ld VMAs)\n", i, count_vmas());
			return 1;
		}
	printf("live-large: %d live blocks of 132 KiB: %ld VMAs, %ld guards left out\n", LIVE_LARGE, count_vmas(),
	       guards_omitted());
	bool ok = large_blocks_guarded("live-large") && probe("live-large");
	for (int i = 0; i < LIVE_LARGE; i++) free(v[i]);
	return ok ? 0 : 1;
}

static int in_child(const char *name, int (*fn)(void))
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
	if (WIFEXITED(st)) {
		printf("%s: %s\n", name, WEXITSTATUS(st) ? "FAIL" : "ok");
		return WEXITSTATUS(st);
	}
	printf("FAIL: %s died by signal %d\n", name, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	return 1;
}

int main(void)
{
	alarm(600);
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
	long limit = 0;
	if (!f || fscanf(f, "%ld", &limit) != 1) limit = 0;
	if (f) fclose(f);
	if (limit != 65530) test_skip("vm.max_map_count is %ld, not the default 65530 the counts are for", limit);
	free(malloc(1));
	printf("guard backend: %s\n", rampart_guard_backend());
	int failed = in_child("1 lru", lru);
	failed |= in_child("2 recover", recover);
	failed |= in_child("3 live-large", live_large);
	printf("%s\n", failed ? "FAIL" : "ok");
	return failed ? 1 : 0;
}
