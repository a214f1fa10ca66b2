/*
 * neighbour_threads — no false positive from the neighbour checks of free under
 * concurrency. Several threads allocate and free blocks of a few small classes (dense
 * slabs, so neighbours are constantly allocated and freed at once in other threads),
 * fill each block up to its usable end, and pass blocks to each other through a
 * shared array, so most frees happen in another thread than the allocation and in
 * another arena than the freeing thread's. A correct program must never be stopped:
 * any "rampart: fatal:" abort fails the test.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../all_arenas.h"

enum { THREADS = 6, SHARED = 4096 };
static const double SECONDS = 1.5;

static _Atomic(unsigned char *) shared[SHARED];
static atomic_long ops;

/* A block's contents: its usable size, then a tag byte repeated to the usable end. */
static unsigned char *make(size_t n, unsigned char tag, int how)
{
	unsigned char *p = how == 0 ? malloc(n) : how == 1 ? calloc(1, n) : aligned_alloc(16, n);
	if (!p) {
		fprintf(stderr, "allocation of %zu failed\n", n);
		abort();
	}
	size_t u = malloc_usable_size(p);
	memset(p, tag, u);
	memcpy(p, &u, sizeof u);
	return p;
}

static void check_and_free(unsigned char *p)
{
	size_t u;
	memcpy(&u, p, sizeof u);
	if (u != malloc_usable_size(p) || p[u - 1] != p[sizeof u]) {
		fprintf(stderr, "block %p corrupted\n", (void *)p);
		abort();
	}
	free(p);
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	uint64_t x = (uintptr_t)arg * 0x9e3779b97f4a7c15u + 1;
	static const size_t sizes[] = {8, 24, 40, 56, 16, 32};
	unsigned char *own[64] = {0};
	double end = now() + SECONDS;
	long n = 0;
	while ((n & 1023) || now() < end) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		size_t sz = sizes[x % 6];
		unsigned char tag = (unsigned char)(x >> 8) | 1;
		if (x >> 60 < 8) { /* keep some blocks in this thread for a while */
			unsigned k = (x >> 20) % 64;
			if (own[k]) check_and_free(own[k]);
			own[k] = make(sz, tag, (int)((x >> 30) % 3));
		} else {
			unsigned char *p = make(sz, tag, (int)((x >> 30) % 3));
			unsigned char *old = atomic_exchange(&shared[(x >> 32) % SHARED], p);
			if (old) check_and_free(old);
		}
		n++;
	}
	for (int k = 0; k < 64; k++)
		if (own[k]) check_and_free(own[k]);
	atomic_fetch_add(&ops, n);
	return NULL;
}

int main(int argc, char **argv)
{
	(void)argc;
	all_arenas(argv); /* frees land in other arenas */
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(i + 1))) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
	for (int i = 0; i < SHARED; i++)
		if (shared[i]) check_and_free(shared[i]);
	printf("neighbour_threads: %ld allocations and frees in %d threads, no false positive\n", atomic_load(&ops),
	       THREADS);
	return 0;
}
