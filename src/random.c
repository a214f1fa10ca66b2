/* random.c — ChaCha20 keystream as a random number generator (RFC 8439 block function). */
#include "random.h"

#include <string.h>

#include "os.h"

#define ROTL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))
#define QR(a, b, c, d)                                   \
	do {                                             \
		a += b; d ^= a; d = ROTL(d, 16);         \
		c += d; b ^= c; b = ROTL(b, 12);         \
		a += b; d ^= a; d = ROTL(d, 8);          \
		c += d; b ^= c; b = ROTL(b, 7);          \
	} while (0)

void chacha20_block(const uint32_t key[8], uint64_t counter, const uint32_t nonce[2], uint32_t out[16])
{
	/* "expand 32-byte k"; word 12 is the block counter, 13..15 the nonce (RFC 8439). */
	uint32_t in[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
	memcpy(&in[4], key, 32);
	in[12] = (uint32_t)counter;
	in[13] = (uint32_t)(counter >> 32);
	in[14] = nonce[0];
	in[15] = nonce[1];
	uint32_t x[16];
	memcpy(x, in, sizeof x);
	for (int i = 0; i < 10; i++) {
		QR(x[0], x[4], x[8], x[12]);
		QR(x[1], x[5], x[9], x[13]);
		QR(x[2], x[6], x[10], x[14]);
		QR(x[3], x[7], x[11], x[15]);
		QR(x[0], x[5], x[10], x[15]);
		QR(x[1], x[6], x[11], x[12]);
		QR(x[2], x[7], x[8], x[13]);
		QR(x[3], x[4], x[9], x[14]);
	}
	for (int i = 0; i < 16; i++) out[i] = x[i] + in[i];
}

void random_reseed(struct random_state *r)
{
	os_random(r->key, sizeof r->key);
	r->counter = 0;
	r->until_reseed = RANDOM_RESEED_BYTES;
	r->pos = RANDOM_BUF_BYTES;
}

static void refill(struct random_state *r)
{
	static const uint32_t nonce[2] = {0, 0};
	if (r->until_reseed < RANDOM_BUF_BYTES) random_reseed(r);
	uint32_t block[16];
	for (size_t off = 0; off < RANDOM_BUF_BYTES; off += 64) {
		chacha20_block(r->key, r->counter++, nonce, block);
		memcpy(r->buf + off, block, 64);
	}
	/* Fast key erasure: the first 32 bytes become the next key and are never output. */
	memcpy(r->key, r->buf, sizeof r->key);
	r->pos = sizeof r->key;
	r->until_reseed -= RANDOM_BUF_BYTES;
}

uint64_t random_u64(struct random_state *r)
{
	if (unlikely(r->pos + 8 > RANDOM_BUF_BYTES)) refill(r);
	uint64_t v;
	memcpy(&v, r->buf + r->pos, 8);
	memset(r->buf + r->pos, 0, 8);
	r->pos += 8;
	return v;
}

uint64_t random_below(struct random_state *r, uint64_t bound)
{
	/* Lemire's multiply-and-reject: unbiased without a division on the common path. */
	unsigned __int128 m = (unsigned __int128)random_u64(r) * bound;
	uint64_t low = (uint64_t)m;
	if (low < bound) {
		uint64_t threshold = -bound % bound;
		while (low < threshold) {
			m = (unsigned __int128)random_u64(r) * bound;
			low = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}
