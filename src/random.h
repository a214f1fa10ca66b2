/*
 * random.h — a ChaCha8-based CSPRNG, one state per user (per lock), so no state
 * is shared between threads. The keystream is made RANDOM_LANES blocks at a time and
 * buffered, so a draw is usually a load from the buffer.
 *
 * Invariants:
 *  - Seeded from getrandom(); reseeded after RANDOM_RESEED_BYTES of output and after
 *    fork() (random_reseed), so parent and child never share a future stream.
 *  - Fast key erasure: every refill replaces the key with fresh keystream, so output
 *    already used cannot be recomputed from a later state.
 */
#ifndef RAMPART_RANDOM_H
#define RAMPART_RANDOM_H

#include "common.h"

#define RANDOM_BUF_BYTES 512
#define RANDOM_LANES 4
#define RANDOM_DOUBLE_ROUNDS 4 /* ChaCha8 */
#define RANDOM_RESEED_BYTES (1u << 20)

struct random_state {
	uint32_t key[8];
	uint64_t counter;
	uint32_t until_reseed;
	uint32_t pos;
	uint8_t buf[RANDOM_BUF_BYTES];
};

void random_reseed(struct random_state *r);
uint64_t random_u64(struct random_state *r);
/* Uniform in [0, bound); bound > 0. */
uint64_t random_below(struct random_state *r, uint64_t bound);

/* Single ChaCha blocks (exposed for the known-answer unit tests; the generator uses
 * the same rounds, several blocks at a time). */
void chacha20_block(const uint32_t key[8], uint64_t counter, const uint32_t nonce[2], uint32_t out[16]);
void chacha8_block(const uint32_t key[8], uint64_t counter, const uint32_t nonce[2], uint32_t out[16]);

#endif
