/*
 * class_tally.h — what a size class has handed out (the statistics' allocated count,
 * docs/statistics.md; its freed count is that less its live slots, which the report
 * counts from the slots' bits) and its share of the process's live total, of which the
 * peak is kept. A part of the slab allocator (the list in slab_class.h).
 *
 * Invariants:
 *  - A class's tally is written under its lock, at each allocation and at each free the
 *    program makes (a batched free: when its batch enters the quarantine), in a line of
 *    its own after the class's generator (slab_setup.c): no atomic operation, nothing
 *    another arena's thread writes.
 *  - The process-wide total (base/counters.h: heap_blocks_now, heap_bytes_now, and the
 *    peak of each) hears of a class's change once it reaches a step either way: level -
 *    step is what the class has not told it, always less than step in size (level stays
 *    between 0 and 2 * step, told at either end). So the total, and a peak taken of it,
 *    is within a step of every class in use of the truth, at the cost of a comparison
 *    on the fast path; a step is TALLY_STEP_BYTES of slots, and at least TALLY_MIN_STEP
 *    slots (the largest classes).
 */
#ifndef RAMPART_CLASS_TALLY_H
#define RAMPART_CLASS_TALLY_H

#include "slab/slab_class.h"

struct class_tally {
	uint64_t allocs;
	/* step + the live slots the process-wide total does not know of yet: a free ends
	 * at 0 and an allocation at top (2 * step) with one comparison each. */
	uint64_t level, top;
	uint64_t step;
};

/* The bytes of slots a class lets drift before it tells the total: the larger, the
 * rarer the atomic addition; the smaller, the closer the peak. A class of slots of up
 * to 16 KiB tells it once per 64 KiB of slots allocated or freed on balance. */
#define TALLY_STEP_BYTES ((size_t)64 << 10)
#define TALLY_MIN_STEP 4u

/* In the arena's block, the class's tally follows its generator (GENERATOR_BYTES). */
static inline struct class_tally *tally_of(const struct slab_class *k) { return (struct class_tally *)(k->rnd + 1); }

/* The class's drift goes to the process-wide total (lock held). */
void tally_publish(struct slab_class *k);

/* A slot handed out, and one freed by the program (lock held). The frees are not
 * counted: a class's freed slots are its allocations less its live ones. */
static inline void tally_alloc(struct slab_class *k)
{
	struct class_tally *t = tally_of(k);
	t->allocs++;
	if (unlikely(++t->level == t->top)) tally_publish(k);
}

static inline void tally_free(struct slab_class *k)
{
	if (unlikely(--tally_of(k)->level == 0)) tally_publish(k);
}

#endif
