/*
 * batched_free.c — the frees a thread makes into other arenas' classes, without the
 * class lock: the free itself (checks, claim, wipe: slab_batch_free), the batches that
 * keep them until they enter the slot quarantine (a block of one batch per class, taken
 * from a pool at the thread's first such free and given back when the thread exits),
 * and a batch's entry into the quarantine under the lock (slab_batched_enter).
 *
 * Why: a thread that frees blocks another arena's threads allocated (a server whose
 * workers free what the acceptor allocated, a producer and a consumer) took that
 * class's lock at every free, and the lock's line moved between the cores each time.
 * Now the free takes no lock: one compare-and-swap on the slot's own canary word marks
 * it freed (so a second free, from any thread, is still caught at once), and the lock
 * is taken once per CONFIG_SLAB_FREE_BATCH frees.
 *
 * Invariants:
 *  - A batch belongs to its thread: only that thread reads or writes it, except a fork
 *    child, which takes in the batches of the threads that did not come along (the pool
 *    lock held across fork keeps the registry whole; a batch's count is stored after
 *    its entry).
 *  - A slot in a batch is used and not quarantined in its slab's bits, and its canary
 *    word holds batched_canary(): not live to any path that checks (slot_check.h).
 *  - Every block in use is on the registry; a thread's block goes back to the pool, its
 *    batches empty, when the thread exits (a pthread key's destructor). After that the
 *    thread takes the class lock for every free, as it does when no block or key can
 *    be had: batching is never needed for a free to succeed.
 *  - The pool lock is taken with no class lock held, and meta's lock inside it.
 */
#define _GNU_SOURCE
#include "slab/batched_free.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "guard/meta.h"
#include "slab/class_tally.h"
#include "slab/slot_check.h"
#include "slab/slot_kind.h"
#include "slab/slot_quarantine.h"

#if SLAB_FREE_BATCHES

/* One thread's frees into one (arena, class) that wait to enter its quarantine. */
struct free_batch {
	uint16_t r1; /* the class's region number + 1; 0: empty */
	uint16_t n;  /* entries */
	qentry_t e[CONFIG_SLAB_FREE_BATCH]; /* qentry() */
};

struct batches {
	struct free_batch b[SC_COUNT];     /* by class: one (arena, class) at a time each */
	struct batches *next, *prev;       /* the registry (in use) or the pool (next only) */
};

/* Blocks are carved from chunks of this many bytes: a thread's block is not a mapping
 * (and a guard page) of its own. */
#define BATCH_CHUNK_BYTES ((size_t)16 * sizeof(struct batches))

/* The registry, the pool and the chunk being carved: pointers into metadata, so they
 * live in metadata too (docs/DESIGN.md: no writable global holds one), on the seed source's
 * page, which is reached from the read-only roots; a write to a global of rampart's
 * cannot redirect where a block is taken from or linked in. Zero when the page is
 * mapped: the lock free, the lists empty. */
struct batch_pool {
	struct lock lock;
	struct batches *in_use, *pool;
	char *carve;
	size_t carve_left;
};
#define POOL_OFFSET ((sizeof(struct random_source) + 63) & ~(size_t)63)
/* meta_alloc rounds the seed source up to a page, 4 KiB at least. */
_Static_assert(POOL_OFFSET + sizeof(struct batch_pool) <= 4096, "the pool state fits the seeds' page");

struct batch_pool *slab_batch_pool(void) { return (struct batch_pool *)((char *)roots.slab.seeds + POOL_OFFSET); }

/* The names the code below used when these were globals; each now reads the roots. */
#define pool_lock (slab_batch_pool()->lock)
#define in_use (slab_batch_pool()->in_use)
#define pool (slab_batch_pool()->pool)
#define carve (slab_batch_pool()->carve)
#define carve_left (slab_batch_pool()->carve_left)

static pthread_key_t exit_key;
static int key_state; /* 0: not made yet, 1: made, -1: cannot be made (no batching) */

static __thread struct batches *tls_batches __attribute__((tls_model("initial-exec")));
/* Set once the thread's exit destructor ran (or batching failed for it): its frees
 * take the lock from then on. A new thread's TLS starts zero. */
static __thread bool tls_no_batches __attribute__((tls_model("initial-exec")));

/* Lock held: a batched slot enters the quarantine (its checks, then the same way as any
 * free from another arena). */
static void slab_batched_enter(struct slab_class *k, qentry_t e)
{
	uint32_t pos = qentry_pos(e), i = qentry_slot(e);
	struct slab *s = desc(k, pos);
	uintptr_t a = slot_start(k, pos, i);
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
	/* Its kind was checked at the free; the bits go now, under the lock. */
	(void)slot_kind_take(k, s, pos, i);
	bits_write(&s->bits[i >> 6].quar, s->bits[i >> 6].quar | bit);
	if (k->defer_frees) slot_quarantine_defer(k, e);
	else slot_quarantine_put_entry(k, e);
	tally_free(k); /* the program's free, counted now that it is done */
}

static void batch_flush(struct free_batch *b)
{
	if (!b->n) return;
	struct slab_class *k = &roots.slab.classes[b->r1 - 1];
	class_lock(k);
	for (uint32_t j = 0; j < b->n; j++) slab_batched_enter(k, b->e[j]);
	/* Emptied before the lock goes: a fork waits for the lock (its prepare handler
	 * takes every class lock), so its child never sees these entries counted again. */
	b->n = 0;
	class_unlock(k);
}

static void flush_block(struct batches *t)
{
	for (unsigned c = 0; c < SC_COUNT; c++) batch_flush(&t->b[c]);
}

static void registry_unlink(struct batches *t)
{
	if (t->prev) t->prev->next = t->next;
	else in_use = t->next;
	if (t->next) t->next->prev = t->prev;
}

/* Pool lock held. */
static void give_back(struct batches *t)
{
	registry_unlink(t);
	t->prev = NULL;
	t->next = pool;
	pool = t;
}

/* A thread's exit (pthread key destructor): its batches enter their quarantines, its
 * block goes back to the pool. A free the thread makes after this (a later destructor
 * of the program's) takes the lock. */
static void thread_exit(void *v)
{
	struct batches *t = v;
	int saved = errno;
	flush_block(t);
	lock_take(&pool_lock);
	give_back(t);
	lock_give(&pool_lock);
	tls_batches = NULL;
	tls_no_batches = true;
	errno = saved;
}

/* The calling thread's block, from the pool or a new chunk; NULL when it cannot have
 * one. errno kept: this runs inside a free. */
static noinline struct batches *block_take(void)
{
	int saved = errno;
	struct batches *t = NULL;
	lock_take(&pool_lock);
	if (!key_state) key_state = pthread_key_create(&exit_key, thread_exit) ? -1 : 1;
	if (key_state > 0) {
		if (pool) {
			t = pool;
			pool = t->next;
		} else {
			if (carve_left < sizeof *t && (carve = meta_alloc(BATCH_CHUNK_BYTES)))
				carve_left = BATCH_CHUNK_BYTES;
			if (carve && carve_left >= sizeof *t) {
				t = (struct batches *)carve;
				carve += sizeof *t;
				carve_left -= sizeof *t;
			}
		}
		if (t) {
			t->prev = NULL;
			t->next = in_use;
			if (in_use) in_use->prev = t;
			in_use = t;
		}
	}
	lock_give(&pool_lock);
	/* Outside the lock: for a key past the first 32, glibc's setspecific allocates. */
	if (t && pthread_setspecific(exit_key, t)) {
		lock_take(&pool_lock);
		give_back(t);
		lock_give(&pool_lock);
		t = NULL;
	}
	if (!t) tls_no_batches = true; /* no key, no block: this thread takes the lock */
	tls_batches = t;
	errno = saved;
	return t;
}

/* The calling thread's batch for region r with room for an entry (a batch full, or of
 * another arena, was taken into its quarantine first); NULL when the thread does not
 * batch (it is exiting, or its batches cannot be had): then it takes the class lock as
 * any free. No lock may be held. */
static struct free_batch *slab_batch_for(unsigned r)
{
	struct batches *t = tls_batches;
	if (unlikely(!t)) {
		if (tls_no_batches || !(t = block_take())) return NULL;
	}
	struct free_batch *b = &t->b[r % SC_COUNT];
	if (unlikely(b->r1 != r + 1 || b->n == CONFIG_SLAB_FREE_BATCH)) {
		batch_flush(b);
		b->r1 = (uint16_t)(r + 1);
	}
	return b;
}

/* A free from a thread of another arena, without the class lock: the slot is checked
 * to be live, claimed by swapping its canary for the batched mark (one atomic), wiped,
 * and put in the thread's batch for its class; the batch enters the quarantine under one
 * acquisition of the lock (slab_batched_enter). False, having changed nothing, for
 * anything but a clean free of a live slot: the locked path then judges it, with its
 * exact report (a double free of a batched slot finds the mark there). Reads what the
 * lock guards as slab_class.h's invariants allow. */
noinline bool slab_batch_free(struct slab_class *k, uintptr_t p, const struct area_span *sp,
			      const struct sized_claim *claim, enum alloc_kind kind)
{
	/* p is the program's pointer, tagged under arm64 memory tagging (slot_tag.h): the
	 * live slot is read through it, decoded and wiped through a. */
	uintptr_t a = slot_untag((const void *)p);
	if (!k->open_slabs || (claim && claim->cls != k->cls)) return false;
	/* Decoded without the lock: a directory that holds the slot's position is seen with
	 * the hwm that covers it (fresh_slab), even for a pointer whose free races with the
	 * class's growth. */
	struct slot_place pl = decode_slot(k, sp, a, NO_LOCK);
	if (!pl.s || pl.s->state != SLAB_ACTIVE || pl.i >= k->slots || pl.at) return false;
	struct slab *s = pl.s;
	uint32_t pos = pl.pos, i = pl.i;
	/* The batch first: a full one enters the quarantine now, and this very slot may be
	 * in it (a second free by this thread), which the bits below must then show. */
	struct free_batch *fb = slab_batch_for((unsigned)(k - roots.slab.classes));
	if (!fb) return false;
	uint64_t bit = (uint64_t)1 << (i & 63);
	const struct slot_bits *b = &s->bits[i >> 6];
	if (!(__atomic_load_n(&b->used, __ATOMIC_RELAXED) & ~__atomic_load_n(&b->quar, __ATOMIC_RELAXED) & bit))
		return false;
	if (!slot_tag_ok(k, (const void *)p, a)) return false; /* the locked path reports it */
	if (slot_kind_get(k, s, pos, i) != kind) return false; /* allocated otherwise: likewise */
#if CONFIG_ZERO_ON_FREE
	/* Written past the request: the locked path reports it (slot_check.h). */
	if (!slack_zero(p, extent_of(k, s, i), k->usable)) return false;
#endif
	uint64_t expect = s->canary, mark = batched_canary(s);
	if (!__atomic_compare_exchange_n((uint64_t *)(p + k->usable), &expect, mark, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return false; /* freed already (the mark), or the canary is damaged */
#if RAMPART_MTE
	/* Claimed: tag 0 now, so the stale pointer faults and the rest goes through a. */
	if (roots.mte) slot_tag_free(k, a);
#endif
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
#if RAMPART_MTE
	if (roots.mte) slot_tag_keep(k, a, mte_top(p));
#endif
	invariant(fb->n < CONFIG_SLAB_FREE_BATCH);
	fb->e[fb->n] = qentry(pos, i);
	/* Release: a fork child reading the batch of a thread that does not exist there
	 * sees the entry before the count that covers it. */
	__atomic_store_n(&fb->n, (uint16_t)(fb->n + 1), __ATOMIC_RELEASE);
	return true;
}


void slab_batch_flush_mine(void)
{
	if (tls_batches) flush_block(tls_batches);
}

void slab_batch_fork_prepare(void) { lock_take(&pool_lock); }

void slab_batch_fork_parent(void) { lock_give(&pool_lock); }

/* The other threads' blocks: their slots enter the quarantine (an entry whose free was
 * under way at the fork, claimed but not yet counted, stays used: a slot lost to the
 * child, never a slot handed out twice). Class locks are reset by now. */
void slab_batch_fork_child(void)
{
	lock_reset(&pool_lock);
	for (struct batches *t = in_use, *next; t; t = next) {
		next = t->next;
		if (t == tls_batches) continue;
		flush_block(t);
		give_back(t);
	}
}

#endif
