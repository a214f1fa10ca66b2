/*
 * slab_life.h — a slab's life (slab_life.c): taken fresh, active (slots drawn from the
 * current slab, then from the lowest partial one), empty within a budget that follows
 * use, closed. Every function here runs with the class lock held.
 *
 * Invariants:
 *  - An ACTIVE slab with a free slot is the current one (k->current) or in the partial
 *    set; a full one is in no set and not current. A slab of any other state is neither.
 *  - The current slab was the lowest with a free slot when it became current (a slab
 *    below it may have got a slot back since).
 *  - nused counts the slab's slots that are not free: 1..slots while it is ACTIVE (0 for
 *    the current slab just taken, before its first slot is drawn).
 *  - slab_life.c calls down into slab_setup.c, slab_sets.c and page_return.c alone of
 *    the slab's files.
 */
#ifndef RAMPART_SLAB_LIFE_H
#define RAMPART_SLAB_LIFE_H

#include "slab/slab_class.h"
#include "slab/page_return.h"
#include "slab/slab_sets.h"

/* A slab to draw slots from (current) where none of the class's active slabs has a free
 * slot: an empty, a closed or a fresh one; false on OOM. */
bool slab_new(struct slab_class *k);
/* No current slab (it filled, or none was taken yet): the lowest partial slab becomes
 * current, else a new one (slab_new); false on OOM. The lowest: allocations fill the
 * low slabs first, so that the high ones, which only frees reach then, drain and
 * close. A few loads (slab_sets.h); the slot is still drawn at random within it.
 * Inline: in churn the current slab fills at nearly every allocation (a slot or two
 * come back to a slab at a time), and as a call the register saves cost as much as
 * the search. */
static inline bool slab_refill(struct slab_class *k)
{
	invariant(!k->current);
	if (unlikely(!k->nset[SET_PARTIAL])) return slab_new(k);
	k->current = set_take_lowest(k, SET_PARTIAL) + 1;
	return true;
}
/* The last slot of slab pos went back: out of its set (or no longer current), then kept
 * open within the budget, or a slab closed. */
void slab_lost_last_slot(struct slab_class *k, uint32_t pos, struct slab *s, bool was_full);
/* The lowest slab with a free slot becomes the current one, if it lies below it (the
 * current one joins the partial set then). Slots are drawn from the current slab until
 * it is full, so a slab below it that gets a slot back waits till then: making it
 * current at every such free would cost churn a search of the set at nearly every
 * allocation. */
void slab_lower_current(struct slab_class *k);
/* A slot goes back to its slab for good (it left the quarantine, or there is none).
 * Inline: every quarantine release runs it, and its common case touches the slab alone. */
static inline void slab_release_slot(struct slab_class *k, struct slab *s, uint32_t pos, uint32_t i)
{
	uint64_t bit = (uint64_t)1 << (i & 63);
	invariant(i < k->slots && s->state == SLAB_ACTIVE && s->nused && (s->bits[i >> 6].used & bit));
	bits_write(&s->bits[i >> 6].used, s->bits[i >> 6].used & ~bit);
	bits_write(&s->bits[i >> 6].quar, s->bits[i >> 6].quar & ~bit);
	slab_pages_freed(k, pos, s);
	bool was_full = s->nused == k->slots;
	s->nused--;
	if (!s->nused) slab_lost_last_slot(k, pos, s, was_full);
	else if (was_full) set_add(k, SET_PARTIAL, pos); /* a full slab is never current */
}
/* Close the highest empty slab; false when the kernel cannot now. */
bool slab_close_highest_empty(struct slab_class *k);

#endif
