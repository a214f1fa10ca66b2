/*
 * cxx.h — the C++ replaceable allocation functions rampart defines (cxx.c), by their
 * Itanium-mangled names, and whether the process calls rampart's own.
 *
 * Invariants:
 *  - RAMPART_CXX_OPERATORS is the one list of them: their declarations, the hidden
 *    aliases that name rampart's own definitions, and the comparison of cxx_own.c are
 *    generated from it.
 *  - St11align_val_t is std::align_val_t (passed as a size_t); RKSt9nothrow_t is const
 *    std::nothrow_t& (a pointer); size_t is `unsigned long`, mangled `m` (x86_64, arm64).
 */
#ifndef RAMPART_CXX_H
#define RAMPART_CXX_H

#include "base/common.h"

typedef const void *nothrow_ref;

/* X(return type, mangled name, parameters) */
#define RAMPART_CXX_OPERATORS(X)                                                                  \
	X(void *, _Znwm, (size_t size))                                                           \
	X(void *, _Znam, (size_t size))                                                           \
	X(void *, _ZnwmRKSt9nothrow_t, (size_t size, nothrow_ref nt))                             \
	X(void *, _ZnamRKSt9nothrow_t, (size_t size, nothrow_ref nt))                             \
	X(void *, _ZnwmSt11align_val_t, (size_t size, size_t align))                              \
	X(void *, _ZnamSt11align_val_t, (size_t size, size_t align))                              \
	X(void *, _ZnwmSt11align_val_tRKSt9nothrow_t, (size_t size, size_t align, nothrow_ref nt)) \
	X(void *, _ZnamSt11align_val_tRKSt9nothrow_t, (size_t size, size_t align, nothrow_ref nt)) \
	X(void, _ZdlPv, (void *p))                                                                \
	X(void, _ZdaPv, (void *p))                                                                \
	X(void, _ZdlPvm, (void *p, size_t size))                                                  \
	X(void, _ZdaPvm, (void *p, size_t size))                                                  \
	X(void, _ZdlPvRKSt9nothrow_t, (void *p, nothrow_ref nt))                                  \
	X(void, _ZdaPvRKSt9nothrow_t, (void *p, nothrow_ref nt))                                  \
	X(void, _ZdlPvSt11align_val_t, (void *p, size_t align))                                   \
	X(void, _ZdaPvSt11align_val_t, (void *p, size_t align))                                   \
	X(void, _ZdlPvmSt11align_val_t, (void *p, size_t size, size_t align))                     \
	X(void, _ZdaPvmSt11align_val_t, (void *p, size_t size, size_t align))                     \
	X(void, _ZdlPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t align, nothrow_ref nt))     \
	X(void, _ZdaPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t align, nothrow_ref nt))

/* The operators by their public names (exported: a C++ program calls these), and
 * rampart's own definitions of them by hidden aliases (cxx.c). */
#define CXX_DECLARE(ret, name, params) __attribute__((visibility("default"))) ret name params;
RAMPART_CXX_OPERATORS(CXX_DECLARE)
#undef CXX_DECLARE
#define CXX_DECLARE_OWN(ret, name, params) hidden ret own##name params;
RAMPART_CXX_OPERATORS(CXX_DECLARE_OWN)
#undef CXX_DECLARE_OWN

/* Does every one of the operators, called by its name, reach rampart's own definition?
 * False when the program (or a library loaded before rampart) defines one of them
 * itself: the standard lets a replaced operator new hand its blocks to the default
 * operator delete, and a replaced delete take the default new's, so blocks may pass
 * between rampart's C functions and its operators without a bug (cxx_own.c). */
bool cxx_operators_own(void);

#endif
