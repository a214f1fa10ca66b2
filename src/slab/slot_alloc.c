/*
 * slot_alloc.c — malloc and free of a slot (slab.h's slab_alloc, slab_free and the
 * questions about a slot): the arena of the calling thread, the slot's choice, the
 * write-after-free check, what a free, a realloc or a size question makes of a pointer
 * (decoded by slab_class.h, judged by slot_check.h), the wipe, and the check at exit.
 * The invariants are slab.h's; what the parts share is in slab_class.h, whose list of
 * the parts this file heads: it calls the parts below it.
 */
#define _GNU_SOURCE
#include "slab/slab_class.h"

#include <string.h>

#include "base/partition.h"
#include "base/report.h"
#include "slab/batched_free.h"
#include "slab/class_tally.h"
#include "slab/slab_life.h"
#include "slab/slab_setup.h"
#include "slab/slot_check.h"
#include "slab/slot_kind.h"
#include "slab/slot_quarantine.h"
#include "slab/slot_tag.h"

static __thread unsigned tls_arena __attribute__((tls_model("initial-exec")));
static _Atomic unsigned next_arena;

/* --- the profile's choices ---------------------------------------------------------- */

/* The choices a copy of the hot paths is compiled for (slab_class.h, enum hot_mode):
 * constants in the strong and the light copy, read from the class in the mixed one,
 * which alone serves a class with partitions (slab_class_setup): the copies of the
 * others have no partition code at all. (Copies of strong's and light's with
 * partitions, constants too, saved those classes nothing: the function grew past what
 * gcc inlines into it, and the lock's release and the slot draw became calls in every
 * copy, partitions=1's too.) */
struct hot {
	bool fixed; /* false: read them from the class */
	bool random, check, quarantine;
};
#define HOT_ALL_ON ((struct hot){.fixed = true, .random = true, .check = true, .quarantine = true})
#define HOT_ALL_OFF ((struct hot){.fixed = true})
#define HOT_READ ((struct hot){.fixed = false})

static inline bool hot_random(const struct slab_class *k, struct hot h) { return h.fixed ? h.random : k->random_slots; }
static inline bool hot_check(const struct slab_class *k, struct hot h) { return h.fixed ? h.check : k->check_reuse; }
static inline bool hot_quarantine(const struct slab_class *k, struct hot h)
{
	return h.fixed ? h.quarantine : slot_quarantine_on(k);
}
static inline bool hot_parted(const struct slab_class *k, struct hot h) { return !h.fixed && k->parted; }

/* --- slots ----------------------------------------------------------------------- */

static inline uint32_t pick_slot(struct slab_class *k, const struct slab *s, bool random)
{
	uint32_t start = random ? (rand16(k) * k->slots) >> 16 : 0;
	uint32_t w = start >> 6;
	uint64_t m = ~s->bits[w].used & (~(uint64_t)0 << (start & 63));
	if (m) return (w << 6) + (uint32_t)__builtin_ctzll(m);
	for (uint32_t n = 1; n <= k->nwords; n++) {
		uint32_t ww = w + n < k->nwords ? w + n : w + n - k->nwords;
		m = ~s->bits[ww].used;
		if (m) return (ww << 6) + (uint32_t)__builtin_ctzll(m);
	}
	die(k, OP_ALLOC, ERR_SLAB_METADATA, s);
}

/* A slab with at least this many free slots is being filled again (a structure built
 * after another was freed): the allocations that follow take its slots in random order,
 * and each one's write-after-free scan starts with a line no hardware prefetcher can
 * foresee. Asked for all at once, those lines arrive together. In churn a slab has a
 * slot or two free, and the slot the quarantine hands over serves most allocations:
 * nothing is asked for there. */
#define PREFETCH_MIN_FREE 16u
/* At most this many lines a slab (4 KiB). */
#define PREFETCH_MAX_LINES 64u

/* The first line of every free slot of the slab at pos that was handed out before (a
 * fresh slot is not scanned, and its page may not be populated yet). */
static noinline void prefetch_free_slots(struct slab_class *k, const struct slab *s, uint32_t pos)
{
	k->prefetched = pos + 1;
	const char *base = (const char *)slab_start(k, pos);
	uint32_t budget = PREFETCH_MAX_LINES;
	for (uint32_t w = 0; w < k->nwords && budget; w++) {
		uint64_t m = ~s->bits[w].used & ~s->bits[w].fresh;
		for (; m && budget; m &= m - 1, budget--)
			__builtin_prefetch(base + (size_t)((w << 6) + (uint32_t)__builtin_ctzll(m)) * k->size);
	}
}

static unsigned assign_arena(void)
{
	unsigned a = atomic_fetch_add_explicit(&next_arena, 1, memory_order_relaxed) % roots.slab.arenas + 1;
	if (!arena_is_open(a - 1)) slab_arena_open(a - 1);
	lock_owner_init(); /* a thread's first allocation: its mark for the lock words (lock.h) */
	tls_arena = a;
	return a;
}

/* A class whose active slabs, and FRAGMENTED_MIN more, are more than this many times as
 * many as its partial ones (beside the current slab) is not fragmented: an allocation
 * takes the slot that last left the quarantine, wherever it lies. A class of a few slabs
 * never is: it has little to drain, and churn over many small classes (whose counts of
 * live blocks swing) would pay the slot draw that the held slot saves most of the
 * time. */
#define FRAGMENTED_SHARE 4u
#define FRAGMENTED_MIN 32u

/* In churn the slot that left the quarantine last serves the next allocation
 * (slot_quarantine.c, leave), so reuse follows the frees, which land anywhere: after a wave of
 * frees (a structure torn down, the values of a cache replaced by values of another
 * size) the live blocks stay spread over every slab, none drains, and each keeps its
 * pages. So while a class is fragmented (a quarter of its active slabs, and more than
 * FRAGMENTED_MIN / 4, have a free slot beside the current one), the lowest slab with a
 * free slot becomes current, a held slot above it goes back to its slab instead, and the
 * allocation draws from the current slab: the low slabs fill and the high ones drain.
 * The held slot has served its wait; it only stops being handed out first. Out of line:
 * churn in a class that is not fragmented pays one comparison. */
static noinline void lowest_over_held(struct slab_class *k)
{
	slab_lower_current(k); /* there is a partial slab */
	if (qentry_pos(k->released) >= k->current) slot_quarantine_let_go(k);
}

/* A slot of the current slab s (at pos), marked used; *fresh: it was never handed out. */
static inline __attribute__((always_inline)) uint32_t draw_slot(struct slab_class *k, struct slab *s, uint32_t pos,
								 struct hot h, bool *fresh)
{
	if (hot_check(k, h) && unlikely(k->slots - s->nused >= PREFETCH_MIN_FREE) && k->prefetched != pos + 1)
		prefetch_free_slots(k, s, pos);
	uint32_t i = pick_slot(k, s, hot_random(k, h));
	uint64_t bit = (uint64_t)1 << (i & 63);
	bits_write(&s->bits[i >> 6].used, s->bits[i >> 6].used | bit);
	if (++s->nused == k->slots) k->current = 0; /* full: the next draws from another */
	*fresh = s->bits[i >> 6].fresh & bit;
	s->bits[i >> 6].fresh &= ~bit;
	return i;
}

/* The same with partitions, for an allocation of partition p: its room is the slabs of
 * its set (its own free slots) and the current slab (fresh slots), the partial set
 * holding the few with fresh ones. While a quarter of the active slabs (and more than
 * FRAGMENTED_MIN / 4) hold a free slot of p's, a held slot of p's above the lowest of
 * them goes back to p (into its set), and the allocation takes its slot from there
 * (slab_take_own). A held slot of another partition's waits for its own. */
static inline bool fragmented_for(const struct slab_class *k, unsigned p)
{
	return k->parts->n[p] * FRAGMENTED_SHARE > k->nactive + FRAGMENTED_MIN;
}

static noinline void lowest_own_over_held(struct slab_class *k, unsigned p)
{
	uint32_t low = set_lowest(k, set_of_part(p));
	if (k->current && k->current - 1 < low) low = k->current - 1;
	uint32_t pos = qentry_pos(k->released), i = qentry_slot(k->released);
	if (pos > low && owners_of(k, desc(k, pos), pos)[i] == p) slot_quarantine_let_go(k);
}

/* The slot an allocation of partition part takes (lock held): the one that left the
 * quarantine last, if no allocation took it yet (and, in a fragmented class, if it lies
 * below the current slab; with partitions, if it is part's); else, with partitions, a
 * free slot of part's own below the current slab; else one drawn from the current slab.
 * *fresh: never handed out since its slab opened (or its page went back since). NULL
 * when no slab can be had. Always inlined into each copy of slab_alloc. */
static inline __attribute__((always_inline)) struct slab *take_slot(struct slab_class *k, struct hot h, unsigned part,
								    uint32_t *pos, uint32_t *i, bool *fresh)
{
	if (hot_quarantine(k, h)) {
		if (unlikely(k->ndeferred)) slot_quarantine_drain(k);
		/* In a fragmented class the lowest slab with room comes before the held slot. */
		if (k->released) {
			if (hot_parted(k, h)) {
				if (unlikely(fragmented_for(k, part))) lowest_own_over_held(k, part);
			} else if (unlikely(k->nset[SET_PARTIAL] * FRAGMENTED_SHARE > k->nactive + FRAGMENTED_MIN)) {
				lowest_over_held(k);
			}
		}
		if (hot_parted(k, h) ? slot_quarantine_take_released_by(k, part, pos, i)
				     : slot_quarantine_take_released(k, pos, i))
			return desc(k, *pos);
	}
	if (hot_parted(k, h) && slab_take_own(k, part, pos, i, fresh)) return desc(k, *pos);
	if (unlikely(!k->current) && !slab_refill(k)) return NULL;
	*pos = k->current - 1;
	struct slab *s = desc(k, *pos);
	*i = draw_slot(k, s, *pos, h, fresh);
	/* Its partition from now on, until its slab closes. */
	if (hot_parted(k, h)) owners_of(k, s, *pos)[*i] = (uint8_t)part;
	return s;
}

/* slab_alloc in class k, compiled for the choices h, for an allocation made at site. */
static inline __attribute__((always_inline)) void *alloc_in(struct slab_class *k, size_t size, bool zero,
							     enum alloc_kind kind, struct hot h, uintptr_t site)
{
	/* The hash before the lock: it needs nothing the lock guards. By the options, not
	 * the class: a class's first allocation sets it up (parted) under the lock. */
	unsigned part = !h.fixed && slab_parted() ? site_partition(site) : 0;
	class_lock(k);
	uint32_t pos = 0, i = 0;
	bool fresh = false;
	struct slab *s = take_slot(k, h, part, &pos, &i, &fresh);
	if (unlikely(!s)) {
		class_unlock(k);
		return NULL;
	}
	if (kind) slot_kind_set(k, s, pos, i, kind);
	tally_alloc(k);
	char *p = (char *)slot_start(k, pos, i);
	/* A slot whose pages went back reads as zero unless a stale pointer wrote to it
	 * since: checked whole, canary too, like one the last free wiped to its end. */
	bool returned = fresh && unlikely(s->returned) && slot_maybe_returned(k, s, i);
	if (unlikely(returned)) {
		fresh = false;
#if CONFIG_SLOT_CANARY
		if (k->open_slabs && canary_word((uintptr_t)p + k->usable)) die(k, OP_ALLOC, ERR_WRITE_AFTER_FREE, p);
#endif
	}
	/* What the last free wiped; nothing to look at in a fresh slot. */
	size_t wiped = 0, owned = 0;
	if (hot_check(k, h)) wiped = fresh ? k->usable : returned ? k->usable : extent_of(k, s, i);
	set_extent(k, s, i, size);
	/* All of the slot was zero at its last free (the slack proven so, slot_check.h),
	 * so the scan may cover all the new owner may read, beyond what was wiped too, and
	 * round it up to its 16-byte steps. */
	if (hot_check(k, h)) owned = MIN(align_up(MAX(wiped, extent_of(k, s, i)), 16), (size_t)k->usable);
#if CONFIG_SLOT_CANARY
	/* A slot keeps its canary from its first allocation on (a free wipes the data, not
	 * the canary), so only a fresh slot's is stamped, here under the lock: a free of a
	 * neighbour checks the canary of every live slot next to it, and must never see
	 * this one live without its canary. Any other allocation leaves the slot's last
	 * line alone: it was a cache miss on every reuse. A stale write over a freed
	 * slot's canary is found at the slot's next free, or at its neighbours'. */
	if ((fresh || returned) && k->open_slabs) memcpy(p + k->usable, &s->canary, 8);
#endif
#if RAMPART_MTE
	/* Tagged under the lock, where a neighbour's allocation reads this slot's tag. The
	 * scan and the clearing below go through the tagged pointer. */
	if (roots.mte && k->open_slabs) p = (char *)slot_tag_new(k, (uintptr_t)p, i);
#endif
	class_unlock(k);
	if (fresh || !k->open_slabs) return p;

	/* The slot is ours alone now (no neighbour check reads a live slot's data), so the
	 * scan for stale writes runs outside the lock, over what the last free wiped and
	 * what the new owner asks for. Without the check a stale pointer may have written
	 * since the wipe: calloc must return zeros to a correct program whatever a buggy
	 * one did. */
	size_t known_zero = 0;
#if CONFIG_ZERO_ON_FREE /* without it the option cannot be on (front/options.c) */
	if (hot_check(k, h)) {
		if (unlikely(!all_zero(p, owned))) report_fatal(OP_ALLOC, ERR_WRITE_AFTER_FREE, p);
		known_zero = owned;
	}
#else
	(void)owned;
#endif
	if (zero && size > known_zero) memset(p + known_zero, 0, size - known_zero);
	return p;
}

void *slab_alloc(unsigned c, size_t size, bool zero, enum alloc_kind kind, uintptr_t site)
{
	unsigned a = tls_arena;
	if (unlikely(!a)) a = assign_arena();
	struct slab_class *k = &roots.slab.classes[(a - 1) * SC_COUNT + c];
	/* Copies inlined into one function: as functions of their own, each allocation
	 * paid a call and a second frame, more than the tests they save. */
	if (likely(k->hot_mode == HOT_STRONG)) return alloc_in(k, size, zero, kind, HOT_ALL_ON, site);
	if (k->hot_mode == HOT_LIGHT) return alloc_in(k, size, zero, kind, HOT_ALL_OFF, site);
	return alloc_in(k, size, zero, kind, HOT_READ, site);
}

/* A pointer that is not a live slot: fatal, except that a free under on_error=report is
 * reported and ignored (report_go_on). The class lock is given back either way. */
static noinline cold struct slab *not_live(struct slab_class *k, enum report_op op, enum report_kind kind,
					   const void *p)
{
	class_unlock(k);
	if (!report_go_on(op, kind, p)) report_fatal(op, kind, p);
	return NULL;
}

/* The descriptor of the live slot at a (lock held), or NULL (lock given back) when a
 * free of anything else is to be ignored; otherwise a fatal report naming what a is.
 * Always inlined: as a call, its out-parameters would live on the stack, and the stack
 * protector would then guard every free. */
static inline __attribute__((always_inline)) struct slab *
live_slot(struct slab_class *k, uintptr_t a, const struct area_span *span, uint32_t *pos_out, uint32_t *i_out,
	  enum report_op op)
{
	struct slot_place pl = decode_slot(k, span, a, LOCK_HELD);
	/* A guard area, or past the slabs in use. */
	if (unlikely(!pl.s)) return not_live(k, op, ERR_NOT_LIVE, (void *)a);
	struct slab *s = pl.s;
	uint32_t pos = pl.pos, i = pl.i;
	if (unlikely(s->state != SLAB_ACTIVE)) {
		if (s->state == SLAB_NONE) return not_live(k, op, ERR_NOT_LIVE, (void *)a); /* a guard slab */
		return not_live(k, op, ERR_FREED_SLAB, (void *)a);
	}
	if (unlikely(i >= k->slots || pl.at))
		return not_live(k, op, ERR_NOT_SLOT_START, (void *)a);
	uint64_t bit = (uint64_t)1 << (i & 63);
	if (unlikely(!(s->bits[i >> 6].used & bit)))
		return not_live(k, op, ERR_SLOT_NOT_ALLOCATED, (void *)a);
	if (unlikely(s->bits[i >> 6].quar & bit)) return not_live(k, op, ERR_SLOT_FREED, (void *)a);
	*pos_out = pos;
	*i_out = i;
	return s;
}

/* A free of a pointer into an arena that never opened: fatal, or under
 * on_error=report reported and ignored. */
static noinline cold void free_unopened(const void *p)
{
	if (!report_go_on(OP_FREE, ERR_NOT_LIVE, p)) report_fatal(OP_FREE, ERR_NOT_LIVE, p);
}

/* A pointer whose tag is not its slot's (slot_tag.h): not the live block it points at.
 * Fatal, or under on_error=report reported and ignored, like any invalid free. */
static noinline cold void wrong_tag(struct slab_class *k, const struct slab *s, uintptr_t a, enum report_op op,
				    const void *p)
{
	/* A slot freed into another thread's batch has tag 0 already: its canary word,
	 * read unchecked, says it was freed (check_not_batched's answer). */
#if SLAB_FREE_BATCHES
	if (k->open_slabs && slot_word(a + k->usable) == batched_canary(s)) die(k, op, ERR_SLOT_FREED, (void *)a);
#else
	(void)s;
#endif
	(void)not_live(k, op, ERR_WRONG_TAG, p);
}

/* A free (or with realloc, a realloc: kind KIND_MALLOC) of live slot i, allocated as
 * `had`, not `kind`: fatal, but under on_error=report, where it is reported and the call
 * goes on (report_go_on). Named by the slot's address (untagged). */
static noinline cold void slot_kind_mismatch(struct slab_class *k, uint32_t pos, uint32_t i, enum alloc_kind kind,
					     enum alloc_kind had, bool realloc)
{
	enum report_op op = realloc ? OP_REALLOC : kind_free_op(kind);
	const void *p = (const void *)slot_start(k, pos, i);
	if (!report_go_on(op, kind_mismatch(had), p)) die(k, op, kind_mismatch(had), p);
}

/* A free or realloc of live slot i (lock held) where its slab holds C++ slots or the
 * call is a C++ one: the slot must have been allocated as `kind`. Its kind bits are
 * cleared either way: the slot is freed, or taken for the C functions' by realloc.
 * Inlined, behind the caller's unlikely test: a free of the C functions in a slab of
 * their slots alone never comes here, and as a call it cost each C++ free 11
 * instructions more (callgrind, bench/results/2026-11-29-kind-checks.md). */
static inline __attribute__((always_inline)) void slot_kind_check(struct slab_class *k, struct slab *s, uint32_t pos,
								  uint32_t i, enum alloc_kind kind, bool realloc)
{
	enum alloc_kind had = slot_kind_take(k, s, pos, i);
	if (unlikely(had != kind)) slot_kind_mismatch(k, pos, i, kind, had, realloc);
}

/* A sized free whose size or alignment maps to another class than its slot's (lock
 * held): fatal, or reported and freed all the same (report_go_on); the line shows what
 * was passed and what the slot holds (its usable size, and the alignment its address
 * has). */
static noinline cold void wrong_size(struct slab_class *k, const struct sized_claim *claim, const void *p)
{
	uintptr_t a = slot_untag(p);
	struct report_sizes sz = {.passed = claim->size, .block = k->usable, .passed_align = claim->align,
				  .block_align = MIN(a & -a, os_page)};
	if (report_wrong_size_go_on(p, &sz)) return;
	class_unlock(k);
	report_wrong_size(p, &sz);
}

void slab_free(void *p, const struct sized_claim *claim, enum alloc_kind kind)
{
	uintptr_t a = slot_untag(p);
	const struct area_span *span;
	struct slab_class *k = class_at(a, &span);
	if (unlikely(!k)) {
		free_unopened(p);
		return;
	}
#if SLAB_FREE_BATCHES
	if (tls_arena != k->arena1 && slot_quarantine_on(k) && !os_single_threaded() &&
	    slab_batch_free(k, (uintptr_t)p, span, claim, kind))
		return;
#endif
	class_lock(k);
	uint32_t pos = 0, i = 0; /* set by live_slot when it answers */
	struct slab *s = live_slot(k, a, span, &pos, &i, OP_FREE);
	if (unlikely(!s)) return; /* on_error=report: reported and ignored */
	if (unlikely(!slot_tag_ok(k, p, a))) {
		wrong_tag(k, s, a, OP_FREE, p);
		return;
	}
#if RAMPART_MTE
	/* Tag 0 from here: the stale pointer faults, and what follows reads and wipes the
	 * slot through its untagged address. */
	unsigned old_tag = mte_top((uintptr_t)p);
	if (roots.mte && k->open_slabs) slot_tag_free(k, a);
	p = (void *)a;
#endif
	/* How it was allocated first: a sized delete of a block new[] made is that mismatch. */
	if (unlikely(s->ncxx | kind)) slot_kind_check(k, s, pos, i, kind, false);
	if (unlikely(claim != NULL) && unlikely(claim->cls != k->cls)) wrong_size(k, claim, p);
	if (k->open_slabs) {
		check_canary(k, s, a, OP_FREE);
		check_neighbours(k, s, a, i);
#if CONFIG_ZERO_ON_FREE
		/* What the program could have written (the canary stays), past a check that
		 * it wrote nothing beyond (the slack, slot_check.h); the extent stays as the
		 * record of what the next allocation must find zero. */
		size_t extent = extent_of(k, s, i);
		check_slack(k, a, extent, k->usable, OP_FREE);
		memset(p, 0, extent);
#endif
#if RAMPART_MTE
		if (roots.mte) slot_tag_keep(k, a, old_tag);
#endif
	}
	if (likely(slot_quarantine_on(k))) {
		bits_write(&s->bits[i >> 6].quar, s->bits[i >> 6].quar | (uint64_t)1 << (i & 63));
		if (likely(tls_arena == k->arena1) || !k->defer_frees) slot_quarantine_put(k, pos, i);
		else slot_quarantine_defer(k, qentry(pos, i));
	} else {
		slab_release_slot(k, s, pos, i);
	}
	tally_free(k);
	class_unlock(k);
}


/* The usable size of the live slot p points at, the lock's way: every check, with its
 * exact report. The unlocked path below hands it whatever it does not answer itself. */
static noinline size_t usable_size_locked(struct slab_class *k, const struct area_span *span, const void *p)
{
	class_lock(k);
	uint32_t pos = 0, i = 0; /* set by live_slot when it answers */
	struct slab *s = live_slot(k, slot_untag(p), span, &pos, &i, OP_USABLE_SIZE);
	/* Its tag checked, p reads the live slot below. */
	if (unlikely(!slot_tag_ok(k, p, slot_untag(p)))) wrong_tag(k, s, slot_untag(p), OP_USABLE_SIZE, p);
	check_not_batched(k, s, (uintptr_t)p, OP_USABLE_SIZE);
	check_slack(k, (uintptr_t)p, extent_of(k, s, i), k->usable, OP_USABLE_SIZE);
	set_extent(k, s, i, k->usable); /* the program may use all of it now */
	class_unlock(k);
	return k->usable;
}

/* The first question about a live slot whose extent is short of its usable size (the
 * first after its allocation, mostly): the bytes the extent gains are checked zero and
 * the extent widened, without the lock (slab_usable_size says why that holds). Out of
 * line, so that the usual question, about a slot asked before, saves no registers. */
static noinline size_t widen_extent(struct slab_class *k, const struct area_span *span, struct slab *s, uint32_t i,
				    const void *p)
{
#if CONFIG_ZERO_ON_FREE
	size_t extent = MIN((size_t)__atomic_load_n(&s->extent[i], __ATOMIC_RELAXED) << k->extent_shift, (size_t)k->usable);
	if (unlikely(!slack_zero((uintptr_t)p, extent, k->usable))) return usable_size_locked(k, span, p);
#else
	(void)span, (void)p;
#endif
	/* set_extent's value for the usable size, stored whole. */
	uint16_t all = (uint16_t)((k->usable + ((size_t)1 << k->extent_shift) - 1) >> k->extent_shift);
	__atomic_store_n(&s->extent[i], all, __ATOMIC_RELAXED);
	return k->usable;
}

/* Programs that keep their own count of memory ask the size of every block at its
 * allocation and again at its free (redis does): the question is answered without the
 * class lock when it can be, as slab_batch_free judges a slot (slab_class.h's
 * invariants say what may be read so). Every check the locked path makes is made here
 * too, in the same order of reads: the slot decodes to a slot start in an active slab
 * (the directory seen through decode_slot's NO_LOCK loads), its bits say live (one
 * word, written whole: a neighbour's free or allocation in another thread changes
 * other bits of it, never ours), its tag is its slot's, it is not waiting in another
 * thread's free batch (its canary word, read atomically), and the bytes its extent
 * gains are zero. Anything else, a bad pointer above all, takes the locked path, which
 * judges it again and makes the report. A slot the program owns is not changed by
 * anyone else: no neighbour's free reads or writes its data, extent or bits, nor can
 * its slab close while it is live. So the answer is the locked one whenever the
 * program's own order puts a free of p before or after this call; a free of p racing
 * with it in another thread is the program's race, which the lock could not order
 * either. The bits are read with acquire: the slot's memory is read after them. The
 * extent (this slot's alone) is read and widened atomically: its other readers are
 * operations on this slot, ordered with this one by the program. */
size_t slab_usable_size(const void *p)
{
	uintptr_t a = slot_untag(p);
	const struct area_span *span;
	struct slab_class *k = class_at(a, &span);
	if (unlikely(!k)) report_fatal(OP_USABLE_SIZE, ERR_NOT_LIVE, p);
	struct slot_place pl = decode_slot(k, span, a, NO_LOCK);
	struct slab *s = pl.s;
	if (unlikely(!s || pl.at || pl.i >= k->slots) ||
	    unlikely(__atomic_load_n(&s->state, __ATOMIC_RELAXED) != SLAB_ACTIVE))
		return usable_size_locked(k, span, p);
	uint32_t i = pl.i;
	const struct slot_bits *b = &s->bits[i >> 6];
	uint64_t live = __atomic_load_n(&b->used, __ATOMIC_ACQUIRE) & ~__atomic_load_n(&b->quar, __ATOMIC_ACQUIRE);
	if (unlikely(!(live >> (i & 63) & 1)) || unlikely(!slot_tag_ok(k, p, a)))
		return usable_size_locked(k, span, p);
#if SLAB_FREE_BATCHES
	if (k->open_slabs && unlikely(canary_word((uintptr_t)p + k->usable) == batched_canary(s)))
		return usable_size_locked(k, span, p);
#endif
	if (k->track_extent &&
	    ((size_t)__atomic_load_n(&s->extent[i], __ATOMIC_RELAXED) << k->extent_shift) < k->usable)
		return widen_extent(k, span, s, i, p);
	return k->usable;
}

bool slab_resize(void *p, unsigned c_new, size_t size, size_t *copy)
{
	const struct area_span *span;
	struct slab_class *k = class_at(slot_untag(p), &span);
	if (unlikely(!k)) report_fatal(OP_REALLOC, ERR_NOT_LIVE, p);
	class_lock(k);
	uint32_t pos = 0, i = 0; /* set by live_slot when it answers */
	struct slab *s = live_slot(k, slot_untag(p), span, &pos, &i, OP_REALLOC);
	if (unlikely(!slot_tag_ok(k, p, slot_untag(p)))) wrong_tag(k, s, slot_untag(p), OP_REALLOC, p);
	if (unlikely(s->ncxx)) slot_kind_check(k, s, pos, i, KIND_MALLOC, true);
	if (k->open_slabs) check_canary(k, s, (uintptr_t)p, OP_REALLOC);
	bool stays = c_new == k->cls;
	if (stays) {
		size_t was = extent_of(k, s, i);
		grow_extent(k, s, i, size);
		check_slack(k, (uintptr_t)p, was, extent_of(k, s, i), OP_REALLOC);
	}
	*copy = extent_of(k, s, i);
	class_unlock(k);
	return stays;
}

size_t slab_object_size(const void *p)
{
	uintptr_t a = slot_untag(p);
	const struct area_span *span;
	struct slab_class *k = class_at(a, &span);
	if (!k) return 0; /* a region never mapped: whatever is there is not rampart's */
	class_lock(k);
	const struct guard_region *g = span_region(k, span);
	/* Outside what the region, the nursery cell or the spill region has mapped (the
	 * closed page below its first slab, the slabs, the closed tail) the window is only
	 * set aside: another mapping may sit there (a program's mmap with an address hint),
	 * so that is not rampart's memory. */
	if (a - g->base >= g->size) {
		bool page_below = g->size && g->base - a <= os_page;
		if (unlikely(page_below)) die(k, OP_OBJECT_SIZE, ERR_NOT_LIVE_INSIDE, p);
		class_unlock(k);
		return 0;
	}
	/* Everything the region mapped belongs to some slot's life cycle or to a guard (the
	 * region's positions that are the nursery's are closed, and so is the page above the
	 * nursery's): a question about anything but a live slot means the caller holds a
	 * stale or forged pointer, like a free of one would. Positions count from the span's
	 * base (below a spill region's own base). */
	struct slot_place pl = decode_slot(k, span, a, LOCK_HELD);
	if (unlikely(!pl.s || pl.s->state != SLAB_ACTIVE)) die(k, OP_OBJECT_SIZE, ERR_NOT_LIVE_INSIDE, p);
	struct slab *s = pl.s;
	uint32_t i = pl.i, at = pl.at;
	if (unlikely(i >= k->slots || !slot_live(s, i))) die(k, OP_OBJECT_SIZE, ERR_NOT_LIVE_INSIDE, p);
	if (unlikely(!slot_tag_ok(k, p, a))) wrong_tag(k, s, slot_start(k, pl.pos, i), OP_OBJECT_SIZE, p);
	/* The live slot is read through its start with p's tag (checked). */
	check_not_batched(k, s, slot_with_tag_of(slot_start(k, pl.pos, i), p), OP_OBJECT_SIZE);
	if (at < k->usable) { /* told it may use all of it */
		check_slack(k, slot_with_tag_of(slot_start(k, pl.pos, i), p), extent_of(k, s, i), k->usable,
			    OP_OBJECT_SIZE);
		set_extent(k, s, i, k->usable);
	}
	class_unlock(k);
	/* From the end of the usable part to the end of the slot (the canary) the pointer
	 * is still the block's, one past its end included: nothing left to access. */
	return at < k->usable ? k->usable - at : 0;
}

/* --- the check at exit (RAMPART_OPTIONS=check_at_exit=1) -------------------------- */

#if CONFIG_SLOT_CANARY
/* Report every live slot of k whose canary is damaged except the last one found,
 * which is left in *last for the caller to report as it aborts. */
static void check_class_at_exit(struct slab_class *k, uintptr_t *last)
{
	class_lock(k);
	for (uint32_t pos = 0; pos < k->hwm; pos++) {
		if (!desc_exists(k, pos)) continue; /* a guard position alone in its chunk */
		const struct slab *s = desc(k, pos);
		if (s->state != SLAB_ACTIVE) continue;
		for (uint32_t i = 0; i < k->slots; i++) {
			if (!slot_live(s, i)) continue;
			uint64_t v = slot_word(slot_start(k, pos, i) + k->usable);
			if (likely(v == s->canary)) continue;
#if SLAB_FREE_BATCHES
			if (v == batched_canary(s)) continue; /* freed, in another thread's batch */
#endif
			if (*last) report_fatal_line(OP_EXIT, ERR_EXIT_CANARY, (const void *)*last);
			*last = slot_start(k, pos, i);
		}
	}
	class_unlock(k);
}
#endif

/* A destructor, so the check runs when the program exits normally (returning from
 * main or calling exit), after its own atexit handlers, without registering anything
 * at run time (registration may allocate). It lives here rather than in a file of its
 * own because a static link pulls in only archive members something refers to, and
 * every program that allocates refers to this one. */
__attribute__((destructor)) static void slab_check_at_exit(void)
{
#if CONFIG_SLOT_CANARY
	if (atomic_load_explicit(&rampart_state, memory_order_acquire) != STATE_READY || !roots.opt.check_at_exit)
		return;
	uintptr_t last = 0;
	unsigned n = roots.slab.arenas * SC_COUNT;
	for (unsigned r = 0; r < n; r++)
		if (class_is_set_up(r) && r % SC_COUNT) check_class_at_exit(&roots.slab.classes[r], &last);
	if (last) report_fatal(OP_EXIT, ERR_EXIT_CANARY, (void *)last);
#endif
}
