/*
 * resident_cache.h — freed large blocks kept sealed with their pages in place, so that the
 * next block of about their size needs no page fault (light variant only: the default
 * variant's freed regions wait out the region quarantine, which holds far more than any
 * bound on resident memory, so their pages are dropped at free; docs/large.md).
 *
 * Invariants:
 *  - Every block here was wiped and sealed by guard_seal: PROT_NONE, its pages zero,
 *    nothing the program did to it (guard_seal refuses those).
 *  - At most RESIDENT_SLOTS blocks and max_bytes bytes of sealed span (the caller may
 *    set a lower budget at any moment: large.c keeps them within the live blocks' recent
 *    peak). Under the madvise
 *    backend each sealed span is a VMA between two (its region's open neighbours), so
 *    the slot bound is also a bound on the VMAs this adds.
 *  - Pure bookkeeping: the caller seals, unseals and closes (guard.h) and keeps the lock.
 */
#ifndef RAMPART_RESIDENT_CACHE_H
#define RAMPART_RESIDENT_CACHE_H

#include "base/common.h"
#include "guard/guard.h"

#define RESIDENT_SLOTS 8

struct resident_block {
	struct guard_region region;
	size_t lead, len; /* the sealed span: [region.base + lead, + len) */
	uint64_t since_ms;
};

struct resident_cache {
	struct resident_block blocks[RESIDENT_SLOTS];
	size_t count, bytes, max_bytes;
};

void resident_cache_init(struct resident_cache *c, size_t max_bytes);
/* Index of the block whose sealed span fits len with the least excess, at most
 * max_excess; -1 when none does. */
long resident_cache_fit(const struct resident_cache *c, size_t len, size_t max_excess);
/* Index of the block idle longest; count > 0. */
size_t resident_cache_oldest(const struct resident_cache *c);
/* Take block i out. */
struct resident_block resident_cache_remove(struct resident_cache *c, size_t i);
/* Room for a span of len bytes within budget bytes without taking anything out? */
static inline bool resident_cache_room(const struct resident_cache *c, size_t len, size_t budget)
{
	return c->count < RESIDENT_SLOTS && c->bytes + len <= budget;
}
void resident_cache_add(struct resident_cache *c, const struct resident_block *b);
/* Is a inside a kept block's region? (Linear: error paths and introspection.) */
bool resident_cache_contains(const struct resident_cache *c, uintptr_t a);

#endif
