/*
 * api.c — the public functions. The only file that knows their names; it checks
 * arguments, sets errno, and hands valid requests to the allocators below.
 *
 * errno: a successful call leaves it alone; a failed allocation sets ENOMEM (or
 * EINVAL for a bad alignment), and nothing else ever touches it.
 *
 * Passthrough (passthrough.h): every entry point's "not initialised" branch, already
 * there and cold, hands the call to the C library when the process is a passthrough
 * one; nothing is added to the paths of a process that runs rampart.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rampart.h"
#include "base/partition.h"
#include "base/report.h"
#include "front/api.h"
#include "guard/guard.h"
#include "front/init.h"
#include "front/options.h"
#include "large/large.h"
#include "os/mte.h"
#include "os/os.h"
#include "front/passthrough.h"
#include "slab/slab.h"
#include "front/stats.h"

/* glibc extensions that musl's headers do not declare. */
void *pvalloc(size_t size);
int malloc_trim(size_t pad);
void malloc_stats(void);

#define API __attribute__((visibility("default")))

/* The site of an allocation (base/partition.h): where the public function that makes it
 * returns to in the program. Taken in that function's own body and handed down, never
 * in a helper it calls, whose return address would be inside rampart. */
#define SITE ((uintptr_t)__builtin_return_address(0))

/* Largest alignment honoured; beyond it the guards would dominate the mapping. */
#define MAX_ALIGN ((size_t)1 << 30)

/* The largest request the slab allocator serves (CONFIG_SMALL_MAX may lower it). */
#define SMALL_MAX MIN((size_t)CONFIG_SMALL_MAX, SC_MAX_REQUEST)

/* The size class of a request, or SC_COUNT when it is a large allocation. Alignments up
 * to 16 hold for every slot; up to a page, a class whose stride is a multiple of the
 * alignment serves it (slabs start on pages). The sized frees use the same mapping. */
static inline unsigned class_for(size_t size, size_t align)
{
	if (likely(align <= 16)) return size <= SMALL_MAX ? sc_of(size) : SC_COUNT;
	if (align > os_page || size > SMALL_MAX) return SC_COUNT;
	unsigned c = sc_of_aligned(size, align);
	return c < SC_COUNT && sc_usable(c) <= SMALL_MAX + SC_CANARY ? c : SC_COUNT;
}

/* An alignment as memalign and aligned_alloc take it, glibc's way (2.36): one that is
 * no power of two is rounded up to the next (0 to 1: any block's), and one too big for
 * that to fit a size_t is 0 (EINVAL). posix_memalign takes powers of two only. */
static inline size_t align_rounded(size_t align)
{
	if (likely(is_pow2(align))) return align;
	if (!align) return 1;
	if (align > SIZE_MAX / 2 + 1) return 0;
	return (size_t)1 << (sizeof(size_t) * CHAR_BIT - (size_t)__builtin_clzl(align));
}

/* free_aligned_sized's alignment, rounded as the allocation's was; one that no
 * allocation can have had is passed on as it is, for the size check to refuse. */
static inline size_t free_align(size_t align)
{
	size_t a = align_rounded(align);
	return a ? a : align;
}

/* Large blocks come from fresh or reopened pages, which the kernel zeroed; a slot is
 * cleared by the slab allocator as far as it cannot prove it zero. */
static noinline cold void *alloc_not_ready(size_t size, size_t align, bool zero)
{
	return rampart_passthrough() ? passthrough_alloc(size, align, zero) : NULL;
}

/* The kind a C++ operator's block is recorded and checked as (base/alloc_kind.h): its
 * own, or KIND_MALLOC for all under dealloc_kind=off, which start-up also sets where the
 * program replaced any of the operators (init.c). Asked once rampart is ready, so that
 * the first call sees what start-up decided; KIND_MALLOC, the C functions' constant,
 * folds away. */
static inline enum alloc_kind kind_in_effect(enum alloc_kind kind)
{
	return kind && roots.opt.dealloc_kind ? kind : KIND_MALLOC;
}

/* Always inlined, here and below: the C functions pass KIND_MALLOC, a constant that
 * then costs them nothing (as a call, the kind was a run-time argument tested at every
 * malloc and free); the C++ operators get copies of their own. */
static inline __attribute__((always_inline)) void *alloc_as(size_t size, size_t align, bool zero, enum alloc_kind kind,
							    uintptr_t site)
{
	if (unlikely(!rampart_ready())) return alloc_not_ready(size, align, zero);
	kind = kind_in_effect(kind);
	unsigned c = class_for(size, align);
	if (likely(c < SC_COUNT)) return slab_alloc(c, size, zero, kind, site);
	return large_alloc(size, align > os_page ? align : 0, kind, site);
}

static void *alloc(size_t size, size_t align, bool zero, uintptr_t site)
{
	return alloc_as(size, align, zero, KIND_MALLOC, site);
}

static inline __attribute__((always_inline)) void *alloc_or_enomem_as(size_t size, size_t align, enum alloc_kind kind,
								      uintptr_t site)
{
	void *p = alloc_as(size, align, false, kind, site);
	if (unlikely(!p)) errno = ENOMEM;
	return p;
}

static void *alloc_or_enomem(size_t size, size_t align, uintptr_t site)
{
	return alloc_or_enomem_as(size, align, KIND_MALLOC, site);
}

static noinline cold void release_not_ready(void *p)
{
	if (!rampart_passthrough()) report_fatal(OP_FREE, ERR_NEVER_HANDED_OUT, p);
	passthrough_free(p);
}

static inline __attribute__((always_inline)) void release_as(void *p, bool sized, size_t size, size_t align,
							    enum alloc_kind kind)
{
	if (!p) return;
	if (unlikely(!rampart_ready())) return release_not_ready(p);
	kind = kind_in_effect(kind);
	if (likely(slab_contains(p))) {
		if (!sized) return slab_free(p, NULL, kind);
		struct sized_claim claim = {size, align, class_for(size, align)};
		slab_free(p, &claim, kind);
	} else {
		large_free(p, sized, size, align, kind);
	}
}

static void release(void *p, bool sized, size_t size, size_t align) { release_as(p, sized, size, align, KIND_MALLOC); }

API void *malloc(size_t size) { return alloc_or_enomem(size, 0, SITE); }

/* malloc of a partition the program names (rampart.h); with one partition, malloc. */
API void *malloc_partition(size_t size, unsigned long id)
{
	if (unlikely(!rampart_ready()) || roots.opt.partitions == 1) return alloc_or_enomem(size, 0, SITE);
	return alloc_or_enomem(size, 0, partition_named(id));
}

API void free(void *p) { release(p, false, 0, 0); }

API void free_sized(void *p, size_t size) { release(p, true, size, 0); }

API void free_aligned_sized(void *p, size_t align, size_t size) { release(p, true, size, free_align(align)); }

API void *calloc(size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = alloc(total, 0, true, SITE);
	if (unlikely(!p)) errno = ENOMEM;
	return p;
}

/* Move a block into a new allocation of size bytes, copying what both can hold: the new
 * block is the realloc call's site's. */
static void *realloc_move(void *p, size_t old_used, size_t size, uintptr_t site)
{
	void *q = alloc(size, 0, false, site);
	if (unlikely(!q)) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(q, p, MIN(old_used, size));
	release(p, false, 0, 0);
	return q;
}

/* realloc made at site. A block that stays in its slot keeps its partition. */
static void *realloc_at(void *p, size_t size, uintptr_t site)
{
	/* Internal calls, not malloc/free: through the PLT they could reach another
	 * allocator interposed on top of this one. */
	if (!p) return alloc_or_enomem(size, 0, site);
	if (size == 0) { /* glibc's choice: free and return NULL */
		release(p, false, 0, 0);
		return NULL;
	}
	if (unlikely(!rampart_ready())) {
		if (!rampart_passthrough()) report_fatal(OP_REALLOC, ERR_NEVER_HANDED_OUT, p);
		return passthrough_realloc(p, size);
	}
	if (slab_contains(p)) {
		/* Checks that p is live and its canary intact before anything else. */
		size_t copy;
		if (slab_resize(p, size <= SMALL_MAX ? sc_of(size) : SC_COUNT, size, &copy)) return p;
		return realloc_move(p, copy, size, site);
	}
	if (size <= SMALL_MAX) {
		int saved = errno;
		void *q = realloc_move(p, large_usable_size(p, OP_REALLOC), size, site);
		if (likely(q)) return q;
		/* No slot to move into (its class could not grow: RLIMIT_AS, or a locked
		 * process at its RLIMIT_MEMLOCK): a shrink still succeeds, in place. */
		errno = saved;
	}
	void *q = large_realloc(p, size, site);
	if (unlikely(!q)) errno = ENOMEM;
	return q;
}

API void *realloc(void *p, size_t size) { return realloc_at(p, size, SITE); }

API void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc_at(p, total, SITE);
}

static inline __attribute__((always_inline)) void *aligned_as(size_t align, size_t size, enum alloc_kind kind,
							      uintptr_t site)
{
	align = align_rounded(align);
	if (!align) {
		errno = EINVAL;
		return NULL;
	}
	if (align > MAX_ALIGN) {
		errno = ENOMEM;
		return NULL;
	}
	return alloc_or_enomem_as(size, align, kind, site);
}

static void *aligned(size_t align, size_t size, uintptr_t site) { return aligned_as(align, size, KIND_MALLOC, site); }

API void *aligned_alloc(size_t align, size_t size) { return aligned(align, size, SITE); }

/* The internal names (api.h): the same functions, bound locally, for the C++ operators. */
void *rampart_new(size_t size, size_t align, enum alloc_kind kind, uintptr_t site)
{
	return align ? aligned_as(align, size, kind, site) : alloc_or_enomem_as(size, 0, kind, site);
}
void rampart_delete(void *p, enum alloc_kind kind) { release_as(p, false, 0, 0, kind); }
void rampart_delete_sized(void *p, size_t size, enum alloc_kind kind) { release_as(p, true, size, 0, kind); }
void rampart_delete_aligned_sized(void *p, size_t align, size_t size, enum alloc_kind kind)
{
	release_as(p, true, size, free_align(align), kind);
}

API void *memalign(size_t align, size_t size) { return aligned(align, size, SITE); }

API int posix_memalign(void **out, size_t align, size_t size)
{
	if (!is_pow2(align) || align % sizeof(void *)) return EINVAL;
	if (align > MAX_ALIGN) return ENOMEM;
	void *p = alloc(size, align, false, SITE);
	if (!p) return ENOMEM;
	*out = p;
	return 0;
}

API void *valloc(size_t size)
{
	if (unlikely(!rampart_ready())) {
		if (rampart_passthrough()) return passthrough_valloc(size);
		errno = ENOMEM;
		return NULL;
	}
	return alloc_or_enomem(size, os_page, SITE);
}

API void *pvalloc(size_t size)
{
	size_t rounded;
	if (unlikely(!rampart_ready())) {
		if (rampart_passthrough()) return passthrough_pvalloc(size);
		errno = ENOMEM;
		return NULL;
	}
	if (!page_round(size ? size : 1, &rounded)) {
		errno = ENOMEM;
		return NULL;
	}
	return alloc_or_enomem(rounded, os_page, SITE);
}

/* Out of line, like alloc_not_ready: a program that asks the size of every block
 * (redis) then saves no registers on each question. */
static noinline cold size_t usable_size_not_ready(void *p)
{
	if (!rampart_passthrough()) report_fatal(OP_USABLE_SIZE, ERR_NEVER_HANDED_OUT, p);
	return passthrough_usable_size(p);
}

API size_t malloc_usable_size(void *p)
{
	if (!p) return 0;
	if (unlikely(!rampart_ready())) return usable_size_not_ready(p);
	if (slab_contains(p)) return slab_usable_size(p);
	return large_usable_size(p, OP_USABLE_SIZE);
}

API size_t malloc_object_size(const void *p)
{
	if (!p || !rampart_ready()) return 0;
	if (slab_contains(p)) return slab_object_size(p);
	return large_object_size(p);
}

/* Gives back what rampart holds without weakening any protection: the empty slabs kept
 * open for reuse are closed, the pages of free slots in open slabs go back to the
 * kernel, and the large-region reuse cache is unmapped. The slot and region quarantines
 * are never flushed early. 1 if anything was released, as glibc's answers: pages of free
 * slots count as much as closed slabs, since a program's RSS falls by them alike. */
API int malloc_trim(size_t pad)
{
	if (!rampart_ready()) return rampart_passthrough() ? passthrough_trim(pad) : 0;
	bool slabs = slab_trim() > 0;
	bool large = large_trim();
	return slabs || large;
}

/* --- glibc's introspection (see docs/statistics.md) ------------------------------ */

#ifdef __GLIBC__
static struct mallinfo2 info_of(const struct rampart_heap_stats *h)
{
	size_t free_slots = 0;
	for (size_t c = 1; c < h->classes; c++) free_slots += h->size_class[c].free;
	return (struct mallinfo2){
		.arena = h->slab_open_bytes,            /* read-write slab memory */
		.ordblks = free_slots,                  /* slots ready to be handed out */
		.smblks = h->slab_quarantined,          /* freed slots held in the quarantine */
		.hblks = h->large_live,
		.hblkhd = h->large_live_bytes,
		.usmblks = 0,
		.fsmblks = h->slab_quarantined_bytes,
		.uordblks = h->slab_live_bytes,
		.fordblks = h->slab_open_bytes - h->slab_live_bytes,
		.keepcost = 0,
	};
}

API struct mallinfo2 mallinfo2(void)
{
	struct rampart_heap_stats h;
	if (!rampart_ready()) return rampart_passthrough() ? passthrough_mallinfo2() : (struct mallinfo2){0};
	int saved = errno;
	stats_gather(&h);
	errno = saved;
	return info_of(&h);
}

static int clamp(size_t v) { return v > INT_MAX ? INT_MAX : (int)v; }

API struct mallinfo mallinfo(void)
{
	if (!rampart_ready() && rampart_passthrough()) return passthrough_mallinfo();
	struct mallinfo2 m = mallinfo2();
	return (struct mallinfo){
		.arena = clamp(m.arena), .ordblks = clamp(m.ordblks), .smblks = clamp(m.smblks),
		.hblks = clamp(m.hblks), .hblkhd = clamp(m.hblkhd), .usmblks = clamp(m.usmblks),
		.fsmblks = clamp(m.fsmblks), .uordblks = clamp(m.uordblks), .fordblks = clamp(m.fordblks),
		.keepcost = clamp(m.keepcost),
	};
}

/* XML after glibc's malloc_info, with rampart's own elements. The figures are gathered
 * first (under the locks, one at a time); only then is anything printed, with no lock
 * held, because stdio may allocate. */
API int malloc_info(int options, FILE *fp)
{
	/* As glibc's code does (its manual page says -1 and errno): options other than 0
	 * are answered with the error number itself, errno untouched, nothing written. */
	if (options != 0) return EINVAL;
	if (!rampart_ready()) {
		if (rampart_passthrough()) return passthrough_info(options, fp);
		errno = ENOMEM;
		return -1;
	}
	int saved = errno;
	struct stats_figures f;
	stats_gather_report(&f, NULL);
	stats_report_xml(fp, &f);
	errno = saved;
	return 0;
}

/* glibc's parameters; the few rampart can honour are those that ask for what it does
 * anyway. Everything else (thresholds, arena counts, perturbation) would need a heap
 * shaped like glibc's: 0, the documented answer for "not done". */
API int mallopt(int param, int value)
{
	if (!rampart_ready() && rampart_passthrough()) return passthrough_mallopt(param, value);
	switch (param) {
	case M_MXFAST: return value == 0;          /* no fast bins: "disable them" holds */
	case M_PERTURB: return value == 0;         /* freed memory is zeroed, never filled with a byte */
	case M_CHECK_ACTION: return (value & 3) == 3; /* print a line and abort: what rampart does */
	default: return 0;
	}
}
#endif

/* Also under musl: a report on stderr (glibc prints its arenas' figures there). */
API void malloc_stats(void)
{
	if (!rampart_ready()) {
		if (rampart_passthrough()) passthrough_stats();
		return;
	}
	stats_report(2, 0);
}

/* RAMPART_OPTIONS=stats=1|json: the report when the program exits (a destructor, like
 * the exit check in slab/slot_alloc.c; this file is in every program that allocates). */
__attribute__((destructor)) static void stats_at_exit(void)
{
	if (atomic_load_explicit(&rampart_state, memory_order_acquire) != STATE_READY || !roots.opt.stats) return;
	stats_report_at_exit();
}

API const char *rampart_guard_backend(void)
{
	if (!rampart_ready()) return rampart_passthrough() ? "passthrough" : "none";
	return guard_backend_name();
}

API const char *rampart_profile(void)
{
	if (!rampart_ready()) return rampart_passthrough() ? "passthrough" : "none";
	return roots.opt.profile == PROFILE_LIGHT ? "light" : "strong";
}

API int rampart_get_option(const char *name, unsigned long *value)
{
	if (!name || !value) {
		errno = EINVAL;
		return -1;
	}
	if (!rampart_ready()) {
		errno = EAGAIN;
		return -1;
	}
	if (options_value(&roots.opt, name, value)) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

API const char *rampart_memory_tagging(void)
{
	if (!rampart_ready()) return rampart_passthrough() ? "passthrough" : "none";
	return mte_state_name(roots.mte);
}
