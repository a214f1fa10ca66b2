/*
 * roots.h — the read-only roots: every pointer into the metadata region that a global
 * holds, and the process's options, on a page of their own; and the state of start-up.
 *
 * Invariants:
 *  - Every pointer into the metadata region that is held in a global lives in `roots`,
 *    and `roots` is made read-only once initialisation finishes (where the page size
 *    lets it sit alone on a page): an attacker who can write a global cannot
 *    redirect rampart's tables. Only front/init.c writes it, before that.
 *  - rampart_state only moves from STATE_NEW to STATE_READY or STATE_PASSTHROUGH, once.
 *  - Data only: nothing here calls anything; this file includes nothing above base/.
 */
#ifndef RAMPART_ROOTS_H
#define RAMPART_ROOTS_H

#include <stdatomic.h>

#include "base/common.h"
#include "base/option_table.h"

struct meta_header;
struct large_state;
struct slab_class;
struct slab_spill;
struct random_source;

/* The number of slab size classes, SC_COUNT (slab/sizeclass.h lays them out; front/init.c
 * checks that the two agree): the table of owners below is sized by it. */
#define ROOTS_SLAB_CLASSES 59u

/* What the slab fast paths need (see slab.h). */
struct slab_roots {
	uintptr_t base;             /* the slab window (set aside, mapped as regions grow) */
	size_t size;
	unsigned region_shift;      /* log2 of one (arena, class) region */
	unsigned arenas;
	struct slab_class *classes; /* arenas * SC_COUNT: arena * SC_COUNT + class */
	char *arena_mem;            /* arenas * arena_mem_bytes: each arena's block of its
				     * classes' first descriptors, directories, quarantines */
	size_t arena_mem_bytes;
	/* Where each (arena, class) lives, one permutation drawn at start-up for both: the
	 * window's region j (j < arenas * classes) and the nursery's slot j are owner[j]'s
	 * (its index in `classes`: arena * classes + class); owner[arenas * classes] is nobody's,
	 * class_at's answer outside both. One load decodes a pointer in either. The nursery
	 * (slot_shift 0: none) is a run of those slots of 2^slot_shift bytes each from
	 * `nursery`, in the window's region after the classes'; a class's cell lies at a
	 * random place in its slot. */
	uintptr_t nursery;
	unsigned slot_shift;
	struct random_source *seeds; /* seeds every class's generator (random.h) */
	/* Spill regions: nspill more regions after the nursery's (after the classes'
	 * regions without a nursery), each taken for good by a class whose own region is
	 * full; the table of who took which lives in the metadata (slab_class.h). */
	struct slab_spill *spill;
	unsigned nspill;
	/* With call-site partitions: the bytes of a row of owner maps, position p of every
	 * class of an arena (slab/slab_class.h, struct class_parts). */
	size_t owner_row;
	uint16_t owner[CONFIG_SLAB_ARENAS * ROOTS_SLAB_CLASSES + 1];
};

struct rampart_roots {
	struct meta_header *meta;
	struct large_state *large;
	struct slab_roots slab;
	struct options opt;
	/* The secret of the call-site partitions (base/partition.h), drawn at start-up when
	 * opt.partitions > 1; the two multipliers odd. */
	uint64_t part_key[3];
	unsigned mte; /* enum mte_state (os/mte.h): whether slab memory is tagged, the checks' mode */
};

#define ROOTS_PAGE_BYTES 4096
union roots_page {
	struct rampart_roots roots;
	char pad[ROOTS_PAGE_BYTES];
};
_Static_assert(sizeof(struct rampart_roots) <= ROOTS_PAGE_BYTES, "roots must fit one page");
extern union roots_page roots_page;
#define roots (roots_page.roots)

extern _Atomic int rampart_state;
enum { STATE_NEW, STATE_READY, STATE_PASSTHROUGH };

#endif
