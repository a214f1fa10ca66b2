/*
 * slab_stats.c — the figures of each class (statistics, malloc_info) and malloc_trim's
 * closing of empty slabs. Read (and, for trim, closed) under each class lock, like any
 * slow path: every figure is derived from the descriptors, but the allocations, which
 * the fast paths count in the class's tally (class_tally.h), and the blocks by call-site
 * partition, from the owner maps (slab_class.h): nothing is counted for them as blocks
 * come and go.
 */
#include "slab/slab_class.h"

#include <string.h>

#include "base/procmaps.h"
#include "slab/batched_free.h"
#include "slab/class_tally.h"
#include "slab/slab_life.h"
#include "slab/slot_quarantine.h"

/* Slab pos's blocks by partition (class lock held; an open slab of a parted class): a
 * live slot (used, not quarantined: a slot waiting in a thread's free batch too, as the
 * class's live figure counts it) by its owner byte, written at its hand-out; a free slot
 * its partition owns by its bit in the owner map. An empty slab holds owned slots only. */
static void slab_part_figures(const struct slab_class *k, const struct slab *s, uint32_t pos,
			      struct slab_part_figures *parts)
{
	const uint64_t *map = owner_map(k, s, pos);
	const uint8_t *own = owners_of(k, s, pos);
	for (uint32_t w = 0; w < k->nwords; w++) {
		/* The used bits past the slab's last slot are set: not slots. */
		uint64_t live = s->state == SLAB_ACTIVE ? s->bits[w].used & ~s->bits[w].quar & ~tail_word(k, w) : 0;
		for (; live; live &= live - 1) {
			unsigned p = own[w * 64 + (uint32_t)__builtin_ctzll(live)];
			invariant(p < parts->partitions);
			parts->live[p]++;
		}
		for (uint64_t m = map[w]; m; m &= m - 1) {
			unsigned p = own[w * 64 + (uint32_t)__builtin_ctzll(m)] & ~OWNER_FREE;
			invariant(p < parts->partitions);
			parts->owned[p]++;
		}
	}
}

/* Class k's figures added to *f, and with parts (a parted class) its blocks by partition. */
static void class_figures_locked(const struct slab_class *k, struct slab_class_figures *f,
				 struct slab_part_figures *parts)
{
	for (uint32_t pos = 0; pos < k->hwm; pos++) {
		if (!desc_exists(k, pos)) { /* a chunk holding only a guard position */
			pos |= CHUNK - 1;
			continue;
		}
		const struct slab *s = desc(k, pos);
		if (s->state == SLAB_ACTIVE) {
			size_t quar = 0;
			for (uint32_t w = 0; w < k->nwords; w++) quar += (size_t)__builtin_popcountll(s->bits[w].quar);
			/* A free slot its partition owns is used and quarantined in the bits
			 * (nown of them): free here. */
			f->slabs_active++;
			f->live += s->nused - quar;
			f->quarantined += quar - s->nown;
			f->free += k->slots - s->nused + s->nown;
		} else if (s->state == SLAB_EMPTY) {
			f->slabs_empty++;
			f->free += k->slots;
		} else if (s->state == SLAB_CLOSED) {
			f->slabs_closed++;
		}
		if (parts && (s->state == SLAB_ACTIVE || s->state == SLAB_EMPTY)) slab_part_figures(k, s, pos, parts);
	}
}

void slab_class_figures(unsigned c, struct slab_class_figures *f, struct slab_part_figures *parts)
{
	*f = (struct slab_class_figures){0};
	struct sc_geometry g; /* every class's, set up yet or not */
	sc_geometry(c, os_page, &g);
	f->slot_size = g.size;
	f->usable = g.usable;
	f->slab_bytes = c ? (size_t)g.pages * os_page : 0;
	if (parts) *parts = (struct slab_part_figures){.partitions = class_parted(c) ? (unsigned)roots.opt.partitions : 0};
	for (unsigned a = 0; a < roots.slab.arenas; a++) {
		if (!class_is_set_up(a * SC_COUNT + c)) continue; /* no slab yet */
		struct slab_class *k = &roots.slab.classes[a * SC_COUNT + c];
		class_lock(k);
		class_figures_locked(k, f, parts && k->parted ? parts : NULL);
		f->allocs += tally_of(k)->allocs;
		class_unlock(k);
	}
	/* Every slot handed out is live, or was freed by the program (a slot waiting in a
	 * thread's batch of frees counts as live, as its bits say, until the batch enters). */
	f->frees = f->allocs - f->live;
}

/* Each mapping in the window belongs to the class whose area (region, nursery cell or
 * spill region) it lies in: the areas are apart (each has a closed page below its first
 * slab and above its last, and unmapped space around), so a mapping never holds two.
 * Its last page decodes it: the closed page below an area's first slab may lie in the
 * region's guard area, which decodes like the rest of the region but is no slab. A
 * foreign mapping placed in the window by an address hint beside no area decodes to no
 * class, or lies outside its class's mapped area, and is left out. */
bool slab_resident(size_t *resident)
{
	memset(resident, 0, SC_COUNT * sizeof *resident);
	struct smaps_reader r;
	if (!smaps_open(&r)) return false;
	struct smaps_entry e;
	while (smaps_next(&r, &e)) {
		if (!e.rss || !slab_contains((const void *)e.start) || !slab_contains((const void *)(e.end - 1))) continue;
		const struct area_span *span;
		struct slab_class *k = class_at(e.end - 1, &span);
		if (!k) continue;
		class_lock(k); /* the area grows under it */
		const struct guard_region *g = span_region(k, span);
		bool inside = e.start >= g->base - os_page && e.end <= g->base + g->size;
		class_unlock(k);
		if (inside) resident[(size_t)(k - roots.slab.classes) % SC_COUNT] += e.rss;
	}
	smaps_close(&r);
	return true;
}

/* Close the empty slabs a class keeps open (highest first, as slab_emptied does when
 * over its budget), drop the budget back to its floor, and give back the pages of free
 * slots in its open slabs; the bytes released. Stops closing at the first slab the
 * kernel cannot close. */
static size_t trim_class(struct slab_class *k)
{
	size_t released = 0;
	class_lock(k);
	slot_quarantine_let_go(k); /* it may be the last slot of an empty slab */
	k->empty_max = k->empty_floor;
	k->peak_now = k->peak_prev = k->nactive;
	while (k->nset[SET_EMPTY] && slab_close_highest_empty(k)) released += k->slab_bytes;
	/* The free slots' pages of its open slabs (and of any empty slab the kernel would
	 * not close now): memory given back as much as a closed slab's, so counted too
	 * (malloc_trim answers 1 when anything went, as glibc's does). */
	released += slab_return_pages(k, os_now_ms(), true) * os_page;
	class_unlock(k);
	return released;
}

size_t slab_trim(void)
{
	size_t released = 0;
#if SLAB_FREE_BATCHES
	slab_batch_flush_mine(); /* before the classes let their held slots go */
#endif
	unsigned n = roots.slab.arenas * SC_COUNT;
	for (unsigned r = 0; r < n; r++)
		if (class_is_set_up(r) && r % SC_COUNT) released += trim_class(&roots.slab.classes[r]);
	return released;
}

