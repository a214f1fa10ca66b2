/*
 * quarantine.h — holds freed regions out of reach for an unpredictable number of
 * frees: a random-swap array in front of a FIFO ring.
 *
 * An item entering lands in a random slot of the array; whatever sat there moves to
 * the tail of the FIFO; the FIFO's head leaves once the ring is over its count or the
 * quarantine is over its byte bound. So an item stays at least through the frees
 * that fill the ring behind it, and how long beyond that is random.
 *
 * Invariants:
 *  - count = items in the array + items in the ring; bytes = the sum of their sizes.
 *  - After quarantine_evict() has returned false: ring count <= fifo_cap and
 *    (bytes <= bytes_max or the quarantine is empty).
 *  - key 0 marks an empty array slot; items never have key 0.
 *  - Not locked: the owner's lock covers it.
 */
#ifndef RAMPART_QUARANTINE_H
#define RAMPART_QUARANTINE_H

#include "base/common.h"
#include "os/random.h"

struct quarantine_item {
	uintptr_t key;
	size_t bytes;
};

struct quarantine {
	struct quarantine_item *slots; /* random_cap entries */
	struct quarantine_item *ring;  /* fifo_cap + 1 entries */
	size_t random_cap, fifo_cap;
	size_t head, ring_count;
	size_t count, bytes, bytes_max;
};

/* slots: random_cap items; ring: fifo_cap + 1 items; both zeroed. random_cap >= 1. */
void quarantine_init(struct quarantine *q, struct quarantine_item *slots, size_t random_cap,
		     struct quarantine_item *ring, size_t fifo_cap, size_t bytes_max);
void quarantine_push(struct quarantine *q, struct quarantine_item it, struct random_state *rnd);
/* Take out one item that must leave now; false when none must. */
must_check bool quarantine_evict(struct quarantine *q, struct quarantine_item *out, struct random_state *rnd);
/* Take out any item (oldest first); false when empty. For tearing down. */
must_check bool quarantine_drain(struct quarantine *q, struct quarantine_item *out);

#endif
