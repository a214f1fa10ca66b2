/* test_cache.c — the reuse cache's fit policy, bounds, decay, cutting and joining, and
 * its call-site partitions. */
#define _GNU_SOURCE
#include <check.h>
#include <stdlib.h>

#include "large/reuse_cache.h"
#include "guard/guard.h"
#include "os/os.h"
#include "../check_main.h"
#include "../harness.h"

#define P ((size_t)4096)
#define SLOTS 16

static struct reuse_cache_entry storage[SLOTS];
static struct reuse_cache c;
static struct guard_region arena;
static size_t carve_at;

/* Regions carved out of one reservation, a closed page between them so that they
 * never touch (unless a test wants them to). */
static struct guard_region carve(size_t pages, bool touching)
{
	if (!touching) carve_at += P;
	struct guard_region r = {.base = arena.base + carve_at, .size = pages * P, .flags = arena.flags};
	carve_at += pages * P;
	ck_assert_uint_le(carve_at, arena.size);
	return r;
}

static void setup(void)
{
	os_init();
	guard_init(GUARD_AUTO);
	ck_assert(guard_reserve(&arena, 4096 * P, NULL));
	carve_at = 0;
	reuse_cache_init(&c, storage, SLOTS, 1024 * P, 1000);
}

START_TEST(takes_smallest_that_fits)
{
	size_t sizes[] = {120, 100, 105, 110};
	for (int i = 0; i < 4; i++) {
		struct guard_region r = carve(sizes[i], false);
		reuse_cache_put(&c, &r, 0, 0);
	}
	struct guard_region out;
	ck_assert(reuse_cache_take(&c, 0, 101 * P, 10 * P, 101 * P, &out));
	ck_assert_uint_eq(out.size, 105 * P); /* smallest at least 101 pages */
	ck_assert(reuse_cache_take(&c, 0, 100 * P, 10 * P, 100 * P, &out));
	ck_assert_uint_eq(out.size, 100 * P);
	ck_assert_uint_eq(c.count, 2);
}
END_TEST

START_TEST(waste_bound_is_exact)
{
	struct guard_region r = carve(110, false);
	reuse_cache_put(&c, &r, 0, 0);
	struct guard_region out;
	/* 110 pages for a 100-page need with 10 pages of slack: exactly at the bound, whole. */
	ck_assert(reuse_cache_take(&c, 0, 100 * P, 10 * P, 100 * P, &out));
	ck_assert_uint_eq(out.size, 110 * P);
	ck_assert_uint_eq(c.count, 0);

	/* One page more than the bound: never handed out whole, cut to the split size. */
	r = carve(111, false);
	reuse_cache_put(&c, &r, 0, 0);
	ck_assert(reuse_cache_take(&c, 0, 100 * P, 10 * P, 104 * P, &out));
	ck_assert_uint_eq(out.size, 104 * P);
	ck_assert_uint_eq(c.count, 1);
	ck_assert_uint_eq(c.entries[0].region.size, 7 * P);
	ck_assert_uint_eq(c.entries[0].region.base, out.base + 104 * P);
}
END_TEST

START_TEST(miss_when_nothing_is_big_enough)
{
	struct guard_region r = carve(50, false), out;
	reuse_cache_put(&c, &r, 0, 0);
	ck_assert(!reuse_cache_take(&c, 0, 51 * P, 100 * P, 51 * P, &out));
	ck_assert_uint_eq(c.count, 1);
}
END_TEST

START_TEST(sorted_by_size)
{
	size_t sizes[] = {9, 3, 7, 1, 5, 8, 2};
	for (int i = 0; i < 7; i++) {
		struct guard_region r = carve(sizes[i], false);
		reuse_cache_put(&c, &r, 0, 0);
	}
	for (size_t i = 1; i < c.count; i++)
		ck_assert_uint_le(c.entries[i - 1].region.size, c.entries[i].region.size);
}
END_TEST

START_TEST(evicts_oldest_over_count)
{
	struct guard_region first = carve(3, false);
	reuse_cache_put(&c, &first, 0, 1);
	for (int i = 0; i < SLOTS; i++) {
		struct guard_region r = carve(3, false);
		reuse_cache_put(&c, &r, 0, 2 + (uint64_t)i);
	}
	ck_assert_uint_eq(c.count, SLOTS);
	for (size_t i = 0; i < c.count; i++) ck_assert_uint_ne(c.entries[i].region.base, first.base);
	/* The evicted region was unmapped: its address is free (a hint mapping lands there). */
	ck_assert_int_eq(probe_read((void *)first.base), EFAULT);
}
END_TEST

START_TEST(evicts_over_bytes)
{
	reuse_cache_init(&c, storage, SLOTS, 10 * P, 1000);
	struct guard_region a = carve(6, false), b = carve(6, false);
	reuse_cache_put(&c, &a, 0, 1);
	reuse_cache_put(&c, &b, 0, 2);
	ck_assert_uint_eq(c.count, 1);
	ck_assert_uint_eq(c.entries[0].region.base, b.base);
	ck_assert_uint_le(c.bytes, 10 * P);
	struct guard_region huge = carve(11, false);
	reuse_cache_put(&c, &huge, 0, 3); /* bigger than the whole cache: unmapped at once */
	ck_assert_uint_eq(c.count, 1);
}
END_TEST

START_TEST(decays_idle_entries)
{
	struct guard_region a = carve(4, false), b = carve(4, false);
	reuse_cache_put(&c, &a, 0, 0);
	reuse_cache_put(&c, &b, 0, 800);
	reuse_cache_decay(&c, 999);
	ck_assert_uint_eq(c.count, 2);
	reuse_cache_decay(&c, 1248); /* within a quarter interval of the last look: no scan */
	ck_assert_uint_eq(c.count, 2);
	reuse_cache_decay(&c, 1250);
	ck_assert_uint_eq(c.count, 1);
	ck_assert_uint_eq(c.entries[0].region.base, b.base);
	reuse_cache_decay(&c, 1800);
	ck_assert_uint_eq(c.count, 0);
}
END_TEST

START_TEST(joins_touching_regions)
{
	struct guard_region a = carve(4, false), b = carve(5, true), d = carve(6, true);
	reuse_cache_put(&c, &a, 0, 0);
	reuse_cache_put(&c, &d, 0, 0);
	ck_assert_uint_eq(c.count, 2);
	reuse_cache_put(&c, &b, 0, 0); /* fills the gap: one region of 15 pages */
	ck_assert_uint_eq(c.count, 1);
	ck_assert_uint_eq(c.entries[0].region.base, a.base);
	ck_assert_uint_eq(c.entries[0].region.size, 15 * P);
	ck_assert_uint_eq(c.bytes, 15 * P);
}
END_TEST

/* A region is handed only to its own partition, and the rest cut from it stays that
 * partition's; each partition's run keeps its own smallest fit. */
START_TEST(partitions_apart)
{
	struct guard_region a = carve(100, false), b = carve(120, false), out;
	reuse_cache_put(&c, &a, 3, 0);
	reuse_cache_put(&c, &b, 1, 0);
	ck_assert(!reuse_cache_take(&c, 0, 50 * P, 10 * P, 50 * P, &out)); /* below both runs */
	ck_assert(!reuse_cache_take(&c, 2, 50 * P, 10 * P, 50 * P, &out)); /* between them */
	ck_assert(!reuse_cache_take(&c, 3, 101 * P, 10 * P, 101 * P, &out)); /* 1's 120 pages would fit */
	ck_assert(reuse_cache_take(&c, 3, 60 * P, 10 * P, 60 * P, &out)); /* cut: 40 pages stay 3's */
	ck_assert_uint_eq(out.base, a.base);
	ck_assert_uint_eq(c.count, 2);
	for (size_t i = 1; i < c.count; i++) /* sorted by (partition, size) */
		ck_assert(c.entries[i - 1].partition < c.entries[i].partition ||
			  (c.entries[i - 1].partition == c.entries[i].partition &&
			   c.entries[i - 1].region.size <= c.entries[i].region.size));
	/* 1 gets its own 120 pages whole, not 3's smaller rest of 40. */
	ck_assert(reuse_cache_take(&c, 1, 30 * P, 100 * P, 30 * P, &out));
	ck_assert_uint_eq(out.base, b.base);
	ck_assert_uint_eq(out.size, 120 * P);
	ck_assert(reuse_cache_take(&c, 3, 40 * P, 0, 40 * P, &out));
	ck_assert_uint_eq(out.base, a.base + 60 * P);
}
END_TEST

/* Touching regions of two partitions stay apart: joined, one partition would get the
 * other's addresses. */
START_TEST(partitions_never_joined)
{
	struct guard_region a = carve(4, false), b = carve(5, true), d = carve(6, true), out;
	reuse_cache_put(&c, &a, 0, 0);
	reuse_cache_put(&c, &b, 1, 0);
	reuse_cache_put(&c, &d, 0, 0);
	ck_assert_uint_eq(c.count, 3);
	ck_assert_uint_eq(c.bytes, 15 * P);
	ck_assert(!reuse_cache_take(&c, 0, 7 * P, 20 * P, 7 * P, &out)); /* 0's pieces: 4 and 6 pages */
	ck_assert(reuse_cache_take(&c, 1, 5 * P, 0, 5 * P, &out));
	ck_assert_uint_eq(out.base, b.base);
}
END_TEST

START_TEST(flush_unmaps_everything)
{
	for (int i = 0; i < 5; i++) {
		struct guard_region r = carve(2, false);
		reuse_cache_put(&c, &r, 0, 0);
	}
	ck_assert_uint_eq(reuse_cache_flush(&c), 5);
	ck_assert_uint_eq(c.count, 0);
	ck_assert_uint_eq(c.bytes, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cache");
	TCase *t = tcase_create("policy");
	tcase_add_checked_fixture(t, setup, NULL);
	tcase_add_test(t, takes_smallest_that_fits);
	tcase_add_test(t, waste_bound_is_exact);
	tcase_add_test(t, miss_when_nothing_is_big_enough);
	tcase_add_test(t, sorted_by_size);
	tcase_add_test(t, evicts_oldest_over_count);
	tcase_add_test(t, evicts_over_bytes);
	tcase_add_test(t, decays_idle_entries);
	tcase_add_test(t, joins_touching_regions);
	tcase_add_test(t, partitions_apart);
	tcase_add_test(t, partitions_never_joined);
	tcase_add_test(t, flush_unmaps_everything);
	suite_add_tcase(s, t);
	return run_suite(s);
}
