/*
 * rampart.h — the parts of rampart's interface that the C library headers do not
 * already declare. The standard functions (malloc, free, calloc, realloc,
 * reallocarray, posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
 * malloc_usable_size, malloc_trim) keep their usual prototypes from <stdlib.h> and
 * <malloc.h>.
 */
#ifndef RAMPART_H
#define RAMPART_H

#include <stddef.h>

/* The version of this header; rampart_version() gives the library's. */
#define RAMPART_VERSION_MAJOR 1
#define RAMPART_VERSION_MINOR 0
#define RAMPART_VERSION_PATCH 0
#define RAMPART_VERSION "1.0.0"

#ifdef __cplusplus
extern "C" {
#endif

/* C23: free with the size (and alignment) the block was requested with. A size or
 * alignment that does not match the allocation is heap corruption: fatal. */
void free_sized(void *ptr, size_t size);
void free_aligned_sized(void *ptr, size_t alignment, size_t size);

/* An upper bound of the bytes accessible from ptr (which may point inside an
 * allocation) to the end of its allocation; 0 for pointers that are not rampart's
 * and for a pointer at or past the usable end of a live block. A pointer into
 * rampart's slab memory that is not inside a live block (freed, never handed out,
 * a guard) is heap corruption: fatal. */
size_t malloc_object_size(const void *ptr);

/* The guard backend in use: "madvise" or "mprotect". */
const char *rampart_guard_backend(void);

/* A snapshot of rampart's counters (relaxed reads; "_now" fields are gauges). */
struct rampart_stats {
	unsigned long guard_fallbacks;     /* guards that madvise refused and mprotect made */
	unsigned long guard_latches;       /* times the madvise backend was switched off */
	unsigned long unmaps_refused;      /* regions closed instead of unmapped (VMA limit) */
	unsigned long spans_leaked;        /* spans neither unmapped nor closed */
	unsigned long guarded_maps;        /* new mappings made with guards (large allocations) */
	unsigned long large_live_now;      /* live large allocations */
	unsigned long quarantine_now;      /* regions in the region quarantine */
	unsigned long quarantine_bytes_now;
	unsigned long cache_hits;          /* large requests served from the reuse cache */
	unsigned long cache_misses;
	unsigned long cache_waste_bytes;   /* bytes beyond the request in reused regions */
	unsigned long cache_evictions;     /* cached regions unmapped (bounds or decay) */
	unsigned long cache_now;
	unsigned long cache_bytes_now;
	unsigned long realloc_in_place;    /* large reallocs that did not move */
	unsigned long realloc_moved;       /* large reallocs moved with mremap */
};
void rampart_get_stats(struct rampart_stats *out);

#ifdef __cplusplus
}
#endif

#endif
