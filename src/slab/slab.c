/*
 * slab.c — malloc and free of a slot: the arena of the calling thread, the slot's
 * choice, the write-after-free check, pointer decoding and the checks of a free (live
 * slot, canary, neighbours), the wipe. The invariants are slab.h's; what the parts
 * share is in slab_class.h.
 */
#define _GNU_SOURCE
#include "slab/slab_class.h"

#include <string.h>

static __thread unsigned tls_arena __attribute__((tls_model("initial-exec")));
static _Atomic unsigned next_arena;

/* --- slots ----------------------------------------------------------------------- */

static inline uint32_t pick_slot(struct slab_class *k, const struct slab *s)
{
#if CONFIG_SLOT_RANDOM
	uint32_t start = (rand16(k) * k->slots) >> 16;
#else
	uint32_t start = 0;
#endif
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

#if CONFIG_WRITE_AFTER_FREE_CHECK
/* Are the n bytes at p (16-byte aligned, n a multiple of 8) all zero? 64 bytes a step in
 * 16-byte vectors, which every x86_64 (SSE2) and arm64 (NEON) has: this scan is most of
 * what a write-after-free check costs. */
typedef uint64_t zero_vec __attribute__((vector_size(16), aligned(16), may_alias));
static inline bool all_zero(const void *p, size_t n)
{
	const zero_vec *v = p;
	zero_vec acc = {0, 0};
	size_t i = 0;
	/* The hardware prefetcher follows a stream only within a page: a request for the
	 * first line of every later page at once takes the stall at each page start off
	 * the scan (mid: 3-5% of the time). */
	for (size_t pg = 4096 / 16; pg < n / 16; pg += 4096 / 16) __builtin_prefetch(v + pg);
	for (; i + 4 <= n / 16; i += 4) acc |= v[i] | v[i + 1] | v[i + 2] | v[i + 3];
	for (; i < n / 16; i++) acc |= v[i];
	uint64_t tail = 0;
	if (n % 16) memcpy(&tail, (const char *)p + n - 8, 8);
	return !(acc[0] | acc[1] | tail);
}
#endif

#if CONFIG_WRITE_AFTER_FREE_CHECK
/* A slab with at least this many free slots is being filled again (a structure built
 * after another was freed): the allocations that follow take its slots in random order,
 * and each one's write-after-free scan starts with a line no hardware prefetcher can
 * foresee. Asked for all at once, those lines arrive together (list -7% side by side;
 * small churn, sqlite and tree unchanged). In churn a slab has a slot or two free, and
 * the slot the quarantine hands over serves most allocations: nothing is asked for
 * there. */
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
#endif

static unsigned assign_arena(void)
{
	unsigned a = atomic_fetch_add_explicit(&next_arena, 1, memory_order_relaxed) % ro.slab.arenas + 1;
	if (!arena_is_open(a - 1)) slab_arena_open(a - 1);
	lock_owner_init(); /* a thread's first allocation: its mark for the lock words (lock.h) */
	tls_arena = a;
	return a;
}

void *slab_alloc(unsigned c, size_t size, bool zero)
{
	unsigned a = tls_arena;
	if (unlikely(!a)) a = assign_arena();
	struct slab_class *k = &ro.slab.classes[(a - 1) * SC_COUNT + c];
	class_lock(k);
#if CONFIG_SLOT_QUARANTINE
	if (unlikely(k->ndeferred)) slot_quarantine_drain(k);
#endif
	uint32_t pos, i;
	struct slab *s;
	bool fresh = false;
#if CONFIG_SLOT_QUARANTINE
	/* The slot that last left the quarantine, if no allocation took it yet. */
	if (slot_quarantine_take_released(k, &pos, &i)) {
		s = desc(k, pos);
	} else
#endif
	{
		if (unlikely(!k->partial) && !slab_new(k)) {
			class_unlock(k);
			return NULL;
		}
		pos = k->partial - 1;
		s = desc(k, pos);
#if CONFIG_WRITE_AFTER_FREE_CHECK
		if (unlikely(k->slots - s->nused >= PREFETCH_MIN_FREE) && k->prefetched != pos + 1)
			prefetch_free_slots(k, s, pos);
#endif
		i = pick_slot(k, s);
		uint64_t bit = (uint64_t)1 << (i & 63);
		bits_write(&s->bits[i >> 6].used, s->bits[i >> 6].used | bit);
		if (++s->nused == k->slots) slab_partial_remove(k, s);
		fresh = s->bits[i >> 6].fresh & bit;
		s->bits[i >> 6].fresh &= ~bit;
	}
	char *p = (char *)slab_start(k, pos) + (size_t)i * k->size;
	/* What the last free wiped; nothing to look at in a fresh slot. */
	size_t wiped = fresh ? k->usable : extent_of(k, s, i);
	set_extent(k, s, i, size);
#if CONFIG_SLOT_CANARY
	/* A slot keeps its canary from its first allocation on (a free wipes the data, not
	 * the canary), so only a fresh slot's is stamped, here under the lock: a free of a
	 * neighbour checks the canary of every live slot next to it, and must never see
	 * this one live without its canary. Any other allocation leaves the slot's last
	 * line alone: it was a cache miss on every reuse (about a third of slab_alloc's
	 * samples). A stale write over a freed slot's canary is found at the slot's next
	 * free, or at its neighbours'. */
	if (fresh && k->open_slabs) memcpy(p + k->usable, &s->canary, 8);
#endif
	class_unlock(k);
	if (fresh || !k->open_slabs) return p;

#if CONFIG_WRITE_AFTER_FREE_CHECK
	/* The slot is ours alone now (no neighbour check reads a live slot's data), so the
	 * scan for stale writes runs outside the lock, over what the last free wiped. */
	if (unlikely(!all_zero(p, wiped))) report_fatal(OP_ALLOC, ERR_WRITE_AFTER_FREE, p);
	size_t known_zero = wiped;
#else
	/* Without the check a stale pointer may have written since the wipe: calloc must
	 * return zeros to a correct program whatever a buggy one did. */
	size_t known_zero = 0;
	(void)wiped;
#endif
	if (zero && size > known_zero) memset(p + known_zero, 0, size - known_zero);
	return p;
}

/* Decode a pointer that must be the start of a live slot of k (lock held). */
/* A pointer that is not a live slot: fatal, except that a free under on_error=report is
 * reported and ignored (report_go_on). The class lock is given back either way. */
static noinline cold struct slab *not_live(struct slab_class *k, enum report_op op, enum report_kind kind,
					   const void *p)
{
	class_unlock(k);
	if (!report_go_on(op, kind, p)) report_fatal(op, kind, p);
	return NULL;
}

/* The descriptor of the live slot at a, or NULL (lock given back) when a free of
 * anything else is to be ignored; otherwise a fatal report naming what a is. Always
 * inlined: as a call, its out-parameters would live on the stack, and the stack
 * protector would then guard every free (measured: 2% of small churn with the
 * allocation's own out-parameter, now gone too). */
static inline __attribute__((always_inline)) struct slab *
live_slot(struct slab_class *k, uintptr_t a, const struct area_span *span, uint32_t *pos_out, uint32_t *i_out,
	  enum report_op op)
{
	size_t off = position_offset(span, a);
	if (unlikely(off == SIZE_MAX)) return not_live(k, op, ERR_NOT_LIVE, (void *)a); /* a guard area */
	uint32_t pos = div32((uint32_t)(off >> k->page_shift), k->pages, k->pages_magic);
	if (unlikely(pos >= k->hwm)) return not_live(k, op, ERR_NOT_LIVE, (void *)a);
	struct slab *s = desc(k, pos);
	if (unlikely(s->state != SLAB_ACTIVE)) {
		if (s->state == SLAB_NONE) return not_live(k, op, ERR_NOT_LIVE, (void *)a); /* a guard slab */
		return not_live(k, op, ERR_FREED_SLAB, (void *)a);
	}
	uint32_t in = (uint32_t)(off - (size_t)pos * k->slab_bytes);
	uint32_t i = div32(in, k->size, k->slot_magic);
	if (unlikely(i >= k->slots || i * k->size != in))
		return not_live(k, op, ERR_NOT_SLOT_START, (void *)a);
	uint64_t bit = (uint64_t)1 << (i & 63);
	if (unlikely(!(s->bits[i >> 6].used & bit)))
		return not_live(k, op, ERR_SLOT_NOT_ALLOCATED, (void *)a);
	if (unlikely(s->bits[i >> 6].quar & bit)) return not_live(k, op, ERR_SLOT_FREED, (void *)a);
	*pos_out = pos;
	*i_out = i;
	return s;
}

/* A slot's canary word (8-aligned): read atomically, since another thread's batched
 * free may swap it at the same moment (slab_batch_free). */
static inline uint64_t canary_word(uintptr_t end) { return __atomic_load_n((const uint64_t *)end, __ATOMIC_RELAXED); }

#if CONFIG_SLOT_CANARY
static noinline cold void canary_damaged(struct slab_class *k, const struct slab *s, uintptr_t a, uint64_t v,
					 enum report_op op)
{
#if SLAB_FREE_BATCHES
	if (v == batched_canary(s)) die(k, op, ERR_SLOT_FREED, (void *)a);
#else
	(void)s, (void)v;
#endif
	die(k, op, ERR_CANARY, (void *)a);
}
#endif

static inline void check_canary(struct slab_class *k, const struct slab *s, uintptr_t a, enum report_op op)
{
#if CONFIG_SLOT_CANARY
	uint64_t v = canary_word(a + k->usable);
	if (unlikely(v != s->canary)) canary_damaged(k, s, a, v, op);
#else
	(void)k, (void)s, (void)a, (void)op;
#endif
}

/* A slot live by its bits may wait in a thread's free batch: freed already. (Its canary
 * is checked at its free; a question about its size reads just the mark.) */
static inline void check_not_batched(struct slab_class *k, const struct slab *s, uintptr_t a, enum report_op op)
{
#if SLAB_FREE_BATCHES
	if (k->open_slabs && unlikely(canary_word(a + k->usable) == batched_canary(s))) die(k, op, ERR_SLOT_FREED, (void *)a);
#else
	(void)k, (void)s, (void)a, (void)op;
#endif
}

static inline bool slot_live(const struct slab *s, uint32_t i)
{
	return (s->bits[i >> 6].used & ~s->bits[i >> 6].quar) >> (i & 63) & 1;
}

/* All ones when bit i (mod 64) of x is set, else zero. */
static inline uint64_t bit_mask(uint64_t x, uint32_t i) { return -(x >> (i & 63) & 1); }

static noinline cold void neighbour_damaged(struct slab_class *k, uintptr_t slot, uint64_t live)
{
	die(k, OP_FREE, live ? ERR_NEIGHBOUR_CANARY : ERR_FREED_NEIGHBOUR, (void *)slot);
}

/* A live neighbour may wait in a thread's free batch: its canary word is marked so. */
static inline bool batched_neighbour(const struct slab *s, uint64_t v, uint64_t live)
{
#if SLAB_FREE_BATCHES
	return live && v == batched_canary(s);
#else
	(void)s, (void)v, (void)live;
	return false;
#endif
}

/* A free also checks what a bug in the freed block can have damaged without touching
 * its own canary: the slot before it (an underflow ends in that slot's canary) and a
 * free slot after it (an overflow that stepped over the canary). A live slot after it
 * holds data nobody can judge; it is checked at its own free. Lock held, so a live
 * neighbour's canary is already stamped (slab_alloc stamps it under the lock).
 * Whether a neighbour is live is a coin toss in churn, so what each check expects is
 * worked out with masks, not branches on it (measured, small churn: the checks cost
 * about 5% of the run as branches, half that as masks). */
static inline void check_neighbours(struct slab_class *k, const struct slab *s, uintptr_t a, uint32_t i)
{
	if (i > 0) {
		const struct slot_bits *b = &s->bits[(i - 1) >> 6];
		uint64_t live = bit_mask(b->used & ~b->quar, i - 1), fresh = bit_mask(b->fresh, i - 1);
#if CONFIG_SLOT_CANARY
		uint64_t v = canary_word(a - 8);
#else
		uint64_t v;
		memcpy(&v, (const char *)a - 8, 8);
#endif
		/* A slot ends in its canary once handed out, live or freed since (a free
		 * wipes the data, not the canary), in zeros while fresh; a live slot is never
		 * fresh. Without zero-on-free a free slot's end is not judged, nor without
		 * canaries a live slot's (that is its data). */
		uint64_t expect = CONFIG_SLOT_CANARY ? s->canary & ~fresh : 0;
		uint64_t judged = (CONFIG_ZERO_ON_FREE ? ~(uint64_t)0 : live) & (CONFIG_SLOT_CANARY ? ~(uint64_t)0 : ~live);
		if (unlikely((v ^ expect) & judged) && !batched_neighbour(s, v, live)) neighbour_damaged(k, a - k->size, live);
	}
#if CONFIG_ZERO_ON_FREE
	if (i + 1 < k->slots) {
		const struct slot_bits *b = &s->bits[(i + 1) >> 6];
		uint64_t live = bit_mask(b->used & ~b->quar, i + 1), fresh = bit_mask(b->fresh, i + 1);
		/* A live next slot's data is its owner's, who may be writing it now: read the
		 * freed slot's own first words instead then (masked out below). */
		uint64_t v[2];
		memcpy(v, (const char *)a + (k->size & ~live), 16);
		/* In a slot of 16 bytes the second word is the canary (kept once handed out). */
		uint64_t second = CONFIG_SLOT_CANARY && k->usable < 16 ? s->canary & ~fresh : 0;
		if (unlikely((v[0] | (v[1] ^ second)) & ~live)) neighbour_damaged(k, a + k->size, 0);
	}
#endif
}

/* A free of a pointer into an arena that never opened: fatal, or under
 * on_error=report reported and ignored. */
static noinline cold void free_unopened(const void *p)
{
	if (!report_go_on(OP_FREE, ERR_NOT_LIVE, p)) report_fatal(OP_FREE, ERR_NOT_LIVE, p);
}

#if SLAB_FREE_BATCHES
/* A free from a thread of another arena, without the class lock: the slot is checked
 * to be live, claimed by swapping its canary for the batched mark (one atomic), wiped,
 * and put in the thread's batch for its class; the batch enters the quarantine under one
 * acquisition of the lock (slab_batched_enter). False, having changed nothing, for
 * anything but a clean free of a live slot: the locked path then judges it, with its
 * exact report (a double free of a batched slot finds the mark there). Reads what the
 * lock guards as slab_class.h's invariants allow. */
static noinline bool slab_batch_free(struct slab_class *k, uintptr_t a, const struct area_span *sp, bool sized,
				     unsigned c_claimed)
{
	if (!k->open_slabs || (sized && c_claimed != k->cls)) return false;
	size_t lo = __atomic_load_n(&sp->lo, __ATOMIC_RELAXED), off = a - __atomic_load_n(&sp->base, __ATOMIC_RELAXED);
	if (off - lo >= __atomic_load_n(&sp->hi, __ATOMIC_RELAXED) - lo) return false;
	uint32_t pos = div32((uint32_t)(off >> k->page_shift), k->pages, k->pages_magic);
	/* Acquire: a directory that holds position pos is seen with the hwm that covers it
	 * (fresh_slab), even for a pointer whose free races with the class's growth. */
	if (pos >= __atomic_load_n(&k->hwm, __ATOMIC_ACQUIRE)) return false;
	struct slab *s;
	if (pos < FIRST_POSITIONS) {
		s = &k->first[(size_t)pos * SC_COUNT];
	} else {
		struct slab *chunk = __atomic_load_n(&__atomic_load_n(&k->dir, __ATOMIC_ACQUIRE)[pos >> CHUNK_SHIFT],
						     __ATOMIC_ACQUIRE);
		if (!chunk) return false;
		s = &chunk[pos & (CHUNK - 1)];
	}
	if (s->state != SLAB_ACTIVE) return false;
	uint32_t in = (uint32_t)(off - (size_t)pos * k->slab_bytes);
	uint32_t i = div32(in, k->size, k->slot_magic);
	if (i >= k->slots || i * k->size != in) return false;
	/* The batch first: a full one enters the quarantine now, and this very slot may be
	 * in it (a second free by this thread), which the bits below must then show. */
	struct free_batch *fb = slab_batch_for((unsigned)(k - ro.slab.classes));
	if (!fb) return false;
	uint64_t bit = (uint64_t)1 << (i & 63);
	const struct slot_bits *b = &s->bits[i >> 6];
	if (!(__atomic_load_n(&b->used, __ATOMIC_RELAXED) & ~__atomic_load_n(&b->quar, __ATOMIC_RELAXED) & bit))
		return false;
	uint64_t expect = s->canary, mark = batched_canary(s);
	if (!__atomic_compare_exchange_n((uint64_t *)(a + k->usable), &expect, mark, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return false; /* freed already (the mark), or the canary is damaged */
	/* Ours alone now against any other batched free, and a neighbour's check takes it
	 * for live (its bits say so), reading none of its data. A free under the lock in
	 * another thread at this very moment (a double free in two threads at once) does
	 * not write the canary and can have passed too: the mark in the slot's first word
	 * makes that slot, in the quarantine meanwhile, fail the check of whoever next
	 * looks at its data (its reuse's write-after-free scan, a neighbour's free, this
	 * batch's entry into the quarantine). */
#if CONFIG_ZERO_ON_FREE
	memset((void *)a, 0, extent_of(k, s, i));
#endif
	memcpy((void *)a, &mark, 8);
	fb->e[fb->n] = qentry(pos, i);
	/* Release: a fork child reading the batch of a thread that does not exist there
	 * sees the entry before the count that covers it. */
	__atomic_store_n(&fb->n, (uint16_t)(fb->n + 1), __ATOMIC_RELEASE);
	return true;
}

void slab_batched_enter(struct slab_class *k, qentry_t e)
{
	uint32_t pos = qentry_pos(e), i = qentry_slot(e);
	struct slab *s = desc(k, pos);
	uintptr_t a = slab_start(k, pos) + (size_t)i * k->size;
	uint64_t bit = (uint64_t)1 << (i & 63);
	/* Live by its bits until now: a free that raced with the batched one (a double
	 * free in two threads at once) may have put it in the quarantine meanwhile. */
	if (unlikely(!(s->bits[i >> 6].used & ~s->bits[i >> 6].quar & bit)))
		die(k, OP_FREE, ERR_SLOT_FREED, (void *)a);
	uint64_t *word = (uint64_t *)(a + k->usable), mark = batched_canary(s), first;
	if (unlikely(canary_word((uintptr_t)word) != mark))
		die(k, OP_FREE, ERR_FREED_CANARY, (void *)a);
	memcpy(&first, (const void *)a, 8);
	if (unlikely(first != mark)) die(k, OP_FREE, ERR_WRITE_AFTER_FREE, (void *)a);
	memset((void *)a, 0, 8);
	__atomic_store_n(word, s->canary, __ATOMIC_RELAXED);
	check_neighbours(k, s, a, i);
	bits_write(&s->bits[i >> 6].quar, s->bits[i >> 6].quar | bit);
	if (k->defer_frees) slot_quarantine_defer(k, e);
	else slot_quarantine_put_entry(k, e);
}
#endif

void slab_free(void *p, bool sized, unsigned c_claimed)
{
	uintptr_t a = (uintptr_t)p;
	const struct area_span *span;
	struct slab_class *k = class_at(a, &span);
	if (unlikely(!k)) {
		free_unopened(p);
		return;
	}
#if SLAB_FREE_BATCHES
	if (tls_arena != k->arena1 && !os_single_threaded() && slab_batch_free(k, a, span, sized, c_claimed)) return;
#endif
	class_lock(k);
	uint32_t pos = 0, i = 0; /* set by live_slot when it answers */
	struct slab *s = live_slot(k, a, span, &pos, &i, OP_FREE);
	if (unlikely(!s)) return; /* on_error=report: reported and ignored */
	if (unlikely(sized && c_claimed != k->cls) && !report_go_on(OP_FREE, ERR_WRONG_SIZE, p))
		die(k, OP_FREE, ERR_WRONG_SIZE, p);
	if (k->open_slabs) {
		check_canary(k, s, a, OP_FREE);
		check_neighbours(k, s, a, i);
#if CONFIG_ZERO_ON_FREE
		/* What the program could have written (the canary stays); the extent stays
		 * as the record of what the next allocation must find zero. */
		memset(p, 0, extent_of(k, s, i));
#endif
	}
#if CONFIG_SLOT_QUARANTINE
	bits_write(&s->bits[i >> 6].quar, s->bits[i >> 6].quar | (uint64_t)1 << (i & 63));
	if (likely(tls_arena == k->arena1) || !k->defer_frees) slot_quarantine_put(k, pos, i);
	else slot_quarantine_defer(k, qentry(pos, i));
#else
	slab_release_slot(k, s, pos, i);
#endif
	class_unlock(k);
}

size_t slab_usable_size(const void *p)
{
	const struct area_span *span;
	struct slab_class *k = class_at((uintptr_t)p, &span);
	if (unlikely(!k)) report_fatal(OP_USABLE_SIZE, ERR_NOT_LIVE, p);
	class_lock(k);
	uint32_t pos = 0, i = 0; /* set by live_slot when it answers */
	struct slab *s = live_slot(k, (uintptr_t)p, span, &pos, &i, OP_USABLE_SIZE);
	check_not_batched(k, s, (uintptr_t)p, OP_USABLE_SIZE);
	set_extent(k, s, i, k->usable); /* the program may use all of it now */
	class_unlock(k);
	return k->usable;
}

bool slab_resize(void *p, unsigned c_new, size_t size, size_t *copy)
{
	const struct area_span *span;
	struct slab_class *k = class_at((uintptr_t)p, &span);
	if (unlikely(!k)) report_fatal(OP_REALLOC, ERR_NOT_LIVE, p);
	class_lock(k);
	uint32_t pos = 0, i = 0; /* set by live_slot when it answers */
	struct slab *s = live_slot(k, (uintptr_t)p, span, &pos, &i, OP_REALLOC);
	if (k->open_slabs) check_canary(k, s, (uintptr_t)p, OP_REALLOC);
	bool stays = c_new == k->cls;
	if (stays) grow_extent(k, s, i, size);
	*copy = extent_of(k, s, i);
	class_unlock(k);
	return stays;
}

size_t slab_object_size(const void *p)
{
	uintptr_t a = (uintptr_t)p;
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
	size_t off = position_offset(span, a);
	if (unlikely(off == SIZE_MAX)) die(k, OP_OBJECT_SIZE, ERR_NOT_LIVE_INSIDE, p);
	uint32_t pos = div32((uint32_t)(off >> k->page_shift), k->pages, k->pages_magic);
	if (unlikely(pos >= k->hwm || desc(k, pos)->state != SLAB_ACTIVE)) die(k, OP_OBJECT_SIZE, ERR_NOT_LIVE_INSIDE, p);
	struct slab *s = desc(k, pos);
	uint32_t in = (uint32_t)(off - (size_t)pos * k->slab_bytes);
	uint32_t i = div32(in, k->size, k->slot_magic), at = in - i * k->size;
	if (unlikely(i >= k->slots || !slot_live(s, i))) die(k, OP_OBJECT_SIZE, ERR_NOT_LIVE_INSIDE, p);
	check_not_batched(k, s, slab_start(k, pos) + (size_t)i * k->size, OP_OBJECT_SIZE);
	if (at < k->usable) set_extent(k, s, i, k->usable); /* told it may use all of it */
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
		uintptr_t start = slab_start(k, pos);
		for (uint32_t i = 0; i < k->slots; i++) {
			if (!slot_live(s, i)) continue;
			uint64_t v = canary_word(start + (size_t)i * k->size + k->usable);
			if (likely(v == s->canary)) continue;
#if SLAB_FREE_BATCHES
			if (v == batched_canary(s)) continue; /* freed, in another thread's batch */
#endif
			if (*last) report_fatal_line(OP_EXIT, ERR_EXIT_CANARY, (const void *)*last);
			*last = start + (size_t)i * k->size;
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
	if (atomic_load_explicit(&rampart_state, memory_order_acquire) != STATE_READY || !ro.opt.check_at_exit)
		return;
	uintptr_t last = 0;
	unsigned n = ro.slab.arenas * SC_COUNT;
	for (unsigned r = 0; r < n; r++)
		if (class_is_set_up(r) && r % SC_COUNT) check_class_at_exit(&ro.slab.classes[r], &last);
	if (last) report_fatal(OP_EXIT, ERR_EXIT_CANARY, (void *)last);
#endif
}
