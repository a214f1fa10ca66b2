/*
 * init.h — start-up and the read-only roots.
 *
 * Invariants:
 *  - Every pointer into the metadata region that is held in a global lives in `ro`,
 *    and `ro` is made read-only once initialisation finishes (where the page size
 *    lets it sit alone on a page): an attacker who can write a global cannot
 *    redirect rampart's tables.
 *  - rampart_ready() is one acquire load; initialisation runs once, on first use,
 *    without calling malloc or dlsym. Only the options are read earlier, when the
 *    library is loaded (unless a call came first), so that a program that never
 *    allocates still shows help=1, verbose=1 and bad entries; verbose=1 starts
 *    everything then, to say what start-up chose.
 *  - A passthrough process (policy.h, passthrough.h) never becomes READY: its state is
 *    PASSTHROUGH from the first call on, so rampart_ready() is false and every entry
 *    point hands the call to the C library on its cold path. The fast path of a
 *    process that runs rampart is unchanged: the same one load and one branch.
 */
#ifndef RAMPART_INIT_H
#define RAMPART_INIT_H

#include <stdatomic.h>

#include "base/common.h"
#include "front/options.h"
#include "slab/sizeclass.h"

struct meta_header;
struct large_state;
struct slab_class;
struct slab_spill;

/* What the slab fast paths need (see slab.h). */
struct slab_roots {
	uintptr_t base;             /* the slab window (set aside, mapped as regions grow) */
	size_t size;
	unsigned region_shift;      /* log2 of one (arena, class) region */
	unsigned arenas;
	struct slab_class *classes; /* arenas * SC_COUNT, in region order */
	char *arena_mem;            /* arenas * arena_mem_bytes: each arena's block of its
				     * classes' first descriptors, directories, quarantines */
	size_t arena_mem_bytes;
	/* The nursery: one cell of 2^cell_shift bytes per (arena, class), arena by arena,
	 * after the regions (cell_shift 0: none). cell_region[] names each cell's (arena,
	 * class) by its region number (the classes of an arena in a random order): one load
	 * decodes a pointer there. */
	uintptr_t nursery;
	unsigned cell_shift;
	struct random_source *seeds; /* seeds every class's generator (random.h) */
	/* Spill regions: nspill more regions after the nursery's (after the classes'
	 * regions without a nursery), each taken for good by a class whose own region is
	 * full; the table of who took which lives in the metadata (slab_class.h). */
	struct slab_spill *spill;
	unsigned nspill;
	uint16_t cell_region[CONFIG_SLAB_ARENAS * SC_COUNT + 1]; /* the last: none */
};

struct rampart_roots {
	struct meta_header *meta;
	struct large_state *large;
	struct slab_roots slab;
	struct options opt;
};

#define RO_ALIGN 4096
union ro_page {
	struct rampart_roots roots;
	char pad[RO_ALIGN];
};
extern union ro_page ro_page;
#define ro (ro_page.roots)

extern _Atomic int rampart_state;
enum { STATE_NEW, STATE_READY, STATE_PASSTHROUGH };

must_check bool rampart_init_slow(void);
/* After rampart_ready() said false: is this a passthrough process (rather than one whose
 * initialisation failed)? Both the state and the read-only roots must say so. */
static inline bool rampart_passthrough(void)
{
	return atomic_load_explicit(&rampart_state, memory_order_acquire) == STATE_PASSTHROUGH && ro.opt.passthrough;
}
static inline must_check bool rampart_ready(void)
{
	if (likely(atomic_load_explicit(&rampart_state, memory_order_acquire) == STATE_READY)) return true;
	return rampart_init_slow();
}

#endif
