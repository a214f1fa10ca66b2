/*
 * meta.c — a bump allocator of pages inside one PROT_NONE reservation, opened as it
 * grows (never guard-install a huge reservation: markers cost page tables). Freed
 * chunks are closed and remembered by size for reuse; the list lives in the region.
 */
#define _GNU_SOURCE
#include "meta.h"

#include <pthread.h>

#include "guard.h"
#include "init.h"
#include "os.h"
#include "random.h"

#define META_FREE_SLOTS 120

struct meta_chunk {
	uintptr_t off;
	size_t len;
};

/* Lives in the first page of the region. */
struct meta_header {
	struct guard_region region;
	size_t next;      /* offset of the next fresh allocation */
	size_t opened;    /* offsets below this were opened at least once */
	unsigned nfree;
	struct meta_chunk free[META_FREE_SLOTS];
};

static pthread_mutex_t meta_mutex = PTHREAD_MUTEX_INITIALIZER;

void meta_lock(void) { pthread_mutex_lock(&meta_mutex); }
void meta_unlock(void) { pthread_mutex_unlock(&meta_mutex); }
void meta_reset_lock(void) { pthread_mutex_init(&meta_mutex, NULL); }

bool meta_init(void)
{
	struct guard_region r;
	if (!guard_reserve(&r, CONFIG_META_RESERVE, "rampart:meta")) return false;
	/* A random start inside the first sixteenth: the header's address is not at a
	 * fixed distance from the mapping the kernel chose. */
	struct random_state rnd;
	random_reseed(&rnd);
	size_t pages = CONFIG_META_RESERVE / os_page;
	size_t start = (1 + random_below(&rnd, pages / 16)) * os_page;
	if (!guard_extend(&r, start, os_page)) {
		(void)guard_unmap(&r);
		return false;
	}
	struct meta_header *h = (void *)(r.base + start);
	h->region = r;
	h->next = h->opened = start + 2 * os_page; /* header, then a guard page */
	ro.meta = h;
	return true;
}

bool meta_contains(const void *p)
{
	struct meta_header *h = ro.meta;
	return h && (uintptr_t)p - h->region.base < h->region.size;
}

void *meta_alloc(size_t bytes)
{
	struct meta_header *h = ro.meta;
	size_t len;
	if (!page_round(bytes, &len) || !len) return NULL;
	void *result = NULL;
	meta_lock();
	/* Smallest remembered chunk that fits: metadata sizes repeat (tables double). */
	unsigned best = h->nfree;
	for (unsigned i = 0; i < h->nfree; i++)
		if (h->free[i].len >= len && (best == h->nfree || h->free[i].len < h->free[best].len)) best = i;
	if (best < h->nfree) {
		struct meta_chunk c = h->free[best];
		if (guard_open(&h->region, c.off, len)) {
			result = (void *)(h->region.base + c.off);
			/* What is left after the page that stays closed as this chunk's guard. */
			if (c.len > len + os_page) {
				h->free[best].off += len + os_page;
				h->free[best].len -= len + os_page;
			} else {
				h->free[best] = h->free[--h->nfree];
			}
		}
	} else if (h->next + len + os_page <= h->region.size && len < h->region.size) {
		/* Open the chunk; the page after it stays closed as its guard. Under markers
		 * the guard page is opened and closed again so the region stays one VMA. */
		bool markers = h->region.flags & REGION_MARKERS;
		if (guard_extend(&h->region, h->next, markers ? len + os_page : len)) {
			if (markers && !guard_close(&h->region, h->next + len, os_page))
				fatal("cannot close metadata guard page", (void *)(h->region.base + h->next + len));
			result = (void *)(h->region.base + h->next);
			h->next += len + os_page;
		}
	}
	meta_unlock();
	return result;
}

void meta_free(void *p, size_t bytes)
{
	struct meta_header *h = ro.meta;
	size_t len;
	if (!p || !page_round(bytes, &len)) return;
	meta_lock();
	size_t off = (uintptr_t)p - h->region.base;
	if (!guard_close(&h->region, off, len)) {
		/* Cannot close (VMA limit): wipe it so nothing stale is left, and forget it. */
		for (size_t i = 0; i < len / sizeof(long); i++) ((volatile long *)p)[i] = 0;
	} else if (h->nfree < META_FREE_SLOTS) {
		h->free[h->nfree++] = (struct meta_chunk){off, len};
	}
	meta_unlock();
}
