/*
 * slab_behaviour — whole-program behaviour of the slab allocator: zeroed reuse,
 * content kept across small/large reallocs, usable sizes, threads (create/join
 * storms, producer/consumer frees) and the VMA cost of a million live allocations.
 * No timing assertions: it must pass on a loaded two-core machine.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "rampart.h"
#include "../all_arenas.h"
#include "../profile.h"

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			exit(1);                                                           \
		}                                                                          \
	} while (0)

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	return rng_state = x;
}

/* Log-uniform in [lo, hi]. */
static size_t rnd_size(size_t lo, size_t hi)
{
	unsigned lb = 63 - __builtin_clzl(lo), hb = 63 - __builtin_clzl(hi);
	unsigned b = lb + (unsigned)(rnd() % (hb - lb + 1));
	size_t n = ((size_t)1 << b) + rnd() % ((size_t)1 << b);
	return n < lo ? lo : n > hi ? hi : n;
}

/* Lines of /proc/self/maps, read with plain system calls. */
static long count_vmas(void)
{
	int fd = open("/proc/self/maps", O_RDONLY);
	CHECK(fd >= 0);
	char buf[65536];
	long lines = 0;
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < n; i++) lines += buf[i] == '\n';
	close(fd);
	return lines;
}

/* (unused where zero-on-free is compiled out) */
static __attribute__((unused)) int all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i]) return 0;
	return 1;
}

static long minor_faults(void)
{
	struct rusage ru;
	CHECK(getrusage(RUSAGE_SELF, &ru) == 0);
	return ru.ru_minflt;
}

/* A page of fresh slots costs one page fault, as under glibc: nothing reads a slot
 * never handed out before the program writes it (a read first would map the zero page
 * and the write would fault again). Runs first, so the class's slabs are all fresh;
 * 48-byte requests take 64-byte slots (a page holds 64). */
static void fresh_pages_fault_once(void)
{
	enum { N = 73 * 1024 };
	static void *v[N];
	size_t pages = (size_t)N * 64 / 4096;
	memset(v, 0, sizeof v); /* the test's own pages, faulted in before counting */
	long before = minor_faults();
	for (int i = 0; i < N; i++) {
		v[i] = malloc(48);
		CHECK(v[i]);
		memset(v[i], 0x5a, 48);
	}
	long faults = minor_faults() - before;
	printf("fresh_pages_fault_once: %ld faults for %zu pages of slots\n", faults, pages);
	/* The data pages once each, plus descriptors (a sixth, guard positions included). */
	CHECK((size_t)faults < pages + pages / 4);
	for (int i = 0; i < N; i++) free(v[i]);
}

/* Frees from a thread of another arena wait in their class's deferred list before they
 * enter the quarantine: they count as quarantined at once (a second free is caught),
 * and they are not lost: churn where one thread allocates and another frees keeps the
 * quarantine and the open slabs bounded. */
static struct rampart_class_stats class_of(size_t usable)
{
	struct rampart_heap_stats *h = malloc(sizeof *h);
	CHECK(h);
	rampart_get_heap_stats(h);
	size_t c = 1;
	while (h->size_class[c].usable < usable) c++;
	struct rampart_class_stats k = h->size_class[c];
	free(h);
	return k;
}

static void *free_all(void *arg)
{
	void **v = arg;
	for (int i = 0; v[i]; i++) free(v[i]);
	return malloc(200); /* where this thread's blocks of the class live */
}

static void cross_arena_frees(void)
{
	if (!test_slot_quarantine()) {
		printf("cross_arena_frees: n/a, no slot quarantine in this process (slot_quarantine_bytes=0)\n");
		return;
	}
	enum { N = 3000, SIZE = 200, FEW = 10 };
	static void *v[N + 1];
	/* A few frees from another thread: counted as quarantined, no longer live. */
	for (int i = 0; i < FEW; i++) CHECK(v[i] = malloc(SIZE));
	v[FEW] = NULL;
	struct rampart_class_stats before = class_of(SIZE);
	pthread_t t;
	void *theirs;
	/* Threads are sent to the arenas in turn: this one, the process's second thread,
	 * goes to the second arena. */
	if (CONFIG_SLAB_ARENAS < 2) {
		printf("cross_arena_frees: one arena, threads share it; nothing to test\n");
		return;
	}
	CHECK(pthread_create(&t, NULL, free_all, v) == 0 && pthread_join(t, &theirs) == 0);
	struct rampart_class_stats after = class_of(SIZE); /* theirs is live, in its arena */
	CHECK(after.live == before.live - FEW + 1);
	CHECK(after.quarantined == before.quarantined + FEW);
	free(theirs);
	/* Rounds of 3,000 blocks allocated here and freed there: what the quarantine holds
	 * and what the class keeps open settle after a few rounds. */
	size_t held = 0, open = 0;
	for (int round = 0; round < 30; round++) {
		for (int i = 0; i < N; i++) CHECK(v[i] = malloc(SIZE));
		v[N] = NULL;
		CHECK(pthread_create(&t, NULL, free_all, v) == 0 && pthread_join(t, &theirs) == 0);
		free(theirs);
		struct rampart_class_stats k = class_of(SIZE);
		if (round == 4) held = k.quarantined, open = k.bytes_open;
		if (round > 4) {
			CHECK(k.quarantined <= held + 64);
			CHECK(k.bytes_open <= open + open / 2);
		}
	}
	printf("cross_arena_frees: ok (quarantined %zu, open %zu KiB)\n", held, open >> 10);
}

/* Frees from another arena's thread wait in that thread's batch for their class (up to
 * CONFIG_SLAB_FREE_BATCH of them) and enter the quarantine a batch at a time: when the
 * batch is full, at malloc_trim in that thread, and at its exit. Until then they count
 * as live in the statistics; none is lost. */
#if CONFIG_SLOT_CANARY && CONFIG_SLAB_FREE_BATCH
struct batcher {
	void **v;
	int n;
	int ask[2], done[2];
};

/* rampart's, also where the C library's headers lack it (musl). */
int malloc_trim(size_t pad);

/* Told 'f': frees the blocks; 't': trims; anything else: ends. */
static void *free_then_obey(void *arg)
{
	struct batcher *b = arg;
	char c;
	while (read(b->ask[0], &c, 1) == 1 && (c == 'f' || c == 't')) {
		if (c == 'f')
			for (int i = 0; i < b->n; i++) free(b->v[i]);
		else
			malloc_trim(0);
		CHECK(write(b->done[1], &c, 1) == 1);
	}
	return NULL;
}

static void batcher_tell(struct batcher *b, char c)
{
	CHECK(write(b->ask[1], &c, 1) == 1);
	if (c == 'f' || c == 't') CHECK(read(b->done[0], &c, 1) == 1);
}

static void batched_frees(void)
{
	enum { SIZE = 300, FEW = CONFIG_SLAB_FREE_BATCH - 1, MANY = 1000 };
	if (!test_slot_quarantine()) {
		printf("batched_frees: n/a, no slot quarantine in this process (slot_quarantine_bytes=0): "
		       "frees are not batched\n");
		return;
	}
	static void *v[MANY];
	static struct batcher b;
	pthread_t t;
	CHECK(pipe(b.ask) == 0 && pipe(b.done) == 0);
	b.v = v;

	/* Fewer frees than a batch holds: all wait, live in the figures, until the
	 * thread trims. */
	for (int i = 0; i < FEW; i++) CHECK(v[i] = malloc(SIZE));
	b.n = FEW;
	CHECK(pthread_create(&t, NULL, free_then_obey, &b) == 0);
	/* After the thread's start, which allocates its own blocks (glibc: its TLS). */
	struct rampart_class_stats before = class_of(SIZE);
	batcher_tell(&b, 'f');
	struct rampart_class_stats k = class_of(SIZE);
	CHECK(k.live == before.live && k.quarantined == before.quarantined);
	batcher_tell(&b, 't');
	k = class_of(SIZE);
	CHECK(k.live == before.live - FEW && k.quarantined == before.quarantined + FEW);
	batcher_tell(&b, 'x');
	CHECK(pthread_join(t, NULL) == 0);

	/* Many: every full batch entered the quarantine; at most one batch still waits,
	 * and the thread's exit lets it go. */
	for (int i = 0; i < MANY; i++) CHECK(v[i] = malloc(SIZE));
	b.n = MANY;
	CHECK(pthread_create(&t, NULL, free_then_obey, &b) == 0);
	before = class_of(SIZE);
	batcher_tell(&b, 'f');
	k = class_of(SIZE);
	size_t waiting = before.live - k.live;
	CHECK(waiting + CONFIG_SLAB_FREE_BATCH > MANY && waiting <= MANY);
	batcher_tell(&b, 'x');
	CHECK(pthread_join(t, NULL) == 0);
	k = class_of(SIZE);
	CHECK(k.live <= before.live - MANY); /* the thread's own blocks went at its end too */
	printf("batched_frees: ok (%d frees of %d waited in the freeing thread's batch)\n", MANY - (int)waiting, MANY);
	close(b.ask[0]), close(b.ask[1]), close(b.done[0]), close(b.done[1]);
}
#else
static void batched_frees(void) { printf("batched_frees: no free batches in this build\n"); }
#endif

/* Freed memory comes back as zeros: no allocation ever sees another one's data. */
static void reuse_is_zero(void)
{
#if CONFIG_ZERO_ON_FREE
	enum { N = 20000 };
	static unsigned char *v[N];
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < N; i++) {
			size_t n = rnd_size(1, 4096);
			v[i] = malloc(n);
			CHECK(v[i]);
			CHECK(all_zero(v[i], malloc_usable_size(v[i])));
			memset(v[i], 0xa5, malloc_usable_size(v[i]));
		}
		for (int i = 0; i < N; i++) free(v[i]);
	}
	printf("reuse_is_zero: ok\n");
#endif
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 131 + seed);
}
static int same(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(i * 131 + seed)) return 0;
	return 1;
}

static void realloc_across_boundaries(void)
{
	static const size_t steps[] = {1, 100, 5000, 131064, 131065, 200000, 1 << 20, 131000, 64, 300000, 10, 0};
	for (unsigned seed = 0; seed < 20; seed++) {
		size_t cur = steps[0];
		unsigned char *p = malloc(cur);
		fill(p, cur, seed);
		for (int i = 1; steps[i]; i++) {
			size_t keep = cur < steps[i] ? cur : steps[i];
			p = realloc(p, steps[i]);
			CHECK(p);
			CHECK(same(p, keep, seed));
			fill(p, steps[i], seed);
			cur = steps[i];
		}
		free(p);
	}
	printf("realloc_across_boundaries: ok\n");
}

static void usable_sizes(void)
{
	for (size_t n = 0; n <= (1u << 20); n++) {
		void *p = malloc(n);
		CHECK(p);
		CHECK(malloc_usable_size(p) >= n);
		free(p);
	}
	printf("usable_sizes: ok (0..1 MiB)\n");
}

static void *churn_thread(void *arg)
{
	uint64_t s = (uintptr_t)arg * 0x9e3779b97f4a7c15u + 1;
	void *v[64] = {0};
	for (int i = 0; i < 2000; i++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		int j = (int)(s % 64);
		free(v[j]);
		size_t n = (size_t)(s >> 20) % 3000;
		v[j] = malloc(n);
		CHECK(v[j] || !n);
		if (n) memset(v[j], (int)j, n);
	}
	for (int j = 0; j < 64; j++) free(v[j]);
	return NULL;
}

static void thread_storms(void)
{
	for (int round = 0; round < 50; round++) {
		pthread_t t[16];
		for (int i = 0; i < 16; i++) CHECK(pthread_create(&t[i], NULL, churn_thread, (void *)(uintptr_t)(round * 16 + i)) == 0);
		for (int i = 0; i < 16; i++) CHECK(pthread_join(t[i], NULL) == 0);
	}
	printf("thread_storms: ok (16 threads x 50)\n");
}

/* Producer allocates and fills, consumer (another thread, so maybe another arena)
 * checks and frees. */
#define RING 256
static struct {
	pthread_mutex_t m;
	pthread_cond_t cv;
	unsigned char *item[RING];
	size_t len[RING];
	unsigned head, count;
	int done;
} ring = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, {0}, 0, 0, 0};

static void *producer(void *arg)
{
	uint64_t s = 12345;
	for (int i = 0; i < 200000; i++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		size_t n = 1 + (size_t)(s % 2048);
		unsigned char *p = malloc(n);
		CHECK(p);
		fill(p, n, (unsigned)n);
		pthread_mutex_lock(&ring.m);
		while (ring.count == RING) pthread_cond_wait(&ring.cv, &ring.m);
		ring.item[(ring.head + ring.count) % RING] = p;
		ring.len[(ring.head + ring.count) % RING] = n;
		ring.count++;
		pthread_cond_broadcast(&ring.cv);
		pthread_mutex_unlock(&ring.m);
	}
	pthread_mutex_lock(&ring.m);
	ring.done++;
	pthread_cond_broadcast(&ring.cv);
	pthread_mutex_unlock(&ring.m);
	return arg;
}

static void *consumer(void *arg)
{
	for (;;) {
		pthread_mutex_lock(&ring.m);
		while (!ring.count && ring.done < 2) pthread_cond_wait(&ring.cv, &ring.m);
		if (!ring.count) {
			pthread_mutex_unlock(&ring.m);
			return arg;
		}
		unsigned char *p = ring.item[ring.head];
		size_t n = ring.len[ring.head];
		ring.head = (ring.head + 1) % RING;
		ring.count--;
		pthread_cond_broadcast(&ring.cv);
		pthread_mutex_unlock(&ring.m);
		CHECK(same(p, n, (unsigned)n));
		free(p);
	}
}

static void cross_thread_frees(void)
{
	pthread_t pt[2], ct[2];
	for (int i = 0; i < 2; i++) CHECK(pthread_create(&pt[i], NULL, producer, NULL) == 0);
	for (int i = 0; i < 2; i++) CHECK(pthread_create(&ct[i], NULL, consumer, NULL) == 0);
	for (int i = 0; i < 2; i++) CHECK(pthread_join(pt[i], NULL) == 0);
	for (int i = 0; i < 2; i++) CHECK(pthread_join(ct[i], NULL) == 0);
	printf("cross_thread_frees: ok\n");
}

/* One million live allocations of 16 B - 16 KiB (log-uniform). */
static void million_live(void)
{
	enum { N = 1000000 };
	void **v = malloc(N * sizeof *v);
	CHECK(v);
	long before = count_vmas();
	size_t bytes = 0;
	for (long i = 0; i < N; i++) {
		size_t n = rnd_size(16, 16384);
		v[i] = malloc(n);
		if (!v[i]) {
			fprintf(stderr, "million_live: allocation %ld failed (vmas now %ld)\n", i, count_vmas());
			exit(1);
		}
		*(volatile char *)v[i] = 1;
		bytes += n;
	}
	long after = count_vmas();
	const char *backend = rampart_guard_backend();
	printf("million_live: %s backend, %zu MiB requested, VMAs %ld -> %ld (+%ld)\n", backend,
	       bytes >> 20, before, after, after - before);
	if (strcmp(backend, "madvise") == 0) CHECK(after - before < 1000);
	for (long i = 0; i < N; i++) free(v[i]);
	free(v);
	printf("million_live: after freeing everything, VMAs %ld\n", count_vmas());
}

int main(int argc, char **argv)
{
	all_arenas(argv); /* cross_arena_frees */
	/* Run one part by name (for debugging), or all of them. */
	const char *only = argc > 1 ? argv[1] : NULL;
#define PART(f) if (!only || !strcmp(only, #f)) f()
	PART(fresh_pages_fault_once);
	PART(cross_arena_frees);
	PART(batched_frees);
	PART(reuse_is_zero);
	PART(realloc_across_boundaries);
	PART(usable_sizes);
	PART(thread_storms);
	PART(cross_thread_frees);
	PART(million_live);
	return 0;
}
