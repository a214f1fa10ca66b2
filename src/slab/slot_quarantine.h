/*
 * slot_quarantine.h — freed slots held back before their slab gets them again
 * (slot_quarantine.c). Every function here runs with the class lock held.
 *
 * Invariants:
 *  - A slot in the quarantine's arrays, in the deferred list or held for the next
 *    allocation (k->released) is used and quarantined in its slab's bits.
 *  - The random array holds at most qmask + 1 entries, the FIFO ring at most
 *    2^SLOT_Q_FIFO_SHIFT times as many (ring_mask), the deferred list at most DEFERRED_MAX.
 *  - Until the random array has been filled qhot entries (in order) it is its first
 *    entries in the arena's hot block; from then on it is its full length after the
 *    ring in the class's cold part or, when that could not be mapped, a quarter
 *    of the hot entries with the ring in the next half; never moved again.
 *  - A slot leaves the quarantine for its slab through slab_release_slot (slab_life.h),
 *    the one call the quarantine makes into the rest of the slab.
 */
#ifndef RAMPART_SLOT_QUARANTINE_H
#define RAMPART_SLOT_QUARANTINE_H

#include "slab/slab_class.h"

/* Does class k hold freed slots back (slot_quarantine_bytes > 0)? Without a quarantine
 * a freed slot goes straight back to its slab, and nothing below is called. */
static inline bool slot_quarantine_on(const struct slab_class *k) { return k->qmask != 0; }

/* Slot i of the slab at pos, freed (wiped, marked quarantined), enters the quarantine;
 * an older one may leave it for its slab. */
void slot_quarantine_put(struct slab_class *k, uint32_t pos, uint32_t i);
/* The same for a slot named by its entry (qentry): a batched or deferred slot enters as
 * it is, not decoded and built again. Two functions rather than one of either kind:
 * slab_free has the position and the index at hand, a batched or deferred slot has
 * its entry, and either conversion costs every such free a few instructions
 * (bench/journal/2026-11-27-positions.md). */
void slot_quarantine_put_entry(struct slab_class *k, qentry_t e);
/* The slots freed by other arenas' threads enter the quarantine, in the order they were
 * freed. */
void slot_quarantine_drain(struct slab_class *k);
/* The slot that last left the quarantine (k->released) goes back to its slab (trim). */
void slot_quarantine_let_go(struct slab_class *k);
/* The slot that last left the quarantine, taken for an allocation: false when there is
 * none. It was handed out before and is still used in its slab; only its quarantine
 * bit goes. */
static inline bool slot_quarantine_take_released(struct slab_class *k, uint32_t *pos, uint32_t *i)
{
	qentry_t e = k->released;
	if (!e) return false;
	k->released = 0;
	*pos = qentry_pos(e);
	*i = qentry_slot(e);
	uint64_t *quar = &desc(k, *pos)->bits[*i >> 6].quar;
	invariant(*quar & (uint64_t)1 << (*i & 63));
	bits_write(quar, *quar & ~((uint64_t)1 << (*i & 63)));
	return true;
}
/* The same for an allocation of partition p (parted classes): the held slot is p's, or
 * it waits for an allocation of its own partition (still quarantined in its slab's bits;
 * the slots that leave the quarantine meanwhile go to their slabs, since one is held),
 * or for malloc_trim or its own partition's allocation in a fragmented class to put it
 * in its slab as its partition's (slot_quarantine_let_go). */
static inline bool slot_quarantine_take_released_by(struct slab_class *k, unsigned p, uint32_t *pos, uint32_t *i)
{
	qentry_t e = k->released;
	if (!e) return false;
	uint32_t at = qentry_pos(e);
	if (owners_of(k, desc(k, at), at)[qentry_slot(e)] != p) return false;
	return slot_quarantine_take_released(k, pos, i);
}
/* A free from a thread of another arena: the slot is already wiped and marked
 * quarantined (a second free of it is caught at once, as in one thread), but it enters
 * the quarantine later, when a thread of the class's own arena allocates from it, or when
 * DEFERRED_MAX more wait. The quarantine's lines (its arrays, the generator, the
 * descriptors of the slot that leaves it and of its slab's neighbours on the partial
 * list) then stay with the threads that use the class instead of moving to every core
 * that frees into it: that is faster where threads free each other's blocks, and costs
 * nothing where every free is another arena's. A slot waits in the quarantine itself
 * as long as ever once it enters it. */
static inline void slot_quarantine_defer(struct slab_class *k, qentry_t e)
{
	if (k->ndeferred == DEFERRED_MAX) slot_quarantine_drain(k);
	invariant(k->ndeferred < DEFERRED_MAX);
	k->deferred[k->ndeferred++] = e;
}

#endif
