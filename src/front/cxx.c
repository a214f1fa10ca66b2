/*
 * cxx.c — the C++ replaceable allocation functions (operator new / operator delete),
 * written in C so that the library never links libstdc++.
 *
 * Every operator has its Itanium-mangled name (x86_64 and arm64, where size_t is
 * `unsigned long`, mangled `m`) and default visibility, so a C++ program linked with
 * rampart, or running with it preloaded, uses these instead of libstdc++'s.
 *
 * Allocation goes to the library's own malloc / aligned_alloc and deallocation to
 * free / free_sized / free_aligned_sized: the sized and aligned deletes therefore get
 * the same checks as C23's sized frees — a size (or alignment) that does not match the
 * allocation is heap corruption, reported with one "rampart: fatal:" line and abort.
 * Each block carries the kind of its allocation (new or new[]; base/alloc_kind.h), and
 * each delete names the kind it frees: free of a block new made, delete of one new[] or
 * malloc made, delete[] of new's or malloc's are fatal too (dealloc_kind=off: not).
 *
 * Failure, as [new.delete.single] asks of the throwing forms: loop { try to allocate;
 * if there is no new-handler, throw std::bad_alloc; call the handler }. The handler
 * (std::get_new_handler) and the thrower (std::__throw_bad_alloc, exported by
 * libstdc++) are reached through weak references, so a C program that never loads
 * libstdc++ still links and runs. This file is compiled with -fexceptions so that the
 * exception, and any exception a handler throws, unwinds through these C frames.
 * When libstdc++ is not in the global scope at start-up (it came later, with dlopen —
 * for instance a C++ extension loaded into a preloaded Python), the weak references
 * are null; on the (rare) failure path we then look libstdc++ up with
 * dlopen(RTLD_NOLOAD) + dlsym. Nothing is cached: no writable function pointers.
 * If libstdc++ is not in the process at all, no C++ caller can exist that expects a
 * bad_alloc; we report a fatal error rather than return NULL from a throwing new.
 *
 * Choices where the standard leaves room (documented in docs/cxx.md):
 *  - operator new(0) returns malloc(0): a unique non-null pointer to the zero-size
 *    class (never accessible). operator delete(p, 0) on it passes free_sized(p, 0).
 *  - nothrow new makes one allocation attempt and returns NULL on failure, without
 *    calling the new-handler. The standard's *required* behaviour for the nothrow
 *    forms is only "a non-null pointer or a null pointer"; calling the handler is the
 *    *default* behaviour (implemented as try { operator new } catch { null }), which
 *    a replacement need not copy. A C frame cannot catch the bad_alloc that handlers
 *    commonly throw, and letting it escape a noexcept function means
 *    std::terminate, so never calling the handler is the only safe choice.
 *  - An alignment that is not a power of two (undefined behaviour for the caller)
 *    is fatal, in new and in delete. An aligned delete of a pointer that is not
 *    aligned as it claims is fatal too (it cannot come from the matching new).
 *  - An alignment above what aligned_alloc serves (1 GiB) is an allocation failure:
 *    handler loop, then bad_alloc (or NULL for nothrow).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

#include "rampart.h"
#include "front/api.h"
#include "front/cxx.h"
#include "base/common.h"
#include "base/report.h"
#include "os/os.h"

#define API __attribute__((visibility("default")))

typedef void (*new_handler_fn)(void);

/* libstdc++, when present: std::get_new_handler() and std::__throw_bad_alloc(). */
extern new_handler_fn _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));

/* A libstdc++ symbol that the weak reference missed (libstdc++ loaded by dlopen after
 * us, possibly RTLD_LOCAL). Only on the failure path; never cached. */
static void *late_libstdcxx_symbol(const char *name)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
	void *lib = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD);
	if (!lib) return NULL;
	void *sym = dlsym(lib, name);
	dlclose(lib); /* NOLOAD took a reference; the library stays loaded. */
	return sym;
#else
	(void)name; /* dlsym lives in libdl here; the library does not link it. */
	return NULL;
#endif
}

static new_handler_fn current_new_handler(void)
{
	if (_ZSt15get_new_handlerv) return _ZSt15get_new_handlerv();
	new_handler_fn (*get)(void) = (new_handler_fn(*)(void))late_libstdcxx_symbol("_ZSt15get_new_handlerv");
	return get ? get() : NULL;
}

static noinline cold __attribute__((noreturn)) void throw_bad_alloc(const void *caller)
{
	if (_ZSt17__throw_bad_allocv) _ZSt17__throw_bad_allocv();
	void (*thrower)(void) = (void (*)(void))late_libstdcxx_symbol("_ZSt17__throw_bad_allocv");
	if (thrower) thrower();
	report_fatal(OP_NEW, ERR_NO_BAD_ALLOC, caller);
}

static inline void check_align(size_t align, enum report_op op, const void *caller)
{
	if (unlikely(!is_pow2(align))) report_fatal(op, ERR_BAD_ALIGNMENT, caller);
}

/* The throwing forms: the new-handler loop of [new.delete.single]. */
static noinline void *new_slow(size_t size, size_t align, enum alloc_kind kind, const void *caller)
{
	for (;;) {
		void *p = rampart_new(size, align, kind, (uintptr_t)caller);
		if (p) return p;
		new_handler_fn h = current_new_handler();
		if (!h) throw_bad_alloc(caller);
		h(); /* may throw bad_alloc, abort, or make memory available */
	}
}

static inline void *new_throwing(size_t size, size_t align, enum alloc_kind kind, const void *caller)
{
	void *p = rampart_new(size, align, kind, (uintptr_t)caller);
	return likely(p) ? p : new_slow(size, align, kind, caller);
}

/* The operator's caller: the address it returns to, taken in the operator's own body.
 * Named in reports, and the allocation's site (base/partition.h), so that each
 * new-expression of the program is a site, not the operator. */
#define CALLER __builtin_return_address(0)
#define SITE ((uintptr_t)CALLER)

API void *_Znwm(size_t size) { return new_throwing(size, 0, KIND_NEW, CALLER); }
API void *_Znam(size_t size) { return new_throwing(size, 0, KIND_NEW_ARRAY, CALLER); }
API void *_ZnwmRKSt9nothrow_t(size_t size, nothrow_ref nt) { return rampart_new(size, 0, KIND_NEW, SITE); }
API void *_ZnamRKSt9nothrow_t(size_t size, nothrow_ref nt) { return rampart_new(size, 0, KIND_NEW_ARRAY, SITE); }

API void *_ZnwmSt11align_val_t(size_t size, size_t align)
{
	check_align(align, OP_NEW, CALLER);
	return new_throwing(size, align, KIND_NEW, CALLER);
}

API void *_ZnamSt11align_val_t(size_t size, size_t align)
{
	check_align(align, OP_NEW, CALLER);
	return new_throwing(size, align, KIND_NEW_ARRAY, CALLER);
}

API void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, nothrow_ref nt)
{
	check_align(align, OP_NEW, CALLER);
	return rampart_new(size, align, KIND_NEW, SITE);
}

API void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, nothrow_ref nt)
{
	check_align(align, OP_NEW, CALLER);
	return rampart_new(size, align, KIND_NEW_ARRAY, SITE);
}

API void _ZdlPv(void *p) { rampart_delete(p, KIND_NEW); }
API void _ZdaPv(void *p) { rampart_delete(p, KIND_NEW_ARRAY); }
API void _ZdlPvm(void *p, size_t size) { rampart_delete_sized(p, size, KIND_NEW); }
API void _ZdaPvm(void *p, size_t size) { rampart_delete_sized(p, size, KIND_NEW_ARRAY); }
API void _ZdlPvRKSt9nothrow_t(void *p, nothrow_ref nt) { rampart_delete(p, KIND_NEW); }
API void _ZdaPvRKSt9nothrow_t(void *p, nothrow_ref nt) { rampart_delete(p, KIND_NEW_ARRAY); }

/* An aligned delete of p: the alignment must be valid and p aligned to it. */
static inline void check_aligned_ptr(const void *p, size_t align, const void *caller)
{
	check_align(align, OP_FREE, caller);
	if (unlikely((uintptr_t)p & (align - 1))) report_fatal(OP_FREE, ERR_MISALIGNED_DELETE, p);
}

static inline void delete_aligned(void *p, size_t align, enum alloc_kind kind, const void *caller)
{
	if (!p) return;
	check_aligned_ptr(p, align, caller);
	rampart_delete(p, kind);
}

static inline void delete_aligned_sized(void *p, size_t size, size_t align, enum alloc_kind kind, const void *caller)
{
	if (!p) return;
	check_aligned_ptr(p, align, caller);
	rampart_delete_aligned_sized(p, align, size, kind);
}

API void _ZdlPvSt11align_val_t(void *p, size_t align) { delete_aligned(p, align, KIND_NEW, CALLER); }
API void _ZdaPvSt11align_val_t(void *p, size_t align) { delete_aligned(p, align, KIND_NEW_ARRAY, CALLER); }
API void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t align)
{
	delete_aligned_sized(p, size, align, KIND_NEW, CALLER);
}
API void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align)
{
	delete_aligned_sized(p, size, align, KIND_NEW_ARRAY, CALLER);
}
API void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, nothrow_ref nt)
{
	delete_aligned(p, align, KIND_NEW, CALLER);
}
API void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, nothrow_ref nt)
{
	delete_aligned(p, align, KIND_NEW_ARRAY, CALLER);
}

/* rampart's own definitions by names no program can replace, for cxx_own.c to compare
 * with what the operators' public names reach. */
#define CXX_OWN_ALIAS(ret, name, params) __typeof__(name) own##name __attribute__((alias(#name)));
RAMPART_CXX_OPERATORS(CXX_OWN_ALIAS)
#undef CXX_OWN_ALIAS
