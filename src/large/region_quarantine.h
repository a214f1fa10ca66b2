/*
 * region_quarantine.h — holds freed regions out of reach for an unpredictable number of
 * frees, and at least min_stay of them: a FIFO ring in front of a random-swap array.
 *
 * An item entering goes to the tail of the ring; once the ring is over its count its
 * head moves to a random slot of the array, and whatever sat there leaves. So an item
 * stays through the fifo_cap pushes behind it, and how long beyond that is random
 * (geometric, with mean random_cap). Because the ring keeps push order and only items
 * that passed through it reach the array, every item in the array is older than every
 * item in the ring.
 *
 * Over the byte bound (or count_max), an item leaves early, chosen at random among those
 * that have stayed at least min_stay pushes: the array's first, then the ring's oldest
 * part. Only when none has stayed that long does a younger one leave — the ring's oldest
 * — and evict says so (*early): its address must not be reused. So with bytes_max at
 * least min_stay times the largest item, no item leaves before min_stay pushes after
 * its own.
 *
 * Invariants:
 *  - count = items in the array + items in the ring; bytes = the sum of their sizes.
 *  - The ring's items are in push order (seq ascending from head).
 *  - After region_quarantine_evict() has returned false: ring count <= fifo_cap and
 *    (bytes <= bytes_max and count <= count_max, or the quarantine is empty).
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
	uint64_t seq; /* set by push: the pushes counted when it came in */
};

struct region_quarantine {
	struct region_quarantine_item *ring;  /* fifo_cap + 1 entries */
	struct region_quarantine_item *slots; /* random_cap entries */
	size_t random_cap, fifo_cap, min_stay;
	size_t head, ring_count;
	size_t count, bytes, bytes_max;
	size_t count_max; /* the owner may lower it (a VMA budget); SIZE_MAX after init */
	uint64_t pushes;
};

/* slots: random_cap items; ring: fifo_cap + 1 items; both zeroed. random_cap >= 1. */
void region_quarantine_init(struct region_quarantine *q, struct region_quarantine_item *slots, size_t random_cap,
			    struct region_quarantine_item *ring, size_t fifo_cap, size_t bytes_max, size_t min_stay);
void region_quarantine_push(struct region_quarantine *q, struct region_quarantine_item it);
/* Take out one item that must leave now; false when none must. *early: it leaves fewer
 * than min_stay pushes after its own (the bounds left no older one to take). */
must_check bool region_quarantine_evict(struct region_quarantine *q, struct region_quarantine_item *out,
					struct random_state *rnd, bool *early);
/* Take out the oldest item; false when empty. For giving address space back. */
must_check bool region_quarantine_drain(struct region_quarantine *q, struct region_quarantine_item *out);

#endif
