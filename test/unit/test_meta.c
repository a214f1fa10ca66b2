/* test_meta.c — the metadata region (Check): every chunk handed out is followed by a
 * closed guard page, also when a remembered chunk is split for a smaller request. */
#define _GNU_SOURCE
#include <check.h>
#include <stdlib.h>
#include <unistd.h>

#include "../check_main.h"
#include "../harness.h"
#include "guard/meta.h"

static size_t pg;

static void setup(void)
{
	pg = (size_t)sysconf(_SC_PAGESIZE);
	free(malloc(1)); /* initialise */
}

static void check_chunk(unsigned char *p, size_t len)
{
	ck_assert_ptr_nonnull(p);
	ck_assert(meta_contains(p));
	ck_assert(accessible(p));
	ck_assert(accessible(p + len - 1));
	for (size_t i = 0; i < len; i += 512) ck_assert_int_eq(p[i], 0);
	ck_assert_msg(inaccessible(p + len), "no guard page after %p + %zu", (void *)p, len);
}

START_TEST(test_fresh_chunks_guarded)
{
	for (size_t n = 1; n < 6; n++) {
		unsigned char *p = meta_alloc(n * pg - 7);
		check_chunk(p, n * pg);
		meta_free(p, n * pg - 7);
	}
}
END_TEST

/* A remembered chunk of eight pages serves three smaller requests: each keeps a guard
 * page between itself and the next. */
START_TEST(test_split_chunks_guarded)
{
	unsigned char *big = meta_alloc(8 * pg);
	check_chunk(big, 8 * pg);
	meta_free(big, 8 * pg);
	ck_assert(inaccessible(big));
	unsigned char *a = meta_alloc(pg), *b = meta_alloc(2 * pg), *c = meta_alloc(pg);
	check_chunk(a, pg);
	check_chunk(b, 2 * pg);
	check_chunk(c, pg);
	a[0] = b[0] = c[0] = 1;
	ck_assert(a != b && b != c && a != c);
	meta_free(a, pg);
	meta_free(b, 2 * pg);
	meta_free(c, pg);
}
END_TEST

/* Several chunks at once (the slab set-up's four): each zero, open, its own guard page
 * after it, in fresh space and again where remembered chunks could serve (the batch then
 * goes one by one); none overlaps another. */
START_TEST(test_many_chunks_guarded)
{
	for (int round = 0; round < 2; round++) {
		size_t bytes[5] = {3 * pg + 1, pg, 100, 40 * pg, 2 * pg};
		void *got[5];
		ck_assert(meta_alloc_many(bytes, got, 5));
		for (int i = 0; i < 5; i++) {
			size_t len = (bytes[i] + pg - 1) / pg * pg;
			check_chunk(got[i], len);
			((unsigned char *)got[i])[0] = 1;
			for (int j = 0; j < i; j++)
				ck_assert((char *)got[j] + bytes[j] <= (char *)got[i] || (char *)got[i] + len <= (char *)got[j]);
		}
		if (round == 0) meta_free(got[1], bytes[1]); /* a remembered chunk for round 2 */
	}
	size_t too_many[META_MANY_MAX + 1] = {0};
	void *none[META_MANY_MAX + 1];
	ck_assert(!meta_alloc_many(too_many, none, META_MANY_MAX + 1));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("meta");
	TCase *t = tcase_create("meta");
	tcase_add_checked_fixture(t, setup, NULL);
	tcase_add_test(t, test_fresh_chunks_guarded);
	tcase_add_test(t, test_split_chunks_guarded);
	tcase_add_test(t, test_many_chunks_guarded);
	suite_add_tcase(s, t);
	return run_suite(s);
}
