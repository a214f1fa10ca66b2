/*
 * page_return.h — the pages of free slots in open slabs, given back to the kernel a while
 * after the last free into their slab (page_return.c). A slab kept open for one live slot
 * otherwise keeps every page its other slots ever used resident.
 *
 * Invariants:
 *  - Only pages every slot overlapping which is free (neither live nor in the slot
 *    quarantine; a free slot its partition owns is free) go back, of slabs with a free slot and of empty slabs kept open, in
 *    every class but the zero one; with zero-on-free their contents were zero by the
 *    wipe at free.
 *  - Before a page goes back, each free slot with bytes on it is checked as its next
 *    allocation would check it: a write after free found then is fatal, not erased.
 *  - A slot whose canary word went back with a page is marked fresh, and the page of its
 *    last word returned (struct slab's returned): its neighbours expect no canary
 *    there, and its next allocation checks the whole slot zero (slot_maybe_returned),
 *    so a write through a stale pointer after the return (which brings the page back)
 *    is still caught there.
 *  - Called with the class lock held.
 */
#ifndef RAMPART_PAGE_RETURN_H
#define RAMPART_PAGE_RETURN_H

#include "slab/slab_class.h"
#include "slab/slab_sets.h"

/* Give back what is due: the free pages of slabs freed into before the last sweep (all of
 * them when force: malloc_trim, and when the class handed out nothing since its last
 * sweep), at most once per slab_return_ms unless forced. The pages that went back
 * (malloc_trim's answer counts them). */
size_t slab_return_pages(struct slab_class *k, uint64_t now, bool force);

/* A slot went back to slab pos: its pages go back after a sweep or two. In churn the slab
 * is marked already: one load. */
static inline void slab_pages_freed(struct slab_class *k, uint32_t pos, struct slab *s)
{
	if (likely(s->pages == PAGES_FREED)) return;
	if (s->pages == PAGES_KEPT && k->open_slabs && roots.opt.slab_return_ms) set_add(k, SET_DIRTY, pos);
	s->pages = PAGES_FREED;
}

/* Slab pos closes (its pages go back with it): no longer dirty. */
static inline void slab_pages_closed(struct slab_class *k, uint32_t pos, struct slab *s)
{
	if (s->pages != PAGES_KEPT) set_remove(k, SET_DIRTY, pos);
	s->pages = PAGES_KEPT;
}

#endif
