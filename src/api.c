/*
 * api.c — the public functions. The only file that knows their names; it checks
 * arguments, sets errno, and hands valid requests to the allocators below.
 *
 * errno: a successful call leaves it alone; a failed allocation sets ENOMEM (or
 * EINVAL for a bad alignment), and nothing else ever touches it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "../include/rampart.h"
#include "guard.h"
#include "init.h"
#include "large.h"
#include "os.h"

#define API __attribute__((visibility("default")))

/* Largest alignment honoured; beyond it the guards would dominate the mapping. */
#define MAX_ALIGN ((size_t)1 << 30)

static void *alloc(size_t size, size_t align)
{
	if (unlikely(!rampart_ready())) return NULL;
	return large_alloc(size, align > os_page ? align : 0);
}

static void *alloc_or_enomem(size_t size, size_t align)
{
	void *p = alloc(size, align);
	if (unlikely(!p)) errno = ENOMEM;
	return p;
}

static void release(void *p, bool sized, size_t size, size_t align)
{
	if (!p) return;
	if (unlikely(!rampart_ready())) fatal("free of a pointer rampart never handed out", p);
	large_free(p, sized, size, align);
}

API void *malloc(size_t size) { return alloc_or_enomem(size, 0); }

API void free(void *p) { release(p, false, 0, 0); }

API void free_sized(void *p, size_t size) { release(p, true, size, 0); }

API void free_aligned_sized(void *p, size_t align, size_t size) { release(p, true, size, align ? align : 1); }

API void *calloc(size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	/* Large blocks come from fresh or reopened pages, which the kernel zeroed. */
	return alloc_or_enomem(total, 0);
}

API void *realloc(void *p, size_t size)
{
	if (!p) return malloc(size);
	if (size == 0) { /* glibc's choice: free and return NULL */
		free(p);
		return NULL;
	}
	if (unlikely(!rampart_ready())) fatal("realloc of a pointer rampart never handed out", p);
	void *q = large_realloc(p, size);
	if (unlikely(!q)) errno = ENOMEM;
	return q;
}

API void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, total);
}

static void *aligned(size_t align, size_t size)
{
	if (!is_pow2(align)) {
		errno = EINVAL;
		return NULL;
	}
	if (align > MAX_ALIGN) {
		errno = ENOMEM;
		return NULL;
	}
	return alloc_or_enomem(size, align);
}

API void *aligned_alloc(size_t align, size_t size) { return aligned(align, size); }

API void *memalign(size_t align, size_t size) { return aligned(align, size); }

API int posix_memalign(void **out, size_t align, size_t size)
{
	if (!is_pow2(align) || align % sizeof(void *)) return EINVAL;
	if (align > MAX_ALIGN) return ENOMEM;
	void *p = alloc(size, align);
	if (!p) return ENOMEM;
	*out = p;
	return 0;
}

API void *valloc(size_t size)
{
	if (unlikely(!rampart_ready())) {
		errno = ENOMEM;
		return NULL;
	}
	return alloc_or_enomem(size, os_page);
}

API void *pvalloc(size_t size)
{
	size_t rounded;
	if (unlikely(!rampart_ready())) {
		errno = ENOMEM;
		return NULL;
	}
	if (!page_round(size ? size : 1, &rounded)) {
		errno = ENOMEM;
		return NULL;
	}
	return alloc_or_enomem(rounded, os_page);
}

API size_t malloc_usable_size(void *p)
{
	if (!p) return 0;
	if (unlikely(!rampart_ready())) fatal("malloc_usable_size of a pointer rampart never handed out", p);
	return large_usable_size(p);
}

API size_t malloc_object_size(const void *p)
{
	if (!p || !rampart_ready()) return 0;
	return large_object_size(p);
}

API int malloc_trim(size_t pad)
{
	(void)pad;
	if (!rampart_ready()) return 0;
	return large_trim();
}

API const char *rampart_guard_backend(void)
{
	if (!rampart_ready()) return "none";
	return guard_backend_name();
}
