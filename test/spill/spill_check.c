/*
 * spill_check — a size class keeps allocating past its own region (issue 34, item 4).
 *
 * Built (test/test.mk) against a library whose class regions are 16 MiB and which sets
 * aside 8 spill regions, so that a class fills its region, and then the spill regions,
 * in a few tens of MiB. White-box: it reads the window's layout (roots.slab) to tell which
 * blocks lie in spill regions and decodes them as a free does (class_at).
 *
 *  - 16-byte blocks, several regions' worth: every allocation succeeds, the blocks past
 *    the class's own region are in spill regions that decode to the class and to no
 *    other, contents survive, all are freed (half of them by another thread, whose
 *    frees go through its batches) and allocated again as zeros (calloc, at the call site
 *    of the first round: test/site.h);
 *  - in those spill regions a double free (also of a block another thread freed), a
 *    free of a pointer inside a block, a free into a spill region no class took, and a
 *    use of a freed spill slot's size all die as they would in a class's own region;
 *  - 128 KiB blocks until NULL: the class takes every spill region, then fails with
 *    ENOMEM while other classes still work; every block freed, the class serves about
 *    as many again, zeroed.
 *
 * Each part runs in a child of its own: spill regions are taken for good, and each part
 * starts from a process that took none.
 */
#include "../harness.h"
#include "../site.h"

#include <malloc.h>
#include <pthread.h>

#include "rampart.h"
#include "slab/slab_class.h"

/* What a 16-byte slot gives: the canary takes its last 8 bytes. */
#define USABLE16 (CONFIG_SLOT_CANARY ? 8u : 16u)

#define SPILL_FIRST ((size_t)CONFIG_SLAB_ARENAS * SC_COUNT + (CONFIG_SLAB_NURSERY_PAGES ? 1 : 0))

/* The spill region p lies in, or -1 (a class's own region, the nursery, elsewhere). */
static long spill_index(const void *p)
{
	size_t w = ((uintptr_t)p - roots.slab.base) >> roots.slab.region_shift;
	return (uintptr_t)p - roots.slab.base < roots.slab.size && w >= SPILL_FIRST ? (long)(w - SPILL_FIRST) : -1;
}

/* The class a free of p would lock, checked to be class c of some arena. */
static const struct slab_class *owner(const void *p, unsigned c)
{
	const struct area_span *span;
	const struct slab_class *k = class_at((uintptr_t)p, &span);
	CHECK(k != NULL);
	CHECK(k->cls == c);
	CHECK((size_t)(k - roots.slab.classes) % SC_COUNT == c);
	return k;
}

/* --- 16-byte blocks past several regions ---------------------------------------- */

static void **small;
static size_t nsmall;
static void *victim;      /* a live 16-byte block in a spill region */
static void *freed_there; /* a spill block another thread freed */
static void *untaken;     /* an address in a spill region nobody took */

static void *free_odd_spill(void *arg)
{
	(void)arg;
	for (size_t i = 1; i < nsmall; i += 2)
		if (spill_index(small[i]) >= 0) {
			freed_there = small[i];
			free(small[i]);
			small[i] = NULL;
		}
	return NULL;
}

static void double_free(void) { free(victim), free(victim); }
static void double_free_other_thread(void) { free(freed_there); }
static void inner_free(void) { free((char *)victim + 8); }
static void untaken_free(void) { free(untaken); }
static void freed_usable_size(void)
{
	free(victim);
	(void)malloc_usable_size(victim);
}

static int small_blocks(void)
{
	size_t region = (size_t)1 << roots.slab.region_shift;
	/* 16-byte slots, 256 a page: 2.5 regions of slabs without a single guard slab. */
	nsmall = region / 16 * 5 / 2;
	small = malloc(nsmall * sizeof *small);
	CHECK(small != NULL);
	unsigned c = sc_of(8);
	size_t spilled = 0;
	long last_region = -1;
	unsigned regions = 0;
	for (size_t i = 0; i < nsmall; i++) {
		uint64_t *p = site_calloc(1, 8); /* the second round's site (below) */
		CHECK(p != NULL);
		*p = i ^ 0x5a5a5a5a5a5aull;
		small[i] = p;
		long s = spill_index(p);
		if (s >= 0) {
			spilled++;
			if (s != last_region) regions++;
			last_region = s;
		}
	}
	printf("%zu blocks of 16 bytes, %zu of them in %u spill region(s)\n", nsmall, spilled, regions);
	CHECK(spilled > nsmall / 4);
	CHECK(regions >= 1);
	const struct slab_class *home = owner(small[0], c);
	for (size_t i = 0; i < nsmall; i++) {
		CHECK(*(uint64_t *)small[i] == (i ^ 0x5a5a5a5a5a5aull));
		CHECK(owner(small[i], c) == home);
		CHECK(malloc_usable_size(small[i]) == USABLE16);
		if (i % 2 == 0 && spill_index(small[i]) >= 0) victim = small[i]; /* stays live below */
	}
	CHECK(malloc_object_size((char *)victim + 3) == USABLE16 - 3);
	/* Every spill region taken is this class's; the rest are no class's. */
	for (unsigned j = 0; j < roots.slab.nspill; j++) {
		const struct slab_class *k = __atomic_load_n(&roots.slab.spill[j].owner, __ATOMIC_ACQUIRE);
		CHECK(k == NULL || k == home);
		if (!k) untaken = (char *)roots.slab.base + ((SPILL_FIRST + j) << roots.slab.region_shift) + region / 2;
	}
	CHECK(untaken != NULL);
	CHECK(malloc_object_size(untaken) == 0);

	pthread_t t;
	CHECK(pthread_create(&t, NULL, free_odd_spill, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(freed_there != NULL);
	CHECK(victim != NULL);

	struct death_case cases[] = {
		{"double free in a spill region", double_free, DIE_FATAL, NULL},
		{"second free of a block another thread freed there", double_free_other_thread, DIE_FATAL, NULL},
		{"free of a pointer inside a spill block", inner_free, DIE_FATAL, NULL},
		{"free into a spill region no class took", untaken_free, DIE_FATAL, NULL},
		{"size of a freed spill block", freed_usable_size, DIE_FATAL, NULL},
	};
	if (death_run_all(cases, sizeof cases / sizeof *cases)) return 1;

	for (size_t i = 0; i < nsmall; i++) free(small[i]);
	/* The same again, as zeros: reopened slabs, reused slots, and spill regions kept.
	 * At the first round's call site (site_calloc): with call-site partitions the slots
	 * it freed go back only to allocations of its own partition, and the blocks of
	 * another site would take none of them while their slabs stay open. */
	spilled = 0;
	for (size_t i = 0; i < nsmall; i++) {
		uint64_t *p = site_calloc(1, 8);
		CHECK(p != NULL);
		CHECK(*p == 0);
		*p = ~i;
		small[i] = p;
		spilled += spill_index(p) >= 0;
		CHECK(owner(p, c) == home);
	}
	CHECK(spilled > nsmall / 4);
	for (size_t i = 0; i < nsmall; i++) {
		CHECK(*(uint64_t *)small[i] == ~i);
		free(small[i]);
	}
	free(small);
	return 0;
}

/* --- 128 KiB blocks until the spill regions run out ------------------------------- */

#define BIG 131064u

static size_t fill_big(void **v, size_t cap, unsigned char mark)
{
	size_t n = 0;
	for (;;) {
		CHECK(n < cap);
		errno = 0;
		unsigned char *p = calloc(1, BIG);
		if (!p) {
			CHECK(errno == ENOMEM);
			return n;
		}
		CHECK(p[0] == 0 && p[BIG / 2] == 0 && p[BIG - 1] == 0);
		p[0] = mark, p[BIG / 2] = mark, p[BIG - 1] = mark;
		v[n++] = p;
	}
}

static int big_blocks(void)
{
	size_t region = (size_t)1 << roots.slab.region_shift;
	unsigned c = sc_of(BIG);
	/* At most every position of the class's region and of every spill region. */
	size_t cap = (roots.slab.nspill + 1) * (region / (512 << 10)) * 4 + 1;
	void **v = malloc(cap * sizeof *v);
	CHECK(v != NULL);
	size_t n = fill_big(v, cap, 0xa5);
	/* Each region holds at least 29 slab positions of 512 KiB (15/16 of 16 MiB, less a
	 * page), about half of them guard slabs under madvise; 4 blocks a slab. */
	size_t floor_per_region = (15 * region / 16 / (512 << 10) - 1) / 2 * 4;
	printf("%zu blocks of 128 KiB before ENOMEM (at least %zu expected)\n", n,
	       floor_per_region * (roots.slab.nspill + 1));
	CHECK(n >= floor_per_region * (roots.slab.nspill + 1));
	const struct slab_class *home = owner(v[0], c);
	for (unsigned j = 0; j < roots.slab.nspill; j++)
		CHECK(__atomic_load_n(&roots.slab.spill[j].owner, __ATOMIC_ACQUIRE) == home);
	/* Other classes are unaffected, and none of their blocks lies in a spill region. */
	for (unsigned i = 0; i < 1000; i++) {
		char *q = malloc(100);
		CHECK(q != NULL);
		CHECK(spill_index(q) < 0);
		owner(q, sc_of(100));
		free(q);
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char *p = v[i];
		CHECK(p[0] == 0xa5 && p[BIG / 2] == 0xa5 && p[BIG - 1] == 0xa5);
		CHECK(owner(p, c) == home);
		free(p);
	}
	/* All of them again but what waits out of reach: the slabs in the slab quarantine
	 * (4 blocks each) and the slots in this class's slot quarantine (its random array,
	 * its ring of 2^SLOT_Q_FIFO_SHIFT times as many, and the one held for the next
	 * allocation). */
	size_t again = fill_big(v, cap, 0x3c);
	printf("%zu blocks of 128 KiB after freeing them all\n", again);
	CHECK(again <= n);
	size_t slot_q = home->qmask ? ((size_t)home->qmask + 1) * (1 + (1u << SLOT_Q_FIFO_SHIFT)) + 1 : 0;
	CHECK(again + roots.opt.slab_quarantine * 4 + slot_q >= n);
	for (size_t i = 0; i < again; i++) free(v[i]);
	free(v);
	return 0;
}

static int in_child(const char *name, int (*fn)(void))
{
	printf("--- %s\n", name);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		int rc = fn();
		fflush(stdout);
		_exit(rc);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	printf("%s  %s\n", ok ? "ok  " : "FAIL", name);
	return !ok;
}

int main(void)
{
	free(malloc(1)); /* started */
	if (roots.slab.nspill < 2)
		test_skip("this build has no spill regions (CONFIG_SLAB_SPILL_REGIONS=%d)", CONFIG_SLAB_SPILL_REGIONS);
	if (roots.slab.region_shift != CONFIG_SLAB_REGION_SHIFT)
		test_skip("the window did not fit with regions of 2^%d bytes", CONFIG_SLAB_REGION_SHIFT);
	int failed = 0;
	failed += in_child("16-byte blocks past their region", small_blocks);
	failed += in_child("128 KiB blocks until every spill region is taken", big_blocks);
	return failed ? 1 : 0;
}
