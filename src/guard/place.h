/*
 * place.h — where regions go (place.c): the windows that growing regions live in, and
 * the large area of fresh large regions.
 *
 * Invariants:
 *  - A window is set aside (never mapped here) at start-up, at most WINDOWS_MAX of them,
 *    never overlapping; the list only grows, except that the last one may be given back
 *    while start-up fails (guard_window_release).
 *  - No mapping rampart makes outside a window lies inside one (guard_in_window: the
 *    guard layer's fresh mappings check it).
 *  - Nothing here maps, protects or advises memory; it reads what is free.
 */
#ifndef RAMPART_GUARD_PLACE_H
#define RAMPART_GUARD_PLACE_H

#include "base/common.h"

/* Where fresh large regions go: their own area of the address space, away from what the
 * kernel places (libraries, stacks, thread-local storage, the program's own mappings).
 * Its start is a random page between 1/2 and 2/3 - 1/64 of the address space (where Linux
 * places nothing unless asked for that address: its mmap area is near the top, PIE
 * programs and their heap at 2/3, the legacy layout's mmap area grows up from 1/3 or
 * 1/4, the windows lie below 1/4), chosen at the first fresh region of a process, and
 * again in every child of fork (the caller's generator's fork generation says so).
 * Regions are laid end to end upward from there, so neighbours merge into one VMA as
 * the kernel's placement did; the random guards of each region are the gaps between
 * blocks. Nothing is reserved: the area is only checked free (os_range_free), a stretch
 * at a time ahead of the regions, and where something is there (or at the top of the
 * area) the next region goes to the lowest free span above it (or from the bottom of
 * the area) with clear bytes free on each side. Callers serialise calls on one area. */
struct guard_area {
	uintptr_t next;      /* where the next region starts; 0: choose a start */
	uintptr_t checked;   /* [next, checked) is known free; below next: check from next - clear */
	uint32_t generation; /* the fork generation the start was chosen in */
};
/* Where to map a fresh region of size bytes (guard_map_at), with clear bytes free of any
 * foreign mapping on each side; 0 when the area has no room for it (a sanitizer owns
 * the address space, size is beyond a quarter of the area, or no free span is left):
 * the kernel's choice then. r is a random draw, used when a start is chosen. */
uintptr_t guard_area_take(struct guard_area *a, size_t size, size_t clear, uint32_t generation, uint64_t r);
/* A region ending at end was mapped where guard_area_take said: the next one goes above it. */
void guard_area_placed(struct guard_area *a, uintptr_t end);
/* The kernel refused the mapping there: look again before the next one. */
void guard_area_refused(struct guard_area *a);
/* Address space for regions that grow in place: size bytes at a random page in the low
 * part of the address space, where the kernel places nothing unless asked for that
 * address, and where nothing is mapped now. Nothing is mapped: regions inside it start
 * empty (guard_start) and grow with guard_grow, so the process is charged (RLIMIT_AS,
 * mlockall) only for what it uses. guard_map never places a mapping inside a window.
 * False when no such span exists (the caller asks for less). */
must_check bool guard_window(size_t size, uintptr_t *base);
/* Where guard_window puts a window of size bytes in [lo, hi), given the n windows taken
 * and a random r: one of the page-aligned starts whose window meets none of them, each
 * as likely (r modulo their count); 0 when there is none. */
#define WINDOWS_MAX 8
struct guard_span {
	uintptr_t lo, hi;
};
uintptr_t guard_window_pick(const struct guard_span *taken, unsigned n, uintptr_t lo, uintptr_t hi, size_t size,
			    uint64_t r);
/* Give up the window most recently set aside (start-up failed after choosing it; the
 * caller has unmapped whatever it mapped there). */
void guard_window_release(uintptr_t base);
/* Does [lo, hi) meet a window? */
bool guard_in_window(uintptr_t lo, uintptr_t hi);

#endif
