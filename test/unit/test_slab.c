/* test_slab — white-box checks of the slab allocator through its decoding functions
 * and the public API: pointer -> slab/slot decoding, bitmaps, slot quarantine,
 * canary layout, the zero-size class and alignment. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../all_arenas.h"
#include "../check_main.h"
#include "../harness.h"
#include "../site.h"
#include "rampart.h"
#include "slab/sizeclass.h"
#include "slab/slab.h"
#include "slab/batched_free.h"
#include "slab/slab_class.h"
#include "front/init.h"
#include "os/os.h"
#include "guard/meta.h"
#include "slab/slot_check.h"

#include "../maps.h"

/* op(p) is fatal: asked in a child, whose report is discarded. */
static bool fatal_in_child(void (*op)(void *), void *p)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		quiet_child();
		int null = open("/dev/null", O_WRONLY);
		dup2(null, STDERR_FILENO);
		op(p);
		_exit(0);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
}

static void ask_object_size(void *p) { (void)malloc_object_size(p); }
static bool object_size_is_fatal(const void *p) { return fatal_in_child(ask_object_size, (void *)p); }
static bool free_is_fatal(void *p) { return fatal_in_child(free, p); }

static unsigned char tag_of(const void *p) { return (unsigned char)((uintptr_t)p >> 4 | 1); }

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

/* Every class: the pointer decodes to its class, usable size and interior extents. */
START_TEST(decode_every_class)
{
	for (unsigned c = 1; c < SC_COUNT; c++) {
		size_t n = sc_usable(c);
		char *p = malloc(n);
		ck_assert_ptr_nonnull(p);
		ck_assert(slab_contains(p));
		ck_assert_uint_eq((uintptr_t)p % 16, 0);
		ck_assert_uint_eq(malloc_usable_size(p), n);
		memset(p, 0xa5, n);
		for (size_t k = 0; k < n; k += n / 7 + 1) ck_assert_uint_eq(malloc_object_size(p + k), n - k);
		ck_assert_uint_eq(malloc_object_size(p + n - 1), 1);
		if (SC_CANARY) { /* the canary is not the caller's (without, p + n is the next slot) */
			ck_assert_uint_eq(malloc_object_size(p + n), 0);
			ck_assert_uint_eq(malloc_object_size(p + sc_size(c) - 1), 0);
		}
		free(p);
		if (c % 8 == 1) ck_assert(object_size_is_fatal(p)); /* a few classes: each is a fork */
		/* The next size up lands in the next class. */
		if (c + 1 < SC_COUNT) {
			p = malloc(n + 1);
			ck_assert_uint_eq(malloc_usable_size(p), sc_usable(c + 1));
			free(p);
		}
	}
	/* Just past the largest class: a large allocation, outside the slab reservation. */
	void *big = malloc(SC_MAX_REQUEST + 1);
	ck_assert_ptr_nonnull(big);
	ck_assert(!slab_contains(big));
	free(big);
}
END_TEST

/* invariant() (base/common.h): a fatal report where built with CONFIG_INVARIANTS=1 (the
 * check-* builds), compiled out elsewhere, its condition not even evaluated. */
static int invariant_evaluations;
static bool count_evaluation(void) { return ++invariant_evaluations > 0; }
static void break_invariant(void *p) { invariant(p == NULL); }
START_TEST(invariant_checked_only_when_built_in)
{
	invariant(count_evaluation());
#if CONFIG_INVARIANTS
	ck_assert_int_eq(invariant_evaluations, 1);
	ck_assert(fatal_in_child(break_invariant, &invariant_evaluations));
#else
	ck_assert_int_eq(invariant_evaluations, 0);
	ck_assert(!fatal_in_child(break_invariant, &invariant_evaluations));
#endif
}
END_TEST

/* The one decoder (class_at, then decode_slot, locked or not) and its inverse
 * (slot_start): a block's first and last byte decode to its slot, at offsets 0 and
 * size - 1, in every class; addresses just outside what its area maps decode to no
 * slab. */
START_TEST(decode_slot_round_trip)
{
	for (unsigned c = 1; c < SC_COUNT; c++) {
		char *p = malloc(sc_usable(c));
		ck_assert_ptr_nonnull(p);
		const struct area_span *span;
		struct slab_class *k = class_at((uintptr_t)p, &span);
		ck_assert_ptr_nonnull(k);
		ck_assert_uint_eq(k->cls, c);
		class_lock(k);
		struct slot_place a = decode_slot(k, span, (uintptr_t)p, LOCK_HELD);
		struct slot_place z = decode_slot(k, span, (uintptr_t)p + k->size - 1, LOCK_HELD);
		struct slot_place u = decode_slot(k, span, (uintptr_t)p, NO_LOCK);
		struct slot_place below = decode_slot(k, span, span->base + span->lo - 1, LOCK_HELD);
		struct slot_place above = decode_slot(k, span, span->base + span->hi, LOCK_HELD);
		class_unlock(k);
		ck_assert_ptr_nonnull(a.s);
		ck_assert_int_eq(a.s->state, SLAB_ACTIVE);
		ck_assert_uint_lt(a.i, k->slots);
		ck_assert_uint_eq(a.at, 0);
		ck_assert_ptr_eq((void *)slot_start(k, a.pos, a.i), p);
		ck_assert_ptr_eq(z.s, a.s);
		ck_assert_uint_eq(z.pos, a.pos);
		ck_assert_uint_eq(z.i, a.i);
		ck_assert_uint_eq(z.at, k->size - 1);
		ck_assert_ptr_eq(u.s, a.s);
		ck_assert_uint_eq(u.pos, a.pos);
		ck_assert_uint_eq(u.i, a.i);
		ck_assert_ptr_null(below.s);
		ck_assert_ptr_null(above.s);
		free(p);
	}
}
END_TEST

/* Bitmaps: thousands of live slots of one class are distinct and each decodes alone. */
START_TEST(bitmaps_hand_out_distinct_slots)
{
	enum { N = 5000 };
	static uintptr_t v[N];
	for (unsigned round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++) {
			v[i] = (uintptr_t)malloc(40);
			ck_assert(v[i]);
			*(uint64_t *)v[i] = (uint64_t)i;
		}
		for (int i = 0; i < N; i++) ck_assert_uint_eq(*(uint64_t *)v[i], (uint64_t)i);
		qsort(v, N, sizeof *v, cmp_ptr);
		for (int i = 1; i < N; i++) ck_assert_uint_ge(v[i] - v[i - 1], 48);
		/* Free in address order, then every other one first next round. */
		for (int i = round & 1; i < N; i += 2) free((void *)v[i]);
		for (int i = !(round & 1); i < N; i += 2) free((void *)v[i]);
	}
}
END_TEST

/* A freed slot is not handed out again while fewer frees than the FIFO length follow. */
START_TEST(quarantine_holds_freed_slot)
{
	if (!roots.opt.slot_quarantine_bytes) return; /* profile light: none */
	enum { OTHERS = 100, ALLOCS = 3000 };
	void *others[OTHERS], *got[ALLOCS];
	void *victim = site_malloc(100);
	for (int i = 0; i < OTHERS; i++) others[i] = site_malloc(100);
	free(victim);
	for (int i = 0; i < OTHERS; i++) free(others[i]);
	for (int i = 0; i < ALLOCS; i++) {
		got[i] = site_malloc(100);
		ck_assert_ptr_ne(got[i], victim);
		for (int j = 0; j < OTHERS; j++) ck_assert_ptr_ne(got[i], others[j]);
	}
	for (int i = 0; i < ALLOCS; i++) free(got[i]);
	/* The victim is still recognised as freed while in the quarantine. */
	ck_assert(object_size_is_fatal(victim));
}
END_TEST

/* The address of the slot k holds for its next allocation, or NULL. */
static char *released_slot(struct slab_class *k)
{
	if (!k->released) return NULL;
	uint32_t pos = qentry_pos(k->released), i = qentry_slot(k->released);
	return (char *)slot_start(k, pos, i);
}

/* The held slot: the one held already (a free since the last allocation may have
 * made one leave the quarantine), else the one that leaves at the first of the frees
 * of v that makes one leave. */
static char *free_until_released(struct slab_class *k, void **v, int n, int *next)
{
	while (!k->released && *next < n) free(v[(*next)++]);
	return released_slot(k);
}

/* The slot that leaves the quarantine is held, still freed, for the class's next
 * allocation: a free or a size question about it is fatal until then, the next
 * allocation of the class gets exactly it, and malloc_trim gives it back to its slab. */
START_TEST(released_slot_goes_to_next_allocation)
{
	if (!roots.opt.slot_quarantine_bytes) return; /* profile light: none */
	/* More than the class's quarantine holds (2,048 + 4,096 slots of 112 bytes) and
	 * the 21 rounds below take. */
	enum { N = 8000 };
	static void *v[N];
	for (int i = 0; i < N; i++) v[i] = site_malloc(100);
	const struct area_span *span;
	struct slab_class *k = class_at((uintptr_t)v[0], &span);
	ck_assert_ptr_nonnull(k);
	ck_assert_uint_eq(k->cls, sc_of(100));
	int next = 0;
	for (int round = 0; round < 20; round++) {
		char *held = free_until_released(k, v, N, &next);
		ck_assert_ptr_nonnull(held);
		ck_assert(free_is_fatal(held));
		ck_assert(object_size_is_fatal(held));
		char *q = site_malloc(100);
		ck_assert_ptr_eq(q, held);
		ck_assert_ptr_null(released_slot(k));
		memset(q, 0x5a, 100);
		free(q);
	}
	/* malloc_trim lets the held slot go back to its slab, free there. */
	char *held = free_until_released(k, v, N, &next);
	ck_assert_ptr_nonnull(held);
	uint32_t pos = qentry_pos(k->released), i = qentry_slot(k->released);
	const struct slab *s = desc(k, pos);
	uint32_t in_use = s->nused;
	malloc_trim(0);
	ck_assert_ptr_null(released_slot(k));
	/* Free in its slab (with partitions, its partition's: still used in the bits), or
	 * its slab emptied and closed by the trim. */
	if (k->parted)
		ck_assert(s->state != SLAB_ACTIVE ||
			  ((owners_of(k, s, pos)[i] & OWNER_FREE) && s->nused == in_use && s->nown));
	else
		ck_assert(s->state != SLAB_ACTIVE || (!(s->bits[i >> 6].used >> (i & 63) & 1) && s->nused == in_use - 1));
	while (next < N) free(v[next++]);
}
END_TEST

/* A quarantine entry (slot quarantine, deferred list, free batches) names any position
 * a class may number with any slot index, far past the 2^24 positions that 32-bit
 * entries held: each decodes back to the same pair, none is 0 (no entry), and the
 * entries of neighbouring slots and positions differ. */
START_TEST(quarantine_entries_hold_any_position)
{
	static const uint32_t positions[] = {
		0, 1, FIRST_POSITIONS, (1u << 24) - 1, 1u << 24, (1u << 24) + 1, (1u << 31) + 5,
		MAX_POSITIONS - 1, UINT32_MAX,
	};
	ck_assert_uint_gt(MAX_POSITIONS, (1u << 31) + 5);
	/* Every slot index up to SLAB_MAX_SLOTS covers the class with the most slots a slab
	 * (with 4 KiB pages the zero class has exactly that many). */
	uint32_t most = 0;
	for (unsigned c = 0; c < SC_COUNT; c++) {
		struct sc_geometry g;
		sc_geometry(c, os_page, &g);
		most = g.slots > most ? g.slots : most;
	}
	ck_assert_uint_le(most, SLAB_MAX_SLOTS);
	if (os_page == 4096) ck_assert_uint_eq(most, SLAB_MAX_SLOTS);
	for (size_t n = 0; n < sizeof positions / sizeof *positions; n++) {
		uint32_t pos = positions[n];
		for (uint32_t i = 0; i < SLAB_MAX_SLOTS; i++) {
			qentry_t e = qentry(pos, i);
			ck_assert_uint_ne(e, 0);
			ck_assert_uint_eq(qentry_pos(e), pos);
			ck_assert_uint_eq(qentry_slot(e), i);
			if (i) ck_assert_uint_ne(e, qentry(pos, i - 1));
			if (pos) ck_assert_uint_ne(e, qentry(pos - 1, i));
			/* Positions that differ by 2^24 (the old entries' wrap) differ. */
			if (pos >= 1u << 24) ck_assert_uint_ne(e, qentry(pos - (1u << 24), i));
		}
	}
}
END_TEST

/* Canary: the 8 bytes after the usable part, leading byte zero, one value per slab. */
START_TEST(canary_layout)
{
#if CONFIG_SLOT_CANARY
	enum { N = 2000 };
	static unsigned char *v[N];
	int same_slab = 0, diff_slab = 0, diff_value = 0;
	for (int i = 0; i < N; i++) {
		v[i] = malloc(24); /* class 32: one-page slabs with 4 KiB pages */
		ck_assert_uint_eq(malloc_usable_size(v[i]), 24);
		ck_assert_uint_eq(v[i][24], 0);
		uint64_t c;
		memcpy(&c, v[i] + 24, 8);
		ck_assert_uint_ne(c, 0);
	}
	long page = sysconf(_SC_PAGESIZE);
	for (int i = 1; i < N; i++) {
		bool same = (uintptr_t)v[i] / page == (uintptr_t)v[0] / page;
		int eq = memcmp(v[i] + 24, v[0] + 24, 8) == 0;
		if (same) {
			same_slab++;
			ck_assert(eq);
		} else {
			diff_slab++;
			diff_value += !eq;
		}
	}
	ck_assert_int_gt(diff_slab, 0);
	ck_assert_int_eq(diff_value, diff_slab); /* 2^-56 chance of a false failure */
	(void)same_slab;
	for (int i = 0; i < N; i++) free(v[i]);
#endif
}
END_TEST

/* A slot keeps its canary once handed out: a free wipes the data but not the canary,
 * and freeing next to free slots that hold one (16-byte slots included, whose second
 * word is the canary) is no neighbour damage. */
START_TEST(freed_slots_keep_canary)
{
#if CONFIG_SLOT_CANARY && CONFIG_ZERO_ON_FREE
	enum { N = 3000 };
	static unsigned char *v[N];
	static uint64_t canary[N];
	static const size_t sizes[] = {8, 24, 100};
	for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
		for (int i = 0; i < N; i++) {
			v[i] = site_malloc(sizes[z]);
			ck_assert_ptr_nonnull(v[i]);
			memset(v[i], 0xa5, sizes[z]);
			memcpy(&canary[i], v[i] + malloc_usable_size(v[i]), 8);
			ck_assert_uint_ne(canary[i], 0);
		}
		size_t usable = malloc_usable_size(v[0]);
		/* Every other block first (its slab stays open: the rest are live), then the
		 * rest: each free of the second half has free neighbours on both sides. */
		for (int i = 0; i < N; i += 2) free(v[i]);
		for (int i = 0; i < N; i += 2) {
			uint64_t c;
			memcpy(&c, v[i] + usable, 8);
			ck_assert_uint_eq(c, canary[i]);
			for (size_t b = 0; b < sizes[z]; b++) ck_assert_uint_eq(v[i][b], 0);
		}
		for (int i = 1; i < N; i += 2) free(v[i]);
		/* Handed out again and freed in another order: the kept canaries stay valid. */
		for (int i = 0; i < N; i++) v[i] = site_malloc(sizes[z]);
		for (int i = N - 1; i >= 0; i--) free(v[i]);
	}
#endif
}
END_TEST

START_TEST(zero_size_class)
{
	void *a = malloc(0), *b = malloc(0);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_ne(a, b);
	ck_assert(slab_contains(a));
	ck_assert_uint_eq(malloc_usable_size(a), 0);
	ck_assert_uint_eq(malloc_object_size(a), 0);
	free_sized(a, 0);
	free(b);
}
END_TEST

START_TEST(alignment_and_resizing)
{
	for (size_t align = 16; align <= 4096; align *= 2) {
		void *p = memalign(align, 100);
		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq((uintptr_t)p % align, 0);
		ck_assert(slab_contains(p));
		free_aligned_sized(p, align, 100);
	}
	char *p = malloc(100);
	memset(p, 7, 100);
	ck_assert_ptr_eq(realloc(p, 104), p); /* same class (112): stays */
	char *q = realloc(p, 1000);
	ck_assert_ptr_ne(q, p);
	for (int i = 0; i < 100; i++) ck_assert_int_eq(q[i], 7);
	free_sized(q, 1000);
}
END_TEST

/* calloc of a recycled slot is zero without an explicit clear. */
START_TEST(calloc_is_zero)
{
	for (int round = 0; round < 2000; round++) {
		unsigned char *p = site_calloc(1, 200);
		memset(p, 0xff, 200);
		free(p);
		unsigned char *z = site_calloc(1, 200);
		for (int i = 0; i < 200; i++) ck_assert_uint_eq(z[i], 0);
		free(z);
	}
}
END_TEST

/* --- cost follows use: fresh slots, dirty extents ------------------------------- */

static size_t resident_pages(const void *p, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(pg - 1), end = (uintptr_t)p + len;
	static unsigned char vec[1024];
	size_t n = (end - a + pg - 1) / pg, r = 0;
	ck_assert_uint_le(n, sizeof vec);
	ck_assert_int_eq(mincore((void *)a, end - a, vec), 0);
	for (size_t i = 0; i < n; i++) r += vec[i] & 1;
	return r;
}

/* A slot never handed out since its slab opened is known zero: it is not read (which
 * would map the zero page and fault again on the first write) and calloc clears
 * nothing. Only the canary at its end is written. */
START_TEST(fresh_slot_untouched)
{
	unsigned char *p = malloc(60000); /* a 64 KiB class nothing else here uses */
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(resident_pages(p, 60000 - 8192), 0);
	unsigned char *z = calloc(1, 60000);
	ck_assert_ptr_nonnull(z);
	ck_assert_uint_eq(resident_pages(z, 60000 - 8192), 0);
	for (size_t i = 0; i < 60000; i += 997) ck_assert_uint_eq(z[i], 0);
	free(p);
	free(z);
}
END_TEST

/* Get slot `want` back from malloc(n) (or calloc): allocate and hold, freeing every
 * other held block (the frees push `want` out of the slot quarantine, the held blocks
 * fill the slabs until its slab is reached). NULL if it never comes within the bound. */
static unsigned char *get_slot_back(const void *want, size_t n, bool zeroed)
{
	enum { TRIES = 20000 };
	static unsigned char *held[TRIES];
	size_t first = 0, count = 0;
	unsigned char *got = NULL;
	for (int tries = 0; tries < TRIES && !got; tries++) {
		unsigned char *q = zeroed ? site_calloc(1, n) : site_malloc(n);
		ck_assert_ptr_nonnull(q);
		if (q == want) got = q;
		else held[count++] = q;
		if (tries % 2 && first < count) free(held[first++]);
	}
	while (first < count) free(held[first++]);
	return got;
}

/* A free wipes what the program asked for, and all of the slot once it asked for all
 * (an overflow into the slot's slack instead is fatal at the free: death/slack_death). */
START_TEST(extent_wipe_and_calloc)
{
	unsigned char *p = site_calloc(1, 5000); /* class 5120: usable 5112 */
	ck_assert_uint_eq(malloc_usable_size(p) >= 5000, 1);
	unsigned char *q = malloc(3000), *keep = malloc(5000); /* keep the slab open */
	memset(p, 0xab, 5000);
	free(p);
	free(q);
	unsigned char *z = get_slot_back(p, 5100, true);
	ck_assert_ptr_nonnull(z);
	for (size_t i = 0; i < 5100; i++) ck_assert_uint_eq(z[i], 0);
	/* Now the whole usable size, written after asking for it. */
	unsigned char *r = site_calloc(1, 4800);
	ck_assert_ptr_nonnull(r);
	free(z);
	memset(r, 0x5a, malloc_usable_size(r));
	free(r);
	z = get_slot_back(r, 5112, true);
	ck_assert_ptr_nonnull(z);
	for (size_t i = 0; i < 5112; i++) ck_assert_uint_eq(z[i], 0);
	free(z);
	free(keep);
}
END_TEST

/* The extent grows to the usable size once the program learns it, and with an
 * in-place realloc: writing that far is no write after free later. */
START_TEST(extent_grows)
{
	for (int round = 0; round < 50; round++) {
		unsigned char *p = site_calloc(1, 3000); /* class 3072 */
		size_t u = malloc_usable_size(p);
		memset(p, 1, u);
		unsigned char *q = site_calloc(1, 2400); /* class 2560 */
		unsigned char *q2 = realloc(q, 2500);
		ck_assert_ptr_eq(q2, q);
		memset(q2, 2, 2500);
		unsigned char *o = site_calloc(1, 10000); /* class 10240 */
		size_t left = malloc_object_size(o + 100);
		memset(o + 100, 3, left);
		free(p);
		free(q2);
		free(o);
	}
	/* Every slot freed above is handed out again without a false alarm, zero. */
	for (int i = 0; i < 3000; i++) {
		unsigned char *a = site_calloc(1, 3000), *b = site_calloc(1, 2500), *c = site_calloc(1, 10000);
		ck_assert(a[2999] == 0 && b[2499] == 0 && c[9999] == 0 && c[5000] == 0);
		free(a);
		free(b);
		free(c);
	}
}
END_TEST

/* Is p in the nursery (not in a class's region)? */
static bool in_nursery(const void *p)
{
	return roots.slab.slot_shift && (uintptr_t)p - roots.slab.base >= (size_t)CONFIG_SLAB_ARENAS * SC_COUNT << roots.slab.region_shift;
}

/* The class whose nursery cell p is in (arena 0's cells), or SC_COUNT. */
static unsigned nursery_class(const void *p)
{
	if (!in_nursery(p)) return SC_COUNT;
	size_t slot = ((uintptr_t)p - roots.slab.nursery) >> roots.slab.slot_shift;
	return slot < CONFIG_SLAB_ARENAS * SC_COUNT && roots.slab.owner[slot] < SC_COUNT ? roots.slab.owner[slot] : SC_COUNT;
}

/* The place of class r (arena * SC_COUNT + class) among the window's regions and the
 * nursery's slots. */
static size_t place_of(unsigned r)
{
	size_t j = 0;
	while (roots.slab.owner[j] != r) j++;
	return j;
}

/* The start of class r's region. */
static uintptr_t region_of(unsigned r)
{
	return roots.slab.base + (place_of(r) << roots.slab.region_shift);
}

/* The slab window is set aside, not mapped: a program may map something there with
 * an address hint. That memory is not rampart's: malloc_object_size answers 0 for it.
 * And a class whose growth runs into such a mapping fails its allocations with ENOMEM
 * (never maps over it, never crashes). */
START_TEST(foreign_mapping_in_window)
{
	free(malloc(16)); /* started */
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t region = (size_t)1 << roots.slab.region_shift;
	/* The far end of the last region: no class maps that far. */
	char *hint = (char *)(roots.slab.base + roots.slab.size - 2 * pg);
	char *m = mmap(hint, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ck_assert(m == hint);
	m[0] = 7;
	ck_assert(slab_contains(m));
	ck_assert_uint_eq(malloc_object_size(m), 0);
	ck_assert_uint_eq(malloc_object_size(m + 100), 0);
	ck_assert_int_eq(munmap(m, pg), 0);

	/* A mapping just above what class 9's region of this thread's arena has mapped. Its
	 * first slabs are in its nursery cell: the first block past them is in the region. */
	size_t n = sc_usable(9);
	static void *got[1 << 16];
	size_t count = 0;
	void *first;
	for (;;) {
		first = malloc(n);
		ck_assert(first != NULL);
		if (!in_nursery(first)) break;
		ck_assert(count < sizeof got / sizeof *got);
		got[count++] = first;
	}
	uintptr_t r0 = roots.slab.base + ((uintptr_t)first - roots.slab.base) / region * region;
	char *wall = (char *)maps_run_end((uintptr_t)first);
	ck_assert((uintptr_t)wall < r0 + region);
	ck_assert(mmap(wall, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == wall);
	wall[0] = 9;
	for (;;) {
		ck_assert(count < sizeof got / sizeof *got);
		errno = 0;
		void *p = malloc(n);
		if (!p) {
			ck_assert_int_eq(errno, ENOMEM);
			break;
		}
		ck_assert((uintptr_t)p + n <= (uintptr_t)wall && (uintptr_t)p > r0);
		got[count++] = p;
	}
	ck_assert_int_eq(wall[0], 9); /* never mapped over */
	for (size_t i = 0; i < count; i++) free(got[i]);
	free(first);
	ck_assert_int_eq(munmap(wall, pg), 0);
}
END_TEST

/* Where the run of mappings holding a begins (mappings back to back, whatever their
 * protection: like mapped_end, which follows them up). */
static uintptr_t mapped_start(uintptr_t a)
{
	FILE *f = fopen("/proc/self/maps", "r");
	ck_assert(f != NULL);
	char line[512];
	uintptr_t start = 0, prev_end = 0;
	while (fgets(line, sizeof line, f)) {
		char *dash;
		uintptr_t lo = strtoul(line, &dash, 16), hi = strtoul(dash + 1, NULL, 16);
		if (lo != prev_end) start = lo; /* a gap: a new run */
		prev_end = hi;
		if (lo <= a && a < hi) break;
	}
	fclose(f);
	ck_assert(start != 0 && prev_end > a);
	return start;
}

/* Each class's first slabs lie in the nursery, in a cell of its own at a random place:
 * every class whose slab fits a cell (below a lead of up to a quarter of it and
 * a closed page) starts there, in its own cell; bigger ones start in their regions.
 * A class that outgrows its cell goes on in its region, and blocks on both sides keep
 * their contents, decode and free; a double free is caught on both sides. Around the
 * cell's slabs, the closed pages (below and above) and the region's positions that
 * are the nursery's are rampart's but no block: free and malloc_object_size are fatal. */
START_TEST(nursery_holds_first_slabs)
{
	free(malloc(16)); /* started */
	if (!roots.slab.slot_shift) return; /* built without one */
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), cell = (size_t)CONFIG_SLAB_NURSERY_PAGES * pg;
	static void *first[SC_COUNT];
	for (unsigned k = 1; k < SC_COUNT; k++) {
		struct sc_geometry g;
		sc_geometry(k, pg, &g);
		size_t slab = (size_t)g.pages * pg;
		struct slab_class_figures f; /* the test runner may have used the class */
		slab_class_figures(k, &f, NULL);
		bool fresh = f.slabs_active + f.slabs_empty + f.slabs_closed == 0;
		first[k] = malloc(sc_usable(k));
		ck_assert_ptr_nonnull(first[k]);
		if (fresh && slab + cell / 4 + pg <= cell) ck_assert_uint_eq(nursery_class(first[k]), k);
		else if (slab + 2 * pg > cell) ck_assert(!in_nursery(first[k]));
		else ck_assert(!in_nursery(first[k]) || nursery_class(first[k]) == k);
	}

	/* 48-byte blocks (one-page slabs) until one lies in the region. */
	unsigned c = sc_of(48);
	size_t n = sc_usable(c);
	static unsigned char *v[1 << 14];
	size_t count = 0, in_region = 0;
	while (!in_region) {
		ck_assert(count < sizeof v / sizeof *v);
		unsigned char *p = malloc(n);
		ck_assert_ptr_nonnull(p);
		memset(p, tag_of(p), n);
		if (!in_nursery(p)) in_region = count + 1;
		else ck_assert_uint_eq(nursery_class(p), c);
		v[count++] = p;
	}
	ck_assert_uint_gt(count, 8); /* a cell holds many one-page slabs */
	for (size_t i = 0; i < count; i++) {
		ck_assert_uint_eq(malloc_usable_size(v[i]), n);
		ck_assert_uint_eq(malloc_object_size(v[i] + 1), n - 1);
		for (size_t j = 0; j < n; j++) ck_assert_uint_eq(v[i][j], tag_of(v[i]));
	}

	/* Around the cell's slabs: a closed page below, a closed page above. */
	unsigned char *nb = v[0], *rb = v[in_region - 1];
	uintptr_t cell_lo = mapped_start((uintptr_t)nb), cell_hi = maps_run_end((uintptr_t)nb);
	ck_assert(object_size_is_fatal((void *)cell_lo));
	ck_assert(free_is_fatal((void *)cell_lo));
	ck_assert(object_size_is_fatal((void *)(cell_hi - pg)));
	ck_assert(free_is_fatal((void *)(cell_hi - pg)));
	/* The region's first positions (closed, never used: the nursery's). */
	uintptr_t region_base = mapped_start((uintptr_t)rb) + pg;
	ck_assert(object_size_is_fatal((void *)region_base));
	ck_assert(free_is_fatal((void *)region_base));

	free(nb);
	free(rb);
	ck_assert(free_is_fatal(nb));
	ck_assert(free_is_fatal(rb));
	for (size_t i = 0; i < count; i++)
		if (v[i] != nb && v[i] != rb) free(v[i]);
	for (unsigned k = 1; k < SC_COUNT; k++) free(first[k]);
}
END_TEST

/* A class whose nursery cell another mapping took before its first slab does without
 * it: its slabs are all in its region, and the mapping is left alone. */
START_TEST(nursery_cell_taken)
{
	free(malloc(16)); /* started */
	if (!roots.slab.slot_shift) return;
	/* Its cell's place in its slot is drawn at its set-up: the mapping takes the slot. */
	size_t slot = (size_t)1 << roots.slab.slot_shift, pg = (size_t)sysconf(_SC_PAGESIZE);
	unsigned c = sc_of(20000); /* no class this size is used before (a fresh child) */
	struct slab_class_figures f;
	slab_class_figures(c, &f, NULL);
	ck_assert_uint_eq(f.slabs_active + f.slabs_empty + f.slabs_closed, 0);
	char *at = (char *)(roots.slab.nursery + (place_of(c) << roots.slab.slot_shift));
	char *m = mmap(at, slot, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ck_assert(m == at);
	for (size_t i = 0; i < slot; i += pg) m[i] = 0x77;
	static void *got[64];
	for (unsigned i = 0; i < 64; i++) {
		got[i] = malloc(20000);
		ck_assert_ptr_nonnull(got[i]);
		ck_assert(!in_nursery(got[i]));
		ck_assert_uint_eq(malloc_usable_size(got[i]), sc_usable(c));
		memset(got[i], 0x11, 20000);
	}
	ck_assert_uint_eq(malloc_object_size(m + slot / 2), 0); /* not rampart's */
	for (unsigned i = 0; i < 64; i++) free(got[i]);
	for (size_t i = 0; i < slot; i += pg) ck_assert_uint_eq((unsigned char)m[i], 0x77);
	ck_assert_int_eq(munmap(m, slot), 0);
}
END_TEST

/* A one-page class (up to 128 bytes) no test has used in this process, or 0. */
static unsigned fresh_small_class(unsigned after)
{
	for (unsigned c = after + 1; c < SC_COUNT && sc_size(c) <= 128; c++) {
		struct slab_class_figures f;
		slab_class_figures(c, &f, NULL);
		if (f.slabs_active + f.slabs_empty + f.slabs_closed == 0) return c;
	}
	return 0;
}

/* A class's nursery cell is mapped as the class uses it, not whole at its first slab:
 * the first slab maps one growth (CONFIG_SLAB_GROW_MIN, with the closed page below and
 * the one above the first slab), so an unprivileged mlockall, which counts every mapped
 * byte, is charged for what a class uses. Each growth at most doubles it, and the class
 * still moves on to its region only once its cell is mapped whole. Past what the cell
 * mapped lies nothing: the mapping's last page is closed. */
START_TEST(nursery_cell_grows_with_use)
{
	free(malloc(16)); /* started */
	if (!roots.slab.slot_shift) return; /* built without one */
	unsigned c = fresh_small_class(0);
	if (!c) return; /* the runner used them all */
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = sc_usable(c);
	char *p = malloc(n);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(nursery_class(p), c);
	const struct area_span *span;
	struct slab_class *k = class_at((uintptr_t)p, &span);
	ck_assert_ptr_nonnull(k);
	ck_assert_uint_eq(k->nursery.size, CONFIG_SLAB_GROW_MIN);
	ck_assert_uint_lt(k->nursery.size, k->nursery_bytes);
	uintptr_t lo = mapped_start((uintptr_t)p), hi = maps_run_end((uintptr_t)p);
	ck_assert_uint_eq(hi - lo, CONFIG_SLAB_GROW_MIN + pg); /* with the closed page below */
	ck_assert_uint_eq(malloc_object_size((void *)hi), 0); /* not rampart's */
	static char *v[1 << 14];
	size_t count = 0, mapped = k->nursery.size;
	for (;;) {
		ck_assert(count < sizeof v / sizeof *v);
		char *q = malloc(n);
		ck_assert_ptr_nonnull(q);
		v[count++] = q;
		if (!in_nursery(q)) break;
		uintptr_t top = (((uintptr_t)q - k->nursery.base) | (pg - 1)) + 1; /* past q's slab */
		ck_assert_uint_ge(k->nursery.size, top + pg);
		ck_assert_uint_le(k->nursery.size, MAX(2 * mapped, (size_t)CONFIG_SLAB_GROW_MIN));
		mapped = k->nursery.size;
	}
	ck_assert_uint_eq(k->nursery.size, k->nursery_bytes + pg); /* whole, before the region */
	ck_assert_uint_eq(maps_run_end((uintptr_t)p) - mapped_start((uintptr_t)p), k->nursery_bytes + 2 * pg);
	for (size_t i = 0; i < count; i++) free(v[i]);
	free(p);
}
END_TEST

/* A mapping laid right above what a class's cell has mapped (an address hint: the
 * window is only set aside) ends the cell there: the class goes on in its region, the
 * mapping is left alone and is not rampart's, and blocks on both sides keep their
 * contents and free. */
START_TEST(nursery_cell_ends_at_a_mapping)
{
	free(malloc(16)); /* started */
	if (!roots.slab.slot_shift) return;
	unsigned c = fresh_small_class(0);
	if (!c) return;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = sc_usable(c);
	unsigned char *p = malloc(n);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(nursery_class(p), c);
	char *wall = (char *)maps_run_end((uintptr_t)p);
	ck_assert(mmap(wall, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == wall);
	wall[0] = 9;
	memset(p, tag_of(p), n);
	static unsigned char *v[1 << 14];
	size_t count = 0;
	for (;;) {
		ck_assert(count < sizeof v / sizeof *v);
		unsigned char *q = malloc(n);
		ck_assert_ptr_nonnull(q);
		memset(q, tag_of(q), n);
		v[count++] = q;
		if (!in_nursery(q)) break;
		ck_assert((uintptr_t)q + n <= (uintptr_t)wall - pg); /* below the closed top page */
	}
	ck_assert_uint_gt(count, 8); /* the region took over and goes on */
	for (unsigned i = 0; i < 64; i++) {
		unsigned char *q = malloc(n);
		ck_assert_ptr_nonnull(q);
		ck_assert(!in_nursery(q));
		free(q);
	}
	ck_assert_int_eq(wall[0], 9);
	ck_assert_uint_eq(malloc_object_size(wall), 0);
	ck_assert(object_size_is_fatal(wall - pg)); /* the cell's closed top page */
	for (size_t i = 0; i < count; i++) {
		for (size_t j = 0; j < n; j++) ck_assert_uint_eq(v[i][j], tag_of(v[i]));
		free(v[i]);
	}
	for (size_t j = 0; j < n; j++) ck_assert_uint_eq(p[j], tag_of(p));
	free(p);
	ck_assert_int_eq(munmap(wall, pg), 0);
}
END_TEST

static void *alloc_in_new_thread(void *arg)
{
	(void)arg;
	return malloc(100);
}

/* Arenas other than the first are set up by the first thread sent to each: a program
 * with one thread keeps one arena's metadata. A pointer into an arena not set up is no
 * live block: freeing it is fatal, malloc_object_size answers 0 (nothing is mapped
 * there). Threads started one after another are sent to every arena in turn, and
 * blocks they allocate are freed from here. */
START_TEST(arenas_open_on_first_use)
{
	free(malloc(16)); /* started */
	/* Check runs each test in a child of its single-threaded runner. */
	ck_assert_uint_eq(slab_arenas_open(), 1);
	if (roots.slab.arenas < 2) return; /* nothing more to open */
	size_t region = (size_t)1 << roots.slab.region_shift;
	char *stray = (char *)(region_of(SC_COUNT + 3) + region / 2); /* arena 1's */
	ck_assert_uint_eq(malloc_object_size(stray), 0);
	ck_assert(free_is_fatal(stray));

	void *got[64];
	ck_assert_uint_le(roots.slab.arenas, 64);
	for (unsigned t = 0; t < roots.slab.arenas; t++) {
		pthread_t th;
		ck_assert_int_eq(pthread_create(&th, NULL, alloc_in_new_thread, NULL), 0);
		ck_assert_int_eq(pthread_join(th, &got[t]), 0);
		ck_assert_ptr_nonnull(got[t]);
		memset(got[t], 0x5a, 100);
	}
	ck_assert_uint_eq(slab_arenas_open(), roots.slab.arenas);
	for (unsigned t = 0; t < roots.slab.arenas; t++) {
		ck_assert_uint_eq(malloc_usable_size(got[t]), sc_usable(sc_of(100)));
		free(got[t]);
	}
	/* Open now, but nothing was ever handed out that far into the region. */
	ck_assert_uint_eq(malloc_object_size(stray), 0);
	ck_assert(free_is_fatal(stray));
}
END_TEST

/* A class is set up when it needs its first slab: until then a pointer into its region
 * is no live block (free fatal, malloc_object_size 0), and the statistics still give
 * its geometry. Then it serves blocks like any other, and every class does, the zero
 * class (malloc(0)) too. */
START_TEST(classes_set_up_on_first_use)
{
	free(malloc(16)); /* started */
	size_t region = (size_t)1 << roots.slab.region_shift;
	unsigned c = sc_of(100000); /* no class this size is used before (a fresh child) */
	char *stray = (char *)(region_of(c) + region / 2);
	struct slab_class_figures f;
	slab_class_figures(c, &f, NULL);
	ck_assert_uint_eq(f.slot_size, sc_size(c));
	ck_assert_uint_eq(f.usable, sc_usable(c));
	ck_assert_uint_eq(f.slabs_active + f.slabs_empty + f.slabs_closed, 0);
	ck_assert_uint_eq(malloc_object_size(stray), 0);
	ck_assert(free_is_fatal(stray));
	unsigned char *p = malloc(100000);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(malloc_usable_size(p), sc_usable(c));
	memset(p, 0x33, 100000);
	slab_class_figures(c, &f, NULL);
	ck_assert_uint_eq(f.live, 1);
	ck_assert_uint_eq(f.slabs_active, 1);
	ck_assert_uint_eq(malloc_object_size(stray), 0);
	ck_assert(free_is_fatal(stray));
	free(p);
	for (unsigned k = 0; k < SC_COUNT; k++) {
		size_t n = sc_usable(k);
		void *q = malloc(n);
		ck_assert_ptr_nonnull(q);
		ck_assert_uint_eq(malloc_usable_size(q), n);
		/* Its own nursery cell or its own region, in arena 0. */
		if (in_nursery(q)) ck_assert_uint_eq(nursery_class(q), k);
		else ck_assert_uint_eq(((uintptr_t)q - roots.slab.base) / region, place_of(k));
		free(q);
	}
}
END_TEST

/* The first slab positions of a class keep their descriptors in a block the arena's
 * classes share, the later ones in the class's own chunks. With every class holding
 * blocks in a dozen slabs or more at once (from its lowest positions, in a fresh test
 * process, to beyond the shared block), each block keeps its contents, decodes and
 * answers its size, each class counts exactly its own, a double free is caught at
 * either end, and it all repeats once the slabs emptied. Descriptors that overlapped
 * between classes or positions would miscount or mistake a slot's state. */

START_TEST(descriptors_on_both_sides_of_the_shared_block)
{
	enum { SLABS = 12, PER_CLASS = SLABS * SLAB_MAX_SLOTS };
	/* One large block holds every list, so that no class counted here holds one. */
	char **pool = malloc((size_t)SC_COUNT * PER_CLASS * sizeof *pool);
	ck_assert_ptr_nonnull(pool);
	size_t n[SC_COUNT], before[SC_COUNT];
	for (int round = 0; round < 2; round++) {
		for (unsigned c = 1; c < SC_COUNT; c++) {
			struct slab_class_figures f;
			slab_class_figures(c, &f, NULL);
			before[c] = f.live;
			n[c] = SLABS * MIN(f.slab_bytes / f.slot_size, (size_t)SLAB_MAX_SLOTS);
			char **v = pool + (size_t)c * PER_CLASS;
			for (size_t j = 0; j < n[c]; j++) {
				v[j] = malloc(sc_usable(c));
				ck_assert_ptr_nonnull(v[j]);
				memset(v[j], tag_of(v[j]), sc_usable(c));
			}
		}
		for (unsigned c = 1; c < SC_COUNT; c++) {
			struct slab_class_figures f;
			slab_class_figures(c, &f, NULL);
			ck_assert_uint_eq(f.live, before[c] + n[c]);
			ck_assert_uint_ge(f.slabs_active, SLABS);
			char **v = pool + (size_t)c * PER_CLASS;
			qsort(v, n[c], sizeof *v, cmp_ptr);
			for (size_t j = 0; j < n[c]; j++) {
				ck_assert_uint_eq(malloc_usable_size(v[j]), f.usable);
				ck_assert_uint_eq(malloc_object_size(v[j] + 8), f.usable - 8);
				ck_assert_uint_eq((unsigned char)v[j][0], tag_of(v[j]));
				ck_assert_uint_eq((unsigned char)v[j][f.usable - 1], tag_of(v[j]));
			}
			/* The highest block lies SLABS - 1 slabs or more above the lowest: past
			 * the 8 positions of the shared block. */
			ck_assert_uint_ge((uintptr_t)(v[n[c] - 1] - v[0]), (SLABS - 1) * f.slab_bytes);
		}
		for (unsigned c = 1; c < SC_COUNT; c++) {
			char **v = pool + (size_t)c * PER_CLASS;
			for (size_t j = 0; j < n[c]; j++) free(v[j]);
			if (c % 8 == 1 || c == SC_COUNT - 1) {
				ck_assert(free_is_fatal(v[0]));
				ck_assert(free_is_fatal(v[n[c] - 1]));
			}
			struct slab_class_figures f;
			slab_class_figures(c, &f, NULL);
			ck_assert_uint_eq(f.live, before[c]);
		}
	}
	free(pool);
}
END_TEST

/* Empty slabs follow the class's recent peak: a structure freed and built again reuses
 * the slabs it had without closing or reopening any, and a class left alone while
 * another one works closes them down to its floor. Slabs of 1 KiB slots, several
 * budget floors' worth. */
static void churn_class(void **v, size_t n, size_t size)
{
	for (size_t i = 0; i < n; i++) {
		v[i] = malloc(size);
		ck_assert_ptr_nonnull(v[i]);
		memset(v[i], 0x33, size);
	}
	for (size_t i = 0; i < n; i++) free(v[i]);
}

START_TEST(empty_slabs_follow_peak)
{
	enum { SIZE = 1000 };
	unsigned c = sc_of(SIZE);
	struct slab_class_figures f;
	free(malloc(SIZE));
	slab_class_figures(c, &f, NULL);
	size_t slots = MIN(f.slab_bytes / f.slot_size, (size_t)SLAB_MAX_SLOTS);
	size_t floor = MAX(1, CONFIG_SLAB_EMPTY_CACHE_BYTES / f.slab_bytes);
	size_t slabs = 4 * floor + 64, n = slabs * slots;
	void **v = malloc(n * sizeof *v);
	ck_assert_ptr_nonnull(v);
	churn_class(v, n, SIZE);
	slab_class_figures(c, &f, NULL);
	size_t open = f.slabs_active + f.slabs_empty;
	ck_assert_uint_ge(open, slabs);
	ck_assert_uint_eq(f.slabs_closed, 0);       /* nothing closed by freeing everything */
	ck_assert_uint_gt(f.slabs_empty, 3 * floor); /* beyond the floor: back to the peak */
	for (int round = 0; round < 3; round++) churn_class(v, n, SIZE);
	slab_class_figures(c, &f, NULL);
	ck_assert_uint_eq(f.slabs_closed, 0);
	/* The same slabs again, and as many more as the slots the quarantine holds back fill
	 * (they are not there for the next build). */
	size_t held = 0;
	if (roots.opt.slot_quarantine_bytes) {
	const struct area_span *span;
	const struct slab_class *k = class_at((uintptr_t)v[0], &span);
	ck_assert_ptr_nonnull(k);
	held = ((size_t)k->qmask + 1) * (1 + (1u << SLOT_Q_FIFO_SHIFT)) + 1;
	}
	ck_assert_uint_le(f.slabs_active + f.slabs_empty, open + 1 + (held + slots - 1) / slots);
	/* Left alone while a class of 100-byte slots works (its slabs open and empty): the
	 * idle class gives its slabs back within a few decay periods. */
	unsigned other = sc_of(100);
	ck_assert_uint_ne(other, c);
	struct slab_class_figures o;
	slab_class_figures(other, &o, NULL);
	size_t other_n = 4 * (o.slab_bytes / o.slot_size) + 4096;
	void **w = malloc(other_n * sizeof *w);
	ck_assert_ptr_nonnull(w);
	for (int period = 0; period < 4; period++) {
		usleep((CONFIG_SLAB_EMPTY_DECAY_MS + 100) * 1000);
		churn_class(w, other_n, 100);
	}
	slab_class_figures(c, &f, NULL);
	ck_assert_uint_le(f.slabs_empty, floor);
	ck_assert_uint_gt(f.slabs_closed, 0);
	free(w);
	free(v);
}
END_TEST

/* After fork, parent and child draw from different streams: the same allocations made
 * in both pick different slots and different large-block guards, whether the fork
 * took every lock (another thread running) or none (one thread: no page written). The
 * child can allocate in every class either way. */
enum { FORK_DRAWS = 48 };

static void fork_draws(uintptr_t *out)
{
	void *p[FORK_DRAWS];
	for (int i = 0; i < FORK_DRAWS; i++) {
		p[i] = malloc(i < FORK_DRAWS - 8 ? 200 : (size_t)(300 << 10));
		ck_assert_ptr_nonnull(p[i]);
		out[i] = (uintptr_t)p[i];
	}
	for (int i = 0; i < FORK_DRAWS; i++) free(p[i]);
}

static pthread_mutex_t idle_mu = PTHREAD_MUTEX_INITIALIZER;
static void *idle_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&idle_mu); /* held by the test until after the fork */
	pthread_mutex_unlock(&idle_mu);
	free(malloc(64));
	return NULL;
}

static void fork_and_compare(bool threads)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
	ck_assert(os_single_threaded() == !threads); /* the path under test is the one taken */
#else
	(void)threads;
#endif
	uintptr_t mine[FORK_DRAWS], theirs[FORK_DRAWS];
	int fd[2];
	ck_assert_int_eq(pipe(fd), 0);
	fflush(NULL);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		fork_draws(theirs);
		int ok = write(fd[1], theirs, sizeof theirs) == (ssize_t)sizeof theirs;
		for (unsigned c = 1; c < SC_COUNT; c++) free(malloc(sc_usable(c)));
		_exit(ok ? 0 : 1);
	}
	fork_draws(mine);
	ck_assert_int_eq(read(fd[0], theirs, sizeof theirs), (ssize_t)sizeof theirs);
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(fd[0]);
	close(fd[1]);
	int small_same = 0, large_same = 0;
	for (int i = 0; i < FORK_DRAWS - 8; i++) small_same += mine[i] == theirs[i];
	for (int i = FORK_DRAWS - 8; i < FORK_DRAWS; i++) large_same += mine[i] == theirs[i];
	if (roots.opt.slot_random) /* in order without random slots */
		ck_assert_int_lt(small_same, FORK_DRAWS - 8);
	ck_assert_int_lt(large_same, 8);
}

START_TEST(fork_child_draws_its_own_stream)
{
	uintptr_t warm[FORK_DRAWS];
	fork_draws(warm); /* both generators in use before the fork */
	fork_and_compare(false); /* one thread: the handlers take no lock */
	pthread_t th;
	pthread_mutex_lock(&idle_mu);
	ck_assert_int_eq(pthread_create(&th, NULL, idle_thread, NULL), 0);
	fork_and_compare(true); /* two threads: every lock taken and given back */
	pthread_mutex_unlock(&idle_mu);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	fork_and_compare(true); /* glibc: once a thread existed, always locked */
}
END_TEST

/* The free batches' pool state (the registry, the pool, the chunk being carved) holds
 * pointers into metadata: it lives in metadata, reached from the sealed roots, so no
 * writable global of rampart's can redirect it. After a thread batched frees into
 * another arena the lists point into metadata too. */
#if SLAB_FREE_BATCHES
static void *free_from_other_arena(void *p)
{
	free(p);
	return NULL;
}
#endif

START_TEST(batch_pool_state_in_metadata)
{
#if SLAB_FREE_BATCHES
	if (!roots.opt.slot_quarantine_bytes) return; /* profile light: frees are not batched */
	void *p = malloc(64);
	ck_assert_ptr_nonnull(p);
	pthread_t th;
	for (unsigned i = 0; i < CONFIG_SLAB_ARENAS; i++) { /* until a thread of another arena frees */
		void *q = malloc(64);
		ck_assert_int_eq(pthread_create(&th, NULL, free_from_other_arena, q), 0);
		ck_assert_int_eq(pthread_join(th, NULL), 0);
	}
	struct batch_pool *bp = slab_batch_pool();
	ck_assert(meta_contains(bp));
	ck_assert(meta_contains((char *)bp + 63));
	/* The only way there: a pointer in the roots, which are read-only after start-up
	 * where the page size lets them sit alone on a page. */
	if (os_page == ROOTS_PAGE_BYTES) ck_assert_int_eq(probe_write(&roots.slab.seeds), EFAULT);
	/* Its lists, as raw words: every block on them is in metadata. */
	void *const *words = (void *const *)((char *)bp + sizeof(struct lock));
	int linked = 0;
	for (int w = 0; w < 3; w++) {
		ck_assert(!words[w] || meta_contains(words[w]));
		linked += words[w] != NULL;
	}
	ck_assert_int_gt(linked, 0);
	free(p);
#endif
}
END_TEST

/* slack_zero reads whole words and masks the ends: for every [from, to) in a slot of
 * 96 bytes and every single byte written, inside or outside it, it answers what a byte
 * by byte look answers. */
START_TEST(slack_zero_matches_bytes)
{
#if CONFIG_ZERO_ON_FREE
	enum { N = 96 };
	static unsigned char slot[N] __attribute__((aligned(16)));
	for (size_t from = 0; from <= N; from++)
		for (size_t to = from; to <= N; to++)
			for (int dirty = -1; dirty < N; dirty++) {
				memset(slot, 0, N);
				if (dirty >= 0) slot[dirty] = 0x80;
				bool want = !(dirty >= 0 && (size_t)dirty >= from && (size_t)dirty < to);
				ck_assert_msg(slack_zero((uintptr_t)slot, from, to) == want,
					      "slack_zero(%zu, %zu) with byte %d written", from, to, dirty);
			}
#endif
}
END_TEST

int main(int argc, char **argv)
{
	(void)argc;
	all_arenas(argv); /* arenas_open_on_first_use */
	Suite *s = suite_create("slab");
	TCase *t = tcase_create("core");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, decode_every_class);
	tcase_add_test(t, decode_slot_round_trip);
	tcase_add_test(t, invariant_checked_only_when_built_in);
	tcase_add_test(t, bitmaps_hand_out_distinct_slots);
	tcase_add_test(t, quarantine_holds_freed_slot);
	tcase_add_test(t, released_slot_goes_to_next_allocation);
	tcase_add_test(t, quarantine_entries_hold_any_position);
	tcase_add_test(t, descriptors_on_both_sides_of_the_shared_block);
	tcase_add_test(t, canary_layout);
	tcase_add_test(t, freed_slots_keep_canary);
	tcase_add_test(t, zero_size_class);
	tcase_add_test(t, alignment_and_resizing);
	tcase_add_test(t, calloc_is_zero);
	tcase_add_test(t, fresh_slot_untouched);
	tcase_add_test(t, extent_wipe_and_calloc);
	tcase_add_test(t, extent_grows);
	tcase_add_test(t, foreign_mapping_in_window);
	tcase_add_test(t, batch_pool_state_in_metadata);
	tcase_add_test(t, arenas_open_on_first_use);
	tcase_add_test(t, classes_set_up_on_first_use);
	tcase_add_test(t, nursery_holds_first_slabs);
	tcase_add_test(t, nursery_cell_taken);
	tcase_add_test(t, nursery_cell_grows_with_use);
	tcase_add_test(t, nursery_cell_ends_at_a_mapping);
	tcase_add_test(t, empty_slabs_follow_peak);
	tcase_add_test(t, fork_child_draws_its_own_stream);
	tcase_add_test(t, slack_zero_matches_bytes);
	suite_add_tcase(s, t);
	return run_suite(s);
}
