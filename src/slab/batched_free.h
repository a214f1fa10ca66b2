/*
 * batched_free.h — frees a thread makes into other arenas' classes, without the class
 * lock, kept per thread and class until a batch enters the slot quarantine under one
 * acquisition of the lock (batched_free.c).
 *
 * Invariants:
 *  - Built only with the slot quarantine and canaries (SLAB_FREE_BATCHES): a slot's place
 *    in a batch is marked in its own canary word (batched_canary, slab_class.h).
 *  - A batch enters its class's quarantine with the class lock held and no other; the
 *    pool lock is taken with no class lock held.
 *  - Batching is never needed for a free to succeed: whatever it declines, the locked
 *    path judges.
 */
#ifndef RAMPART_BATCHED_FREE_H
#define RAMPART_BATCHED_FREE_H

#include "slab/slab_class.h"

#if SLAB_FREE_BATCHES
/* A free of p (the program's pointer), in class k (k's arena is not the calling thread's), by way of the
 * thread's batch: true when done; false, having changed nothing, for the class lock's
 * path to judge (a slot allocated otherwise than kind says among what it declines).
 * No lock may be held. */
bool slab_batch_free(struct slab_class *k, uintptr_t p, const struct area_span *sp, const struct sized_claim *claim,
		     enum alloc_kind kind);
/* Every batch of the calling thread enters its quarantine (malloc_trim). */
void slab_batch_flush_mine(void);
/* Fork handlers, called from slab_fork.c's: the pool lock is taken first and given back
 * last; in the child the batches of every other thread enter their quarantines (those
 * threads do not exist there). */
void slab_batch_fork_prepare(void);
void slab_batch_fork_parent(void);
void slab_batch_fork_child(void);
/* Where the pool state lives (in metadata, on the seed source's page). */
struct batch_pool;
struct batch_pool *slab_batch_pool(void);
#endif

#endif
