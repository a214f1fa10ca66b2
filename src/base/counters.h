/*
 * counters.h — event counters, kept with relaxed atomics so counting never takes a lock.
 *
 * Invariants:
 *  - RAMPART_COUNTERS, then RAMPART_COUNTERS_SINCE_1_0, are the one list of counters:
 *    the enum below, the storage, the names rampart_get_counter answers to, the filling
 *    of the public struct rampart_stats (include/rampart.h: the first list only, checked
 *    field by field at compile time in front/stats.c) and the copy into struct
 *    rampart_heap_stats are all generated from them.
 *  - Counters only grow, except the *_NOW gauges, which go up and down with the state
 *    they describe; a *_PEAK counter is the most its gauge has been (stat_add_peak).
 *    Reading them is racy by design (a snapshot).
 *  - A leaf: includes only system headers and base files.
 */
#ifndef RAMPART_COUNTERS_H
#define RAMPART_COUNTERS_H

#include <stdatomic.h>

#include "base/common.h"

/* X(ID, field, heap, what): STAT_ID counts it; field names it in struct rampart_stats
 * (in this order: the public struct is filled and checked by name and offset); heap is
 * IN_HEAP when struct rampart_heap_stats carries it under the same field name, else
 * NOT_IN_HEAP (the reports show those figures through the heap stats). */
#define RAMPART_COUNTERS(X)                                                                              \
	X(GUARD_FALLBACK, guard_fallbacks, IN_HEAP, "madvise refused a guard; the span used mprotect")   \
	X(GUARD_LATCH, guard_latches, IN_HEAP, "the madvise backend was latched off (EINVAL)")           \
	X(UNMAP_REFUSED, unmaps_refused, IN_HEAP, "munmap refused (VMA limit); region closed instead")   \
	X(LEAKED, spans_leaked, IN_HEAP, "a span could be neither unmapped nor closed")                  \
	X(MAPS, guarded_maps, NOT_IN_HEAP, "new mappings with guards (guard_map)")                       \
	X(LARGE_LIVE_NOW, large_live_now, NOT_IN_HEAP, "live large allocations")                         \
	X(QUARANTINE_NOW, quarantine_now, NOT_IN_HEAP, "regions in the region quarantine")               \
	X(QUARANTINE_BYTES_NOW, quarantine_bytes_now, NOT_IN_HEAP, "their bytes of address space")       \
	X(CACHE_HITS, cache_hits, IN_HEAP, "large requests served from the reuse cache")                 \
	X(CACHE_MISSES, cache_misses, IN_HEAP, "large requests the reuse cache could not serve")         \
	X(CACHE_WASTE_BYTES, cache_waste_bytes, IN_HEAP, "bytes beyond the request in reused regions")   \
	X(CACHE_EVICTIONS, cache_evictions, IN_HEAP, "cached regions unmapped (bounds or decay)")        \
	X(CACHE_NOW, cache_now, NOT_IN_HEAP, "regions in the reuse cache")                               \
	X(CACHE_BYTES_NOW, cache_bytes_now, NOT_IN_HEAP, "their bytes of address space")                 \
	X(REALLOC_IN_PLACE, realloc_in_place, NOT_IN_HEAP, "large reallocs served without moving")       \
	X(REALLOC_MOVED, realloc_moved, NOT_IN_HEAP, "large reallocs that moved the pages with mremap")

/* Counters added since 1.0. struct rampart_stats keeps 1.0's layout: rampart_get_stats
 * fills it through a pointer with no size, so a program built against 1.0's header has
 * room for 1.0's fields and no more. These are read by name (rampart_get_counter), as
 * every counter can be. Same X() form. */
#define RAMPART_COUNTERS_SINCE_1_0(X)                                                                    \
	X(CACHE_RESIDENT_BYTES_NOW, cache_resident_bytes_now, NOT_IN_HEAP,                               \
	  "bytes of freed blocks kept sealed with their pages (light)")                                  \
	X(SLAB_PAGES_RETURNED, slab_pages_returned, NOT_IN_HEAP,                                         \
	  "pages of free slots in open slabs given back to the kernel")                                  \
	X(HEAP_BLOCKS_NOW, heap_blocks_now, NOT_IN_HEAP,                                                 \
	  "live blocks, as the process-wide total has them: a size class adds its change a step at a "   \
	  "time (docs/statistics.md)")                                                                   \
	X(HEAP_BYTES_NOW, heap_bytes_now, NOT_IN_HEAP, "their bytes (slot sizes; a large block's pages)") \
	X(HEAP_BLOCKS_PEAK, heap_blocks_peak, NOT_IN_HEAP, "the most heap_blocks_now has been")          \
	X(HEAP_BYTES_PEAK, heap_bytes_peak, NOT_IN_HEAP, "the most heap_bytes_now has been")

enum stat_id {
#define STAT_ENUM(id, field, heap, what) STAT_##id,
	RAMPART_COUNTERS(STAT_ENUM)
	STAT_PUBLIC_COUNT, /* those of struct rampart_stats */
	STAT_SINCE_1_0_BEFORE = STAT_PUBLIC_COUNT - 1,
	RAMPART_COUNTERS_SINCE_1_0(STAT_ENUM)
#undef STAT_ENUM
	STAT_COUNT
};

extern _Atomic unsigned long stat_counters[STAT_COUNT];

static inline void stat_add(enum stat_id s, long n)
{
	atomic_fetch_add_explicit(&stat_counters[s], (unsigned long)n, memory_order_relaxed);
}
static inline void stat_inc(enum stat_id s) { stat_add(s, 1); }
static inline void stat_dec(enum stat_id s) { stat_add(s, -1); }

/* Add n to the gauge `now`, and raise `peak` to the gauge's new value when that is
 * higher. Where the caller knows the process has one thread (os_single_threaded), with
 * plain loads and stores: no atomic read-modify-write while there is nobody to race
 * with, as the locks do. */
static inline void stat_add_peak(enum stat_id now, enum stat_id peak, long n, bool one_thread)
{
	unsigned long v;
	if (one_thread) {
		v = atomic_load_explicit(&stat_counters[now], memory_order_relaxed) + (unsigned long)n;
		atomic_store_explicit(&stat_counters[now], v, memory_order_relaxed);
		if (n > 0 && v > atomic_load_explicit(&stat_counters[peak], memory_order_relaxed))
			atomic_store_explicit(&stat_counters[peak], v, memory_order_relaxed);
		return;
	}
	v = atomic_fetch_add_explicit(&stat_counters[now], (unsigned long)n, memory_order_relaxed) + (unsigned long)n;
	if (n <= 0) return;
	unsigned long seen = atomic_load_explicit(&stat_counters[peak], memory_order_relaxed);
	while (v > seen && !atomic_compare_exchange_weak_explicit(&stat_counters[peak], &seen, v, memory_order_relaxed,
								  memory_order_relaxed)) {
	}
}

static inline unsigned long stat_read(enum stat_id s)
{
	return atomic_load_explicit(&stat_counters[s], memory_order_relaxed);
}

#endif
