/* test_slab_choice — which slab an allocation draws from (slab/slab_life.c, slab_refill;
 * slot_alloc.c): the lowest position with a free slot, so that the low slabs fill and
 * the high ones drain; in a fragmented class also over the slot that left the slot
 * quarantine last. Checked through the class's own state (its current slab, its
 * partial set) and by what the program sees: after a wave of frees and churn at a
 * constant count of live blocks, the class holds far fewer active slabs. Run under
 * each backend, and by make check-configs under profile=light (no slot quarantine). */
#define _GNU_SOURCE
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../check_main.h"
#include "../harness.h"
#include "../site.h"
#include "rampart.h"
#include "slab/slab_class.h"
#include "slab/slab_sets.h"

#define SIZE 1000 /* the 1 KiB class: 32 slots a slab */
#define COUNT 16384

static void *blocks[COUNT];

static struct slab_class *class_of(const void *p, uint32_t *pos)
{
	const struct area_span *span;
	struct slab_class *k = class_at((uintptr_t)p, &span);
	ck_assert_ptr_nonnull(k);
	struct slot_place pl = decode_slot(k, span, (uintptr_t)p, NO_LOCK);
	ck_assert_ptr_nonnull(pl.s);
	*pos = pl.pos;
	return k;
}

/* The class's slabs as the choice must leave them: every active slab with a free slot
 * but the current one is in the partial set, and no other slab is there. */
static void check_sets(struct slab_class *k)
{
	class_lock(k);
	uint32_t partial = 0;
	for (uint32_t pos = 0; pos < k->hwm; pos++) {
		if (!desc_exists(k, pos)) continue;
		const struct slab *s = desc(k, pos);
		bool member = set_next(k, SET_PARTIAL, pos) == pos;
		if (s->state != SLAB_ACTIVE || s->nused == k->slots || pos + 1 == k->current) {
			ck_assert_msg(!member, "slab %u in the partial set (state %u, %u used)", pos, s->state, s->nused);
			continue;
		}
		ck_assert_msg(member, "slab %u, %u of %u used, not in the partial set", pos, s->nused, k->slots);
		partial++;
	}
	ck_assert_uint_eq(partial, k->nset[SET_PARTIAL]);
	class_unlock(k);
}

static void shuffle(void **v, int n)
{
	for (int i = n - 1; i > 0; i--) {
		int j = rand() % (i + 1);
		void *t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
}

/* After three quarters of the blocks are freed at random, new blocks go to the lowest
 * slabs with room: the first hundred land in the lowest tenth of the slabs in use. */
START_TEST(lowest_slab_first)
{
	srand(7);
	uint32_t pos, lo = UINT32_MAX, hi = 0;
	struct slab_class *k = NULL;
	for (int i = 0; i < COUNT; i++) {
		ck_assert_ptr_nonnull(blocks[i] = site_malloc(SIZE));
		memset(blocks[i], 1, SIZE);
		k = class_of(blocks[i], &pos);
		lo = pos < lo ? pos : lo;
		hi = pos > hi ? pos : hi;
	}
	shuffle(blocks, COUNT);
	for (int i = COUNT / 4; i < COUNT; i++) free(blocks[i]);
	check_sets(k);
	uint32_t tenth = lo + (hi - lo) / 10, above = 0;
	static void *fresh[100];
	for (int i = 0; i < 100; i++) {
		ck_assert_ptr_nonnull(fresh[i] = site_malloc(SIZE));
		class_of(fresh[i], &pos);
		above += pos > tenth;
	}
	check_sets(k);
	printf("slabs %u to %u: %u of 100 new blocks above the lowest tenth\n", lo, hi, above);
	/* The slot held for the next allocation (strong) may lie anywhere: one. */
	ck_assert_uint_le(above, 1);
	for (int i = 0; i < 100; i++) free(fresh[i]);
	for (int i = 0; i < COUNT / 4; i++) free(blocks[i]);
	check_sets(k);
}
END_TEST

/* The same wave of frees, then churn that keeps the live count (free one at random,
 * allocate one): the active slabs fall to well under half, the rest empty (kept open
 * within their budget, or closed). Without the choice they stay about as many as the
 * wave left them (as the slot leaving the quarantine refills the slab of the last
 * free). */
START_TEST(fragmented_class_drains)
{
	srand(11);
	for (int i = 0; i < COUNT; i++) {
		ck_assert_ptr_nonnull(blocks[i] = site_malloc(SIZE));
		memset(blocks[i], 1, SIZE);
	}
	uint32_t pos;
	struct slab_class *k = class_of(blocks[0], &pos);
	shuffle(blocks, COUNT);
	int live = COUNT / 4;
	for (int i = live; i < COUNT; i++) free(blocks[i]);
	struct rampart_heap_stats h;
	rampart_get_heap_stats(&h);
	size_t before = h.size_class[k->cls].slabs_active;
	for (int r = 0; r < 20 * live; r++) {
		int i = rand() % live;
		free(blocks[i]);
		ck_assert_ptr_nonnull(blocks[i] = site_malloc(SIZE));
		memset(blocks[i], 2, SIZE);
	}
	check_sets(k);
	rampart_get_heap_stats(&h);
	size_t after = h.size_class[k->cls].slabs_active;
	printf("%d live blocks of %d bytes: %zu active slabs after the frees, %zu after churn (%zu quarantined)\n",
	       live, SIZE, before, after, h.size_class[k->cls].quarantined);
	ck_assert_uint_le(after, before / 2);
	for (int i = 0; i < live; i++) free(blocks[i]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("slab_choice");
	TCase *t = tcase_create("core");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, lowest_slab_first);
	tcase_add_test(t, fragmented_class_drains);
	suite_add_tcase(s, t);
	return run_suite(s);
}
