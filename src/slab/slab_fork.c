/*
 * slab_fork.c — the slab allocator's fork handlers (slab.h): every lock of the slab is
 * taken before fork, in the order the rest of the slab nests them, and given back after
 * it in the parent; the child resets them, and the batches of the threads that did not
 * come along enter their quarantines.
 *
 * Invariants:
 *  - The order: the batch pool lock, slab_arena_lock, the class locks of open arenas by
 *    region number, the seeds' lock (a leaf); given back in reverse.
 */
#include "slab/batched_free.h"
#include "slab/slab_setup.h"

/* Only open arenas have locks anyone can hold (slab_arena_lock keeps one from opening
 * meanwhile), so only theirs are taken, and unopened arenas stay untouched. */
void slab_fork_prepare(void)
{
#if SLAB_FREE_BATCHES
	slab_batch_fork_prepare();
#endif
	lock_take(&slab_arena_lock);
	unsigned n = roots.slab.arenas * SC_COUNT;
	for (unsigned r = 0; r < n; r++)
		if (arena_is_open(r / SC_COUNT)) class_lock(&roots.slab.classes[r]);
	lock_take(&roots.slab.seeds->lock); /* a leaf: taken inside class locks */
}

void slab_fork_parent(void)
{
	lock_give(&roots.slab.seeds->lock);
	unsigned n = roots.slab.arenas * SC_COUNT;
	for (unsigned r = n; r-- > 0;)
		if (arena_is_open(r / SC_COUNT)) class_unlock(&roots.slab.classes[r]);
	lock_give(&slab_arena_lock);
#if SLAB_FREE_BATCHES
	slab_batch_fork_parent();
#endif
}

void slab_fork_child(void)
{
	unsigned n = roots.slab.arenas * SC_COUNT;
	for (unsigned r = 0; r < n; r++) {
		if (!arena_is_open(r / SC_COUNT)) continue;
		lock_reset(&roots.slab.classes[r].lock);
	}
	lock_reset(&roots.slab.seeds->lock);
	lock_reset(&slab_arena_lock);
#if SLAB_FREE_BATCHES
	slab_batch_fork_child();
#endif
}
