/*
 * slot_check.h — judging a slot: is it live, is its canary intact, has a bug in it
 * damaged its neighbours. Inline, since every free, realloc and size question runs some
 * of it; the reports are cold and out of line. Included by slot_alloc.c and
 * batched_free.c.
 *
 * Invariants:
 *  - Called with the class lock held (a live neighbour's canary is stamped then).
 *  - A check only reads a slot's state; a damaged one is a fatal report (die) with the
 *    class lock given back. Nothing here calls into another file of the slab.
 */
#ifndef RAMPART_SLOT_CHECK_H
#define RAMPART_SLOT_CHECK_H

#include <string.h>

#include "slab/slab_class.h"
#include "slab/slot_tag.h"

#if CONFIG_ZERO_ON_FREE
/* Are the n bytes at p (16-byte aligned, n a multiple of 8) all zero? 64 bytes a step in
 * 16-byte vectors, which every x86_64 (SSE2) and arm64 (NEON) has: this scan is most of
 * what a write-after-free check costs, and all the slack check costs. */
typedef uint64_t zero_vec __attribute__((vector_size(16), aligned(16), may_alias));
static inline bool all_zero(const void *p, size_t n)
{
	const zero_vec *v = p;
	zero_vec acc = {0, 0};
	size_t i = 0;
	/* The hardware prefetcher follows a stream only within a page: a request for the
	 * first line of every later page at once takes the stall at each page start off
	 * the scan. */
	for (size_t pg = 4096 / 16; pg < n / 16; pg += 4096 / 16) __builtin_prefetch(v + pg);
	for (; i + 4 <= n / 16; i += 4) acc |= v[i] | v[i + 1] | v[i + 2] | v[i + 3];
	for (; i < n / 16; i++) acc |= v[i];
	uint64_t tail = 0;
	if (n % 16) memcpy(&tail, (const char *)p + n - 8, 8);
	return !(acc[0] | acc[1] | tail);
}

/* The slack: a slot's bytes from its extent to its usable size. With zero-on-free a slot
 * is all zero when it is handed out (a fresh slot is; a free wipes the extent and proves
 * the slack zero), and the program may write only its extent, which grows as it is told
 * of more (malloc_usable_size, an in-place realloc): bytes of the slack found written
 * are an overflow past the request (or a stale pointer's write), and are never wiped,
 * so no byte the previous owner wrote there reaches the next one. Checked at the free
 * (the whole slack, before the wipe) and wherever the extent grows (the bytes it takes
 * in). Reading costs less than wiping: the slack of a big slot is often pages the
 * program never touched, which a read maps to the shared zero page and a wipe would
 * make resident. Extents are kept to the byte (slab_class.h), so an overflow of one
 * byte past the request is found. Are the bytes of slot a from `from` (its extent then)
 * to `to` (another extent, or the usable size) zero? */
static inline bool slack_zero(uintptr_t a, size_t from, size_t to)
{
	if (from >= to) return true;
	const unsigned char *b = (const unsigned char *)a;
	/* In whole 8-byte words, the first and the last masked to the bytes of [from, to):
	 * a slot's usable size is a multiple of 8 (its canary follows, aligned), so every
	 * word read is the slot's own. A free's slack is mostly a word or two; byte loops
	 * at both ends were most of what the check cost. */
	size_t w0 = from & ~(size_t)7, w1 = (to + 7) & ~(size_t)7;
	uint64_t first, last, keep_last = to & 7 ? ~(~(uint64_t)0 << 8 * (to & 7)) : ~(uint64_t)0;
	memcpy(&first, b + w0, 8);
	first &= ~(uint64_t)0 << 8 * (from & 7);
	if (w1 - w0 == 8) return !(first & keep_last);
	memcpy(&last, b + w1 - 8, 8);
	if (first | (last & keep_last)) return false;
	size_t lo = w0 + 8, hi = w1 - 8;
	if (lo < hi && (lo & 15)) { /* all_zero starts on a vector */
		uint64_t w;
		memcpy(&w, b + lo, 8);
		if (w) return false;
		lo += 8;
	}
	return lo >= hi || all_zero(b + lo, hi - lo);
}
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "slack_zero's masks take a word's first bytes as its low ones");

static noinline cold __attribute__((unused)) void slack_written(struct slab_class *k, uintptr_t a, enum report_op op)
{
	die(k, op, ERR_SLACK, (void *)a);
}

/* Lock held. */
static inline void check_slack(struct slab_class *k, uintptr_t a, size_t from, size_t to, enum report_op op)
{
	if (unlikely(!slack_zero(a, from, to))) slack_written(k, a, op);
}
#else
static inline void check_slack(struct slab_class *k, uintptr_t a, size_t from, size_t to, enum report_op op)
{
	(void)k, (void)a, (void)from, (void)to, (void)op;
}
#endif

/* A slot's canary word (8-aligned): read atomically, since another thread's batched
 * free may swap it at the same moment (slab_batch_free, batched_free.c). */
static inline uint64_t canary_word(uintptr_t end) { return __atomic_load_n((const uint64_t *)end, __ATOMIC_RELAXED); }

#if CONFIG_SLOT_CANARY
static noinline cold __attribute__((unused)) void canary_damaged(struct slab_class *k, const struct slab *s, uintptr_t a, uint64_t v,
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

static noinline cold __attribute__((unused)) void neighbour_damaged(struct slab_class *k, uintptr_t slot, uint64_t live)
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
 * worked out with masks, not branches on it (branches on it mispredict about half the
 * time). */
static inline void check_neighbours(struct slab_class *k, const struct slab *s, uintptr_t a, uint32_t i)
{
	if (i > 0) {
		const struct slot_bits *b = &s->bits[(i - 1) >> 6];
		uint64_t live = bit_mask(b->used & ~b->quar, i - 1), fresh = bit_mask(b->fresh, i - 1);
		/* Read unchecked (it may be live, or retagged by a batched free: slot_tag.h). */
		uint64_t v = slot_word(a - 8);
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

#endif
