/*
 * meta.c — a bump allocator of pages inside one region that grows in place in its own
 * window of address space (guard_window), grown closed (behind guard markers while the
 * region is small, PROT_NONE beyond: guard_grow) and opened as it is handed out. Freed
 * chunks are closed and remembered by size for reuse; the list lives in the region.
 */
#define _GNU_SOURCE
#include "guard/meta.h"

#include "guard/guard.h"
#include "guard/place.h"
#include "guard/vma_budget.h"
#include "base/roots.h"
#include "base/report.h"
#include "os/lock.h"
#include "os/os.h"
#include "os/random.h"

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
	size_t window;    /* the region may grow up to this many bytes */
	unsigned nfree;
	struct meta_chunk free[META_FREE_SLOTS];
};

static struct lock meta_lock_word; /* all zero: free */

void meta_lock(void) { lock_take(&meta_lock_word); }
void meta_unlock(void) { lock_give(&meta_lock_word); }
void meta_reset_lock(void) { lock_reset(&meta_lock_word); }

/* Smallest window tried when the address space is short. */
#define META_WINDOW_MIN ((size_t)64 << 20)
/* The region grows by a quarter, at least this much: a few mmap calls in all. */
#define META_GROW_MIN ((size_t)64 << 10)

/* Map the region up to at least end; false out of memory or window. */
static bool meta_grow(struct guard_region *r, size_t window, size_t end)
{
	if (end <= r->size) return true;
	if (end > window) return false;
	/* At least META_GROW_MIN past what is asked (closed address space costs nothing): the
	 * start-up's first blocks, the slab's and then the large allocator's, fit one growth. */
	size_t want = MIN(window, align_up(MAX(end + META_GROW_MIN, r->size + MAX(r->size / 4, META_GROW_MIN)), os_page));
	return guard_grow(r, want, "rampart:meta") || guard_grow(r, end, "rampart:meta");
}

struct meta_header *meta_init(void)
{
	size_t window = CONFIG_META_RESERVE;
	uintptr_t base;
	while (!guard_window(window, &base))
		if ((window /= 2) < META_WINDOW_MIN) return NULL;
	/* The region starts a page into the window: the closed page below it (guard_grow)
	 * is the window's too. */
	struct guard_region r;
	guard_start(&r, base + os_page);
	window -= os_page;
	/* A random start in the first 16 pages: the header's address is not the window's
	 * (whose own start is random among billions of pages). */
	struct random_state rnd = {.source = NULL};
	random_reseed(&rnd);
	size_t start = (1 + random_below(&rnd, 15)) * os_page;
	/* The first growth opens the header's page with it (guard_grow_open): a call fewer
	 * at every start-up. Only the header and its guard page: the slab's blocks, next,
	 * lie in a growth of their own, behind markers, each opened by one madvise. */
	size_t first = MIN(window, start + 2 * os_page);
	bool opened = false;
	if (!guard_grow_open(&r, first, "rampart:meta", start, os_page, &opened) &&
	    !guard_grow_open(&r, start + 2 * os_page, "rampart:meta", start, os_page, &opened)) {
		guard_window_release(base);
		return NULL;
	}
	if (!opened && !guard_extend(&r, start, os_page)) {
		(void)guard_unmap(&r);
		guard_window_release(base);
		return NULL;
	}
	struct meta_header *h = (void *)(r.base + start);
	h->region = r;
	h->window = window;
	h->next = h->opened = start + 2 * os_page; /* header, then a guard page */
	return h;
}

bool meta_contains(const void *p)
{
	struct meta_header *h = roots.meta;
	return h && (uintptr_t)p - h->region.base < h->region.size;
}

/* What an open chunk costs in VMAs: between closed pages (its guard page and the one
 * below it) that are PROT_NONE, two; behind markers, none. */
static long chunk_vmas(const struct meta_header *h) { return guard_closes_marked(&h->region) ? 0 : 2; }

void *meta_alloc(size_t bytes)
{
	struct meta_header *h = roots.meta;
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
			vma_add(chunk_vmas(h));
			/* What is left after the page that stays closed as this chunk's guard. */
			if (c.len > len + os_page) {
				h->free[best].off += len + os_page;
				h->free[best].len -= len + os_page;
			} else {
				h->free[best] = h->free[--h->nfree];
			}
		}
	} else if (len < h->window && meta_grow(&h->region, h->window, h->next + len + os_page)) {
		/* Open the chunk; the page after it stays closed as its guard. Grown behind
		 * markers it is closed already; otherwise, under markers, it is opened and
		 * closed again so that the region stays one VMA. */
		bool marked = guard_span_in_marked(&h->region, h->next, len + os_page);
		bool markers = !marked && (h->region.flags & REGION_MARKERS);
		if (guard_extend(&h->region, h->next, markers ? len + os_page : len)) {
			if (markers && !guard_close(&h->region, h->next + len, os_page))
				report_fatal(OP_INTERNAL, ERR_META_GUARD, (void *)(h->region.base + h->next + len));
			result = (void *)(h->region.base + h->next);
			h->next += len + os_page;
			if (!marked) vma_add(chunk_vmas(h));
		}
	}
	/* Page-aligned and inside the region: metadata pointers point only in here. Under
	 * the lock: the region's size is the lock's (another thread's meta_grow writes it). */
	invariant(!result || (!((uintptr_t)result & (os_page - 1)) && meta_contains(result)));
	meta_unlock();
	return result;
}

bool meta_alloc_many(const size_t *bytes, void **out, unsigned n)
{
	struct meta_header *h = roots.meta;
	size_t len[META_MANY_MAX], total = 0;
	bool ok = n <= META_MANY_MAX;
	for (unsigned i = 0; ok && i < n; i++) {
		out[i] = NULL;
		ok = page_round(bytes[i], &len[i]) && len[i] && len[i] < h->window;
		total += len[i] + os_page;
	}
	if (!ok) return false;
	meta_lock();
	/* Fresh space of a region under markers but past its marked part: each chunk alone
	 * would be opened with its guard page and the page closed again, two calls a chunk.
	 * Here all chunks and their guards open in one call and the guards close in one. */
	bool batch = !h->nfree && total < h->window && meta_grow(&h->region, h->window, h->next + total) &&
		     (h->region.flags & REGION_MARKERS) && guard_backend() == GUARD_MADVISE &&
		     !guard_span_in_marked(&h->region, h->next, total);
	if (batch && guard_extend(&h->region, h->next, total)) {
		size_t guards[META_MANY_MAX], at = h->next;
		for (unsigned i = 0; i < n; i++) {
			out[i] = (void *)(h->region.base + at);
			guards[i] = at + len[i];
			at += len[i] + os_page;
		}
		if (!guard_close_pages(&h->region, guards, n))
			report_fatal(OP_INTERNAL, ERR_META_GUARD, (void *)(h->region.base + guards[0]));
		h->next = at;
		meta_unlock();
		return true;
	}
	meta_unlock();
	for (unsigned i = 0; i < n; i++)
		if (!(out[i] = meta_alloc(bytes[i]))) {
			while (i--) meta_free(out[i], bytes[i]);
			return false;
		}
	return true;
}

void meta_free(void *p, size_t bytes)
{
	struct meta_header *h = roots.meta;
	size_t len;
	if (!p || !page_round(bytes, &len)) return;
	meta_lock();
	invariant(meta_contains(p) && !((uintptr_t)p & (os_page - 1))); /* the size is the lock's */
	size_t off = (uintptr_t)p - h->region.base;
	long vmas = chunk_vmas(h);
	if (!guard_close(&h->region, off, len)) {
		/* Cannot close (VMA limit): wipe it so nothing stale is left, and forget it. */
		for (size_t i = 0; i < len / sizeof(long); i++) ((volatile long *)p)[i] = 0;
	} else {
		vma_add(-vmas);
		if (h->nfree < META_FREE_SLOTS) h->free[h->nfree++] = (struct meta_chunk){off, len};
	}
	meta_unlock();
}
