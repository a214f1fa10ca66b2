/*
 * test_guard_fault.c — fault injection (cmocka) through fake_kernel.c: what the
 * allocator does when the kernel refuses guard markers, lacks them, fakes them, runs
 * out of memory (also for a slot quarantine's cold part), or accounts strictly.
 *
 * Every case runs in a forked child (it can re-run guard_init() there), and the start-up
 * cases in this program executed again (scenario.h). Inside a child, CHECK() reports and
 * exits non-zero; the cmocka test asserts on the child's exit status.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../harness.h"
#include "../site.h"
#include "fake_kernel.h"
#include "guard/guard.h"
#include "guard/place.h"
#include "front/init.h"
#include "scenario.h"
#include "os/os.h"
#include "rampart.h"
#include "slab/slab_class.h"

#define SENTINEL 2718
#define MiB ((size_t)1 << 20)

/* Run fn in a child; 0 when it returned normally, 77 when it skipped. */
static int in_child(void (*fn)(void)) { return fault_child(NULL, 0, fn, 30); }

/* The case's result: a child that skipped is a skipped case (cmocka's skip), never a
 * passed one. */
static void child_passed(int status)
{
	if (status == TEST_SKIPPED) skip();
	assert_int_equal(status, 0);
}

static void skip_unless_madvise(void)
{
	if (!madvise_possible()) {
		fprintf(stderr, "note: no usable guard markers here, case skipped\n");
		_exit(TEST_SKIPPED);
	}
}

/* Start from the madvise backend with an empty reuse cache. */
static void start_madvise(void)
{
	skip_unless_madvise();
	guard_init(GUARD_AUTO);
	CHECK(guard_backend() == GUARD_MADVISE);
	(void)malloc_trim(0);
	fake_reset();
}

static void check_block(unsigned char *p, size_t n)
{
	CHECK(p != NULL);
	size_t u = malloc_usable_size(p);
	CHECK(u >= n);
	CHECK(accessible(p));
	CHECK(accessible(p + u - 1));
	CHECK(inaccessible(p - 1));
	CHECK(inaccessible(p + u));
}

/* --- the backend choice --- */

static void probe_no_support(void)
{
	fk.guard_install_errno = EINVAL; /* what a kernel without MADV_GUARD_INSTALL says */
	guard_init(GUARD_AUTO);
	CHECK(guard_backend() == GUARD_MPROTECT);
	CHECK(fk.guard_install_calls >= 1);
	guard_init(GUARD_MADVISE); /* asked for, not available: mprotect with a warning */
	CHECK(guard_backend() == GUARD_MPROTECT);
	/* And the allocator works on it. */
	unsigned char *p = malloc(300 * 1024);
	check_block(p, 300 * 1024);
	free(p);
	CHECK(inaccessible(p));
	/* Control: with support back, the probe picks madvise. */
	fake_reset();
	if (madvise_possible()) {
		guard_init(GUARD_AUTO);
		CHECK(guard_backend() == GUARD_MADVISE);
	}
}

static void probe_emulator(void)
{
	fk.guard_install_ignored = true; /* accepts the advice, blocks nothing */
	guard_init(GUARD_AUTO);
	CHECK(fk.guard_install_calls >= 1);
	CHECK(guard_backend() == GUARD_MPROTECT);
	guard_init(GUARD_MADVISE);
	CHECK(guard_backend() == GUARD_MPROTECT);
	unsigned char *p = malloc(2 * MiB);
	check_block(p, 2 * MiB);
	free(p);
	CHECK(inaccessible(p));
}

static void probe_strict_overcommit(void)
{
	fk.overcommit_fake = true;
	fk.overcommit = 2;
	errno = SENTINEL;
	guard_init(GUARD_AUTO);
	CHECK(errno == SENTINEL);
	CHECK(fk.overcommit_reads >= 1);
	CHECK(guard_backend() == GUARD_MPROTECT);
	guard_init(GUARD_MADVISE);
	CHECK(guard_backend() == GUARD_MPROTECT);
	/* Heuristic and always-overcommit keep madvise. */
	if (kernel_has_markers()) {
		for (int v = 0; v <= 1; v++) {
			fk.overcommit = v;
			guard_init(GUARD_AUTO);
			CHECK(guard_backend() == GUARD_MADVISE);
		}
	}
}

static void test_probe_no_support(void **state) { child_passed(in_child(probe_no_support)); }
static void test_probe_emulator(void **state) { child_passed(in_child(probe_emulator)); }
static void test_probe_strict_overcommit(void **state) { child_passed(in_child(probe_strict_overcommit)); }

/* --- EINVAL from a guard install: fallback, errno untouched, the latch --- */

static void einval_on_map(int nth)
{
	start_madvise();
	size_t n = 5 * MiB + 3 * 4096;
	fk.guard_install_fail_nth = nth; /* 1: the lead guard, 2: the trail guard */
	errno = SENTINEL;
	unsigned char *p = malloc(n);
	CHECK(errno == SENTINEL);
	CHECK(fk.guard_install_failed == 1);
	check_block(p, n);
	memset(p, 0x77, n);
	CHECK(guard_backend() == GUARD_MPROTECT); /* latched off */
	CHECK(child_faults(p - 1, true));
	CHECK(child_faults(p + malloc_usable_size(p), false));

	/* Later mappings use the mprotect scheme: no markers, PROT_NONE mappings. */
	fake_reset();
	unsigned char *q = malloc(9 * MiB);
	check_block(q, 9 * MiB);
	CHECK(fk.guard_install_calls == 0);
	CHECK(fk.mmap_none >= 1);
	CHECK(fk.mmap_rw == 0);
	errno = SENTINEL;
	free(p);
	free(q);
	CHECK(errno == SENTINEL);
	CHECK(inaccessible(p));
	CHECK(inaccessible(q));
	CHECK(fk.guard_install_calls == 0);
}
static void einval_lead(void) { einval_on_map(1); }
static void einval_trail(void) { einval_on_map(2); }
static void test_einval_lead_guard(void **state) { child_passed(in_child(einval_lead)); }
static void test_einval_trail_guard(void **state) { child_passed(in_child(einval_trail)); }

/* EINVAL when closing a live block (free, realloc shrink): the span is closed anyway,
 * through the mprotect scheme. A fresh page still takes markers (the kernel refused only
 * that span, as for a locked one), so the backend stays. */
static void einval_on_close(void)
{
	start_madvise();
	unsigned char *p = malloc(3 * MiB), *q = malloc(3 * MiB);
	check_block(p, 3 * MiB);
	memset(q, 1, 3 * MiB);
	fk.guard_install_fail_nth = 1;
	errno = SENTINEL;
	unsigned char *r = realloc(q, MiB); /* shrink: closes the cut tail */
	CHECK(errno == SENTINEL);
	CHECK(r == q);
	CHECK(fk.guard_install_failed == 1);
	CHECK(guard_backend() == GUARD_MADVISE);
	CHECK(inaccessible(q + MiB));
	CHECK(child_faults(q + 2 * MiB, true));
	CHECK(accessible(q + MiB - 1) && q[MiB - 1] == 1);
	errno = SENTINEL;
	free(p); /* p's region still has markers and takes them */
	free(r);
	CHECK(errno == SENTINEL);
	CHECK(inaccessible(p));
	CHECK(inaccessible(p + 3 * MiB - 1));
	CHECK(child_faults(p + MiB, false));
	CHECK(inaccessible(r));
}
static void test_einval_on_close(void **state) { child_passed(in_child(einval_on_close)); }

/* EINVAL from every install (new mappings refuse markers too, as under
 * mlockall(MCL_FUTURE)): the close falls back and the backend latches off. */
static void einval_everywhere_on_close(void)
{
	start_madvise();
	unsigned char *q = malloc(3 * MiB);
	memset(q, 1, 3 * MiB);
	fk.guard_install_errno = EINVAL;
	errno = SENTINEL;
	unsigned char *r = realloc(q, MiB);
	CHECK(errno == SENTINEL);
	CHECK(r == q);
	CHECK(guard_backend() == GUARD_MPROTECT);
	CHECK(inaccessible(q + MiB));
	CHECK(accessible(q + MiB - 1) && q[MiB - 1] == 1);
	free(r);
	CHECK(inaccessible(r));
}
static void test_einval_everywhere_on_close(void **state) { child_passed(in_child(einval_everywhere_on_close)); }

/* Any other refusal (ENOMEM: out of page-table memory) falls back for that span only. */
static void enomem_on_install(void)
{
	start_madvise();
	fk.guard_install_fail_nth = 1;
	fk.guard_install_nth_errno = ENOMEM;
	errno = SENTINEL;
	unsigned char *p = malloc(2 * MiB);
	CHECK(errno == SENTINEL);
	check_block(p, 2 * MiB);
	CHECK(guard_backend() == GUARD_MADVISE); /* no latch */
	fake_reset();
	unsigned char *q = malloc(7 * MiB);
	check_block(q, 7 * MiB);
	CHECK(fk.guard_install_calls >= 2); /* markers again */
	free(p);
	free(q);
	CHECK(inaccessible(p) && inaccessible(q));
}
static void test_enomem_on_install(void **state) { child_passed(in_child(enomem_on_install)); }

/* A region grown behind markers (guard_grow, small regions) when the kernel refuses the
 * markers (EINVAL: a locked mapping): latched off, the growth is given back and mapped
 * PROT_NONE, and opens with mprotect. When the read-write mapping is refused (ENOMEM:
 * the commit limit), the growth is mapped PROT_NONE without markers and the backend
 * stays. Grown behind markers, the growths of a region and the page below are one VMA. */
/* A growing region in a window of its own, under the madvise backend. */
static uintptr_t growing_region(struct guard_region *r)
{
	start_madvise();
	uintptr_t w;
	CHECK(guard_window((size_t)64 << 20, &w));
	guard_start(r, w);
	return w;
}

static void grow_markers_refused(void)
{
	size_t pg = os_page;
	struct guard_region r;
	uintptr_t w = growing_region(&r);
	fk.guard_install_fail_nth = 1;
	errno = SENTINEL;
	CHECK(guard_grow(&r, 16 * pg, "test"));
	CHECK(errno == SENTINEL);
	CHECK(fk.guard_install_failed == 1);
	CHECK(guard_backend() == GUARD_MPROTECT);
	CHECK(r.marked_pages == 0);
	CHECK(inaccessible((char *)w) && inaccessible((char *)w - 1));
	unsigned long protects = fk.mprotect_calls;
	CHECK(guard_extend(&r, 2 * pg, pg));
	CHECK(fk.mprotect_calls == protects + 1);
	CHECK(accessible((char *)w + 2 * pg) && inaccessible((char *)w + 3 * pg));
	CHECK(guard_unmap(&r));
	guard_window_release(w);
}

static void grow_mapping_refused(void)
{
	size_t pg = os_page;
	struct guard_region r;
	uintptr_t w = growing_region(&r);
	fk.mmap_fail_nth = 1;
	errno = SENTINEL;
	CHECK(guard_grow(&r, 16 * pg, "test"));
	CHECK(errno == SENTINEL);
	CHECK(fk.guard_install_calls == 0);
	CHECK(r.marked_pages == 0);
	CHECK(guard_backend() == GUARD_MADVISE); /* no latch: only this growth went without */
	CHECK(inaccessible((char *)w + 4 * pg) && inaccessible((char *)w - 1));
	CHECK(guard_extend(&r, 4 * pg, pg));
	CHECK(accessible((char *)w + 4 * pg) && inaccessible((char *)w + 5 * pg));
	CHECK(guard_unmap(&r));
	guard_window_release(w);
}

/* Grown three times behind markers, with a span opened between growths: one VMA more
 * than before, not one a growth, and every unopened page closed. */
static void grow_marked_thrice(void)
{
	size_t pg = os_page;
	struct guard_region r;
	uintptr_t w = growing_region(&r);
	long vmas = count_vmas();
	CHECK(guard_grow(&r, 8 * pg, "test"));
	CHECK(guard_span_in_marked(&r, 0, 8 * pg));
	CHECK(guard_extend(&r, 2 * pg, pg));
	((char *)w)[2 * pg] = 1;
	CHECK(guard_grow(&r, 16 * pg, "test"));
	CHECK(guard_grow(&r, 32 * pg, "test"));
	CHECK(guard_span_in_marked(&r, 0, 32 * pg));
	CHECK(count_vmas() == vmas + 1);
	CHECK(fk.mprotect_calls == 0);
	CHECK(inaccessible((char *)w - 1) && inaccessible((char *)w + 8 * pg) && inaccessible((char *)w + 31 * pg));
	CHECK(accessible((char *)w + 2 * pg) && inaccessible((char *)w + 3 * pg));
	CHECK(guard_extend(&r, 20 * pg, pg));
	CHECK(accessible((char *)w + 20 * pg) && count_vmas() == vmas + 1);
	CHECK(guard_unmap(&r));
	CHECK(count_vmas() == vmas);
	guard_window_release(w);
}

/* A later growth, which joined the VMA below it, refused its markers: only that piece
 * is given back (what was written below stays) and grown PROT_NONE; the backend latches
 * off and the new space opens with mprotect. */
static void grow_later_markers_refused(void)
{
	size_t pg = os_page;
	struct guard_region r;
	uintptr_t w = growing_region(&r);
	CHECK(guard_grow(&r, 8 * pg, "test"));
	CHECK(guard_extend(&r, 2 * pg, 2 * pg));
	memset((char *)w + 2 * pg, 0x5a, 2 * pg);
	fk.guard_install_fail_nth = 1;
	errno = SENTINEL;
	CHECK(guard_grow(&r, 16 * pg, "test"));
	CHECK(errno == SENTINEL);
	CHECK(fk.guard_install_failed == 1 && guard_backend() == GUARD_MPROTECT);
	CHECK(r.size == 16 * pg && r.marked_pages == 8);
	CHECK(((unsigned char *)w)[2 * pg] == 0x5a && ((unsigned char *)w)[4 * pg - 1] == 0x5a);
	CHECK(inaccessible((char *)w + 4 * pg) && inaccessible((char *)w + 8 * pg) && inaccessible((char *)w + 15 * pg));
	unsigned long protects = fk.mprotect_calls;
	CHECK(guard_extend(&r, 10 * pg, pg));
	CHECK(fk.mprotect_calls == protects + 1);
	CHECK(accessible((char *)w + 10 * pg) && inaccessible((char *)w + 11 * pg));
	CHECK(guard_extend(&r, 5 * pg, pg)); /* below: still behind markers */
	CHECK(accessible((char *)w + 5 * pg));
	CHECK(guard_unmap(&r));
	guard_window_release(w);
}

static void grow_refused(void)
{
	grow_markers_refused();
	grow_mapping_refused();
	grow_marked_thrice();
	grow_later_markers_refused();
}
static void test_grow_refused(void **state) { child_passed(in_child(grow_refused)); }

/* --- mmap failures --- */

static void mmap_enomem(void)
{
	(void)malloc_trim(0);
	/* Warm up so the tables exist. */
	for (int i = 0; i < 4; i++) free(malloc(MiB));
	(void)malloc_trim(0);
	int failures = 0, recovered = 0;
	for (int nth = 1; nth <= 4; nth++) {
		static const size_t sizes[] = {5 * MiB + 4096, 300 * 1024};
		for (int s = 0; s < 2; s++) {
			(void)malloc_trim(0);
			long net = fk.net_bytes, vm = vm_size_pages();
			fk.mmap_fail_nth = nth;
			errno = SENTINEL;
			unsigned char *p = malloc(sizes[s]);
			int nth_left = fk.mmap_fail_nth;
			fk.mmap_fail_nth = 0;
			if (!p) {
				failures++;
				CHECK(errno == ENOMEM);
				/* Nothing mapped was left behind (quarantined regions may have
				 * been given back for a retry). */
				CHECK(fk.net_bytes <= net);
				CHECK(vm_size_pages() <= vm);
			} else {
				CHECK(errno == SENTINEL);
				CHECK(nth_left > 0 || fk.mmap_failed > 0); /* served without the failing call */
				if (nth_left == 0) recovered++; /* a retry after the refusal served it */
				check_block(p, sizes[s]);
				free(p);
			}
		}
	}
	/* At least the first mmap of each request was essential: it failed the request, or
	 * the request was served by a retry after the region quarantine gave space back. */
	CHECK(failures + recovered >= 2);
	/* Everything fails: every entry point reports ENOMEM, and frees still work. */
	unsigned char *keep = malloc(2 * MiB);
	CHECK(keep);
	(void)malloc_trim(0);
	long net = fk.net_bytes;
	fk.mmap_fail_all = true;
	errno = 0;
	CHECK(malloc(3 * MiB) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(calloc(1, 3 * MiB) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(aligned_alloc(2 * MiB, 3 * MiB) == NULL && errno == ENOMEM);
	void *out = &out;
	CHECK(posix_memalign(&out, 4 * MiB, MiB) == ENOMEM && out == &out);
	memset(keep, 0x42, 2 * MiB);
	errno = 0;
	CHECK(realloc(keep, 64 * MiB) == NULL && errno == ENOMEM); /* has to move: needs a mapping */
	CHECK(keep[0] == 0x42 && keep[2 * MiB - 1] == 0x42);
	CHECK(fk.net_bytes <= net);
	errno = SENTINEL;
	free(keep); /* closing must not need a new mapping */
	CHECK(errno == SENTINEL);
	CHECK(inaccessible(keep));
	fk.mmap_fail_all = false;
	unsigned char *again = malloc(3 * MiB);
	check_block(again, 3 * MiB);
	free(again);
}
static void test_mmap_enomem(void **state) { child_passed(in_child(mmap_enomem)); }

/* A MAP_FIXED replacement that fails (a memlock limit: EAGAIN) when closing under the
 * mprotect scheme: mprotect + MADV_DONTNEED close it instead, and nothing aborts. */
static void fixed_map_fails(void)
{
	guard_init(GUARD_MPROTECT);
	(void)malloc_trim(0);
	unsigned char *p = malloc(4 * MiB), *q = malloc(4 * MiB);
	memset(p, 0x11, 4 * MiB);
	memset(q, 0x22, 4 * MiB);
	fk.mmap_fail_fixed = true;
	fk.mmap_errno = EAGAIN;
	errno = SENTINEL;
	unsigned char *r = realloc(q, MiB);
	CHECK(r == q);
	free(p);
	CHECK(errno == SENTINEL);
	CHECK(fk.mmap_failed >= 2);
	CHECK(inaccessible(p));
	CHECK(inaccessible(q + MiB));
	CHECK(child_faults(p + MiB, true));
	fk.mmap_fail_fixed = false;
	/* Reused or not, memory handed out again is zero. */
	for (int i = 0; i < 8; i++) {
		unsigned char *z = calloc(1, 4 * MiB);
		CHECK(z);
		for (size_t k = 0; k < 4 * MiB; k += 4096) CHECK(z[k] == 0);
		free(z);
	}
	free(r);
}
static void test_fixed_map_fails(void **state) { child_passed(in_child(fixed_map_fails)); }

/* --- the slot quarantine without its cold part --- */

/* Frees between a victim's free and its address coming back from malloc(n), both made
 * at one call site (site.h: with call-site partitions, only its own site takes it
 * back). */
static long frees_until_back(size_t n)
{
	void *victim = site_malloc(n);
	CHECK(victim);
	free(victim);
	for (long k = 1; k < 10000000; k++) {
		void *q = site_malloc(n);
		CHECK(q);
		free(q);
		if (q == victim) return k;
	}
	return -1;
}

/* A fresh process whose first class to fill its hot quarantine entries (8-byte blocks:
 * SLOT_Q_HOT_BYTES / 16 of them, at most half the random array) cannot map its arena's
 * cold part: the class goes on in its hot entries, a random array of a quarter of them
 * and a FIFO of half, and no freed slot comes back before that FIFO has passed it, nor
 * as late as the full quarantine's FIFO would hold it (16,384 frees by default; checked
 * where that is 16 times the short one). */
static int no_cold_block(void)
{
	free(malloc(1)); /* the options are read */
	if (!roots.opt.slot_quarantine_bytes) {
		fprintf(stderr, "n/a   no_cold_block: no slot quarantine in this process (slot_quarantine_bytes=0)\n");
		return 0;
	}
	enum { N = 3000 };
	static void *v[N];
	long all = SLOT_Q_MIN_RANDOM;
	while (all < (long)((roots.opt.slot_quarantine_bytes + 15) / 16) && all < SLOT_Q_MAX_RANDOM) all <<= 1;
	if (all <= SLOT_Q_HOT_WHOLE) {
		fprintf(stderr, "no cold part: this build keeps 16-byte slots' quarantine hot\n");
		return 0;
	}
	const long hot = MIN((long)SLOT_Q_HOT_BYTES / 16, all / 2), fifo = hot / 2;
	const long full_fifo = all << SLOT_Q_FIFO_SHIFT;
	CHECK(hot < N);
	for (int i = 0; i < N; i++) CHECK(v[i] = malloc(8));
	fk.mmap_fail_all = true;
	fk.mprotect_errno = ENOMEM;
	fk.guard_remove_errno = ENOMEM;
	for (int i = 0; i < N; i++) free(v[i]);
	unsigned long refused = fk.mmap_failed + fk.mprotect_calls + fk.guard_remove_calls;
	fake_reset();
	CHECK(refused > 0);
	long lo = LONG_MAX, hi = 0;
	for (int t = 0; t < 15; t++) {
		long d = frees_until_back(8);
		fprintf(stderr, "no cold part: back after %ld frees\n", d);
		CHECK(d >= fifo && (full_fifo < 16 * fifo || d < full_fifo));
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
	}
	CHECK(lo < hi);
	return 0;
}

/* --- start-up: the knobs in place before the first malloc of a fresh process --- */

static int run_scenario(const char *name)
{
	if (strcmp(name, "no_cold_block") == 0) return no_cold_block();
	if (strcmp(name, "no_support") == 0) fk.guard_install_errno = EINVAL;
	else if (strcmp(name, "emulator") == 0) fk.guard_install_ignored = true;
	else if (strcmp(name, "strict") == 0) fk.overcommit_fake = true, fk.overcommit = 2;
	else if (strcmp(name, "control") != 0) return 2;
	errno = SENTINEL;
	unsigned char *p = malloc(MiB);
	CHECK(errno == SENTINEL);
	check_block(p, MiB);
	const char *want = "mprotect";
	if (strcmp(name, "control") == 0) {
		const char *opt = getenv("RAMPART_OPTIONS");
		bool forced = opt && strstr(opt, "guard=mprotect");
		want = !forced && madvise_possible() ? "madvise" : "mprotect";
	}
	fprintf(stderr, "scenario %s: backend %s\n", name, rampart_guard_backend());
	CHECK(strcmp(rampart_guard_backend(), want) == 0);
	unsigned char *small = malloc(100);
	CHECK(small);
	memset(small, 1, 100);
	free(small);
	free(p);
	CHECK(inaccessible(p));
	return 0;
}

static void test_startup_no_support(void **state) { assert_int_equal(run_scenario_child("no_support"), 0); }
static void test_startup_emulator(void **state) { assert_int_equal(run_scenario_child("emulator"), 0); }
static void test_startup_strict(void **state) { assert_int_equal(run_scenario_child("strict"), 0); }
/* --- the large area: a place refused --- */

/* Is p more than 1 TiB from where the kernel places a mapping now (near the libraries)?
 * Fresh large regions go to rampart's large area, far from there (guard.h). */
static bool far_from_kernel(const void *p)
{
	void *m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	uintptr_t a = (uintptr_t)p, b = (uintptr_t)m;
	CHECK(munmap(m, 4096) == 0);
	return (a > b ? a - b : b - a) > ((uintptr_t)1 << 40);
}

static unsigned char *fresh_block(size_t n)
{
	(void)malloc_trim(0); /* no cached region: a fresh mapping */
	errno = SENTINEL;
	unsigned char *p = malloc(n);
	CHECK(errno == SENTINEL);
	check_block(p, n);
	return p;
}

/* The kernel refuses the mapping at the place the area chose (something is there:
 * EEXIST; out of memory: ENOMEM): the kernel's choice serves the block, and the next
 * one goes to the area again. Every place refused: every kind of large request is
 * still served, as before the area. */
static void area_refused(void)
{
	for (int i = 0; i < 4; i++) free(fresh_block(5 * MiB));
	unsigned char *a = fresh_block(5 * MiB);
	CHECK(far_from_kernel(a));
	for (int e = 0; e < 2; e++) {
		fake_reset();
		fk.noreplace_min = 4 * MiB;
		fk.noreplace_fail = 1;
		fk.noreplace_errno = e ? ENOMEM : EEXIST;
		unsigned char *p = fresh_block(5 * MiB);
		CHECK(fk.noreplace_failed == 1);
		CHECK(!far_from_kernel(p));
		/* Placed by the kernel against whatever is there: its guards are the
		 * largest guard longer, so nothing foreign is within that distance. */
		size_t clear = (1 + roots.opt.large_guard_max_pages) * (size_t)sysconf(_SC_PAGESIZE);
		CHECK(inaccessible(p - clear) && inaccessible(p + malloc_usable_size(p) + clear - 1));
		unsigned char *q = fresh_block(5 * MiB);
		CHECK(far_from_kernel(q));
		memset(p, 0x11, 5 * MiB);
		memset(q, 0x22, 5 * MiB);
		free(p);
		free(q);
	}
	fake_reset();
	fk.noreplace_min = 4 * MiB;
	fk.noreplace_fail = 1 << 30;
	unsigned char *b = fresh_block(6 * MiB);
	CHECK(!far_from_kernel(b));
	unsigned char *c = aligned_alloc(4 * MiB, 8 * MiB);
	check_block(c, 8 * MiB);
	CHECK(((uintptr_t)c & (4 * MiB - 1)) == 0);
	unsigned char *d = calloc(1, 5 * MiB);
	check_block(d, 5 * MiB);
	CHECK(d[0] == 0 && d[5 * MiB - 1] == 0);
	memset(b, 0x33, 6 * MiB);
	errno = SENTINEL;
	b = realloc(b, 64 * MiB); /* moves */
	CHECK(errno == SENTINEL);
	check_block(b, 64 * MiB);
	CHECK(b[0] == 0x33 && b[6 * MiB - 1] == 0x33);
	CHECK(fk.noreplace_failed >= 4);
	free(b);
	free(c);
	free(d);
	free(a);
}
static void test_area_refused(void **state) { child_passed(in_child(area_refused)); }

static void test_startup_control(void **state) { assert_int_equal(run_scenario_child("control"), 0); }
static void test_no_cold_block(void **state) { assert_int_equal(run_scenario_child("no_cold_block"), 0); }

int main(void)
{
	scenario_or_tests(run_scenario, 30, 300);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_startup_control),
		cmocka_unit_test(test_startup_no_support),
		cmocka_unit_test(test_startup_emulator),
		cmocka_unit_test(test_startup_strict),
		cmocka_unit_test(test_probe_no_support),
		cmocka_unit_test(test_probe_emulator),
		cmocka_unit_test(test_probe_strict_overcommit),
		cmocka_unit_test(test_einval_lead_guard),
		cmocka_unit_test(test_einval_trail_guard),
		cmocka_unit_test(test_einval_on_close),
		cmocka_unit_test(test_einval_everywhere_on_close),
		cmocka_unit_test(test_enomem_on_install),
		cmocka_unit_test(test_grow_refused),
		cmocka_unit_test(test_mmap_enomem),
		cmocka_unit_test(test_fixed_map_fails),
		cmocka_unit_test(test_area_refused),
		cmocka_unit_test(test_no_cold_block),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
