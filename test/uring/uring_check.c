/*
 * uring_check.c — rampart's blocks as io_uring fixed buffers (liburing).
 *
 *  1. Round trips: blocks from malloc, aligned_alloc and realloc — small (slab) and
 *     large, and blocks a realloc moved (slab to slab, slab to large, a large block
 *     moved with mremap) — registered with io_uring_register_buffers, written to a
 *     temporary file with WRITE_FIXED, wiped, read back with READ_FIXED; the contents
 *     are checked, and the file's too (pread).
 *  2. A large block freed while registered: free and malloc_trim return (no span
 *     leaked: the kernel closes pinned pages like any others); the region is
 *     closed (any access faults) and quarantined (64 blocks of its size allocated next
 *     are elsewhere); a READ_FIXED into the freed buffer succeeds without landing in any
 *     of them, nor in the block that gets the address once the region is reused.
 *  3. A slab block freed while registered: free returns; 256 blocks of its class
 *     allocated next are elsewhere; a READ_FIXED into the freed slot lands in no other
 *     block; the slot stays dirty, and churning the class then ends in rampart's
 *     "write after free" abort, never in handing the slot out (forked child).
 *  4. Ranges that reach into memory rampart keeps unreachable: a large block's trailing
 *     and leading guards, a slab block extended to the first unreachable page after it
 *     (the same range one page shorter registers: the control), the block of malloc(0),
 *     a freed large block. Registration must fail (the kernel answers EFAULT), and the
 *     process lives on.
 *  5. All of the above again in a child that called mlockall(MCL_CURRENT|MCL_FUTURE)
 *     first (skipped with a reason when mlockall is refused: unprivileged, small
 *     RLIMIT_MEMLOCK).
 *
 * Exits 0 when every part passed, 1 otherwise, and 77 (skipped) with a printed reason
 * when io_uring is unavailable (ENOSYS, EPERM: kernel.io_uring_disabled, seccomp).
 */
#define _GNU_SOURCE
#include <liburing.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../harness.h"
#include "../profile.h"
#include "../site.h"
#include "rampart.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define SKIPPED 77

static struct io_uring ring;
static int tfd = -1;
static size_t page;
/* The parts now run in children that call mlockall(MCL_CURRENT|MCL_FUTURE) first. */
static bool locked;

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed + i * 7 + (i >> 9));
}
static bool same(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed + i * 7 + (i >> 9))) return false;
	return true;
}
static bool zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i]) return false;
	return true;
}

/* One fixed read or write of n bytes at off through registered buffer idx, repeated
 * over short transfers; the bytes moved, or -errno. */
static long rw_fixed(bool write, void *buf, size_t n, off_t off, int idx)
{
	size_t done = 0;
	while (done < n) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		if (!sqe) return -EBUSY;
		char *b = (char *)buf + done;
		if (write) io_uring_prep_write_fixed(sqe, tfd, b, (unsigned)(n - done), off + (off_t)done, idx);
		else io_uring_prep_read_fixed(sqe, tfd, b, (unsigned)(n - done), off + (off_t)done, idx);
		int r = io_uring_submit(&ring);
		if (r != 1) return r < 0 ? r : -EIO;
		struct io_uring_cqe *cqe;
		r = io_uring_wait_cqe(&ring, &cqe);
		if (r < 0) return r;
		int res = cqe->res;
		io_uring_cqe_seen(&ring, cqe);
		if (res < 0) return res;
		if (res == 0) break;
		done += (size_t)res;
	}
	return (long)done;
}

/* The file holds the pattern at off (read with pread into a block of its own). */
static bool file_holds(size_t n, off_t off, unsigned seed)
{
	unsigned char *b = malloc(n);
	CHECK(b != NULL);
	bool ok = pread(tfd, b, n, off) == (ssize_t)n && same(b, n, seed);
	free(b);
	return ok;
}

static void put_pattern(size_t n, off_t off, unsigned seed)
{
	unsigned char *b = malloc(n);
	CHECK(b != NULL);
	fill(b, n, seed);
	CHECK(pwrite(tfd, b, n, off) == (ssize_t)n);
	free(b);
}

/* --- 1. round trips --- */

struct buf {
	const char *what;
	unsigned char *p;
	size_t n;
};

static void round_trips(void)
{
	struct rampart_stats st0, st1;
	rampart_get_stats(&st0);
	struct buf b[16];
	int nb = 0;
#define ADD(w, ptr, len) (b[nb++] = (struct buf){(w), (unsigned char *)(ptr), (len)})
	ADD("malloc 24 (slab)", malloc(24), 24);
	ADD("malloc 3000 (slab)", malloc(3000), 3000);
	ADD("malloc 120000 (largest slab classes)", malloc(120000), 120000);
	ADD("malloc 1 MiB + 123 (large)", malloc(MiB + 123), MiB + 123);
	ADD("aligned_alloc 64, 200 (slab)", aligned_alloc(64, 200), 200);
	ADD("aligned_alloc 4096, 16 KiB", aligned_alloc(4096, 16 * KiB), 16 * KiB);
	ADD("aligned_alloc 2 MiB, 256 KiB (large)", aligned_alloc(2 * MiB, 256 * KiB), 256 * KiB);

	/* realloc, slab to slab (another class: it moves). */
	unsigned char *p = malloc(40), *q;
	CHECK(p != NULL);
	fill(p, 40, 11);
	q = realloc(p, 5000);
	CHECK(q != NULL && q != p && same(q, 40, 11));
	ADD("realloc 40 -> 5000 (slab, moved)", q, 5000);

	/* realloc, slab to large. */
	p = malloc(1000);
	CHECK(p != NULL);
	fill(p, 1000, 12);
	q = realloc(p, 300 * KiB);
	CHECK(q != NULL && q != p && same(q, 1000, 12));
	ADD("realloc 1000 -> 300 KiB (slab to large)", q, 300 * KiB);

	/* realloc of a large block until it moves (mremap). */
	size_t n = 160 * KiB;
	p = malloc(n);
	CHECK(p != NULL);
	fill(p, n, 13);
	bool moved = false;
	while (!moved && n < 4 * MiB) {
		unsigned char *old = p;
		n *= 2;
		p = realloc(p, n);
		CHECK(p != NULL);
		moved = p != old;
	}
	CHECK(moved && same(p, 160 * KiB, 13));
	rampart_get_stats(&st1);
	CHECK(st1.realloc_moved > st0.realloc_moved);
	ADD("realloc large, moved with mremap", p, n);
#undef ADD

	struct iovec iov[16];
	off_t off[16], at = 0;
	for (int i = 0; i < nb; i++) {
		CHECK(b[i].p != NULL);
		iov[i] = (struct iovec){b[i].p, b[i].n};
		off[i] = at;
		at += (off_t)((b[i].n + page - 1) / page * page);
	}
	int r = io_uring_register_buffers(&ring, iov, (unsigned)nb);
	if (r) fprintf(stderr, "io_uring_register_buffers: %s\n", strerror(-r));
	CHECK(r == 0);
	for (int i = 0; i < nb; i++) {
		unsigned seed = 100 + (unsigned)i;
		fill(b[i].p, b[i].n, seed);
		CHECK(rw_fixed(true, b[i].p, b[i].n, off[i], i) == (long)b[i].n);
		memset(b[i].p, 0, b[i].n);
		CHECK(rw_fixed(false, b[i].p, b[i].n, off[i], i) == (long)b[i].n);
		if (!same(b[i].p, b[i].n, seed) || !file_holds(b[i].n, off[i], seed)) {
			fprintf(stderr, "round trip of %s: contents differ\n", b[i].what);
			CHECK(0);
		}
		/* A part in the middle of the buffer, at another file offset. */
		size_t mid = b[i].n / 3, len = b[i].n / 2;
		fill(b[i].p + mid, len, seed + 50);
		CHECK(rw_fixed(true, b[i].p + mid, len, at, i) == (long)len);
		memset(b[i].p + mid, 0, len);
		CHECK(rw_fixed(false, b[i].p + mid, len, at, i) == (long)len);
		CHECK(same(b[i].p + mid, len, seed + 50));
		printf("      round trip: %s, %zu bytes at %p\n", b[i].what, b[i].n, (void *)b[i].p);
	}
	CHECK(io_uring_unregister_buffers(&ring) == 0);
	for (int i = 0; i < nb; i++) free(b[i].p);
}

/* --- 2. a large block freed while registered --- */

/* Every large block here comes from one call site, site_malloc: with call-site
 * partitions a freed region goes back only to a large block of its own partition, so
 * blocks of another site would be elsewhere whether the quarantine held L or not, and
 * would never get its range back to show that the kernel's write stays out of it. */
static void freed_large(void)
{
	const size_t n = 512 * KiB;
	unsigned char *L = site_malloc(n);
	CHECK(L != NULL);
	fill(L, n, 21);
	struct iovec iov = {L, n};
	CHECK(io_uring_register_buffers(&ring, &iov, 1) == 0);
	CHECK(rw_fixed(true, L, n, 0, 0) == (long)n);

	struct rampart_stats s0, s1;
	rampart_get_stats(&s0);
	free(L); /* closes pinned pages: guard markers, a fresh mapping or mprotect */
	malloc_trim(0);
	rampart_get_stats(&s1);
	printf("      freed large block: guard fallbacks during its free %lu, spans leaked %lu\n",
	       s1.guard_fallbacks - s0.guard_fallbacks, s1.spans_leaked - s0.spans_leaked);
	CHECK(s1.spans_leaked == s0.spans_leaked);
	CHECK(inaccessible(L) && inaccessible(L + n - 1));

	/* Quarantined: the next blocks of its size are elsewhere. (Without the region
	 * quarantine, VARIANT=light, one may get the freed address back at once: fresh
	 * pages all the same, which the kernel's write below must not reach.) */
	enum { N = 64 };
	unsigned char *o[N];
	for (int i = 0; i < N; i++) {
		o[i] = site_malloc(n);
		CHECK(o[i] != NULL);
		CHECK(o[i] + n <= L || o[i] >= L + n || !test_region_quarantine());
		fill(o[i], n, 30 + (unsigned)i);
	}
	/* The kernel writes into the pages it pinned; none of them is any block's now. */
	put_pattern(n, (off_t)n, 22);
	CHECK(rw_fixed(false, L, n, (off_t)n, 0) == (long)n);
	for (int i = 0; i < N; i++) CHECK(same(o[i], n, 30 + (unsigned)i));
	CHECK(inaccessible(L) || !test_region_quarantine());
	for (int i = 0; i < N; i++) free(o[i]);

	/* Churn until part of the range is handed out again (after the quarantine, from
	 * the reuse cache, where regions that touch are joined and cut anew), if it is (a
	 * region closed by mprotect on locked memory is unmapped instead). That part must
	 * be fresh and stay out of the kernel's reach. Where nothing can keep the region from
	 * coming back, it must come back, or this branch would go untested (it did, while
	 * the churn was another call site than L's): with a region quarantine, and not
	 * locked. Without one (light) the malloc_trim after L's free unmapped it (from the
	 * reuse cache or the blocks kept with their pages), and the kernel's next mappings
	 * go elsewhere. */
	unsigned char *again = NULL;
	int round;
	for (round = 0; round < 2000 && !again; round++) {
		unsigned char *c[4];
		for (int i = 0; i < 4; i++) {
			c[i] = site_malloc(n);
			CHECK(c[i] != NULL);
			if (!again && c[i] < L + n && c[i] + n > L) again = c[i];
		}
		for (int i = 0; i < 4; i++)
			if (c[i] != again) free(c[i]);
	}
	if (again) {
		unsigned char *lo = again > L ? again : L, *hi = again + n < L + n ? again + n : L + n;
		CHECK(zero(lo, (size_t)(hi - lo)));
		fill(again, n, 23);
		CHECK(rw_fixed(false, L, n, (off_t)n, 0) == (long)n);
		CHECK(same(again, n, 23));
		printf("      freed large block: %zu of its bytes handed out again after %d rounds of churn, "
		       "fresh and out of the kernel's reach\n", (size_t)(hi - lo), round);
		free(again);
	} else {
		printf("      freed large block: no byte of it handed out again within %d allocations\n", 4 * round);
		CHECK(!test_region_quarantine() || locked);
	}
	CHECK(io_uring_unregister_buffers(&ring) == 0);
}

/* --- 3. a slab block freed while registered --- */

static const size_t SLAB_N = 2000;
static unsigned char *slab_freed;

/* The kernel's write after free sits in the quarantined slot: churning the class must
 * end in rampart's abort (the slot is found written when handed out again, or when a
 * neighbour is freed), never in handing out the slot. In the process that freed it: a
 * child after fork never gets the parent's quarantined slots back (docs/slab.md, "How
 * long a freed slot waits"). */
static void churn_class(void)
{
	for (int round = 0; round < 2000; round++) {
		unsigned char *c[128];
		for (int i = 0; i < 128; i++) {
			c[i] = site_malloc(SLAB_N);
			if (!c[i]) _exit(2);
			if (c[i] == slab_freed) {
				fprintf(stderr, "the slot the kernel wrote into was handed out\n");
				_exit(3);
			}
		}
		for (int i = 0; i < 128; i++) free(c[i]);
	}
}

static void freed_slab(void)
{
	unsigned char *S = site_malloc(SLAB_N); /* the churn's site: with partitions, only it takes the slot back */
	CHECK(S != NULL);
	fill(S, SLAB_N, 41);
	struct iovec iov = {S, SLAB_N};
	CHECK(io_uring_register_buffers(&ring, &iov, 1) == 0);
	CHECK(rw_fixed(true, S, SLAB_N, 0, 0) == (long)SLAB_N);
	free(S);
	malloc_trim(0);

	enum { N = 256 };
	unsigned char *o[N];
	for (int i = 0; i < N; i++) {
		o[i] = site_malloc(SLAB_N); /* S's site: only it could take S's slot back */
		CHECK(o[i] != NULL);
		CHECK(o[i] + SLAB_N <= S || o[i] >= S + SLAB_N);
		fill(o[i], SLAB_N, 50 + (unsigned)i);
	}
	put_pattern(SLAB_N, 4096, 42);
	CHECK(rw_fixed(false, S, SLAB_N, 4096, 0) == (long)SLAB_N);
	for (int i = 0; i < N; i++) CHECK(same(o[i], SLAB_N, 50 + (unsigned)i));
	CHECK(io_uring_unregister_buffers(&ring) == 0);

	slab_freed = S;
	if (test_waf_check()) churn_class();
	/* Without the check this process keeps the dirty slot: its blocks stay allocated so
	 * no free of a neighbour looks at it, and the class is not used again here. */
}

/* --- 4. ranges reaching into guards --- */

static int try_register(const char *what, void *base, size_t len)
{
	struct iovec iov = {base, len};
	int r = io_uring_register_buffers(&ring, &iov, 1);
	printf("      register %s (%zu bytes at %p): %s\n", what, len, base, r ? strerror(-r) : "registered");
	if (!r) CHECK(io_uring_unregister_buffers(&ring) == 0);
	return r;
}

static void guard_ranges(void)
{
	/* A large block: its trailing and its leading guard. */
	const size_t n = 256 * KiB;
	unsigned char *L = malloc(n);
	CHECK(L != NULL);
	size_t u = malloc_usable_size(L);
	CHECK(u >= n && inaccessible(L + u) && inaccessible(L - 1));
	CHECK(try_register("a large block", L, u) == 0);
	CHECK(try_register("a large block and one page of its trailing guard", L, u + page) < 0);
	CHECK(try_register("a large block and one byte of its trailing guard", L, u + 1) < 0);
	CHECK(try_register("the last page of the leading guard and a large block", L - page, u + page) < 0);
	fill(L, u, 61); /* still intact and usable */
	CHECK(same(L, u, 61));

	/* A slab block extended to the first unreachable page after it. */
	unsigned char *S = malloc(1000);
	CHECK(S != NULL);
	uintptr_t pg = ((uintptr_t)S + 1000 + page - 1) & ~(uintptr_t)(page - 1);
	size_t scanned = 0;
	while (!inaccessible((void *)pg) && scanned < 1 << 16) {
		pg += page;
		scanned++;
	}
	CHECK(scanned < 1 << 16);
	size_t reach = pg - (uintptr_t)S;
	printf("      first unreachable page after the slab block: %zu bytes on\n", reach);
	CHECK(try_register("a slab block up to the unreachable page (control)", S, reach) == 0);
	CHECK(try_register("a slab block into the unreachable page", S, reach + 1) < 0);
	CHECK(try_register("a slab block over the whole unreachable page", S, reach + page) < 0);

	/* malloc(0): never accessible. */
	unsigned char *z = malloc(0);
	CHECK(z != NULL);
	CHECK(try_register("the block of malloc(0)", z, 1) < 0);

	/* A freed (closed, quarantined) large block. */
	unsigned char *F = malloc(n);
	CHECK(F != NULL);
	free(F);
	CHECK(try_register("a freed large block", F, n) < 0);

	/* The process lives and the allocator works. */
	fill(S, 1000, 62);
	CHECK(same(S, 1000, 62) && same(L, u, 61));
	free(z);
	free(S);
	free(L);
}

/* --- driver --- */

/* Runs fn in a child; 0 passed, 1 failed, 2 skipped (the child exited with SKIPPED). */
static int run(const char *name, void (*fn)(void))
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) return 1;
	if (pid == 0) {
		quiet_child();
		alarm(120);
		if (locked && mlockall(MCL_CURRENT | MCL_FUTURE)) {
			fprintf(stderr, "mlockall: %s\n", strerror(errno));
			_exit(1);
		}
		fn();
		if (locked) printf("      guard backend under mlockall: %s\n", rampart_guard_backend());
		fflush(stdout);
		_exit(0);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	bool skipped = WIFEXITED(st) && WEXITSTATUS(st) == SKIPPED;
	bool ok = WIFEXITED(st) && (WEXITSTATUS(st) == 0 || skipped);
	if (WIFSIGNALED(st)) printf("FAIL  %s: killed by signal %d (%s)\n", name, WTERMSIG(st), strsignal(WTERMSIG(st)));
	else printf("%s  %s%s\n", skipped ? "skip" : ok ? "ok  " : "FAIL", name, ok ? "" : " (see stderr)");
	fflush(stdout);
	return skipped ? 2 : !ok;
}

/* Each part's child makes a ring of its own. */
static void setup(void)
{
	int r = io_uring_queue_init(8, &ring, 0);
	if (r) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-r));
		_exit(1);
	}
}

static void part_round_trips(void) { setup(); round_trips(); }
static void part_freed_large(void) { setup(); freed_large(); }
/* A death case of its own (the churn ends in the abort), so the mlockall that run()
 * makes for the locked parts is made here. */
static void part_freed_slab(void)
{
	if (locked && mlockall(MCL_CURRENT | MCL_FUTURE)) {
		fprintf(stderr, "mlockall: %s\n", strerror(errno));
		_exit(1);
	}
	setup();
	freed_slab();
}
static void part_guard_ranges(void) { setup(); guard_ranges(); }

/* Can this process lock its memory, and the tens of MiB the parts allocate? Asked in a
 * child (locks are not inherited); unprivileged, mlockall itself succeeds under a small
 * RLIMIT_MEMLOCK and only the allocations after it fail. */
static void probe_mlockall(void)
{
	if (!may_lock((size_t)64 << 20)) {
		printf("      locked parts need root (CAP_IPC_LOCK) or an RLIMIT_MEMLOCK of 64 MiB (uid %d): skipped\n",
		       (int)getuid());
		fflush(stdout);
		_exit(SKIPPED);
	}
	if (mlockall(MCL_CURRENT | MCL_FUTURE)) {
		printf("      mlockall(MCL_CURRENT|MCL_FUTURE): %s (uid %d): the locked parts are skipped\n",
		       strerror(errno), (int)getuid());
		fflush(stdout);
		_exit(SKIPPED);
	}
}

static int failed;

static void all_parts(void)
{
	const char *pre = locked ? "mlockall: " : "";
	char name[192];
	snprintf(name, sizeof name, "%sround trips through fixed buffers", pre);
	failed += 1 == run(name, part_round_trips);
	snprintf(name, sizeof name, "%slarge block freed while registered", pre);
	failed += 1 == run(name, part_freed_large);
	snprintf(name, sizeof name, "%sslab block freed while registered", pre);
	/* Without the slot quarantine (profile light) the freed slot is the next one handed
	 * out, and the kernel's write lands in that block: nothing here to keep it off. */
	if (test_slot_quarantine() && test_waf_check()) {
		strncat(name, ", written by the kernel after free, then the class churned", sizeof name - strlen(name) - 1);
		struct death_case c = {name, part_freed_slab, DIE_FATAL, "write after free"};
		failed += !death_run(&c);
	} else if (test_slot_quarantine()) {
		failed += 1 == run(name, part_freed_slab);
	} else printf("n/a   %s: no slot quarantine in this process (slot_quarantine_bytes=0)\n", name);
	snprintf(name, sizeof name, "%sranges reaching into guards fail to register", pre);
	failed += 1 == run(name, part_guard_ranges);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	page = (size_t)sysconf(_SC_PAGESIZE);
	int r = io_uring_queue_init(8, &ring, 0);
	if (r == -ENOSYS || r == -EPERM || r == -EACCES) {
		test_skip("io_uring_queue_init: %s (kernel.io_uring_disabled, seccomp or an old kernel)", strerror(-r));
	}
	if (r) {
		printf("uring_check: io_uring_queue_init: %s\n", strerror(-r));
		return 1;
	}
	io_uring_queue_exit(&ring);

	const char *dir = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof path, "%s/rampart-uring-XXXXXX", dir && *dir ? dir : "/tmp");
	tfd = mkstemp(path);
	if (tfd < 0) {
		printf("uring_check: mkstemp %s: %s\n", path, strerror(errno));
		return 1;
	}
	unlink(path);

	printf("guard backend: %s\n", rampart_guard_backend());
	all_parts();
	/* Again, each part in a child that calls mlockall(MCL_CURRENT|MCL_FUTURE) first. */
	if (run("mlockall(MCL_CURRENT|MCL_FUTURE) possible", probe_mlockall) == 0) {
		locked = true;
		all_parts();
	}
	printf("uring_check: %s\n", failed ? "FAILED" : "passed");
	return failed ? 1 : 0;
}
