/*
 * vma_budget.h — how many kernel mappings (VMAs) the process holds, and whether a guard
 * may cost more of them. Past vm.max_map_count (65530 by default) the kernel refuses
 * every new mapping, the program's own included, so a guard that costs a VMA is made
 * only while the process stays clear of the limit.
 *
 * Invariants:
 *  - Whatever changes how many VMAs rampart's mappings make says so where it does it,
 *    with vma_add: a growing region's new space (guard.c), a slab position's span turning
 *    PROT_NONE or read-write between its neighbours (slab_life.c), a large block's guards
 *    while it lives (large.c). What gives them back takes the same number off.
 *  - vma_count() is the process's VMAs at the last recount of /proc/self/maps plus what
 *    was added since (before the first recount: what rampart counted). Merges and splits
 *    nobody counts (large regions laid end to end, the program's own mappings) are put
 *    right by a recount of /proc/self/maps, once per a sixteenth of the limit added or
 *    taken off since the last one (a 128th near a threshold), never while rampart's
 *    own count stays below a thousand.
 *  - The answer only ever weakens a guard near the limit, never fails an allocation:
 *    slab guards and splitting closes stop at three quarters of the limit, large
 *    blocks' guards at seven eighths; the last eighth is the program's. What the
 *    protections cost by themselves (vma_add_guards) is held to a quarter of the limit
 *    and a bit for large blocks, less for slabs: the rest is for what the blocks cost
 *    whatever their guards.
 *  - A guard left out is counted (vma_omitted) and the first one is said on stderr,
 *    whatever the options; once the count falls again, guards come back.
 */
#ifndef RAMPART_VMA_BUDGET_H
#define RAMPART_VMA_BUDGET_H

#include "base/common.h"

/* What a guard's VMAs are for: slab guards (and closes that split a slab area) are
 * thinned and left out first, large blocks' guards last. */
enum vma_use { VMA_SLAB, VMA_LARGE };

/* rampart's mappings now make n more VMAs (n < 0: fewer). */
void vma_add(long n);
/* The same, for VMAs a protection makes by itself (a PROT_NONE guard or closed slab beside
 * open memory): they also count against the protections' own share (guard_cap). */
void vma_add_guards(long n);
long vma_guards(void);
/* May a guard of this use cost n more VMAs? False near the limit (after a recount, where
 * one is due): the caller leaves the guard out and says so with vma_left_out. */
bool vma_room(enum vma_use use, unsigned n);
/* The share of its threshold the count has reached, in sixteenths (0..16+): slab guards
 * come further apart as it rises (slab_life.c). 0 while nothing is near. */
unsigned vma_pressure(void);
/* A guard was left out for want of VMAs: counted, and the first said on stderr. */
void vma_left_out(void);
unsigned long vma_omitted(void);
/* The process's VMAs as counted (see the invariants), and what rampart counted itself. */
long vma_count(void);
long vma_counted(void);
/* Count the process's VMAs again now (/proc/self/maps); tests and the reports. */
void vma_recount(void);
/* vm.max_map_count, read once. */
unsigned long vma_limit(void);

#endif
