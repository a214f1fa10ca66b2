/*
 * stats.h — the heap's figures and the reports of them (text, JSON, malloc_info's XML).
 *
 * Invariants:
 *  - RAMPART_CLASS_FIGURES, RAMPART_PARTITION_FIGURES and RAMPART_HEAP_FIGURES are the
 *    one list of what the reports show, in the order they show it: every report is
 *    generated from them, so a figure is added, renamed or dropped in one line. The
 *    counters themselves are listed once, in base/counters.h.
 *  - Figures are gathered under the allocator's locks, one lock at a time; reports are
 *    written after, with no lock held.
 */
#ifndef RAMPART_STATS_H
#define RAMPART_STATS_H

#include <stdio.h>

#include "rampart.h"
#include "base/common.h"
#include "base/counters.h"
#include "rampart.h"
#include "slab/slab.h"

/* What the reports show beyond struct rampart_heap_stats, whose layout is 1.0's and
 * stays so (include/rampart.h: a field added there would be written past the end of the
 * struct of a program built against an older header): gathered with it, in the same pass
 * under the same locks. Programs read these by name (rampart_get_counter: the "totals"
 * group's JSON keys). */
struct class_totals {
	size_t allocated, freed; /* slots handed out, and freed by the program, so far */
};
struct heap_totals {
	struct class_totals size_class[RAMPART_STATS_CLASSES];
	size_t large_allocated, large_freed; /* large blocks */
	/* Every block, small and large: allocated and freed so far, and their bytes (slot
	 * sizes; a large block's pages, its resizes counted as a free and an allocation). */
	size_t allocated_blocks, allocated_bytes, freed_blocks, freed_bytes;
	/* The most live blocks, and bytes, at once: the peaks of the process-wide total
	 * (counters.h: heap_blocks_peak, heap_bytes_peak), and at least what lives now. */
	size_t peak_blocks, peak_bytes;
};

/* Everything a report shows: the public figures, the totals, and the resident memory. */
struct stats_figures {
	struct rampart_heap_stats h;
	struct heap_totals t;
	/* Bytes in RAM of each class's memory, and their sum (slab_resident: read from
	 * /proc/self/smaps, so only for the reports; 0 where it cannot be read). */
	size_t resident[RAMPART_STATS_CLASSES];
	size_t slab_resident;
	/* Each class's blocks by call-site partition, an entry a class: gathered for the JSON
	 * report alone (NULL: not gathered). Not held here: some 15 KiB that malloc_info and
	 * malloc_stats, on any thread's stack, would carry for nothing. */
	const struct slab_part_figures *part;
};

/* A size class's figures, as the reports show them: X(value, JSON key, XML attribute,
 * text column). value is an expression of k (const struct rampart_class_stats *: the
 * fields of rampart_get_heap_stats), kt (const struct class_totals *) and of f and c (the
 * report's figures and the class's index). The text column is COL(width, title) (a
 * count), COL_BYTES(width, title) (a byte count with its unit), both right-aligned, or
 * NO_COL. */
#define RAMPART_CLASS_FIGURES(X)                                                              \
	X(k->slot_size, "slot_size", "size", COL(11, "slot size"))                            \
	X(k->usable, "usable", "usable", NO_COL)                                              \
	X(k->live, "live", "live", COL(10, "live"))                                           \
	X(k->quarantined, "quarantined", "quarantined", COL(13, "quarantined"))               \
	X(k->free, "free", "free", COL(11, "free"))                                           \
	X(kt->allocated, "allocated", "allocated", COL(13, "allocated"))                      \
	X(kt->freed, "freed", "freed", COL(13, "freed"))                                      \
	X(k->slabs_active, "slabs_active", "slabs_active", COL(16, "slabs: active"))          \
	X(k->slabs_empty, "slabs_empty", "slabs_empty", COL(7, "empty"))                      \
	X(k->slabs_closed, "slabs_closed", "slabs_closed", COL(8, "closed"))                  \
	X(k->bytes_open, "bytes_open", "bytes_open", COL_BYTES(13, "open memory"))            \
	X(f->resident[c], "bytes_resident", "bytes_resident", COL_BYTES(12, "resident"))      \
	X(k->bytes_live, "bytes_live", "bytes_live", NO_COL)

/* A size class's blocks by call-site partition (struct slab_part_figures), in the JSON
 * report alone: X(value, JSON key) is an array there with an entry a partition, in each
 * class that keeps partitions (none with partitions=1). value is an expression of pf
 * (const struct slab_part_figures *) and p (the partition's number). Not in the text
 * report or malloc_info's XML, whose rows would grow by up to 16 columns or elements a
 * class. */
#define RAMPART_PARTITION_FIGURES(X)       \
	X(pf->live[p], "partition_live")   \
	X(pf->owned[p], "partition_owned")

/* The groups of the heap's figures: X(GROUP, JSON object, start of its text line). */
#define RAMPART_STAT_GROUPS(X)            \
	X(SLAB, "slab", "small total: ")   \
	X(LARGE, "large", "large blocks: ") \
	X(TOTAL, "totals", "all blocks: ")  \
	X(CACHE, "cache", "reuse cache: ")  \
	X(GUARD, "guard", "guard layer: ")

/* The heap's figures, in report order within each group:
 * X(GROUP, kind, value, JSON key, text after the value, XML element, XML attribute).
 * value is an expression of h (const struct rampart_heap_stats *), t (const struct
 * heap_totals *) and f (const struct stats_figures *, whose h and t they are). kind: NUM;
 * BYTES (a byte count, with its unit in the text); PERMILLE (tenths of a percent: "12.5"
 * in the text); STR (a string). NULL: not in that report. */
#define RAMPART_HEAP_FIGURES(X)                                                                                 \
	X(SLAB, NUM, h->slab_live, "live", " live (", "slab", "live")                                           \
	X(SLAB, BYTES, h->slab_live_bytes, "live_bytes", "), ", "slab", "live_bytes")                           \
	X(SLAB, NUM, h->slab_quarantined, "quarantined", " quarantined, ", "slab", "quarantined")               \
	X(SLAB, NUM, h->slab_quarantined_bytes, "quarantined_bytes", NULL, "slab", "quarantined_bytes")         \
	X(SLAB, NUM, h->slab_free_bytes, "free_bytes", NULL, "slab", "free_bytes")                              \
	X(SLAB, BYTES, h->slab_open_bytes, "open_bytes", " open (", "slab", "open_bytes")                       \
	X(SLAB, BYTES, f->slab_resident, "resident_bytes", " resident) in ", "slab", "resident_bytes")          \
	X(SLAB, NUM, h->slabs_active + h->slabs_empty, NULL, " slabs (", NULL, NULL)                            \
	X(SLAB, NUM, h->slabs_active, "slabs_active", NULL, "slab", "slabs_active")                             \
	X(SLAB, NUM, h->slabs_empty, "slabs_empty", " empty), ", "slab", "slabs_empty")                         \
	X(SLAB, NUM, h->slabs_closed, "slabs_closed", " slabs closed, ", "slab", "slabs_closed")                \
	X(SLAB, NUM, stats_pages_returned(), "pages_returned", " pages of free slots given back; arenas open: ", \
	  "slab", "pages_returned")                                                                             \
	X(SLAB, NUM, stats_arenas_open(), "arenas_open", " of ", NULL, NULL)                                    \
	X(SLAB, NUM, stats_arenas(), "arenas", "; call-site partitions: ", NULL, NULL)                          \
	X(SLAB, NUM, stats_partitions(), "partitions", "\n", "slab", "partitions")                              \
	X(LARGE, NUM, h->large_live, "live", " live (", "large", "live")                                        \
	X(LARGE, BYTES, h->large_live_bytes, "live_bytes", "), ", "large", "bytes")                             \
	X(LARGE, NUM, t->large_allocated, "allocated", " allocated, ", "large", "allocated")                    \
	X(LARGE, NUM, t->large_freed, "freed", " freed, ", "large", "freed")                                    \
	X(LARGE, NUM, h->large_quarantined, "quarantined", " in quarantine (", "quarantine", "count")           \
	X(LARGE, BYTES, h->large_quarantined_bytes, "quarantined_bytes", " of address space), ", "quarantine",  \
	  "bytes")                                                                                              \
	X(LARGE, NUM, h->large_cached, "cached", " cached (", "cache", "count")                                  \
	X(LARGE, BYTES, h->large_cached_bytes, "cached_bytes", ")\n", "cache", "bytes")                         \
	X(TOTAL, NUM, t->allocated_blocks, "allocated_blocks", " allocated (", "totals", "allocated_blocks")    \
	X(TOTAL, BYTES, t->allocated_bytes, "allocated_bytes", "), ", "totals", "allocated_bytes")              \
	X(TOTAL, NUM, t->freed_blocks, "freed_blocks", " freed (", "totals", "freed_blocks")                    \
	X(TOTAL, BYTES, t->freed_bytes, "freed_bytes", "); most live at once: ", "totals", "freed_bytes")       \
	X(TOTAL, NUM, t->peak_blocks, "peak_blocks", " blocks, ", "totals", "peak_blocks")                      \
	X(TOTAL, BYTES, t->peak_bytes, "peak_bytes", "\n", "totals", "peak_bytes")                              \
	X(CACHE, NUM, h->cache_hits, "hits", " hits, ", "cache", "hits")                                        \
	X(CACHE, NUM, h->cache_misses, "misses", " misses (", "cache", "misses")                                \
	X(CACHE, PERMILLE, stats_hit_permille(h), "hit_permille", "% hits), ", NULL, NULL)                      \
	X(CACHE, BYTES, h->cache_waste_bytes, "waste_bytes", " wasted in reused regions, ", "cache", "waste_bytes") \
	X(CACHE, NUM, h->cache_evictions, "evictions", " evictions\n", "cache", "evictions")                    \
	X(GUARD, STR, h->guard_backend, "backend", " backend, memory tagging ", "guard", "backend")             \
	X(GUARD, STR, stats_memory_tagging(), "memory_tagging", ", ", "guard", "memory_tagging")                \
	X(GUARD, NUM, h->guard_fallbacks, "fallbacks", " fallbacks to mprotect, ", "guard", "fallbacks")        \
	X(GUARD, NUM, h->guard_latches, "latches", " latches, ", "guard", "latches")                            \
	X(GUARD, NUM, h->unmaps_refused, "unmaps_refused", " unmaps refused, ", "guard", "unmaps_refused")      \
	X(GUARD, NUM, h->spans_leaked, "spans_leaked", " spans leaked, ", "guard", "spans_leaked")              \
	X(GUARD, NUM, stats_guards_omitted(), "guards_omitted", " guards left out near the VMA limit (", "guard", \
	  "guards_omitted")                                                                                     \
	X(GUARD, NUM, stats_vmas(), "vmas", " VMAs counted in the process)\n", "guard", "vmas")

/* Gather the figures (takes each class lock and the large lock in turn): those of the
 * public struct alone, or with the totals too (t: NULL for none). */
void stats_gather(struct rampart_heap_stats *h);
void stats_gather_totals(struct rampart_heap_stats *h, struct heap_totals *t);
/* Gather the figures of a report: stats_gather_totals', then the resident memory; with
 * part (room for SC_COUNT classes; NULL: none), each class's blocks by partition too,
 * in the same pass (a look at every slot of the open slabs: the JSON report's alone). */
void stats_gather_report(struct stats_figures *f, struct slab_part_figures *part);
/* The report of RAMPART_OPTIONS=stats=text|json, and of malloc_stats(), written to fd. */
void stats_report(int fd, int json);
/* RAMPART_OPTIONS=stats=...: the report at exit, appended to stats_file when one is set
 * (not in AT_SECURE programs), else, or when it cannot be opened, on stderr; none, with a
 * warning, when stats_file names something that is no regular file (a symbolic link, a
 * FIFO, a device, a directory). */
void stats_report_at_exit(void);
/* malloc_info's XML of figures gathered before (stdio may allocate: no lock held). */
void stats_report_xml(FILE *fp, const struct stats_figures *f);

#endif
