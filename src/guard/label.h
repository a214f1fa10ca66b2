/*
 * label.h — the names rampart gives its mappings in /proc/PID/maps ("rampart:large", ...;
 * PR_SET_VMA_ANON_NAME, CONFIG_LABEL_MEMORY), so that a reader of the maps or a core dump
 * tells rampart's memory from the program's.
 *
 * Invariants:
 *  - Whole regions only, never a sub-span: a label never splits a VMA. The one exception
 *    is a span a fresh mapping replaced, which gets its region's name again (label_again):
 *    left unnamed it would stay a VMA apart from its neighbours.
 *  - The first refusal switches labelling off for the process: it would cost a failing
 *    system call per mapping.
 *  - A region remembers its name by number in the LABEL bits of its flags (0: none);
 *    number n names the n-th name registered, and a registered name never changes. At
 *    most LABEL_NAMES names: beyond them a mapping is still named, but a replaced span of
 *    it is not named again.
 *  - Names are string constants: the table keeps the pointer.
 */
#ifndef RAMPART_LABEL_H
#define RAMPART_LABEL_H

#include "base/common.h"

/* Bits of a region's flags (guard.h) holding the number of its name, 0 = none. */
#define REGION_LABEL_SHIFT 8
#define REGION_LABEL_MASK (0xfu << REGION_LABEL_SHIFT)

/* Name the mapping [p, p + len), a whole region (name NULL: leave it unnamed); flags
 * are the region's, returned with the name's number where the kernel took it. */
uint32_t label_region(void *p, size_t len, const char *name, uint32_t flags);
/* Name [p, p + len), a span a fresh mapping replaced, as flags say its region is named. */
void label_again(uint32_t flags, void *p, size_t len);

#endif
