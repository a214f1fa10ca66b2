/*
 * stress_threads.c — 8 threads of mixed malloc/calloc/realloc/free, sizes from 0 to
 * 2 MiB (small and large), every block carrying a pattern of its own that is checked
 * before every realloc and free. No timing assertions: a fixed amount of work.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "rampart.h"

#define THREADS 8
#define SLOTS 48
#define OPS 20000
#define MAX_SIZE ((size_t)2 << 20)
#define MIN(a, b) ((a) < (b) ? (a) : (b))

struct block {
	unsigned char *p;
	size_t n;
	uint32_t tag;
};

static _Atomic int failures;

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Mostly small, sometimes large, a few at the top of the range. */
static size_t pick_size(uint64_t *s)
{
	uint64_t r = next(s) % 100;
	if (r < 60) return next(s) % 1024;
	if (r < 85) return next(s) % (128 << 10);
	if (r < 97) return (128 << 10) + next(s) % (512 << 10);
	return next(s) % (MAX_SIZE + 1);
}

/* The pattern: bytes at a stride (every byte of a small block), all derived from tag. */
static size_t stride(size_t n) { return n <= 4096 ? 1 : 509; }
static unsigned char pat(uint32_t tag, size_t i) { return (unsigned char)(tag * 31 + i * 7 + (i >> 12)); }

static void paint(struct block *b)
{
	size_t st = stride(b->n);
	for (size_t i = 0; i < b->n; i += st) b->p[i] = pat(b->tag, i);
	if (b->n) b->p[b->n - 1] = pat(b->tag, b->n - 1);
}

static bool verify(const struct block *b, size_t upto)
{
	size_t n = MIN(b->n, upto), st = stride(b->n);
	for (size_t i = 0; i < n; i += st)
		if (b->p[i] != pat(b->tag, i)) return false;
	if (n && n == b->n && b->p[n - 1] != pat(b->tag, n - 1)) return false;
	return true;
}

static void fail(const char *what, const struct block *b)
{
	fprintf(stderr, "FAIL  %s: block %p of %zu bytes (tag %u)\n", what, (void *)b->p, b->n, b->tag);
	failures++;
}

static void *worker(void *arg)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull * (uintptr_t)arg + 1;
	struct block blk[SLOTS];
	memset(blk, 0, sizeof blk);
	uint32_t tag = (uint32_t)(uintptr_t)arg << 24;
	for (int op = 0; op < OPS && !failures; op++) {
		struct block *b = &blk[next(&seed) % SLOTS];
		if (!b->p) {
			b->n = pick_size(&seed);
			b->tag = ++tag;
			bool zeroed = next(&seed) % 4 == 0;
			b->p = zeroed ? calloc(1, b->n) : malloc(b->n);
			if (!b->p) {
				fail("allocation failed", b);
				break;
			}
			if (zeroed)
				for (size_t i = 0; i < b->n; i += stride(b->n))
					if (b->p[i]) {
						fail("calloc memory not zero", b);
						break;
					}
			if (malloc_usable_size(b->p) < b->n) fail("usable size too small", b);
			paint(b);
		} else if (next(&seed) % 3 == 0) {
			if (!verify(b, SIZE_MAX)) fail("pattern damaged before realloc", b);
			size_t n = pick_size(&seed) + 1;
			unsigned char *q = realloc(b->p, n);
			if (!q) {
				fail("realloc failed", b);
				break;
			}
			b->p = q;
			size_t keep = MIN(b->n, n);
			struct block old = *b;
			old.n = keep;
			/* The kept prefix is unchanged (compare at the old block's stride). */
			size_t st = stride(b->n);
			for (size_t i = 0; i < keep; i += st)
				if (q[i] != pat(b->tag, i)) {
					fail("realloc lost content", &old);
					break;
				}
			b->n = n;
			b->tag = ++tag;
			paint(b);
		} else {
			if (!verify(b, SIZE_MAX)) fail("pattern damaged before free", b);
			if (next(&seed) % 2) free_sized(b->p, b->n);
			else free(b->p);
			b->p = NULL;
		}
	}
	for (int i = 0; i < SLOTS; i++)
		if (blk[i].p) {
			if (!verify(&blk[i], SIZE_MAX)) fail("pattern damaged at the end", &blk[i]);
			free(blk[i].p);
		}
	return NULL;
}

int main(void)
{
	alarm(120);
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(i + 1))) {
			printf("FAIL  pthread_create\n");
			return 1;
		}
	for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
	struct rampart_stats st;
	rampart_get_stats(&st);
	printf("%s: %d threads x %d operations, backend %s, large live %lu, reallocs in place %lu moved %lu\n",
	       failures ? "FAIL" : "ok", THREADS, OPS, rampart_guard_backend(), st.large_live_now, st.realloc_in_place,
	       st.realloc_moved);
	return failures ? 1 : 0;
}
