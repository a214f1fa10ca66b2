/*
 * api.h — internal names of the public allocation functions, for the other entry
 * points (the C++ operators) to call.
 *
 * Invariant: these are hidden, defined in api.c beside the exported functions, so a
 * call binds to rampart itself. Calling `malloc` by its public name would go through the
 * PLT/GOT and could reach another allocator interposed in front of rampart, pairing
 * its blocks with our frees.
 */
#ifndef RAMPART_API_H
#define RAMPART_API_H

#include "base/alloc_kind.h"
#include "base/common.h"

/* malloc (align 0) or aligned_alloc for the C++ operators: the block is of `kind`
 * (KIND_NEW or KIND_NEW_ARRAY), unless dealloc_kind is off; site is the operator's own
 * return address (base/partition.h). */
hidden void *rampart_new(size_t size, size_t align, enum alloc_kind kind, uintptr_t site);
/* free, free_sized and free_aligned_sized for the C++ operators, which say the block
 * must be of `kind`. */
hidden void rampart_delete(void *p, enum alloc_kind kind);
hidden void rampart_delete_sized(void *p, size_t size, enum alloc_kind kind);
hidden void rampart_delete_aligned_sized(void *p, size_t align, size_t size, enum alloc_kind kind);

#endif
