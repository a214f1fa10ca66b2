/*
 * passthrough.c — hand calls to the C library's own allocator (see passthrough.h).
 *
 * Nothing here checks anything: a passthrough process has been exempted from rampart
 * by the administrator (or by its own environment), and gets glibc's behaviour exactly,
 * its error messages included.
 */
#define _GNU_SOURCE
#include "front/passthrough.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#ifdef __GLIBC__
#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <malloc.h>


/* glibc's second names for its allocator (GLIBC_2.2.5). Weak: absent in a static
 * program, where a strong reference would drag glibc's malloc.o in beside rampart. */
extern void *__libc_malloc(size_t) __attribute__((weak));
extern void __libc_free(void *) __attribute__((weak));
extern void *__libc_calloc(size_t, size_t) __attribute__((weak));
extern void *__libc_realloc(void *, size_t) __attribute__((weak));
extern void *__libc_memalign(size_t, size_t) __attribute__((weak));
extern void *__libc_valloc(size_t) __attribute__((weak));
extern void *__libc_pvalloc(size_t) __attribute__((weak));
extern struct mallinfo __libc_mallinfo(void) __attribute__((weak));
extern int __libc_mallopt(int, int) __attribute__((weak));

bool passthrough_available(void)
{
	return __libc_malloc && __libc_free && __libc_calloc && __libc_realloc && __libc_memalign && __libc_valloc &&
	       __libc_pvalloc && __libc_mallinfo && __libc_mallopt;
}

void *passthrough_alloc(size_t size, size_t align, bool zero)
{
	if (align) return __libc_memalign(align, size);
	return zero ? __libc_calloc(1, size) : __libc_malloc(size);
}

void passthrough_free(void *p) { __libc_free(p); }
void *passthrough_realloc(void *p, size_t size) { return __libc_realloc(p, size); }
void *passthrough_valloc(size_t size) { return __libc_valloc(size); }
void *passthrough_pvalloc(size_t size) { return __libc_pvalloc(size); }
struct mallinfo passthrough_mallinfo(void) { return __libc_mallinfo(); }
int passthrough_mallopt(int param, int value) { return __libc_mallopt(param, value); }

/* The C library's definition of name, looked up once per name in the C library itself
 * (dlsym on its handle searches it and what it needs, not the whole process): the next
 * definition behind rampart's own (RTLD_NEXT) is another allocator's where one is loaded
 * after rampart (redis links jemalloc), and its malloc_usable_size of a block glibc
 * made crashed (issue 52's soak). RTLD_NEXT only where the C library's map is not found.
 * Only read in a passthrough process: a process that runs rampart never fills or
 * consults these slots. 1 marks "looked for, not there". */
#define MISSING ((uintptr_t)1)

static void *next_symbol(_Atomic uintptr_t *slot, const char *name, const void *self)
{
	uintptr_t f = atomic_load_explicit(slot, memory_order_acquire);
	if (!f) {
#if __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34)
		int saved = errno;
		/* The C library's own handle (loaded already: RTLD_NOLOAD opens nothing). dlopen
		 * is found at run time, not linked: a reference would make every static link of
		 * a program with rampart warn of it (where passthrough is unavailable anyway). */
		void *(*open_library)(const char *, int) = (void *(*)(const char *, int))dlsym(RTLD_DEFAULT, "dlopen");
		void *libc = open_library ? open_library(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD) : NULL;
		void *sym = dlsym(libc ? libc : RTLD_NEXT, name);
		errno = saved;
		f = sym && sym != self ? (uintptr_t)sym : MISSING; /* never call ourselves back */
#else
		(void)name, (void)self; /* dlsym lives in libdl here; the library does not link it */
		f = MISSING;
#endif
		atomic_store_explicit(slot, f, memory_order_release);
	}
	return f == MISSING ? NULL : (void *)f;
}

#define NEXT(type, name) ((type)next_symbol(&next_##name, #name, (const void *)name))
static _Atomic uintptr_t next_malloc_usable_size, next_malloc_trim, next_mallinfo2, next_malloc_info,
	next_malloc_stats;

size_t passthrough_usable_size(void *p)
{
	size_t (*f)(void *) = NEXT(size_t (*)(void *), malloc_usable_size);
	return f ? f(p) : 0;
}

int passthrough_trim(size_t pad)
{
	int (*f)(size_t) = NEXT(int (*)(size_t), malloc_trim);
	return f ? f(pad) : 0;
}

struct mallinfo2 passthrough_mallinfo2(void)
{
	struct mallinfo2 (*f)(void) = NEXT(struct mallinfo2 (*)(void), mallinfo2);
	return f ? f() : (struct mallinfo2){0};
}

int passthrough_info(int options, FILE *fp)
{
	int (*f)(int, FILE *) = NEXT(int (*)(int, FILE *), malloc_info);
	if (f) return f(options, fp);
	errno = ENOSYS;
	return -1;
}

void passthrough_stats(void)
{
	void (*f)(void) = NEXT(void (*)(void), malloc_stats);
	if (f) f();
}

#else /* another C library: rampart cannot step aside */

bool passthrough_available(void) { return false; }
void *passthrough_alloc(size_t size, size_t align, bool zero) { return NULL; }
void passthrough_free(void *p) {}
void *passthrough_realloc(void *p, size_t size) { return NULL; }
void *passthrough_valloc(size_t size) { return NULL; }
void *passthrough_pvalloc(size_t size) { return NULL; }
size_t passthrough_usable_size(void *p) { return 0; }
int passthrough_trim(size_t pad) { return 0; }
void passthrough_stats(void) {}

#endif
