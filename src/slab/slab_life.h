/*
 * slab_life.h — a slab's life (slab_life.c): taken fresh, active (slots drawn from the
 * current slab, then from the lowest partial one), empty within a budget that follows
 * use, closed. Every function here runs with the class lock held.
 *
 * Invariants:
 *  - An ACTIVE slab with a free slot is the current one (k->current) or in the partial
 *    set; a full one is in no set and not current. A slab of any other state is neither.
 *  - The current slab was the lowest with a free slot when it became current (a slab
 *    below it may have got a slot back since).
 *  - nused counts the slab's slots that are not free: 1..slots while it is ACTIVE (0 for
 *    the current slab just taken, before its first slot is drawn). With partitions it
 *    counts too the free slots owned by a partition (nown of them): those no other
 *    partition's draw may take. A slab is wholly free when nused == nown: then it is
 *    empty, kept open (its owned slots still their partitions') or closed (its owners
 *    forgotten: its pages went back, and every slot is fresh again when it reopens).
 *  - Partition p's set holds the open slabs with a free slot owned by p (slab_sets.h);
 *    parts->cur[p], when not 0, is one of them, or an empty slab that became active.
 *  - slab_life.c calls down into slab_setup.c, slab_sets.c and page_return.c alone of
 *    the slab's files.
 */
#ifndef RAMPART_SLAB_LIFE_H
#define RAMPART_SLAB_LIFE_H

#include "slab/slab_class.h"
#include "slab/page_return.h"
#include "slab/slab_sets.h"

/* A slab to draw slots from (current) where none of the class's active slabs has a free
 * slot: an empty, a closed or a fresh one; false on OOM. */
bool slab_new(struct slab_class *k);
/* No current slab (it filled, or none was taken yet): the lowest partial slab becomes
 * current, else a new one (slab_new); false on OOM. The lowest: allocations fill the
 * low slabs first, so that the high ones, which only frees reach then, drain and
 * close. A few loads (slab_sets.h); the slot is still drawn at random within it.
 * Inline: in churn the current slab fills at nearly every allocation (a slot or two
 * come back to a slab at a time), and as a call the register saves cost as much as
 * the search. */
static inline bool slab_refill(struct slab_class *k)
{
	invariant(!k->current);
	if (unlikely(!k->nset[SET_PARTIAL])) return slab_new(k);
	k->current = set_take_lowest(k, SET_PARTIAL) + 1;
	return true;
}
/* The last slot of slab pos went back: out of its set (or no longer current), then kept
 * open within the budget, or a slab closed. */
void slab_lost_last_slot(struct slab_class *k, uint32_t pos, struct slab *s, bool was_full);
/* The lowest slab with a free slot becomes the current one, if it lies below it (the
 * current one joins the partial set then). Slots are drawn from the current slab until
 * it is full, so a slab below it that gets a slot back waits till then: making it
 * current at every such free would cost churn a search of the set at nearly every
 * allocation. */
void slab_lower_current(struct slab_class *k);
/* --- call-site partitions (slab_class.h's invariants) ------------------------------ */

/* Slab pos joins partition p's set: it holds a free slot of p's now; or leaves it: it
 * holds none any more. */
void slab_join_part(struct slab_class *k, uint32_t pos, struct slab *s, unsigned p);
void slab_leave_part(struct slab_class *k, uint32_t pos, struct slab *s, unsigned p);

/* With partitions: slot i of slab pos goes back to its partition alone (see
 * slab_release_slot): still used, and quarantined (a free without a quarantine comes
 * here unmarked), so that a free of it is a double free and no draw from the slab takes
 * it. Inline, as slab_release_slot is; joining a set and the slab's emptying are not. */
static inline void slab_release_owned(struct slab_class *k, struct slab *s, uint32_t pos, uint32_t i)
{
	uint64_t *map = owner_map(k, s, pos);
	unsigned p = ((const uint8_t *)(map + k->nwords))[i];
	invariant(p < roots.opt.partitions);
	owned_set(k, map, i, p);
	bits_write(&s->bits[i >> 6].quar, s->bits[i >> 6].quar | (uint64_t)1 << (i & 63));
	slab_pages_freed(k, pos, s);
	if (unlikely(!(s->psets >> p & 1))) slab_join_part(k, pos, s, p);
	/* Wholly free: an empty slab now, kept open (in its partitions' sets) or closed. Its
	 * shared room is what it was: none when it was full. */
	if (unlikely(++s->nown == s->nused)) slab_lost_last_slot(k, pos, s, s->nused == k->slots);
}

/* Slot i of slab pos, partition p's own, handed out to p: live in its bits, its owner p;
 * *fresh when its page went back since its free (its allocation checks it whole,
 * slot_maybe_returned). The slab leaves p's set when that was p's last slot there: the
 * owned slots are a few bits to look at (a partition in churn frees one slot at a time
 * into slab after slab). */
static inline __attribute__((always_inline)) void own_taken(struct slab_class *k, uint32_t pos, struct slab *s, uint64_t *map, uint32_t i, unsigned p,
			     bool *fresh)
{
	uint64_t bit = (uint64_t)1 << (i & 63);
	invariant(s->state == SLAB_ACTIVE && s->nown);
	owned_clear(k, map, i, p);
	/* Where p alone owns free slots here (the common case: a slab's frees mostly come
	 * from one site), the count says whether this was its last; else its bits do. */
	if (s->psets == 1u << p ? s->nown == 1 : owned_slot(k, map, p, 0) == UINT32_MAX)
		slab_leave_part(k, pos, s, p);
	s->nown--;
	bits_write(&s->bits[i >> 6].quar, s->bits[i >> 6].quar & ~bit);
	*fresh = s->bits[i >> 6].fresh & bit;
	s->bits[i >> 6].fresh &= ~bit;
}

/* slab_take_own when partition p's own slab holds none of its slots, or is no longer
 * below the current slab: the lowest of p's set becomes it. The slot comes back in
 * registers: pointers to the allocation's locals passed to a call would put them on
 * the stack, and the stack protector would then guard every allocation. */
struct own_slot {
	uint32_t pos, i;
	bool found, fresh;
};
struct own_slot slab_take_own_lowest(struct slab_class *k, unsigned p);

/* With partitions: a free slot of partition p's own for an allocation of p, from its own
 * slab (parts->cur) or else the lowest slab of its set, if that lies below the current
 * slab (or there is none); an empty slab it lies in becomes active. False: none, or the
 * current slab is lower: draw from that. Inline: most allocations of a partition in
 * churn take a slot from its own slab. */
static inline __attribute__((always_inline)) bool slab_take_own(struct slab_class *k, unsigned p, uint32_t *pos, uint32_t *i, bool *fresh)
{
	uint32_t cur = k->parts->cur[p];
	if (cur && (!k->current || cur <= k->current)) {
		struct slab *s = desc(k, cur - 1);
		uint64_t *map = owner_map(k, s, cur - 1);
		uint32_t at = likely(s->state == SLAB_ACTIVE)
				      ? owned_slot(k, map, p, k->random_slots ? (rand16(k) * k->slots) >> 16 : 0)
				      : UINT32_MAX;
		if (likely(at != UINT32_MAX)) {
			own_taken(k, cur - 1, s, map, at, p, fresh);
			*pos = cur - 1;
			*i = at;
			return true;
		}
	}
	struct own_slot o = slab_take_own_lowest(k, p);
	*pos = o.pos;
	*i = o.i;
	*fresh = o.fresh;
	return o.found;
}
/* A slot goes back to its slab for good (it left the quarantine, or there is none).
 * Inline: every quarantine release runs it, and its common case touches the slab alone.
 * With partitions it goes back to its partition instead, whose allocations alone may
 * take it while the slab stays open. */
static inline void slab_release_slot(struct slab_class *k, struct slab *s, uint32_t pos, uint32_t i)
{
	uint64_t bit = (uint64_t)1 << (i & 63);
	invariant(i < k->slots && s->state == SLAB_ACTIVE && s->nused && (s->bits[i >> 6].used & bit));
	if (k->parted) {
		slab_release_owned(k, s, pos, i);
		return;
	}
	bits_write(&s->bits[i >> 6].used, s->bits[i >> 6].used & ~bit);
	bits_write(&s->bits[i >> 6].quar, s->bits[i >> 6].quar & ~bit);
	slab_pages_freed(k, pos, s);
	bool was_full = s->nused == k->slots;
	s->nused--;
	if (!s->nused) slab_lost_last_slot(k, pos, s, was_full);
	else if (was_full) set_add(k, SET_PARTIAL, pos); /* a full slab is never current */
}
/* Close the highest empty slab; false when the kernel cannot now. */
bool slab_close_highest_empty(struct slab_class *k);

#endif
