/*
 * slab_life.h — a slab's life (slab_life.c): taken fresh, active on the partial list,
 * empty within a budget that follows use, closed. Every function here runs with the
 * class lock held.
 *
 * Invariants:
 *  - An ACTIVE slab is on the partial list exactly when it has a free slot; a slab of
 *    any other state is on no list (its links are 0).
 *  - nused counts the slab's slots that are not free: 1..slots while it is ACTIVE.
 *  - slab_life.c calls down into slab_setup.c and page_return.c alone of the slab's files.
 */
#ifndef RAMPART_SLAB_LIFE_H
#define RAMPART_SLAB_LIFE_H

#include "slab/slab_class.h"
#include "slab/page_return.h"

/* A slab with a free slot, put at the head of the partial list; false on OOM. */
bool slab_new(struct slab_class *k);
/* Put a slab at the head of the partial list, or take it off (it is full). */
void slab_partial_push(struct slab_class *k, uint32_t pos, struct slab *s);
void slab_partial_remove(struct slab_class *k, struct slab *s);
/* The last slot of a slab went back: keep it open within the budget, or close a slab. */
void slab_emptied(struct slab_class *k, uint32_t pos, struct slab *s);
/* A slot goes back to its slab for good (it left the quarantine, or there is none).
 * Inline: every quarantine release runs it, and its common case touches the slab alone. */
static inline void slab_release_slot(struct slab_class *k, struct slab *s, uint32_t pos, uint32_t i)
{
	uint64_t bit = (uint64_t)1 << (i & 63);
	invariant(i < k->slots && s->state == SLAB_ACTIVE && s->nused && (s->bits[i >> 6].used & bit));
	bits_write(&s->bits[i >> 6].used, s->bits[i >> 6].used & ~bit);
	bits_write(&s->bits[i >> 6].quar, s->bits[i >> 6].quar & ~bit);
	slab_pages_freed(s);
	bool was_full = s->nused == k->slots;
	s->nused--;
	if (!s->nused) {
		if (!was_full) slab_partial_remove(k, s);
		slab_emptied(k, pos, s);
	} else if (was_full) {
		slab_partial_push(k, pos, s);
	}
}
/* Close the highest empty slab; false when the kernel cannot now. */
bool slab_close_highest_empty(struct slab_class *k);

#endif
