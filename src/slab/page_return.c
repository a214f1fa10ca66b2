/*
 * page_return.c — giving back the pages of free slots in open slabs (page_return.h).
 *
 * Why two sweeps: a slab freed into goes from PAGES_FREED to PAGES_AGED at the next sweep
 * of its class and gives its pages back at the one after, so a page goes back between
 * one and two periods after the last free into its slab (as jemalloc's dirty decay and
 * Scudo's release interval do), never on the free itself: churn that takes the slot
 * again soon pays no system call and no page fault. Why one in a class that handed out
 * nothing since its last sweep: there is no churn to spare, and a class that only frees
 * (a cache's values of one size replaced by values of another) kept resident every slab
 * it freed into in the last period or two, each free starting its slab's wait again
 * (slab_return_pages).
 *
 * Which slabs: the open ones freed into (the dirty set: a slab joins it when a slot of
 * it goes back to it, and leaves it when its pages go back or it closes), so a sweep
 * looks only at slabs that may have pages to give. Of a slab of small slots, the pages
 * all of whose slots are free (a run of 25 free slots of 160 bytes fills one).
 *
 * Why not the pages of slots in the slot quarantine, though they were wiped at their
 * free like free ones: the kernel may still write into such a slot after its free,
 * through a long-term pin (an io_uring fixed buffer, vmsplice, RDMA), and once its page
 * went back that write lands in a page the process no longer maps, where the check at
 * the slot's next allocation never sees it (system/uring_check). The quarantine's wait is
 * what gives such a bug its time to show; its pages are the price (docs/slab.md).
 *
 * Why the returned mark is a page's (struct slab's returned) and not a slot's: a slot
 * whose canary went back reads as zero to its end, so it is marked fresh, which the
 * neighbour checks and the allocation read already; what fresh alone would lose is the
 * check at its next allocation, and a bit per page (of the slot's last word) tells which
 * fresh slots need one. A slot never handed out that shares such a page is checked too,
 * and reads zero as well. Slots of up to 256 a slab leave the descriptor no room for a
 * bit per slot; 64 bits of pages fit beside its canary.
 */
#include "slab/page_return.h"

#include <string.h>

#include "base/counters.h"
#include "guard/guard.h"
#include "slab/class_tally.h"
#include "slab/slab_sets.h"
#include "slab/slot_check.h"

/* A slot freed since it was last handed out (not fresh, not returned) on a page that goes
 * back: it must be as its free left it, as its next allocation would check it. */
static void check_still_wiped(struct slab_class *k, const struct slab *s, uintptr_t a, uint32_t i)
{
#if CONFIG_ZERO_ON_FREE
	size_t n = MIN(align_up(extent_of(k, s, i), 16), (size_t)k->usable);
	uint64_t tail = 0;
#if RAMPART_MTE
	/* Under memory tagging a freed slot keeps its last owner's tag in its last usable
	 * byte (slot_tag_keep), which the drop loses: the next owner's tag is then drawn
	 * without that exclusion, as the 16-byte class's always is. */
	if (roots.mte && k->usable >= SLOT_TAG_KEPT_MIN && n == k->usable) {
		memcpy(&tail, (const char *)a + n - 8, 8);
		tail &= ~((uint64_t)0xff << 56); /* little-endian: the last byte is the top one */
		n -= 8;
	}
#endif
	if (tail || !all_zero((const void *)a, n)) die(k, OP_INTERNAL, ERR_WRITE_AFTER_FREE, (void *)a);
#endif
#if CONFIG_SLOT_CANARY
	if (canary_word(a + k->usable) != s->canary) die(k, OP_INTERNAL, ERR_CANARY, (void *)a);
#endif
}

/* Bits first..last (inclusive) of word w of a slab's slot bitmaps. */
static inline uint64_t word_range(uint32_t w, uint32_t first, uint32_t last)
{
	uint32_t lo = MAX(first, w << 6), hi = MIN(last, (w << 6) + 63);
	if (lo > hi) return 0;
	return (~(uint64_t)0 >> (63 - (hi & 63))) & (~(uint64_t)0 << (lo & 63));
}

/* Pages a slab holds at most: 4 slots of 128 KiB in 4 KiB pages (fewer of bigger pages;
 * sizeclass.c). */
#define SLAB_PAGES_MAX 128u

/* Give back [from, from + len) of slab pos, which only free slots overlap;
 * the slots with bytes there used since they last went back (slots) are checked first.
 * False when the kernel keeps the pages (locked memory). */
static bool return_run(struct slab_class *k, uint32_t pos, const struct slab *s, size_t from, size_t len,
		       const uint64_t *slots)
{
	/* Checked first: the pages must hold only what the frees left. */
	for (uint32_t w = 0; w < k->nwords; w++)
		for (uint64_t m = slots[w]; m; m &= m - 1) {
			uint32_t i = (w << 6) + (uint32_t)__builtin_ctzll(m);
			check_still_wiped(k, s, slot_start(k, pos, i), i);
		}
	size_t off;
	struct guard_region *area = area_of(k, pos, &off);
	return guard_drop(area, off + from, len);
}

/* After the runs went back: a slot whose canary (its last word) went back reads as zero
 * to its end now, and is marked so. Asked of the kernel (mincore), which says which pages
 * it really dropped: an emulator may accept the advice and drop nothing (qemu-user), and
 * a slot marked returned with its canary still there would be taken for one written
 * after free. (Reading the word back would tell too, but would map the shared zero page
 * there, which mincore then takes for a resident page.) */
static void mark_returned(struct slab_class *k, uint32_t pos, struct slab *s, const uint64_t *dropped_pages,
			  const uint64_t *slots)
{
	unsigned char vec[SLAB_PAGES_MAX];
	if (!os_residency((void *)slab_start(k, pos), k->slab_bytes, vec)) return;
	for (uint32_t w = 0; w < k->nwords; w++)
		for (uint64_t m = slots[w]; m; m &= m - 1) {
			uint32_t i = (w << 6) + (uint32_t)__builtin_ctzll(m);
			size_t last = ((size_t)(i + 1) * k->size - 8) >> k->page_shift; /* its last word's page */
			if (!(dropped_pages[last >> 6] >> (last & 63) & 1) || (vec[last] & 1)) continue;
			s->bits[w].fresh |= (uint64_t)1 << (i & 63);
			s->returned |= (uint64_t)1 << (last & 63);
		}
}

/* Give back the whole pages of slab pos that only free slots overlap and that a slot used
 * since its last return, a run of such pages per system call; how many went. */
static size_t return_slab(struct slab_class *k, uint32_t pos, struct slab *s)
{
	size_t npages = k->slab_bytes / os_page, returned = 0, run = 0;
	invariant(npages <= SLAB_PAGES_MAX);
	uint64_t dropped_pages[SLAB_PAGES_MAX / 64] = {0};
	uint64_t run_slots[SLAB_WORDS] = {0}, dropped_slots[SLAB_WORDS] = {0};
	/* With partitions, a free slot owned by one is used in the bits, free here: it left
	 * the quarantine (page_return.h). */
	uint64_t owned[SLAB_WORDS] = {0};
	if (k->parted)
		memcpy(owned, owner_map(k, s, pos), k->nwords * sizeof *owned);
	for (size_t pg = 0; pg <= npages; pg++) {
		bool take = false;
		uint64_t over[SLAB_WORDS] = {0};
		if (pg < npages) {
			uint32_t first = (uint32_t)(pg * os_page / k->size);
			uint32_t last = (uint32_t)MIN(((pg + 1) * os_page - 1) / k->size, (size_t)k->slots - 1);
			uint64_t used = 0, touched = 0;
			for (uint32_t w = first >> 6; w <= last >> 6 && first < k->slots; w++) {
				over[w] = word_range(w, first, last);
				used |= over[w] & s->bits[w].used & ~owned[w];
				touched |= over[w] & ~s->bits[w].fresh;
			}
			/* Every slot on it free, and one of them used since it last went back. */
			take = !used && touched;
		}
		if (take) {
			run++;
			for (uint32_t w = 0; w < k->nwords; w++) run_slots[w] |= over[w] & ~s->bits[w].fresh;
			continue;
		}
		if (run && return_run(k, pos, s, (pg - run) * os_page, run * os_page, run_slots)) {
			returned += run;
			for (size_t p = pg - run; p < pg; p++) dropped_pages[p >> 6] |= (uint64_t)1 << (p & 63);
			for (uint32_t w = 0; w < k->nwords; w++) dropped_slots[w] |= run_slots[w];
		}
		run = 0;
		memset(run_slots, 0, sizeof run_slots);
	}
	if (!returned) return 0;
	mark_returned(k, pos, s, dropped_pages, dropped_slots);
	stat_add(STAT_SLAB_PAGES_RETURNED, (long)returned);
	return returned;
}

/* A slab freed into since the last sweep ages; one that aged gives its pages back (how
 * many went). */
static size_t sweep_slab(struct slab_class *k, uint32_t pos, bool force)
{
	struct slab *s = desc(k, pos);
	invariant(s->pages != PAGES_KEPT && (s->state == SLAB_ACTIVE || s->state == SLAB_EMPTY));
	if (s->pages == PAGES_FREED && !force) {
		s->pages = PAGES_AGED;
		return 0;
	}
	size_t returned = return_slab(k, pos, s);
	s->pages = PAGES_KEPT;
	set_remove(k, SET_DIRTY, pos);
	return returned;
}

size_t slab_return_pages(struct slab_class *k, uint64_t now, bool force)
{
	if (!k->nset[SET_DIRTY]) return 0;
	/* 32 bits of milliseconds wrap every 49 days: compared as a signed difference. */
	if (!force && (int32_t)((uint32_t)now - k->return_at) < 0) return 0;
	k->return_at = (uint32_t)(now + roots.opt.slab_return_ms);
	/* A class that handed out nothing for a period (sweeps are at least one apart) is
	 * draining, not churning: no allocation is coming to take its free slots, so the
	 * wait would only keep them resident, each free into a slab starting it again. 32
	 * bits: equal again only after 2^32 allocations in between. */
	uint32_t allocs = (uint32_t)tally_of(k)->allocs;
	bool draining = allocs == k->return_allocs;
	k->return_allocs = allocs;
	size_t returned = 0;
	for (uint32_t p = set_next(k, SET_DIRTY, 0); p != UINT32_MAX; p = set_next(k, SET_DIRTY, p + 1))
		returned += sweep_slab(k, p, force || draining);
	return returned;
}
