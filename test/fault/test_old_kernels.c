/*
 * test_old_kernels.c — fault injection (cmocka): the kernels rampart supports answer
 * some calls differently from the one the tests run on, and other threads map memory
 * whenever they like. fake_kernel.c emulates:
 *
 *  - Linux before 6.17: mremap moves one VMA only; a source that crosses VMAs fails with
 *    EFAULT after the destination was unmapped. A block that moved once spans several
 *    VMAs, so a realloc-heavy program hits this at its second move.
 *  - Linux before 6.13: no guard markers (MADV_GUARD_INSTALL is EINVAL).
 *  - Linux before 5.17: no anon VMA names (PR_SET_VMA is EINVAL; the default here).
 *  - Linux before 4.17: MAP_FIXED_NOREPLACE is unknown and the address a mere hint.
 *  - Linux before 5.14: no MADV_POPULATE_WRITE (EINVAL); and populating that fails for
 *    lack of memory.
 *  - Another thread's mmap landing in the hole a realloc move leaves behind.
 *
 * Every case runs in a forked child under each backend; the start-up cases run in this
 * program executed again (scenario.h).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../harness.h"
#include "fake_kernel.h"
#include "guard/guard.h"
#include "front/init.h"
#include "os/os.h"
#include "rampart.h"
#include "large/populate.h"
#include "scenario.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define SENTINEL 2718

/* Each case runs once per backend: 0 is madvise, 1 is mprotect. */
static int backend_of_case;

/* In the child, before the case: the backend of the case. */
static void use_backend(int backend)
{
	if (backend == 0 && !madvise_possible()) {
		fprintf(stderr, "note: no usable guard markers here, madvise case skipped\n");
		_exit(0);
	}
	backend_of_case = backend;
	guard_init(backend == 0 ? GUARD_AUTO : GUARD_MPROTECT);
	CHECK(guard_backend() == (backend == 0 ? GUARD_MADVISE : GUARD_MPROTECT));
	(void)malloc_trim(0);
}

static int in_child(void (*fn)(void), int backend) { return fault_child(use_backend, backend, fn, 60); }

static void both(void (*fn)(void))
{
	assert_int_equal(in_child(fn, 0), 0);
	assert_int_equal(in_child(fn, 1), 0);
}

static unsigned char pattern(size_t i) { return (unsigned char)(i * 131 + (i >> 12)); }

static void fill(unsigned char *p, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) p[i] = pattern(i);
}

static void check_fill(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i += 509) CHECK(p[i] == pattern(i));
	CHECK(p[n - 1] == pattern(n - 1));
}

static void check_block(unsigned char *p, size_t n)
{
	CHECK(p != NULL);
	size_t u = malloc_usable_size(p);
	CHECK(u >= n);
	CHECK(accessible(p));
	CHECK(accessible(p + u - 1));
	CHECK(inaccessible(p - 1));
	CHECK(inaccessible(p + u));
}

static struct rampart_stats stats(void)
{
	struct rampart_stats s;
	rampart_get_stats(&s);
	return s;
}

/* A buffer grown by realloc many times, shrunk now and then, contents checked at every
 * step. A grown block stays one VMA (the kernel extends the moved one), so every third
 * round the program splits it itself, as an mprotect or a madvise of part of it would:
 * one page in the middle gets MADV_NOHUGEPAGE (a VMA flag), and the next move crosses
 * VMAs. */
static void grow_many_times(void)
{
	size_t n = 200 * KiB;
	unsigned char *p = malloc(n);
	fill(p, 0, n);
	unsigned long moved0 = stats().realloc_moved;
	for (int round = 0; round < 14; round++) {
		if (round % 3 == 1) CHECK(madvise(p + (n / 2 & ~(size_t)4095), 4096, MADV_NOHUGEPAGE) == 0);
		size_t m = round % 5 == 4 ? n / 2 : n + n / 2 + (size_t)round * 4096 + 123;
		errno = SENTINEL;
		unsigned char *q = realloc(p, m);
		CHECK(q != NULL);
		CHECK(errno == SENTINEL);
		check_fill(q, MIN(n, m));
		if (m > n) fill(q, n, m);
		check_block(q, m);
		if (q != p) CHECK(inaccessible(p));
		p = q;
		n = m;
	}
	CHECK(stats().realloc_moved >= moved0 + 4);
	free(p);
	CHECK(inaccessible(p));
	/* And the allocator goes on working. */
	for (int i = 0; i < 20; i++) {
		unsigned char *q = malloc(MiB + (size_t)i * 8192);
		check_block(q, MiB);
		free(q);
	}
}

static void old_mremap(void)
{
	fk.mremap_one_vma = true;
	grow_many_times();
	/* The emulation bit: a source that crossed VMAs was seen, and split. */
	CHECK(fk.mremap_efault > 0);
	/* One crossing move only, the one-time question on scratch pages; never one of a
	 * block (its destination would go). */
	CHECK(fk.mremap_split_moves <= 1);
	CHECK(!os_moves_cross_vmas());
}
static void test_old_mremap(void **state) { both(old_mremap); }

/* The control: on this kernel the same program moves its blocks and no move is ever
 * refused. A growing move asks first where a block's VMAs end (os_spans_vmas, answered
 * EFAULT without side effects where it crosses one): the kernel extends only a source in
 * one VMA, from 6.17 on too. */
static void new_mremap(void)
{
	grow_many_times();
	if (os_moves_cross_vmas()) CHECK(fk.mremap_move_efault == 0);
}
static void test_new_mremap(void **state) { both(new_mremap); }

/* Several blocks growing in turn, so that their moves interleave. */
static void old_mremap_interleaved(void)
{
	fk.mremap_one_vma = true;
	enum { N = 6 };
	unsigned char *p[N];
	size_t n[N];
	for (int i = 0; i < N; i++) {
		n[i] = 150 * KiB + (size_t)i * 10000;
		p[i] = malloc(n[i]);
		fill(p[i], 0, n[i]);
	}
	for (int round = 0; round < 8; round++)
		for (int i = 0; i < N; i++) {
			size_t m = n[i] * 2 - (size_t)round * 1000;
			unsigned char *q = realloc(p[i], m);
			CHECK(q);
			check_fill(q, n[i]);
			fill(q, n[i], m);
			p[i] = q;
			n[i] = m;
		}
	for (int i = 0; i < N; i++) {
		check_fill(p[i], n[i]);
		free(p[i]);
	}
}
static void test_old_mremap_interleaved(void **state) { both(old_mremap_interleaved); }

/* Another thread maps a page into the hole a move leaves: rampart must neither replace
 * it nor unmap it, and the moved block must be whole. */
static void intruder(void)
{
	unsigned char *p = malloc(MiB);
	fill(p, 0, MiB);
	fk.mremap_intrude = 1;
	unsigned char *q = realloc(p, 64 * MiB);
	CHECK(q && q != p);
	CHECK(fk.intruder_count == 1);
	unsigned char *in = fk.intruders[0];
	CHECK(accessible(in));
	for (size_t i = 0; i < 4096; i++) CHECK(in[i] == 0xa5);
	check_fill(q, MiB);
	check_block(q, 64 * MiB);
	free(q);
	/* The rest of the old region went back to the kernel; the intruder is still there. */
	for (int i = 0; i < 30; i++) free(malloc(MiB + (size_t)i * 4096));
	(void)malloc_trim(0);
	for (size_t i = 0; i < 4096; i++) CHECK(in[i] == 0xa5);
	munmap(in, 4096);
}
static void test_intruder(void **state) { both(intruder); }

static void intruder_old_kernel(void)
{
	fk.noreplace_unknown = true;
	fk.mremap_one_vma = true;
	intruder();
	/* And a growing block goes on working there. */
	grow_many_times();
}
static void test_intruder_old_kernel(void **state) { both(intruder_old_kernel); }

/* Another mapping lands where the large area would put the next region (right above the
 * last one): the kernel refuses the place (before 4.17 it puts the mapping elsewhere,
 * and rampart undoes that), the kernel's choice serves that block, and the area goes on
 * above the intruder, never within the largest guard of it. */
static void area_collision(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), clear;
	(void)malloc_trim(0); /* and rampart started: its options read */
	clear = (1 + roots.opt.large_guard_max_pages) * pg;
	unsigned char *a = malloc(MiB);
	check_block(a, MiB);
	/* The top of a's region: its VMA's end (madvise), or its trail guard's (mprotect). */
	unsigned long end = fake_vma_end(a);
	if (guard_backend() == GUARD_MPROTECT) end = fake_vma_end((void *)end);
	CHECK(end);
	unsigned char *in = mmap((void *)end, pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(in == (unsigned char *)end);
	unsigned long failed = fk.mmap_calls;
	unsigned char *b = malloc(MiB);
	check_block(b, MiB);
	CHECK(fk.mmap_calls > failed + 1); /* the place was asked for, then the kernel chose */
	CHECK(b + MiB + clear <= in || b >= in + pg + clear);
	unsigned char *c = malloc(MiB);
	check_block(c, MiB);
	CHECK(c >= in + pg + clear); /* above the intruder, with room */
	CHECK((uintptr_t)(c - a) < ((uintptr_t)1 << 40));
	free(a);
	free(b);
	free(c);
	CHECK(munmap(in, pg) == 0);
}
static void test_area_collision(void **state) { both(area_collision); }

static void area_collision_old_kernel(void)
{
	fk.noreplace_unknown = true;
	area_collision();
}
static void test_area_collision_old_kernel(void **state) { both(area_collision_old_kernel); }

/* A zero-size block with a big alignment has nothing to move: it grows all the same. */
static void zero_size_aligned_grows(void)
{
	void *v = NULL;
	CHECK(posix_memalign(&v, 8192, 0) == 0 && v);
	unsigned char *q = realloc(v, MiB);
	CHECK(q);
	check_block(q, MiB);
	for (size_t i = 0; i < MiB; i += 4096) CHECK(q[i] == 0);
	free(q);
	CHECK(posix_memalign(&v, 2 * MiB, 0) == 0 && v);
	q = realloc(v, 100);
	CHECK(q);
	free(q);
}
static void test_zero_size_aligned_grows(void **state) { both(zero_size_aligned_grows); }

/* Guard installation refused inside guard_map (a locked mapping): the fresh mapping made
 * under the mprotect scheme keeps the alignment asked for. */
static void aligned_after_install_fails(void)
{
	static const size_t aligns[] = {2 * MiB, 64 * KiB, 8192, 1 * MiB};
	for (size_t i = 0; i < sizeof aligns / sizeof *aligns; i++) {
		fk.guard_install_fail_nth = 1;
		fk.guard_install_nth_errno = i % 2 ? ENOMEM : EINVAL;
		unsigned char *p = aligned_alloc(aligns[i], 4 * MiB);
		CHECK(p);
		CHECK((uintptr_t)p % aligns[i] == 0);
		check_block(p, 4 * MiB);
		free(p);
	}
}
static void test_aligned_after_install_fails(void **state) { both(aligned_after_install_fails); }

/* --- populating new large blocks (src/large/populate.h) --- */

static size_t resident_pages(const void *p, size_t n)
{
	static unsigned char vec[2048];
	size_t pgs = n / os_page;
	CHECK(pgs <= sizeof vec);
	CHECK(mincore((void *)p, n, vec) == 0);
	size_t r = 0;
	for (size_t i = 0; i < pgs; i++) r += vec[i] & 1;
	return r;
}

/* Touched blocks freed until one was measured (src/large/populate.h): whatever state the
 * child inherited, the refill now sees a program that uses its large blocks. */
/* The light variant keeps a freed block's pages for the next block of about its size
 * (resident_cache.h): the populating tests are about fresh blocks, so what it kept goes
 * back to the kernel at those frees (test/light/resident_reuse tests the keeping). */
static void free_fresh(void *p)
{
	free(p);
	if (!roots.opt.large_quarantine) malloc_trim(0);
}

static void prime(void)
{
	for (int i = 0; i < POPULATE_PROBE_EVERY; i++) {
		unsigned char *p = malloc(256 * KiB);
		CHECK(p != NULL);
		memset(p, 1, 256 * KiB);
		free_fresh(p);
	}
	fk.populate_calls = 0;
}

/* A touched block freed, then a new one: populating is tried; whatever the kernel
 * answers, the block is whole, zero and errno untouched. Its pages resident before
 * anything here read them go to *resident. */
static unsigned char *after_touched_free(size_t n, size_t *resident)
{
	unsigned char *a = malloc(n);
	CHECK(a != NULL);
	memset(a, 0x77, n);
	free_fresh(a);
	errno = SENTINEL;
	unsigned char *b = malloc(n);
	CHECK(b != NULL && errno == SENTINEL);
	*resident = resident_pages(b, n);
	check_block(b, n);
	for (size_t i = 0; i < n; i += 4096) CHECK(b[i] == 0);
	return b;
}

/* Linux before 5.14: the advice never works, and the first EINVAL (the first block,
 * on the credit prime() left) switches populating off for good. */
static void populate_unknown(void)
{
	size_t r;
	fk.populate_errno = EINVAL;
	fk.populate_calls = 0;
	/* A forked child starts without credit: the first touched free earns some, the
	 * next block tries to populate, and that is the last try. */
	for (int i = 0; i < POPULATE_PROBE_EVERY; i++) {
		unsigned char *p = malloc(256 * KiB);
		CHECK(p != NULL);
		memset(p, 1, 256 * KiB);
		free_fresh(p);
	}
	CHECK(fk.populate_calls == 1);
	unsigned char *b = after_touched_free(2 * MiB, &r);
	CHECK(fk.populate_calls == 1 && r == 0);
	memset(b, 1, 2 * MiB);
	free(b);
	free(after_touched_free(2 * MiB, &r));
	CHECK(fk.populate_calls == 1 && r == 0);
}
static void test_populate_unknown(void **state) { both(populate_unknown); }

/* Out of memory while populating: the pages come by faults; populating is tried
 * again later. */
static void populate_enomem(void)
{
	size_t r;
	prime();
	fk.populate_errno = ENOMEM;
	/* Both blocks are tried: the first on the credit prime() left, the second on the
	 * first's. */
	free(after_touched_free(2 * MiB, &r));
	CHECK(fk.populate_calls == 2 && r == 0);
	fk.populate_errno = 0;
	prime(); /* the block above was only read: the refill took a pause */
	free(after_touched_free(2 * MiB, &r));
	/* Most of it: the first block was used whole, its witnesses too, so the pages
	 * rampart populated there earn all but a sixty-fourth back. */
	CHECK(fk.populate_calls == 2 && r >= MiB / os_page && r <= 2 * MiB / os_page);
}
static void test_populate_enomem(void **state) { both(populate_enomem); }

/* Huge pages refused (src/large/populate.c): MADV_DONTNEED as on locked memory (EINVAL), then
 * MADV_HUGEPAGE (ENOMEM). The block is populated all the same, whole, zero, errno
 * untouched; a refused MADV_DONTNEED leaves the span unmarked. The second block of
 * each pair is populated on the first's credit, nearly 8 MiB: that always holds an
 * aligned 2 MiB span (4 MiB would not, less its witnesses). */
static void huge_refused(void)
{
	size_t r, hsize;
	int mode = os_huge_pages(&hsize);
	bool spans = mode != OS_HUGE_NEVER && hsize <= 2 * MiB;
	prime();
	fk.dontneed_errno = EINVAL;
	fk.dontneed_calls = fk.hugepage_calls = 0;
	free(after_touched_free(8 * MiB, &r));
	CHECK(fk.populate_calls == 2 && r >= 2 * MiB / os_page && r <= 8 * MiB / os_page);
	CHECK(fk.hugepage_calls == 0 && (!spans || fk.dontneed_calls >= 1));
	fk.dontneed_errno = 0;
	fk.hugepage_errno = ENOMEM;
	prime();
	free(after_touched_free(8 * MiB, &r));
	CHECK(fk.populate_calls == 2 && r >= 2 * MiB / os_page && r <= 8 * MiB / os_page);
	CHECK(!spans || mode != OS_HUGE_ASKED || fk.hugepage_calls >= 1);
	fk.hugepage_errno = 0;
}
static void test_huge_refused(void **state) { both(huge_refused); }

/* --- start-up on an emulated Linux 4.19, and the fork handlers --- */

static int run_scenario(const char *name)
{
	fk.atfork_allocates = true;
	if (strcmp(name, "linux-4.19") == 0) {
		fk.guard_install_errno = EINVAL;
		fk.mremap_one_vma = true;
	} else if (strcmp(name, "fork-handlers") != 0) {
		return 2;
	}
	errno = SENTINEL;
	unsigned char *p = malloc(100);
	CHECK(p && errno == SENTINEL);
	/* The handlers were registered before the allocator was published (no other thread
	 * could hold one of its locks yet), and an allocation made meanwhile was served. */
	CHECK(fk.atfork_calls == 1);
	CHECK(fk.atfork_state != STATE_READY);
	CHECK(fk.atfork_alloc_ok);
	free(p);
	if (strcmp(name, "linux-4.19") == 0) {
		CHECK(strcmp(rampart_guard_backend(), "mprotect") == 0);
		grow_many_times();
		intruder();
	}
	/* A fork works and the child can allocate. */
	pid_t pid = fork();
	if (pid == 0) {
		void *q = malloc(300 * KiB);
		free(malloc(64));
		_exit(q ? 0 : 1);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return 0;
}

static void test_startup_linux_4_19(void **state) { assert_int_equal(run_scenario_child("linux-4.19"), 0); }
static void test_fork_handlers(void **state) { assert_int_equal(run_scenario_child("fork-handlers"), 0); }

int main(void)
{
	scenario_or_tests(run_scenario, 60, 600);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fork_handlers),
		cmocka_unit_test(test_startup_linux_4_19),
		cmocka_unit_test(test_new_mremap),
		cmocka_unit_test(test_old_mremap),
		cmocka_unit_test(test_old_mremap_interleaved),
		cmocka_unit_test(test_intruder),
		cmocka_unit_test(test_intruder_old_kernel),
		cmocka_unit_test(test_area_collision),
		cmocka_unit_test(test_area_collision_old_kernel),
		cmocka_unit_test(test_zero_size_aligned_grows),
		cmocka_unit_test(test_aligned_after_install_fails),
		cmocka_unit_test(test_populate_unknown),
		cmocka_unit_test(test_populate_enomem),
		cmocka_unit_test(test_huge_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
