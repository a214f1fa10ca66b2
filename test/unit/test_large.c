/* test_large.c — large allocations (> CONFIG_SMALL_MAX): sizes, guards, alignment,
 * realloc paths, metadata lookups, quarantine (Check; through the public API and the
 * large_* functions). */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "../check_main.h"
#include "../harness.h"
#include "../site.h"
#include "base/roots.h"
#include "large/large.h"
#include "os/os.h"
#include "large/populate.h"
#include "rampart.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define LARGE_MIN ((size_t)CONFIG_SMALL_MAX + 1)

static size_t pg;

static void setup(void)
{
	pg = (size_t)sysconf(_SC_PAGESIZE);
	free(malloc(1)); /* initialise */
}

static size_t pages(size_t n) { return (n + pg - 1) & ~(pg - 1); }

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i += 512) p[i] = (unsigned char)(seed + i / 512);
	if (n) p[n - 1] = (unsigned char)seed;
}

static void check_fill(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i += 512) ck_assert_msg(p[i] == (unsigned char)(seed + i / 512), "byte %zu", i);
	if (n) ck_assert_int_eq(p[n - 1], (unsigned char)seed);
}

static bool zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i]) return false;
	return true;
}

/* The block is open exactly over [p, p + usable) with guards around it. */
static void check_guarded(unsigned char *p, size_t usable)
{
	ck_assert(accessible(p));
	ck_assert(accessible(p + usable - 1));
	ck_assert_msg(inaccessible(p - 1), "no guard before %p", (void *)p);
	ck_assert_msg(inaccessible(p + usable), "no guard after %p + %zu", (void *)p, usable);
}

static struct rampart_stats stats(void)
{
	struct rampart_stats s;
	rampart_get_stats(&s);
	return s;
}

START_TEST(test_sizes)
{
	static const size_t sizes[] = {LARGE_MIN, 200 * KiB, 256 * KiB, MiB - 1, MiB, MiB + 1, 4 * MiB,
				       16 * MiB + 12345, 64 * MiB};
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		size_t n = sizes[i];
		errno = 777;
		unsigned char *p = malloc(n);
		ck_assert_ptr_nonnull(p);
		ck_assert_int_eq(errno, 777);
		ck_assert_uint_eq((uintptr_t)p % pg, 0);
		size_t u = malloc_usable_size(p);
		ck_assert_uint_eq(u, pages(n));
		ck_assert_uint_eq(large_usable_size(p, OP_USABLE_SIZE), u);
		ck_assert(zero(p, u));
		check_guarded(p, u);
		fill(p, u, (unsigned)i);
		check_fill(p, u, (unsigned)i);
		free(p);
		ck_assert_int_eq(errno, 777);
		ck_assert_msg(inaccessible(p), "freed block still reachable");
		ck_assert(inaccessible(p + u - 1));
	}
}
END_TEST

/* Guards fault for real (in a child), not only for the kernel's copy routines. */
START_TEST(test_guards_fault)
{
	unsigned char *p = malloc(300 * KiB);
	size_t u = malloc_usable_size(p);
	ck_assert(child_faults(p - 1, false));
	ck_assert(child_faults(p + u, true));
	ck_assert_int_eq(child_access(p + u - 1, true), 0);
	free(p);
	ck_assert(child_faults(p, false));
	ck_assert(child_faults(p + u / 2, true));
}
END_TEST

/* Alignments up to 4 MiB and beyond, for every size, through every aligned entry. */
START_TEST(test_alignment)
{
	static const size_t aligns[] = {8, 16, 64, 4096, 8192, 64 * KiB, 2 * MiB, 4 * MiB, 8 * MiB, 32 * MiB};
	static const size_t sizes[] = {0, 1, 100, 4096, 128 * KiB, LARGE_MIN, 300 * KiB, MiB, 3 * MiB + 5, 9 * MiB};
	for (size_t a = 0; a < sizeof aligns / sizeof *aligns; a++) {
		for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
			size_t al = aligns[a], n = sizes[s];
			void *v[3] = {0};
			errno = 555;
			ck_assert_int_eq(posix_memalign(&v[0], al, n), 0);
			v[1] = aligned_alloc(al, n);
			v[2] = memalign(al, n);
			ck_assert_int_eq(errno, 555);
			for (int k = 0; k < 3; k++) {
				ck_assert_msg(v[k] != NULL, "align %zu size %zu entry %d", al, n, k);
				ck_assert_msg((uintptr_t)v[k] % al == 0, "align %zu size %zu entry %d: %p", al, n, k, v[k]);
				if (n) {
					ck_assert_uint_ge(malloc_usable_size(v[k]), n);
					memset(v[k], 0x5a, n);
				}
				if (n >= LARGE_MIN) check_guarded(v[k], malloc_usable_size(v[k]));
			}
			free(v[0]);
			free_aligned_sized(v[1], al, n);
			free(v[2]);
		}
	}
}
END_TEST

/* A large aligned block keeps its alignment when realloc moves it. */
START_TEST(test_alignment_kept_by_realloc)
{
	unsigned char *p = aligned_alloc(4 * MiB, MiB);
	ck_assert_ptr_nonnull(p);
	fill(p, MiB, 3);
	unsigned char *q = realloc(p, 48 * MiB);
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_eq((uintptr_t)q % (4 * MiB), 0);
	check_fill(q, MiB, 3);
	check_guarded(q, malloc_usable_size(q));
	free(q);
}
END_TEST

START_TEST(test_realloc_shrink_in_place)
{
	unsigned char *p = malloc(MiB);
	fill(p, MiB, 7);
	struct rampart_stats before = stats();
	errno = 99;
	unsigned char *q = realloc(p, 300 * KiB);
	ck_assert_int_eq(errno, 99);
	ck_assert_ptr_eq(q, p);
	size_t u = malloc_usable_size(q);
	ck_assert_uint_eq(u, pages(300 * KiB));
	ck_assert_uint_eq(stats().realloc_in_place, before.realloc_in_place + 1);
	for (size_t i = 0; i < u; i += 512) ck_assert_int_eq(q[i], (unsigned char)(7 + i / 512));
	/* The cut tail became guard. */
	ck_assert(inaccessible(q + u));
	ck_assert(inaccessible(q + MiB - 1));
	ck_assert(child_faults(q + u + pg, true));
	ck_assert(accessible(q + u - 1));
	free(q);
}
END_TEST

/* Grow in place: shrinking first puts at least the cut pages (plus the original guard)
 * after the block, so growing back must stay in place and leave a guard. */
START_TEST(test_realloc_grow_in_place)
{
	size_t n = 4 * MiB, cut = 64 * KiB;
	unsigned char *p = malloc(n);
	fill(p, n, 9);
	ck_assert_ptr_eq(realloc(p, n - cut), p);
	struct rampart_stats before = stats();
	errno = 98;
	unsigned char *q = realloc(p, n);
	ck_assert_int_eq(errno, 98);
	ck_assert_ptr_eq(q, p);
	ck_assert_uint_eq(stats().realloc_in_place, before.realloc_in_place + 1);
	ck_assert_uint_eq(stats().realloc_moved, before.realloc_moved);
	ck_assert_uint_eq(malloc_usable_size(q), n);
	for (size_t i = 0; i < n - cut; i += 512) ck_assert_int_eq(q[i], (unsigned char)(9 + i / 512));
	ck_assert_msg(zero(q + n - cut, cut), "the regrown tail must read as zero");
	check_guarded(q, n);
	/* Growing by less than a page more than fits never consumes the last guard page. */
	for (int k = 0; k < 40; k++) {
		size_t u = malloc_usable_size(q);
		q = realloc(q, u + pg);
		ck_assert_ptr_nonnull(q);
		check_guarded(q, u + pg);
		ck_assert_int_eq(q[0], 9);
	}
	free(q);
}
END_TEST

/* Growth beyond the trailing guard moves the pages (mremap): contents kept, the old
 * address unreachable, the new block guarded on both sides. */
START_TEST(test_realloc_move)
{
	unsigned char *p = malloc(MiB);
	fill(p, MiB, 13);
	struct rampart_stats before = stats();
	errno = 97;
	unsigned char *q = realloc(p, 40 * MiB);
	ck_assert_int_eq(errno, 97);
	ck_assert_ptr_nonnull(q);
	ck_assert_ptr_ne(q, p);
	ck_assert_uint_eq(stats().realloc_moved, before.realloc_moved + 1);
	check_fill(q, MiB, 13);
	ck_assert(zero(q + MiB, 40 * MiB - MiB));
	check_guarded(q, 40 * MiB);
	ck_assert(inaccessible(p));
	ck_assert(inaccessible(p + MiB - 1));
	/* (malloc_object_size(p) is fatal now: large_death covers it.) */
	/* And back down again: in place. */
	unsigned char *r = realloc(q, 2 * MiB);
	ck_assert_ptr_eq(r, q);
	check_fill(r, MiB, 13);
	check_guarded(r, 2 * MiB);
	/* Moving many times keeps everything consistent. */
	for (size_t k = 3; k < 20; k++) {
		r = realloc(r, k * 3 * MiB);
		ck_assert_ptr_nonnull(r);
		check_fill(r, MiB, 13);
		check_guarded(r, k * 3 * MiB);
	}
	free(r);
}
END_TEST

/* A realloc that cannot be served returns NULL with ENOMEM and leaves the block alone. */
START_TEST(test_realloc_failure_keeps_block)
{
	unsigned char *p = malloc(512 * KiB);
	fill(p, 512 * KiB, 17);
	static const size_t huge[] = {SIZE_MAX, SIZE_MAX - 4096, (size_t)1 << 62, ((size_t)1 << 62) + 1,
				      (size_t)1 << 56};
	for (size_t i = 0; i < sizeof huge / sizeof *huge; i++) {
		errno = 0;
		ck_assert_ptr_null(realloc(p, huge[i]));
		ck_assert_int_eq(errno, ENOMEM);
		ck_assert_uint_eq(malloc_usable_size(p), 512 * KiB);
		check_fill(p, 512 * KiB, 17);
		check_guarded(p, 512 * KiB);
	}
	free(p);
}
END_TEST

/* The hash table: many live blocks, freed in a scrambled order, looked up exactly. */
START_TEST(test_metadata_lookups)
{
	enum { N = 600 };
	static unsigned char *blk[N];
	static size_t sz[N];
	for (size_t i = 0; i < N; i++) {
		sz[i] = LARGE_MIN + (i * 7919 % 97) * pg;
		blk[i] = malloc(sz[i]);
		ck_assert_ptr_nonnull(blk[i]);
		blk[i][0] = (unsigned char)i;
	}
	for (size_t round = 0; round < 3; round++) {
		for (size_t i = round; i < N; i += 3) {
			ck_assert_uint_eq(malloc_usable_size(blk[i]), pages(sz[i]));
			ck_assert_uint_eq(malloc_object_size(blk[i]), pages(sz[i]));
			ck_assert_uint_eq(malloc_object_size(blk[i] + 100), pages(sz[i]) - 100);
			ck_assert_uint_eq(malloc_object_size(blk[i] + pages(sz[i]) - 1), 1);
			ck_assert_int_eq(blk[i][0], (unsigned char)i);
			/* One past the end is a valid pointer: nothing left, not an error. */
			ck_assert_uint_eq(malloc_object_size(blk[i] + pages(sz[i])), 0);
			free(blk[i]);
			blk[i] = NULL;
		}
		/* Everything still live is still found. */
		for (size_t i = 0; i < N; i++)
			if (blk[i]) ck_assert_uint_eq(large_usable_size(blk[i], OP_USABLE_SIZE), pages(sz[i]));
	}
	int local;
	ck_assert_uint_eq(malloc_object_size(&local), 0);
	ck_assert_uint_eq(large_object_size(&local), 0);
}
END_TEST

/* A freed block is closed at once and its address is not handed out right away. Every
 * block here comes from one call site (site_malloc): with call-site partitions a freed
 * region goes back only to a large block of its own partition, so blocks of another site
 * would never get p's regions back, quarantine or not, and the check could not see a
 * quarantine that let them go early. The control at the end shows that this site does
 * get them back once they leave it. */
START_TEST(test_quarantine)
{
	enum { N = 40 };
	unsigned char *p[N];
	for (int i = 0; i < N; i++) p[i] = site_malloc(256 * KiB);
	for (int i = 0; i < N; i++) free(p[i]);
	if (roots.opt.large_quarantine) ck_assert_uint_gt(stats().quarantine_now, 0);
	for (int i = 0; i < N; i++) ck_assert(inaccessible(p[i]));
	unsigned char *q[N];
	for (int i = 0; i < N; i++) {
		q[i] = site_malloc(256 * KiB);
		/* The last frees are certainly still in quarantine (the ring alone holds more). */
		for (int j = N - 8; j < N && roots.opt.large_quarantine; j++) {
			struct rampart_stats st = stats();
			ck_assert_msg(q[i] != p[j], "q[%d] reuses p[%d] %p: quarantine %lu cache %lu hits %lu", i, j,
				      (void *)q[i], st.quarantine_now, st.cache_now, st.cache_hits);
		}
	}
	for (int i = 0; i < N; i++) free(q[i]);
	/* The control: churned at the same site, some block overlaps a region of p (after
	 * some 1,025 large frees and more of the region quarantine; from the reuse cache,
	 * where touching regions are joined and cut anew; at once without the quarantine).
	 * The blocks are never written: a pair costs a few system calls, no page fault. */
	int round = 0;
	bool back = false;
	for (; round < 8192 && !back; round++) {
		unsigned char *c = site_malloc(256 * KiB);
		ck_assert_ptr_nonnull(c);
		for (int j = 0; j < N && !back; j++) back = c < p[j] + 256 * KiB && p[j] < c + 256 * KiB;
		free(c);
	}
	printf("a region of the first 40 blocks handed out again to their call site after %d more blocks\n", round);
	ck_assert_msg(back, "no region of p handed out again to its call site within %d blocks", round);
}
END_TEST

/* Memory handed out again (reopened, reused or fresh) always reads as zero: calloc
 * relies on it. */
START_TEST(test_reuse_is_zero)
{
	for (int round = 0; round < 300; round++) {
		size_t n = (round % 3 == 0) ? MiB : (round % 3 == 1) ? 300 * KiB : MiB + 5 * pg;
		unsigned char *c = calloc(1, n);
		ck_assert_ptr_nonnull(c);
		ck_assert_msg(zero(c, n), "calloc round %d returned dirty memory", round);
		memset(c, 0xa5, n);
		if (round % 2) free(c);
		else c = realloc(c, n / 2), free(c);
	}
}
END_TEST

/* Regions at or above the quarantine threshold are huge: retired whole (one closed
 * mapping, nothing resident, no page tables) into a quarantine of their own, never
 * cached, so the next request of the size never gets the freed address; they leave it
 * unmapped. */
static TH_UNUSED bool unmapped(const void *p) /* (unused without the region quarantine) */
{
	unsigned char v;
	int saved = errno;
	bool gone = mincore((void *)((uintptr_t)p & ~(pg - 1)), pg, &v) != 0 && errno == ENOMEM;
	errno = saved;
	return gone;
}

static size_t resident_pages(const void *p, size_t n);

START_TEST(test_very_large)
{
	/* Without the region quarantine (profile light) every freed region goes to the cache. */
	if (!roots.opt.large_quarantine) return;
	static const size_t sizes[] = {(size_t)CONFIG_REGION_QUARANTINE_SKIP, (size_t)CONFIG_REGION_QUARANTINE_SKIP + MiB};
	for (size_t k = 0; k < 2; k++) {
		size_t n = sizes[k];
		long before = vm_size_pages();
		unsigned char *p = malloc(n);
		ck_assert_ptr_nonnull(p);
		for (size_t i = 0; i < n; i += 64 * pg) p[i] = 1;
		ck_assert_int_ge(vm_size_pages() - before, (long)(n / pg));
		struct rampart_stats s0 = stats();
		free(p);
		struct rampart_stats s1 = stats();
		ck_assert_uint_eq(s1.quarantine_now, s0.quarantine_now + 1);
		ck_assert_uint_eq(s1.cache_now, s0.cache_now);
		ck_assert(!unmapped(p) && !unmapped(p + n - 1)); /* held, */
		ck_assert(inaccessible(p) && inaccessible(p + n - 1));
		ck_assert(child_faults(p + n / 2, true));
		/* with nothing resident */
		ck_assert_uint_eq(resident_pages(p, 128 * MiB) + resident_pages(p + n - 128 * MiB, 128 * MiB), 0);
		unsigned char *q = malloc(n);
		ck_assert_ptr_nonnull(q);
		ck_assert(q + n <= p || q >= p + n);
		ck_assert_uint_eq(stats().cache_hits, s1.cache_hits);
		free(q);
	}
	/* Held regions leave (unmapped; the kernel may place the next one right there):
	 * the four huge ones freed above do not outlast a full quarantine's worth of frees. */
	unsigned long held_before = stats().quarantine_now;
	for (int i = 0; i < CONFIG_HUGE_QUARANTINE_FIFO + CONFIG_HUGE_QUARANTINE_RANDOM; i++) free(malloc(sizes[0]));
	ck_assert_uint_le(stats().quarantine_now, held_before + CONFIG_HUGE_QUARANTINE_FIFO + CONFIG_HUGE_QUARANTINE_RANDOM - 4);
}
END_TEST

/* --- refill (src/large/populate.h): new blocks populated as far as touched ones were freed --- */

static size_t resident_pages(const void *p, size_t n)
{
	static unsigned char vec[(128 * MiB) >> 12];
	size_t pgs = pages(n) / pg;
	ck_assert_uint_le(pgs, sizeof vec);
	ck_assert_int_eq(mincore((void *)p, pages(n), vec), 0);
	size_t r = 0;
	for (size_t i = 0; i < pgs; i++) r += vec[i] & 1;
	return r;
}

/* Can this kernel populate (MADV_POPULATE_WRITE, Linux 5.14)? Asked on a scratch
 * mapping; emulators that accept and ignore advice answer no here too. */
static bool kernel_populates(void)
{
	unsigned char *m = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(m != MAP_FAILED);
	bool yes = madvise(m, 4 * pg, 23 /* MADV_POPULATE_WRITE */) == 0 && resident_pages(m, 4 * pg) == 4;
	munmap(m, 4 * pg);
	return yes;
}

/* Whatever credit the process had lapses (CONFIG_LARGE_REFILL_MS without a free). */
/* Does the kernel map huge pages into anonymous memory unasked (THP "always")? Then a
 * touch anywhere in an aligned 2 MiB span brings the whole span in, and populating stops
 * short of such spans (populate.h): page counts can only be bounded, not exact. */
/* The first line of a sysfs file, "" when it cannot be read. */
static void sysfs_line(const char *path, char *buf, int size)
{
	buf[0] = 0;
	FILE *f = fopen(path, "r");
	if (!f) return;
	if (!fgets(buf, size, f)) buf[0] = 0;
	fclose(f);
}

static bool thp_always(void)
{
	static int known = -1;
	if (known < 0) {
		char top[80], own[80];
		sysfs_line("/sys/kernel/mm/transparent_hugepage/enabled", top, sizeof top);
		sysfs_line("/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled", own, sizeof own);
		known = strstr(own, "[always]") || (!strstr(own, "[never]") && !strstr(own, "[madvise]") &&
						    strstr(top, "[always]"));
	}
	return known;
}

/* got pages resident where want were populated: exactly, or at most under THP "always". */
#define ck_assert_pages(got, want)                                                                   \
	do {                                                                                         \
		size_t got_ = (got), want_ = (want);                                                 \
		if (thp_always()) ck_assert_msg(got_ <= want_, "%zu pages, at most %zu expected", got_, want_); \
		else ck_assert_msg(got_ == want_, "%zu pages, %zu expected", got_, want_);          \
	} while (0)

/* The witness at each end of a populated n-byte block (populate.h), and the pages a block
 * populated on full credit gets: all but its witnesses. */
static size_t witness(size_t n)
{
	size_t w = (n / POPULATE_WITNESS_PART / 2) & ~(pg - 1);
	return w > pg ? w : pg;
}
static size_t populated_pages(size_t n) { return (n - 2 * witness(n)) / pg; }

/* The light variant keeps a freed block's pages for the next block of about its size
 * (resident_cache.h): these tests are about populating fresh blocks, so what it kept
 * goes back to the kernel at each free (test/light/resident_reuse tests the keeping). */
static void free_fresh(void *p)
{
	free(p);
	if (!roots.opt.large_quarantine) malloc_trim(0);
}

static void let_credit_lapse(void) { usleep((CONFIG_LARGE_REFILL_MS + 100) * 1000); }

/* Touched blocks freed until one was measured: the refill sees a program that uses its
 * large blocks (whatever the state inherited from the test runner), then its credit
 * lapses. */
static void prime(void)
{
	for (int i = 0; i < POPULATE_PROBE_EVERY; i++) {
		unsigned char *p = malloc(256 * KiB);
		ck_assert_ptr_nonnull(p);
		memset(p, 1, 256 * KiB);
		free_fresh(p);
	}
	let_credit_lapse();
}

START_TEST(test_refill_follows_use)
{
	bool pop = kernel_populates();
	size_t n = 4 * MiB, np = n / pg;
	prime();
	/* Without credit a new block comes without pages. */
	unsigned char *b = malloc(n);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(resident_pages(b, n), 0);
	/* A touched block freed: the next block of its size is populated, zero-filled. */
	memset(b, 0x5a, n);
	free_fresh(b);
	unsigned char *c = malloc(n);
	ck_assert_pages(resident_pages(c, n), (pop ? populated_pages(n) : 0));
	ck_assert(zero(c, n));
	/* The freed block stays closed, or (without the region quarantine) is part of c. */
	ck_assert(inaccessible(b) || (b >= c && b < c + n));
	/* The credit is spent: the one after that gets only what c's witness left over (if
	 * that is worth a system call: 16 pages, POPULATE_MIN_BYTES). */
	unsigned char *d = malloc(n);
	size_t left = np - populated_pages(n);
	if (!thp_always()) ck_assert_uint_eq(resident_pages(d, n), (pop && left >= 16 ? left : 0));
	/* Blocks populated and never used, not even read (a read maps the zero page, which
	 * mincore counts as use; only mincore here): their witnesses stay untouched, so
	 * rampart's own pages earn a quarter less each time and the populating dies out
	 * within a few blocks (then a block counts as less than half used and earns
	 * nothing). */
	free_fresh(c);
	size_t last = np, rounds = 0;
	for (;;) {
		unsigned char *e = malloc(n);
		ck_assert_ptr_nonnull(e);
		size_t r = resident_pages(e, n);
		free_fresh(e);
		if (!r) break;
		ck_assert_msg(r < last || (thp_always() && r == last), "round %zu: %zu pages populated after %zu",
			      rounds, r, last);
		last = r;
		ck_assert_uint_lt(++rounds, 5);
	}
	ck_assert_uint_ge(rounds, (pop ? 2 : 0));
	free_fresh(d); /* never touched: the refill now counts the program as a sparse one */
	/* Used blocks again: within POPULATE_PROBE_EVERY frees, populating is back. */
	for (int i = 0; i < POPULATE_PROBE_EVERY; i++) {
		unsigned char *t = malloc(n);
		ck_assert_ptr_nonnull(t);
		memset(t, 2, n);
		free_fresh(t);
	}
	unsigned char *f = malloc(n);
	size_t rf = resident_pages(f, n);
	if (pop) ck_assert_msg(rf >= np / 2 && rf <= np, "%zu of %zu pages populated", rf, np);
	else ck_assert_uint_eq(rf, 0);
	free_fresh(f);
}
END_TEST

/* A block of n bytes written whole and freed: credit for the next ones. */
static void touched_free(size_t n)
{
	unsigned char *a = malloc(n);
	ck_assert_ptr_nonnull(a);
	memset(a, 0x5a, n);
	free_fresh(a);
}

/* The witnesses (populate.h): a block populated on full credit, then used all but skip_head
 * bytes at its start and skip_tail at its end, and freed; the pages populated in the next
 * block of its size. */
static size_t populated_after(size_t n, size_t skip_head, size_t skip_tail)
{
	prime();
	touched_free(n);
	unsigned char *b = malloc(n);
	ck_assert_ptr_nonnull(b);
	memset(b + skip_head, 2, n - skip_head - skip_tail);
	free_fresh(b);
	unsigned char *c = malloc(n);
	ck_assert_ptr_nonnull(c);
	size_t r = resident_pages(c, n);
	free_fresh(c);
	return r;
}

/* A block used whole earns all but a sixty-fourth of the pages rampart populated back,
 * so the next one is populated as far again. One whose start stayed untouched (the top
 * of a stack) or whose end did (a buffer filled only so far) earns a quarter less. */
START_TEST(test_refill_witness)
{
	bool pop = kernel_populates();
	size_t n = 4 * MiB, w = witness(n), p = n - 2 * w, left = n - p; /* a's credit beyond b */
	size_t seen = left + ((2 * w + p - p / POPULATE_TAX_SEEN) & ~(pg - 1));
	size_t unseen = left + ((w + p - p / POPULATE_TAX_UNSEEN) & ~(pg - 1));
	ck_assert_pages(populated_after(n, 0, 0), (pop ? MIN(seen, p) / pg : 0));
	size_t top = populated_after(n, w, 0), prefix = populated_after(n, 0, w);
	if (thp_always()) {
		/* A touch anywhere in a huge-page span brings the span in: the witnesses may
		 * read as touched. Only the bound holds. */
		ck_assert_uint_le(top, p / pg);
		ck_assert_uint_le(prefix, p / pg);
	} else if (pop) {
		ck_assert_msg(top + 1 >= unseen / pg && top <= unseen / pg + 1, "%zu pages, %zu expected", top, unseen / pg);
		ck_assert_msg(prefix + 1 >= unseen / pg && prefix <= unseen / pg + 1, "%zu pages", prefix);
	} else {
		ck_assert_uint_eq(top + prefix, 0);
	}
}
END_TEST

/* Credit is what was resident, no more: a block half used buys its used half of a
 * bigger block; calloc of a populated block is still all zero; credit lapses. */
START_TEST(test_refill_bounded)
{
	bool pop = kernel_populates();
	prime();
	unsigned char *a = malloc(2 * MiB);
	ck_assert_ptr_nonnull(a);
	memset(a, 1, MiB); /* half of it */
	free_fresh(a);
	unsigned char *b = calloc(1, 8 * MiB);
	ck_assert_ptr_nonnull(b);
	ck_assert_pages(resident_pages(b, 8 * MiB), (pop ? MiB / pg : 0));
	ck_assert(zero(b, 8 * MiB));
	free_fresh(b);
	/* Lapsed: after CONFIG_LARGE_REFILL_MS the credit of a touched block is gone. */
	unsigned char *c = malloc(MiB);
	memset(c, 1, MiB);
	free_fresh(c);
	let_credit_lapse();
	unsigned char *d = malloc(MiB);
	ck_assert_uint_eq(resident_pages(d, MiB), 0);
	free_fresh(d);
}
END_TEST

/* A forked child starts without credit: what the parent freed is not the child's use
 * (a server forking workers right after freeing a big buffer would otherwise populate
 * it again in each). The parent keeps its own. */
START_TEST(test_refill_not_inherited)
{
	bool pop = kernel_populates();
	size_t n = 4 * MiB;
	prime();
	unsigned char *a = malloc(n);
	ck_assert_ptr_nonnull(a);
	memset(a, 3, n);
	free_fresh(a);
	fflush(NULL);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		unsigned char *c = malloc(n);
		_exit(c && resident_pages(c, n) == 0 ? 0 : 1);
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child's first block was populated");
	unsigned char *b = malloc(n);
	ck_assert_ptr_nonnull(b);
	ck_assert_pages(resident_pages(b, n), (pop ? populated_pages(n) : 0));
	free_fresh(b);
}
END_TEST

/* Credit never goes beyond large_refill_bytes (64 MiB by default), however much a
 * freed block had resident. */
START_TEST(test_refill_capped)
{
	bool pop = kernel_populates();
	size_t n = 96 * MiB;
	prime();
	unsigned char *a = malloc(n);
	ck_assert_ptr_nonnull(a);
	memset(a, 4, n);
	errno = 77;
	free_fresh(a); /* measures it with mincore: errno stays */
	ck_assert_int_eq(errno, 77);
	unsigned char *b = malloc(n);
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(errno, 77);
	ck_assert_pages(resident_pages(b, n), (pop ? CONFIG_LARGE_REFILL_BYTES / pg : 0));
	/* A populated block shrunk, then grown, by realloc: contents kept, the bytes beyond
	 * the shrunk end never show what was written there before (rampart hands out no
	 * stale bytes), and its free is measured on what it is then. */
	memset(b, 5, 8 * MiB);
	b = realloc(b, 8 * MiB);
	ck_assert_ptr_nonnull(b);
	b = realloc(b, 40 * MiB);
	ck_assert_ptr_nonnull(b);
	for (size_t i = 0; i < 8 * MiB; i += 4096) ck_assert_uint_eq(b[i], 5);
	ck_assert(zero(b + 8 * MiB, 32 * MiB));
	free_fresh(b);
	ck_assert_int_eq(errno, 77);
}
END_TEST

/* Bytes the kernel maps with huge pages in the VMAs that overlap [p, p + n), from
 * /proc/self/smaps (AnonHugePages). With THP "always" the block's VMA is its whole
 * region (no mark splits it); nothing else of the test has huge pages. */
static size_t huge_bytes(const void *p, size_t n)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	ck_assert_ptr_nonnull(f);
	char line[512];
	bool inside = false;
	size_t total = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi, kb;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			inside = lo < (uintptr_t)p + n && hi > (uintptr_t)p;
		else if (inside && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			total += kb * KiB;
	}
	fclose(f);
	return total;
}

/* Populated blocks get huge pages in their spans aligned to the huge page size (where
 * the kernel hands them out): fewer page faults, the same protections. Contents are
 * zero, the guards fault, a shrink that cuts a huge page closes the cut tail, a forked
 * child's writes stay its own, and a freed block is closed. Run under both backends. */
START_TEST(test_refill_huge_pages)
{
	/* Read here, not through os_huge_pages: does this kernel hand out huge pages on
	 * request, and how big are they? (The cut below needs a few in the block.) */
	char mode[80], size[32];
	sysfs_line("/sys/kernel/mm/transparent_hugepage/enabled", mode, sizeof mode);
	sysfs_line("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", size, sizeof size);
	size_t hsize = (size_t)strtoul(size, NULL, 10);
	bool huge = !strstr(mode, "[never]") && mode[0] && hsize && hsize <= 4 * MiB && kernel_populates() &&
		    prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) != 1;
	size_t n = 16 * MiB;
	prime();
	touched_free(n);
	/* A fresh region (nothing that big is cached: the block freed waits in the
	 * quarantine). */
	unsigned char *b = malloc(n);
	ck_assert_ptr_nonnull(b);
	size_t rb = resident_pages(b, n);
	if (kernel_populates() && thp_always()) ck_assert_uint_le(rb, populated_pages(n));
	else if (kernel_populates()) ck_assert_msg(rb == populated_pages(n), "%zu pages resident", rb);
	else ck_assert_uint_eq(rb, 0);
	if (huge) ck_assert_uint_ge(huge_bytes(b, n), hsize);
	ck_assert(zero(b, n));
	check_guarded(b, n);
	fill(b, n, 7);
	fflush(NULL);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		memset(b, 0x22, n);
		_exit(0);
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	check_fill(b, n, 7);
	/* Cut in the middle of a huge-page span: the tail closes, the rest is kept. */
	size_t span = huge ? hsize : 2 * MiB;
	uintptr_t mid = align_up((uintptr_t)b + span, span) + span / 2;
	size_t keep = mid - (uintptr_t)b;
	unsigned char *c = realloc(b, keep);
	ck_assert_ptr_eq(c, b);
	check_guarded(c, keep);
	for (size_t i = 0; i < keep; i += 512) ck_assert_uint_eq(c[i], (unsigned char)(7 + i / 512));
	/* Grown past its trail guard: its pages (huge ones and the split one) move. */
	unsigned char *g = realloc(c, 4 * n);
	ck_assert_ptr_nonnull(g);
	check_guarded(g, 4 * n);
	for (size_t i = 0; i < keep; i += 512) ck_assert_uint_eq(g[i], (unsigned char)(7 + i / 512));
	ck_assert(zero(g + pages(keep), 4 * n - pages(keep)));
	if (g != c) ck_assert(inaccessible(c));
	free_fresh(g);
	ck_assert(inaccessible(g));
	ck_assert(inaccessible(g + keep - 1));
	/* The memory comes back as zero to the next block, populated again. */
	unsigned char *d = calloc(1, n);
	ck_assert_ptr_nonnull(d);
	ck_assert(zero(d, n));
	free_fresh(d);
}
END_TEST

/* A block of zero bytes with a big alignment grows by realloc like any other. */
START_TEST(test_zero_size_aligned_realloc)
{
	void *v = NULL;
	ck_assert_int_eq(posix_memalign(&v, 8192, 0), 0);
	errno = 97;
	unsigned char *q = realloc(v, MiB);
	ck_assert_int_eq(errno, 97);
	ck_assert_ptr_nonnull(q);
	check_guarded(q, MiB);
	ck_assert(zero(q, MiB));
	free(q);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("large");
	TCase *t = tcase_create("large");
	tcase_set_timeout(t, 60);
	tcase_add_checked_fixture(t, setup, NULL);
	tcase_add_test(t, test_sizes);
	tcase_add_test(t, test_guards_fault);
	tcase_add_test(t, test_alignment);
	tcase_add_test(t, test_alignment_kept_by_realloc);
	tcase_add_test(t, test_realloc_shrink_in_place);
	tcase_add_test(t, test_realloc_grow_in_place);
	tcase_add_test(t, test_realloc_move);
	tcase_add_test(t, test_realloc_failure_keeps_block);
	tcase_add_test(t, test_metadata_lookups);
	tcase_add_test(t, test_quarantine);
	tcase_add_test(t, test_reuse_is_zero);
	tcase_add_test(t, test_very_large);
	tcase_add_test(t, test_zero_size_aligned_realloc);
	tcase_add_test(t, test_refill_follows_use);
	tcase_add_test(t, test_refill_bounded);
	tcase_add_test(t, test_refill_witness);
	tcase_add_test(t, test_refill_not_inherited);
	tcase_add_test(t, test_refill_capped);
	tcase_add_test(t, test_refill_huge_pages);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
