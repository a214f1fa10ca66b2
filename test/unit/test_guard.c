/* test_guard.c — the guard-region layer with each backend forced (Check, white-box). */
#define _GNU_SOURCE
#include <check.h>
#include <sys/mman.h>

#include "../check_main.h"
#include "../guard_span.h"
#include "../harness.h"
#include "guard/guard.h"
#include "guard/place.h"
#include "os/os.h"
#include "base/counters.h"
#include "front/init.h"
#include "guard/meta.h"

/* Calls visit(lo, hi, ctx) for every line of /proc/self/maps, read without malloc (Check's
 * own bookkeeping allocates, and would move what is being counted); false on error. */
static bool each_mapping(void (*visit)(uintptr_t lo, uintptr_t hi, void *ctx), void *ctx)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0) return false;
	char buf[4096], line[256];
	size_t len = 0;
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n') {
				if (len < sizeof line - 1) line[len++] = buf[i];
				continue;
			}
			line[len] = 0;
			len = 0;
			char *dash;
			uintptr_t lo = strtoul(line, &dash, 16), hi = strtoul(dash + 1, NULL, 16);
			visit(lo, hi, ctx);
		}
	}
	close(fd);
	return true;
}

static void count_outside_windows(uintptr_t lo, uintptr_t hi, void *ctx)
{
	bool slab = roots.slab.size && lo - roots.slab.base < roots.slab.size;
	if (!slab && !meta_contains((void *)lo)) *(long *)ctx += (long)((hi - lo) / (uintptr_t)sysconf(_SC_PAGESIZE));
}

/* Pages the process maps outside rampart's slab and metadata windows: those grow
 * whenever Check's own bookkeeping (a malloc per assertion) needs another slab, which
 * says nothing about the region under test. */
static long vm_outside_windows(void)
{
	long pages = 0;
	return each_mapping(count_outside_windows, &pages) ? pages : -1;
}

#define SENTINEL 4242

/* Force backend i (0 madvise, 1 mprotect); returns the backend actually in use. */
static enum guard_backend force(int i)
{
	os_init();
	enum guard_backend want = i == 0 ? GUARD_MADVISE : GUARD_MPROTECT;
	guard_init(want);
	enum guard_backend got = guard_backend();
	if (want == GUARD_MADVISE && got != GUARD_MADVISE) {
		ck_assert_msg(!kernel_has_markers() || os_read_long("/proc/sys/vm/overcommit_memory") == 2,
			      "guard=madvise refused although the kernel supports guard markers");
		fprintf(stderr, "note: no guard-marker support here, madvise cases run as mprotect\n");
	}
	return got;
}

static uint32_t expected_flags(enum guard_backend b)
{
	return b == GUARD_MADVISE ? (REGION_MARKERS | REGION_MARKED) : REGION_PROTECTED;
}

static bool all_zero(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i]) return false;
	return true;
}

START_TEST(test_probe_auto)
{
	os_init();
	guard_init(GUARD_AUTO);
	bool strict = os_read_long("/proc/sys/vm/overcommit_memory") == 2;
	enum guard_backend want = kernel_has_markers() && !strict ? GUARD_MADVISE : GUARD_MPROTECT;
	ck_assert_int_eq(guard_backend(), want);
	ck_assert_str_eq(guard_backend_name(), want == GUARD_MADVISE ? "madvise" : "mprotect");
	guard_init(GUARD_MPROTECT);
	ck_assert_int_eq(guard_backend(), GUARD_MPROTECT);
	ck_assert_str_eq(guard_backend_name(), "mprotect");
}
END_TEST

START_TEST(test_map_basic)
{
	enum guard_backend b = force(_i);
	size_t pg = os_page, lead = pg, trail = pg, len = 4 * pg;
	struct guard_region r;
	errno = SENTINEL;
	ck_assert(guard_map(&r, &lead, len, &trail, 0, "test:guard"));
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert_uint_eq(lead, pg);
	ck_assert_uint_eq(trail, pg);
	ck_assert_uint_eq(r.size, lead + len + trail);
	ck_assert_uint_eq(r.flags, expected_flags(b));
	char *p = (char *)(r.base + lead);
	ck_assert(all_zero(p, len));
	ck_assert(accessible(p));
	ck_assert(accessible(p + len - 1));
	ck_assert(inaccessible(p - 1));
	ck_assert(inaccessible((char *)r.base));
	ck_assert(inaccessible(p + len));
	ck_assert(inaccessible((char *)r.base + r.size - 1));
	/* The hard way too: a child touching a guard dies. */
	ck_assert(child_faults(p - 1, true));
	ck_assert(child_faults(p + len, false));
	ck_assert_int_eq(child_access(p, true), 0);
	errno = SENTINEL;
	ck_assert(guard_unmap(&r));
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert(inaccessible(p));
}
END_TEST

/* Alignment: the open span lands on the boundary, the guards are at least what was
 * asked, and nothing but the region itself stays mapped (no over-mapping leftovers). */
START_TEST(test_map_aligned)
{
	enum guard_backend b = force(_i);
	size_t pg = os_page;
	static const size_t aligns[] = {0, 2 * 4096, 64 << 10, 2 << 20, 4 << 20, 8 << 20, 64 << 20};
	const size_t lens[] = {pg, 3 * pg, (1 << 20) + pg, 5 << 20};
	for (size_t a = 0; a < sizeof aligns / sizeof *aligns; a++) {
		for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
			size_t lead = 2 * pg, trail = 3 * pg, len = lens[l], align = aligns[a];
			struct guard_region r;
			long before = vm_outside_windows();
			errno = SENTINEL;
			ck_assert(guard_map(&r, &lead, len, &trail, align, NULL));
			ck_assert_int_eq(errno, SENTINEL);
			long after = vm_outside_windows();
			char *p = (char *)(r.base + lead);
			if (align) ck_assert_msg((uintptr_t)p % align == 0, "align %zu len %zu: %p", align, len, (void *)p);
			ck_assert_uint_ge(lead, 2 * pg);
			ck_assert_uint_ge(trail, 3 * pg);
			ck_assert_uint_eq(r.size, lead + len + trail);
			ck_assert_uint_eq(r.flags, expected_flags(b));
			ck_assert_msg(after - before == (long)(r.size / pg),
				      "align %zu len %zu: the process grew by %ld pages for a %zu-page region",
				      align, len, after - before, r.size / pg);
			ck_assert(accessible(p));
			ck_assert(accessible(p + len - 1));
			ck_assert(inaccessible(p - 1));
			ck_assert(inaccessible(p + len));
			ck_assert(inaccessible((char *)r.base));
			ck_assert(inaccessible((char *)r.base + r.size - 1));
			ck_assert(guard_unmap(&r));
			ck_assert_int_eq(vm_outside_windows(), before);
		}
	}
}
END_TEST

START_TEST(test_close_open)
{
	enum guard_backend b = force(_i);
	size_t pg = os_page, lead, len = 8 * pg;
	struct guard_region r;
	char *p = open_span(&r, &lead, len, 1, false);
	errno = SENTINEL;
	ck_assert(guard_close(&r, lead + 2 * pg, 3 * pg));
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert(guard_close(&r, lead, 0)); /* empty span: nothing happens */
	ck_assert_uint_eq(r.flags, expected_flags(b));
	for (size_t i = 2; i < 5; i++) {
		ck_assert(inaccessible(p + i * pg));
		ck_assert(inaccessible(p + i * pg + pg - 1));
	}
	ck_assert(child_faults(p + 3 * pg, true));
	ck_assert(child_faults(p + 2 * pg, false));
	/* The neighbours keep their contents. */
	for (size_t i = 0; i < 2 * pg; i++) ck_assert_int_eq(p[i], (char)(1 + i * 7));
	for (size_t i = 5 * pg; i < len; i++) ck_assert_int_eq(p[i], (char)(1 + i * 7));

	errno = SENTINEL;
	ck_assert(guard_open(&r, lead + 2 * pg, 3 * pg));
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert(accessible(p + 2 * pg));
	ck_assert(accessible(p + 5 * pg - 1));
	ck_assert_msg(all_zero(p + 2 * pg, 3 * pg), "a reopened span must read as zero");
	fill(p + 2 * pg, 3 * pg, 9);
	/* Close and reopen the whole open span, twice. */
	for (int k = 0; k < 2; k++) {
		ck_assert(guard_close(&r, lead, len));
		ck_assert(inaccessible(p));
		ck_assert(inaccessible(p + len - 1));
		ck_assert(guard_open(&r, lead, len));
		ck_assert(all_zero(p, len));
		fill(p, len, 3);
	}
	/* Opening part of the trail guard (realloc growing in place) works the same. */
	ck_assert(guard_open(&r, lead + len, pg));
	ck_assert(accessible(p + len));
	ck_assert(all_zero(p + len, pg));
	ck_assert(guard_unmap(&r));
}
END_TEST

/* madvise: closed spans cost no VMA; mprotect: each closed span splits the mapping. */
START_TEST(test_close_vmas)
{
	enum guard_backend b = force(_i);
	size_t pg = os_page, lead, len = 32 * pg;
	struct guard_region r;
	(void)open_span(&r, &lead, len, 0, false);
	long before = count_vmas();
	for (int k = 0; k < 3; k++) ck_assert(guard_close(&r, lead + (size_t)(4 + 8 * k) * pg, 2 * pg));
	long after = count_vmas();
	if (b == GUARD_MADVISE) ck_assert_int_eq(after, before);
	else ck_assert_int_eq(after, before + 6);
	for (int k = 0; k < 3; k++) ck_assert(guard_open(&r, lead + (size_t)(4 + 8 * k) * pg, 2 * pg));
	if (b == GUARD_MADVISE) ck_assert_int_eq(count_vmas(), before);
	ck_assert(guard_unmap(&r));
}
END_TEST

START_TEST(test_reserve_extend)
{
	enum guard_backend b = force(_i);
	size_t pg = os_page;
	struct guard_region r;
	errno = SENTINEL;
	ck_assert(guard_reserve(&r, 64 * pg, "test:reserve"));
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert_uint_eq(r.size, 64 * pg);
	ck_assert_uint_eq(r.flags, expected_flags(b));
	char *base = (char *)r.base;
	for (size_t i = 0; i < 64; i += 9) ck_assert(inaccessible(base + i * pg));
	ck_assert(guard_extend(&r, 10 * pg, 3 * pg));
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert(all_zero(base + 10 * pg, 3 * pg));
	ck_assert(accessible(base + 10 * pg));
	ck_assert(accessible(base + 13 * pg - 1));
	ck_assert(inaccessible(base + 10 * pg - 1));
	ck_assert(inaccessible(base + 13 * pg));
	fill(base + 10 * pg, 3 * pg, 5);
	ck_assert(guard_close(&r, 11 * pg, pg));
	ck_assert(inaccessible(base + 11 * pg));
	ck_assert(child_faults(base + 11 * pg, true));
	ck_assert_int_eq(base[10 * pg], 5);
	ck_assert(guard_open(&r, 11 * pg, pg));
	ck_assert(all_zero(base + 11 * pg, pg));
	ck_assert_int_eq(base[12 * pg], (char)(5 + 2 * pg * 7));
	ck_assert(guard_unmap(&r));
}
END_TEST

/* The pages of a's span move into b's open span, grown to all of it by the kernel: the
 * moved span and its growth are one VMA, the growth reads zero. */
START_TEST(test_move)
{
	force(_i);
	size_t pg = os_page, la = pg, ta = pg, lb = 2 * pg, tb = pg, len = 16 * pg;
	struct guard_region a, b;
	ck_assert(guard_map(&a, &la, len, &ta, 0, NULL));
	ck_assert(guard_map(&b, &lb, 2 * len, &tb, 0, NULL));
	char *pa = (char *)(a.base + la), *pb = (char *)(b.base + lb);
	fill(pa, len, 11);
	errno = SENTINEL;
	bool kept;
	ck_assert(guard_move(&a, la, len, &b, lb, 2 * len, &kept));
	ck_assert_int_eq(errno, SENTINEL);
	for (size_t i = 0; i < len; i++) ck_assert_int_eq(pb[i], (char)(11 + i * 7));
	ck_assert(all_zero(pb + len, len)); /* what the block grew by reads zero */
	ck_assert(!os_spans_vmas(pb, 2 * len));
	/* The pages left a; kept or not, its span is unreachable (kept: refilled closed). */
	ck_assert(inaccessible(pa));
	ck_assert(inaccessible(pa + len - 1));
	if (kept) { /* the source region is whole again: its span reopens, zeroed */
		ck_assert(guard_open(&a, la, len));
		ck_assert(all_zero(pa, len));
	}
	ck_assert(inaccessible(pb - 1));
	ck_assert(inaccessible(pb + 2 * len));
	ck_assert(guard_unmap(&a));
	ck_assert(guard_unmap(&b));
}
END_TEST

/* Under markers a region in one VMA moves whole, guards and all, and grows: the block
 * keeps its contents, the part it grew over (its old trail guard, then what the kernel
 * extended the region by) reads zero, the lead and the new trail fault, and the region
 * is one VMA. More space below the moved region than its lead (to_off > from_off) stays
 * closed. The old region is closed whole, and reopens zeroed. */
START_TEST(test_move_whole)
{
	if (force(0) != GUARD_MADVISE) return;
	size_t pg = os_page, la = 3 * pg, ta = 2 * pg, len = 8 * pg, grown = 20 * pg;
	size_t skip = _i ? 2 * pg : 0, lb = la + skip, tb = 5 * pg;
	struct guard_region a, b;
	ck_assert(guard_map(&a, &la, len, &ta, 0, "rampart:test"));
	char *pa = (char *)(a.base + la);
	fill(pa, len, 5);
	ck_assert(guard_moves_whole(&a));
	ck_assert(guard_map_space(&b, 0, &lb, grown, &tb, 0));
	ck_assert_uint_eq(lb, la + skip);
	errno = SENTINEL;
	bool kept;
	ck_assert(guard_move_whole(&a, la, len, &b, lb, grown, &kept));
	ck_assert_int_eq(errno, SENTINEL);
	char *pb = (char *)(b.base + lb);
	for (size_t i = 0; i < len; i++) ck_assert_int_eq(pb[i], (char)(5 + i * 7));
	ck_assert(all_zero(pb + len, grown - len));
	ck_assert(inaccessible(pb - 1));
	ck_assert(inaccessible(pb - la));
	ck_assert(inaccessible(pb + grown));
	ck_assert(inaccessible(pb + grown + tb - 1));
	ck_assert(!os_spans_vmas(pb - la, la + grown + tb));
	if (skip) ck_assert(inaccessible((void *)b.base));
	ck_assert(b.flags & REGION_MARKERS);
	ck_assert(kept);
	ck_assert(inaccessible(pa));
	ck_assert(inaccessible(pa + len - 1));
	ck_assert(guard_open(&a, la, len));
	ck_assert(all_zero(pa, len));
	/* The moved region closes and opens as any other. */
	ck_assert(guard_close(&b, lb, grown));
	ck_assert(inaccessible(pb));
	ck_assert(guard_open(&b, lb, grown));
	ck_assert(all_zero(pb, grown));
	ck_assert(guard_unmap(&a));
	ck_assert(guard_unmap(&b));
}
END_TEST

/* A locked span of a region of its own (a large block freed without munlock): the close
 * maps it afresh, which drops the lock as munmap would, and the markers go on. No
 * fallback, no latch: only new mappings that refuse markers (mlockall(MCL_FUTURE)) turn
 * the madvise backend off. */
START_TEST(test_locked_span_closes_fresh)
{
	enum guard_backend b = force(0);
	if (b != GUARD_MADVISE) return;
	size_t pg = os_page, lead, len = 8 * pg;
	struct guard_region r;
	char *p = open_span(&r, &lead, len, 2, true);
	unsigned long latches = stat_counters[STAT_GUARD_LATCH], falls = stat_counters[STAT_GUARD_FALLBACK];
	errno = SENTINEL;
	ck_assert(guard_close(&r, lead + pg, 2 * pg));
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert_int_eq(guard_backend(), GUARD_MADVISE);
	ck_assert_uint_eq(stat_counters[STAT_GUARD_LATCH], latches);
	ck_assert_uint_eq(stat_counters[STAT_GUARD_FALLBACK], falls);
	ck_assert(r.flags & REGION_MARKERS);
	ck_assert(!(r.flags & REGION_STALE));
	ck_assert(inaccessible(p + pg));
	ck_assert(child_faults(p + 2 * pg, true));
	ck_assert_int_eq(p[0], 2);
	/* Reopen: not locked (a locked span would be populated at once), zero, usable. */
	ck_assert(guard_open(&r, lead + pg, 2 * pg));
	unsigned char vec[2];
	ck_assert_int_eq(mincore(p + pg, 2 * pg, vec), 0);
	ck_assert(!(vec[0] & 1) && !(vec[1] & 1));
	ck_assert(accessible(p + pg));
	ck_assert(all_zero(p + pg, 2 * pg));
	ck_assert(guard_unmap(&r));
}
END_TEST

/* A locked span of a region that keeps its one mapping (slab regions): markers are
 * refused (EINVAL), the span closes through the mprotect scheme and that region stops
 * using markers; new mappings still take them, so the backend stays. */
START_TEST(test_locked_span_in_place)
{
	enum guard_backend b = force(0);
	if (b != GUARD_MADVISE) return;
	size_t pg = os_page, lead, len = 8 * pg;
	struct guard_region r;
	char *p = open_span(&r, &lead, len, 2, true);
	r.flags |= REGION_KEEP_ANON;
	unsigned long latches = stat_counters[STAT_GUARD_LATCH], falls = stat_counters[STAT_GUARD_FALLBACK];
	errno = SENTINEL;
	ck_assert(guard_close(&r, lead + pg, 2 * pg));
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert_int_eq(guard_backend(), GUARD_MADVISE);
	ck_assert_uint_eq(stat_counters[STAT_GUARD_LATCH], latches);
	ck_assert_uint_eq(stat_counters[STAT_GUARD_FALLBACK], falls + 1);
	ck_assert(!(r.flags & REGION_MARKERS));
	ck_assert(r.flags & REGION_PROTECTED);
	ck_assert(inaccessible(p + pg));
	ck_assert(child_faults(p + 2 * pg, true));
	ck_assert(inaccessible(p - 1));
	ck_assert(inaccessible(p + len));
	ck_assert_int_eq(p[0], 2);
	ck_assert(guard_open(&r, lead + pg, 2 * pg));
	ck_assert(all_zero(p + pg, 2 * pg));
	/* A new mapping still carries markers. */
	struct guard_region n;
	size_t nl = pg, nt = pg;
	ck_assert(guard_map(&n, &nl, pg, &nt, 0, NULL));
	ck_assert(n.flags & REGION_MARKERS);
	ck_assert(inaccessible((char *)n.base));
	ck_assert(guard_unmap(&n));
	munlock(p, len);
	ck_assert(guard_unmap(&r));
}
END_TEST

/* After mlockall(MCL_CURRENT) every existing mapping is locked: a region made under
 * the madvise backend still gets working guards. */
START_TEST(test_mlockall_current)
{
	enum guard_backend b = force(_i);
	size_t pg = os_page, lead, len = 8 * pg;
	struct guard_region r;
	char *p = open_span(&r, &lead, len, 4, false);
	ck_assert_int_eq(mlockall(MCL_CURRENT), 0);
	errno = SENTINEL;
	ck_assert(guard_close(&r, lead + 4 * pg, 4 * pg));
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert(inaccessible(p + 4 * pg));
	ck_assert(inaccessible(p + len - 1));
	ck_assert(child_faults(p + 5 * pg, true));
	ck_assert(accessible(p + 4 * pg - 1));
	/* New mappings are not locked (no MCL_FUTURE): the backend stays. */
	ck_assert_int_eq(guard_backend(), b);
	/* Reopen: zero even where the locked pages could not be dropped. */
	ck_assert(guard_open(&r, lead + 4 * pg, 4 * pg));
	ck_assert(all_zero(p + 4 * pg, 4 * pg));
	ck_assert(accessible(p + len - 1));
	ck_assert(inaccessible(p + len));
	munlockall();
	ck_assert(guard_unmap(&r));
}
END_TEST

/* A window is set aside, not mapped, clear of every mapping and of the other windows;
 * a region in it grows in place and never over another mapping. */
START_TEST(test_window_grow)
{
	enum guard_backend b = force(_i);
	size_t pg = os_page, size = (size_t)64 << 20;
	uintptr_t w1, w2;
	errno = SENTINEL;
	ck_assert(guard_window(size, &w1));
	ck_assert(guard_window(size, &w2));
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert_uint_eq(w1 % pg, 0);
	ck_assert(w1 + size <= w2 || w2 + size <= w1);
	ck_assert(!os_range_mapped(w1, w1 + size));
	ck_assert(probe_read((void *)w1) == EFAULT);
	struct guard_region r;
	guard_start(&r, w1);
	ck_assert_uint_eq(r.size, 0);
	ck_assert_uint_eq(r.flags, expected_flags(b) | REGION_GROWS);
	ck_assert(guard_grow(&r, 16 * pg, "test:window"));
	ck_assert_uint_eq(r.size, 16 * pg);
	ck_assert(inaccessible((char *)w1 - 1)); /* the closed page below */
	ck_assert(os_range_mapped(w1 - pg, w1));
	ck_assert(inaccessible((char *)w1) && inaccessible((char *)w1 + 16 * pg - 1));
	ck_assert(guard_extend(&r, 2 * pg, 4 * pg));
	ck_assert(accessible((char *)w1 + 2 * pg) && accessible((char *)w1 + 6 * pg - 1));
	ck_assert(inaccessible((char *)w1 + 6 * pg));
	fill((char *)w1 + 2 * pg, 4 * pg, 9);
	ck_assert(guard_grow(&r, 32 * pg, "test:window"));
	ck_assert_int_eq(((char *)w1)[2 * pg], 9); /* growing keeps what is there */
	/* Something else mapped where the region would grow: refused, nothing replaced. */
	void *foreign = (void *)(w1 + 40 * pg);
	ck_assert(mmap(foreign, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) ==
		  foreign);
	*(volatile char *)foreign = 42;
	ck_assert(!guard_grow(&r, 48 * pg, "test:window"));
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert_uint_eq(r.size, 32 * pg);
	ck_assert_int_eq(*(volatile char *)foreign, 42);
	ck_assert(guard_grow(&r, 40 * pg, "test:window")); /* up to it is still fine */
	ck_assert_int_eq(munmap(foreign, pg), 0);
	ck_assert(guard_unmap(&r));
	ck_assert(!os_range_mapped(w1 - pg, w1 + size)); /* the page below went too */
	guard_window_release(w2);
	guard_window_release(w1);
}
END_TEST

struct span_count {
	uintptr_t lo, hi;
	long count;
};

static void count_meeting(uintptr_t lo, uintptr_t hi, void *ctx)
{
	struct span_count *c = ctx;
	c->count += lo < c->hi && hi > c->lo;
}

/* VMAs that meet [lo, hi). */
static long vmas_in(uintptr_t lo, uintptr_t hi)
{
	struct span_count c = {lo, hi, 0};
	return each_mapping(count_meeting, &c) ? c.count : -1;
}

/* Small growth under markers is read-write behind markers: the closed page below, the
 * opened spans and the closed rest are one VMA, and opening needs no mprotect. Growth
 * past GUARD_MARKED_GROWTH_MAX is PROT_NONE; a span across the boundary opens whole.
 * Under mprotect every boundary is a VMA, as before. */
START_TEST(test_grow_marked)
{
	enum guard_backend b = force(_i);
	size_t pg = os_page, size = (size_t)64 << 20, small = 16 * pg;
	size_t max_pages = GUARD_MARKED_GROWTH_MAX / pg;
	uintptr_t w;
	ck_assert(guard_window(size, &w));
	struct guard_region r;
	guard_start(&r, w);
	errno = SENTINEL;
	ck_assert(guard_grow(&r, small, "test:marked"));
	ck_assert_int_eq(errno, SENTINEL);
	bool marked = b == GUARD_MADVISE;
	ck_assert_uint_eq(r.marked_pages, marked ? 16 : 0);
	ck_assert(guard_span_in_marked(&r, 0, small) == marked);
	ck_assert(!guard_span_in_marked(&r, 0, small + pg));
	ck_assert_int_eq(vmas_in(w - pg, w + small), 1);
	ck_assert(inaccessible((char *)w - 1) && inaccessible((char *)w) && inaccessible((char *)w + small - 1));
	ck_assert(child_faults((char *)w + 5 * pg, true));
	ck_assert(guard_extend(&r, 4 * pg, 2 * pg));
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert(accessible((char *)w + 4 * pg) && accessible((char *)w + 6 * pg - 1));
	ck_assert(all_zero((char *)w + 4 * pg, 2 * pg));
	ck_assert(inaccessible((char *)w + 4 * pg - 1) && inaccessible((char *)w + 6 * pg));
	ck_assert_int_eq(vmas_in(w - pg, w + small), marked ? 1 : 3);
	fill((char *)w + 4 * pg, 2 * pg, 3);
	/* Close and reopen inside the marked space: zero again, still one VMA. */
	ck_assert(guard_close(&r, 5 * pg, pg));
	ck_assert(inaccessible((char *)w + 5 * pg));
	ck_assert(guard_open(&r, 5 * pg, pg));
	ck_assert(all_zero((char *)w + 5 * pg, pg));
	ck_assert_int_eq(((char *)w)[4 * pg], 3);
	if (marked) ck_assert_int_eq(vmas_in(w - pg, w + small), 1);
	/* Up to the limit the growth stays marked, past it not. */
	ck_assert(guard_grow(&r, max_pages * pg, "test:marked"));
	ck_assert_uint_eq(r.marked_pages, marked ? max_pages : 0);
	ck_assert(guard_grow(&r, (max_pages + 16) * pg, "test:marked"));
	ck_assert_uint_eq(r.marked_pages, marked ? max_pages : 0);
	ck_assert(!guard_span_in_marked(&r, (max_pages - 2) * pg, 4 * pg));
	ck_assert(inaccessible((char *)w + max_pages * pg) && inaccessible((char *)w + (max_pages - 1) * pg));
	ck_assert(guard_extend(&r, (max_pages - 2) * pg, 4 * pg));
	ck_assert_int_eq(errno, SENTINEL);
	char *across = (char *)w + (max_pages - 2) * pg;
	ck_assert(accessible(across) && accessible(across + 4 * pg - 1));
	ck_assert(all_zero(across, 4 * pg));
	ck_assert(inaccessible(across - 1) && inaccessible(across + 4 * pg));
	ck_assert_int_eq(((char *)w)[4 * pg], 3); /* growing keeps what is there */
	ck_assert(guard_unmap(&r));
	ck_assert(!os_range_mapped(w - pg, w + size));
	guard_window_release(w);
}
END_TEST

/* Two windows of size bytes under the madvise backend; false (nothing to test) where
 * the kernel has no guard markers (force says so). */
static bool marked_windows(size_t size, uintptr_t *w1, uintptr_t *w2)
{
	if (force(0) != GUARD_MADVISE) return false;
	ck_assert(guard_window(size, w1));
	ck_assert(guard_window(size, w2));
	return true;
}

/* Under mlockall(MCL_FUTURE) the read-write growth is populated and locked at once and
 * the kernel refuses its markers: the backend latches off, the growth is given back and
 * grown PROT_NONE, nothing resident. Space grown behind markers before still opens. */
START_TEST(test_grow_marked_locked)
{
	size_t pg = os_page, size = (size_t)64 << 20;
	uintptr_t w1, w2;
	if (!marked_windows(size, &w1, &w2)) return;
	struct guard_region before, after;
	guard_start(&before, w1);
	ck_assert(guard_grow(&before, 16 * pg, "test:marked"));
	ck_assert_uint_eq(before.marked_pages, 16);
	ck_assert_int_eq(mlockall(MCL_CURRENT | MCL_FUTURE), 0);
	unsigned long latches = stat_counters[STAT_GUARD_LATCH];
	guard_start(&after, w2);
	after.flags = before.flags; /* made before the latch: it would try markers */
	errno = SENTINEL;
	ck_assert(guard_grow(&after, 16 * pg, "test:marked"));
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert_int_eq(guard_backend(), GUARD_MPROTECT);
	ck_assert_uint_eq(stat_counters[STAT_GUARD_LATCH], latches + 1);
	ck_assert_uint_eq(after.marked_pages, 0);
	ck_assert(!(after.flags & REGION_MARKERS));
	unsigned char vec[16];
	ck_assert_int_eq(mincore((void *)w2, 16 * pg, vec), 0);
	for (int i = 0; i < 16; i++) ck_assert_int_eq(vec[i] & 1, 0);
	ck_assert(inaccessible((char *)w2) && inaccessible((char *)w2 - 1));
	ck_assert(guard_extend(&after, 2 * pg, pg));
	ck_assert(accessible((char *)w2 + 2 * pg));
	ck_assert(inaccessible((char *)w2 + 3 * pg));
	/* The space grown behind markers before the lock still opens, zero. */
	ck_assert(guard_extend(&before, 2 * pg, 2 * pg));
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert(accessible((char *)w1 + 2 * pg) && accessible((char *)w1 + 4 * pg - 1));
	ck_assert(all_zero((char *)w1 + 2 * pg, 2 * pg));
	ck_assert(inaccessible((char *)w1 + 4 * pg) && inaccessible((char *)w1 - 1));
	munlockall();
	ck_assert(guard_unmap(&after));
	ck_assert(guard_unmap(&before));
	guard_window_release(w2);
	guard_window_release(w1);
}
END_TEST

/* A first growth with its first span opened in the same set-up (a class's nursery cell):
 * the closed page below, the span open and zero, the rest closed, one VMA behind markers;
 * under mlockall(MCL_FUTURE) the read-write cell is populated, its markers are refused,
 * and it is given back and grown closed: the span is opened the old way, nothing else
 * resident. */
START_TEST(test_grow_open)
{
	enum guard_backend b = force(_i % 2);
	bool locked = _i >= 2;
	if (locked && b != GUARD_MADVISE) return;
	size_t pg = os_page, size = (size_t)64 << 20, small = 24 * pg;
	uintptr_t w;
	ck_assert(guard_window(size, &w));
	struct guard_region r;
	guard_start(&r, w);
	if (locked) ck_assert_int_eq(mlockall(MCL_CURRENT | MCL_FUTURE), 0);
	bool opened = false;
	errno = SENTINEL;
	ck_assert(guard_grow_open(&r, small, "test:open", 3 * pg, 2 * pg, &opened));
	ck_assert_int_eq(errno, SENTINEL);
	bool marked = b == GUARD_MADVISE && !locked;
	ck_assert(opened == marked);
	ck_assert_uint_eq(r.size, small);
	ck_assert_uint_eq(r.marked_pages, marked ? 24 : 0);
	if (!opened) ck_assert(guard_extend(&r, 3 * pg, 2 * pg));
	ck_assert(accessible((char *)w + 3 * pg) && accessible((char *)w + 5 * pg - 1));
	ck_assert(all_zero((char *)w + 3 * pg, 2 * pg));
	ck_assert(inaccessible((char *)w - 1) && inaccessible((char *)w) && inaccessible((char *)w + 3 * pg - 1));
	ck_assert(inaccessible((char *)w + 5 * pg) && inaccessible((char *)w + small - 1));
	ck_assert(child_faults((char *)w + 5 * pg, true));
	if (marked) ck_assert_int_eq(vmas_in(w - pg, w + small), 1);
	if (locked) {
		ck_assert_int_eq(guard_backend(), GUARD_MPROTECT);
		unsigned char vec[24];
		ck_assert_int_eq(mincore((void *)w, small, vec), 0);
		for (int i = 0; i < 24; i++)
			if (i < 3 || i >= 5) ck_assert_int_eq(vec[i] & 1, 0);
		munlockall();
	}
	/* The next span opens as after guard_grow. */
	ck_assert(guard_extend(&r, 6 * pg, pg));
	ck_assert(accessible((char *)w + 6 * pg) && inaccessible((char *)w + 7 * pg));
	ck_assert(guard_unmap(&r));
	guard_window_release(w);
}
END_TEST

/* A tagged region (arm64 memory tagging: its spans open PROT_MTE) never grows by a
 * read-write mapping, which would leave its slabs untagged: under the madvise backend
 * too it grows closed, unmarked, and its spans open with mprotect (guard_extend). */
START_TEST(test_grow_tagged)
{
	size_t pg = os_page, size = (size_t)64 << 20;
	uintptr_t w1, w2;
	if (!marked_windows(size, &w1, &w2)) return;
	struct guard_region grown, cell;
	guard_start(&grown, w1);
	guard_start(&cell, w2);
	grown.flags |= REGION_TAGGED;
	cell.flags |= REGION_TAGGED;
	ck_assert(guard_grow(&grown, 16 * pg, "test:tagged"));
	ck_assert(guard_grow(&grown, 32 * pg, "test:tagged"));
	ck_assert_uint_eq(grown.marked_pages, 0);
	bool opened = true;
	ck_assert(guard_grow_open(&cell, 24 * pg, "test:tagged", 3 * pg, 2 * pg, &opened));
	ck_assert(!opened);
	ck_assert_uint_eq(cell.marked_pages, 0);
	ck_assert_int_eq(guard_backend(), GUARD_MADVISE);
	unsigned long latches = stat_counters[STAT_GUARD_LATCH]; /* unchanged: nothing refused */
	ck_assert(guard_extend(&grown, 20 * pg, pg) && guard_extend(&cell, 3 * pg, 2 * pg));
	ck_assert_uint_eq(stat_counters[STAT_GUARD_LATCH], latches);
	ck_assert(accessible((char *)w1 + 20 * pg) && inaccessible((char *)w1 + 21 * pg) &&
		  inaccessible((char *)w1 + 19 * pg) && inaccessible((char *)w1 - 1));
	ck_assert(accessible((char *)w2 + 3 * pg) && inaccessible((char *)w2 + 5 * pg) && inaccessible((char *)w2 - 1));
	ck_assert(guard_unmap(&cell));
	ck_assert(guard_unmap(&grown));
	guard_window_release(w2);
	guard_window_release(w1);
}
END_TEST

/* A window's place is drawn among the starts that keep clear of every window taken,
 * each as likely: the draw r picks the r-th of them (mod their count). Checked against
 * a brute-force enumeration over small spans with windows in any order, inside the
 * span, across its ends and outside it. */
static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* The large area: regions laid end to end from a start; a mapping in the way is found
 * (the place refused, then a new check) and passed with room; a new fork generation
 * draws a new start; a region too big for the area goes to the kernel. */
START_TEST(test_area_walk)
{
	force(_i);
	size_t pg = os_page, clear = 65 * pg, len = 14 * pg;
	struct guard_area a = {0};
	uintptr_t at = guard_area_take(&a, 16 * pg, clear, 1, 12345);
	ck_assert(at);
	ck_assert(!os_range_mapped(at - clear, at + 16 * pg + clear));
	struct guard_region r, r2, r3;
	size_t lead = pg, trail = pg;
	ck_assert(guard_map_at(&r, at, &lead, len, &trail, 0, NULL));
	ck_assert_uint_eq(r.base, at);
	ck_assert_uint_eq(r.size, 16 * pg);
	guard_area_placed(&a, r.base + r.size);
	uintptr_t next = guard_area_take(&a, 16 * pg, clear, 1, 999);
	ck_assert_uint_eq(next, r.base + r.size);
	/* Another mapping lands where the next region would go. */
	void *in = mmap((void *)(next + 2 * pg), pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ck_assert(in == (void *)(next + 2 * pg));
	lead = trail = pg;
	ck_assert(!guard_map_at(&r2, next, &lead, len, &trail, 0, NULL));
	guard_area_refused(&a);
	uintptr_t past = guard_area_take(&a, 16 * pg, clear, 1, 999);
	ck_assert_uint_ge(past, (uintptr_t)in + pg + clear);
	lead = trail = pg;
	ck_assert(guard_map_at(&r2, past, &lead, len, &trail, 0, NULL));
	guard_area_placed(&a, r2.base + r2.size);
	/* A fork child's generation: a start of its own. */
	uintptr_t child = guard_area_take(&a, 16 * pg, clear, 2, 777);
	ck_assert(child);
	ck_assert(child != r2.base + r2.size);
	lead = trail = pg;
	ck_assert(guard_map_at(&r3, child, &lead, len, &trail, 0, NULL));
	/* More than a quarter of the area: the kernel's choice. */
	ck_assert_uint_eq(guard_area_take(&a, (size_t)1 << 45, clear, 2, 1), 0);
	ck_assert(guard_unmap(&r));
	ck_assert(guard_unmap(&r2));
	ck_assert(guard_unmap(&r3));
	ck_assert_int_eq(munmap(in, pg), 0);
}
END_TEST

START_TEST(test_window_pick)
{
	os_init();
	uintptr_t pg = os_page, lo = (uintptr_t)1 << 30;
	/* One window in the middle leaves one start on each side. */
	struct guard_span mid = {lo + 6 * pg, lo + 14 * pg};
	ck_assert_uint_eq(guard_window_pick(&mid, 1, lo, lo + 20 * pg, 6 * pg, 0), lo);
	ck_assert_uint_eq(guard_window_pick(&mid, 1, lo, lo + 20 * pg, 6 * pg, 1), lo + 14 * pg);
	ck_assert_uint_eq(guard_window_pick(&mid, 1, lo, lo + 20 * pg, 6 * pg, 2), lo);
	ck_assert_uint_eq(guard_window_pick(&mid, 1, lo, lo + 20 * pg, 7 * pg, 5), 0); /* no room */
	ck_assert_uint_eq(guard_window_pick(NULL, 0, lo, lo + 4 * pg, 5 * pg, 0), 0);
	ck_assert_uint_eq(guard_window_pick(NULL, 0, lo, lo + 10 * pg, 4 * pg, 6), lo + 6 * pg);

	uint64_t rng = 0x77696e646f77ULL;
	for (int round = 0; round < 2000; round++) {
		enum { SPAN = 64 };
		struct guard_span w[4];
		unsigned n = (unsigned)(xorshift(&rng) % 5);
		for (unsigned i = 0; i < n; i++) { /* pages -8 .. SPAN+8, possibly overlapping each other */
			long a = (long)(xorshift(&rng) % (SPAN + 16)) - 8, len = 1 + (long)(xorshift(&rng) % 24);
			w[i].lo = lo + (uintptr_t)(a * (long)pg);
			w[i].hi = w[i].lo + (uintptr_t)len * pg;
		}
		size_t size = (1 + xorshift(&rng) % 40) * pg;
		bool allowed[SPAN] = {false};
		unsigned count = 0;
		for (uintptr_t start = 0; start + size / pg <= SPAN; start++) {
			uintptr_t c = lo + start * pg;
			bool clear = true;
			for (unsigned i = 0; i < n; i++) clear &= c + size <= w[i].lo || w[i].hi <= c;
			allowed[start] = clear;
			count += clear;
		}
		bool seen[SPAN] = {false};
		for (unsigned r = 0; r < count; r++) {
			uintptr_t c = guard_window_pick(w, n, lo, lo + SPAN * pg, size, r + (uint64_t)count * round);
			ck_assert_uint_ge(c, lo);
			ck_assert_uint_eq((c - lo) % pg, 0);
			uintptr_t start = (c - lo) / pg;
			ck_assert_uint_lt(start, SPAN);
			ck_assert_msg(allowed[start] && !seen[start], "round %d: start %lu drawn twice or not clear", round,
				      (unsigned long)start);
			seen[start] = true;
		}
		if (!count) ck_assert_uint_eq(guard_window_pick(w, n, lo, lo + SPAN * pg, size, xorshift(&rng)), 0);
	}
}
END_TEST

/* The share of the VMA limit a holder of closed regions gets: unbounded under madvise
 * (they merge), an eighth of vm.max_map_count under mprotect (each can be a VMA). */
START_TEST(test_closed_room)
{
	enum guard_backend b = force(_i);
	long limit = 0;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
	if (!f || fscanf(f, "%ld", &limit) != 1 || limit <= 0) limit = 65530;
	if (f) fclose(f);
	size_t share = (size_t)limit / 8;
	ck_assert(guard_closed_room(0));
	ck_assert(guard_closed_room(1023));
	if (b == GUARD_MADVISE) {
		ck_assert(guard_closed_room(share));
		ck_assert(guard_closed_room((size_t)limit * 2));
	} else {
		if (share > 1024) ck_assert(guard_closed_room(share - 1));
		ck_assert(!guard_closed_room(share > 1024 ? share : 1024));
		ck_assert(!guard_closed_room((size_t)limit));
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("guard");
	TCase *t = tcase_create("guard");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, test_probe_auto);
	tcase_add_loop_test(t, test_map_basic, 0, 2);
	tcase_add_loop_test(t, test_map_aligned, 0, 2);
	tcase_add_loop_test(t, test_close_open, 0, 2);
	tcase_add_loop_test(t, test_close_vmas, 0, 2);
	tcase_add_loop_test(t, test_reserve_extend, 0, 2);
	tcase_add_loop_test(t, test_window_grow, 0, 2);
	tcase_add_loop_test(t, test_grow_marked, 0, 2);
	tcase_add_test(t, test_grow_marked_locked);
	tcase_add_test(t, test_grow_tagged);
	tcase_add_loop_test(t, test_grow_open, 0, 4);
	tcase_add_test(t, test_window_pick);
	tcase_add_loop_test(t, test_area_walk, 0, 2);
	tcase_add_loop_test(t, test_move, 0, 2);
	tcase_add_loop_test(t, test_move_whole, 0, 2);
	tcase_add_test(t, test_locked_span_closes_fresh);
	tcase_add_test(t, test_locked_span_in_place);
	tcase_add_loop_test(t, test_mlockall_current, 0, 2);
	tcase_add_loop_test(t, test_closed_room, 0, 2);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
