/*
 * vma_budget.c — the process's VMAs, counted where rampart makes them and recounted near
 * the thresholds (vma_budget.h).
 *
 * Why a recount: most of what rampart maps it can count exactly where it is made (a slab
 * position knows its neighbours), but large regions laid end to end merge with whatever
 * lies beside them, and the program maps on its own. Reading /proc/self/maps costs about
 * about 0.4 µs a line (20 ms for 50,000 VMAs, Linux 6.18), so it is done only once
 * rampart's count passes VMA_UNCHECKED, and then once per 4,096 VMAs changed (a sixteenth
 * of the default limit), or per 512 within a sixteenth of a threshold: each change was a
 * system call already, and a guard refused changes nothing, so a program that stays
 * near the limit pays no recount per call.
 */
#include "guard/vma_budget.h"

#include <stdatomic.h>

#include "base/procmaps.h"
#include "base/report.h"
#include "os/os.h"

/* Counted VMAs below which nothing is worth reading: a tenth of the smallest limit a
 * system plausibly sets, so a process that never comes near it never reads a file. */
#define VMA_UNCHECKED 1024
/* VMAs added or taken off between two recounts, at least: a 128th of the limit. */
#define VMA_RECOUNT_SHIFT 7

static _Atomic long counted;        /* what rampart counted, in all */
static _Atomic long guards;         /* of which its protections' own (vma_add_guards) */
static _Atomic long at_recount;     /* counted, when the process was last recounted */
static _Atomic long recounted = -1; /* the process's VMAs then; -1: never */
static _Atomic bool recounting;
static _Atomic unsigned long omitted;

void vma_add(long n) { atomic_fetch_add_explicit(&counted, n, memory_order_relaxed); }
void vma_add_guards(long n)
{
	vma_add(n);
	atomic_fetch_add_explicit(&guards, n, memory_order_relaxed);
}
long vma_guards(void) { return atomic_load_explicit(&guards, memory_order_relaxed); }
long vma_counted(void) { return atomic_load_explicit(&counted, memory_order_relaxed); }
unsigned long vma_omitted(void) { return atomic_load_explicit(&omitted, memory_order_relaxed); }

unsigned long vma_limit(void)
{
	static _Atomic unsigned long limit;
	unsigned long n = atomic_load_explicit(&limit, memory_order_relaxed);
	if (!n) {
		long v = os_read_long("/proc/sys/vm/max_map_count");
		n = v > 0 ? (unsigned long)v : 65530; /* the kernel's default */
		atomic_store_explicit(&limit, n, memory_order_relaxed);
	}
	return n;
}

long vma_count(void)
{
	long base = atomic_load_explicit(&recounted, memory_order_relaxed);
	long now = atomic_load_explicit(&counted, memory_order_relaxed);
	if (base < 0) return now;
	return base + now - atomic_load_explicit(&at_recount, memory_order_relaxed);
}

void vma_recount(void)
{
	bool busy = false;
	/* One thread reads the file; the others go on with the count as it is. */
	if (!atomic_compare_exchange_strong_explicit(&recounting, &busy, true, memory_order_acquire, memory_order_relaxed))
		return;
	long before = atomic_load_explicit(&counted, memory_order_relaxed);
	long lines = maps_count();
	/* No /proc (a chroot): rampart's own count goes on alone, asked again a step later. */
	atomic_store_explicit(&at_recount, before, memory_order_relaxed);
	atomic_store_explicit(&recounted, lines >= 0 ? lines : before, memory_order_relaxed);
	atomic_store_explicit(&recounting, false, memory_order_release);
}

/* Where a use's guards stop: three quarters of the limit for slabs (thinned and left
 * out first), seven eighths for large blocks; the last eighth is the program's. */
static long threshold(enum vma_use use)
{
	long limit = (long)vma_limit();
	return use == VMA_SLAB ? limit - limit / 4 : limit - limit / 8;
}

/* What the protections may take of the limit by themselves: a quarter and a bit for large
 * blocks' guards (16,400 live guarded blocks at the default), less for slabs'. The rest
 * is for what the program's own blocks cost, guarded or not: each block moved by realloc
 * is a VMA of its own whatever its guards (its pages keep their anon_vma), and 40,000 of
 * them must still fit. */
static long guard_cap(enum vma_use use)
{
	long limit = (long)vma_limit();
	return use == VMA_SLAB ? limit / 4 - limit / 32 : limit / 4 + limit / 64;
}

/* The count, recounted first where it is due: never yet (the first time rampart's own
 * count reaches VMA_UNCHECKED), or once it has moved by a 128th of the limit near
 * threshold t (within a sixteenth of it), by a sixteenth elsewhere (what nobody counts,
 * the program's own mappings above all, must not drift unseen for long). */
static long count_near(long t)
{
	long n = vma_count();
	long limit = (long)vma_limit();
	long moved = atomic_load_explicit(&counted, memory_order_relaxed) -
		     atomic_load_explicit(&at_recount, memory_order_relaxed);
	if (moved < 0) moved = -moved;
	long step = n >= t - limit / 16 ? limit >> VMA_RECOUNT_SHIFT : limit / 16;
	if (atomic_load_explicit(&recounted, memory_order_relaxed) < 0 || moved >= step) {
		vma_recount();
		n = vma_count();
	}
	return n;
}

bool vma_room(enum vma_use use, unsigned n)
{
	if (vma_count() + (long)n < VMA_UNCHECKED) return true;
	if (vma_guards() + (long)n > guard_cap(use)) return false;
	long t = threshold(use);
	return count_near(t) + (long)n <= t;
}

unsigned vma_pressure(void)
{
	long n = vma_count();
	if (n < VMA_UNCHECKED) return 0;
	long t = threshold(VMA_SLAB), cap = guard_cap(VMA_SLAB);
	n = count_near(t);
	long of_count = n <= 0 ? 0 : n * 16 / t, of_cap = vma_guards() <= 0 ? 0 : vma_guards() * 16 / cap;
	return (unsigned)MAX(of_count, of_cap);
}

void vma_left_out(void)
{
	if (atomic_fetch_add_explicit(&omitted, 1, memory_order_relaxed) == 0) report_warn(WARN_VMA_LIMIT, NULL);
}
