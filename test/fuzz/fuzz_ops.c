/*
 * fuzz_ops.c — an operation-sequence fuzzer for rampart's public interface, checked
 * against a shadow model. The input (format in fuzz_ops.h) is a program of malloc,
 * calloc, realloc, reallocarray, aligned_alloc, posix_memalign, memalign, valloc,
 * pvalloc, free, free_sized, free_aligned_sized, malloc_usable_size,
 * malloc_object_size and malloc_trim calls on a table of at most FUZZ_SLOTS live
 * blocks. The program is always correct (no double free, no access out of bounds, the
 * right size to the sized frees): the fuzzer looks for an allocator that misbehaves
 * on a correct program. Checked after every call:
 *
 *  - contents: every block holds a pattern derived from its seed and the byte offset;
 *    it is verified whenever an operation touches the block, over what realloc keeps
 *    (min(old, new)), before every free, after malloc_trim and at the end of the input;
 *  - sizes: malloc_usable_size >= the request; exactly the class's usable size for a
 *    slab block (docs/slab.md "Size classes", make sizeclass-table); whole pages
 *    for a large one; malloc_object_size = usable - offset (0 at the end, 0 for
 *    pointers that are not rampart's). A program told the usable size then uses all
 *    of it, so the pattern covers it and realloc must keep it;
 *  - alignment: 16 bytes for every block, the alignment asked for by the aligned
 *    functions (for aligned_alloc and memalign, rounded up to a power of two as glibc
 *    does), the page for valloc and pvalloc;
 *  - calloc: zeros over the request (and over the usable size when asked);
 *  - failures: an impossible size (>= 2^47, or a product that overflows) gives NULL
 *    and ENOMEM, a realloc that fails leaves the block as it was; a bad alignment
 *    gives EINVAL (posix_memalign returns it, leaving *out alone: any alignment that is
 *    no power of two multiple of sizeof(void *); aligned_alloc and memalign: only one
 *    above 2^63, which no power of two holds); nothing that can be served fails;
 *  - errno: no successful call and no free changes it;
 *  - no block handed out overlaps a live one.
 *
 * Linking (see test/check.mk, "Fuzzing"): the fuzzer is linked with librampart.a and
 * calls the public names, without AddressSanitizer. ASan (like TSan) replaces malloc,
 * which would take rampart out of the picture or fight it over the same symbols; here
 * the executable's own malloc, free, operator new... are rampart's, so libFuzzer's
 * allocations (its corpus, its C++ containers) run on rampart too: an allocator bug
 * that corrupts them shows up as well. Interface bugs such as an errno clobbered by an
 * internal call can only be seen through the public names, not through the internal
 * entry points of src/front/api.h. The library and this file are built with libFuzzer's
 * coverage instrumentation (-fsanitize=fuzzer-no-link) and UBSan in trap mode, which
 * needs no runtime (the full runtime calls malloc before getenv works, so rampart
 * would miss RAMPART_OPTIONS; the minimal one is refused with the fuzzer).
 *
 * A failed check prints one line and calls abort(): libFuzzer's handler saves the
 * input. rampart's own fatal errors reset SIGABRT to its default action first, so
 * libFuzzer cannot save those inputs; with FUZZ_LAST_INPUT=path in the environment each
 * input is first written to that file, and `make fuzz` keeps it as a crash artifact
 * when the run dies that way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_ops.h"
#include "rampart.h"
#include "slab/sizeclass.h"

/* glibc declares it; musl does not. */
void *pvalloc(size_t size);

#ifndef CONFIG_SMALL_MAX
#error "CONFIG_SMALL_MAX is not set: compile with config.mk's CONFIG_CPPFLAGS"
#endif
/* The largest request served by the slab allocator (as src/front/api.c computes it). */
#define SMALL_MAX (CONFIG_SMALL_MAX < SC_MAX_REQUEST ? (size_t)CONFIG_SMALL_MAX : SC_MAX_REQUEST)

/* Sizes at or above this can never be served (the address space is 2^47 bytes);
 * every size the input can ask for is either below FUZZ_POSSIBLE_MAX or at least this. */
#define IMPOSSIBLE_MIN ((size_t)1 << 47)
#define FUZZ_POSSIBLE_MAX ((size_t)64 << 20)
#define LARGE_FUZZ_MAX (((size_t)4 << 20) + 4096)
/* rampart honours alignments up to 1 GiB; beyond, ENOMEM. */
#define MAX_ALIGN ((size_t)1 << 30)
/* errno before every call: a call that must leave errno alone leaves this. */
#define SENTINEL 0x5a5a

enum kind {
	K_PLAIN,   /* malloc, calloc, realloc, reallocarray: free_sized(p, req) */
	K_ALIGNED, /* aligned_alloc, memalign, posix_memalign: free_aligned_sized(p, align, req) */
	K_VALLOC,  /* free_aligned_sized(p, page, req) */
	K_PVALLOC, /* free only; req is the size rounded up to pages */
};

struct block {
	unsigned char *p; /* NULL: the slot is empty */
	size_t req;       /* the size asked for (what the sized frees pass) */
	size_t align;     /* the alignment asked for (K_ALIGNED, K_VALLOC, K_PVALLOC) */
	size_t len;       /* bytes the program uses, all holding the pattern */
	uint64_t seed;
	enum kind kind;
};

static struct block table[FUZZ_SLOTS];
static uint64_t seeds;
static size_t page;
/* Where we are, for the failure message. */
static size_t op_no;
static unsigned op_kind, op_slot;
static const char *const op_names[OP_COUNT] = {
	"malloc", "calloc", "realloc", "reallocarray", "aligned_alloc", "posix_memalign", "memalign",
	"valloc", "pvalloc", "free", "malloc_usable_size", "malloc_object_size", "write", "malloc_trim",
};

/* Things that are not rampart's, for malloc_object_size. */
static int a_global;
static const char a_literal[] = "not a heap block";

static __attribute__((noreturn, format(printf, 1, 2))) void fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "fuzz_ops: FAILED at operation %zu (%s, slot %u): %s\n", op_no,
		op_kind < OP_COUNT ? op_names[op_kind] : "end of input", op_slot, msg);
	abort();
}

/* --- the input ------------------------------------------------------------------- */

struct reader {
	const uint8_t *p, *end;
};

static uint8_t byte(struct reader *r) { return r->p < r->end ? *r->p++ : 0; }
static size_t u16(struct reader *r)
{
	size_t lo = byte(r);
	return lo | (size_t)byte(r) << 8;
}
static size_t u24(struct reader *r)
{
	size_t lo = u16(r);
	return lo | (size_t)byte(r) << 16;
}

static size_t impossible_size(unsigned i)
{
	const size_t table_[] = {
		SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - page + 1, SIZE_MAX - page, SIZE_MAX / 2,
		SIZE_MAX / 2 + 1, ((size_t)1 << 62) + 1, (size_t)1 << 62, ((size_t)1 << 62) - 1,
		(size_t)1 << 48, IMPOSSIBLE_MIN, IMPOSSIBLE_MIN + 1, PTRDIFF_MAX - 15,
	};
	return table_[i % (sizeof table_ / sizeof *table_)];
}

static size_t minus_plus(size_t base, unsigned delta) /* base - 2 .. base + 2, not below 0 */
{
	size_t d = delta % 5;
	return d < 2 && base < 2 - d ? 0 : base + d - 2;
}

static size_t read_size(struct reader *r)
{
	switch (byte(r) % SZ_COUNT) {
	case SZ_BYTE:
		return byte(r);
	case SZ_CLASS:
	case SZ_CLASS2: {
		unsigned c = byte(r) % SC_COUNT;
		return minus_plus(sc_usable(c), byte(r));
	}
	case SZ_U16:
		return u16(r);
	case SZ_PAGES: {
		size_t n = u16(r) % 1025;
		return minus_plus(n * page, byte(r));
	}
	case SZ_LARGE:
		return u24(r) % (LARGE_FUZZ_MAX + 1);
	case SZ_IMPOSSIBLE:
		return impossible_size(byte(r));
	default: /* SZ_EDGE */
		return SC_MAX_REQUEST - 16 + byte(r) % 64;
	}
}

/* n and m for calloc and reallocarray; *overflow when n * m does not fit. */
static void read_pair(struct reader *r, size_t *n, size_t *m, bool *overflow)
{
	static const size_t big[][2] = {
		{SIZE_MAX, 2}, {SIZE_MAX / 2 + 1, 2}, {(size_t)1 << 32, (size_t)1 << 32},
		{(size_t)1 << 33, ((size_t)1 << 31) + 1}, {SIZE_MAX, SIZE_MAX}, {3, SIZE_MAX / 3 + 1},
	};
	switch (byte(r) % PAIR_COUNT) {
	case PAIR_ONE_N:
		*n = 1, *m = read_size(r);
		break;
	case PAIR_N_ONE:
		*n = read_size(r), *m = 1;
		break;
	case PAIR_SMALL_N: {
		*n = byte(r) % 16 + 1;
		size_t s = read_size(r);
		*m = s >= IMPOSSIBLE_MIN ? s : s / *n;
		break;
	}
	default: { /* PAIR_OVERFLOW */
		unsigned i = byte(r) % (sizeof big / sizeof *big);
		*n = big[i][0], *m = big[i][1];
	}
	}
	size_t total;
	*overflow = __builtin_mul_overflow(*n, *m, &total);
}

/* An alignment: a power of two 2^0..2^30, or (one byte in eight) a bad one. */
static size_t read_align(struct reader *r)
{
	static const size_t bad[] = {
		0, 3, 5, 12, 24, 48, 96, 4095, 4097, (size_t)1 << 31, (size_t)1 << 40,
		SIZE_MAX, SIZE_MAX / 2 + 1, ((size_t)1 << 20) + 16,
	};
	uint8_t b = byte(r);
	if (b % 8 == 7) return bad[byte(r) % (sizeof bad / sizeof *bad)];
	return (size_t)1 << (byte(r) % 31);
}

static bool is_pow2(size_t x) { return x && !(x & (x - 1)); }

/* The alignment aligned_alloc and memalign serve for the one asked (glibc's rounding):
 * the power of two at or above it (0 asks for none: 1); 0 when there is none. */
static size_t served_align(size_t align)
{
	if (!align) return 1;
	size_t a = 1;
	while (a < align && a <= SIZE_MAX / 2) a <<= 1;
	return a >= align ? a : 0;
}

/* --- the pattern ------------------------------------------------------------------- */

/* The loops over block contents are not coverage points: instrumented, every
 * comparison of the pattern check went through libFuzzer's hooks, and filling and
 * checking took three times the whole run. Not inlined either: the attribute is the
 * function's, and a copy inlined into an instrumented caller would be instrumented.
 * __builtin_memcpy: the tests are built with -fno-builtin, which would make every
 * 8-byte copy a call. */
#ifdef __clang__
#define NO_COVERAGE __attribute__((noinline, no_sanitize("coverage")))
#else
#define NO_COVERAGE __attribute__((noinline))
#endif

/* Word k of a block's pattern is period[k % PERIOD] ^ key(seed): every block differs
 * (its seed), every offset within 4 KiB differs, and filling or checking is a load, an
 * exclusive-or and a store or compare per word. PERIOD words is not a divisor of a page,
 * so a block moved by whole pages would not check out either. */
#define PERIOD 521u
static uint64_t period[PERIOD];

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static void pattern_init(void)
{
	for (unsigned i = 0; i < PERIOD; i++) period[i] = mix(0x243f6a8885a308d3u + i * 0x9e3779b97f4a7c15u);
}

static inline uint64_t key(uint64_t seed) { return mix(seed * 0xd1342543de82ef95u + 1); }

static inline unsigned char pattern_byte(uint64_t seed, size_t i)
{
	uint64_t w = period[i / 8 % PERIOD] ^ key(seed);
	unsigned char b[8];
	__builtin_memcpy(b, &w, 8);
	return b[i % 8];
}

static NO_COVERAGE void fill(unsigned char *p, uint64_t seed, size_t from, size_t to)
{
	size_t i = from;
	for (; i < to && i % 8; i++) p[i] = pattern_byte(seed, i);
	uint64_t k = key(seed);
	for (size_t j = i / 8 % PERIOD; i + 8 <= to; j = 0) {
		size_t n = (to - i) / 8;
		if (n > PERIOD - j) n = PERIOD - j;
		for (size_t t = 0; t < n; t++) {
			uint64_t w = period[j + t] ^ k;
			__builtin_memcpy(p + i + 8 * t, &w, 8);
		}
		i += 8 * n;
	}
	for (; i < to; i++) p[i] = pattern_byte(seed, i);
}

static NO_COVERAGE void verify_range(const unsigned char *p, uint64_t seed, size_t from, size_t to, const char *when)
{
	size_t i = from;
	for (; i < to && i % 8; i++)
		if (p[i] != pattern_byte(seed, i)) goto bad;
	uint64_t k = key(seed);
	for (size_t j = i / 8 % PERIOD; i + 8 <= to; j = 0) {
		size_t n = (to - i) / 8;
		if (n > PERIOD - j) n = PERIOD - j;
		uint64_t diff = 0;
		for (size_t t = 0; t < n; t++) {
			uint64_t got;
			__builtin_memcpy(&got, p + i + 8 * t, 8);
			diff |= got ^ period[j + t] ^ k;
		}
		if (diff) break; /* the bytes below find which */
		i += 8 * n;
	}
	for (; i < to; i++)
		if (p[i] != pattern_byte(seed, i)) goto bad;
	return;
bad:
	fail("%s: byte %zu of %zu at %p is 0x%02x, expected 0x%02x", when, i, to, (void *)p, p[i],
	     pattern_byte(seed, i));
}

static void verify(const struct block *b, const char *when) { verify_range(b->p, b->seed, 0, b->len, when); }

static NO_COVERAGE void expect_zero(const unsigned char *p, size_t from, size_t to, const char *what)
{
	size_t i = from;
	for (; i < to && i % 8; i++)
		if (p[i]) goto bad;
	for (; i + 8 <= to; i += 8) {
		uint64_t w;
		__builtin_memcpy(&w, p + i, 8);
		if (w) break;
	}
	for (; i < to; i++)
		if (p[i]) goto bad;
	return;
bad:
	fail("%s: byte %zu of %zu at %p is 0x%02x, expected 0", what, i, to, (void *)p, p[i]);
}

/* --- the model ------------------------------------------------------------------- */

static void expect_errno(int want, const char *call)
{
	if (errno != want)
		fail("%s left errno %d (%s), expected %d (%s)", call, errno, strerror(errno), want,
		     want == SENTINEL ? "unchanged" : strerror(want));
}

/* The class that serves size bytes with that alignment (0: none asked), SC_COUNT for
 * a large block: docs/slab.md "Size classes" (aligned requests up to a page take the smallest
 * class whose slot size is a multiple of the alignment). */
static unsigned class_of(size_t size, size_t align)
{
	if (align <= 16) return size <= SMALL_MAX ? sc_of(size) : SC_COUNT;
	if (align > page || size > SMALL_MAX) return SC_COUNT;
	unsigned c = sc_of_aligned(size, align);
	return c < SC_COUNT && sc_usable(c) <= SMALL_MAX + SC_CANARY ? c : SC_COUNT;
}

/* A block just handed out: not NULL, aligned, errno alone, overlapping nothing live. */
static NO_COVERAGE void check_new(const void *p, size_t align, size_t len, unsigned self, const char *call)
{
	if (!p) fail("%s returned NULL (errno %d) for a request that can be served", call, errno);
	expect_errno(SENTINEL, call);
	uintptr_t a = (uintptr_t)p;
	if (a % 16) fail("%s returned %p, not 16-byte aligned", call, p);
	if (align && a % align) fail("%s returned %p, not aligned to %zu", call, p, align);
	uintptr_t end = a + (len ? len : 1);
	for (unsigned i = 0; i < FUZZ_SLOTS; i++) {
		const struct block *o = &table[i];
		if (i == self || !o->p) continue;
		uintptr_t oa = (uintptr_t)o->p, oend = oa + (o->len ? o->len : 1);
		if (a < oend && oa < end)
			fail("%s returned %p (%zu bytes), which overlaps the live block %p (%zu bytes) of slot %u",
			     call, p, len, (void *)o->p, o->len, i);
	}
}

static void release(unsigned s, unsigned how)
{
	struct block *b = &table[s];
	verify(b, "before free");
	errno = SENTINEL;
	const char *call = "free";
	if (how % 2 == 0 || b->kind == K_PVALLOC) {
		free(b->p);
	} else if (b->kind == K_PLAIN) {
		call = "free_sized";
		free_sized(b->p, b->req);
	} else {
		call = "free_aligned_sized";
		free_aligned_sized(b->p, b->kind == K_VALLOC ? page : b->align, b->req);
	}
	expect_errno(SENTINEL, call);
	b->p = NULL;
}

static void make_room(unsigned s)
{
	if (table[s].p) release(s, (unsigned)table[s].seed);
}

/* Records a new block in slot s (already checked) and gives it its pattern. */
static void record(unsigned s, void *p, size_t req, size_t align, size_t len, enum kind kind)
{
	struct block *b = &table[s];
	*b = (struct block){.p = p, .req = req, .align = align, .len = len, .seed = ++seeds, .kind = kind};
	fill(b->p, b->seed, 0, b->len);
}

/* The program learnt that it may use usable bytes: it does, from now on. */
static void widen(struct block *b, size_t usable)
{
	if (usable <= b->len) return;
	fill(b->p, b->seed, b->len, usable);
	b->len = usable;
}

/* malloc_usable_size, checked against the model; the block is widened to it. */
static size_t usable_of(struct block *b)
{
	errno = SENTINEL;
	size_t u = malloc_usable_size(b->p);
	expect_errno(SENTINEL, "malloc_usable_size");
	if (u < b->len) fail("malloc_usable_size(%p) = %zu, less than the %zu bytes in use", (void *)b->p, u, b->len);
	size_t need = b->req;
	size_t align = b->kind == K_PLAIN ? 0 : b->kind == K_ALIGNED ? served_align(b->align) : page;
	unsigned c = class_of(need, align);
	if (c < SC_COUNT && u != sc_usable(c))
		fail("malloc_usable_size(%p) = %zu for %zu bytes aligned to %zu: expected class %u's %zu",
		     (void *)b->p, u, need, align, c, sc_usable(c));
	if (c == SC_COUNT && u % page)
		fail("malloc_usable_size(%p) = %zu for a large block of %zu bytes: not whole pages", (void *)b->p, u, need);
	return u;
}

/* --- the operations ----------------------------------------------------------------- */

static void op_malloc(unsigned s, size_t size)
{
	make_room(s);
	errno = SENTINEL;
	void *p = malloc(size);
	if (size >= IMPOSSIBLE_MIN) {
		if (p) fail("malloc(%zu) returned %p, expected NULL", size, p);
		expect_errno(ENOMEM, "malloc");
		return;
	}
	check_new(p, 0, size, s, "malloc");
	record(s, p, size, 0, size, K_PLAIN);
}

static void op_calloc(unsigned s, size_t n, size_t m, bool overflow, uint8_t flags)
{
	make_room(s);
	errno = SENTINEL;
	unsigned char *p = calloc(n, m);
	if (overflow || n * m >= IMPOSSIBLE_MIN) {
		if (p) fail("calloc(%zu, %zu) returned %p, expected NULL", n, m, (void *)p);
		expect_errno(ENOMEM, "calloc");
		return;
	}
	size_t size = n * m;
	check_new(p, 0, size, s, "calloc");
	expect_zero(p, 0, size, "calloc");
	record(s, p, size, 0, size, K_PLAIN);
	if (flags & 1) { /* the slack a program learns about must be zero too (README) */
		struct block *b = &table[s];
		errno = SENTINEL;
		size_t u = malloc_usable_size(p);
		expect_errno(SENTINEL, "malloc_usable_size");
		if (u < size) fail("malloc_usable_size(%p) = %zu after calloc of %zu", (void *)p, u, size);
		expect_zero(p, size, u, "calloc slack");
		widen(b, u);
	}
}

/* realloc(p, size), or reallocarray(p, n, m) when pair (size = n * m unless overflow). */
static void op_realloc(unsigned s, size_t size, bool pair, size_t n, size_t m, bool overflow)
{
	struct block *b = &table[s];
	const char *call = pair ? "reallocarray" : "realloc";
	if (b->p) verify(b, call);
	errno = SENTINEL;
	unsigned char *q = pair ? reallocarray(b->p, n, m) : realloc(b->p, size);
	if (overflow || size >= IMPOSSIBLE_MIN) {
		if (q) fail("%s(%p, %zu) returned %p, expected NULL", call, (void *)b->p, size, (void *)q);
		expect_errno(ENOMEM, call);
		if (b->p) verify(b, "after a failed realloc"); /* still there, unchanged */
		return;
	}
	if (b->p && size == 0) { /* frees it and returns NULL (glibc's choice) */
		if (q) fail("%s(%p, 0) returned %p, expected NULL (the block freed)", call, (void *)b->p, (void *)q);
		expect_errno(SENTINEL, call);
		b->p = NULL;
		return;
	}
	check_new(q, 0, size, s, call);
	if (!b->p) {
		record(s, q, size, 0, size, K_PLAIN);
		return;
	}
	size_t keep = b->len < size ? b->len : size;
	b->p = q;
	verify_range(q, b->seed, 0, keep, "contents kept by realloc");
	fill(q, b->seed, keep, size);
	b->req = b->len = size;
	b->align = 0;
	b->kind = K_PLAIN;
}

/* aligned_alloc and memalign through pointers the compiler cannot see through: glibc
 * declares them alloc_align(1), and under UBSan a call whose alignment is 0 (served, as
 * glibc serves it) is itself reported as undefined (alignment-assumption) in the caller. */
static void *(*volatile memalign_of)(size_t, size_t) = memalign;
static void *(*volatile aligned_alloc_of)(size_t, size_t) = aligned_alloc;

enum aligned_fn { FN_ALIGNED_ALLOC, FN_POSIX_MEMALIGN, FN_MEMALIGN, FN_VALLOC, FN_PVALLOC };

static void op_aligned(unsigned s, enum aligned_fn fn, size_t align, size_t size)
{
	static const char *const names[] = {"aligned_alloc", "posix_memalign", "memalign", "valloc", "pvalloc"};
	const char *call = names[fn];
	make_room(s);
	void *p = NULL, *const untouched = (void *)(uintptr_t)0x5eed;
	int ret = 0;
	errno = SENTINEL;
	switch (fn) {
	case FN_ALIGNED_ALLOC: p = aligned_alloc_of(align, size); break;
	case FN_MEMALIGN: p = memalign_of(align, size); break;
	case FN_VALLOC: p = valloc(size); break;
	case FN_PVALLOC: p = pvalloc(size); break;
	case FN_POSIX_MEMALIGN:
		p = untouched;
		ret = posix_memalign(&p, align, size);
		break;
	}
	if (fn == FN_VALLOC || fn == FN_PVALLOC) align = page;
	/* What must go wrong, if anything. posix_memalign refuses what POSIX forbids;
	 * aligned_alloc and memalign round up, as glibc does. */
	int want = 0;
	size_t served = fn == FN_POSIX_MEMALIGN ? align : served_align(align);
	if (fn == FN_POSIX_MEMALIGN && (!is_pow2(align) || align % sizeof(void *))) want = EINVAL;
	else if (!served) want = EINVAL;
	else if (served > MAX_ALIGN || size >= IMPOSSIBLE_MIN) want = ENOMEM;
	if (fn == FN_POSIX_MEMALIGN) {
		if (ret != want)
			fail("posix_memalign(%zu, %zu) returned %d (%s), expected %d", align, size, ret, strerror(ret), want);
		if (want) {
			if (p != untouched) fail("posix_memalign failed with %d but changed *out to %p", ret, p);
			return;
		}
	} else if (want) {
		if (p) fail("%s(%zu, %zu) returned %p, expected NULL", call, align, size, p);
		expect_errno(want, call);
		return;
	}
	size_t len = size;
	if (fn == FN_PVALLOC) len = size ? (size + page - 1) / page * page : page;
	check_new(p, served, len, s, call);
	/* The alignment asked for: what free_aligned_sized is given back. */
	record(s, p, len, align, len, fn == FN_VALLOC ? K_VALLOC : fn == FN_PVALLOC ? K_PVALLOC : K_ALIGNED);
}

static void op_object_size(unsigned s, uint8_t where, size_t x)
{
	struct block *b = &table[s];
	int local = 0;
	if (where % 4 == 3 || !b->p) { /* pointers that are not rampart's: 0 */
		const void *const foreign[] = {NULL, &local, &a_global, a_literal, a_literal + 5};
		const void *f = foreign[x % (sizeof foreign / sizeof *foreign)];
		errno = SENTINEL;
		size_t n = malloc_object_size(f);
		expect_errno(SENTINEL, "malloc_object_size");
		if (n) fail("malloc_object_size(%p), not a heap pointer, = %zu, expected 0", f, n);
		return;
	}
	verify(b, "malloc_object_size");
	size_t off = where % 4 == 0 ? x % (b->len + 1) : where % 4 == 1 ? 0 : b->len;
	/* Without canaries a small block's end is the next slot's start, and answered as
	 * that (README, "malloc_object_size"): not this block's question. */
	if (!SC_CANARY && off >= usable_of(b) && usable_of(b) <= SC_MAX_REQUEST) return;
	errno = SENTINEL;
	size_t n = malloc_object_size(b->p + off);
	expect_errno(SENTINEL, "malloc_object_size");
	size_t u = usable_of(b);
	size_t want = off < u ? u - off : 0;
	if (n != want)
		fail("malloc_object_size(%p + %zu) = %zu, expected %zu (usable size %zu)", (void *)b->p, off, n, want, u);
	widen(b, u);
}

/* Runs the records of the input; returns how many. */
size_t fuzz_run(const uint8_t *data, size_t size)
{
	static int trace = -1; /* FUZZ_TRACE=1: one line per operation on stderr */
	if (trace < 0) trace = getenv("FUZZ_TRACE") != NULL;
	if (!page) {
		page = (size_t)sysconf(_SC_PAGESIZE);
		pattern_init();
	}
	struct reader r = {data, data + size};
	size_t ops = 0;
	seeds = 0;
	for (unsigned i = 0; i < FUZZ_SLOTS; i++)
		if (table[i].p) fail("slot %u not empty at the start of an input", i);
	while (r.p < r.end) {
		op_no = ops++;
		op_kind = byte(&r) % OP_COUNT;
		unsigned s = op_slot = byte(&r) % FUZZ_SLOTS;
		struct block *b = &table[s];
		switch (op_kind) {
		case OP_MALLOC:
			op_malloc(s, read_size(&r));
			break;
		case OP_CALLOC: {
			size_t n, m;
			bool overflow;
			read_pair(&r, &n, &m, &overflow);
			op_calloc(s, n, m, overflow, byte(&r));
			break;
		}
		case OP_REALLOC:
			op_realloc(s, read_size(&r), false, 0, 0, false);
			break;
		case OP_REALLOCARRAY: {
			size_t n, m;
			bool overflow;
			read_pair(&r, &n, &m, &overflow);
			op_realloc(s, overflow ? 0 : n * m, true, n, m, overflow);
			break;
		}
		case OP_ALIGNED_ALLOC:
		case OP_POSIX_MEMALIGN:
		case OP_MEMALIGN: {
			size_t align = read_align(&r);
			enum aligned_fn fn = op_kind == OP_ALIGNED_ALLOC ? FN_ALIGNED_ALLOC
					     : op_kind == OP_MEMALIGN    ? FN_MEMALIGN
									 : FN_POSIX_MEMALIGN;
			op_aligned(s, fn, align, read_size(&r));
			break;
		}
		case OP_VALLOC:
			op_aligned(s, FN_VALLOC, 0, read_size(&r));
			break;
		case OP_PVALLOC:
			op_aligned(s, FN_PVALLOC, 0, read_size(&r));
			break;
		case OP_FREE: {
			uint8_t how = byte(&r);
			if (b->p) {
				release(s, how);
			} else { /* the null pointer: nothing happens */
				errno = SENTINEL;
				if (how % 2) free_sized(NULL, how);
				else free(NULL);
				expect_errno(SENTINEL, "free(NULL)");
			}
			break;
		}
		case OP_USABLE:
			if (b->p) {
				verify(b, "malloc_usable_size");
				widen(b, usable_of(b));
			} else if (malloc_usable_size(NULL)) {
				fail("malloc_usable_size(NULL) is not 0");
			}
			break;
		case OP_OBJECT_SIZE: {
			uint8_t where = byte(&r);
			op_object_size(s, where, u16(&r));
			break;
		}
		case OP_WRITE:
			if (b->p) {
				verify(b, "before a rewrite");
				b->seed = ++seeds;
				fill(b->p, b->seed, 0, b->len);
			}
			break;
		case OP_TRIM: {
			errno = SENTINEL;
			int t = malloc_trim(0);
			expect_errno(SENTINEL, "malloc_trim");
			if (t != 0 && t != 1) fail("malloc_trim returned %d", t);
			for (unsigned i = 0; i < FUZZ_SLOTS; i++)
				if (table[i].p) verify(&table[i], "after malloc_trim");
			break;
		}
		}
		if (trace)
			fprintf(stderr, "fuzz_ops: %zu %s slot %u: %p req %zu align %zu len %zu\n", op_no, op_names[op_kind], s,
				(void *)b->p, b->p ? b->req : 0, b->p ? b->align : 0, b->p ? b->len : 0);
	}
	op_no = ops;
	op_kind = OP_COUNT;
	for (unsigned i = 0; i < FUZZ_SLOTS; i++) {
		op_slot = i;
		if (table[i].p) release(i, (unsigned)table[i].seed);
	}
	return ops;
}

/* FUZZ_LAST_INPUT: a file that holds the input being run (see the top of the file). */
static int last_input_fd = -2;

static void save_input(const uint8_t *data, size_t size)
{
	if (last_input_fd == -2) {
		const char *path = getenv("FUZZ_LAST_INPUT");
		last_input_fd = path && *path ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
	}
	if (last_input_fd < 0) return;
	if (ftruncate(last_input_fd, 0) != 0 || pwrite(last_input_fd, data, size, 0) != (ssize_t)size) {
		perror("fuzz_ops: FUZZ_LAST_INPUT");
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool said;
	if (!said) {
		said = true;
		fprintf(stderr, "fuzz_ops: guard backend %s (RAMPART_OPTIONS=%s)\n", rampart_guard_backend(),
			getenv("RAMPART_OPTIONS") ? getenv("RAMPART_OPTIONS") : "");
	}
	save_input(data, size);
	fuzz_run(data, size);
	return 0;
}
