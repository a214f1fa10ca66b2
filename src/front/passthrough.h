/*
 * passthrough.h — the C library's own allocator, for programs that the policy (or their
 * environment) exempts from rampart: `passthrough` in /etc/rampart.conf.
 *
 * Invariants:
 *  - The decision is taken once, at the first call into rampart and before rampart maps
 *    anything; it holds for the life of the process, fork children included (they
 *    inherit the state). So every pointer such a process frees came from the C library,
 *    and no rampart reservation exists in it.
 *  - The core calls go to glibc's exported __libc_malloc, __libc_free, __libc_calloc,
 *    __libc_realloc, __libc_memalign, __libc_valloc, __libc_pvalloc (weak references:
 *    a static link never pulls glibc's malloc.o in beside rampart's, and musl has none),
 *    so no lookup happens on those paths and nothing can recurse.
 *  - The rest (malloc_usable_size, malloc_trim, mallinfo2, malloc_info, malloc_stats)
 *    glibc does not export under a second name: they are looked up with
 *    dlsym(RTLD_NEXT) on their first use, which may itself allocate — harmlessly, since
 *    allocation then goes straight to glibc. Where there is no dlsym in the C library
 *    (glibc < 2.34) they answer as for an empty heap.
 *  - passthrough_available() is false outside glibc and in static programs: the caller
 *    then keeps rampart and says why.
 */
#ifndef RAMPART_PASSTHROUGH_H
#define RAMPART_PASSTHROUGH_H

#include <stdio.h>

#include "base/common.h"

/* Are the C library's core entry points there to hand calls to? */
bool passthrough_available(void);

void *passthrough_alloc(size_t size, size_t align, bool zero);
void passthrough_free(void *p);
void *passthrough_realloc(void *p, size_t size);
void *passthrough_valloc(size_t size);
void *passthrough_pvalloc(size_t size);
size_t passthrough_usable_size(void *p);
int passthrough_trim(size_t pad);
void passthrough_stats(void);

#ifdef __GLIBC__
#include <malloc.h>
struct mallinfo2 passthrough_mallinfo2(void);
struct mallinfo passthrough_mallinfo(void);
int passthrough_info(int options, FILE *fp);
int passthrough_mallopt(int param, int value);
#endif

#endif
