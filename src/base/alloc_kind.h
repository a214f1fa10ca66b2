/*
 * alloc_kind.h — how a block was allocated: by the C functions (malloc and its family),
 * by operator new or by operator new[]. Each must be freed by its own kind of
 * deallocation (free or realloc, delete, delete[]); the slab and the large allocator
 * record the kind with the block and compare it at the free (dealloc_kind=on).
 *
 * Invariants:
 *  - KIND_MALLOC is 0: a block of the C functions records nothing, so that C programs,
 *    and every program under dealloc_kind=off (front/api.c passes KIND_MALLOC for all),
 *    pay no more than a test of zero.
 *  - A mismatch is reported by the deallocation that found it (kind_free_op) and the
 *    kind the block was allocated with (kind_mismatch): "operator delete of a block
 *    allocated by operator new[]".
 *  - A leaf: includes only base files.
 */
#ifndef RAMPART_ALLOC_KIND_H
#define RAMPART_ALLOC_KIND_H

#include "base/report.h"

enum alloc_kind { KIND_MALLOC, KIND_NEW, KIND_NEW_ARRAY, KIND_COUNT };

/* The operation that frees a block of kind k when the kinds match. */
static inline enum report_op kind_free_op(enum alloc_kind k)
{
	return k == KIND_NEW ? OP_DELETE : k == KIND_NEW_ARRAY ? OP_DELETE_ARRAY : OP_FREE;
}

/* The error of a deallocation that met a block allocated as `allocated`. */
static inline enum report_kind kind_mismatch(enum alloc_kind allocated)
{
	return allocated == KIND_NEW ? ERR_ALLOCATED_BY_NEW
	       : allocated == KIND_NEW_ARRAY ? ERR_ALLOCATED_BY_NEW_ARRAY
					     : ERR_ALLOCATED_BY_MALLOC;
}

#endif
