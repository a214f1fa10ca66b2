/*
 * tsan_threads.c — rampart's allocators from several threads under ThreadSanitizer.
 *
 * TSan replaces malloc and free with its own, so this program is linked with every
 * object of the library except the public entry points (api.o, cxx.o) and drives the
 * allocators through their internal interfaces: slab_alloc / slab_free (plain and
 * sized) / slab_usable_size / slab_object_size / slab_class_of_live, and large_alloc
 * (plain and aligned) / large_realloc / large_free / large_usable_size /
 * large_object_size / large_trim, which go through the region quarantine and the
 * reuse cache. Blocks travel between threads through an exchange table, so most are
 * written by one thread and checked and freed by another (a cross-arena free), and
 * one thread forks while the others run. Any TSan report fails the run
 * (TSAN_OPTIONS=halt_on_error=1, set by `make check-tsan`); the program itself fails
 * on a wrong size or a damaged pattern.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "front/init.h"
#include "guard/guard.h"
#include "large/large.h"
#include "os/os.h"
#include "slab/sizeclass.h"
#include "slab/slab.h"
#include "../all_arenas.h"

#define THREADS 4
#define EXCHANGE 64
#define OPS 12000
#define LARGE_MAX ((size_t)1 << 20)

struct item {
	unsigned char *p;
	size_t n;        /* usable bytes */
	unsigned c;      /* slab class, or SC_COUNT for a large block */
	unsigned char tag;
	enum alloc_kind kind; /* how it was allocated: its free names the same */
};

static _Atomic(struct item *) exchange[EXCHANGE];
static _Atomic int failures;

static void fail(const char *what, const void *p)
{
	fprintf(stderr, "FAIL: %s at %p\n", what, p);
	atomic_fetch_add(&failures, 1);
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The bytes written: all of a small block, a few per page of a large one. */
static size_t step(size_t n) { return n <= 4096 ? 1 : 4093; }
static void fill(struct item *it)
{
	for (size_t i = 0; i < it->n; i += step(it->n)) it->p[i] = (unsigned char)(it->tag + i);
	if (it->n) it->p[it->n - 1] = it->tag;
}
static void check(const struct item *it)
{
	size_t i = 0;
	for (; i + 1 < it->n; i += step(it->n))
		if (it->p[i] != (unsigned char)(it->tag + i)) {
			fail("pattern damaged", it->p + i);
			return;
		}
	if (it->n && it->p[it->n - 1] != it->tag) fail("last byte damaged", it->p + it->n - 1);
}

static struct item *make_small(uint64_t *s)
{
	/* Mostly the small classes, every class now and then. */
	unsigned c = next(s) % 4 ? 1 + next(s) % 12 : 1 + next(s) % (SC_COUNT - 1);
	/* A third each as the C functions, operator new and new[] allocate: the kinds of a
	 * slab's slots change under its lock while other threads' batched frees read them. */
	enum alloc_kind kind = (enum alloc_kind)(next(s) % KIND_COUNT);
	unsigned char *p = slab_alloc(c, sc_usable(c), false, kind, (uintptr_t)__builtin_return_address(0));
	if (!p) {
		fail("slab_alloc returned NULL", NULL);
		return NULL;
	}
	struct item *it = malloc(sizeof *it); /* TSan's malloc: the bookkeeping is not ours */
	*it = (struct item){p, sc_usable(c), c, (unsigned char)next(s), kind};
	if (slab_usable_size(p) != it->n) fail("slab_usable_size", p);
	if (slab_object_size(p) != it->n) fail("slab_object_size", p);
	size_t copy;
	if (kind == KIND_MALLOC && (!slab_resize(p, c, it->n, &copy) || copy != it->n)) fail("slab_resize in place", p);
	fill(it);
	return it;
}

static struct item *make_large(uint64_t *s)
{
	size_t size = SC_MAX_REQUEST + 1 + next(s) % LARGE_MAX;
	size_t align = next(s) % 4 ? 0 : (size_t)os_page << (next(s) % 6);
	unsigned char *p = large_alloc(size, align > os_page ? align : 0, KIND_MALLOC, 0); /* resize reallocs it */
	if (!p) {
		fail("large_alloc returned NULL", NULL);
		return NULL;
	}
	if (align && (uintptr_t)p % align) fail("large_alloc alignment", p);
	struct item *it = malloc(sizeof *it);
	*it = (struct item){p, large_usable_size(p, OP_USABLE_SIZE), SC_COUNT, (unsigned char)next(s), KIND_MALLOC};
	if (it->n < size) fail("large_usable_size below the request", p);
	if (large_object_size(p + 1) != it->n - 1) fail("large_object_size", p);
	fill(it);
	return it;
}

static void release(struct item *it, uint64_t *s)
{
	check(it);
	if (it->c < SC_COUNT) {
		struct sized_claim claim = {sc_usable(it->c), 0, it->c};
		slab_free(it->p, next(s) % 2 ? &claim : NULL, it->kind);
	} else {
		large_free(it->p, false, 0, 0, it->kind);
	}
	free(it);
}

/* Grow or shrink a large block (in place or moved), keeping what both sizes hold. */
static void resize(struct item *it, uint64_t *s)
{
	check(it);
	size_t size = SC_MAX_REQUEST + 1 + next(s) % (2 * LARGE_MAX);
	unsigned char *q = large_realloc(it->p, size, 0);
	if (!q) {
		fail("large_realloc returned NULL", it->p);
		return;
	}
	size_t keep = it->n < size ? it->n : size;
	for (size_t i = 0; i + 1 < keep; i += step(it->n))
		if (q[i] != (unsigned char)(it->tag + i)) {
			fail("realloc lost the contents", q + i);
			break;
		}
	it->p = q;
	it->n = large_usable_size(q, OP_USABLE_SIZE);
	it->tag++;
	fill(it);
}

static void fork_once(void)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		/* The child's allocator works: the fork handlers left its locks free. */
		void *a = slab_alloc(3, sc_usable(3), false, KIND_MALLOC, 0);
		void *b = large_alloc(SC_MAX_REQUEST + 4096, 0, KIND_MALLOC, 0);
		if (!a || !b) _exit(2);
		memset(a, 1, sc_usable(3));
		slab_free(a, NULL, KIND_MALLOC);
		large_free(b, false, 0, 0, KIND_MALLOC);
		_exit(0);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail("fork child", NULL);
}

static void *worker(void *arg)
{
	uint64_t s = 0x9e3779b97f4a7c15ull * ((uintptr_t)arg + 1);
	for (int op = 0; op < OPS; op++) {
		uint64_t r = next(&s) % 100;
		size_t k = next(&s) % EXCHANGE;
		if (r < 85) { /* small block in, whatever was there out */
			struct item *it = make_small(&s);
			if (!it) continue;
			struct item *old = atomic_exchange(&exchange[k], it);
			if (old) release(old, &s);
		} else if (r < 93) {
			struct item *it = make_large(&s);
			if (!it) continue;
			struct item *old = atomic_exchange(&exchange[k], it);
			if (old) release(old, &s);
		} else if (r < 99) { /* take a block out, resize it if large, put it back */
			struct item *it = atomic_exchange(&exchange[k], NULL);
			if (!it) continue;
			if (it->c == SC_COUNT) resize(it, &s);
			struct item *old = atomic_exchange(&exchange[k], it);
			if (old) release(old, &s);
		} else {
			large_trim();
		}
		if ((uintptr_t)arg == 0 && op % 2000 == 1000) fork_once();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	(void)argc;
	all_arenas(argv); /* frees cross arenas */
	if (!rampart_ready()) {
		fprintf(stderr, "FAIL: initialisation\n");
		return 1;
	}
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
	uint64_t s = 1;
	for (int k = 0; k < EXCHANGE; k++) {
		struct item *it = atomic_exchange(&exchange[k], NULL);
		if (it) release(it, &s);
	}
	large_trim();
	int f = atomic_load(&failures);
	printf("tsan_threads: %d threads x %d operations, backend %s, %d failures\n", THREADS, OPS,
	       guard_backend_name(), f);
	return f != 0;
}
