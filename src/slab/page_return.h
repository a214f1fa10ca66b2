/*
 * page_return.h — the pages of free slots in open slabs, given back to the kernel a while
 * after the last free into their slab (page_return.c). A slab kept open for one live slot
 * otherwise keeps every page its other slots ever used resident.
 *
 * Invariants:
 *  - Only pages every slot overlapping which is free (neither live nor quarantined) go
 *    back, in classes whose slabs keep a per-slot extent (at most SLAB_EXTENT_SLOTS
 *    slots: 2 KiB and up); their contents were zero by the wipe at free.
 *  - Before a page goes back, each free slot with bytes on it is checked as its next
 *    allocation would check it: a write after free found then is fatal, not erased.
 *  - A slot whose canary word went back with a page is marked returned (fresh bit set,
 *    extent EXTENT_RETURNED): its neighbours expect no canary there, and its next
 *    allocation checks the whole slot zero, so a write through a stale pointer after the
 *    return (which brings the page back) is still caught there.
 *  - Called with the class lock held.
 */
#ifndef RAMPART_PAGE_RETURN_H
#define RAMPART_PAGE_RETURN_H

#include "slab/slab_class.h"

/* Give back what is due: the free pages of slabs freed into before the last sweep (all of
 * them when force: malloc_trim), at most once per slab_return_ms unless forced. */
void slab_return_pages(struct slab_class *k, uint64_t now, bool force);

/* A slot was freed into s: its pages go back after a sweep or two. */
static inline void slab_pages_freed(struct slab *s) { s->pages = PAGES_FREED; }

#endif
