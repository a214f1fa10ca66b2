/* test_sizeclass — the size-class table and the size -> class mapping. */
#include <check.h>

#include "../check_main.h"
#include <stdlib.h>

#include "slab/sizeclass.h"

/* Every size 0..SC_MAX_REQUEST maps to the smallest class whose usable size holds it. */
START_TEST(every_size_maps_to_smallest_fitting_class)
{
	for (size_t n = 0; n <= SC_MAX_REQUEST; n++) {
		unsigned c = sc_of(n);
		ck_assert_uint_lt(c, SC_COUNT);
		ck_assert_uint_ge(sc_usable(c), n);
		if (c > 0) ck_assert_uint_lt(sc_usable(c - 1), n ? n : 1);
		if (n == 0) ck_assert_uint_eq(c, 0);
	}
}
END_TEST

START_TEST(class_sizes_are_the_documented_progression)
{
	static const size_t first[] = {16,  16,  32,  48,  64,  80,  96,  112, 128, 144, 160, 192,
				       224, 256, 288, 320, 384, 448, 512, 576, 640, 768, 896, 1024, 1152};
	for (unsigned c = 0; c < sizeof first / sizeof *first; c++) ck_assert_uint_eq(sc_size(c), first[c]);
	ck_assert_uint_eq(sc_size(SC_COUNT - 1), 131072);
	ck_assert_uint_eq(sc_usable(0), 0);
	for (unsigned c = 1; c < SC_COUNT; c++) {
		ck_assert_uint_eq(sc_size(c) % 16, 0);
		ck_assert_uint_gt(sc_size(c), sc_size(c - 1) * (c > 1));
		/* Five classes per doubling above 128: never more than 25% apart. */
		if (c > 8) ck_assert_uint_le(sc_size(c) * 4, sc_size(c - 1) * 5);
	}
}
END_TEST

/* A power of two, and a power of two plus a header (sqlite asks 1,032, 4,104 and 4,368
 * bytes for its pages), get the snug slot an eighth above the power of two wherever the
 * header and the canary fit that margin, not the next quarter. */
START_TEST(power_of_two_requests_fit_snugly)
{
	for (unsigned b = 7; ((size_t)1 << b) <= SC_MAX_REQUEST / 2; b++) {
		size_t n = (size_t)1 << b;
		static const size_t header[] = {0, 8, 16, 24, 64, 272};
		for (unsigned h = 0; h < sizeof header / sizeof *header; h++) {
			size_t want = n + header[h];
			if (header[h] + SC_CANARY > sc_snug(b)) continue;
			ck_assert_uint_ge(sc_usable(sc_of(want)), want);
			/* (Without a canary, a bare power of two has its own class.) */
			ck_assert_uint_eq(sc_size(sc_of(want)), (header[h] + SC_CANARY) ? n + sc_snug(b) : n);
		}
	}
	/* With the canary a power of two needs the snug class above it; without, its own. */
	ck_assert_uint_eq(sc_size(sc_of(4096)), SC_CANARY ? 4608 : 4096);
	ck_assert_uint_eq(sc_size(sc_of(4368)), 4608);
	ck_assert_uint_eq(sc_size(sc_of(1032)), 1152);
	ck_assert_uint_eq(sc_size(sc_of(128)), SC_CANARY ? 144 : 128);
	ck_assert_uint_eq(sc_size(sc_of(131064)), 131072);
}
END_TEST

START_TEST(aligned_classes_are_aligned)
{
	for (size_t align = 16; align <= 4096; align *= 2)
		for (size_t n = 0; n <= 70000; n += 37) {
			unsigned c = sc_of_aligned(n, align);
			if (c == SC_COUNT) continue;
			ck_assert_uint_eq(sc_size(c) % align, 0);
			ck_assert_uint_ge(sc_usable(c), n);
		}
}
END_TEST

/* Geometry for 4 KiB pages (and 16 KiB, 64 KiB: arm64 kernels). */
START_TEST(geometry_fits_and_wastes_little)
{
	static const size_t pages[] = {4096, 16384, 65536};
	size_t page = pages[_i];
	for (unsigned c = 1; c < SC_COUNT; c++) {
		struct sc_geometry g;
		sc_geometry(c, page, &g);
		size_t bytes = (size_t)g.pages * page;
		ck_assert_uint_eq(g.size, sc_size(c));
		ck_assert_uint_eq(g.usable, sc_usable(c));
		ck_assert_uint_ge(g.slots, 1);
		ck_assert_uint_le(g.slots, SLAB_MAX_SLOTS);
		ck_assert_uint_le((size_t)g.slots * g.size, bytes);
		/* With 4 KiB pages no class wastes more than 2% of its slab. */
		if (page == 4096) ck_assert_uint_le((bytes - (size_t)g.slots * g.size) * 50, bytes);
	}
	struct sc_geometry z;
	sc_geometry(0, page, &z);
	ck_assert_uint_ge(z.slots, 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sizeclass");
	TCase *t = tcase_create("core");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, every_size_maps_to_smallest_fitting_class);
	tcase_add_test(t, class_sizes_are_the_documented_progression);
	tcase_add_test(t, power_of_two_requests_fit_snugly);
	tcase_add_test(t, aligned_classes_are_aligned);
	tcase_add_loop_test(t, geometry_fits_and_wastes_little, 0, 3);
	suite_add_tcase(s, t);
	return run_suite(s);
}
