/*
 * slab_setup.h — the slab window at start-up, a class's set-up at its first slab, the
 * spill regions a full class takes, and opening arenas (slab_setup.c).
 *
 * Invariants:
 *  - A class's geometry is written once, by slab_class_setup under its lock, before its
 *    bit in slab_set_up_classes is set; it calls nothing of the slab above it.
 *  - slab_arena_lock serialises opening arenas and is taken before any class lock (the
 *    fork handlers take it so, slab_fork.c).
 */
#ifndef RAMPART_SLAB_SETUP_H
#define RAMPART_SLAB_SETUP_H

#include "slab/slab_class.h"

extern struct lock slab_arena_lock;

/* Open arena a (numbered from 0) for the first thread sent there. */
void slab_arena_open(unsigned a);
/* Set up class k (its lock held) at its first slab. */
void slab_class_setup(struct slab_class *k);
/* Its home region full, class k (lock held) takes one more spill region for good: its
 * positions from max_pos on. False when every spill region is taken, or the class has
 * all the positions it can number (MAX_POSITIONS, or fewer for slabs of many pages:
 * positions_cap). */
bool slab_spill_add(struct slab_class *k);
/* Where class k's slot quarantine ring goes (its full random array after it), mapped
 * for k at its one call; NULL when it cannot be (no memory). Class lock held. */
qentry_t *slab_class_cold(struct slab_class *k);

#endif
