/*
 * slab_sets.c — the walks over a class's sets of slab positions (slab_sets.h): the
 * highest member (the empty slab closed first) and the next member from a position on
 * (the sweeps of page_return.c).
 */
#include "slab/slab_sets.h"

uint32_t set_highest(const struct slab_class *k, unsigned set)
{
	const uint64_t *sum = set_summary(k, set);
	uint32_t w = k->set_words - 1;
	while (!sum[w]) w--;
	uint32_t c = (w << 6) + 63 - (uint32_t)__builtin_clzll(sum[w]);
	const uint64_t *bits = set_bits(k, set, c);
	for (w = CHUNK / 64 - 1; !bits[w]; w--) {}
	return (c << CHUNK_SHIFT) + (w << 6) + 63 - (uint32_t)__builtin_clzll(bits[w]);
}

uint32_t set_next(const struct slab_class *k, unsigned set, uint32_t pos)
{
	const uint64_t *sum = set_summary(k, set);
	uint32_t c = pos >> CHUNK_SHIFT;
	while ((c >> 6) < k->set_words) {
		/* The first chunk from c on with a member, then within it the positions from
		 * pos on (all of them in a chunk past pos's). */
		uint64_t m = sum[c >> 6] & (~(uint64_t)0 << (c & 63));
		if (!m) {
			c = ((c >> 6) + 1) << 6;
			continue;
		}
		c = ((c >> 6) << 6) + (uint32_t)__builtin_ctzll(m);
		const uint64_t *bits = set_bits(k, set, c);
		uint32_t from = c == pos >> CHUNK_SHIFT ? pos & (CHUNK - 1) : 0;
		for (uint32_t w = from >> 6; w < CHUNK / 64; w++) {
			uint64_t b = bits[w] & (w == from >> 6 ? ~(uint64_t)0 << (from & 63) : ~(uint64_t)0);
			if (b) return (c << CHUNK_SHIFT) + (w << 6) + (uint32_t)__builtin_ctzll(b);
		}
		c++;
	}
	return UINT32_MAX;
}
