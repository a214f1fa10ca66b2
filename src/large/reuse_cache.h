/*
 * reuse_cache.h — closed large regions kept for reuse instead of being unmapped.
 *
 * Invariants:
 *  - Every cached region is closed from end to end (guard markers or PROT_NONE) and
 *    every closed span of it was mapped afresh: no resident pages, any access faults,
 *    nothing a program did to the memory is left. Reopening its open span costs one
 *    madvise or one mprotect and never an mmap.
 *  - Every entry belongs to one call-site partition (base/partition.h; all to 0 where
 *    partitions are off): that of the allocation whose block last held the region. Only
 *    a request of that partition takes it, or a piece cut from it: a region freed by
 *    one site's block is never another site's next block (docs/large.md, "Call-site
 *    partitions").
 *  - Entries are kept sorted by (partition, region size), so a lookup is a binary
 *    search: its cost does not grow linearly with the cache. No two entries of one
 *    partition touch (a region put next to a cached one of its partition is joined with
 *    it); regions of two partitions are never joined.
 *  - A fit wastes at most `slack` bytes (a hard bound): a request for need bytes takes
 *    its partition's smallest cached region of at least need bytes; if that one is
 *    more than need + slack, it is cut and only `split` bytes (need <= split <= need +
 *    slack) are handed out, the rest staying cached. Cutting and joining touching regions
 *    cost no system call: cached regions are closed end to end.
 *  - Bounded by entry count and by bytes of address space; regions idle longer than
 *    the decay interval leave. Leaving means unmapping (guard_unmap).
 *  - Not locked: the large allocator's lock covers it.
 */
#ifndef RAMPART_REUSE_CACHE_H
#define RAMPART_REUSE_CACHE_H

#include "base/common.h"
#include "guard/guard.h"

struct reuse_cache_entry {
	struct guard_region region;
	uint64_t idle_since_ms;
	unsigned partition; /* whose region it is: only that partition's requests take it */
};

struct reuse_cache {
	struct reuse_cache_entry *entries; /* max_entries, sorted by (partition, region.size) */
	size_t count, max_entries;
	size_t bytes, max_bytes;
	uint64_t decay_ms, last_decay_ms;
};

void reuse_cache_init(struct reuse_cache *c, struct reuse_cache_entry *storage, size_t max_entries, size_t max_bytes,
		uint64_t decay_ms);
/* Keep a closed region for partition; over the bounds the oldest entries, whatever
 * their partition (the bounds are the cache's), are unmapped. A region the cache cannot
 * take (bigger than max_bytes), or one whose pages may not all be gone or whose closed
 * spans were not all mapped afresh (REGION_RESIDUE, REGION_STALE: it may carry what a
 * program did to the memory into the next block), is unmapped at once. */
void reuse_cache_put(struct reuse_cache *c, const struct guard_region *r, unsigned partition, uint64_t now_ms);
/* Take partition's smallest region of at least need bytes, cut to split bytes when it is
 * bigger than need + slack; false if no cached region of partition is big enough. */
must_check bool reuse_cache_take(struct reuse_cache *c, unsigned partition, size_t need, size_t slack, size_t split,
				 struct guard_region *out);
/* Unmap regions idle longer than the decay interval (cheap when nothing is due). */
void reuse_cache_decay(struct reuse_cache *c, uint64_t now_ms);
/* Is a inside a cached region? (Linear: for error paths and introspection only.) */
bool reuse_cache_contains(const struct reuse_cache *c, uintptr_t a);
/* Unmap everything; returns how many regions went. */
size_t reuse_cache_flush(struct reuse_cache *c);


#endif
