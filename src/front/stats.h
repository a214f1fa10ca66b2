/*
 * stats.h — event counters, kept with relaxed atomics so counting never takes a lock.
 *
 * Invariants: counters only grow, except the STAT_*_NOW gauges, which go up and down
 * with the state they describe. Reading them is racy by design (a snapshot).
 */
#ifndef RAMPART_STATS_H
#define RAMPART_STATS_H

#include <stdatomic.h>

#include "base/common.h"

enum stat_id {
	STAT_GUARD_FALLBACK,   /* madvise refused a guard; the span used mprotect */
	STAT_GUARD_LATCH,      /* the madvise backend was latched off (EINVAL) */
	STAT_UNMAP_REFUSED,    /* munmap refused (VMA limit); region closed instead */
	STAT_LEAKED,           /* a span could be neither unmapped nor closed */
	STAT_MAPS,             /* new mappings with guards (guard_map) */
	STAT_LARGE_LIVE_NOW,   /* live large allocations */
	STAT_QUARANTINE_NOW,   /* regions in the region quarantine */
	STAT_QUARANTINE_BYTES_NOW,
	STAT_CACHE_HITS,       /* large requests served from the reuse cache */
	STAT_CACHE_MISSES,
	STAT_CACHE_WASTE_BYTES,/* bytes beyond the request in regions taken from the cache */
	STAT_CACHE_EVICTIONS,  /* cached regions unmapped (bounds or decay) */
	STAT_CACHE_NOW,
	STAT_CACHE_BYTES_NOW,
	STAT_REALLOC_IN_PLACE, /* large reallocs served without moving */
	STAT_REALLOC_MOVED,    /* large reallocs that moved the pages with mremap */
	STAT_COUNT
};

extern _Atomic unsigned long stat_counters[STAT_COUNT];

static inline void stat_add(enum stat_id s, long n)
{
	atomic_fetch_add_explicit(&stat_counters[s], (unsigned long)n, memory_order_relaxed);
}
static inline void stat_inc(enum stat_id s) { stat_add(s, 1); }
static inline void stat_dec(enum stat_id s) { stat_add(s, -1); }

#endif

struct rampart_heap_stats;
/* Gather the figures (takes each class lock and the large lock in turn). */
void stats_gather(struct rampart_heap_stats *h);
/* The report of RAMPART_OPTIONS=stats=text|json, and of malloc_stats(), written to fd. */
void stats_report(int fd, int json);
