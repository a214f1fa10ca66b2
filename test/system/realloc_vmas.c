/* realloc_vmas.c — a large block grown by realloc stays one VMA (issue 47, item 4).
 *
 * A move used to leave a grown block in pieces: the old pages moved by mremap keep their
 * own anon_vma and never merge with the fresh pages of the new region around them, so a
 * grown block was two VMAs, three with its guards under markers. 40,000 blocks of
 * 200,000 B grown to 600,000 B then took 60,085 VMAs at 30,000 blocks, and realloc failed
 * with ENOMEM from number 32,716 on (madvise), or from 24,521 on under guard=mprotect,
 * after which pthread_create failed too; glibc needs 26,692 VMAs and nothing fails.
 *
 * Cases, each in a child of its own:
 *  - few: 2,000 blocks with contents in their first, middle and last pages, grown from
 *    200,000 B to 600,000 B. Each grown block lies in one VMA, its contents kept, what it
 *    grew by zero, the old address and the bytes either side of the block faulting. Under
 *    madvise the block and a page of each guard are one VMA too, and the process gains
 *    fewer than 2,000 + 32 VMAs for the 2,000 growths; under mprotect the block and its
 *    guards are at most three. Then each is shrunk in place to 400,000 B and grown again
 *    to 1,500,000 B (a move): the same holds per block.
 *  - untouched and touched: program 4, 40,000 blocks of 200,000 B grown to 600,000 B,
 *    never touched, or with their first byte written before the growth (so that the
 *    block has pages and an anon_vma of its own when it moves). Every realloc succeeds,
 *    each grown block lies in one VMA, and afterwards the program maps 1 MiB of its own
 *    and starts a thread.
 * The 40,000 are for the kernel's default vm.max_map_count (65530): the test skips where
 * the limit differs (higher, it would prove nothing; lower, the counts are wrong). */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "../harness.h"

#define SMALL 200000
#define GROWN 600000
#define SHRUNK 400000
#define REGROWN 1500000
#define FEW 2000
#define MANY 40000
#define FEW_SLACK 32

static size_t page;
static bool markers;

/* The VMAs of the process, from /proc/self/maps in address order, read without malloc. */
static struct vma {
	uintptr_t lo, hi;
} vmas[80000];
static size_t nvmas;

static bool read_vmas(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0) return false;
	static char buf[1 << 16];
	char line[256];
	size_t len = 0;
	ssize_t n;
	nvmas = 0;
	while ((n = read(fd, buf, sizeof buf)) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n') {
				if (len < sizeof line - 1) line[len++] = buf[i];
				continue;
			}
			line[len] = 0;
			len = 0;
			char *dash;
			uintptr_t lo = strtoul(line, &dash, 16), hi = strtoul(dash + 1, NULL, 16);
			if (nvmas < sizeof vmas / sizeof *vmas) vmas[nvmas++] = (struct vma){lo, hi};
		}
	}
	close(fd);
	return nvmas < sizeof vmas / sizeof *vmas;
}

/* How many VMAs of the last read_vmas meet [lo, hi). */
static size_t vmas_over(uintptr_t lo, uintptr_t hi)
{
	size_t a = 0, b = nvmas; /* the first VMA ending above lo */
	while (a < b) {
		size_t m = a + (b - a) / 2;
		if (vmas[m].hi <= lo) a = m + 1;
		else b = m;
	}
	size_t k = 0;
	for (size_t i = a; i < nvmas && vmas[i].lo < hi; i++) k++;
	return k;
}

/* The grown blocks v[0..n) against the maps read last: the block itself one VMA, and
 * with a page of each guard one (madvise) or at most three (mprotect; a block the VMA
 * budget left without guards is one). Says the first that is not. */
static bool blocks_whole(char **v, size_t n, const char *what)
{
	size_t worst = 0;
	for (size_t i = 0; i < n; i++) {
		uintptr_t p = (uintptr_t)v[i], end = p + malloc_usable_size(v[i]);
		size_t alone = vmas_over(p, end), around = vmas_over(p - page, end + page);
		if (around > worst) worst = around;
		if (alone != 1 || around > (markers ? 1u : 3u)) {
			printf("FAIL: %s: block %zu (%p) is %zu VMAs, %zu with a page of each guard\n", what, i, v[i],
			       alone, around);
			return false;
		}
	}
	printf("%s: each of %zu blocks is one VMA, at most %zu with a page of each guard\n", what, n, worst);
	return true;
}

static void fill(char *p, size_t i)
{
	for (size_t off = 0; off < page; off++) {
		p[off] = (char)(i + off);
		p[SMALL / 2 + off] = (char)(i ^ off);
		p[SMALL - page + off] = (char)(i * 3 + off);
	}
}

static bool filled(const char *p, size_t i)
{
	for (size_t off = 0; off < page; off++)
		if (p[off] != (char)(i + off) || p[SMALL / 2 + off] != (char)(i ^ off) ||
		    p[SMALL - page + off] != (char)(i * 3 + off))
			return false;
	return true;
}

static bool zero_at(const char *p, size_t from, size_t to)
{
	for (size_t off = from; off < to; off += 4093)
		if (p[off]) return false;
	return p[to - 1] == 0;
}

static int few_case(void)
{
	static char *v[FEW];
	for (size_t i = 0; i < FEW; i++) {
		v[i] = malloc(SMALL);
		if (!v[i]) return printf("FAIL: malloc(%d) number %zu gave NULL\n", SMALL, i), 1;
		fill(v[i], i);
	}
	long before = count_vmas();
	for (size_t i = 0; i < FEW; i++) {
		size_t was = malloc_usable_size(v[i]);
		/* The old address as a number: the compiler may warn of a pointer used after realloc. */
		uintptr_t old = (uintptr_t)v[i];
		char *q = realloc(v[i], GROWN);
		if (!q) return printf("FAIL: realloc(%d) number %zu gave NULL\n", GROWN, i), 1;
		v[i] = q;
		if (!filled(q, i) || !zero_at(q, was, GROWN)) return printf("FAIL: block %zu lost its contents\n", i), 1;
		if ((uintptr_t)q == old || !inaccessible((char *)old) || !inaccessible(q - 1) ||
		    !inaccessible(q + malloc_usable_size(q)))
			return printf("FAIL: block %zu: the old address or a guard is reachable\n", i), 1;
	}
	long after = count_vmas();
	printf("%d growths: VMAs %ld -> %ld (%+ld, %.3f a block)\n", FEW, before, after, after - before,
	       (double)(after - before) / FEW);
	if (!read_vmas() || !blocks_whole(v, FEW, "grown")) return 1;
	if (markers && after - before >= FEW + FEW_SLACK) {
		printf("FAIL: %ld VMAs more for %d grown blocks under markers\n", after - before, FEW);
		return 1;
	}
	/* Shrunk in place (the cut tail joins the trail guard), then moved again. */
	for (size_t i = 0; i < FEW; i++) {
		if (realloc(v[i], SHRUNK) != v[i]) return printf("FAIL: the shrink of block %zu moved it\n", i), 1;
		char *q = realloc(v[i], REGROWN);
		if (!q) return printf("FAIL: realloc(%d) number %zu gave NULL\n", REGROWN, i), 1;
		v[i] = q;
		if (!filled(q, i) || !zero_at(q, SHRUNK, REGROWN)) return printf("FAIL: block %zu lost its contents\n", i), 1;
	}
	printf("shrunk and grown again: %ld VMAs\n", count_vmas());
	if (!read_vmas() || !blocks_whole(v, FEW, "grown again")) return 1;
	for (size_t i = 0; i < FEW; i++) free(v[i]);
	return 0;
}

static void *thread_main(void *arg) { return arg; }

/* Program 4: every realloc succeeds, and then the program can still map and start a
 * thread. */
static int many_case(bool touched)
{
	static char *v[MANY];
	const char *what = touched ? "touched" : "untouched";
	for (size_t i = 0; i < MANY; i++) {
		v[i] = malloc(SMALL);
		if (!v[i]) return printf("FAIL: %s: malloc(%d) number %zu gave NULL\n", what, SMALL, i), 1;
		if (touched) v[i][0] = (char)i;
	}
	long before = count_vmas();
	size_t failed = 0, first = 0;
	for (size_t i = 0; i < MANY; i++) {
		char *q = realloc(v[i], GROWN);
		if (!q) {
			if (!failed++) first = i;
			continue;
		}
		v[i] = q;
	}
	long after = count_vmas();
	printf("%s: %d growths: VMAs %ld -> %ld (%+ld, %.3f a block)\n", what, MANY, before, after, after - before,
	       (double)(after - before) / MANY);
	if (failed) {
		printf("FAIL: %s: %zu reallocs gave NULL, the first number %zu\n", what, failed, first);
		return 1;
	}
	if (!read_vmas() || !blocks_whole(v, MANY, what)) return 1;
	void *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) return printf("FAIL: %s: the program's own mmap of 1 MiB: %s\n", what, strerror(errno)), 1;
	memset(m, 1, 1 << 20);
	munmap(m, 1 << 20);
	pthread_t t;
	int err = pthread_create(&t, NULL, thread_main, NULL);
	if (err) return printf("FAIL: %s: pthread_create: %s\n", what, strerror(err)), 1;
	pthread_join(t, NULL);
	for (size_t i = 0; i < MANY; i++) {
		if (touched && v[i][0] != (char)i) return printf("FAIL: %s: block %zu lost its byte\n", what, i), 1;
		free(v[i]);
	}
	return 0;
}

static int untouched_case(void) { return many_case(false); }
static int touched_case(void) { return many_case(true); }

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

int main(void)
{
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
	long limit = 0;
	if (!f || fscanf(f, "%ld", &limit) != 1) limit = 0;
	if (f) fclose(f);
	if (limit != 65530) test_skip("vm.max_map_count is %ld, not the default 65530 the counts are for", limit);
	page = (size_t)sysconf(_SC_PAGESIZE);
	free(malloc(SMALL));
	markers = !strcmp(rampart_guard_backend(), "madvise");
	printf("guard backend: %s\n", rampart_guard_backend());
	int failed = in_child(few_case);
	failed |= in_child(untouched_case);
	failed |= in_child(touched_case);
	printf("%s\n", failed ? "FAIL" : "ok");
	return failed ? 1 : 0;
}
