/*
 * slot_tag.h — a slot's memory tag, under arm64 memory tagging (os/mte.h; roots.mte
 * says whether start-up turned it on). Each slot handed out gets a random tag, 1 to
 * 15, that neither slot beside it in its slab carries; the whole slot, canary
 * included, carries it, and so does the pointer handed out (its top byte). A free
 * gives the slot tag 0, which free and never-used slots keep (fresh pages come tagged
 * 0): no pointer rampart hands out carries it, so any access through a pointer into a
 * freed slot, or past a block into its neighbour, faults at that access. A slot handed
 * out again gets a tag other than its last owner's (kept in the freed slot:
 * slot_tag_keep), so a stale pointer faults after the reuse too.
 *
 * rampart's own accesses to a freed or fresh slot go through its untagged address (tag
 * 0 matches); to a live one, through the program's pointer once its tag is checked, or
 * through slot_word. Elsewhere than on arm64 everything here compiles to the address
 * unchanged: the x86_64 paths are what they were.
 *
 * Included by slot_check.h (after slab_class.h in the parts' order: data and inline
 * helpers only), slot_alloc.c and batched_free.c.
 */
#ifndef RAMPART_SLOT_TAG_H
#define RAMPART_SLOT_TAG_H

#include "os/mte.h"
#include "slab/slab_class.h"

/* The address a pointer from the program decodes by: without its tag. */
static inline uintptr_t slot_untag(const void *p) { return mte_untag((uintptr_t)p); }

/* The 8 bytes at a (aligned): how rampart reads a word of a slot that may be live and
 * whose pointer it does not have (a neighbour's canary, a live slot at exit). Under
 * tagging, with tag checks suspended: a slot freed into another thread's batch is
 * retagged without the class lock, so a tag loaded first could be stale by the read
 * (a tag fault in the reader; arm64 check, usable_threads). */
static inline uint64_t slot_word(uintptr_t a)
{
#if RAMPART_MTE
	if (roots.mte) return mte_load_unchecked(a);
#endif
	return __atomic_load_n((const uint64_t *)a, __ATOMIC_RELAXED);
}

/* Does p carry the tag of the slot memory at a (p's untagged address) in class k? With
 * tagging off, or in the zero class (never mapped open), only tag 0 does. A pointer
 * whose tag is wrong is not the block's: a stale pointer to a slot freed and handed out
 * again, or a forged one. */
static inline bool slot_tag_ok(const struct slab_class *k, const void *p, uintptr_t a)
{
#if RAMPART_MTE
	return mte_top((uintptr_t)p) == (roots.mte && k->open_slabs ? mte_load_tag(a) : 0);
#else
	(void)k, (void)p, (void)a;
	return true;
#endif
}

/* Address a (untagged) of the slot p points into, with p's tag (checked already). */
static inline uintptr_t slot_with_tag_of(uintptr_t a, const void *p)
{
#if RAMPART_MTE
	return mte_with_tag(a, mte_top((uintptr_t)p));
#else
	(void)p;
	return a;
#endif
}

#if RAMPART_MTE
/* The classes whose freed slots keep their last tag (slot_tag_keep): all but 16 bytes. */
#define SLOT_TAG_KEPT_MIN 24u

/* Lock held (the neighbours' tags do not change meanwhile): a new tag for slot i, at
 * a, set over the whole slot; returns the pointer to hand out. Random among 1 to 15 but
 * the tags of the slots before and after it in the slab, so that an overflow into
 * either neighbour faults whatever its state. (Slots at a slab's edge border a guard
 * slab or another slab, whose tags are not looked at.) */
static inline uintptr_t slot_tag_new(struct slab_class *k, uintptr_t a, uint32_t i)
{
	unsigned taken = 1u; /* tag 0: free slots */
	if (k->usable >= SLOT_TAG_KEPT_MIN) {
		/* The last owner's tag, kept in the freed slot (slot_tag_keep), is taken back
		 * out before anything scans the slot for zeros. */
		unsigned char *kept = (unsigned char *)a + k->usable - 1;
		taken |= 1u << (*kept & 15u);
		*kept = 0;
	}
	if (i > 0) taken |= 1u << mte_load_tag(a - k->size);
	if (i + 1 < k->slots) taken |= 1u << mte_load_tag(a + k->size);
	unsigned allowed = ~taken & 0xffffu;
	unsigned pick = (rand16(k) * (unsigned)__builtin_popcount(allowed)) >> 16;
	while (pick--) allowed &= allowed - 1;
	unsigned tag = (unsigned)__builtin_ctz(allowed);
	mte_set_tags(a, k->size, tag);
	return mte_with_tag(a, tag);
}

/* A freed slot at a (untagged) gets tag 0: every pointer to it faults from now on. */
static inline void slot_tag_free(const struct slab_class *k, uintptr_t a) { mte_set_tags(a, k->size, 0); }

/* A freed slot keeps its last owner's tag in its last usable byte, after the wipe, so
 * that its next owner gets another one: a stale pointer to a slot handed out again
 * faults too. Tag 0 memory: no pointer handed out reads it. Not in the 16-byte class,
 * whose usable bytes lie within the 16 a neighbour's free checks for zeros
 * (slot_check.h); there the new tag differs from the last with probability 12/13 or
 * better. slot_tag_new takes it out again before the write-after-free scan. */
static inline void slot_tag_keep(const struct slab_class *k, uintptr_t a, unsigned tag)
{
	if (k->usable >= SLOT_TAG_KEPT_MIN) ((unsigned char *)a)[k->usable - 1] = (unsigned char)tag;
}
#endif

#endif
