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

/* gcc (11 and later) takes a `const T *` parameter to mean that the function reads
 * the object; passing it a block fresh from malloc then warns -Wmaybe-uninitialized
 * in the caller. A function that only looks at the pointer's value says so. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#define RAMPART_POINTER_ONLY_(arg) __attribute__((__access__(__none__, arg)))
#else
#define RAMPART_POINTER_ONLY_(arg)
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
size_t malloc_object_size(const void *ptr) RAMPART_POINTER_ONLY_(1);

/* malloc(size), in the call-site partition the program names by id instead of the one
 * its call site gives (RAMPART_OPTIONS=partitions, rampart(3)): for a program whose
 * allocations all go through a wrapper of its own (xmalloc), which would otherwise make
 * them one site. A small block freed in one partition is never handed to an allocation
 * of another while its slab stays open, nor a large block's region to a large block of
 * another. Ids 0 to partitions - 1 take distinct partitions, in an order drawn at
 * start-up; other ids spread over them as call sites do. A process with one partition
 * ignores the id. */
void *malloc_partition(size_t size, unsigned long id);

/* The guard backend in use: "madvise" or "mprotect"; "passthrough" when the policy
 * hands this process's calls to the C library's allocator (rampart.conf(5)). */
const char *rampart_guard_backend(void);

/* Memory tagging of small blocks (arm64 CPUs with MTE, RAMPART_OPTIONS=mte): "sync" or
 * "async" (the tag-check mode in effect) when blocks are tagged, "off" when not (no MTE,
 * or mte=off, or not arm64); "passthrough" or "none" as for rampart_guard_backend. */
const char *rampart_memory_tagging(void);

/* The profile in effect (rampart.conf(5), RAMPART_OPTIONS=profile): "strong" or
 * "light", chosen once at start-up; "passthrough" or "none" as for
 * rampart_guard_backend. */
const char *rampart_profile(void);

/* The value in effect of the run-time option name (a key of RAMPART_OPTIONS=help=1),
 * as a number: a size or count as it is, on/off and 0/1 as 1/0, a word as its place in
 * the option's list of words (profile: 0 strong, 1 light). 0 with *value set; -1 with
 * errno ENOENT for a name that is no such option or names a file (stats_file), EINVAL
 * for a null argument, EAGAIN before start-up or under passthrough. */
int rampart_get_option(const char *name, unsigned long *value);

/* A snapshot of rampart's counters (relaxed reads; "_now" fields are gauges). The
 * layout is 1.0's and stays so (the library fills it through a pointer); counters added
 * since are read by name with rampart_get_counter. */
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
/* One counter by its name: a field name of struct rampart_stats, or one added since
 * (docs/statistics.md: cache_resident_bytes_now, heap_bytes_peak, ...); or one of the
 * totals of the statistics report, gathered as it gathers them (a walk over the size
 * classes): allocated_blocks, allocated_bytes, freed_blocks, freed_bytes (so far),
 * peak_blocks, peak_bytes (the most live at once). 0 with *value set; -1 with errno
 * ENOENT for a name this library does not know, EINVAL for a null argument. */
int rampart_get_counter(const char *name, unsigned long *value);

/* The state of the heap, gathered under rampart's locks (one class at a time, so
 * figures of different classes may be from slightly different moments). Every figure is
 * derived from the allocator's own state when asked for. Costs a walk over the slab
 * descriptors and the large-block table: call it now and then, not per allocation. The
 * layout is 1.0's and stays so: figures added since (the allocations and frees of each
 * class, the totals, the peaks) are in the statistics report and read by name with
 * rampart_get_counter. */
#define RAMPART_STATS_CLASSES 64

struct rampart_class_stats {
	size_t slot_size;    /* bytes per slot, the 8-byte canary included */
	size_t usable;       /* what malloc_usable_size reports for this class */
	size_t slab_bytes;   /* bytes per slab (0 for the zero-size class: never opened) */
	size_t live;         /* slots handed out and not freed */
	size_t quarantined;  /* freed slots waiting in the slot quarantine */
	size_t free;         /* slots ready to be handed out in open slabs */
	size_t slabs_active; /* open slabs with slots in use */
	size_t slabs_empty;  /* open slabs kept empty for reuse (malloc_trim closes them) */
	size_t slabs_closed; /* closed slabs (no memory, any access faults) awaiting reuse */
	size_t bytes_open;   /* (slabs_active + slabs_empty) * slab_bytes: read-write memory */
	size_t bytes_live;   /* live * slot_size */
};

struct rampart_heap_stats {
	const char *version;       /* rampart_version() */
	const char *guard_backend; /* "madvise" or "mprotect" */
	size_t classes;            /* entries of size_class[] in use: class i serves sizes up to size_class[i].usable */
	struct rampart_class_stats size_class[RAMPART_STATS_CLASSES];
	/* Small blocks: the sums over the classes. */
	size_t slab_live, slab_live_bytes, slab_quarantined, slab_quarantined_bytes;
	size_t slab_free_bytes; /* bytes_open - live - quarantined slot bytes: free slots, empty slabs, slack */
	size_t slab_open_bytes, slabs_active, slabs_empty, slabs_closed;
	/* Large blocks. */
	size_t large_live, large_live_bytes;   /* live blocks, their usable bytes (all read-write) */
	size_t large_quarantined, large_quarantined_bytes; /* freed regions held closed (address space) */
	size_t large_cached, large_cached_bytes;           /* closed regions kept for reuse (address space) */
	unsigned long cache_hits, cache_misses;  /* large requests served from the cache, or not */
	unsigned long cache_waste_bytes;         /* bytes beyond the request in regions reused */
	unsigned long cache_evictions;           /* cached regions unmapped (bounds or decay) */
	/* The guard layer. */
	unsigned long guard_fallbacks;  /* guards that madvise refused and mprotect made */
	unsigned long guard_latches;    /* times the madvise backend was switched off */
	unsigned long unmaps_refused;   /* regions closed instead of unmapped (VMA limit) */
	unsigned long spans_leaked;     /* spans neither unmapped nor closed */
};
void rampart_get_heap_stats(struct rampart_heap_stats *out);

/* The library's version ("1.0.0"); compare with RAMPART_VERSION from this header. */
const char *rampart_version(void);

#undef RAMPART_POINTER_ONLY_

#ifdef __cplusplus
}
#endif

#endif
