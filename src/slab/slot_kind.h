/*
 * slot_kind.h — how a live slot was allocated (base/alloc_kind.h: the C functions,
 * operator new, operator new[]), recorded at its allocation and compared at its free
 * or realloc. A part of the slab allocator (the list in slab_class.h): it reads and
 * writes a slab's kind map (struct slot_kinds) and its count of C++ slots (ncxx).
 *
 * Invariants:
 *  - A slot's two bits are set only while it is live and was allocated by operator new
 *    or new[]; its slab's ncxx counts those slots. A free clears them (under the lock:
 *    a batched free, at its batch's entry into the quarantine), so a slot handed out
 *    again starts as the C functions' with nothing written.
 *  - What the C functions do costs one test of ncxx, in the descriptor line a free
 *    reads anyway: the map is read only for a C++ call or in a slab that holds C++ slots.
 *  - Map words are written whole under the lock (bits_write) and read with atomic loads
 *    by a batched free, which finds its own slot's bits as its allocation left them (the
 *    program ordered that allocation before this free).
 */
#ifndef RAMPART_SLOT_KIND_H
#define RAMPART_SLOT_KIND_H

#include "base/alloc_kind.h"
#include "slab/slab_class.h"

/* Slot i of the slab s at pos, just handed out under the lock, is of `kind`. */
static inline void slot_kind_set(const struct slab_class *k, struct slab *s, uint32_t pos, uint32_t i,
				 enum alloc_kind kind)
{
	struct slot_kinds *m = kinds_of(k, s, pos);
	uint32_t w = i >> 6;
	uint64_t bit = (uint64_t)1 << (i & 63);
	bits_write(&m->cxx[w], m->cxx[w] | bit);
	if (kind == KIND_NEW_ARRAY) bits_write(&m->array[w], m->array[w] | bit);
	__atomic_store_n(&s->ncxx, (uint16_t)(s->ncxx + 1), __ATOMIC_RELAXED);
}

/* The kind live slot i was allocated with. Either under the lock or not (atomic loads). */
static inline enum alloc_kind slot_kind_get(const struct slab_class *k, struct slab *s, uint32_t pos, uint32_t i)
{
	if (!__atomic_load_n(&s->ncxx, __ATOMIC_RELAXED)) return KIND_MALLOC;
	const struct slot_kinds *m = kinds_of(k, s, pos);
	uint32_t w = i >> 6, b = i & 63;
	if (!(__atomic_load_n(&m->cxx[w], __ATOMIC_RELAXED) >> b & 1)) return KIND_MALLOC;
	return __atomic_load_n(&m->array[w], __ATOMIC_RELAXED) >> b & 1 ? KIND_NEW_ARRAY : KIND_NEW;
}

/* The kind live slot i was allocated with, and the slot leaves the C++ kinds (lock
 * held): freed, or taken for the C functions' by realloc. One look at the map: a
 * delete's check and its clearing were two, and cost a C++ free twice the address
 * arithmetic. */
static inline enum alloc_kind slot_kind_take(const struct slab_class *k, struct slab *s, uint32_t pos, uint32_t i)
{
	if (!s->ncxx) return KIND_MALLOC;
	struct slot_kinds *m = kinds_of(k, s, pos);
	uint32_t w = i >> 6;
	uint64_t bit = (uint64_t)1 << (i & 63);
	if (!(m->cxx[w] & bit)) return KIND_MALLOC;
	bits_write(&m->cxx[w], m->cxx[w] & ~bit);
	__atomic_store_n(&s->ncxx, (uint16_t)(s->ncxx - 1), __ATOMIC_RELAXED);
	if (!(m->array[w] & bit)) return KIND_NEW;
	bits_write(&m->array[w], m->array[w] & ~bit);
	return KIND_NEW_ARRAY;
}

#endif
