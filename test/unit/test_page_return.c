/* test_page_return — the pages of free slots in open slabs go back to the kernel
 * (slab/page_return.c): at malloc_trim at once (which answers 1 for them alone),
 * otherwise one to two periods of slab_return_ms after the last free into their slab, or
 * at the first sweep a period after the frees in a class that hands out nothing since;
 * in every class (slots of a page
 * and more, runs of small slots that fill a page, a slab of one page whose slots are all
 * free) and in empty slabs kept open; slots still in the slot quarantine keep theirs;
 * blocks that reuse such slots read zero and free cleanly (their canaries stamped
 * again). Run under each backend (make test), and under profile=light by make
 * check-configs. */
#define _GNU_SOURCE
#include <check.h>
#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../check_main.h"
#include "../harness.h"
#include "../profile.h"
#include "../site.h"
#include "rampart.h"
#include "slab/sizeclass.h"
#include "slab/slab.h"

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

/* The slots waiting in the quarantine of the class malloc(n) takes (the smallest whose
 * usable size holds n). */
static size_t quarantined_in_class_of(const struct rampart_heap_stats *h, size_t n)
{
	for (size_t c = 0; c < h->classes; c++)
		if (h->size_class[c].usable >= n) return h->size_class[c].quarantined;
	return 0;
}

/* The counter's value; ULONG_MAX if it cannot be read. No assertion: Check's allocate. */
static unsigned long returned_pages_quietly(void)
{
	unsigned long v = 0;
	return rampart_get_counter("slab_pages_returned", &v) ? ULONG_MAX : v;
}

static unsigned long returned_pages(void)
{
	unsigned long v = returned_pages_quietly();
	ck_assert_uint_ne(v, ULONG_MAX);
	return v;
}

/* Enough small blocks that the first half of them, freed first, have mostly left the
 * slot quarantine (1,536 slots of 320 bytes, 6,144 of 112) by the last free: a slot of
 * them stays in its random array with a chance of e^-7 or less. */
#define SMALL_COUNT 30000

/* Of apart blocks, how many may share a page with a slot still in the quarantine: none
 * without one; with one, a page of 36 slots of 112 bytes holds such a slot with a chance
 * of about 3%. */
static int may_stay(int apart) { return test_slot_quarantine() ? apart / 10 : 0; }

static char *blocks[SMALL_COUNT];
static char *freed[SMALL_COUNT];
static int nfreed, nblocks;

/* count blocks of size written whole; all but every keep-th (by address) freed. Made
 * at reuse_all's call site (site_malloc), as are the blocks of every test that ends in
 * reuse_all: with call-site partitions a freed slot goes back only to allocations of
 * its own partition, so blocks of another site would take fresh slots and leave the
 * returned ones alone. */
static void build_and_keep(int count, size_t size, int keep)
{
	nblocks = count;
	for (int i = 0; i < count; i++) {
		ck_assert_ptr_nonnull(blocks[i] = site_malloc(size));
		memset(blocks[i], 'x', size);
	}
	qsort(blocks, count, sizeof *blocks, cmp_ptr);
	nfreed = 0;
	for (int i = 0; i < count; i++) {
		if (i % keep == 0) continue;
		freed[nfreed++] = blocks[i];
		free(blocks[i]);
	}
}

static void build_and_thin(size_t size) { build_and_keep(COUNT, size, 8); }

static void free_kept(int keep)
{
	for (int i = 0; i < nblocks; i += keep) free(blocks[i]);
}

/* Of the freed blocks, how many have their first page resident. */
static int still_resident(void)
{
	int n = 0;
	for (int i = 0; i < nfreed; i++) n += resident(freed[i]);
	return n;
}

/* Of the freed blocks of size in the first half (by address, freed first), how many
 * share no page with a kept one (every keep-th by address, from the first), and how many
 * of those are resident. */
static void apart_from_kept(size_t size, int keep, int *apart, int *kept_resident)
{
	*apart = *kept_resident = 0;
	for (int i = 0; i < nblocks / 2; i++) {
		if (i % keep == 0) continue;
		uintptr_t lo = (uintptr_t)blocks[i] & ~(uintptr_t)4095, hi = ((uintptr_t)blocks[i] + size - 1) | 4095;
		int k = i - i % keep;
		bool near = (uintptr_t)blocks[k] + size + 8 > lo && (uintptr_t)blocks[k] <= hi;
		if (k + keep < nblocks) near |= (uintptr_t)blocks[k + keep] <= hi && (uintptr_t)blocks[k + keep] + size + 8 > lo;
		if (near) continue;
		++*apart;
		*kept_resident += resident(blocks[i]);
	}
}

/* Blocks of size at the freeing site (site_malloc) take the nfreed slots was[] had (and
 * fresh ones): each reads zero and frees cleanly. That at least one of them got a slot
 * of was[] back is asserted, so that the check cannot go on passing on fresh slots alone
 * (as it did while these blocks came from another call site than the freed ones). */
static void reuse_all(size_t size, char **was, int nwas)
{
	static char *again[4 * COUNT];
	qsort(was, (size_t)nwas, sizeof *was, cmp_ptr);
	int back = 0;
	for (int i = 0; i < 4 * COUNT; i++) {
		ck_assert_ptr_nonnull(again[i] = site_malloc(size));
		back += bsearch(&again[i], was, (size_t)nwas, sizeof *was, cmp_ptr) != NULL;
		/* Without zero-on-free a slot never returned keeps its last owner's bytes. */
		for (size_t j = 0; CONFIG_ZERO_ON_FREE && j < size; j += 64) ck_assert_int_eq(again[i][j], 0);
		memset(again[i], 'y', size);
	}
	for (int i = 0; i < 4 * COUNT; i++) free(again[i]);
	printf("%zu-byte blocks again: %d of %d in slots freed before\n", size, back, 4 * COUNT);
	ck_assert_int_gt(back, 0);
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
	reuse_all(8000, freed, nfreed);
	for (int i = 0; i < COUNT; i += 8) free(blocks[i]);
}
END_TEST

/* malloc_trim answers 1 when all it gave back was pages of free slots (glibc's answers 1
 * when it released any memory, and these pages leave the process's RSS as a closed
 * slab's do): every other 8,000-byte block by address is freed, so each slab (slots of
 * two pages) keeps a live one and none empties, and the trims before the frees left no
 * empty slab and no cached region to give. Nothing is asserted between the trims: Check's
 * assertions allocate and free blocks of their own. */
START_TEST(trim_answers_one_for_pages_alone)
{
	for (int i = 0; i < COUNT; i++) {
		ck_assert_ptr_nonnull(blocks[i] = malloc(8000));
		memset(blocks[i], 'x', 8000);
	}
	qsort(blocks, COUNT, sizeof *blocks, cmp_ptr);
	malloc_trim(0);
	int idle = malloc_trim(0);
	struct rampart_heap_stats h;
	rampart_get_heap_stats(&h);
	size_t empty = h.slabs_empty, closed = h.slabs_closed;
	unsigned long before = returned_pages_quietly();
	for (int i = 1; i < COUNT; i += 2) free(blocks[i]);
	int r = malloc_trim(0);
	unsigned long after = returned_pages_quietly(), returned = after - before;
	int again = malloc_trim(0);
	rampart_get_heap_stats(&h);
	printf("8,000-byte blocks, every other freed: trims answered %d before the frees, %d after (%lu pages returned, "
	       "slabs closed %zu -> %zu), %d again\n", idle, r, returned, closed, h.slabs_closed, again);
	ck_assert_uint_ne(before, ULONG_MAX);
	ck_assert_uint_ne(after, ULONG_MAX);
	ck_assert_int_eq(idle, 0);
	ck_assert_uint_eq(empty, 0);
	ck_assert_uint_eq(h.slabs_closed, closed); /* no slab closed: the 1 is the pages' */
	ck_assert_uint_gt(returned, 0);
	ck_assert_int_eq(r, 1);
	ck_assert_int_eq(again, 0);
	for (int i = 0; i < COUNT; i += 2) free(blocks[i]);
}
END_TEST

/* A period passes, and another class's slow path (its first malloc of the round takes a
 * slab) sweeps every class. */
static void next_period(void)
{
	usleep(1100 * 1000);
	for (int i = 0; i < 64; i++) free(malloc(3000));
}

START_TEST(pages_go_back_after_the_period)
{
	build_and_thin(20000);
	int kept = still_resident();
	for (int round = 0; round < 3; round++) next_period();
	int after = still_resident();
	printf("20,000-byte blocks: %d freed, first pages resident %d, %d after 3.3 s\n", nfreed, kept, after);
	ck_assert_int_le(after, nfreed / 10);
	reuse_all(20000, freed, nfreed);
	for (int i = 0; i < COUNT; i += 8) free(blocks[i]);
}
END_TEST

/* A class that hands out nothing after its frees (it drains: a cache whose values of one
 * size are replaced by values of another) gives their pages back at the first sweep a
 * period after them; one that went on handing out blocks ages its slabs at that sweep
 * and gives back at the next, as churn wants: a slot taken again soon costs no fault. */
START_TEST(draining_class_gives_back_at_one_sweep)
{
	build_and_thin(24000);
	int kept = still_resident();
	next_period();
	int after = still_resident();
	printf("24,000-byte blocks, nothing handed out after the frees: %d freed, first pages resident %d, %d a period "
	       "later\n", nfreed, kept, after);
	ck_assert_int_le(after, nfreed / 10);
	for (int i = 0; i < COUNT; i += 8) free(blocks[i]);
}
END_TEST

START_TEST(allocating_class_waits_a_sweep_more)
{
	build_and_thin(28000);
	int kept = still_resident();
	usleep(500 * 1000);
	char *one = malloc(28000); /* the class hands out a block in the period */
	ck_assert_ptr_nonnull(one);
	next_period();
	int aged = still_resident();
	next_period();
	int after = still_resident();
	printf("28,000-byte blocks, one handed out after the frees: %d freed, first pages resident %d, %d a period "
	       "later, %d two periods later\n", nfreed, kept, aged, after);
	ck_assert_int_ge(aged, nfreed / 2);
	ck_assert_int_le(after, nfreed / 10);
	free(one);
	for (int i = 0; i < COUNT; i += 8) free(blocks[i]);
}
END_TEST

/* Slots of 320 bytes (51 a slab of 4 pages, no extent per slot): all but every 64th
 * freed; at the trim every page none of whose slots is live goes back. */
START_TEST(small_slots_pages_go_back)
{
	unsigned long before = returned_pages();
	build_and_keep(SMALL_COUNT, 300, 64);
	malloc_trim(0);
	int apart, left;
	apart_from_kept(300, 64, &apart, &left);
	printf("300-byte blocks: %d freed, %d of the first half on pages without a kept block, %d of them resident "
	       "after the trim; %lu pages returned\n", nfreed, apart, left, returned_pages() - before);
	ck_assert_int_gt(apart, nfreed / 4);
	ck_assert_int_le(left, may_stay(apart));
	reuse_all(300, freed, nfreed);
	free_kept(64);
}
END_TEST

/* Slots of 112 bytes (36 a slab of one page): a page goes back when all of its slab's
 * slots are free. */
START_TEST(one_page_slabs_go_back)
{
	build_and_keep(SMALL_COUNT, 100, 256);
	malloc_trim(0);
	int apart, left;
	apart_from_kept(100, 256, &apart, &left);
	printf("100-byte blocks: %d freed, %d of the first half on pages without a kept block, %d of them resident "
	       "after the trim\n", nfreed, apart, left);
	ck_assert_int_gt(apart, nfreed / 4);
	ck_assert_int_le(left, may_stay(apart));
	reuse_all(100, freed, nfreed);
	free_kept(256);
}
END_TEST

/* Slots still in the slot quarantine (200 of 320 bytes; it holds 1,536) keep their
 * pages at the trim (a write into one through a long-term pin of the kernel must land
 * where the check at its reuse sees it: page_return.c), and a second free of one is
 * still fatal. */
static void free_again(void *p) { free(p); }
START_TEST(quarantined_slots_keep_pages)
{
	if (!test_slot_quarantine()) {
		printf("no slot quarantine in this process: nothing to check\n");
		return;
	}
	for (int i = 0; i < 8000; i++) {
		ck_assert_ptr_nonnull(blocks[i] = site_malloc(300));
		memset(blocks[i], 'x', 300);
	}
	qsort(blocks, 8000, sizeof *blocks, cmp_ptr);
	for (int i = 8000 - 200; i < 8000; i++) free(blocks[i]);
	/* The 300-byte class's count alone: Check's own assertions allocate and free small
	 * blocks of other classes, which then wait in their quarantines. */
	struct rampart_heap_stats h;
	rampart_get_heap_stats(&h);
	size_t held = quarantined_in_class_of(&h, 300);
	malloc_trim(0);
	int kept = 0;
	for (int i = 8000 - 200; i < 8000; i++) kept += resident(blocks[i]);
	rampart_get_heap_stats(&h);
	printf("200 quarantined 300-byte blocks: %d resident after the trim; quarantined in their class %zu -> %zu\n",
	       kept, held, quarantined_in_class_of(&h, 300));
	ck_assert_int_eq(kept, 200);
	ck_assert_uint_ge(held, 200);
	ck_assert_uint_eq(quarantined_in_class_of(&h, 300), held);
	fflush(NULL);
	pid_t pid = fork();
	if (!pid) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, STDERR_FILENO);
		free_again(blocks[8000 - 100]);
		_exit(0);
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "a second free of a quarantined block was not fatal");
	for (int i = 0; i < 8000 - 200; i++) free(blocks[i]);
	reuse_all(300, blocks, 8000);
}
END_TEST

/* Empty slabs kept open for reuse give their pages back too, a period or two after their
 * last free. */
START_TEST(empty_slabs_give_pages_back)
{
	for (int i = 0; i < COUNT / 4; i++) {
		ck_assert_ptr_nonnull(blocks[i] = site_malloc(16000));
		memset(blocks[i], 'x', 16000);
	}
	for (int i = 0; i < COUNT / 4; i++) free(blocks[i]);
	struct rampart_heap_stats h;
	rampart_get_heap_stats(&h);
	unsigned c = 0;
	while (h.size_class[c].usable < 16000) c++;
	int kept = 0;
	for (int i = 0; i < COUNT / 4; i++) kept += resident(blocks[i]);
	for (int round = 0; round < 3; round++) next_period();
	int after = 0;
	for (int i = 0; i < COUNT / 4; i++) after += resident(blocks[i]);
	rampart_get_heap_stats(&h);
	size_t r[SC_COUNT];
	ck_assert(slab_resident(r));
	printf("16,000-byte blocks: %zu empty slabs, %zu quarantined, %d of %d first pages resident after the frees, "
	       "%d after 3.3 s; %zu bytes of the class resident\n",
	       h.size_class[c].slabs_empty, h.size_class[c].quarantined, kept, COUNT / 4, after, r[c]);
	ck_assert_uint_gt(h.size_class[c].slabs_empty, 0);
	/* Nothing live: the empty slabs hold no page, the quarantined slots their own. */
	ck_assert_int_le(after, (int)h.size_class[c].quarantined);
	ck_assert_uint_le(r[c], h.size_class[c].quarantined * h.size_class[c].slot_size);
	reuse_all(16000, blocks, COUNT / 4);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("page_return");
	TCase *t = tcase_create("core");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, trim_gives_free_slots_pages_back);
	tcase_add_test(t, trim_answers_one_for_pages_alone);
	tcase_add_test(t, pages_go_back_after_the_period);
	tcase_add_test(t, draining_class_gives_back_at_one_sweep);
	tcase_add_test(t, allocating_class_waits_a_sweep_more);
	tcase_add_test(t, small_slots_pages_go_back);
	tcase_add_test(t, one_page_slabs_go_back);
	tcase_add_test(t, quarantined_slots_keep_pages);
	tcase_add_test(t, empty_slabs_give_pages_back);
	suite_add_tcase(s, t);
	return run_suite(s);
}
