/*
 * random.c — a ChaCha keystream as a random number generator (RFC 8439 block layout).
 *
 * Why ChaCha8 and not ChaCha20: the generator's output never leaves the process and is
 * never a key; eight rounds keep a wide margin over the best known attack (on seven
 * rounds), the argument of Aumasson's "Too Much Crypto" (2019), and Go's runtime and
 * math/rand/v2 use ChaCha8 as their CSPRNG on the same grounds. It costs 2.5 times less.
 */
#include "os/random.h"

#include <string.h>
#include <sys/mman.h>

#include "os/os.h"

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18 /* Linux 4.14; older C library headers lack it */
#endif

#define ROTL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))
#define QR(a, b, c, d)                                   \
	do {                                             \
		a += b; d ^= a; d = ROTL(d, 16);         \
		c += d; b ^= c; b = ROTL(b, 12);         \
		a += b; d ^= a; d = ROTL(d, 8);          \
		c += d; b ^= c; b = ROTL(b, 7);          \
	} while (0)

/* One ChaCha block with the given number of double rounds (RFC 8439 layout). */
static void chacha_block(const uint32_t key[8], uint64_t counter, const uint32_t nonce[2], uint32_t out[16],
			 int double_rounds)
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
	for (int i = 0; i < double_rounds; i++) {
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

void chacha20_block(const uint32_t key[8], uint64_t counter, const uint32_t nonce[2], uint32_t out[16])
{
	chacha_block(key, counter, nonce, out, 10);
}

void chacha8_block(const uint32_t key[8], uint64_t counter, const uint32_t nonce[2], uint32_t out[16])
{
	chacha_block(key, counter, nonce, out, RANDOM_DOUBLE_ROUNDS);
}

/* RANDOM_LANES consecutive blocks of the generator's ChaCha, computed side by side: each
 * step is the same operation on every lane, which compilers turn into SIMD on baseline
 * x86_64 (SSE2) and arm64 (NEON) without any -march. Little-endian byte order, as the
 * single-block function writes it. */
static void chacha_lanes(const uint32_t key[8], uint64_t counter, uint8_t *out)
{
	uint32_t in[16][RANDOM_LANES], x[16][RANDOM_LANES];
	static const uint32_t sigma[4] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
	for (int l = 0; l < RANDOM_LANES; l++) {
		for (int w = 0; w < 4; w++) in[w][l] = sigma[w];
		for (int w = 0; w < 8; w++) in[4 + w][l] = key[w];
		in[12][l] = (uint32_t)(counter + (uint64_t)l);
		in[13][l] = (uint32_t)((counter + (uint64_t)l) >> 32);
		in[14][l] = in[15][l] = 0;
	}
	memcpy(x, in, sizeof x);
#define QRL(a, b, c, d) \
	for (int l = 0; l < RANDOM_LANES; l++) QR(x[a][l], x[b][l], x[c][l], x[d][l])
	for (int i = 0; i < RANDOM_DOUBLE_ROUNDS; i++) {
		QRL(0, 4, 8, 12);
		QRL(1, 5, 9, 13);
		QRL(2, 6, 10, 14);
		QRL(3, 7, 11, 15);
		QRL(0, 5, 10, 15);
		QRL(1, 6, 11, 12);
		QRL(2, 7, 8, 13);
		QRL(3, 4, 9, 14);
	}
#undef QRL
	for (int l = 0; l < RANDOM_LANES; l++)
		for (int w = 0; w < 16; w++) {
			uint32_t v = x[w][l] + in[w][l];
			memcpy(out + 64 * l + 4 * w, &v, 4);
		}
}

union random_fork_page random_fork_page __attribute__((aligned(RANDOM_FORK_PAGE))) STATIC_APART(random_fork_page);

/* The last generation number given out, in memory a child inherits as it was: every
 * state's generation is at most this, so one above it is new to the process. */
static uint32_t generations;

void random_init(void)
{
	/* Wiping a page shared with other data would wipe that too. */
	if (os_page > sizeof random_fork_page) return;
	/* Refused (a kernel before 4.14, a seccomp filter): nothing to undo, and the fork
	 * handler still covers fork() (random_fork_child). */
	if (os_advise(&random_fork_page, os_page, MADV_WIPEONFORK)) return;
}

void random_fork_child(void)
{
	/* Read before written: where the kernel wiped the page, the read finds the zero page
	 * and no copy is made. */
	if (__atomic_load_n(&random_generation, __ATOMIC_RELAXED))
		__atomic_store_n(&random_generation, 0, __ATOMIC_RELAXED);
	if (__atomic_load_n(&random_fork_page.pool_left, __ATOMIC_RELAXED)) {
		memset(random_fork_page.pool, 0, sizeof random_fork_page.pool);
		__atomic_store_n(&random_fork_page.pool_left, 0, __ATOMIC_RELAXED);
	}
	/* Another thread may have held it at the fork; written only then (a write is a copy). */
	struct lock *l = &random_fork_page.pool_lock;
	if (atomic_load_explicit(&l->word, memory_order_relaxed) || atomic_load_explicit(&l->waiters, memory_order_relaxed))
		lock_reset(l);
}

void random_entropy(void *buf, size_t len)
{
	union random_fork_page *f = &random_fork_page;
	unsigned char *out = buf;
	if (len > sizeof f->pool) {
		os_random(buf, len);
		return;
	}
	lock_take(&f->pool_lock);
	if (f->pool_left < len) {
		os_random(f->pool, sizeof f->pool);
		f->pool_left = sizeof f->pool;
	}
	uint8_t *from = f->pool + sizeof f->pool - f->pool_left;
	memcpy(out, from, len);
	memset(from, 0, len);
	f->pool_left -= (uint32_t)len;
	lock_give(&f->pool_lock);
}

/* The process's generation, given a new number at its first reseed since it started
 * or was forked. Threads a child starts may get here together: one number wins. */
static uint32_t generation_now(void)
{
	uint32_t g = __atomic_load_n(&random_generation, __ATOMIC_RELAXED);
	if (likely(g)) return g;
	uint32_t fresh = __atomic_add_fetch(&generations, 1, __ATOMIC_RELAXED);
	if (!fresh) fresh = __atomic_add_fetch(&generations, 1, __ATOMIC_RELAXED); /* 0 means "forked" */
	if (__atomic_compare_exchange_n(&random_generation, &g, fresh, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return fresh;
	return g;
}

uint32_t random_generation_current(void) { return generation_now(); }

void random_reseed(struct random_state *r)
{
	struct random_source *s = r->source;
	if (s) {
		lock_take(&s->lock);
		random_take(&s->state, r->key, sizeof r->key); /* its state has no source */
		lock_give(&s->lock);
	} else {
		random_entropy(r->key, sizeof r->key);
	}
	r->generation = generation_now();
	invariant(r->generation != 0); /* 0 is a forked child's: no state holds it */
	r->counter = 0;
	r->until_reseed = RANDOM_RESEED_BYTES;
	r->pos = RANDOM_BUF_BYTES;
}

void random_source_init(struct random_source *s)
{
	lock_reset(&s->lock);
	s->state.source = NULL;
	random_reseed(&s->state);
}

void random_refill(struct random_state *r)
{
	if (r->until_reseed < RANDOM_BUF_BYTES || r->generation != __atomic_load_n(&random_generation, __ATOMIC_RELAXED))
		random_reseed(r);
	invariant(r->until_reseed >= RANDOM_BUF_BYTES &&
		  r->generation == __atomic_load_n(&random_generation, __ATOMIC_RELAXED));
	for (size_t off = 0; off < RANDOM_BUF_BYTES; off += 64 * RANDOM_LANES) {
		chacha_lanes(r->key, r->counter, r->buf + off);
		r->counter += RANDOM_LANES;
	}
	/* Fast key erasure: the first 32 bytes become the next key and are never output. */
	memcpy(r->key, r->buf, sizeof r->key);
	r->pos = sizeof r->key;
	r->until_reseed -= RANDOM_BUF_BYTES;
}

uint64_t random_u64(struct random_state *r)
{
	uint64_t v;
	random_take(r, &v, sizeof v);
	return v;
}

uint64_t random_below(struct random_state *r, uint64_t bound)
{
	invariant(bound > 0);
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
