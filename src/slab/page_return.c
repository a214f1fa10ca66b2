/*
 * page_return.c — giving back the pages of free slots in open slabs (page_return.h).
 *
 * Why two sweeps: a slab freed into goes from PAGES_FREED to PAGES_AGED at the next sweep
 * of its class and gives its pages back at the one after, so a page goes back between
 * one and two periods after the last free into its slab (as jemalloc's dirty decay and
 * Scudo's release interval do), never on the free itself: churn that takes the slot
 * again soon pays no system call and no page fault.
 *
 * Why only slabs of at most SLAB_EXTENT_SLOTS slots: a returned slot's canary reads as
 * zero, and only those classes have a place (the slot's extent) to say so; their slots
 * are 2 KiB and up, so a free slot holds whole pages or most of one.
 */
#include "slab/page_return.h"

#include <string.h>

#include "base/counters.h"
#include "guard/guard.h"
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

/* Give back the whole pages of slab pos that only free slots overlap and that one of them
 * used since its last return. */
static void return_slab(struct slab_class *k, uint32_t pos, struct slab *s)
{
	size_t off;
	struct guard_region *area = area_of(k, pos, &off);
	uintptr_t base = slab_start(k, pos);
	uint64_t used = s->bits[0].used, fresh = s->bits[0].fresh;
	size_t npages = k->slab_bytes / os_page;
	size_t run = 0, returned = 0;
	uint64_t dropped = 0; /* slots with bytes on a page given back */
	for (size_t pg = 0; pg <= npages; pg++) {
		bool take = false;
		uint64_t over = 0;
		if (pg < npages) {
			size_t lo = pg * os_page, hi = lo + os_page;
			uint32_t first = (uint32_t)(lo / k->size), last = (uint32_t)((hi - 1) / k->size);
			if (last >= k->slots) last = k->slots - 1;
			if (first < k->slots) over = (~(uint64_t)0 >> (63 - last)) & (~(uint64_t)0 << first);
			/* Every slot on it free, and one of them used since it last went back. */
			take = !(over & used) && (over & ~fresh);
		}
		if (take) {
			run++;
			dropped |= over;
			continue;
		}
		if (run) {
			size_t from = (pg - run) * os_page;
			/* Checked first: the pages must hold only what the frees left. */
			for (uint64_t m = dropped & ~fresh; m; m &= m - 1) {
				uint32_t i = (uint32_t)__builtin_ctzll(m);
				check_still_wiped(k, s, slot_start(k, pos, i), i);
			}
			if (guard_drop(area, off + from, run * os_page)) {
				returned += run;
				/* A slot whose canary went back reads as zero to its end now: read
				 * back to be sure (a read maps the shared zero page, no memory), since
				 * an emulator may accept the advice and drop nothing (qemu-user), and
				 * a slot marked returned with its canary still there would be taken
				 * for one written after free. */
				for (uint64_t m = dropped & ~fresh; m; m &= m - 1) {
					uint32_t i = (uint32_t)__builtin_ctzll(m);
					/* Its last word: the canary where slots have one. */
					size_t last = (size_t)(i + 1) * k->size - 8;
					if (last >= from && last < from + run * os_page &&
					    !canary_word(base + last)) {
						s->bits[0].fresh |= (uint64_t)1 << i;
						s->extent[i] = EXTENT_RETURNED;
					}
				}
				fresh = s->bits[0].fresh;
			}
			run = 0;
			dropped = 0;
		}
	}
	if (returned) stat_add(STAT_SLAB_PAGES_RETURNED, (long)returned);
}

/* A slab freed into since the last sweep ages; one that aged gives its pages back. */
static void sweep_slab(struct slab_class *k, uint32_t pos, bool force)
{
	struct slab *s = desc(k, pos);
	if (s->pages == PAGES_FREED && !force) {
		s->pages = PAGES_AGED;
	} else if (s->pages != PAGES_KEPT) {
		return_slab(k, pos, s);
		s->pages = PAGES_KEPT;
	}
}

void slab_return_pages(struct slab_class *k, uint64_t now, bool force)
{
	if (!k->track_extent || !k->open_slabs || !roots.opt.slab_return_ms) return;
	/* 32 bits of milliseconds wrap every 49 days: compared as a signed difference. */
	if (!force && (int32_t)((uint32_t)now - k->return_at) < 0) return;
	k->return_at = (uint32_t)(now + roots.opt.slab_return_ms);
	if (k->current) sweep_slab(k, k->current - 1, force);
	for (uint32_t p = set_next(k, SET_PARTIAL, 0); p != UINT32_MAX; p = set_next(k, SET_PARTIAL, p + 1))
		sweep_slab(k, p, force);
}
