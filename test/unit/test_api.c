/* test_api.c — the public functions' edge cases, as glibc and POSIX define them. */
#define _GNU_SOURCE
#include <check.h>

#include "../check_main.h"
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rampart.h"

#define SENTINEL 31337

/* Hide a constant from the compiler, which would otherwise reject the absurd sizes. */
/* aligned_alloc and memalign through pointers the compiler cannot see through: glibc
 * declares them alloc_align(1), and under UBSan a call whose alignment is 0 (served, as
 * glibc serves it) is itself reported as undefined (alignment-assumption) in the caller. */
static void *(*volatile memalign_of)(size_t, size_t) = memalign;
static void *(*volatile aligned_alloc_of)(size_t, size_t) = aligned_alloc;

static size_t opaque(size_t x)
{
	__asm__ volatile("" : "+r"(x));
	return x;
}
#define MiB ((size_t)1 << 20)

static const size_t sizes[] = {0, 1, 8, 16, 17, 100, 1000, 4096, 5000, 65536, 131072, 131073, 300000, 4 << 20};
#define NSIZES (sizeof sizes / sizeof *sizes)

START_TEST(test_malloc_zero_unique)
{
	void *p[64];
	for (int i = 0; i < 64; i++) {
		errno = SENTINEL;
		p[i] = malloc(0);
		ck_assert_ptr_nonnull(p[i]);
		ck_assert_int_eq(errno, SENTINEL);
		for (int j = 0; j < i; j++) ck_assert_ptr_ne(p[i], p[j]);
	}
	for (int i = 0; i < 64; i++) free(p[i]);
	void *c = calloc(0, 5), *d = calloc(5, 0);
	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_ne(c, d);
	free(c);
	free(d);
}
END_TEST

START_TEST(test_free_null)
{
	errno = SENTINEL;
	free(NULL);
	free_sized(NULL, 0);
	free_sized(NULL, 100);
	free_aligned_sized(NULL, 64, 128);
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert_uint_eq(malloc_usable_size(NULL), 0);
}
END_TEST

/* No successful call changes errno, and free never does. */
START_TEST(test_errno_untouched)
{
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		errno = SENTINEL;
		char *a = malloc(n), *b = calloc(1, n), *c = realloc(NULL, n);
		void *d = NULL;
		ck_assert_int_eq(posix_memalign(&d, 64, n), 0);
		char *e = aligned_alloc(4096, n), *f = memalign(32, n), *g = valloc(n), *h = pvalloc(n);
		char *r = reallocarray(NULL, n, 2);
		ck_assert(a && b && c && d && e && f && g && h && r);
		ck_assert_int_eq(errno, SENTINEL);
		if (n) memset(a, 1, n);
		a = realloc(a, n * 3 + 1);
		ck_assert_ptr_nonnull(a);
		a = realloc(a, n / 2 + 1);
		ck_assert_ptr_nonnull(a);
		ck_assert_int_eq(errno, SENTINEL);
		(void)malloc_usable_size(a);
		ck_assert_int_eq(errno, SENTINEL);
		free(a);
		free_sized(b, n);
		free(c);
		free(d);
		free_aligned_sized(e, 4096, n);
		free(f);
		free(g);
		free(h);
		free(r);
		ck_assert_int_eq(errno, SENTINEL);
	}
	errno = SENTINEL;
	(void)malloc_trim(0);
	ck_assert_int_eq(errno, SENTINEL);
}
END_TEST

/* Whatever cannot be served: NULL with ENOMEM. */
START_TEST(test_too_big)
{
	static const size_t huge[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 4096, SIZE_MAX / 2 + 1, (size_t)1 << 62,
				      (size_t)1 << 57};
	for (size_t i = 0; i < sizeof huge / sizeof *huge; i++) {
		errno = 0;
		ck_assert_ptr_null(malloc(huge[i]));
		ck_assert_int_eq(errno, ENOMEM);
		errno = 0;
		ck_assert_ptr_null(calloc(1, huge[i]));
		ck_assert_int_eq(errno, ENOMEM);
		errno = 0;
		ck_assert_ptr_null(realloc(NULL, huge[i]));
		ck_assert_int_eq(errno, ENOMEM);
		errno = 0;
		ck_assert_ptr_null(aligned_alloc(64, huge[i]));
		ck_assert_int_eq(errno, ENOMEM);
		errno = 0;
		ck_assert_ptr_null(valloc(huge[i]));
		ck_assert_int_eq(errno, ENOMEM);
		errno = 0;
		ck_assert_ptr_null(pvalloc(huge[i]));
		ck_assert_int_eq(errno, ENOMEM);
		void *out = (void *)&out;
		errno = SENTINEL;
		ck_assert_int_eq(posix_memalign(&out, 64, huge[i]), ENOMEM);
		ck_assert_ptr_eq(out, (void *)&out); /* untouched on failure */
		ck_assert_int_eq(errno, SENTINEL);  /* posix_memalign reports by return value */
	}
}
END_TEST

START_TEST(test_overflow)
{
	errno = 0;
	ck_assert_ptr_null(calloc(opaque(SIZE_MAX / 2), 3));
	ck_assert_int_eq(errno, ENOMEM);
	errno = 0;
	ck_assert_ptr_null(calloc(opaque((size_t)1 << 32), (size_t)1 << 32));
	ck_assert_int_eq(errno, ENOMEM);
	errno = 0;
	ck_assert_ptr_null(calloc(opaque(SIZE_MAX), opaque(SIZE_MAX)));
	ck_assert_int_eq(errno, ENOMEM);
	errno = 0;
	ck_assert_ptr_null(reallocarray(NULL, opaque(SIZE_MAX / 2), 3));
	ck_assert_int_eq(errno, ENOMEM);
	/* A failed reallocarray/realloc leaves the block alone. */
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i] ? sizes[i] : 1;
		unsigned char *p = malloc(n);
		memset(p, 0x3c, n);
		errno = 0;
		ck_assert_ptr_null(reallocarray(p, opaque((size_t)1 << 33), (size_t)1 << 33));
		ck_assert_int_eq(errno, ENOMEM);
		errno = 0;
		ck_assert_ptr_null(realloc(p, opaque(SIZE_MAX)));
		ck_assert_int_eq(errno, ENOMEM);
		size_t bad = 0;
		for (size_t k = 0; k < n; k++) bad += p[k] != 0x3c;
		ck_assert_uint_eq(bad, 0);
		ck_assert_uint_ge(malloc_usable_size(p), n);
		free(p);
	}
	unsigned char *q = reallocarray(NULL, 1000, 3);
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_ge(malloc_usable_size(q), 3000);
	free(q);
}
END_TEST

START_TEST(test_alignment_errors)
{
	static const size_t bad_posix[] = {0, 1, 2, 3, 4, 12, 24, 48, 100, 4097, (size_t)3 << 20, SIZE_MAX};
	for (size_t i = 0; i < sizeof bad_posix / sizeof *bad_posix; i++) {
		void *out = (void *)&out;
		errno = SENTINEL;
		ck_assert_msg(posix_memalign(&out, bad_posix[i], 16) == EINVAL, "alignment %zu", bad_posix[i]);
		ck_assert_ptr_eq(out, (void *)&out);
		ck_assert_int_eq(errno, SENTINEL);
	}
	/* aligned_alloc and memalign round an alignment that is no power of two up to the
	 * next one, as glibc 2.36 does (0 asks for none), and serve it; the block is freed by
	 * free_aligned_sized with the alignment asked for. */
	static const struct {
		size_t asked, served;
	} rounded[] = {{0, 1},
		       {3, 4},
		       {5, 8},
		       {6, 8},
		       {12, 16},
		       {17, 32},
		       {24, 32},
		       {33, 64},
		       {100, 128},
		       {4095, 4096},
		       {4097, 8192},
		       {(size_t)3 << 20, (size_t)4 << 20},
		       {((size_t)1 << 29) + 1, (size_t)1 << 30}};
	static const size_t sizes[] = {1, 10, 48, 64, 100, 5000, 200000};
	for (size_t i = 0; i < sizeof rounded / sizeof *rounded; i++) {
		for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
			size_t a = opaque(rounded[i].asked), n = sizes[k];
			if (rounded[i].served > ((size_t)1 << 22) && n > 100) continue; /* enough of 1 GiB guards */
			errno = SENTINEL;
			unsigned char *p = aligned_alloc_of(a, n), *m = memalign_of(a, n);
			ck_assert_msg(p && m, "alignment %zu, size %zu: errno %d", a, n, errno);
			ck_assert_int_eq(errno, SENTINEL);
			ck_assert_msg((uintptr_t)p % rounded[i].served == 0 && (uintptr_t)m % rounded[i].served == 0,
				      "alignment %zu: %p, %p not aligned to %zu", a, (void *)p, (void *)m, rounded[i].served);
			ck_assert_uint_ge(malloc_usable_size(p), n);
			ck_assert_uint_ge(malloc_usable_size(m), n);
			memset(p, 0x5a, n);
			memset(m, 0xa5, n);
			free_aligned_sized(p, a, n);
			free_aligned_sized(m, a, n);
			ck_assert_int_eq(errno, SENTINEL);
		}
	}
	/* The calls of the report (issue 47), which glibc 2.36 serves. */
	void *q[4] = {memalign_of(opaque(24), 10), memalign_of(opaque(3), 100), memalign_of(opaque(0), 10),
		      aligned_alloc_of(opaque(24), 48)};
	ck_assert(q[0] && q[1] && q[2] && q[3]);
	ck_assert((uintptr_t)q[0] % 32 == 0 && (uintptr_t)q[1] % 4 == 0 && (uintptr_t)q[2] % 16 == 0 &&
		  (uintptr_t)q[3] % 32 == 0);
	for (int i = 0; i < 4; i++) free(q[i]);
	/* No power of two at or above it fits a size_t: EINVAL (glibc's answer too). A power
	 * of two beyond what rampart serves, once rounded or not: ENOMEM (glibc: ENOMEM). */
	static const struct {
		size_t align;
		int err;
	} refused[] = {{SIZE_MAX, EINVAL},
		       {SIZE_MAX / 2 + 2, EINVAL},
		       {SIZE_MAX / 2 + 1, ENOMEM},
		       {SIZE_MAX / 2, ENOMEM},
		       {((size_t)1 << 30) + 1, ENOMEM},
		       {(size_t)1 << 31, ENOMEM},
		       {((size_t)1 << 40) + 1, ENOMEM}};
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		errno = 0;
		ck_assert_ptr_null(aligned_alloc_of(opaque(refused[i].align), 64));
		ck_assert_msg(errno == refused[i].err, "aligned_alloc(%zu): errno %d", refused[i].align, errno);
		errno = 0;
		ck_assert_ptr_null(memalign_of(opaque(refused[i].align), 64));
		ck_assert_msg(errno == refused[i].err, "memalign(%zu): errno %d", refused[i].align, errno);
	}
	/* Powers of two below sizeof(void *) are fine for aligned_alloc and memalign. */
	static const size_t good[] = {1, 2, 4, 8, 16};
	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		void *a = aligned_alloc(good[i], 10), *m = memalign(good[i], 10);
		ck_assert(a && m);
		ck_assert_uint_eq((uintptr_t)a % good[i], 0);
		free_aligned_sized(a, good[i], 10);
		free(m);
	}
	void *out;
	ck_assert_int_eq(posix_memalign(&out, sizeof(void *), 1), 0);
	free(out);
}
END_TEST

START_TEST(test_valloc_pvalloc)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		char *v = valloc(n), *p = pvalloc(n);
		ck_assert(v && p);
		ck_assert_uint_eq((uintptr_t)v % pg, 0);
		ck_assert_uint_eq((uintptr_t)p % pg, 0);
		ck_assert_uint_ge(malloc_usable_size(v), n);
		/* pvalloc rounds up to whole pages (at least one). */
		size_t want = n ? (n + pg - 1) / pg * pg : pg;
		ck_assert_uint_ge(malloc_usable_size(p), want);
		memset(p, 7, want);
		if (n) memset(v, 7, n);
		free(v);
		free(p);
	}
}
END_TEST

START_TEST(test_malloc_trim)
{
	void *p[50];
	for (int i = 0; i < 50; i++) p[i] = malloc((size_t)(i + 1) * 50000);
	for (int i = 0; i < 50; i++) free(p[i]);
	int r = malloc_trim(0);
	ck_assert(r == 0 || r == 1);
	ck_assert_int_eq(malloc_trim(1 << 20) & ~1, 0);
	void *q = malloc(1 << 20);
	ck_assert_ptr_nonnull(q);
	free(q);
}
END_TEST

/* free_sized / free_aligned_sized with the size (and alignment) asked for. */
START_TEST(test_sized_frees)
{
	static const size_t aligns[] = {1, 8, 16, 64, 256, 4096, 65536, 2 * MiB};
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		void *m = malloc(n), *c = calloc(n, 1), *r = n ? realloc(malloc(n / 2 + 1), n) : malloc(0);
		ck_assert(m && c && r);
		free_sized(m, n);
		free_sized(c, n);
		free_sized(r, n);
		for (size_t a = 0; a < sizeof aligns / sizeof *aligns; a++) {
			void *p = aligned_alloc(aligns[a], n);
			ck_assert_ptr_nonnull(p);
			ck_assert_uint_eq((uintptr_t)p % aligns[a], 0);
			free_aligned_sized(p, aligns[a], n);
		}
	}
}
END_TEST

START_TEST(test_realloc_edges)
{
	/* realloc(NULL, n) is malloc(n). */
	char *p = realloc(NULL, 100);
	ck_assert_ptr_nonnull(p);
	memset(p, 'a', 100);
	/* Growing and shrinking across the small/large boundary keeps the contents. */
	static const size_t steps[] = {200, 5000, 131072, 131073, 400000, 3 << 20, 150000, 1000, 50, 1};
	size_t have = 100;
	for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
		char *q = realloc(p, steps[i]);
		ck_assert_ptr_nonnull(q);
		size_t keep = have < steps[i] ? have : steps[i];
		size_t bad = 0;
		for (size_t k = 0; k < keep; k++) bad += q[k] != 'a';
		ck_assert_msg(bad == 0, "realloc to %zu lost %zu bytes", steps[i], bad);
		memset(q, 'a', steps[i]);
		have = steps[i];
		p = q;
	}
	/* realloc(p, 0) frees (glibc behaviour) and returns NULL. */
	ck_assert_ptr_null(realloc(p, 0));
	/* calloc memory is zero, small and large, also when reused. */
	for (int round = 0; round < 200; round++) {
		size_t n = sizes[(size_t)round % NSIZES];
		unsigned char *z = calloc(1, n);
		ck_assert_ptr_nonnull(z);
		size_t nonzero = 0;
		for (size_t k = 0; k < n; k++) nonzero += z[k] != 0;
		ck_assert_msg(nonzero == 0, "calloc(1, %zu) round %d: %zu bytes not zero", n, round, nonzero);
		memset(z, 0xee, n);
		free(z);
	}
}
END_TEST

START_TEST(test_usable_size)
{
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		unsigned char *p = malloc(n);
		size_t u = malloc_usable_size(p);
		ck_assert_uint_ge(u, n);
		if (u) memset(p, 0x11, u); /* all of the usable size really is usable */
		ck_assert_uint_ge(malloc_object_size(p), n);
		free(p);
	}
	ck_assert(strcmp(rampart_guard_backend(), "madvise") == 0 || strcmp(rampart_guard_backend(), "mprotect") == 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("api");
	TCase *t = tcase_create("api");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, test_malloc_zero_unique);
	tcase_add_test(t, test_free_null);
	tcase_add_test(t, test_errno_untouched);
	tcase_add_test(t, test_too_big);
	tcase_add_test(t, test_overflow);
	tcase_add_test(t, test_alignment_errors);
	tcase_add_test(t, test_valloc_pvalloc);
	tcase_add_test(t, test_malloc_trim);
	tcase_add_test(t, test_sized_frees);
	tcase_add_test(t, test_realloc_edges);
	tcase_add_test(t, test_usable_size);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
