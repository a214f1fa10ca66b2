/*
 * random.h — a ChaCha8-based CSPRNG, one state per user (per lock), so no state
 * is shared between threads. The keystream is made RANDOM_LANES blocks at a time and
 * buffered, so a draw is usually a load from the buffer.
 *
 * Invariants:
 *  - Seeded from getrandom(), or from a random_source (a generator that seeds others:
 *    one getrandom() where a process sets up dozens of generators); reseeded the same
 *    way after RANDOM_RESEED_BYTES of output, and on the first draw in a child after
 *    any fork: fork(), _Fork(), a raw fork or clone system call. The fork generation
 *    lives on a page the kernel zeroes in every child (MADV_WIPEONFORK, set by
 *    random_init at start-up): a child reads 0, which no state holds, so every state
 *    reseeds before it answers, and the first to do so gives the child a generation
 *    number above any its states inherited. No C library handler has to run, and no
 *    draw pays for it: the check is the same load and compare as before. So no two
 *    processes share a future stream, and fork itself writes no state (every page a
 *    child writes after fork is a copy: touching none keeps fork + exec cheap).
 *  - Where the page is not wiped (the kernel refused the advice, or an emulator
 *    ignores it) the fork handler zeroes it by hand: fork() children are covered
 *    there, children of _Fork() and of raw system calls are not.
 *  - Fast key erasure: every refill replaces the key with fresh keystream, so output
 *    already used cannot be recomputed from a later state.
 */
#ifndef RAMPART_RANDOM_H
#define RAMPART_RANDOM_H

#include "base/common.h"
#include "os/lock.h"

/* One refill of RANDOM_LANES blocks: a bigger buffer was no faster, and every size class
 * of every arena carries one (in its arena's metadata block, where a process writes it
 * after fork). */
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
	/* Its owner's mark, never touched here: the fork generation the owner last acted
	 * in (the slab's: the one its slot quarantine started in). In the padding the
	 * buffer's alignment leaves: no byte more. */
	uint32_t owner_generation;
	uint8_t buf[RANDOM_BUF_BYTES];
};
_Static_assert(sizeof(struct random_state) == 64 + RANDOM_BUF_BYTES, "the header is one cache line");

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

/* The page of the fork generation, alone on its page whatever the page size (the
 * kernel wipes whole pages): 4 KiB on x86_64; on arm64 the largest page Linux uses
 * there, 64 KiB (of address space: only the first page is ever touched, except under
 * mlockall). */
#if defined(__aarch64__)
#define RANDOM_FORK_PAGE 65536
#else
#define RANDOM_FORK_PAGE 4096
#endif
/* Bytes of one getrandom() that seed the process's generators (random_entropy). */
#define RANDOM_POOL_BYTES 256
union random_fork_page {
	struct {
		uint32_t generation; /* 0: nothing drawn in this process since it was forked */
		/* The entropy pool: a child starts with none (the page is wiped), so no two
		 * processes share a key. pool_left bytes at the end of pool are unused. */
		uint32_t pool_left;
		struct lock pool_lock; /* all zero: free (a child's, wiped, too); a leaf */
		uint8_t pool[RANDOM_POOL_BYTES];
	};
	char pad[RANDOM_FORK_PAGE];
};
extern union random_fork_page random_fork_page;
/* Read by every draw; set by the first reseed of a process (random.c). */
#define random_generation (random_fork_page.generation)

/* At start-up, once the page size is known: asks the kernel to wipe the generation's
 * page in every child. One madvise; nothing else at start-up. */
void random_init(void);

/* len bytes from the kernel's generator for keys and placements, erased from the pool as
 * they are taken: one getrandom() serves the several keys and window places a process
 * draws at start-up (it asked for six), one more in a child after fork. */
void random_entropy(void *buf, size_t len);

void random_reseed(struct random_state *r);
/* The process's fork generation, given a new number if it has none since its fork. */
uint32_t random_generation_current(void);
uint64_t random_u64(struct random_state *r);
/* The buffered keystream is spent, or the state predates the last fork. */
void random_refill(struct random_state *r);
/* n bytes of keystream into out, erased from the buffer as they are taken. */
static inline void random_take(struct random_state *r, void *out, uint32_t n)
{
	if (unlikely(r->pos + n > RANDOM_BUF_BYTES ||
		     r->generation != __atomic_load_n(&random_generation, __ATOMIC_RELAXED)))
		random_refill(r);
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
/* In the child, from the fork handler (one thread): what the kernel's wipe did, for
 * where it did not. */
void random_fork_child(void);
/* Uniform in [0, bound); bound > 0. */
uint64_t random_below(struct random_state *r, uint64_t bound);

/* Single ChaCha blocks (exposed for the known-answer unit tests; the generator uses
 * the same rounds, several blocks at a time). */
void chacha20_block(const uint32_t key[8], uint64_t counter, const uint32_t nonce[2], uint32_t out[16]);
void chacha8_block(const uint32_t key[8], uint64_t counter, const uint32_t nonce[2], uint32_t out[16]);

#endif
