/*
 * lock.h — the futex mutex behind every lock of rampart: each slab (arena, class), the
 * large allocator, the metadata region, start-up, the seed source. Uncontended, a take is
 * one atomic (a compare-and-swap) and a give is a plain store, inlined: one atomic read-
 * modify-write per malloc or free (docs/DESIGN.md, "Speed").
 *
 * Invariants:
 *  - The word is 0 (free) or odd (taken: the holder's mark, lock_owner). Only the holder
 *    gives, by storing 0.
 *  - waiters counts the threads inside lock_wait's sleeping loop. A holder that sees it
 *    nonzero after its give wakes one of them. The give's store and its load of
 *    waiters are not ordered against a waiter that counts itself at that moment (a
 *    store may pass a later load on x86 and arm64), so a wake-up can be lost: every
 *    sleep is therefore bounded (LOCK_SLEEP_NS), and a sleeper that wakes on its own
 *    tries again. A lost wake-up costs that sleeper at most one bound; it never hangs.
 *    Without the bound the give would need a second atomic (the exchange that mutex 2
 *    of Drepper's "Futexes are tricky" uses), a cost on every contended give
 *    (bench/journal/2026-11-27-figures-from-code-comments.md).
 *  - errno is preserved: a wait answers EAGAIN (the word changed before the kernel
 *    looked), EINTR (a signal) or ETIMEDOUT (the bound) as a matter of course, and a
 *    wake can fail in the same ways; neither is a failure of the malloc or free that
 *    took the lock.
 *  - Private futexes: a lock never lives in memory shared with another process.
 *  - fork: while other threads exist, the prepare handler takes every lock, the parent
 *    gives them back, the child resets them with lock_reset() (the threads that might
 *    have been waiting do not exist there). With one thread no lock can be held at
 *    fork, and none is touched.
 *  - Nothing here allocates; a lock is two aligned 32-bit words, all zero means free.
 *  - While the process has one thread (os_single_threaded) a lock is elided: take, try
 *    and give cost no atomic read-modify-write, only a non-atomic bit set (x86; a load
 *    and a store elsewhere: lock_word_test_and_set) and a store of 0 (on the line the
 *    holder writes anyway). No other thread can be inside the allocator
 *    then, and the answer cannot change between a take and its give: only the one thread
 *    could start a second one, and it is inside the allocator. The word is 0 when the
 *    second thread starts, so from then on the locks work as above. Measured
 *    (single-threaded small churn, Intel Xeon, KVM): the lock's atomics were about a
 *    tenth of the run.
 *  - Re-entry: a thread that takes a lock it holds itself is inside the allocator
 *    twice, that is in a signal handler that interrupted it (undefined behaviour that
 *    crash handlers commit). Alone, it finds the word set; with other threads, it finds
 *    its own mark there (lock_owner) once its compare-and-swap failed. Either is fatal
 *    with a message saying so, instead of running the handler's call on metadata half
 *    updated (one thread) or waiting for itself for good (threads). Checked only where
 *    the word is read anyway: the elided take's bit set answers the old bit, and the mark
 *    is one thread-local load; nothing else on the fast path.
 */
#ifndef RAMPART_LOCK_H
#define RAMPART_LOCK_H

#include <stdatomic.h>

#include "base/common.h"
#include "os/os.h"

struct lock {
	_Atomic uint32_t word;
	_Atomic uint32_t waiters;
};

/* The longest a waiter sleeps before it looks at the word again (see waiters above). */
#define LOCK_SLEEP_NS 1000000L

/* What this thread writes into the words of the locks it takes while other threads
 * exist: 1 | 2n with n unique in the process (lock_owner_init), or 1, which names no
 * thread, until it has one. */
extern __thread uint32_t lock_owner __attribute__((tls_model("initial-exec")));
/* Give the calling thread its mark, once; a thread without one is never found
 * re-entering (its locks say 1). */
void lock_owner_init(void);

/* Contended paths, out of line: spin a little, then sleep; wake one sleeper. */
void lock_wait(struct lock *l);
void lock_wake(struct lock *l);
/* The calling thread holds l already (see the invariants): fatal. */
cold __attribute__((noreturn)) void lock_reentered(struct lock *l);

/* The elided take (one thread): the word becomes 1 unless it was taken, set before the
 * critical section as a signal handler would look; true when it was taken already (held
 * words are odd). On x86 one read-modify-write instruction without a lock prefix (no
 * other thread can look), so the first take of a lock on a page nobody has written is
 * one write fault. A load and then a store fault twice there: the load maps the shared
 * zero page, the store copies it; every class's first malloc took its lock so
 * (bench/journal/2026-11-28-first-touch.md). Elsewhere, or without flag outputs of
 * inline assembly, the load and the store. */
_Static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t), "a lock word is a plain 32-bit word");
static inline bool lock_word_test_and_set(struct lock *l)
{
	bool was;
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
	__asm__ volatile("btsl $0, %0" : "+m"(*(uint32_t *)(void *)&l->word), "=@ccc"(was) : : "memory");
#else
	was = atomic_load_explicit(&l->word, memory_order_relaxed) != 0;
	if (!was) atomic_store_explicit(&l->word, 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
#endif
	return was;
}

static inline void lock_take(struct lock *l)
{
	if (os_single_threaded()) {
		if (unlikely(lock_word_test_and_set(l))) lock_reentered(l);
		return;
	}
	uint32_t expected = 0;
	if (unlikely(!atomic_compare_exchange_strong_explicit(&l->word, &expected, lock_owner | 1,
							      memory_order_acquire, memory_order_relaxed)))
		lock_wait(l);
}

/* Take the lock only if it is free now; never waits. */
static inline bool lock_try(struct lock *l)
{
	if (os_single_threaded()) return !lock_word_test_and_set(l);
	uint32_t expected = 0;
	return atomic_compare_exchange_strong_explicit(&l->word, &expected, lock_owner | 1, memory_order_acquire,
						       memory_order_relaxed);
}

/* Is l taken (by anyone: an elided take writes no mark)? For invariants. */
static inline bool lock_taken(struct lock *l) { return atomic_load_explicit(&l->word, memory_order_relaxed) & 1; }

static inline void lock_give(struct lock *l)
{
	invariant(lock_taken(l)); /* only the holder gives */
	if (os_single_threaded()) {
		atomic_signal_fence(memory_order_seq_cst); /* the critical section before the store */
		atomic_store_explicit(&l->word, 0, memory_order_relaxed);
		return;
	}
	atomic_store_explicit(&l->word, 0, memory_order_release);
	/* Keep the compiler from asking before the store; the processor may still (see
	 * the invariants: the sleep is bounded for that). */
	atomic_signal_fence(memory_order_seq_cst);
	if (unlikely(atomic_load_explicit(&l->waiters, memory_order_relaxed))) lock_wake(l);
}

static inline void lock_reset(struct lock *l)
{
	atomic_store_explicit(&l->word, 0, memory_order_relaxed);
	atomic_store_explicit(&l->waiters, 0, memory_order_relaxed);
}

#endif
