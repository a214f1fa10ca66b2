/*
 * usable_threads — malloc_usable_size answers without the class lock (slot_alloc.c):
 * its answers stay exact, and no correct program is stopped, while other threads free
 * and allocate the neighbours of the blocks asked about, in the same slabs. For each of
 * a few sizes (dense slabs without extents; slabs whose slots keep an extent, so that
 * the first question widens it), one thread keeps blocks live and asks their size
 * again and again, replacing one now and then (a fresh block: its first question
 * checks and widens its extent); it also allocates neighbours, fills them to their
 * usable end and hands them over; two other threads ask their size too and free them
 * (from other arenas: batched frees, which write the neighbours' canary words and the
 * bits they share with the asked slots). A wrong size or a changed byte fails the
 * test; so does any "rampart: fatal:" abort. Counted in rounds, never timed.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../all_arenas.h"

enum { KEPT = 48, RING = 64, ROUNDS = 60000, FREERS = 2 };

static _Atomic(unsigned char *) ring[RING];
static atomic_bool done;
static size_t want; /* the usable size of the size under test */
static atomic_long freed;

static void fail(const char *what, const void *p, size_t got)
{
	fprintf(stderr, "usable_threads: %s (block %p, usable size %zu, expected %zu)\n", what, p, got, want);
	exit(1);
}

static unsigned char *fresh_block(size_t n, unsigned char tag)
{
	unsigned char *p = malloc(n);
	if (!p) fail("allocation failed", NULL, 0);
	size_t u = malloc_usable_size(p); /* the first question: widens the extent */
	if (u != want) fail("wrong usable size of a fresh block", p, u);
	memset(p, tag, u);
	return p;
}

static void check_block(const unsigned char *p, unsigned char tag)
{
	size_t u = malloc_usable_size((void *)p);
	if (u != want) fail("wrong usable size", p, u);
	if (p[0] != tag || p[u / 2] != tag || p[u - 1] != tag) fail("block changed", p, u);
}

static void *freer(void *arg)
{
	(void)arg;
	while (!atomic_load(&done)) {
		for (unsigned j = 0; j < RING; j++) {
			unsigned char *p = atomic_exchange(&ring[j], NULL);
			if (!p) continue;
			check_block(p, p[0]);
			free(p);
			atomic_fetch_add(&freed, 1);
		}
	}
	return NULL;
}

static void run(size_t n)
{
	void *probe = malloc(n);
	want = malloc_usable_size(probe);
	free(probe);
	if (want < n) fail("usable size below the request", NULL, want);
	atomic_store(&done, false);
	unsigned char *kept[KEPT];
	unsigned char tags[KEPT];
	for (unsigned j = 0; j < KEPT; j++) kept[j] = fresh_block(n, tags[j] = (unsigned char)(j | 1));
	pthread_t t[FREERS];
	for (int i = 0; i < FREERS; i++)
		if (pthread_create(&t[i], NULL, freer, NULL)) fail("pthread_create failed", NULL, 0);
	uint64_t x = 0x9e3779b97f4a7c15u ^ n;
	for (long r = 0; r < ROUNDS; r++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		unsigned j = (unsigned)(x % KEPT);
		check_block(kept[j], tags[j]);
		if (x >> 61 == 0) { /* one round in eight: a fresh block in its place */
			free(kept[j]);
			tags[j] = (unsigned char)(x >> 8) | 1;
			kept[j] = fresh_block(n, tags[j]);
		}
		/* A neighbour for the other threads to ask about and free. */
		unsigned char *nb = fresh_block(n, (unsigned char)(x >> 16) | 1);
		unsigned char *old = atomic_exchange(&ring[(x >> 32) % RING], nb);
		if (old) free(old);
	}
	atomic_store(&done, true);
	for (int i = 0; i < FREERS; i++) pthread_join(t[i], NULL);
	for (unsigned j = 0; j < RING; j++) free(atomic_exchange(&ring[j], NULL));
	for (unsigned j = 0; j < KEPT; j++) {
		check_block(kept[j], tags[j]);
		free(kept[j]);
	}
}

int main(int argc, char **argv)
{
	(void)argc;
	all_arenas(argv); /* the freeing threads' frees land in another arena */
	/* Dense slabs (no extents), then slabs whose slots keep one (slab_class.h). */
	static const size_t sizes[] = {24, 200, 1000, 5000};
	for (unsigned s = 0; s < sizeof sizes / sizeof *sizes; s++) run(sizes[s]);
	printf("usable_threads: %d rounds for each of 4 sizes, %ld blocks freed by other threads, sizes exact\n",
	       ROUNDS, atomic_load(&freed));
	return 0;
}
