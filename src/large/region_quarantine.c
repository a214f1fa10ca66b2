/* region_quarantine.c — random-swap array + FIFO ring; see region_quarantine.h for the contract. */
#include "large/region_quarantine.h"

void region_quarantine_init(struct region_quarantine *q, struct region_quarantine_item *slots, size_t random_cap,
		     struct region_quarantine_item *ring, size_t fifo_cap, size_t bytes_max)
{
	*q = (struct region_quarantine){.slots = slots, .ring = ring, .random_cap = random_cap,
				 .fifo_cap = fifo_cap, .bytes_max = bytes_max};
}

static void ring_put(struct region_quarantine *q, struct region_quarantine_item it)
{
	q->ring[(q->head + q->ring_count) % (q->fifo_cap + 1)] = it;
	q->ring_count++;
}

static struct region_quarantine_item ring_take(struct region_quarantine *q)
{
	struct region_quarantine_item it = q->ring[q->head];
	q->head = (q->head + 1) % (q->fifo_cap + 1);
	q->ring_count--;
	return it;
}

void region_quarantine_push(struct region_quarantine *q, struct region_quarantine_item it, struct random_state *rnd)
{
	size_t j = random_below(rnd, q->random_cap);
	struct region_quarantine_item out = q->slots[j];
	q->slots[j] = it;
	q->count++;
	q->bytes += it.bytes;
	if (out.key) ring_put(q, out);
}

bool region_quarantine_evict(struct region_quarantine *q, struct region_quarantine_item *out, struct random_state *rnd)
{
	if (q->ring_count > q->fifo_cap || (q->ring_count && q->bytes > q->bytes_max)) {
		*out = ring_take(q);
	} else if (q->bytes > q->bytes_max && q->count) {
		/* Over the byte bound with an empty ring: a random occupied slot leaves. */
		size_t j = random_below(rnd, q->random_cap);
		while (!q->slots[j].key) j = (j + 1) % q->random_cap;
		*out = q->slots[j];
		q->slots[j].key = 0;
	} else {
		return false;
	}
	q->count--;
	q->bytes -= out->bytes;
	return true;
}

bool region_quarantine_drain(struct region_quarantine *q, struct region_quarantine_item *out)
{
	if (q->ring_count) {
		*out = ring_take(q);
	} else {
		size_t j = 0;
		while (j < q->random_cap && !q->slots[j].key) j++;
		if (j == q->random_cap) return false;
		*out = q->slots[j];
		q->slots[j].key = 0;
	}
	q->count--;
	q->bytes -= out->bytes;
	return true;
}
