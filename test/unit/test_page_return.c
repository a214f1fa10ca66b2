/* test_page_return — the pages of free slots in open slabs go back to the kernel
 * (slab/page_return.c): at malloc_trim at once, otherwise one to two periods of
 * slab_return_ms after the last free into their slab; blocks that reuse such slots read
 * zero and free cleanly (their canaries stamped again). Run under each backend (make
 * test). */
#define _GNU_SOURCE
#include <check.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../check_main.h"
#include "../harness.h"
#include "rampart.h"

#define COUNT 2000

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

static bool resident(const void *p)
{
	unsigned char vec;
	ck_assert_int_eq(mincore((void *)((uintptr_t)p & ~(uintptr_t)4095), 4096, &vec), 0);
	return vec & 1;
}

static unsigned long returned_pages(void)
{
	unsigned long v = 0;
	ck_assert_int_eq(rampart_get_counter("slab_pages_returned", &v), 0);
	return v;
}

static char *blocks[COUNT];
static char *freed[COUNT];
static int nfreed;

/* COUNT blocks of size written whole; all but every eighth (by address) freed. */
static void build_and_thin(size_t size)
{
	for (int i = 0; i < COUNT; i++) {
		ck_assert_ptr_nonnull(blocks[i] = malloc(size));
		memset(blocks[i], 'x', size);
	}
	qsort(blocks, COUNT, sizeof *blocks, cmp_ptr);
	nfreed = 0;
	for (int i = 0; i < COUNT; i++) {
		if (i % 8 == 0) continue;
		freed[nfreed++] = blocks[i];
		free(blocks[i]);
	}
}

/* Of the freed blocks, how many have their first page resident. */
static int still_resident(void)
{
	int n = 0;
	for (int i = 0; i < nfreed; i++) n += resident(freed[i]);
	return n;
}

static void reuse_all(size_t size)
{
	static char *again[4 * COUNT];
	for (int i = 0; i < 4 * COUNT; i++) {
		ck_assert_ptr_nonnull(again[i] = malloc(size));
		/* Without zero-on-free a slot never returned keeps its last owner's bytes. */
		for (size_t j = 0; CONFIG_ZERO_ON_FREE && j < size; j += 64) ck_assert_int_eq(again[i][j], 0);
		memset(again[i], 'y', size);
	}
	for (int i = 0; i < 4 * COUNT; i++) free(again[i]);
}

START_TEST(trim_gives_free_slots_pages_back)
{
	unsigned long before = returned_pages();
	build_and_thin(8000);
	int kept = still_resident();
	malloc_trim(0);
	int after = still_resident();
	printf("8,000-byte blocks: %d freed, first pages resident %d before the trim, %d after; %lu pages returned\n",
	       nfreed, kept, after, returned_pages() - before);
	/* The last ones freed may wait in the slot quarantine, still in use. */
	ck_assert_int_le(after, nfreed / 10);
	ck_assert_uint_ge(returned_pages() - before, (unsigned long)nfreed);
	reuse_all(8000);
	for (int i = 0; i < COUNT; i += 8) free(blocks[i]);
}
END_TEST

START_TEST(pages_go_back_after_the_period)
{
	build_and_thin(20000);
	int kept = still_resident();
	/* Two sweeps, a period apart: a free's slab ages at the first and gives back at the
	 * second. Another class's slow path sweeps (a slab emptied). */
	for (int round = 0; round < 3; round++) {
		usleep(1100 * 1000);
		for (int i = 0; i < 64; i++) free(malloc(3000));
	}
	int after = still_resident();
	printf("20,000-byte blocks: %d freed, first pages resident %d, %d after 3.3 s\n", nfreed, kept, after);
	ck_assert_int_le(after, nfreed / 10);
	reuse_all(20000);
	for (int i = 0; i < COUNT; i += 8) free(blocks[i]);
}
END_TEST


int main(void)
{
	Suite *s = suite_create("page_return");
	TCase *t = tcase_create("core");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, trim_gives_free_slots_pages_back);
	tcase_add_test(t, pages_go_back_after_the_period);
	suite_add_tcase(s, t);
	return run_suite(s);
}
