/*
 * api.h — internal names of the public allocation functions, for the other entry
 * points (the C++ operators) to call.
 *
 * Invariant: these are hidden aliases of the exported definitions in api.c, so a call
 * binds to rampart itself. Calling `malloc` by its public name would go through the
 * PLT/GOT and could reach another allocator interposed in front of rampart, pairing
 * its blocks with our frees.
 */
#ifndef RAMPART_API_H
#define RAMPART_API_H

#include "base/common.h"

hidden void *rampart_malloc(size_t size);
hidden void *rampart_aligned_alloc(size_t align, size_t size);
hidden void rampart_free(void *p);
hidden void rampart_free_sized(void *p, size_t size);
hidden void rampart_free_aligned_sized(void *p, size_t align, size_t size);

#endif
