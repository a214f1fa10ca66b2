/*
 * random.h — a ChaCha8-based CSPRNG, one state per user (per lock), so no state
 * is shared between threads. The keystream is made RANDOM_LANES blocks at a time and
 * buffered, so a draw is usually a load from the buffer.
 *
 * Invariants:
 *  - Seeded from getrandom(), or from a random_source (a generator that seeds others:
 *    one getrandom() where a process sets up dozens of generators); reseeded the same
 *    way after RANDOM_RESEED_BYTES of output, and on the
 *    first draw in a child after fork(): random_fork_child() moves the fork generation
 *    on, and a state whose generation is older reseeds before it answers. So parent and
 *    child never share a future stream, and fork itself writes no state (every page a
 *    child writes after fork is a copy: touching none keeps fork + exec cheap).
 *  - Fast key erasure: every refill replaces the key with fresh keystream, so output
 *    already used cannot be recomputed from a later state.
 */
#ifndef RAMPART_RANDOM_H
#define RAMPART_RANDOM_H

#include "common.h"
#include "lock.h"

/* One refill of RANDOM_LANES blocks: a bigger buffer measured no faster, and every
 * size class of every arena carries one (in its arena's metadata block, where a process
 * writes it after fork). */
#define RANDOM_BUF_BYTES (64 * RANDOM_LANES)
#define RANDOM_LANES 4
#define RANDOM_DOUBLE_ROUNDS 4 /* ChaCha8 */
#define RANDOM_RESEED_BYTES (1u << 20)

struct random_source;

struct random_state {
	struct random_source *source; /* where its keys come from; NULL: getrandom() */
	uint32_t key[8];
	uint64_t counter;
	uint32_t until_reseed;
	uint32_t pos;
	uint32_t generation; /* the fork generation it was seeded in */
	uint8_t buf[RANDOM_BUF_BYTES];
};

/* A generator whose keystream seeds other generators (random_state.source): 32 bytes
 * each, erased from it as they are taken. Its own key comes from getrandom(), so a
 * process makes one such call at start-up and one in a child after fork, not one per
 * generator (a size class each: `tr` sets up about 17 classes, and asked for 21 keys). The lock is a
 * leaf: taken inside any other, never around one. */
struct random_source {
	struct lock lock;
	struct random_state state;
};
void random_source_init(struct random_source *s);

/* Moved on by random_fork_child(); read by every draw. */
extern uint32_t random_generation;

void random_reseed(struct random_state *r);
uint64_t random_u64(struct random_state *r);
/* The buffered keystream is spent, or the state predates the last fork. */
void random_refill(struct random_state *r);
/* n bytes of keystream into out, erased from the buffer as they are taken. */
static inline void random_take(struct random_state *r, void *out, uint32_t n)
{
	if (unlikely(r->pos + n > RANDOM_BUF_BYTES || r->generation != random_generation)) random_refill(r);
	__builtin_memcpy(out, r->buf + r->pos, n);
	__builtin_memset(r->buf + r->pos, 0, n);
	r->pos += n;
}
/* 16 bits: the cheap draw for slot choices, inlined. */
static inline uint32_t random_u16(struct random_state *r)
{
	uint16_t v;
	random_take(r, &v, sizeof v);
	return v;
}
/* In the child, from the fork handler (one thread): every state reseeds on next use. */
void random_fork_child(void);
/* Uniform in [0, bound); bound > 0. */
uint64_t random_below(struct random_state *r, uint64_t bound);

/* Single ChaCha blocks (exposed for the known-answer unit tests; the generator uses
 * the same rounds, several blocks at a time). */
void chacha20_block(const uint32_t key[8], uint64_t counter, const uint32_t nonce[2], uint32_t out[16]);
void chacha8_block(const uint32_t key[8], uint64_t counter, const uint32_t nonce[2], uint32_t out[16]);

#endif
