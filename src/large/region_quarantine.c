/* region_quarantine.c — FIFO ring + random-swap array; see region_quarantine.h for the contract. */
#include "large/region_quarantine.h"

void region_quarantine_init(struct region_quarantine *q, struct region_quarantine_item *slots, size_t random_cap,
			    struct region_quarantine_item *ring, size_t fifo_cap, size_t bytes_max, size_t min_stay)
{
	*q = (struct region_quarantine){.slots = slots, .ring = ring, .random_cap = random_cap, .fifo_cap = fifo_cap,
					.min_stay = min_stay, .bytes_max = bytes_max, .count_max = SIZE_MAX};
}

static size_t ring_at(const struct region_quarantine *q, size_t i) { return (q->head + i) % (q->fifo_cap + 1); }

static struct region_quarantine_item ring_take(struct region_quarantine *q)
{
	invariant(q->ring_count);
	struct region_quarantine_item it = q->ring[q->head];
	q->head = ring_at(q, 1);
	q->ring_count--;
	return it;
}

/* Take the ring's i-th oldest item; those before it move up one place. */
static struct region_quarantine_item ring_take_at(struct region_quarantine *q, size_t i)
{
	struct region_quarantine_item it = q->ring[ring_at(q, i)];
	for (; i > 0; i--) q->ring[ring_at(q, i)] = q->ring[ring_at(q, i - 1)];
	q->head = ring_at(q, 1);
	q->ring_count--;
	return it;
}

static bool stayed(const struct region_quarantine *q, const struct region_quarantine_item *it)
{
	return q->pushes - it->seq >= q->min_stay;
}

void region_quarantine_push(struct region_quarantine *q, struct region_quarantine_item it)
{
	/* Items never have key 0 (an empty slot's); after the last evict the ring has room. */
	invariant(it.key && q->ring_count <= q->fifo_cap);
	it.seq = ++q->pushes;
	q->ring[ring_at(q, q->ring_count)] = it;
	q->ring_count++;
	q->count++;
	q->bytes += it.bytes;
}

/* The item that leaves because the quarantine is over a bound. */
static struct region_quarantine_item take_pressed(struct region_quarantine *q, struct random_state *rnd)
{
	/* What is not in the ring is in the array, whose slots bound it: the search below
	 * ends. */
	invariant(q->count >= q->ring_count && q->count - q->ring_count <= q->random_cap);
	if (q->count > q->ring_count) {
		/* The array holds the oldest items: a random one of them. Whether it has
		 * stayed min_stay pushes is the caller's question (fifo_cap may be smaller). */
		size_t j = random_below(rnd, q->random_cap);
		while (!q->slots[j].key) j = (j + 1) % q->random_cap;
		struct region_quarantine_item it = q->slots[j];
		q->slots[j].key = 0;
		return it;
	}
	/* The ring is in push order: the items that stayed long enough are its oldest part. */
	size_t old = 0;
	while (old < q->ring_count && stayed(q, &q->ring[ring_at(q, old)])) old++;
	if (!old) return ring_take(q); /* none has: the oldest leaves early */
	return ring_take_at(q, random_below(rnd, old));
}

bool region_quarantine_evict(struct region_quarantine *q, struct region_quarantine_item *out,
			     struct random_state *rnd, bool *early)
{
	for (;;) {
		if (q->ring_count > q->fifo_cap) {
			struct region_quarantine_item moved = ring_take(q);
			size_t j = random_below(rnd, q->random_cap);
			*out = q->slots[j];
			q->slots[j] = moved;
			if (!out->key) continue; /* an empty slot took it: nobody leaves for the count */
		} else if (q->count && (q->bytes > q->bytes_max || q->count > q->count_max)) {
			*out = take_pressed(q, rnd);
		} else {
			return false;
		}
		invariant(q->count && q->bytes >= out->bytes && out->key); /* bytes: the sum of the items' */
		q->count--;
		q->bytes -= out->bytes;
		*early = !stayed(q, out);
		return true;
	}
}

bool region_quarantine_drain(struct region_quarantine *q, struct region_quarantine_item *out)
{
	if (q->count > q->ring_count) {
		size_t best = q->random_cap;
		for (size_t j = 0; j < q->random_cap; j++)
			if (q->slots[j].key && (best == q->random_cap || q->slots[j].seq < q->slots[best].seq)) best = j;
		*out = q->slots[best];
		q->slots[best].key = 0;
	} else if (q->ring_count) {
		*out = ring_take(q);
	} else {
		return false;
	}
	invariant(q->count && q->bytes >= out->bytes && out->key);
	q->count--;
	q->bytes -= out->bytes;
	return true;
}
