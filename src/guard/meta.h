/*
 * meta.h — the isolated metadata region: every descriptor, table and quarantine
 * rampart keeps lives here, in one region that grows inside its own window of address
 * space at a random address away from user memory, with a closed guard page after each
 * allocation.
 *
 * Invariants:
 *  - User memory never contains metadata; metadata pointers point only in here.
 *  - meta_alloc returns zeroed, page-aligned memory followed by a guard page.
 *  - Internally locked: safe to call from any module under its own lock, as long as
 *    the meta lock is always the innermost lock taken.
 */
#ifndef RAMPART_META_H
#define RAMPART_META_H

#include "base/common.h"

struct meta_header;
/* The region's header (the root init.c keeps, which meta_alloc reads), or NULL when no
 * window or no memory is left. */
must_check struct meta_header *meta_init(void);
/* NULL when the window or the kernel is out of memory. */
void *meta_alloc(size_t bytes);
void meta_free(void *p, size_t bytes);
/* n allocations (at most META_MANY_MAX) at once, each as from meta_alloc (zeroed, its own
 * guard page after it), into out[]; false with none made. Fresh space is opened and its
 * guards closed with two system calls for all of them, not two each: the set-up every
 * process pays. */
#define META_MANY_MAX 8
bool meta_alloc_many(const size_t *bytes, void **out, unsigned n);
/* Is p inside the metadata region? (A user pointer there is an invalid free.) With the
 * metadata lock held: the region's size grows under it. */
bool meta_contains(const void *p);

void meta_lock(void);
void meta_unlock(void);
void meta_reset_lock(void); /* in the child after fork */

#endif
