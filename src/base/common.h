/*
 * common.h — what every rampart module may assume.
 *
 * Invariants:
 *  - 64-bit Linux only; pointers and size_t are 64 bits wide.
 *  - os_page is the kernel page size, a power of two, fixed after os_init().
 *  - Nothing in src/ calls the public allocation functions (malloc, free, ...):
 *    rampart never allocates through itself, so no path can recurse.
 *  - A function whose failure the caller must handle is marked must_check
 *    (warn_unused_result); failure of an allocation path means ENOMEM. Functions
 *    that cannot fail, or whose failure is reported and survived inside them, are
 *    not marked.
 *  - invariant(cond) states what the code relies on; it is checked only in builds with
 *    CONFIG_INVARIANTS=1, and a broken one is fatal.
 */
#ifndef RAMPART_COMMON_H
#define RAMPART_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if UINTPTR_MAX != 0xffffffffffffffffu
#error "rampart supports 64-bit targets only"
#endif

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define must_check __attribute__((warn_unused_result))
#define hidden __attribute__((visibility("hidden")))
#define noinline __attribute__((noinline))
#define cold __attribute__((cold))
/* Zero-initialised static storage kept out of the way of the small variables: whole
 * pages (page-aligned for a system call of their own) and buffers used only with a
 * policy file or a trace. The shared library links with --sort-section=name (GNU ld and
 * gold; lld ignores it), so these come after every other variable of .bss, and the
 * small ones, which every process writes at start-up, share one or two pages: each
 * page first written is a page fault, and they were spread over nine. */
#define STATIC_APART(name) __attribute__((section(".bss.zz_apart." #name)))

/* invariant(cond): a condition the code around it relies on. Built with
 * CONFIG_INVARIANTS=1 (the check-* builds), a false one is a fatal report naming the
 * condition and its place (report_invariant, base/report.c); otherwise it is compiled
 * out, its condition never evaluated but still compiled (behind a constant false), so
 * that it cannot rot. Keep them cheap: a check build runs the whole suite with them. */
#define INVARIANT_STR(x) #x
#define INVARIANT_AT(line) __FILE__ ":" INVARIANT_STR(line)
#if CONFIG_INVARIANTS
cold __attribute__((noreturn)) void report_invariant(const char *what);
#define invariant(cond) \
	do { \
		if (unlikely(!(cond))) report_invariant(#cond " (" INVARIANT_AT(__LINE__) ")"); \
	} while (0)
#else
#define invariant(cond) ((void)(0 && (cond)))
#endif

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* The kernel page size (set once by os_init, read-only afterwards). */
extern size_t os_page;

static inline bool is_pow2(size_t x) { return x && !(x & (x - 1)); }
static inline uintptr_t align_up(uintptr_t x, size_t a) { return (x + a - 1) & ~(uintptr_t)(a - 1); }
static inline uintptr_t align_down(uintptr_t x, size_t a) { return x & ~(uintptr_t)(a - 1); }

/* Round a byte count up to whole pages; false when that overflows. */
static inline bool page_round(size_t n, size_t *out)
{
	if (n > SIZE_MAX - os_page) return false;
	*out = align_up(n, os_page);
	return true;
}

#endif
