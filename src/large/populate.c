/* populate.c — populate new large blocks with the credit of touched ones freed; see populate.h. */
#include "large/populate.h"

#include <errno.h>
#include <stdatomic.h>

#include "guard/guard.h"
#include "os/os.h"

void populate_init(struct populate_credit *r, size_t cap)
{
	*r = (struct populate_credit){.cap = cap & ~(os_page - 1)};
}

/* The smallest span worth a system call to populate. */
#define POPULATE_MIN_BYTES ((size_t)16 * os_page)

/* The huge page size when new blocks get huge pages, else 0; asks the kernel once (and
 * again after a transient failure). Threads racing here get the same answer. */
static size_t huge_size(struct populate_credit *r, int *mode)
{
	size_t h = atomic_load_explicit(&r->huge, memory_order_relaxed);
	if (!h) {
		size_t size;
		int m = os_huge_pages(&size);
		if (!m) return 0;
		h = size | (size_t)m;
		atomic_store_explicit(&r->huge, h, memory_order_relaxed);
	}
	*mode = (int)(h & 3);
	return h & ~(size_t)3;
}

void populate_freed(struct populate_credit *r, const void *p, size_t len, size_t off, size_t populated,
		    const unsigned char *vec)
{
	if (!len || !r->cap || atomic_load_explicit(&r->off, memory_order_relaxed)) return;
	if (!r->dense && r->skip) {
		r->skip--;
		return;
	}
	uint64_t now = os_now_ms();
	if (now >= r->until_ms) r->credit = 0;
	if (r->credit >= r->cap) { /* full: no mincore at all */
		r->until_ms = now + CONFIG_LARGE_REFILL_MS;
		return;
	}
	/* Pages rampart populated look like any other resident page, and nothing of the
	 * block is read to see what was written (the program may have protected it). So
	 * they earn credit again less a tax, and the witnesses rampart left unpopulated at
	 * both ends of the block (populate_take) say which: where the program touched at
	 * least half of each, it likely used what lies between too, and the tax is small
	 * (POPULATE_TAX_SEEN), so a block that keeps being used is populated nearly whole.
	 * Otherwise (a program that fills only a prefix, or only the top of a stack, or
	 * nothing) the tax is a quarter, and credit nobody uses shrinks by a quarter of
	 * every block it populates. Pages beyond the populated range are surely the
	 * program's and count whole. A block realloc shrank may have lost its tail witness:
	 * a quarter. */
	off = MIN(off, len);
	size_t ours = MIN(populated, len - off), tail = len - off - ours;
	/* One mincore pass counts the block and its witnesses. A block less than half
	 * resident earns nothing: a sparse one stops the count early (mincore runs under
	 * the large lock), and then the witness counts are partial but unused. */
	size_t ends_in[2];
	size_t resident = vec ? os_resident_counted(vec, len, ours ? off : 0, ours ? tail : 0, ends_in)
			      : os_resident_ends((void *)p, len, len / 2, ours ? off : 0, ours ? tail : 0, ends_in);
	size_t used = resident;
	if (ours) {
		bool seen = off && tail && ends_in[0] >= off / 2 && ends_in[1] >= tail / 2;
		size_t theirs = MIN(resident, ends_in[0] + ends_in[1]);
		ours = MIN(ours, resident - theirs);
		used = theirs + ours - ours / (seen ? POPULATE_TAX_SEEN : POPULATE_TAX_UNSEEN);
	}
	r->dense = used >= len / 2;
	if (!r->dense) {
		r->skip = POPULATE_PROBE_EVERY - 1;
		return;
	}
	r->until_ms = now + CONFIG_LARGE_REFILL_MS;
	r->credit = MIN(r->cap, r->credit + (used & ~(os_page - 1)));
	invariant(r->credit <= r->cap);
}

size_t populate_take(struct populate_credit *r, uintptr_t p, size_t len, size_t *off)
{
	if (!r->credit) return 0;
	if (atomic_load_explicit(&r->off, memory_order_relaxed)) {
		r->credit = 0;
		return 0;
	}
	if (os_now_ms() >= r->until_ms) {
		r->credit = 0;
		return 0;
	}
	/* Both ends of the block stay unpopulated, the witnesses of its use: whether the
	 * program touches them is what populate_freed judges the populated part by. */
	size_t w = MAX(os_page, (len / POPULATE_WITNESS_PART / 2) & ~(os_page - 1));
	if (len <= 2 * w) return 0;
	uintptr_t start = p + w, end = start + (MIN(len - 2 * w, r->credit) & ~(os_page - 1));
	/* Under THP "always" a fault anywhere in a huge-page span inside the block brings
	 * the whole span in: populating must not start or stop inside one, or it would
	 * fill a witness (the program's own first touch there costs one fault). */
	int mode = 0;
	size_t h = huge_size(r, &mode);
	if (h && mode == OS_HUGE_ALWAYS) {
		uintptr_t s0 = start & ~(uintptr_t)(h - 1), e0 = end & ~(uintptr_t)(h - 1);
		if (s0 != start && s0 >= p && s0 + h <= p + len) start = s0 + h;
		if (e0 != end && e0 >= p && e0 + h <= p + len) end = e0;
		if (end < start) end = start;
	}
	size_t take = end - start;
	if (take < POPULATE_MIN_BYTES) return 0; /* a fault or two cost less than the call */
	invariant(take <= r->credit); /* rounding only shrinks it */
	r->credit -= take;
	*off = start - p;
	return take;
}

bool populate_counts(const struct populate_credit *r)
{
	if (!r->cap || atomic_load_explicit(&r->off, memory_order_relaxed) || (!r->dense && r->skip)) return false;
	return r->credit < r->cap || os_now_ms() >= r->until_ms;
}

bool populate_marked(struct populate_credit *r, uintptr_t p, size_t len)
{
	int mode;
	size_t size = len ? huge_size(r, &mode) : 0;
	return size && mode == OS_HUGE_ASKED && align_up(p, size) + size <= p + len;
}

/* The huge-page windows of [p, p + len): the spans aligned to the huge page size inside
 * it. Empty page tables keep the kernel from mapping a huge page there, and a reused
 * region has them (closing a span installs guard markers, which need page tables, and
 * reopening removes the markers but not the tables): MADV_DONTNEED frees empty ones
 * where the kernel reclaims page tables (CONFIG_PT_RECLAIM: Linux 6.14 and later, on
 * x86_64 first); elsewhere only fresh regions get huge pages and the call is wasted.
 * The span is fresh and no one has seen it, so dropping it loses nothing. Where the
 * kernel maps huge pages only on request, the windows are marked MADV_HUGEPAGE: a mark
 * splits the VMA at its ends, so only whole windows are marked, and it stays with the
 * address space after the block is freed (under the madvise backend; the mprotect
 * backend's close maps the span anew, without it). Both are advice: whatever fails
 * leaves the pages to come one by one, as before. */
static void huge_windows(struct populate_credit *r, void *p, size_t len)
{
	int mode;
	size_t size = huge_size(r, &mode);
	if (!size) return;
	uintptr_t lo = align_up((uintptr_t)p, size), hi = ((uintptr_t)p + len) & ~(uintptr_t)(size - 1);
	if (hi <= lo) return;
	/* Locked memory refuses MADV_DONTNEED (EINVAL), and then gets no mark either: its
	 * pages are populated at the lock anyway. */
	int err = guard_drop_fresh((void *)lo, hi - lo);
	if (!err && mode == OS_HUGE_ASKED) err = guard_want_huge((void *)lo, hi - lo);
	(void)err; /* refused: the pages come as they would have */
}

void populate_block(struct populate_credit *r, void *p, size_t len)
{
	huge_windows(r, p, len);
	int err = guard_populate(p, len);
	if (!err) {
		if (!atomic_load_explicit(&r->worked, memory_order_relaxed))
			atomic_store_explicit(&r->worked, true, memory_order_relaxed);
		return;
	}
	/* Advice only: whatever the kernel says, the pages come by faults as they would
	 * have. EINVAL before any success is a kernel before 5.14 (the advice is unknown):
	 * off for the process. Later failures are never fatal: a block's pages may carry
	 * what a program did to them (mlock, a locked mapping's limit, a poisoned page), and
	 * a failed optimisation must not end a correct program. */
	if (err == EINVAL && !atomic_load_explicit(&r->worked, memory_order_relaxed))
		atomic_store_explicit(&r->off, true, memory_order_relaxed);
}

void populate_fork_child(struct populate_credit *r)
{
	/* What the parent freed is the parent's: a child forked within the credit's
	 * lifetime must not populate it again (a pre-forking server would multiply it). */
	if (!r->credit && !r->dense && !r->skip) return; /* nothing to reset: no page written */
	r->credit = 0;
	r->dense = false;
	r->skip = 0;
}
