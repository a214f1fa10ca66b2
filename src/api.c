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
#include "api.h"
#include "guard.h"
#include "init.h"
#include "large.h"
#include "os.h"
#include "slab.h"

/* glibc extensions that musl's headers do not declare. */
void *pvalloc(size_t size);
int malloc_trim(size_t pad);

#define API __attribute__((visibility("default")))

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

static void *alloc(size_t size, size_t align)
{
	if (unlikely(!rampart_ready())) return NULL;
	unsigned c = class_for(size, align);
	if (likely(c < SC_COUNT)) return slab_alloc(c);
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
	if (likely(slab_contains(p))) slab_free(p, sized, sized ? class_for(size, align) : 0);
	else large_free(p, sized, size, align);
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
	void *p = alloc_or_enomem(total, 0);
	/* Large blocks come from fresh or reopened pages, which the kernel zeroed. A slot
	 * is known zero only where zero-on-free wiped it and the write-after-free check
	 * proved nothing wrote to it since: without that check a stale pointer may have,
	 * and calloc must return zeros to a correct program whatever a buggy one did. */
#if !CONFIG_ZERO_ON_FREE || !CONFIG_WRITE_AFTER_FREE_CHECK
	if (p && slab_contains(p)) memset(p, 0, total);
#endif
	return p;
}

/* Move a block into a new allocation of size bytes, copying what both can hold. */
static void *realloc_move(void *p, size_t old_usable, size_t size)
{
	void *q = alloc(size, 0);
	if (unlikely(!q)) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(q, p, MIN(old_usable, size));
	release(p, false, 0, 0);
	return q;
}

API void *realloc(void *p, size_t size)
{
	/* Internal calls, not malloc/free: through the PLT they could reach another
	 * allocator interposed on top of this one. */
	if (!p) return alloc_or_enomem(size, 0);
	if (size == 0) { /* glibc's choice: free and return NULL */
		release(p, false, 0, 0);
		return NULL;
	}
	if (unlikely(!rampart_ready())) fatal("realloc of a pointer rampart never handed out", p);
	if (slab_contains(p)) {
		/* Checks that p is live and its canary intact before anything else. */
		unsigned c = slab_class_of_live(p);
		if (size <= SMALL_MAX && sc_of(size) == c) return p;
		return realloc_move(p, sc_usable(c), size);
	}
	if (size <= SMALL_MAX)
		return realloc_move(p, large_usable_size(p, "realloc of a pointer that is not a live allocation"), size);
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

/* The internal names (api.h): the same functions, bound locally. */
void *rampart_malloc(size_t size) { return alloc_or_enomem(size, 0); }
void *rampart_aligned_alloc(size_t align, size_t size) { return aligned(align, size); }
void rampart_free(void *p) { release(p, false, 0, 0); }
void rampart_free_sized(void *p, size_t size) { release(p, true, size, 0); }
void rampart_free_aligned_sized(void *p, size_t align, size_t size) { release(p, true, size, align ? align : 1); }

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
	if (slab_contains(p)) return slab_usable_size(p);
	return large_usable_size(p, "malloc_usable_size of a pointer that is not a live allocation");
}

API size_t malloc_object_size(const void *p)
{
	if (!p || !rampart_ready()) return 0;
	if (slab_contains(p)) return slab_object_size(p);
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
