/*
 * large_place.c — where large blocks are placed: never near a mapping that is not
 * rampart's (issue 36, section 3).
 *
 * The kernel's top-down mmap put the first large block directly below the shared
 * libraries and the main thread's thread-local area (errno, the stack protector's
 * canary), 1-7 pages away: a write 7.5 KB past the end of a 200,000-byte block landed
 * there in 7-14 of 60 runs instead of faulting. Asserted here:
 *
 *  1. In each of 60 fork children, the child's first large block (each child chooses
 *     its own place: the parent has made none yet) is a malloc(200000), and a write
 *     7.5 KB past its end kills the child with SIGSEGV; in 60 more, a write 7.5 KB
 *     before its start does.
 *  2. In the parent, with mappings of its own made in between (mmap, a thread's stack),
 *     blocks of 200,000 B, 1 MiB, 64 MiB, 50 of 300 KiB, an aligned one and one that
 *     realloc moved: no mapping that is not rampart's lies within the largest guard of
 *     any block (1 + large_guard_max_pages pages) of any of them. Foreign are every
 *     mapping that existed before the first large block (libraries, stacks, TLS,
 *     rampart's own windows, the program), every mapping the test made itself, and any
 *     file-backed or kernel-named mapping ([stack], [heap], [vdso], ...) found now.
 *     Block-sized blocks only: the check would pass trivially if rampart served them
 *     from a window, so each must also lie outside every mapping seen before.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../harness.h"
#include "../profile.h"
#include "rampart.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define CHILDREN 60
#define PAST ((size_t)7680) /* 7.5 KB */

struct span {
	uintptr_t lo, hi;
};

#define SPANS_MAX 4096
static struct span foreign[SPANS_MAX];
static unsigned nforeign;

static void add_foreign(uintptr_t lo, uintptr_t hi)
{
	if (nforeign < SPANS_MAX) foreign[nforeign++] = (struct span){lo, hi};
}

/* Every line of /proc/self/maps; with named_only, only file-backed and kernel-named
 * ones ("[stack]", ...), never rampart's "[anon:...]" names. Raw reads into a static
 * buffer: no allocation while the maps are read. */
static bool read_maps(bool named_only)
{
	static char buf[1 << 20];
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0) return false;
	size_t len = 0;
	ssize_t n;
	while (len < sizeof buf - 1 && (n = read(fd, buf + len, sizeof buf - 1 - len)) > 0) len += (size_t)n;
	close(fd);
	buf[len] = 0;
	for (char *line = buf; *line;) {
		char *end = strchr(line, '\n');
		if (end) *end = 0;
		unsigned long lo, hi, inode;
		int path_at = 0;
		if (sscanf(line, "%lx-%lx %*s %*s %*s %lu %n", &lo, &hi, &inode, &path_at) >= 3) {
			const char *path = path_at ? line + path_at : "";
			bool named = inode != 0 || (path[0] == '[' && strncmp(path, "[anon:", 6) != 0) || path[0] == '/';
			if (!named_only || named) add_foreign(lo, hi);
		}
		if (!end) break;
		line = end + 1;
	}
	return true;
}

/* --- 1. the write 7.5 KB beyond a first block, in fresh children --- */

static int child_write(ptrdiff_t where)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) return -1;
	if (pid == 0) {
		quiet_child();
		alarm(20);
		/* volatile: a store into fresh memory before _exit is dead to the compiler */
		volatile unsigned char *p = malloc(200000);
		if (!p) _exit(3);
		p[0] = 1;
		p[where] = 1;
		_exit(0);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	return WIFSIGNALED(st) ? WTERMSIG(st) : 1000 + (WIFEXITED(st) ? WEXITSTATUS(st) : 0);
}

static int beyond_first_block(void)
{
	int rc = 0;
	static const struct {
		const char *what;
		ptrdiff_t where;
	} cases[] = {{"7.5 KB past the end", (ptrdiff_t)(200000 + PAST)}, {"7.5 KB before the start", -(ptrdiff_t)PAST}};
	for (int c = 0; c < 2; c++) {
		int faults = 0, other = 0;
		for (int i = 0; i < CHILDREN; i++) {
			int got = child_write(cases[c].where);
			if (got == SIGSEGV) faults++;
			else if (other++ == 0) printf("      a child got %s %d\n", got >= 1000 ? "exit" : "signal", got % 1000);
		}
		printf("a write %s of a first malloc(200000): SIGSEGV in %d of %d children\n", cases[c].what, faults,
		       CHILDREN);
		if (faults != CHILDREN) {
			printf("FAIL  the write did not fault in %d children\n", CHILDREN - faults);
			rc = 1;
		}
	}
	return rc;
}

/* --- 2. no foreign mapping within the guard distance of any block --- */

static void *thread_fn(void *arg) { return arg; }

static unsigned char *foreign_mmap(size_t len)
{
	unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) return NULL;
	add_foreign((uintptr_t)m, (uintptr_t)m + len);
	return m;
}

enum { BLOCKS = 56 };

static int distances(void)
{
	free(malloc(64)); /* rampart's windows exist now: foreign to large blocks too */
	nforeign = 0;
	if (!read_maps(false)) test_skip("cannot read /proc/self/maps");
	unsigned before = nforeign;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), dist = (1 + test_option("large_guard_max_pages")) * pg;
	/* A thread that keeps its stack mapped (joined, not detached: glibc caches it). */
	pthread_t t;
	pthread_attr_t attr;
	void *stack;
	size_t stack_size;
	if (pthread_create(&t, NULL, thread_fn, NULL) || pthread_getattr_np(t, &attr) ||
	    pthread_attr_getstack(&attr, &stack, &stack_size)) {
		printf("FAIL  no thread\n");
		return 1;
	}
	pthread_join(t, NULL);
	add_foreign((uintptr_t)stack, (uintptr_t)stack + stack_size);

	static unsigned char *blocks[BLOCKS];
	static const size_t first[] = {200000, MiB, 64 * MiB};
	int n = 0;
	for (int i = 0; i < 3; i++) {
		blocks[n++] = malloc(first[i]);
		if (!foreign_mmap(MiB)) return printf("FAIL  mmap\n"), 1;
	}
	for (int i = 0; i < 50; i++) {
		blocks[n++] = malloc(300 * KiB);
		if (i % 10 == 0 && !foreign_mmap(64 * KiB)) return printf("FAIL  mmap\n"), 1;
	}
	blocks[n++] = aligned_alloc(2 * MiB, 3 * MiB);
	unsigned char *grown = malloc(2 * MiB);
	if (grown) memset(grown, 0x5a, 2 * MiB);
	blocks[n++] = grown ? realloc(grown, 48 * MiB) : NULL; /* moves: no room to grow in place */
	if (!foreign_mmap(4 * MiB)) return printf("FAIL  mmap\n"), 1;
	blocks[n++] = malloc(200000);
	for (int i = 0; i < n; i++)
		if (!blocks[i]) return printf("FAIL  block %d: %s\n", i, strerror(errno)), 1;
	if (!read_maps(true)) test_skip("cannot read /proc/self/maps");

	int rc = 0, bad = 0;
	for (int i = 0; i < n; i++) {
		uintptr_t b = (uintptr_t)blocks[i], e = b + malloc_usable_size(blocks[i]);
		for (unsigned k = 0; k < nforeign; k++) {
			bool inside = k < before && foreign[k].lo <= b && e <= foreign[k].hi;
			if ((inside || (foreign[k].lo < e + dist && b - dist < foreign[k].hi)) && bad++ < 8)
				printf("FAIL  block %d [%#lx, %#lx) has a foreign mapping [%#lx, %#lx) within %zu bytes\n", i,
				       (unsigned long)b, (unsigned long)e, (unsigned long)foreign[k].lo,
				       (unsigned long)foreign[k].hi, dist);
		}
	}
	printf("%d large blocks, %u foreign mappings: %d within %zu bytes of a block\n", n, nforeign, bad, dist);
	if (bad) rc = 1;
	for (int i = 0; i < n; i++) free(blocks[i]);
	return rc;
}

int main(void)
{
	alarm(120);
	printf("backend %s\n", rampart_guard_backend());
	int rc = beyond_first_block(); /* first: no large block in the parent yet */
	rc |= distances();
	printf(rc ? "FAIL\n" : "ok\n");
	return rc;
}
