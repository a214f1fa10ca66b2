/*
 * lock.c — the slow paths of the futex mutex (lock.h). Both keep errno: they run
 * inside calls that succeed.
 */
#define _GNU_SOURCE
#include "os/lock.h"

#include <errno.h>
#include <sys/syscall.h>
#if __has_include(<linux/futex.h>)
#include <linux/futex.h>
#endif
/* musl ships no kernel headers: the values are part of the kernel's ABI. */
#ifndef FUTEX_WAIT_PRIVATE
#define FUTEX_WAIT_PRIVATE (0 | 128) /* FUTEX_WAIT | FUTEX_PRIVATE_FLAG */
#define FUTEX_WAKE_PRIVATE (1 | 128) /* FUTEX_WAKE | FUTEX_PRIVATE_FLAG */
#endif
#include <time.h>
#include <unistd.h>

#include "base/report.h"

/* The holder usually leaves within a few hundred cycles: spinning first saves the
 * two system calls of a sleep and a wake. */
#define SPINS 64

static inline void cpu_relax(void)
{
#if defined(__x86_64__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

__thread uint32_t lock_owner __attribute__((tls_model("initial-exec")));

/* Marks handed out. Never reused, so two live threads never share one (a fork child
 * inherits the count with its one thread); past 2^31 threads the rest go without. */
static _Atomic uint32_t owners;
#define OWNERS_MAX (1u << 31)

void lock_owner_init(void)
{
	if (lock_owner || atomic_load_explicit(&owners, memory_order_relaxed) >= OWNERS_MAX) return;
	uint32_t n = atomic_fetch_add_explicit(&owners, 1, memory_order_relaxed) + 1;
	if (n < OWNERS_MAX) lock_owner = n << 1 | 1;
}

void lock_reentered(struct lock *l)
{
	report_fatal(OP_INTERNAL, ERR_REENTERED, l);
}

void lock_wait(struct lock *l)
{
	uint32_t mine = lock_owner | 1;
	/* Its own mark: nobody else will ever give this lock back. */
	if (mine != 1 && atomic_load_explicit(&l->word, memory_order_relaxed) == mine) lock_reentered(l);
	if (!lock_owner) lock_owner_init(); /* for the next time */
	for (int spin = 0; spin < SPINS; spin++) {
		cpu_relax();
		/* Read until the word looks free, and only then ask for it: a failed
		 * compare-and-swap takes the line away from the holder, who must get it
		 * back to give the lock. */
		if (atomic_load_explicit(&l->word, memory_order_relaxed)) continue;
		uint32_t expected = 0;
		if (atomic_compare_exchange_weak_explicit(&l->word, &expected, lock_owner | 1, memory_order_acquire,
							  memory_order_relaxed))
			return;
	}
	int saved = errno;
	/* Counted before the next look at the word: a holder that gives after this sees
	 * the count (or its wake is lost and the bounded sleep covers it). */
	atomic_fetch_add_explicit(&l->waiters, 1, memory_order_seq_cst);
	for (;;) {
		uint32_t expected = 0;
		if (atomic_compare_exchange_strong_explicit(&l->word, &expected, lock_owner | 1,
							    memory_order_acquire, memory_order_relaxed))
			break;
		struct timespec bound = {0, LOCK_SLEEP_NS};
		syscall(SYS_futex, &l->word, FUTEX_WAIT_PRIVATE, expected, &bound, NULL, 0);
	}
	atomic_fetch_sub_explicit(&l->waiters, 1, memory_order_relaxed);
	errno = saved;
}

void lock_wake(struct lock *l)
{
	int saved = errno;
	syscall(SYS_futex, &l->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	errno = saved;
}
