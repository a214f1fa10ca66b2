/*
 * errno_threads.c — no successful call changes errno, even under lock contention.
 *
 * Eight threads (on four arenas, so two threads share every class lock, and frees of
 * blocks allocated by another thread cross arenas) churn malloc, calloc, realloc and
 * free over three small size classes. Before every call errno holds a sentinel; after
 * every successful call it must still hold it. A contended lock that waits in the
 * kernel (futex: EAGAIN when the word changed, EINTR on a signal) must not leak that
 * answer. A timer signal interrupts the waits now and then to make EINTR likely too.
 * A fixed amount of work; nothing is timed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "../harness.h"
#include "rampart.h"
#include "../all_arenas.h"

#define THREADS 8
#define SLOTS 64
#define OPS 150000
#define SENTINEL 12345

static _Atomic unsigned long changed, calls;
static _Atomic int first_seen = -1;
/* Blocks handed between threads so frees land on class locks of other arenas. */
static void *_Atomic shared[THREADS * 4];

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Three classes only (16, 32, 48-byte slots): every thread meets every lock. */
static size_t pick_size(uint64_t *s) { return 1 + next(s) % 40; }

static void check(int saved)
{
	atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
	if (saved != SENTINEL) {
		atomic_fetch_add_explicit(&changed, 1, memory_order_relaxed);
		int none = -1;
		atomic_compare_exchange_strong(&first_seen, &none, saved);
	}
}

static void *worker(void *arg)
{
	uint64_t seed = 0x9e3779b97f4a7c15u * ((uintptr_t)arg + 1);
	void *live[SLOTS] = {0};
	for (int op = 0; op < OPS; op++) {
		unsigned j = (unsigned)(next(&seed) % SLOTS);
		unsigned r = (unsigned)(next(&seed) % 8);
		if (r == 0) {
			/* Swap with the shared pool: the block we get was likely made elsewhere. */
			void *mine = live[j];
			live[j] = atomic_exchange(&shared[next(&seed) % (THREADS * 4)], mine);
			continue;
		}
		if (live[j] && r < 4) {
			errno = SENTINEL;
			free(live[j]);
			check(errno);
			live[j] = NULL;
		} else if (live[j] && r < 6) {
			errno = SENTINEL;
			void *q = realloc(live[j], pick_size(&seed));
			int e = errno;
			if (!q) return (void *)1;
			check(e);
			live[j] = q;
		} else if (!live[j]) {
			size_t n = pick_size(&seed);
			errno = SENTINEL;
			void *q = r & 1 ? calloc(1, n) : malloc(n);
			int e = errno;
			if (!q) return (void *)1;
			check(e);
			live[j] = q;
		}
	}
	for (int j = 0; j < SLOTS; j++) {
		errno = SENTINEL;
		free(live[j]);
		check(errno);
	}
	return NULL;
}

static void on_alarm(int sig) { (void)sig; }

int main(int argc, char **argv)
{
	(void)argc;
	all_arenas(argv); /* threads share class locks and free across arenas */
	alarm(120);
	free(malloc(1));
	/* A handler without SA_RESTART: a futex wait it interrupts returns EINTR. */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigaction(SIGPROF, &sa, NULL);
	struct itimerval it = {{0, 500}, {0, 500}};
	setitimer(ITIMER_PROF, &it, NULL);

	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i)) {
			printf("FAIL  pthread_create\n");
			return 1;
		}
	int oom = 0;
	for (int i = 0; i < THREADS; i++) {
		void *rc;
		pthread_join(t[i], &rc);
		oom += rc != NULL;
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_PROF, &off, NULL);
	for (int i = 0; i < THREADS * 4; i++) free(shared[i]);

	unsigned long n = atomic_load(&calls), bad = atomic_load(&changed);
	printf("backend %s: %lu successful calls, %lu changed errno", rampart_guard_backend(), n, bad);
	if (bad) printf(" (first seen: %d, %s)", first_seen, strerror(first_seen));
	printf("\n");
	if (oom) printf("FAIL  %d threads saw an allocation fail\n", oom);
	if (bad) printf("FAIL  successful calls changed errno\n");
	return bad || oom ? 1 : 0;
}
