/*
 * slot_quarantine.c — freed slots held back before their slab gets them again: a random
 * array in front of a FIFO ring per (arena, class), with entries of 64 bits (qentry),
 * and the deferred list of frees from other arenas' threads. The region quarantine of
 * large blocks (large/region_quarantine.c) follows the same policy over items with sizes.
 *
 * A slot in the quarantine, in the deferred list or held for the next allocation
 * (k->released) is used and quarantined in its slab's bits: not live, so a free of it,
 * a realloc or a size question is fatal, and the neighbour checks expect it wiped
 * (slot_quarantine.h's invariants).
 */
#include "slab/slot_quarantine.h"

#include <string.h>

#include "slab/slab_life.h"
#include "slab/slab_setup.h"

static inline __attribute__((always_inline)) void release_entry(struct slab_class *k, qentry_t e)
{
	uint32_t pos = qentry_pos(e);
	slab_release_slot(k, desc(k, pos), pos, qentry_slot(e));
}

/* The ring's mask: 2^SLOT_Q_FIFO_SHIFT times the random array's entries (twice). */
static inline uint32_t ring_mask(const struct slab_class *k)
{
	return k->qmask << SLOT_Q_FIFO_SHIFT | ((1u << SLOT_Q_FIFO_SHIFT) - 1);
}

/* The oldest entry leaves the quarantine: held for the class's next allocation, or back
 * to its slab when one is held already. */
static inline __attribute__((always_inline)) void leave(struct slab_class *k, qentry_t old)
{
	/* In churn the next allocation mostly took this very slot anyway: its slab had no
	 * other free one (in small churn most allocations fill their slab). Held here, it
	 * goes to that allocation without the slab going back onto the partial list and off
	 * it again, and without a slot draw. The rest of the time the next allocation used
	 * to draw among its slab's free slots; now it gets this one: reuse order is the
	 * quarantine's alone (docs/slab.md, "How long a freed slot waits"). */
	if (!k->released) k->released = old;
	else release_entry(k, old);
}

/* No cold part to be had: the quarantine goes on in the hot entries alone, a random
 * array of a quarter of them (at least 2) and a FIFO of half, full; the oldest quarter
 * leaves now, having waited at least that FIFO's length. */
static void shrink_into_hot(struct slab_class *k)
{
	qentry_t *hot = k->qrand;
	uint32_t n = k->qfill, r = n / (1 + (1u << SLOT_Q_FIFO_SHIFT)), f;
	r = (uint32_t)1 << (31 - __builtin_clz(r));
	f = r << SLOT_Q_FIFO_SHIFT;
	uint32_t gone = n - r - f;
	invariant(r >= 2 && gone >= r);
	for (uint32_t i = 0; i < gone; i++) leave(k, hot[i]);
	memcpy(hot, hot + gone + f, r * sizeof *hot); /* the newest, drawn among at random */
	memmove(hot + r, hot + gone, f * sizeof *hot); /* the rest, oldest first */
	k->qring = hot + r;
	k->qhead = 0;
	k->qcount = f;
	k->qmask = r - 1;
	k->qfill = r;
}

/* The random array's first qhot entries, filled in order, move to its full length
 * beside the ring: a class that takes this many frees churns, and the pages of its full
 * arrays are the price of the wait (docs/slab.md, "How long a freed slot waits"). True
 * when the array goes on filling, false when there was no memory for it and it is full. */
static noinline bool grow_random_array(struct slab_class *k)
{
	k->qhot = UINT32_MAX;
	qentry_t *ring = slab_class_cold(k);
	if (unlikely(!ring)) {
		shrink_into_hot(k);
		return false;
	}
	qentry_t *full = ring + ring_mask(k) + 1;
	memcpy(full, k->qrand, (size_t)k->qfill * sizeof *full);
	k->qring = ring;
	k->qrand = full;
	return true;
}

/* The entry that leaves at the next free, and that the allocation after it takes (in
 * churn, k->released): its slot and descriptor are brought into the cache now, a whole
 * free and allocation ahead. A slot comes back thousands of frees after it left the
 * caches, and the allocation's write-after-free scan of it was the slowest load of the
 * small-block churn (bench/journal/2026-11-27-issue36-prefetch.md). */
static inline __attribute__((always_inline)) void prefetch_next_to_leave(const struct slab_class *k, qentry_t e)
{
	uint32_t pos = qentry_pos(e);
	const char *slot = (const char *)slot_start(k, pos, qentry_slot(e));
	const char *d = (const char *)desc(k, pos);
	/* Its first lines: the scan reads from the start, and the hardware prefetcher
	 * takes over after a few lines in a row. */
	for (uint32_t off = 0; off < k->size && off < 256; off += 64) __builtin_prefetch(slot + off, 1);
	__builtin_prefetch(d);
	__builtin_prefetch(d + 64);
}

/* A quarantine belongs to the process that filled it. In a child after fork it starts
 * again, empty and filled in order, as in a new process; the parent's entries are
 * dropped: those slots stay marked quarantined, never handed out in the child. Carried
 * on, the parent's full arrays took every free of a short-lived child to a random page
 * of them, each a copy of its own; filled in order, a child's frees write a page every
 * 512 entries. A slot freed in the child waits as long as in a new process; one freed
 * before the fork, for good (docs/slab.md, "How long a freed slot waits"). */
static noinline cold void start_after_fork(struct slab_class *k)
{
	k->qfill = k->qcount = k->qhead = 0;
	k->rnd->owner_generation = random_generation_current();
}

/* A freed slot enters a random array slot; what sat there joins the FIFO, whose
 * oldest entry leaves once the FIFO is full: it is held for the class's next
 * allocation (k->released), or goes back to its slab when one is held already. Until
 * the random array is full it is filled in order: nothing leaves it before then (drawn
 * at random, an early entry could be pushed out by the next free), and a short-lived
 * process writes the first page of each class's array, not a page wherever a draw
 * lands (each a page fault of its own); the array's first entries sit in the arena's
 * hot block, beside the other classes' (grow_random_array). */
static inline __attribute__((always_inline)) void put_entry(struct slab_class *k, qentry_t e)
{
	if (unlikely(k->rnd->owner_generation != __atomic_load_n(&random_generation, __ATOMIC_RELAXED)))
		start_after_fork(k);
	if (unlikely(k->qfill <= k->qmask) && (likely(k->qfill != k->qhot) || grow_random_array(k))) {
		k->qrand[k->qfill++] = e;
		return;
	}
	uint32_t j = rand16(k) & k->qmask;
	qentry_t out = k->qrand[j];
	k->qrand[j] = e;
	if (!out) return;
	uint32_t fmask = ring_mask(k);
	if (k->qcount > fmask) {
		qentry_t old = k->qring[k->qhead];
		k->qhead = (k->qhead + 1) & fmask;
		k->qcount--;
		leave(k, old);
		prefetch_next_to_leave(k, k->qring[k->qhead]);
	}
	invariant(k->qcount <= fmask);
	k->qring[(k->qhead + k->qcount) & fmask] = out;
	k->qcount++;
}

void slot_quarantine_put(struct slab_class *k, uint32_t pos, uint32_t i) { put_entry(k, qentry(pos, i)); }

void slot_quarantine_put_entry(struct slab_class *k, qentry_t e) { put_entry(k, e); }

void slot_quarantine_let_go(struct slab_class *k)
{
	if (!k->released) return;
	release_entry(k, k->released);
	k->released = 0;
}

/* The deferred slots enter the quarantine, in the order they were freed. */
noinline void slot_quarantine_drain(struct slab_class *k)
{
	for (uint32_t n = 0; n < k->ndeferred; n++)
		put_entry(k, k->deferred[n]);
	k->ndeferred = 0;
}
