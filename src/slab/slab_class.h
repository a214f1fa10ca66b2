/*
 * slab_class.h — what the parts of the slab allocator share: the class struct, the slab
 * descriptor, and decoding (a pointer into its class, slab and slot: class_at, then
 * decode_slot; a slot back into its address; a quarantine entry). Data and decoding
 * only: nothing here calls into a file of the slab. Private to src/slab/; the rest of
 * rampart sees slab.h.
 *
 * The parts, bottom-up: each includes and calls only parts listed before it (a part's
 * interface is its own header), never one listed after it:
 *   slab_class.{h,c}        data, locking, decoding (the .c: the arena and set-up bits)
 *   class_tally.{h,c}       a class's allocations and frees, its share of the live total
 *   slot_tag.h              a slot's memory tag (arm64 MTE)
 *   slot_check.h            judging a slot: live, its canary, its neighbours
 *   slot_kind.h             how a live slot was allocated: the C functions, new, new[]
 *   slab_setup.{h,c}        start-up, a class's set-up, spill regions, opening arenas
 *   slab_sets.{h,c}         a class's sets of positions: closed, empty, partial
 *   page_return.{h,c}       the pages of free slots in open slabs given back after a while
 *   slab_life.{h,c}         a slab's life: fresh, active, empty, closed; the budget
 *   slot_quarantine.{h,c}   freed slots held back before their slab gets them again
 *   batched_free.{h,c}      a thread's frees into other arenas: no lock, by batch
 *   slot_alloc.c            malloc and free of a slot (slab.h): choice, checks, wipe
 *   slab_stats.c            figures and trim (slab.h)
 *   slab_fork.c             the fork handlers (slab.h)
 * The last three call none of each other. Below them all: slab.h (the public face, whose
 * functions the parts define) and sizeclass.{h,c} (the geometry).
 *
 * Invariants (beside slab.h's):
 *  - A class's state (lists, sets, budget, descriptors, generator, quarantine arrays)
 *    is read and written under its lock. Its geometry is written once, by
 *    slab_class_setup under the lock, before the class's bit in slab_set_up_classes is
 *    set (release): a thread that took the lock since, or saw the bit, may read it.
 *  - Every pointer into the window is decoded by class_at and decode_slot, and nowhere
 *    else; a slot's address is slot_start's (prefetch_free_slots alone steps through a
 *    slab from slab_start).
 *  - Two paths read class state without the lock: a free from another arena's thread
 *    (slab_batch_free, batched_free.c) and a size question (slab_usable_size,
 *    slot_alloc.c) read the spans, hwm, dir and the slot's word of bits, which change
 *    while they read. Those are written whole: atomic stores
 *    (spans_update, fresh_slab, dir_room, have_desc) and aligned word stores (bits_write,
 *    atomic under ThreadSanitizer); a directory is never unmapped. Everything else they
 *    reads was written before the slot it frees was handed out.
 *  - With call-site partitions (k->parted: docs/slab.md, "Call-site partitions") every
 *    slot handed out since its slab last opened on fresh or dropped pages holds its
 *    partition in its owner byte (owners_of), written under the lock at that hand-out
 *    and read by no unlocked path. A freed slot out of the quarantine stays its
 *    partition's alone until its slab closes (OWNER_FREE): used and quarantined in the
 *    slab's bits, counted in nown, its slab in that partition's set (slab_sets.h).
 *
 * The window: a region per (arena, class) in a random order (roots.slab.owner), the
 * nursery's region, the spill regions. Layout of one (arena, class) region
 * (2^region_shift bytes of the slab window):
 *
 *   [ guard area: random page count | slab 0 | slab 1 | guard | slab 3 | ... | unopened | unmapped ]
 *
 * The guard area is never mapped; the slab area is mapped (PROT_NONE) from its start
 * as it grows (grow_for) and opened slab by slab.
 *
 * The nursery (a run of slots in the nursery's region, at a random place aligned to a
 * power of two at least its size) holds a cell per (arena, class), each in its own slot,
 * in the same random order as the regions:
 *
 *   [ slot: unused | cell of class 17 | unused ][ slot: ... cell of class 3 ... ] ...
 *   cell: [ lead | closed page | slab 0 | guard | slab 2 | ... | closed page | unused ]
 *
 * A cell lies at a random cell-aligned place in its slot (never across a page table's
 * reach, for cells up to one), so the first slabs of two classes are as far apart as
 * the nursery is wide (2^CONFIG_SLAB_NURSERY_SHIFT bytes or more) and one class's
 * address tells little of another's. Positions below nursery_bytes / slab_bytes are the
 * cell's, mapped as the class takes them (grow_for: a closed page above the highest, the
 * rest of the cell not mapped at all, so that a class using a slab or two maps a
 * quarter of its cell or less); the region takes over from there, its own first
 * positions never opened. A cell that cannot grow (another mapping above it) ends where
 * it is mapped, and the region takes over from there (cell_ends). Each class would
 * otherwise need page tables of its own from its very first slab and the tables above
 * them (regions are far apart), which every fork copies and every exit frees: in the
 * nursery a class in use costs one table of the lowest level, and the few above it are
 * shared by all (docs/slab.md, "The nursery").
 *
 * Spill regions (after the nursery's region) continue a class whose region is full:
 *
 *   [ lead: random page count, never mapped but its last page (closed) | slab home_pos + n * seg_pos | guard | ... ]
 *
 * each with seg_pos positions, the n-th the class took holding positions home_pos +
 * n * seg_pos on; its span's base lies below it by its first position's offset, so a
 * pointer there decodes to the class's position numbers like any other.
 *
 * Slab positions are fixed-size steps from the area start, so a pointer decodes to
 * (position, slot) with two multiply-shift divisions. Guard slabs are positions the
 * high-water mark skips: after every slab_guard_interval fresh slabs while the
 * region closes spans with guard markers, after every slab_guard_interval_mprotect
 * once it closes them with PROT_NONE (from start-up, or from the moment the madvise
 * backend is latched off). A guard is never usable and its descriptor stays SLAB_NONE,
 * so decoding a pointer needs no record of where the guards are. The area below the
 * high-water mark grows as one read-write span in which guards and closed slabs are
 * closed spans: guard markers (a class costs one VMA) or PROT_NONE holes.
 *
 * Descriptors live in metadata chunks of CHUNK slabs, found through a directory, except
 * each class's first FIRST_POSITIONS: those of all the classes of an arena live side by
 * side, position by position, so a process that uses a few slabs in each of many classes
 * writes a few pages of descriptors, not one per class. The per-class state (lock,
 * lists, quarantine heads) is one cache-aligned struct; its generator and quarantine
 * arrays sit in the arena's block beside every other class's.
 *
 * Sets, by slab state (slab_sets.h):
 *   ACTIVE  open, 1..slots slots in use (slots in the slot quarantine, in the deferred
 *           list and the one held for the next allocation count as in use). Slots are
 *           drawn from one of them (current) until it is full; then from the lowest
 *           position with a free slot, in the partial set (all other active slabs
 *           with a free slot), so that allocations fill the low slabs and the high
 *           ones drain, empty and close (a class that used the most recently freed
 *           into first spread its live blocks over every slab it ever opened)
 *   EMPTY   open, no slot in use, in the empty set (a budget that follows use; the
 *           contents are zero but for the canaries of slots handed out): the lowest
 *           is reused first, the highest closed first, for the same reason as the
 *           closed set below
 *   CLOSED  closed through the guard layer; in the slab quarantine ring, then in the
 *           closed set from which the lowest position is reopened before fresh space
 *           is used (so churn keeps reusing the same low slabs and the open ones stay
 *           together: reused in any other order, the few slabs left open after a
 *           wave of frees wander over the whole area and each splits it anew); near
 *           the VMA limit, where a PROT_NONE close would split its area, closed by
 *           giving its pages back in place instead (SPAN_DROPPED: it reads as zero but
 *           an access does not fault), and dropped again when reopened
 *   NONE    never used, or a guard position
 */
#ifndef RAMPART_SLAB_CLASS_H
#define RAMPART_SLAB_CLASS_H

#include <stdatomic.h>

#include "slab/slab.h"
#include "base/report.h"
#include "guard/guard.h"
#include "base/roots.h"
#include "os/lock.h"
#include "os/os.h"
#include "os/random.h"

/* Frees from another arena's thread are collected per thread and class and enter the
 * slot quarantine a batch at a time (batched_free.c). A slot's place in a batch is
 * marked in its own canary word, so they need canaries; and a class batches only when
 * it has a quarantine to enter (slot_quarantine_bytes, at run time: k->qmask). */
#if CONFIG_SLOT_CANARY && CONFIG_SLAB_FREE_BATCH
#define SLAB_FREE_BATCHES 1
#else
#define SLAB_FREE_BATCHES 0
#endif

/* Descriptors come in chunks of CHUNK positions (about 24 KiB of metadata each): small
 * enough that a class in light use maps little, big enough to keep chunks few. */
#define CHUNK_SHIFT 7u
#define CHUNK (1u << CHUNK_SHIFT)
/* Positions whose descriptors every class of an arena keeps in one shared block (row
 * by row: position 0 of every class, then position 1, ...; a row is about 2.8 pages).
 * A short-lived process such as one stage of a shell pipeline uses a slab or two per
 * class: its descriptors are then a few pages in all, not one per class, and so are the
 * pages a forked child copies when it writes them. A class's chunk 0, once it needs one,
 * still has room for all CHUNK positions: the first FIRST_POSITIONS stay unused there. */
#define FIRST_POSITIONS 8u
_Static_assert(FIRST_POSITIONS <= CHUNK, "the first positions lie in chunk 0");
/* At most this many slab positions per (arena, class), its home region and its spill
 * regions together: what a 32-bit position numbers, less one chunk, so that the
 * high-water mark plus a guard slab, a list link (position + 1) and a chunk's last
 * position never wrap. A quarantine entry (qentry) holds any of them. With the default
 * window the spill regions bound every class first (65 regions of 2^24 one-page
 * positions: about 2^30). It bounds the directory (2^25 chunks: 256 MiB at most, grown
 * on demand by doubling, dir_room) and the casts in slab_class_setup (positions_cap). */
#define MAX_POSITIONS ((uint32_t)(((uint64_t)1 << 32) - CHUNK))
/* A quarantine entry names a slot by its slab position and its index there, plus one
 * (zero: no entry), and decodes with a shift and a mask where an address would take two
 * divisions. 64 bits: a position is 32 and a slot index 8, so every position a class
 * can number (MAX_POSITIONS) fits. Entries of 32 bits (24 for the position) stopped a
 * one-page class at 2^24 positions, 32 GiB of live blocks in one arena, while memory
 * and spill regions remained; a narrower encoding (slot bits per class, or a global
 * slot number) either still stops the 16-byte class (256 slots, 8 bits) or decodes by
 * division. The cost is the quarantine's metadata, twice what it was (docs/slab.md,
 * "Capacity: spill regions"; bench/journal/2026-11-27-positions.md). A tag bit above the position
 * instead of the + 1 spared decoding its subtraction but cost small churn more
 * instructions than it saved (a 64-bit constant to set at every entry). */
typedef uint64_t qentry_t;
#define QENTRY_SLOT_BITS 8u
_Static_assert(SLAB_MAX_SLOTS <= 1u << QENTRY_SLOT_BITS, "a slot index fits its part of an entry");
/* The largest entry, of slot 255 at the largest 32-bit position, plus one, does not wrap
 * to zero (no entry). */
_Static_assert(32 + QENTRY_SLOT_BITS < 64, "an entry holds any position and slot index");
static inline qentry_t qentry(uint32_t pos, uint32_t i)
{
	invariant(i < 1u << QENTRY_SLOT_BITS);
	return ((qentry_t)pos << QENTRY_SLOT_BITS | i) + 1;
}

static inline uint32_t qentry_pos(qentry_t e) { return (uint32_t)((e - 1) >> QENTRY_SLOT_BITS); }
static inline uint32_t qentry_slot(qentry_t e) { return (uint32_t)(e - 1) & ((1u << QENTRY_SLOT_BITS) - 1); }

/* A pointer's page index in its region is 32 bits (decode_slot), with pages of 4 KiB or more. */
_Static_assert(CONFIG_SLAB_REGION_SHIFT <= 44, "a page index in a region fits in 32 bits");
/* Smallest region tried when the address space is short (e.g. 39-bit arm64). */
#define MIN_REGION_SHIFT 26u
/* Directory chunks every class starts with (CHUNK slab positions each). */
#define DIR_START 32u
/* Cross-arena frees a class holds back from its quarantine (two cache lines of entries). */
#define DEFERRED_MAX 15u
/* Entries of a class's slot quarantine random array: at most this many (rand16 indexes
 * it) ... */
#define SLOT_Q_MAX_RANDOM 65536u
/* ... and at least this many: with one, a freed slot would come back after a fixed
 * number of frees. */
#define SLOT_Q_MIN_RANDOM 4u
/* Its FIFO ring holds this power of two times as many: the ring is the part of the
 * wait every slot serves whatever the draws (docs/slab.md, "How long a freed slot
 * waits"). */
#define SLOT_Q_FIFO_SHIFT 1u
/* Bytes of slots the first entries of a class's random array hold in the arena's hot
 * block, beside every other class's (slab_setup.c): a process that frees no more into
 * a class writes no other page of it, nor maps its cold part. At least 8
 * entries (a line). */
#define SLOT_Q_HOT_BYTES 16384u
/* A random array of at most this many entries lives in the hot block whole, its ring
 * after it: the classes of 16 KiB and up, a few lines each, need no cold part. */
#define SLOT_Q_HOT_WHOLE 8u

enum { SLAB_NONE, SLAB_ACTIVE, SLAB_EMPTY, SLAB_CLOSED };
/* How a position's span is mapped, for what it costs in VMAs: a PROT_NONE span is a VMA
 * boundary wherever it meets read-write memory; the others are read-write (open, closed
 * behind guard markers, or closed by giving its pages back in place). UNSET: never
 * opened, as its area's unopened space is (read-write within marked_pages, else
 * PROT_NONE). */
enum { SPAN_UNSET, SPAN_OPEN, SPAN_MARKED, SPAN_PROTECTED, SPAN_DROPPED };
enum { AREA_REGION, AREA_NURSERY };
/* The position sets of a class (slab_sets.h); with several call-site partitions, one
 * more set a partition after them, SET_COUNT + p (set_of_part). */
enum { SET_CLOSED, SET_EMPTY, SET_PARTIAL, SET_DIRTY, SET_COUNT };
/* A chunk's bitmaps of the sets: a bit per position in each. They head the chunk,
 * padded to a cache line so that its descriptors stay aligned. The partitions' follow
 * its owner maps (part_set_bits): a process without partitions maps none of them. */
#define SET_CHUNK_BYTES (SET_COUNT * CHUNK / 8u)
#define CHUNK_HEAD_BYTES 64u
_Static_assert(SET_CHUNK_BYTES <= CHUNK_HEAD_BYTES, "a chunk's bitmaps fit its head");

/* --- call-site partitions (docs/slab.md, "Call-site partitions") ------------------- */

/* Several partitions (the option partitions): every class but the zero one keeps its
 * slots' owners, and the partition sets. Read from the sealed options. */
static inline bool slab_parted(void) { return roots.opt.partitions > 1; }
/* Class c keeps its slots' owners (k->parted once it is set up): every class but the
 * zero one, whose slots are never accessible, so nothing in them can be reclaimed. */
static inline bool class_parted(unsigned c) { return slab_parted() && c; }
/* The sets in use: the four above, and one a partition. */
static inline unsigned sets_in_use(void) { return SET_COUNT + (slab_parted() ? (unsigned)roots.opt.partitions : 0); }
static inline unsigned set_of_part(unsigned p) { return SET_COUNT + p; }
/* The bytes of a directory of cap chunks with every set's summary words after it. */
static inline size_t dir_bytes(uint32_t cap)
{
	return cap * sizeof(struct slab *) + sets_in_use() * (size_t)((cap + 63) / 64) * sizeof(uint64_t);
}

/* A slot's owner, a byte of its slab's owner map (owners_of): the partition that took it
 * since the slab last opened on fresh or dropped pages (written at its first hand-out,
 * kept through its frees), with OWNER_FREE while it is free and that partition's
 * alone. Such a slot stays used and quarantined in its slab's bits, so that no other
 * partition's draw sees it and a free of it is a double free; the slab counts it in
 * nown. A slot never handed out since is anyone's: its byte is not read. */
#define OWNER_FREE 0x80u
_Static_assert(OPTION_PARTITIONS_MAX <= OWNER_FREE, "a partition fits below OWNER_FREE");
/* The partitions' bitmaps of a chunk's positions, after its owner maps: 256 bytes, for
 * every partition the option allows. */
#define PART_SET_CHUNK_BYTES (OPTION_PARTITIONS_MAX * CHUNK / 8u)

/* A slab's free slots' pages: nothing to give back (kept), a slot freed this period, or
 * in the last one (aged: given back at the next sweep, page_return.c). A slab whose pages
 * are not kept is in the dirty set. */
enum { PAGES_KEPT, PAGES_FREED, PAGES_AGED };

/* Classes with at most this many slots a slab keep a dirty extent per slot (slab.h). */
#define SLAB_EXTENT_SLOTS 32u
/* Extents are kept in bytes, so that the slack starts right after the request and a
 * write one byte past it is found at the free (slot_check.h); in 2-byte units in the
 * classes whose usable size a 16-bit count of bytes cannot hold (above 64 KiB). */
#define EXTENT_MAX_UNITS 65535u

/* A slot's three state bits sit side by side, word by word: a slab of up to 64 slots
 * (every class from 64 bytes up but three with 71 to 85) keeps all an allocation or a
 * free reads of it, but the extents, in the descriptor's first cache line. (With an
 * array per state the quarantine bits were in the second line: a free then missed the
 * cache more often than the fewer instructions saved.) */
struct slot_bits {
	uint64_t used;  /* handed out or quarantined; bits past `slots` are set */
	uint64_t quar;  /* in the slot quarantine */
	uint64_t fresh; /* not handed out since the slab was opened: all zero */
};

/* Line-aligned: in an arena's shared block (FIRST_POSITIONS) descriptors of different
 * classes, under different locks, sit side by side and must not share a line between
 * threads. */
struct slab {
	uint64_t canary;     /* leading (lowest-address) byte zero */
	/* Bit p (mod 64) of the pages: a page of the slab went back to the kernel there
	 * with the last word of a slot handed out before, which is marked fresh since
	 * (page_return.c). A fresh slot whose last word lies on such a page may be one:
	 * its next allocation checks it whole, canary word included (slot_maybe_returned). */
	uint64_t returned;
	uint16_t nused;
	uint8_t state;
	uint8_t span;  /* how its span is mapped (SPAN_*): what its VMAs cost (slab_life.c) */
	uint8_t pages; /* its free slots' pages (PAGES_*: page_return.c) */
	/* Live slots handed out by operator new or new[], whose kinds its map holds
	 * (slot_kind.h): while 0, a free of the C functions looks no further. Written under
	 * the lock, read by a batched free without it. */
	uint16_t ncxx;
	/* A slab keeps extents only when it has at most SLAB_EXTENT_SLOTS slots, so one word
	 * of bits: the extents share the later words' place. Two lines a descriptor instead
	 * of three, and a class's first extents in the line of its bits. Only the class's
	 * nwords words of bits are ever read or written. */
	union {
		struct slot_bits bits[SLAB_WORDS];
		struct {
			struct slot_bits bits0;
			/* Live: the units the program may have written. Not live: the units
			 * the free wiped, which the next allocation checks. */
			uint16_t extent[SLAB_EXTENT_SLOTS];
		};
	};
	/* With partitions (slab_parted): its free slots that are their partition's alone
	 * (OWNER_FREE; counted in nused too: all of nused are such slots when none is live
	 * or quarantined, and the slab is then wholly free), and the partitions whose sets
	 * hold it (bit p: in set_of_part(p)). In the second line: only partitioned paths
	 * touch them. */
	uint16_t nown;
	uint16_t psets;
} __attribute__((aligned(64)));
_Static_assert(offsetof(struct slab, bits) + sizeof(struct slot_bits) <= 64, "a slab's first word of bits is in its first line");
_Static_assert(offsetof(struct slab, ncxx) < offsetof(struct slab, bits), "ncxx is in the padding before the bits");
_Static_assert(SLAB_EXTENT_SLOTS <= 64, "a slab that keeps extents has one word of bits");
_Static_assert(sizeof(struct slab) == 128, "a descriptor is two lines");
_Static_assert(OPTION_PARTITIONS_MAX <= 16, "psets has a bit per partition");

/* How each slot of a slab was allocated (base/alloc_kind.h), two bits a slot: `cxx` set
 * for operator new and new[], `array` for new[] alone; both clear for the C functions
 * and for every slot that is not live. Not in the descriptor, whose two lines have no
 * room left for 512 bits: beside the descriptors, an array of its own that parallels
 * theirs (kinds_of), one line a slab. Only C++ allocations and frees touch it, and a
 * free of the C functions in a slab whose ncxx is not 0. Zero as mapped: a chunk's or
 * the arena's block comes from meta_alloc, and a slot's bits are cleared at its free. */
struct slot_kinds {
	uint64_t cxx[SLAB_WORDS], array[SLAB_WORDS];
};
_Static_assert(sizeof(struct slot_kinds) == 64, "a slab's kinds are one line");

/* The arena's shared block of its classes' first descriptors (line-aligned: it starts
 * the arena's metadata, and each arena's share is a whole number of lines), then their
 * kinds in the same order. */
#define FIRST_BLOCK_BYTES ((size_t)FIRST_POSITIONS * SC_COUNT * sizeof(struct slab))
#define FIRST_KINDS_BYTES ((size_t)FIRST_POSITIONS * SC_COUNT * sizeof(struct slot_kinds))

/* A class's partition block (with partitions only), in its arena's metadata
 * (slab_setup.c): chunk 0's bitmaps of the partition sets (as set0_of keeps the other
 * sets'), their counts, and where the owner maps of its first positions lie. Those lie
 * row by row, position 0 of every class of the arena, then position 1, ... (a row is
 * roots.slab.owner_row bytes): a process that uses a slab of many classes writes a page
 * or two of them, as it does of descriptors. */
struct class_parts {
	uint32_t n[OPTION_PARTITIONS_MAX]; /* members of each partition's set */
	/* Position + 1 of the slab partition p takes its own slots from (0: none), as
	 * k->current is the one fresh slots are drawn from: the lowest of p's set when it
	 * was chosen, kept until it holds none of p's (a slab below it may have got one
	 * since). Spares each allocation the search of the set. */
	uint32_t cur[OPTION_PARTITIONS_MAX];
	uint8_t *first; /* position 0's owner map; position p's is p rows on */
	uint64_t set0[OPTION_PARTITIONS_MAX][CHUNK / 64] __attribute__((aligned(64)));
} __attribute__((aligned(64)));

/* The profile's three choices the allocation and free paths test (random slots, the
 * write-after-free check, a slot quarantine: qmask != 0), all on (strong's), all off
 * (light's) or a mix (an option set against its profile); with call-site partitions,
 * always the mix's. slot_alloc.c has a copy of each path for the first two, the choices
 * folded in as constants, and one that reads them from the class for a mix: a process
 * pays one test of its class's mode, not one for each choice. */
enum hot_mode { HOT_MIXED, HOT_STRONG, HOT_LIGHT };

struct slab_class {
	/* Line 0: the geometry, fixed when the class is set up (slab_class_setup, on its
	 * first slab), and the directory. Written almost never after set-up, so a thread of
	 * another arena that frees into the class (slab_batch_free, no lock) reads it from
	 * its own cache: the lock, which the class's own threads write at every call, has a
	 * line of its own (line 2). With the lock here, a class's allocating thread waited
	 * on its own lock word's line while other arenas' threads read the geometry. */
	uint32_t size, usable, slots, pages;
	uint64_t slot_magic, pages_magic; /* n / d == mulhi(n, magic) for n < 2^32 */
	size_t slab_bytes;
	uint32_t cls;
	uint32_t arena1;            /* its arena + 1: tls_arena of the threads it serves */
	bool defer_frees;           /* frees from other arenas wait in `deferred` (slab_free) */
	bool open_slabs;            /* false for the zero class: its memory never opens */
	bool track_extent;          /* slots <= SLAB_EXTENT_SLOTS: per-slot dirty extents */
	uint8_t nwords, page_shift;
	uint8_t extent_shift;       /* log2 of the bytes of an extent's unit */
	/* The profile's choices, copied from the sealed options at set-up so that the
	 * paths that read them read this line anyway: */
	bool random_slots : 1;      /* slot_random */
	bool check_reuse : 1;       /* write_after_free_check */
	unsigned hot_mode : 2;      /* enum hot_mode: the copy of the hot paths it takes */
	bool parted : 1;            /* keeps its slots' owners (slab_parted, not the zero class) */
	uint8_t owner_words;        /* with parted: 8-byte words of a slab's owner map */
	struct slab **dir;    /* dir_cap chunks of descriptors; grows with hwm. A directory
			       * outgrown stays mapped: a batched free reads it unlocked. */
	/* Line 1: what decoding reads, per area (AREA_REGION, AREA_NURSERY): offsets from
	 * base in [lo, hi) may be slots, that is, are the area's positions and mapped
	 * (spans_update). Indexed, not branched on: frees land in either area at random.
	 * The region's lo is nursery_bytes. Written as areas grow and fresh slabs are taken. */
	struct area_span { uintptr_t base; size_t lo, hi; } span[2];
	uint32_t hwm;         /* positions below were taken into use (or skipped as guards) */
	uint32_t home_pos;    /* positions below are the nursery's and the region's; the
			       * rest are in spill regions (spill_of) */
	struct slab *first;   /* descriptor of position 0; position p < FIRST_POSITIONS at
			       * first[p * SC_COUNT] (the arena's shared block) */
	/* Line 2: what the class's own calls write: the lock, the slab slots are drawn
	 * from, the slot quarantine. */
	struct lock lock __attribute__((aligned(64)));
	uint32_t current; /* position + 1 of the active slab slots are drawn from; 0: none */
	/* The random array has qmask + 1 entries, the ring 2^SLOT_Q_FIFO_SHIFT times as many
	 * (ring_mask; qmask beside current: the 64-bit `released` below then still ends the
	 * line); qmask 0: the class has no quarantine (slot_quarantine_on). */
	uint32_t qmask;
	qentry_t *qrand, *qring; /* slot quarantine: entries by qentry() */
	/* Its generator, in the arena's metadata block beside every other class's (out of
	 * the struct: 312 bytes that made it 832). */
	struct random_state *rnd;
	uint32_t qhead, qcount;
	uint32_t qfill; /* entries the random array was given in order, until it was full */
	uint32_t ndeferred; /* slots waiting in `deferred` */
	/* The entry that last left the quarantine, still marked quarantined in its slab, for
	 * the class's next allocation; 0: none (slot_quarantine_put). */
	qentry_t released;
	/* Slow paths from here. */
	uint32_t dir_cap;
	uint32_t max_pos; /* positions the class has address space for (home and spill) */
	/* Spill regions, taken when the home region is full (slab_spill_add): the class's
	 * positions go on from home_pos, seg_pos in each; seg[n] is the spill table index
	 * of its n-th (nseg of them, the table's size at most). */
	uint32_t seg_pos, nseg;
	uint64_t seg_magic;
	uint16_t *seg;
	uint32_t prefetched; /* position + 1 of the slab whose free slots were last prefetched */
	uint32_t since_guard; /* fresh slabs taken since the last guard */
	struct guard_region region; /* base = slab position 0; size: mapped so far (grows) */
	/* Positions below nursery_bytes / slab_bytes lie in the class's nursery cell (base =
	 * position 0 there too), the rest in the region; 0: no nursery. */
	struct guard_region nursery;
	size_t nursery_bytes;
	/* The closed set (closed slabs out of the slab quarantine), the empty set (empty
	 * slabs kept open), the partial set (active slabs with a free slot, but the
	 * current one) and the dirty set (slabs freed into whose pages have not gone back
	 * since): a bit per position in its descriptor chunk, a summary bit per
	 * chunk, so the lowest and the highest member are found in a few loads. Chunk 0's
	 * bitmaps (it may have no chunk of its own) follow the slab quarantine ring in the
	 * class's metadata (set0_of); the summary words of the sets follow the directory,
	 * set_words of them a set (set_summary). */
	uint64_t *set_sum;
	uint32_t set_words;
	uint32_t nset[SET_COUNT]; /* members of each set */
	uint32_t nactive; /* active slabs (beside nset: an allocation compares the two) */
	/* The empty-slab budget follows use: empty_max grows when the class reopens a slab
	 * soon after closing one (churn) and decays towards its floor when it does not.
	 * peak_now/peak_prev: most slabs in use in this decay period and the one before. */
	uint32_t empty_max, empty_floor;
	uint32_t peak_now, peak_prev;
	bool empty_reused; /* an empty slab was taken, or the budget grew, this period */
	uint32_t return_at; /* low 32 bits of the ms of the next sweep of free pages (page_return.c) */
	uint64_t closed_at_ms, decay_at_ms;
	uint32_t *sq; /* slab quarantine ring */
	uint32_t sq_head, sq_count;
	/* The random array is filled in order in the arena's hot block until it holds qhot
	 * entries, then moves to its full length beside the ring, in the class's cold part
	 * (UINT32_MAX: it never moves). Read on the filling path only. */
	uint32_t qhot;
	/* The low 32 bits of the class's allocations (class_tally.h) at its last sweep of
	 * free pages: the same at the next one, the class handed out nothing in between
	 * (page_return.c). */
	uint32_t return_allocs;
	/* Slots freed by threads of other arenas, already wiped and marked quarantined,
	 * waiting to enter the slot quarantine (their own lines: see slot_quarantine_defer). */
	qentry_t deferred[DEFERRED_MAX] __attribute__((aligned(64)));
	struct class_parts *parts; /* with parted: its partition block */
} __attribute__((aligned(64)));

_Static_assert(offsetof(struct slab_class, dir) + sizeof(void *) <= 64, "the geometry and the directory fill line 0");
_Static_assert(offsetof(struct slab_class, first) + sizeof(void *) <= 2 * 64, "what decoding reads fills line 1");
_Static_assert(offsetof(struct slab_class, dir_cap) <= 3 * 64, "the hot fields fill the first three lines");
/* Decoding finds a class by its index: at 512 bytes that is a shift. With the deferred
 * entries of 64 bits the struct grew to 576 (an index took a multiply-add and a shift
 * in every malloc and free), until chunk 0's set bitmaps
 * moved to the metadata (set0_of) and the used bits of an empty slab (tail_word) were
 * worked out instead of stored. */
_Static_assert(sizeof(struct slab_class) == 512, "a class's index shifted is its offset");

/* The bytes of a class's slab quarantine ring (in its metadata, after the directory),
 * and chunk 0's bitmaps of the sets after it. */
#define SQ_BYTES align_up(CONFIG_SLAB_QUARANTINE * sizeof(uint32_t), 8)
#define SET0_BYTES (SET_COUNT * (CHUNK / 64) * sizeof(uint64_t))
static inline uint64_t *set0_of(const struct slab_class *k, unsigned set)
{
	return (uint64_t *)((char *)k->sq + SQ_BYTES) + set * (CHUNK / 64);
}

/* The summary words of a set: a bit per chunk holding a member. */
static inline uint64_t *set_summary(const struct slab_class *k, unsigned set)
{
	return k->set_sum + (size_t)set * k->set_words;
}

/* Word w of the used bits of an empty slab: the slots past `slots` are set, so that they
 * are never handed out. */
static inline uint64_t tail_word(const struct slab_class *k, uint32_t w)
{
	return k->slots >= 64 * (w + 1) ? 0 : k->slots <= 64 * w ? ~(uint64_t)0 : ~(uint64_t)0 << (k->slots & 63);
}

/* A spill region: one more region of the window for a class whose home region is full
 * (its positions max_pos on, seg_pos of them). The table (roots.slab.spill, in the metadata)
 * has one entry per spill region of the window, in window order; an entry is taken once,
 * by one (arena, class), for good: address space a class used is never another's. Its
 * span decodes like a class's: offsets from span.base in [lo, hi) are the class's
 * positions there (base lies below the region by lo, so that offset / slab_bytes is the
 * class's position number), bounded by the region's own positions and what it mapped. */
struct slab_spill {
	struct slab_class *owner; /* NULL until taken; set once, release */
	struct area_span span;    /* read unlocked by decoding (atomic stores, span_write) */
	struct guard_region region; /* base = the region's first position; grows */
};
_Static_assert(CONFIG_SLAB_SPILL_REGIONS <= UINT16_MAX, "seg[] holds spill table indexes");

/* Arena 0 is opened at start-up, the others by the first thread sent there
 * (slab_arena_open). Bit a of slab_open_arenas: arena a is open, its classes may be set up
 * (each on its first slab). A pointer decoding into a class never set up is no live
 * block: its region is empty. (Defined in slab_class.c; set by slab_setup.c.) */
extern _Atomic uint32_t slab_open_arenas;
/* Bit c of slab_set_up_classes[a]: class c of arena a is set up (slab_class_setup). Sweeps
 * over all classes (decay, trim, exit checks, figures) read this instead of the structs,
 * so they neither lock nor fault in the struct of a class the program never used. (An
 * allocation's own class, a stray free, and the fork handlers of a threaded process
 * still touch its lock word.) */
extern _Atomic uint64_t slab_set_up_classes[CONFIG_SLAB_ARENAS];
_Static_assert(SC_COUNT <= 64, "slab_set_up_classes has a bit per class");
_Static_assert(CONFIG_SLAB_ARENAS >= 1 && CONFIG_SLAB_ARENAS <= 32, "slab_open_arenas has a bit per arena");

/* Acquire pairs with the release in slab_arena_open; a reader takes a class's lock before
 * reading its fields anyway. */
static inline bool arena_is_open(unsigned a)
{
	return atomic_load_explicit(&slab_open_arenas, memory_order_acquire) >> a & 1;
}

/* Class r (arena r / SC_COUNT) is set up; acquire pairs with slab_class_setup's release. */
static inline bool class_is_set_up(unsigned r)
{
	return atomic_load_explicit(&slab_set_up_classes[r / SC_COUNT], memory_order_acquire) >> (r % SC_COUNT) & 1;
}

/* --- locking (lock.h) ----------------------------------------------------------- */

static inline void class_lock(struct slab_class *k) { lock_take(&k->lock); }
static inline void class_unlock(struct slab_class *k) { lock_give(&k->lock); }

/* --- arithmetic and decoding ------------------------------------------------------ */

static inline uint32_t div32(uint32_t n, uint32_t d, uint64_t magic)
{
	if (d == 1) return n;
	uint32_t q = (uint32_t)(((unsigned __int128)magic * n) >> 64);
	invariant(q == n / d);
	return q;
}

static inline struct slab *desc(const struct slab_class *k, uint32_t pos)
{
	if (pos < FIRST_POSITIONS) return &k->first[(size_t)pos * SC_COUNT];
	return &k->dir[pos >> CHUNK_SHIFT][pos & (CHUNK - 1)];
}

/* The kinds of the slab at pos, whose descriptor is s: the descriptors of a chunk, or of
 * the arena's first positions, are followed by as many kind maps, in the same order
 * (have_desc, slab_setup.c). From s, not the directory: a batched free reads it
 * unlocked, having found s. */
static inline struct slot_kinds *kinds_of(const struct slab_class *k, struct slab *s, uint32_t pos)
{
	if (pos < FIRST_POSITIONS) {
		struct slab *block = k->first - k->cls;
		return (struct slot_kinds *)(block + (size_t)FIRST_POSITIONS * SC_COUNT) + (s - block);
	}
	struct slab *chunk = s - (pos & (CHUNK - 1));
	return (struct slot_kinds *)(chunk + CHUNK) + (pos & (CHUNK - 1));
}

/* A chunk's owner maps, after its descriptors' kind maps (parted classes), then the
 * partitions' bitmaps of its positions. */
static inline uint8_t *chunk_owners(const struct slab *chunk)
{
	return (uint8_t *)((const struct slot_kinds *)(chunk + CHUNK) + CHUNK);
}

/* A slab's owner map (parted classes): a bit a slot, set while the slot is free and its
 * partition's alone (a word per 64 slots: the OWNER_FREE bits of the bytes, gathered
 * so that a draw of a partition's slot and the sweeps of page_return.c look at those
 * slots alone), then a byte a slot, its owner (owners_of), in whole words. Sized by the
 * class: a slab of 64 slots writes 72 bytes, and the pages of maps a class in use
 * faults in were a quarter of what maps sized for the most slots (256) took. */
static inline size_t owner_map_bytes(uint32_t slots) { return 8u * ((slots + 63) / 64) + align_up((size_t)slots, 8); }
static inline size_t owner_stride(const struct slab_class *k) { return (size_t)k->owner_words * 8; }

/* The owner map of the slab at pos, whose descriptor is s: a chunk's own, or for the
 * first positions the class's column of the arena's rows (struct class_parts). */
static inline uint64_t *owner_map(const struct slab_class *k, const struct slab *s, uint32_t pos)
{
	if (pos < FIRST_POSITIONS) return (uint64_t *)(k->parts->first + (size_t)pos * roots.slab.owner_row);
	return (uint64_t *)(chunk_owners(s - (pos & (CHUNK - 1))) + (size_t)(pos & (CHUNK - 1)) * owner_stride(k));
}

/* Its bytes: slot i's owner at [i]. */
static inline uint8_t *owners_of(const struct slab_class *k, const struct slab *s, uint32_t pos)
{
	return (uint8_t *)(owner_map(k, s, pos) + k->nwords);
}

/* Partition p's bitmap of chunk c's positions: chunk 0's in the class's partition block,
 * another's after the chunk's owner maps. */
static inline uint64_t *part_set_bits(const struct slab_class *k, unsigned p, uint32_t c)
{
	if (!c) return k->parts->set0[p];
	return (uint64_t *)(chunk_owners(k->dir[c]) + CHUNK * owner_stride(k)) + p * (CHUNK / 64);
}

/* Partition p's free slot in a slab of k whose owner map is map (OWNER_FREE | p), from
 * slot `from` on and wrapping round; UINT32_MAX: none. Only the slots the map's bits
 * say are owned are looked at: a slab in p's set mostly holds p's. (A scan of the
 * bytes, eight a step, cost light's churn in a class of 64-slot slabs a fifth of its
 * instructions; one over the slab's quarantined slots, all of them under strong.) */
static inline uint32_t owned_slot(const struct slab_class *k, const uint64_t *map, unsigned p, uint32_t from)
{
	const uint8_t *own = (const uint8_t *)(map + k->nwords);
	uint32_t w = from >> 6;
	uint64_t first = ~(uint64_t)0 << (from & 63);
	for (uint32_t n = 0; n <= k->nwords; n++) {
		/* The first word from `from` on, and after the round its bits below it. */
		uint64_t m = map[w] & (n == 0 ? first : n == k->nwords ? ~first : ~(uint64_t)0);
		for (; m; m &= m - 1) {
			uint32_t i = (w << 6) + (uint32_t)__builtin_ctzll(m);
			if (own[i] == (OWNER_FREE | p)) return i;
		}
		w = w + 1 == k->nwords ? 0 : w + 1;
	}
	return UINT32_MAX;
}

/* Slot i of the slab whose owner map is map is free and its partition's (owned), or
 * not. */
static inline void owned_set(const struct slab_class *k, uint64_t *map, uint32_t i, unsigned p)
{
	map[i >> 6] |= (uint64_t)1 << (i & 63);
	((uint8_t *)(map + k->nwords))[i] = (uint8_t)(p | OWNER_FREE);
}

static inline void owned_clear(const struct slab_class *k, uint64_t *map, uint32_t i, unsigned p)
{
	map[i >> 6] &= ~((uint64_t)1 << (i & 63));
	((uint8_t *)(map + k->nwords))[i] = (uint8_t)p;
}

/* The bytes of a chunk of class k's descriptors: its head, the descriptors, their kinds
 * and, with partitions, their owner maps and the partitions' bitmaps. */
static inline size_t chunk_bytes(const struct slab_class *k)
{
	return CHUNK_HEAD_BYTES + CHUNK * (sizeof(struct slab) + sizeof(struct slot_kinds)) +
	       (k->parted ? CHUNK * owner_stride(k) + PART_SET_CHUNK_BYTES : 0);
}

/* Whether position pos has a descriptor yet (positions below hwm all do, but for a
 * guard alone in its chunk). */
static inline bool desc_exists(const struct slab_class *k, uint32_t pos)
{
	return pos < FIRST_POSITIONS || k->dir[pos >> CHUNK_SHIFT];
}

/* The spill region holding position pos (pos >= home_pos, below max_pos). */
static inline struct slab_spill *spill_of(const struct slab_class *k, uint32_t pos)
{
	return &roots.slab.spill[k->seg[div32(pos - k->home_pos, k->seg_pos, k->seg_magic)]];
}

/* The area holding position pos: its nursery cell, its region or a spill region; *off
 * is pos's offset from the area's base (pos * slab_bytes in the first two). */
static inline struct guard_region *area_of(struct slab_class *k, uint32_t pos, size_t *off)
{
	*off = (size_t)pos * k->slab_bytes;
	if (unlikely(pos >= k->home_pos)) {
		struct slab_spill *sp = spill_of(k, pos);
		*off -= sp->span.lo;
		return &sp->region;
	}
	return *off < k->nursery_bytes ? &k->nursery : &k->region;
}

/* The branch costs nothing a class that never spilled can measure: always taken the
 * same way. */
static inline uintptr_t slab_start(const struct slab_class *k, uint32_t pos)
{
	size_t off = (size_t)pos * k->slab_bytes;
	if (unlikely(pos >= k->home_pos)) return spill_of(k, pos)->span.base + off;
	return k->span[off < k->span[AREA_REGION].lo ? AREA_NURSERY : AREA_REGION].base + off;
}

/* Fresh slot i may have been handed out before and marked fresh when its last word's page
 * went back (struct slab's returned): it reads as zero unless a stale pointer wrote to it
 * since, which its allocation checks. A slot never handed out on such a page reads as
 * zero too, and is checked for nothing more than a returned one. */
static inline bool slot_maybe_returned(const struct slab_class *k, const struct slab *s, uint32_t i)
{
	size_t last = (size_t)(i + 1) * k->size - 8;
	return s->returned >> ((last >> k->page_shift) & 63) & 1;
}

/* Bytes of slot i that may be dirty (live) or that were wiped (not live). */
static inline size_t extent_of(const struct slab_class *k, const struct slab *s, uint32_t i)
{
	return k->track_extent ? MIN((size_t)s->extent[i] << k->extent_shift, (size_t)k->usable) : k->usable;
}

static inline void set_extent(const struct slab_class *k, struct slab *s, uint32_t i, size_t n)
{
	if (k->track_extent)
		s->extent[i] = (uint16_t)((MIN(n, (size_t)k->usable) + ((size_t)1 << k->extent_shift) - 1) >> k->extent_shift);
}

static inline void grow_extent(const struct slab_class *k, struct slab *s, uint32_t i, size_t n)
{
	if (n > extent_of(k, s, i)) set_extent(k, s, i, n);
}

/* The class owning spill region j of the window (NULL: not taken, or no such region)
 * and its span. */
static inline struct slab_class *spill_class_at(size_t j, const struct area_span **span)
{
	if (j >= roots.slab.nspill) return NULL;
	struct slab_spill *sp = &roots.slab.spill[j];
	*span = &sp->span;
	/* Acquire: the span and the class's geometry are seen as they were when it took it. */
	return __atomic_load_n(&sp->owner, __ATOMIC_ACQUIRE);
}

/* The class of an address in the slab window and the span of its area (its region, its
 * nursery cell or one of its spill regions) by which its position decodes; NULL when
 * its arena never opened or a is in no region, no cell and no spill region taken: then
 * nothing there was ever handed out, and no class struct is to be read. The place's
 * index, window region or nursery slot, is picked by mask (small churn frees into both
 * areas at random, so a branch would mispredict) and one load of the owner table, which
 * serves both, names the class. Spill regions follow the nursery's region in the
 * window: a pointer there takes the branch that was taken for none before. */
static inline struct slab_class *class_at(uintptr_t a, const struct area_span **span)
{
	const size_t n = (size_t)CONFIG_SLAB_ARENAS * SC_COUNT;
	size_t w = (a - roots.slab.base) >> roots.slab.region_shift;
#if !CONFIG_SLAB_NURSERY_PAGES
	/* Built without a nursery: the regions alone, but for the spill regions' test. */
	size_t r = roots.slab.owner[MIN(w, n)];
	if (unlikely(r >= n)) return w >= n ? spill_class_at(w - n, span) : NULL;
	struct slab_class *k = arena_is_open((unsigned)(r / SC_COUNT)) ? &roots.slab.classes[r] : NULL;
	*span = k ? &k->span[AREA_REGION] : NULL;
	return k;
#else
	/* Past the classes' regions (w >= n) the nursery's slot; n: in no slot (the slots
	 * end inside the nursery's region, and a wraps below it). */
	size_t slot = (a - roots.slab.nursery) >> roots.slab.slot_shift;
	size_t pick = -(size_t)(w >= n);
	unsigned area = w >= n;
	size_t r = roots.slab.owner[MIN((slot & pick) | (w & ~pick), n)]; /* masks: branch-free */
	if (unlikely(r >= n)) return w > n ? spill_class_at(w - n - 1, span) : NULL;
	struct slab_class *k = arena_is_open((unsigned)(r / SC_COUNT)) ? &roots.slab.classes[r] : NULL;
	*span = k ? &k->span[area] : NULL;
	return k;
#endif
}

/* a's offset from position 0 of the area whose span sp is, or SIZE_MAX when a is not
 * among that area's positions (the nursery's below nursery_bytes, the region's from
 * there up to home_pos, a spill region's own) or beyond what the area has mapped.
 * Relaxed loads (plain loads on every target): a batched free reads the span unlocked
 * (spans_update). */
static inline size_t position_offset(const struct area_span *sp, uintptr_t a)
{
	size_t lo = __atomic_load_n(&sp->lo, __ATOMIC_RELAXED), off = a - __atomic_load_n(&sp->base, __ATOMIC_RELAXED);
	return off - lo < __atomic_load_n(&sp->hi, __ATOMIC_RELAXED) - lo ? off : SIZE_MAX;
}

/* Where an address lies among its class's slabs (decode_slot). */
struct slot_place {
	struct slab *s; /* its slab's descriptor; NULL: among no slab in use (outside the
			 * area's positions or past what it mapped, at or past the high-water
			 * mark, or in a chunk an unlocked reader does not see yet) */
	uint32_t pos;   /* the slab's position */
	uint32_t i;     /* the slot's index in the slab: slots or more in the slab's tail */
	uint32_t at;    /* the address's offset in the slot: 0 at its start */
};

/* Who decodes: the class lock's holder, or a batched free without it, which reads the
 * high-water mark and the directory with acquire loads (fresh_slab, dir_room and
 * have_desc store them with release) and sees no slab in a chunk not there yet. */
enum decode_by { LOCK_HELD, NO_LOCK };

/* The one decoding of address a, in class k and its area's span sp (class_at), into its
 * slab and slot: two multiply-shift divisions. What the slab's state and the slot's bits
 * say of it is the caller's to judge (slot_check.h), in every build. The invariants
 * below are not: they check arithmetic on the class's geometry and directory, which live
 * in the metadata mappings, out of the reach of any write through a heap pointer (guard
 * pages around them, none of it inside a slab). musl's mallocng keeps its decoder's
 * checks on because its decoder starts from a header inside the heap that an overflow
 * can rewrite; this one starts from the address alone. Always inlined, `by` a constant:
 * out of line, its answer would live on the stack, and the stack protector would then
 * guard every free. */
static inline __attribute__((always_inline)) struct slot_place
decode_slot(const struct slab_class *k, const struct area_span *sp, uintptr_t a, enum decode_by by)
{
	struct slot_place p = {NULL, 0, 0, 0};
	size_t off = position_offset(sp, a);
	if (unlikely(off == SIZE_MAX)) return p;
	invariant(off >> k->page_shift <= UINT32_MAX); /* positions_cap */
	uint32_t pos = div32((uint32_t)(off >> k->page_shift), k->pages, k->pages_magic);
	if (unlikely(pos >= (by == NO_LOCK ? __atomic_load_n(&k->hwm, __ATOMIC_ACQUIRE) : k->hwm))) return p;
	invariant(off >= (size_t)pos * k->slab_bytes);
	invariant(by == NO_LOCK || pos < k->max_pos); /* max_pos is the lock's */
	if (by == NO_LOCK && pos >= FIRST_POSITIONS) {
		struct slab *chunk = __atomic_load_n(&__atomic_load_n(&k->dir, __ATOMIC_ACQUIRE)[pos >> CHUNK_SHIFT],
						     __ATOMIC_ACQUIRE);
		if (!chunk) return p;
		p.s = &chunk[pos & (CHUNK - 1)];
	} else {
		invariant(desc_exists(k, pos));
		p.s = desc(k, pos);
	}
	uint32_t in = (uint32_t)(off - (size_t)pos * k->slab_bytes);
	invariant(in < k->slab_bytes);
	p.pos = pos;
	p.i = div32(in, k->size, k->slot_magic);
	p.at = in - p.i * k->size;
	invariant(p.at < k->size);
	return p;
}

/* The address of slot i of the slab at pos: decode_slot's inverse. */
static inline uintptr_t slot_start(const struct slab_class *k, uint32_t pos, uint32_t i)
{
	invariant(i < k->slots);
	return slab_start(k, pos) + (size_t)i * k->size;
}

#if SLAB_FREE_BATCHES
/* The canary word of a slot waiting in a thread's free batch (batched_free.c): the
 * slab's canary with every byte but the leading (zero) one flipped. Swapped in by one
 * compare-and-swap when the slot is freed, so of two frees of a slot, from any threads,
 * exactly one succeeds; the other finds this value and reports a double free. Put back
 * when the batch enters the quarantine. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the canary's leading byte is its lowest");
#define BATCHED_FLIP (~(uint64_t)0xff)
static inline uint64_t batched_canary(const struct slab *s) { return s->canary ^ BATCHED_FLIP; }
#endif

/* The mapping behind a class's span (slab_object_size). */
static inline const struct guard_region *span_region(const struct slab_class *k, const struct area_span *sp)
{
	if (sp == &k->span[AREA_REGION]) return &k->region;
	if (sp == &k->span[AREA_NURSERY]) return &k->nursery;
	return &((const struct slab_spill *)((const char *)sp - offsetof(struct slab_spill, span)))->region;
}

/* The flags of a class's regions (its home region, nursery cell, spill regions): spans
 * open and close piecemeal, and under arm64 memory tagging they are mapped tagged. */
static inline uint32_t slab_region_flags(void) { return REGION_KEEP_ANON | (roots.mte ? REGION_TAGGED : 0); }

static inline void span_write(struct area_span *sp, uintptr_t base, size_t lo, size_t hi)
{
	__atomic_store_n(&sp->base, base, __ATOMIC_RELAXED);
	__atomic_store_n(&sp->lo, lo, __ATOMIC_RELAXED);
	__atomic_store_n(&sp->hi, hi, __ATOMIC_RELAXED);
}

/* The spans decoding goes by, after either area changed what it maps. Atomic stores: a
 * batched free reads them unlocked (a pointer it frees lies below what it reads, since
 * the span covered it when the slot was handed out; a span only grows). */
static inline void spans_update(struct slab_class *k)
{
	size_t nb = k->nursery_bytes;
	span_write(&k->span[AREA_REGION], k->region.base, nb, MAX(k->region.size, nb));
	span_write(&k->span[AREA_NURSERY], k->nursery.base, 0, MIN(k->nursery.size, nb));
}

/* A word of slot bits (used, quar) as the lock holder writes it. A batched free reads a
 * word of its slab's bits unlocked (an atomic load) while other slots of the slab
 * change: it needs the word written whole, which an aligned 64-bit store is on every
 * target (x86_64, arm64). Under ThreadSanitizer the store is atomic too, so that the
 * detector sees the intent; elsewhere a plain store lets the compiler keep the update a
 * single read-modify-write instruction (atomic stores cost every malloc and free a few
 * instructions more). */
#ifndef __has_feature
#define __has_feature(x) 0
#endif
static inline void bits_write(uint64_t *word, uint64_t v)
{
#if defined(__SANITIZE_THREAD__) || __has_feature(thread_sanitizer)
	__atomic_store_n(word, v, __ATOMIC_RELAXED);
#else
	*word = v;
#endif
}

/* 16 random bits from the class's generator: a ChaCha block serves many choices.
 * (Unused where neither random slot choice nor the slot quarantine is built: light.) */
static inline __attribute__((unused)) uint32_t rand16(struct slab_class *k) { return random_u16(k->rnd); }

static inline cold __attribute__((noreturn)) void die(struct slab_class *k, enum report_op op, enum report_kind kind,
							const void *p)
{
	class_unlock(k);
	report_fatal(op, kind, p);
}

#endif
