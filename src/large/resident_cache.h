/*
 * resident_cache.h — freed large blocks kept sealed with their pages in place, so that the
 * next block of about their size needs no page fault (light profile only: without the
 * region quarantine; under it, freed regions wait out the quarantine, which holds far more
 * than any bound on resident memory, so their pages are dropped at free; docs/large.md).
 *
 * Invariants:
 *  - Every block here was wiped and sealed by guard_seal: PROT_NONE, its pages zero,
 *    nothing the program did to it (guard_seal refuses those). It is out of the large
 *    table: a pointer into it is no allocation.
 *  - At most RESIDENT_SLOTS blocks and max_bytes bytes of sealed span; within that, at
 *    most what the live blocks have fallen below their peak of the last decay interval
 *    (the budget: kept and live blocks together stay within what the live ones alone
 *    reached), but always an eighth of max_bytes. Under the madvise backend each sealed
 *    span is a VMA between two (its region's open neighbours), so the slot bound is also
 *    a bound on the VMAs this adds.
 *  - A block leaves by being taken (reopened at its own place for a request of at least
 *    half its size, made by its block's call-site partition, base/partition.h) or
 *    dropped: closed by guard_close, which maps it afresh, and handed to the reuse cache
 *    like any closed region, still its partition's (or unmapped where the close is
 *    refused). Blocks idle longer than the decay interval are dropped.
 *  - It is entered from large.c at take-on-allocate (resident_cache_take, and
 *    resident_cache_shrink once the live bytes have grown) and keep-on-free
 *    (resident_cache_keep); trim and running out of memory flush it; the large lock
 *    covers it.
 */
#ifndef RAMPART_RESIDENT_CACHE_H
#define RAMPART_RESIDENT_CACHE_H

#include "base/common.h"
#include "guard/guard.h"
#include "large/populate.h"
#include "large/reuse_cache.h"

#define RESIDENT_SLOTS 8
/* Pages of the biggest block whose residency resident_cache_keep reads once for
 * everything it decides (8 MiB of 4 KiB pages); a bigger block asks the kernel as each
 * step needs. */
#define RESIDENT_VEC_PAGES 2048

/* The usable bytes of the live large blocks and their recent peak, which the budget
 * follows: large.c counts them (live_level_change), the cache reads them and restarts
 * the peak once a decay interval has passed. */
struct live_level {
	size_t bytes, peak;
	uint64_t peak_since_ms; /* when peak was last restarted at bytes */
};

static inline void live_level_change(struct live_level *l, size_t gone, size_t added)
{
	l->bytes = l->bytes - gone + added;
	if (l->bytes > l->peak) l->peak = l->bytes;
}

struct resident_block {
	struct guard_region region;
	size_t lead, len; /* the sealed span: [region.base + lead, + len) */
	uint64_t since_ms;
	unsigned partition; /* its block's call-site partition: only that one takes it */
};

/* A block being freed: its region, the open span [region.base + lead, + len), the
 * part of it populate_block filled (populate.h), and its call-site partition. */
struct resident_freed {
	struct guard_region region;
	size_t lead, len;
	size_t populated_off, populated;
	unsigned partition;
};

struct resident_cache {
	struct resident_block blocks[RESIDENT_SLOTS];
	size_t count, bytes, max_bytes;
	uint64_t decay_ms;
	struct reuse_cache *reuse; /* where dropped blocks go */
};

/* max_bytes 0: the cache keeps nothing. decay_ms is the idle bound (the reuse cache's). */
void resident_cache_init(struct resident_cache *c, size_t max_bytes, uint64_t decay_ms, struct reuse_cache *reuse);
/* Take-on-allocate: a kept block of partition for len bytes (align 0 or a power of two),
 * reopened at its own place, its pages there and zero; what it has beyond len is closed
 * and joins its trail guard. False when none fits; blocks idle too long are dropped
 * first. */
bool resident_cache_take(struct resident_cache *c, unsigned partition, struct guard_region *r, size_t *lead,
			 size_t len, size_t align);
/* The live bytes grew (an allocation): the oldest blocks beyond the budget are dropped. */
void resident_cache_shrink(struct resident_cache *c, struct live_level *live);
/* Keep-on-free, for a block freed without the region quarantine (live already without
 * it): reads its residency once (into vec, RESIDENT_VEC_PAGES bytes) for the populating
 * credit (populate_freed, always told) and for the cache; keeps it, wiped and sealed,
 * when the budget has room and it was mostly used. False when it is not kept (the
 * caller closes it as always). */
bool resident_cache_keep(struct resident_cache *c, struct live_level *live, struct populate_credit *p,
			 const struct resident_freed *b, unsigned char *vec);
/* Drop every block; how many there were. */
size_t resident_cache_flush(struct resident_cache *c);
/* Is a inside a kept block's region? (Linear: error paths and introspection.) */
bool resident_cache_contains(const struct resident_cache *c, uintptr_t a);
/* The address space of the kept blocks' regions. */
size_t resident_cache_region_bytes(const struct resident_cache *c);

#endif
