/*
 * place.c — where rampart's address space goes: the windows regions grow in (the slab
 * window, the metadata's), set aside at random low in the address space, and the large
 * area, where fresh large regions are laid end to end. Nothing here maps memory for
 * keeps: a place is chosen, checked free (os_range_free, os_find_gap) and handed back;
 * guard.c maps it. The invariants are place.h's.
 */
#define _GNU_SOURCE
#include "guard/place.h"

#include <stdatomic.h>
#include <sys/auxv.h>

#include "os/os.h"
#include "os/random.h"

/* --- windows: address space set aside for regions that grow in place --------------- */

static struct guard_span windows[WINDOWS_MAX];
static _Atomic unsigned nwindows; /* windows are added during start-up only */

bool guard_in_window(uintptr_t lo, uintptr_t hi)
{
	unsigned n = atomic_load_explicit(&nwindows, memory_order_acquire);
	for (unsigned i = 0; i < n; i++)
		if (lo < windows[i].hi && windows[i].lo < hi) return true;
	return false;
}

/* The top of the address space: a power of two above the main thread's stack, which
 * Linux puts just below it. The stack is found through a string the kernel put on it
 * (AT_EXECFN, AT_RANDOM), not through the caller's frame: the first malloc may run on a
 * coroutine's or a signal stack anywhere. Never below what the architecture has at
 * least (x86_64: 47 bits; arm64: 39). */
static uintptr_t address_space_top(void)
{
	uintptr_t sp = getauxval(AT_EXECFN);
	if (!sp) sp = getauxval(AT_RANDOM);
	if (!sp) sp = (uintptr_t)__builtin_frame_address(0);
#if defined(__x86_64__)
	uintptr_t least = (uintptr_t)1 << 47;
#else
	uintptr_t least = (uintptr_t)1 << 39;
#endif
	uintptr_t top = (uintptr_t)1 << (64 - __builtin_clzl(sp));
	return top > least ? top : least;
}

void guard_window_release(uintptr_t base)
{
	unsigned n = atomic_load_explicit(&nwindows, memory_order_relaxed);
	if (n && windows[n - 1].lo == base) atomic_store_explicit(&nwindows, n - 1, memory_order_release);
}

uintptr_t guard_window_pick(const struct guard_span *taken, unsigned n, uintptr_t lo, uintptr_t hi, size_t size,
			    uint64_t r)
{
	/* The windows taken, in address order (a handful: insertion sort). */
	struct guard_span w[WINDOWS_MAX];
	if (n > WINDOWS_MAX || hi < lo || size > hi - lo) return 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned j = i;
		for (; j > 0 && w[j - 1].lo > taken[i].lo; j--) w[j] = w[j - 1];
		w[j] = taken[i];
	}
	/* Two passes over the runs of starts that keep clear of every window: count the
	 * pages, then walk to the r-th (mod the count). */
	uintptr_t count = 0, pick = 0;
	for (int pass = 0; pass < 2; pass++) {
		uintptr_t from = align_up(lo, os_page);
		for (unsigned i = 0; i <= n; i++) {
			uintptr_t end = i < n && w[i].lo < hi ? w[i].lo : hi; /* where the run's windows end */
			if (end >= from && end - from >= size) {
				uintptr_t pages = ((end - size) & ~(os_page - 1)) / os_page - from / os_page + 1;
				if (pass == 0) count += pages;
				else if (pick < pages) return from + pick * os_page;
				else pick -= pages;
			}
			if (i < n && w[i].hi > from) from = align_up(w[i].hi, os_page);
		}
		if (!count) return 0;
		pick = (uintptr_t)(r % count);
	}
	return 0; /* not reached: the second pass finds the pick */
}

bool guard_window(size_t size, uintptr_t *base)
{
	/* Where Linux puts what nobody placed (x86_64 and arm64, 4- or 3-level tables): the
	 * mmap area from just below the stack downwards, PIE programs and their heap at two
	 * thirds of the address space, and with the legacy layout (an unlimited stack) the
	 * mmap area from a quarter upwards. Between 1/64 and 1/4 - 1/64 of it only mappings
	 * asked for by address go; the top is found from the stack, which is near it. */
	uintptr_t top = address_space_top();
	uintptr_t lo = top / 64, hi = top / 4 - top / 64;
	unsigned n = atomic_load_explicit(&nwindows, memory_order_relaxed);
	if (n == WINDOWS_MAX || !size || size > top / 4) return false;
	/* A place drawn among those clear of the other windows (the slab window takes half
	 * of that part: drawn over all of it and tried again on overlap, it failed 16 times
	 * in a row for one process in ten or so). A try fails only where something is
	 * mapped already. */
	uintptr_t b = 0;
	for (int attempt = 0; attempt < 16 && !b; attempt++) {
		uint64_t r;
		random_entropy(&r, sizeof r);
		uintptr_t c = guard_window_pick(windows, n, lo, hi, size, r);
		if (!c) break;
		if (os_range_free(c, c + size)) b = c;
	}
	/* Where something occupies that part (a sanitizer's shadow memory), the lowest free
	 * span above 4 GiB that holds the window with room to spare, at a random place in it
	 * (the part below 4 GiB is for MAP_32BIT and fixed-address programs' heaps). */
	uintptr_t gap_lo, gap_hi;
	for (uintptr_t from = (uintptr_t)4 << 30; !b && os_find_gap(from, top, 2 * size, &gap_lo, &gap_hi);
	     from = gap_hi) {
		for (int attempt = 0; attempt < 4 && !b; attempt++) { /* the gap may hold a window */
			uint64_t r;
			random_entropy(&r, sizeof r);
			uintptr_t c = gap_lo + size / 2 +
				      (uintptr_t)(r % ((gap_hi - gap_lo - 2 * size) / os_page + 1)) * os_page;
			if (!guard_in_window(c, c + size)) b = c;
		}
	}
	if (!b) return false;
	invariant(!guard_in_window(b, b + size)); /* windows never overlap */
	windows[n].lo = b;
	windows[n].hi = b + size;
	atomic_store_explicit(&nwindows, n + 1, memory_order_release);
	*base = b;
	return true;
}

/* --- the large area: where fresh large regions go ---------------------------------- */

/* How far beyond what the next region needs the area is checked free at once: one check
 * (a PROT_NONE mapping made and unmapped, or a read of the maps file) serves many
 * regions. */
#define AREA_STRETCH ((size_t)64 << 20)

/* Is [lo, hi) free of mappings and of the windows (set aside, not mapped)? */
static bool span_free(uintptr_t lo, uintptr_t hi)
{
	return !guard_in_window(lo, hi) && os_range_free(lo, hi);
}

/* The end of the last-ending window that meets [lo, hi); 0 when none does. */
static uintptr_t window_over(uintptr_t lo, uintptr_t hi)
{
	unsigned n = atomic_load_explicit(&nwindows, memory_order_acquire);
	uintptr_t end = 0;
	for (unsigned i = 0; i < n; i++)
		if (lo < windows[i].hi && windows[i].lo < hi && windows[i].hi > end) end = windows[i].hi;
	return end;
}

/* The next start: clear bytes into the lowest span in [from, hi) free of mappings and
 * windows that holds size bytes with clear bytes on each side. From the maps file: a
 * collision, rare. */
static bool area_jump(struct guard_area *a, uintptr_t from, uintptr_t hi, size_t size, size_t clear)
{
	uintptr_t g_lo, g_hi;
	while (from < hi && os_find_gap(from, hi, size + 2 * clear, &g_lo, &g_hi)) {
		uintptr_t c = g_lo + clear, w = window_over(g_lo, c + size + clear);
		if (!w) {
			a->next = c;
			a->checked = c + size + clear; /* the rest of the gap may hold a window */
			return true;
		}
		from = w;
	}
	return false;
}

/* The start handed out: checked free of the windows (place.h: what rampart maps outside
 * a window never lies inside one). */
static uintptr_t area_start(const struct guard_area *a, size_t size)
{
	invariant(!guard_in_window(a->next, a->next + size));
	return a->next;
}

uintptr_t guard_area_take(struct guard_area *a, size_t size, size_t clear, uint32_t generation, uint64_t r)
{
	if (os_intercepted()) return 0;
	/* Between 1/2 and 2/3 - 1/64 of the address space: PIE programs start at 2/3. */
	uintptr_t top = address_space_top(), lo = top / 2, hi = top / 3 * 2 - top / 64;
	size_t room = hi - lo;
	if (size > room / 4 || clear > room / 4) return 0;
	if (!a->next || a->generation != generation) {
		/* Each page as likely among those with a stretch clear of the windows above
		 * (a slab window that could not go lower may lie here). */
		a->generation = generation;
		a->next = guard_window_pick(windows, atomic_load_explicit(&nwindows, memory_order_acquire), lo + clear,
					    hi - clear, AREA_STRETCH, r);
		a->checked = 0;
		if (!a->next) return 0;
	}
	for (int pass = 0; pass < 2; pass++) {
		if (a->next + size + clear <= hi) {
			if (a->next + size + clear <= a->checked) return area_start(a, size);
			/* Below a start just chosen nothing is known: its clearance too. */
			uintptr_t from = a->checked >= a->next ? a->checked : a->next - clear;
			uintptr_t end = MIN(a->next + size + clear + AREA_STRETCH, hi);
			if (span_free(from, end)) {
				a->checked = end;
				return area_start(a, size);
			}
			if (area_jump(a, a->checked >= a->next ? a->next : a->next - clear, hi, size, clear))
				return area_start(a, size);
		}
		/* The top of the area: on from its bottom, where what was freed has gone. */
		a->next = lo + clear;
		a->checked = 0;
	}
	a->next = 0; /* full: the kernel places this one, the next call starts anew */
	return 0;
}

void guard_area_placed(struct guard_area *a, uintptr_t end) { a->next = end; }

void guard_area_refused(struct guard_area *a)
{
	if (a->checked > a->next) a->checked = a->next;
}

