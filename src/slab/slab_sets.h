/*
 * slab_sets.h — a class's sets of slab positions: a bit per position in its descriptor
 * chunk's head and a summary bit per chunk, so that the lowest and the highest member
 * are found in a few loads whatever the number of slabs. Adding, removing and the
 * lowest member are inline: the partial set's are on the allocation and free paths;
 * the walks are in slab_sets.c. Every function here runs with the class lock held.
 *
 * Invariants:
 *  - A position is in one of these sets at most: SET_CLOSED (closed, out of the slab
 *    quarantine), SET_EMPTY (open, no slot in use), SET_PARTIAL (active with a free
 *    slot, but not the slab allocations draw from, k->current).
 *  - Partition p's set, set_of_part(p), beside them (parted classes): the open slabs
 *    (active or empty) holding a free slot that only p may take (slab_class.h,
 *    OWNER_FREE). A slab's psets has bit p exactly while it is a member.
 *  - SET_DIRTY, beside them: open slabs a slot of which was freed (back to the slab or
 *    into the slot quarantine) since their pages last went back (page_return.h).
 *  - k->nset[set] counts a set's members; a chunk's summary bit is set exactly when one
 *    of its positions is a member.
 *  - Only positions below the high-water mark are members (their chunks exist).
 */
#ifndef RAMPART_SLAB_SETS_H
#define RAMPART_SLAB_SETS_H

#include "slab/slab_class.h"

/* The bitmap of a set in a chunk: chunk 0's in the class's metadata (set0_of: a class
 * may have no chunk 0 of its own, its first positions being the arena's shared block),
 * every other one in its chunk's head; a partition's elsewhere (part_set_bits). The set
 * is a constant but for the partitions': the test folds away. */
static inline uint64_t *set_bits(const struct slab_class *k, unsigned set, uint32_t chunk)
{
	if (set >= SET_COUNT) return part_set_bits(k, set - SET_COUNT, chunk);
	if (!chunk) return set0_of(k, set);
	return (uint64_t *)((char *)k->dir[chunk] - CHUNK_HEAD_BYTES) + set * (CHUNK / 64);
}

/* The count of a set's members: a partition's in its class's partition block. */
static inline uint32_t *set_count(struct slab_class *k, unsigned set)
{
	return set < SET_COUNT ? &k->nset[set] : &k->parts->n[set - SET_COUNT];
}

static inline void set_add(struct slab_class *k, unsigned set, uint32_t pos)
{
	uint32_t c = pos >> CHUNK_SHIFT, i = pos & (CHUNK - 1);
	uint64_t *bits = set_bits(k, set, c);
	invariant(pos < k->hwm && !(bits[i >> 6] & (uint64_t)1 << (i & 63)));
	bits[i >> 6] |= (uint64_t)1 << (i & 63);
	set_summary(k, set)[c >> 6] |= (uint64_t)1 << (c & 63);
	(*set_count(k, set))++;
}

_Static_assert(CHUNK == 128, "a chunk's bitmap is two words");
static inline void set_remove(struct slab_class *k, unsigned set, uint32_t pos)
{
	uint32_t c = pos >> CHUNK_SHIFT, i = pos & (CHUNK - 1);
	uint64_t *bits = set_bits(k, set, c);
	invariant(*set_count(k, set) && (bits[i >> 6] & (uint64_t)1 << (i & 63)));
	bits[i >> 6] &= ~((uint64_t)1 << (i & 63));
	if (!(bits[0] | bits[1])) set_summary(k, set)[c >> 6] &= ~((uint64_t)1 << (c & 63));
	(*set_count(k, set))--;
}

/* The lowest member (the set must not be empty). */
static inline uint32_t set_lowest(const struct slab_class *k, unsigned set)
{
	const uint64_t *sum = set_summary(k, set);
	uint32_t w = 0;
	while (!sum[w]) w++;
	uint32_t c = (w << 6) + (uint32_t)__builtin_ctzll(sum[w]);
	const uint64_t *bits = set_bits(k, set, c);
	w = !bits[0];
	return (c << CHUNK_SHIFT) + (w << 6) + (uint32_t)__builtin_ctzll(bits[w]);
}

/* The lowest member, taken out of the set (which must not be empty): set_lowest and
 * set_remove in one pass, for the slab allocations draw from next (slab_refill). */
static inline uint32_t set_take_lowest(struct slab_class *k, unsigned set)
{
	uint64_t *sum = set_summary(k, set);
	uint32_t w = 0;
	while (!sum[w]) w++;
	uint32_t c = (w << 6) + (uint32_t)__builtin_ctzll(sum[w]);
	uint64_t *bits = set_bits(k, set, c);
	uint32_t b = !bits[0];
	uint32_t pos = (c << CHUNK_SHIFT) + (b << 6) + (uint32_t)__builtin_ctzll(bits[b]);
	bits[b] &= bits[b] - 1; /* its lowest bit */
	if (!(bits[0] | bits[1])) sum[w] &= sum[w] - 1;
	(*set_count(k, set))--;
	return pos;
}

/* The highest member (the set must not be empty). */
uint32_t set_highest(const struct slab_class *k, unsigned set);
/* The lowest member at or above pos; UINT32_MAX when there is none (a walk over a set:
 * for (p = set_next(k, s, 0); p != UINT32_MAX; p = set_next(k, s, p + 1))). */
uint32_t set_next(const struct slab_class *k, unsigned set, uint32_t pos);

#endif
