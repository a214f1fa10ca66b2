/*
 * large.h — page-granular allocations, each its own region with randomly sized
 * guard regions on both sides, tracked in a hash table in the metadata region.
 *
 * Invariants:
 *  - A live allocation's bytes [p, p + usable) are open; everything else of its
 *    region is closed. usable is a whole number of pages (0 for a zero-size block).
 *  - Every region is in exactly one place: the table as LIVE; the table as
 *    QUARANTINED (closed), waiting in the region quarantine or, at least
 *    CONFIG_REGION_QUARANTINE_SKIP bytes, in the huge quarantine; the resident cache
 *    (light profile, without the quarantine: sealed with its pages, out of the table,
 *    reopened in place by a later large_alloc or dropped into the reuse cache); the
 *    reuse cache (closed, out of the table, reused by a later large_alloc); or gone
 *    (unmapped). A region the kernel would not map afresh at its free (REGION_STALE) is
 *    never cached: it is unmapped when it leaves the quarantine. Nor is one that leaves
 *    the region quarantine (or skips it) before CONFIG_REGION_QUARANTINE_MIN large
 *    frees: only the quarantine feeds the cache (unless it is compiled out, set to 0
 *    bytes at run time, or off: large_quarantine=off, the light profile).
 *  - Lookups are by exact start address: any other pointer is not an allocation.
 *  - A live entry records how its block was allocated (kind, base/alloc_kind.h): a free
 *    or realloc by another kind of call is a mismatch.
 *  - A live entry records its block's call-site partition (base/partition.h): that of
 *    the allocation's site, or of the realloc that moved it. The region keeps it through
 *    the quarantine and the caches, and only an allocation of that partition gets it
 *    back from them.
 *  - All state is guarded by one lock; the meta lock nests inside it.
 */
#ifndef RAMPART_LARGE_H
#define RAMPART_LARGE_H

#include "base/alloc_kind.h"
#include "base/common.h"
#include "base/report.h"

struct large_state;
/* The large allocator's state (the root init.c keeps), or NULL without memory. */
must_check struct large_state *large_init(void);
/* NULL on failure (the caller sets errno). align is 0 or a power of two; kind is how
 * the block is allocated (base/alloc_kind.h), recorded with it; site is the
 * allocation's call site (base/partition.h), whose partition the block takes. */
void *large_alloc(size_t size, size_t align, enum alloc_kind kind, uintptr_t site);
/* Free a live allocation; sized is nonzero to check the size (free_sized), with
 * size the claimed byte count and align the claimed alignment (0 = unchecked); kind is
 * how the caller's deallocation says it was allocated (a mismatch is fatal, or under
 * on_error=report reported and freed all the same). */
void large_free(void *p, bool sized, size_t size, size_t align, enum alloc_kind kind);
/* Resize; NULL on failure with p still valid. A block of operator new or new[] is a
 * mismatch, as large_free says. A block that moves takes site's partition (the realloc
 * call's); one resized in place keeps its own. */
void *large_realloc(void *p, size_t size, uintptr_t site);
/* Usable bytes of a live allocation; any other p is fatal, reported as op. For
 * OP_REALLOC (a realloc about to move the block into a slot) the block's kind is
 * checked as large_realloc does. */
size_t large_usable_size(const void *p, enum report_op op);
/* Bytes from p to the end of the live allocation containing it; 0 past its end and for
 * pointers that are not rampart's. Fatal inside a freed (quarantined or cached) region. */
size_t large_object_size(const void *p);
/* Drop what can be dropped without weakening protection; true if anything was. */
bool large_trim(void);

/* Introspection: read under the large lock. */
struct large_figures {
	size_t live, live_bytes;               /* live blocks and their usable bytes */
	size_t quarantined, quarantined_bytes; /* regions in the quarantine (address space) */
	size_t cached, cached_bytes;           /* regions in the reuse cache (address space) */
	size_t allocs, frees;                  /* blocks allocated and freed so far */
	size_t alloc_bytes, freed_bytes;       /* their usable bytes (a realloc: the old size
						* freed, the new one allocated) */
};
void large_figures(struct large_figures *f);

void large_fork_prepare(void);
void large_fork_parent(void);
/* locked: the prepare handler took the lock (other threads existed). */
void large_fork_child(bool locked);

#endif
