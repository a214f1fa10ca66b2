/*
 * slab.h — the allocator for requests up to SC_MAX_REQUEST bytes.
 *
 * Invariants:
 *  - One window of address space (guard_window: set aside, not mapped) holds a region
 *    per (arena, size class), each 2^region_shift bytes, in an order drawn at
 *    start-up; a pointer's offset in the window names its region's place, the owner
 *    table in the read-only roots the class, and its offset in the region the slab
 *    and the slot. A region maps its slab area from the bottom as it grows (region.size), and
 *    its addresses are never anyone else's. Nothing inside a slab points anywhere:
 *    descriptors, bitmaps, quarantines and random state live in the metadata region.
 *  - After the regions and the nursery's, the window holds spill regions of the same
 *    size. A class whose region is full takes one for good (slab_spill_add) and its
 *    positions go on there, numbered on from its region's; the spill table names each
 *    one's owner and the span its positions decode by. A spill region no class took
 *    holds no live block.
 *  - A class's first positions (as many as fit its cell) are in its nursery cell: one
 *    cell per (arena, class), each at a random place in a slot of its own, the slots in
 *    the regions' order in the window's region after theirs, so a process maps the
 *    first slab of each class under one page table and shares those above; the
 *    nursery is wide (at least 2^CONFIG_SLAB_NURSERY_SHIFT), so one class's address
 *    tells little of another's. Positions count from each area's base (pos * slab_bytes): the
 *    region never opens the nursery's positions, the cell holds no others. A cell is
 *    mapped as its positions are taken, never past them but for a growth step and its
 *    closed page; where it cannot grow its positions end there (nursery_bytes shrinks
 *    to what it mapped, before any position above is taken).
 *  - Each region's slab area starts at a random page offset (the guard area below
 *    it is never mapped), each cell's at a random lead of up to a quarter of the cell,
 *    with a closed page below and another above its last position. Guard slabs are
 *    positions skipped as the area grows, at the interval of the way the region
 *    closes spans then: never usable, state SLAB_NONE, closed (guard markers under
 *    madvise, PROT_NONE under mprotect).
 *  - A slot is free (used=0), live (used=1, quar=0) or in the slot quarantine
 *    (used=1, quar=1); with call-site partitions (the option partitions), a freed slot
 *    out of the quarantine is free but its partition's alone, and stays used=1, quar=1
 *    (slab_class.h, OWNER_FREE) until its partition takes it or its slab closes. Only live slots may be freed, resized or measured; every
 *    other pointer into the window is fatal. A slot freed by a thread of another arena
 *    waits first in that thread's free batch, still used and not quarantined in its
 *    bits but marked in its canary word (slab_class.h, batched_canary): every path
 *    that judges a slot live treats the mark as freed. Once its batch enters the
 *    quarantine it is quarantined (quar=1) but may wait in its class's deferred list
 *    before it takes its place in the quarantine's arrays. The slot that last left the
 *    quarantine may be held for the class's next allocation (still quar=1) until an
 *    allocation in its arena or malloc_trim takes it.
 *  - Cost follows use. A slot never handed out since its slab was opened (fresh) is
 *    known zero: it is neither checked nor wiped. Otherwise the slot's dirty extent is
 *    what the program asked for, widened to the usable size once it learns that
 *    (malloc_usable_size, malloc_object_size, an in-place realloc); a free wipes the
 *    extent (not the canary), and the next allocation checks that much. Classes of up to
 *    SLAB_EXTENT_SLOTS slots a slab keep the extent per slot; smaller slots count as
 *    wholly dirty (tracking would cost more than wiping them).
 *  - With zero-on-free, a slot that is not live reads as zero over its whole usable
 *    size: a free wipes the extent and finds the rest (the slack) zero, or reports it
 *    written (slot_check.h); only a stale pointer's write since can have left bytes.
 *    Its canary word holds the slab's canary once the slot was handed out, zero while
 *    it is fresh.
 *  - A live slot's canary is in place whenever the class lock is free: slab_alloc
 *    stamps it, at a fresh slot's first allocation, before unlocking, and nothing
 *    wipes it after, so a free may check the canary of a live neighbour (which finds
 *    the batched mark instead while the neighbour waits in a batch).
 *  - A slot operator new or new[] allocated is marked so while it lives (slot_kind.h);
 *    a free or realloc by another kind of call finds it (dealloc_kind).
 *  - Each (arena, class) has its own lock and random generator; the meta lock nests
 *    inside class locks, and class locks are taken before the large lock.
 *  - An arena opens at its first thread; a class of it is set up (its struct, its
 *    generator, its guard area) when it needs its first slab. Until then its struct is
 *    all zero and no pointer into its region is a live block.
 */
#ifndef RAMPART_SLAB_H
#define RAMPART_SLAB_H

#include "base/alloc_kind.h"
#include "base/common.h"
#include "base/option_table.h"
#include "slab/sizeclass.h"

struct slab_class;

struct slab_roots;
/* Set aside the slab window: its place and size in *out (false: no address space). Drawn
 * before any other window (init.c): it is the largest by far, and drawn after the
 * metadata's it found no room beside it in 18 of 40 processes (system/window_place). */
must_check bool slab_window(struct slab_roots *out);
/* Set up the slab allocator in the window slab_window put in *out, and fill in the rest
 * of *out (init.c keeps it in the roots; false: no memory, the window stays for another
 * try). */
must_check bool slab_init(struct slab_roots *out);

/* Is p inside the slab window? (Then only slab_* may handle it.) */
static inline bool slab_contains(const void *p);

/* A slot of class c (c < SC_COUNT) for size bytes from the calling thread's arena, all
 * of them zero with zero, allocated as `kind` (base/alloc_kind.h), for an allocation
 * made at site (base/partition.h: where the public call returns to in the program, or
 * a partition it names): with call-site partitions, a slot freed by another partition
 * is never taken while its slab stays open. NULL on OOM. */
void *slab_alloc(unsigned c, size_t size, bool zero, enum alloc_kind kind, uintptr_t site);
/* What a sized free (free_sized, free_aligned_sized, a sized delete) says of its block:
 * the size and alignment passed, and the class they map to, which must be the slot's. */
struct sized_claim {
	size_t size, align;
	unsigned cls;
};
/* Free a live slot; claim: NULL for a free that passes no size; kind is how the
 * caller's deallocation says it was allocated (a mismatch of either is fatal, or under
 * on_error=report reported and freed all the same). */
void slab_free(void *p, const struct sized_claim *claim, enum alloc_kind kind);
/* Usable bytes of a live slot (fatal otherwise); the program may now use them all. */
size_t slab_usable_size(const void *p);
/* Bytes from p to the end of the usable part of the live slot p points into; 0 from
 * the usable end to the slot's end. Fatal if p is not inside a live slot. */
size_t slab_object_size(const void *p);
/* realloc of a live slot (its canary checked; fatal if not live, or if operator new or
 * new[] allocated it) to size bytes of class c_new (SC_COUNT: a large block): true when
 * the slot serves it in place, its extent grown to size; false when the block must
 * move, with *copy the bytes to carry over. */
bool slab_resize(void *p, unsigned c_new, size_t size, size_t *copy);

/* Introspection (slow paths: each class is read under its lock). */
struct slab_class_figures {
	size_t slot_size, usable, slab_bytes;
	size_t live;        /* slots handed out and not freed */
	size_t quarantined; /* freed slots waiting in the slot quarantine */
	size_t free;        /* free slots in open slabs */
	size_t slabs_active, slabs_empty, slabs_closed;
	size_t allocs, frees; /* slots handed out, and freed by the program, so far */
};
/* A class's blocks by call-site partition (docs/slab.md, "Call-site partitions"),
 * indexed by the partition's number (0 to partitions - 1, in an order the secret draws:
 * which sites or malloc_partition ids share a number is not told here). */
struct slab_part_figures {
	unsigned partitions;                 /* the class keeps this many; 0: none (partitions=1,
					      * or the zero class, whose slots are never accessible) */
	size_t live[OPTION_PARTITIONS_MAX];  /* live slots the partition took */
	size_t owned[OPTION_PARTITIONS_MAX]; /* free slots the partition alone may take (freed,
					      * out of the slot quarantine, their slab open) */
};
/* The figures of class c, summed over the arenas; with parts (NULL: none), its blocks by
 * partition too, gathered in the same pass under the same locks (the partitions' live
 * slots add up to f->live). The partitions cost a look at every slot of the class's open
 * slabs, which the allocation and free paths never pay: for the reports, not for
 * mallinfo2. */
void slab_class_figures(unsigned c, struct slab_class_figures *f, struct slab_part_figures *parts);
/* The bytes of each class's memory in RAM (summed over the arenas) as the kernel counts
 * them for VmRSS, into resident[SC_COUNT]; false when /proc/self/smaps cannot be read.
 * One pass over the process's mappings: for the reports, not for mallinfo2. */
bool slab_resident(size_t *resident);
/* Close every empty slab kept open and give back every free slot's pages in the open
 * ones (malloc_trim); the bytes released, both counted. */
size_t slab_trim(void);
/* Arenas opened so far: the first at start-up, each other one by the first thread sent
 * there. */
unsigned slab_arenas_open(void);

void slab_fork_prepare(void);
void slab_fork_parent(void);
void slab_fork_child(void);

#include "base/roots.h"

static inline bool slab_contains(const void *p)
{
#if defined(__aarch64__)
	/* Without the top byte: a tag under memory tagging (slab/slot_tag.h); the slab
	 * judges whether the pointer may carry it. */
	return ((uintptr_t)p & (((uintptr_t)1 << 56) - 1)) - roots.slab.base < roots.slab.size;
#else
	return (uintptr_t)p - roots.slab.base < roots.slab.size;
#endif
}

#endif
