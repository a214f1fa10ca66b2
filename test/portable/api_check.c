/*
 * api_check.c — the public interface, black-box, with no test framework: it builds
 * wherever rampart does (static against musl, cross-compiled for arm64 and run under
 * qemu-user) and needs only libc and rampart.h. Exits 0 when every check passes.
 *
 * Covers: every size-class boundary (walked through malloc_usable_size), the switch
 * to large blocks, contents kept by realloc (in place, moved, slab <-> large), calloc
 * zeros (also in slots and regions dirtied before, which must come back) and overflow,
 * the aligned functions and their errors, valloc/pvalloc,
 * malloc(0), free_sized / free_aligned_sized, malloc_object_size, malloc_trim, errno
 * left alone by successful calls, guards that really block access (asked of the
 * kernel without a signal), a freed large block, fork, threads, and the guard backend
 * in use. EXPECT_BACKEND=madvise|mprotect in the environment asserts the backend.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"
#include "../site.h"
#include "rampart.h"

/* Not declared by musl's headers. */
void *pvalloc(size_t size);
int malloc_trim(size_t pad);

static int failures, checks;
#undef CHECK /* harness.h has one that exits; this one counts and goes on */
#define CHECK(cond)                                                                  \
	do {                                                                         \
		checks++;                                                            \
		if (!(cond)) {                                                       \
			failures++;                                                  \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		}                                                                    \
	} while (0)

/* Is p unreachable / usable? Asked of the kernel without a signal where
 * process_vm_readv works; qemu-user does not implement it (ENOSYS), and there a forked
 * child touches the byte instead. */
static bool probes_work;
static bool blocked(void *p)
{
	if (probes_work) return inaccessible(p);
	return child_faults(p, false) && child_faults(p, true);
}
static bool usable(void *p)
{
	if (probes_work) return accessible(p);
	return child_access(p, false) == 0 && child_access(p, true) == 0;
}

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed + i * 7 + (i >> 8));
}
static bool same(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed + i * 7 + (i >> 8))) return false;
	return true;
}
/* A page of zeros at a time: calloc_zeroes reads some 600 blocks of 3 MiB. */
static bool zero(const unsigned char *p, size_t n)
{
	static const unsigned char zeros[4096];
	for (size_t i = 0; i < n; i += sizeof zeros)
		if (memcmp(p + i, zeros, n - i < sizeof zeros ? n - i : sizeof zeros)) return false;
	return true;
}

/* Every class boundary: u = usable size of malloc(n); malloc(u) has the same usable
 * size and malloc(u + 1) a bigger one, up to the first large block. */
static void class_boundaries(void)
{
	size_t n = 1, classes = 0, page = (size_t)sysconf(_SC_PAGESIZE);
	for (;;) {
		unsigned char *p = malloc(n);
		CHECK(p != NULL);
		if (!p) return;
		size_t u = malloc_usable_size(p);
		CHECK(u >= n);
		CHECK((uintptr_t)p % 16 == 0);
		CHECK(malloc_object_size(p) == u);
		CHECK(malloc_object_size(p + u / 2) == u - u / 2);
		fill(p, u, (unsigned)n);
		unsigned char *q = malloc(u);
		CHECK(q && malloc_usable_size(q) == u);
		CHECK(same(p, u, (unsigned)n));
		free(q);
		free_sized(p, n);
		classes++;
		if (u % page == 0 && u > 128 * KiB) break; /* a large block: whole pages */
		n = u + 1;
	}
	printf("size classes walked: %zu (the last one large)\n", classes);
	CHECK(classes > 40);
}

static void edge_cases(void)
{
	/* malloc(0): unique, not NULL, inaccessible. */
	void *z1 = malloc(0), *z2 = malloc(0);
	CHECK(z1 && z2 && z1 != z2);
	CHECK(blocked(z1));
	free(z1);
	free_sized(z2, 0);
	free(NULL);

	volatile size_t huge = SIZE_MAX; /* hidden from the compiler's size warnings */
	errno = 0;
	CHECK(malloc(huge) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(calloc(huge / 2, 3) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(reallocarray(NULL, huge / 2, 3) == NULL && errno == ENOMEM);

	/* Successful calls leave errno alone. */
	errno = 12345;
	void *p = malloc(100), *q = calloc(10, 10), *r = malloc(3 * MiB);
	p = realloc(p, 5000);
	r = realloc(r, 9 * MiB);
	free(p);
	free(q);
	free(r);
	CHECK(errno == 12345);

	/* realloc(p, 0) frees and returns NULL; realloc(NULL, n) allocates. */
	p = realloc(NULL, 10);
	CHECK(p != NULL);
	CHECK(realloc(p, 0) == NULL);
}

/* Where a block lies, without an arm64 memory tag in its top byte (a slot handed out
 * again may carry another tag). */
static uintptr_t untagged(const void *p) { return (uintptr_t)p & (((uintptr_t)1 << 56) - 1); }

/* The slots calloc_zeroes dirtied, by address: an open-addressing set, cleared for each
 * size. */
enum { DIRTIED_SLOTS = 1 << 18 };
static uintptr_t dirtied[DIRTIED_SLOTS];
static size_t ndirtied;

/* Adds a to the set; whether it was there already. */
static bool dirtied_before(uintptr_t a)
{
	size_t i = (size_t)((a >> 4) * 0x9e3779b97f4a7c15ull >> 46) & (DIRTIED_SLOTS - 1);
	for (; dirtied[i]; i = (i + 1) & (DIRTIED_SLOTS - 1))
		if (dirtied[i] == a) return true;
	if (ndirtied < DIRTIED_SLOTS / 2) {
		dirtied[i] = a;
		ndirtied++;
	}
	return false;
}

static unsigned long option_or(const char *name, unsigned long otherwise)
{
	unsigned long v;
	return rampart_get_option(name, &v) == 0 ? v : otherwise;
}

/* What calloc_zeroes writes into a block before its free: a small block whole; a large
 * one a line at the start of each page and its last line (a page left dirty is what a
 * forgotten zeroing would hand out), so that some 600 blocks of 3 MiB cost their page
 * faults and little more (written and read whole, they took 7 s more under qemu-user). */
static void dirty(unsigned char *c, size_t n, bool large, size_t page)
{
	if (!large) {
		memset(c, 0xee, n);
		return;
	}
	for (size_t o = 0; o < n; o += page) memset(c + o, 0xee, 64);
	memset(c + n - 64, 0xee, 64);
}
static bool dirt_gone(const unsigned char *c, size_t n, bool large, size_t page)
{
	if (!large) return zero(c, n);
	for (size_t o = 0; o < n; o += page)
		if (!zero(c + o, 64)) return false;
	return zero(c + n - 64, 64);
}

/* calloc hands out zeros, also where an earlier block was dirtied: each size is asked
 * for at one call site, site_calloc (with call-site partitions a freed slot or region
 * goes back only to allocations of its own partition, chosen from the call site: a
 * block dirtied at another site would almost never be taken back here), and every
 * block is dirtied before its free, until calloc hands out a slot or region one of them
 * had, which is asserted to happen. A small block's slot comes back once it leaves the
 * slot quarantine (some 25,000 frees for the 16-byte class under strong, at once
 * without one); a large block's region once it leaves the region quarantine and is
 * taken from the reuse cache (at least 16 large frees: some 1,030 for 200 KiB, 600 for
 * 3 MiB, which fill the quarantine's byte bound first; at once under light). The first
 * block and the one that got a dirtied slot or region back are read whole. */
static void calloc_zeroes(void)
{
	static const size_t sizes[] = {1, 24, 100, 1000, 5000, 40000, 131000, 200 * KiB, 3 * MiB};
	enum { LARGE_ROUNDS = 8192 };
	static uintptr_t large_at[LARGE_ROUNDS];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	/* The slot quarantine holds slot_quarantine_bytes of slots in its random array and
	 * twice as much in its FIFO: 24,576 of the 16-byte class by default, a bound of
	 * 66,560 calls. */
	size_t slot_rounds = option_or("slot_quarantine_bytes", 128 * KiB) / 16 * 8 + 1024;
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		size_t n = sizes[i], round;
		bool large = n > 128 * KiB, back = false, zeros = true; /* large: rampart's, past 128 KiB */
		memset(dirtied, 0, sizeof dirtied);
		ndirtied = 0;
		for (round = 0; !back && round < (large ? LARGE_ROUNDS : slot_rounds); round++) {
			unsigned char *c = site_calloc(1, n);
			if (!c) {
				CHECK(c != NULL);
				return;
			}
			uintptr_t a = untagged(c);
			if (!large) {
				back = dirtied_before(a);
			} else {
				/* A region may come back cut otherwise: any overlap counts. */
				for (size_t k = 0; k < round && !back; k++) back = a < large_at[k] + n && large_at[k] < a + n;
				large_at[round] = a;
			}
			zeros = zeros && (round == 0 || back ? zero(c, n) : dirt_gone(c, n, large, page));
			dirty(c, n, large, page);
			free(c);
		}
		printf("calloc(1, %zu): a dirtied %s handed out again at call %zu\n", n, large ? "region" : "slot", round);
		CHECK(zeros);
		CHECK(back);
	}
}

static void realloc_contents(void)
{
	static const size_t steps[] = {8, 24, 25, 200, 4000, 70000, 131064, 131065, 300 * KiB,
				       2 * MiB, 16 * MiB, 1 * MiB, 100000, 64, 1};
	size_t have = 0;
	unsigned char *p = NULL;
	for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
		size_t n = steps[i];
		p = realloc(p, n);
		CHECK(p != NULL);
		if (!p) return;
		size_t keep = have < n ? have : n;
		CHECK(same(p, keep, 77));
		fill(p, n, 77);
		have = n;
	}
	free(p);
}

/* aligned_alloc and memalign through pointers the compiler cannot see through: glibc
 * declares them alloc_align(1), and under UBSan a call whose alignment is 0 (served, as
 * glibc serves it) is itself reported as undefined (alignment-assumption) in the caller. */
static void *(*volatile memalign_of)(size_t, size_t) = memalign;
static void *(*volatile aligned_alloc_of)(size_t, size_t) = aligned_alloc;

static void aligned(void)
{
	void *p;
	CHECK(posix_memalign(&p, 3, 10) == EINVAL);
	CHECK(posix_memalign(&p, sizeof(void *) / 2, 10) == EINVAL);
	/* aligned_alloc and memalign round an alignment that is no power of two up to the
	 * next one and serve it, as glibc 2.36 does; only one that no power of two in a
	 * size_t holds is EINVAL. */
	volatile size_t odd = 24; /* hidden from the compiler's alignment warnings */
	errno = 0;
	unsigned char *r = aligned_alloc_of(odd, 48);
	CHECK(r && (uintptr_t)r % 32 == 0 && malloc_usable_size(r) >= 48 && errno == 0);
	if (r) memset(r, 1, 48);
	free_aligned_sized(r, odd, 48);
	r = memalign_of(odd, 10);
	CHECK(r && (uintptr_t)r % 32 == 0 && malloc_usable_size(r) >= 10);
	free(r);
	odd = 3;
	r = memalign_of(odd, 100);
	CHECK(r && (uintptr_t)r % 4 == 0 && malloc_usable_size(r) >= 100);
	free(r);
	odd = 0;
	r = memalign_of(odd, 10);
	CHECK(r && (uintptr_t)r % 16 == 0 && malloc_usable_size(r) >= 10);
	free(r);
	odd = 4097;
	r = aligned_alloc_of(odd, 200000);
	CHECK(r && (uintptr_t)r % 8192 == 0 && malloc_usable_size(r) >= 200000);
	free(r);
	odd = SIZE_MAX / 2 + 2;
	errno = 0;
	CHECK(memalign_of(odd, 10) == NULL && errno == EINVAL);
	errno = 0;
	CHECK(aligned_alloc_of(odd, 10) == NULL && errno == EINVAL);
	CHECK(posix_memalign(&p, 24, 10) == EINVAL); /* POSIX: EINVAL */
	CHECK(posix_memalign(&p, 0, 10) == EINVAL);
	for (size_t a = 1; a <= 64 * MiB; a <<= 1) {
		static const size_t sizes[] = {1, 100, 4096, 200000};
		for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
			unsigned char *q = aligned_alloc(a, sizes[i]);
			CHECK(q && (uintptr_t)q % a == 0);
			if (!q) continue;
			CHECK(malloc_usable_size(q) >= sizes[i]);
			memset(q, 1, sizes[i]);
			free_aligned_sized(q, a, sizes[i]);
			if (a >= sizeof(void *)) {
				CHECK(posix_memalign(&p, a, sizes[i]) == 0 && (uintptr_t)p % a == 0);
				free(p);
			}
			q = memalign(a, sizes[i]);
			CHECK(q && (uintptr_t)q % a == 0);
			free(q);
		}
	}
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char *v = valloc(10);
	CHECK(v && (uintptr_t)v % page == 0);
	free(v);
	v = pvalloc(page + 1);
	CHECK(v && (uintptr_t)v % page == 0 && malloc_usable_size(v) >= 2 * page);
	free(v);
}

/* Guards: one byte past a large block and the block after free are unreachable. */
static void guards(void)
{
	size_t n = 1 * MiB + 123;
	unsigned char *p = malloc(n);
	CHECK(p != NULL);
	if (!p) return;
	size_t u = malloc_usable_size(p);
	CHECK(usable(p) && usable(p + u - 1));
	CHECK(blocked(p + u));
	CHECK(blocked(p - 1));
	CHECK(malloc_object_size(p + u) == 0);
	free(p);
	CHECK(blocked(p));
	CHECK(blocked(p + u / 2));

	/* A shrink closes the tail; a grow in place or a move keeps everything. */
	p = malloc(4 * MiB);
	fill(p, 4 * MiB, 5);
	unsigned char *q = realloc(p, 1 * MiB);
	CHECK(q == p && same(q, 1 * MiB, 5));
	CHECK(blocked(q + malloc_usable_size(q)));
	free(q);
	int trimmed = malloc_trim(0);
	if (trimmed != 0 && trimmed != 1) fprintf(stderr, "malloc_trim returned %d\n", trimmed);
	CHECK(trimmed == 0 || trimmed == 1);
}

static void *thread_main(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	unsigned char *keep[64] = {0};
	size_t sz[64] = {0};
	uint32_t s = (uint32_t)id * 2654435761u + 1;
	for (int i = 0; i < 20000; i++) {
		s = s * 1103515245u + 12345u;
		int k = (int)(s >> 16) % 64;
		if (keep[k]) {
			if (!same(keep[k], sz[k], (unsigned)(sz[k] + id))) return (void *)1;
			free(keep[k]);
		}
		sz[k] = (s >> 8) % 100 == 0 ? 200 * KiB + (s >> 4) % MiB : (s >> 12) % 2048;
		keep[k] = malloc(sz[k]);
		if (!keep[k]) return (void *)1;
		fill(keep[k], sz[k], (unsigned)(sz[k] + id));
	}
	for (int k = 0; k < 64; k++) free(keep[k]);
	return NULL;
}

static void threads_and_fork(void)
{
	pthread_t t[4];
	for (uintptr_t i = 0; i < 4; i++) CHECK(pthread_create(&t[i], NULL, thread_main, (void *)i) == 0);
	/* Fork while the threads allocate: the child's allocator must work. */
	pid_t pid = fork();
	if (pid == 0) {
		void *a = malloc(100), *b = malloc(2 * MiB);
		_exit(a && b && malloc_usable_size(a) >= 100 ? 0 : 1);
	}
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (int i = 0; i < 4; i++) {
		void *ret = (void *)1;
		pthread_join(t[i], &ret);
		CHECK(ret == NULL);
	}
}

/* A double free dies with SIGABRT and a fatal line (the harness checks both). */
/* Counters by name: every field of struct rampart_stats answers with the struct's value
 * (a gauge held still: one live large block), the counters added since 1.0 answer too,
 * and a name rampart does not count or a null argument is an error. */
static void counters_by_name(void)
{
	void *big = malloc(300000);
	CHECK(big != NULL);
	struct rampart_stats st;
	rampart_get_stats(&st);
	unsigned long v = 12345;
	CHECK(rampart_get_counter("large_live_now", &v) == 0 && v == st.large_live_now && v >= 1);
	CHECK(rampart_get_counter("quarantine_bytes_now", &v) == 0 && v == st.quarantine_bytes_now);
	CHECK(rampart_get_counter("cache_resident_bytes_now", &v) == 0);
	errno = 0;
	CHECK(rampart_get_counter("no_such_counter", &v) == -1 && errno == ENOENT);
	errno = 0;
	CHECK(rampart_get_counter(NULL, &v) == -1 && errno == EINVAL);
	errno = 0;
	CHECK(rampart_get_counter("large_live_now", NULL) == -1 && errno == EINVAL);
	free(big);
}

/* The profile and the options in effect, by name: the same answer both ways, a key
 * that is no number (a file name) or no option, and a null argument, are errors. */
static void options_by_name(void)
{
	free(malloc(1));
	const char *name = rampart_profile();
	CHECK(!strcmp(name, "strong") || !strcmp(name, "light"));
	unsigned long v = 12345, q = 12345;
	CHECK(rampart_get_option("profile", &v) == 0 && v == (strcmp(name, "light") == 0));
	CHECK(rampart_get_option("slot_quarantine_bytes", &q) == 0 && q <= ((unsigned long)16 << 20));
	CHECK(rampart_get_option("large_cache_entries", &v) == 0);
	errno = 0;
	CHECK(rampart_get_option("no_such_option", &v) == -1 && errno == ENOENT);
	errno = 0;
	CHECK(rampart_get_option("stats_file", &v) == -1 && errno == ENOENT);
	errno = 0;
	CHECK(rampart_get_option(NULL, &v) == -1 && errno == EINVAL);
	errno = 0;
	CHECK(rampart_get_option("profile", NULL) == -1 && errno == EINVAL);
}

static void die_double_free(void)
{
	void *p = malloc(50);
	free(p);
	free(p);
}

int main(void)
{
	static char here;
	probes_work = probe_read(&here) == 0;
	const char *backend = rampart_guard_backend();
	printf("guard backend: %s; access probes: %s\n", backend,
	       probes_work ? "process_vm_readv" : "forked children (process_vm_readv unavailable)");
	CHECK(strcmp(backend, "madvise") == 0 || strcmp(backend, "mprotect") == 0);
	const char *want = getenv("EXPECT_BACKEND");
	if (want) CHECK(strcmp(backend, want) == 0);

	class_boundaries();
	edge_cases();
	calloc_zeroes();
	realloc_contents();
	aligned();
	guards();
	threads_and_fork();
	counters_by_name();
	options_by_name();
	struct death_case dc = {"double free", die_double_free, DIE_FATAL, "double free"};
	CHECK(death_run(&dc));

	printf("api_check: %d checks, %d failed (backend %s)\n", checks, failures, backend);
	return failures != 0;
}
