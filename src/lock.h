/*
 * lock.h — the futex mutex behind each slab (arena, class) lock (Drepper, "Futexes
 * are tricky", mutex 2). Uncontended take and give are one atomic each, inlined.
 *
 * Invariants:
 *  - The word is 0 (free), 1 (taken, nobody waiting) or 2 (taken, a thread may be
 *    asleep on it). A thread goes to sleep only after storing 2, and the holder that
 *    gives back a 2 wakes one sleeper, so no wake-up is lost. Only the holder gives.
 *  - errno is preserved: a wait answers EAGAIN (the word changed before the kernel
 *    looked) or EINTR (a signal) as a matter of course, and a wake can fail in the same
 *    ways; neither is a failure of the malloc or free that took the lock.
 *  - Private futexes: a lock never lives in memory shared with another process.
 *  - fork: while other threads exist, the prepare handler takes every lock, the parent
 *    gives them back, the child resets them with lock_reset() (the threads that might
 *    have been waiting do not exist there, so a 2 would only cost a useless wake). With
 *    one thread no lock can be held at fork, and none is touched.
 *  - Nothing here allocates; a lock is an aligned 32-bit word, zero means free.
 *  - While the process has one thread (os_single_threaded) a lock is elided: take, try
 *    and give leave the word at 0 and cost no atomic. No other thread can be inside the
 *    allocator then, and the answer cannot change between a take and its give: only the
 *    one thread could start a second one, and it is inside the allocator. The word is 0
 *    when the second thread starts, so from then on the locks work as above. Measured
 *    (single-threaded small churn, Intel Xeon, KVM): the two atomics of a malloc or a
 *    free were about a tenth of the run.
 */
#ifndef RAMPART_LOCK_H
#define RAMPART_LOCK_H

#include <stdatomic.h>

#include "common.h"
#include "os.h"

struct lock {
	_Atomic uint32_t word;
};

/* Contended paths, out of line: spin a little, then sleep; wake one sleeper. */
void lock_wait(struct lock *l);
void lock_wake(struct lock *l);

static inline void lock_take(struct lock *l)
{
	if (os_single_threaded()) return;
	uint32_t expected = 0;
	if (unlikely(!atomic_compare_exchange_strong_explicit(&l->word, &expected, 1, memory_order_acquire,
							      memory_order_relaxed)))
		lock_wait(l);
}

/* Take the lock only if it is free now; never waits. */
static inline bool lock_try(struct lock *l)
{
	if (os_single_threaded()) return true;
	uint32_t expected = 0;
	return atomic_compare_exchange_strong_explicit(&l->word, &expected, 1, memory_order_acquire,
						       memory_order_relaxed);
}

static inline void lock_give(struct lock *l)
{
	if (os_single_threaded()) return;
	if (unlikely(atomic_exchange_explicit(&l->word, 0, memory_order_release) == 2)) lock_wake(l);
}

static inline void lock_reset(struct lock *l) { atomic_store_explicit(&l->word, 0, memory_order_relaxed); }

#endif
