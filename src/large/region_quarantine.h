/*
 * region_quarantine.h — holds freed regions out of reach for an unpredictable number of
 * frees: a random-swap array in front of a FIFO ring.
 *
 * An item entering lands in a random slot of the array; whatever sat there moves to
 * the tail of the FIFO; the FIFO's head leaves once the ring is over its count or the
 * quarantine is over its byte bound. So an item stays at least through the frees
 * that fill the ring behind it, and how long beyond that is random.
 *
 * Invariants:
 *  - count = items in the array + items in the ring; bytes = the sum of their sizes.
 *  - After region_quarantine_evict() has returned false: ring count <= fifo_cap and
 *    (bytes <= bytes_max or the quarantine is empty).
 *  - key 0 marks an empty array slot; items never have key 0.
 *  - Not locked: the owner's lock covers it.
 */
#ifndef RAMPART_REGION_QUARANTINE_H
#define RAMPART_REGION_QUARANTINE_H

#include "base/common.h"
#include "os/random.h"

struct region_quarantine_item {
	uintptr_t key;
	size_t bytes;
};

struct region_quarantine {
	struct region_quarantine_item *slots; /* random_cap entries */
	struct region_quarantine_item *ring;  /* fifo_cap + 1 entries */
	size_t random_cap, fifo_cap;
	size_t head, ring_count;
	size_t count, bytes, bytes_max;
};

/* slots: random_cap items; ring: fifo_cap + 1 items; both zeroed. random_cap >= 1. */
void region_quarantine_init(struct region_quarantine *q, struct region_quarantine_item *slots, size_t random_cap,
		     struct region_quarantine_item *ring, size_t fifo_cap, size_t bytes_max);
void region_quarantine_push(struct region_quarantine *q, struct region_quarantine_item it, struct random_state *rnd);
/* Take out one item that must leave now; false when none must. */
must_check bool region_quarantine_evict(struct region_quarantine *q, struct region_quarantine_item *out, struct random_state *rnd);
/* Take out any item (oldest first); false when empty. For tearing down. */
must_check bool region_quarantine_drain(struct region_quarantine *q, struct region_quarantine_item *out);

#endif
