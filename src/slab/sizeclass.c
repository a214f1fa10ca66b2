/*
 * sizeclass.c — slab geometry. Pure arithmetic (no allocator state), so the
 * documentation table (test/tools/sizeclass_table.c) is generated from this code.
 *
 * Why these slab sizes: a slab should hold enough slots that random slot selection
 * has a real choice (SLAB_TARGET_BYTES worth, at least SLAB_MIN_SLOTS slots, at most
 * SLAB_MAX_SLOTS), and should waste little to page rounding. Bigger slabs than that
 * would only hold more memory per partially used slab, so among the page counts from
 * the minimum up to twice it we take the one with the least waste, preferring the
 * smaller slab unless a bigger one wastes clearly less.
 */
#include "slab/sizeclass.h"

/* Bytes of slots a slab aims to hold: 64 KiB keeps big classes at a handful of slots. */
#define SLAB_TARGET_BYTES 65536u
/* ...but no class needs more than this many slots for selection to be random enough. */
#define SLAB_TARGET_SLOTS 32u
/* ...and every class has a few, even where that makes the slab bigger than the target:
 * with one slot a slab, choosing a slot is no choice, and every free of the class
 * empties a slab (a close and a reopen, a system call and page faults, per pair). */
#define SLAB_MIN_SLOTS 4u

/* The fewest pages a slab of slots of `size` bytes takes: room for the slots it aims at. */
static size_t min_pages_of(size_t size, size_t page)
{
	size_t want = SLAB_TARGET_BYTES / size;
	if (want > SLAB_TARGET_SLOTS) want = SLAB_TARGET_SLOTS;
	if (want < SLAB_MIN_SLOTS) want = SLAB_MIN_SLOTS;
	return (want * size + page - 1) / page;
}

void sc_geometry(unsigned c, size_t page, struct sc_geometry *g)
{
	size_t size = sc_size(c);
	size_t min_pages = min_pages_of(size, page);
	size_t best_pages = min_pages, best_waste = (size_t)-1;
	for (size_t p = min_pages; p <= 2 * min_pages; p++) {
		size_t bytes = p * page, slots = bytes / size;
		if (slots > SLAB_MAX_SLOTS) slots = SLAB_MAX_SLOTS;
		size_t waste = bytes - slots * size;
		/* Compare waste fractions (waste / bytes); a bigger slab must beat the best
		 * so far by more than 1/64 of a slab to be worth its size. */
		if (best_waste == (size_t)-1 ||
		    waste * best_pages * 64 + p * page < best_waste * p * 64) {
			best_pages = p;
			best_waste = waste;
		}
	}
	size_t slots = best_pages * page / size;
	if (slots > SLAB_MAX_SLOTS) slots = SLAB_MAX_SLOTS;
	g->size = (uint32_t)size;
	g->usable = (uint32_t)sc_usable(c);
	g->slots = (uint32_t)slots;
	g->pages = (uint32_t)best_pages;
	if (c == 0) { /* zero class: nothing is ever opened; one page of 16-byte slots */
		g->slots = (uint32_t)(page / 16 < SLAB_MAX_SLOTS ? page / 16 : SLAB_MAX_SLOTS);
		g->pages = 1;
	}
}

uint32_t sc_slots_most(unsigned c, size_t page)
{
	size_t size = sc_size(c), slots = 2 * min_pages_of(size, page) * page / size;
	if (c == 0) slots = page / 16; /* sc_geometry's one page */
	return (uint32_t)(slots < SLAB_MAX_SLOTS ? slots : SLAB_MAX_SLOTS);
}
