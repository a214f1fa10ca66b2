/*
 * guard.c — two ways to make memory unreachable, chosen per region and falling
 * back per operation.
 *
 * madvise backend: a region is one read-write mapping; closed spans are guard
 * markers in the page tables (MADV_GUARD_INSTALL, Linux 6.13+), so any number of
 * closed spans costs no extra VMA and neighbouring regions merge into one VMA.
 * mprotect backend: closed spans are PROT_NONE; every boundary is a VMA.
 *
 * Why the fallbacks look the way they do (kernel 6.18, observed; docs/DESIGN.md, "The guard-region layer"):
 *  - MADV_GUARD_INSTALL fails with EINVAL on a VM_LOCKED mapping (any mapping after
 *    mlockall(MCL_CURRENT), new ones after MCL_FUTURE). Such a span is closed with
 *    mprotect instead and the madvise backend is latched off for new mappings.
 *  - A locked mapping refuses MADV_DONTNEED, and a fresh MAP_FIXED mapping may hit
 *    RLIMIT_MEMLOCK, so the last resort of a close is a plain mprotect(PROT_NONE),
 *    which cannot fail for memory reasons unless it splits past the VMA limit.
 */
#define _GNU_SOURCE
#include "guard/guard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/report.h"
#include "os/os.h"
#include "base/counters.h"
#include "guard/label.h"
#include "guard/place.h"
#include "guard/vma_budget.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif
#ifndef MADV_GUARD_REMOVE
#define MADV_GUARD_REMOVE 103
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define RW (PROT_READ | PROT_WRITE)
#if defined(__aarch64__) && !defined(PROT_MTE)
#define PROT_MTE 0x20
#endif

/* A span the callers may name: whole pages of what r has mapped. Every operation on a
 * span states it (invariant): an offset past the region or off a page boundary would
 * close, open or drop someone else's memory, or only part of a page. */
static inline bool span_of(const struct guard_region *r, size_t off, size_t len)
{
	return !((off | len) & (os_page - 1)) && off <= r->size && len <= r->size - off;
}

/* What an open span of r is: read-write, and tagged where r's memory carries tags
 * (slab regions under arm64 memory tagging). */
static int rw_of(const struct guard_region *r)
{
#if defined(__aarch64__)
	if (r->flags & REGION_TAGGED) return RW | PROT_MTE;
#endif
	(void)r;
	return RW;
}

static _Atomic int backend = GUARD_MPROTECT;

enum guard_backend guard_backend(void)
{
	return (enum guard_backend)atomic_load_explicit(&backend, memory_order_relaxed);
}

const char *guard_backend_name(void)
{
	return guard_backend() == GUARD_MADVISE ? "madvise" : "mprotect";
}

static void latch_off(void)
{
	if (atomic_exchange_explicit(&backend, GUARD_MPROTECT, memory_order_relaxed) == GUARD_MADVISE)
		stat_inc(STAT_GUARD_LATCH);
}

/* Does the kernel really refuse access to p? A system call that reads user memory
 * answers EFAULT without the process taking a signal; an emulator that accepted the
 * advice and ignored it hands the kernel a readable page (an empty path: ENOENT). */
static bool really_blocks(const void *p)
{
	int saved = errno;
	bool blocked = access((const char *)p, F_OK) != 0 && errno == EFAULT;
	errno = saved;
	return blocked;
}

/* A page of the library's own zero-filled data, never used for anything else: the probe
 * needs no mapping of its own (two system calls fewer at every start-up). Page-aligned,
 * so it lies in the anonymous part of the data segment, past the file's last page. */
static union {
	char page[4096];
} probe_page __attribute__((aligned(4096))) STATIC_APART(probe_page);

static bool probe_markers(void)
{
	if (os_page == sizeof probe_page) {
		void *q = &probe_page;
		if (os_advise(q, os_page, MADV_GUARD_INSTALL) == 0) {
			bool blocks = really_blocks(q);
			/* A marker left behind would harm nothing: the page is never used. */
			return os_advise(q, os_page, MADV_GUARD_REMOVE) == 0 && blocks;
		}
		/* Refused here (a kernel that marks only mappings of its own kind): ask as
		 * before, on a fresh mapping. */
	}
	void *p = NULL;
	if (os_map(&p, os_page, OS_READ_WRITE, OS_ANYWHERE)) return false;
	bool ok = false;
	if (os_advise(p, os_page, MADV_GUARD_INSTALL) == 0) {
		ok = really_blocks(p);
		if (os_advise(p, os_page, MADV_GUARD_REMOVE) != 0) ok = false;
	}
	if (os_unmap(p, os_page)) ok = false;
	return ok;
}

void guard_init(enum guard_backend want)
{
	int chosen = GUARD_MPROTECT;
	/* Strict overcommit charges every read-write byte, guards included: a madvise-backed
	 * region would be charged for its guard pages, so keep guards PROT_NONE there. */
	bool strict = os_read_long("/proc/sys/vm/overcommit_memory") == 2;
	if (want != GUARD_MPROTECT && !strict && probe_markers()) chosen = GUARD_MADVISE;
	else if (want == GUARD_MADVISE) report_warn(WARN_GUARD_MADVISE, NULL);
	atomic_store_explicit(&backend, chosen, memory_order_relaxed);
}

static bool markers_on(const struct guard_region *r)
{
	return (r->flags & REGION_MARKERS) && guard_backend() == GUARD_MADVISE;
}

/* Name the whole region (label.h). */
static void label(struct guard_region *r, const char *name)
{
	r->flags = label_region((void *)r->base, r->size, name, r->flags);
}

/* Is the region one mapping of its own (a large region), so that a span of it may be
 * replaced by a fresh mapping? Growing regions and slab regions open and close piecemeal
 * and keep their one anon_vma (REGION_KEEP_ANON). */
static bool replaceable(const struct guard_region *r)
{
	return !(r->flags & (REGION_KEEP_ANON | REGION_GROWS));
}


/* Close [p, p+len) without guard markers.
 *
 * A fresh MAP_FIXED PROT_NONE mapping blocks access and drops the pages in one call,
 * and gives back the commit charge under strict overcommit, which mprotect never does
 * once pages were written. But the fresh mapping has no anon_vma, and VMAs with
 * different anon_vmas never merge: a span reopened later faults in an anon_vma of its
 * own unless a neighbour lends one. For one large region that is harmless (closed
 * regions with no anon_vma merge with their neighbours again); in a reservation whose
 * spans open and close piecemeal (REGION_KEEP_ANON: slab regions) each reopened island
 * becomes an anon_vma of its own that never merges with the next island (measured:
 * slab churn under mprotect doubled the VMA count from the second round on). Those
 * close with mprotect + MADV_DONTNEED, which keeps the one anon_vma of the region. */
static bool close_protected(struct guard_region *r, void *p, size_t len)
{
	void *fixed = p;
	bool keep_anon = r->flags & REGION_KEEP_ANON;
	if (!keep_anon && os_map(&fixed, len, OS_CLOSED, OS_REPLACE) == 0) {
		r->flags |= REGION_PROTECTED;
		label_again(r->flags, p, len);
		return true;
	}
	/* Closed in place: what a program did to the span (mlock, MADV_DONTFORK, another
	 * protection) stays with it, so a region of its own must never be handed out again. */
	if (replaceable(r)) r->flags |= REGION_STALE;
	int err = os_protect(p, len, PROT_NONE);
	if (err) {
		if (!os_is_oom(err)) report_kernel(OP_MPROTECT, err, p);
		return false;
	}
	r->flags |= REGION_PROTECTED;
	/* Locked memory refuses MADV_DONTNEED; a fresh mapping over it still drops the
	 * pages (returning them matters more than merging), unless RLIMIT_MEMLOCK says no. */
	if (os_advise(p, len, MADV_DONTNEED) && (!keep_anon || os_map(&fixed, len, OS_CLOSED, OS_REPLACE)))
		r->flags |= REGION_RESIDUE; /* pages stay */
	return true;
}

/* Markers refused with EINVAL: the span is locked. Only when new mappings are locked too
 * (mlockall(MCL_FUTURE)) is the backend switched off; one locked block or an
 * mlockall(MCL_CURRENT) leaves new mappings free to carry markers. */
static void markers_refused(void)
{
	if (guard_backend() == GUARD_MADVISE && !probe_markers()) latch_off();
}

bool guard_close(struct guard_region *r, size_t off, size_t len)
{
	invariant(span_of(r, off, len));
	void *p = (void *)(r->base + off);
	if (!len) return true;
	if (markers_on(r)) {
		/* A span of a region of its own is mapped afresh before its markers go on:
		 * whatever a program did to it while it was a block (mprotect, mlock,
		 * MADV_DONTFORK, MADV_WIPEONFORK, MADV_DONTDUMP, MADV_NOHUGEPAGE, a protection
		 * key) goes with the old mapping at the free, as glibc's munmap would drop it.
		 * At the free, not at the reuse: while the span waits closed a fork child would
		 * see a MADV_WIPEONFORK span without its markers, a MADV_DONTFORK one as a hole.
		 * The fresh span merges back into its neighbours (it has no anon_vma yet). Where
		 * the kernel will not map it (a memlock limit, the VMA limit), the markers go
		 * over the span as it is and the region is never reused (REGION_STALE). */
		if (replaceable(r)) {
			void *fixed = p;
			if (os_map(&fixed, len, OS_READ_WRITE, OS_REPLACE) == 0) label_again(r->flags, p, len);
			else r->flags |= REGION_STALE;
		}
		int err = os_advise(p, len, MADV_GUARD_INSTALL);
		if (!err) {
			r->flags |= REGION_MARKED;
			return true;
		}
		if (err == EINVAL) markers_refused();
		else if (!os_is_oom(err)) report_kernel(OP_GUARD_INSTALL, err, p);
		r->flags &= ~REGION_MARKERS;
		stat_inc(STAT_GUARD_FALLBACK);
	}
	return close_protected(r, p, len);
}

bool guard_closes_marked(const struct guard_region *r) { return markers_on(r); }

bool guard_drop(struct guard_region *r, size_t off, size_t len)
{
	invariant(span_of(r, off, len));
	/* Refused only for locked memory (EINVAL), which keeps its pages anyway. */
	return os_advise((void *)(r->base + off), len, MADV_DONTNEED) == 0;
}

bool guard_cut(struct guard_region *r, size_t off, size_t len)
{
	invariant(span_of(r, off, len));
	void *p = (void *)(r->base + off);
	/* In one VMA with the closed page after it, the span carries nothing that guard does
	 * not: whatever a program sets on a span (a protection, an advice, mlock, a key, a
	 * name) makes it a VMA apart, and whatever it set on the whole region the block keeps
	 * too, until the free maps the region afresh. The markers drop its pages; a fresh
	 * mapping would cost a VMA where the region moved whole (guard_move_whole): the span
	 * could not merge with the moved VMA around it. One probe instead of the mapping. */
	if (len && off + len < r->size && markers_on(r) && replaceable(r) && !os_spans_vmas(p, len + os_page)) {
		int err = os_advise(p, len, MADV_GUARD_INSTALL);
		if (!err) {
			r->flags |= REGION_MARKED;
			return true;
		}
		if (err != EINVAL && !os_is_oom(err)) report_kernel(OP_GUARD_INSTALL, err, p);
	}
	return guard_close(r, off, len); /* locked (EINVAL), or a VMA of its own */
}

bool guard_close_pages(struct guard_region *r, const size_t *off, unsigned n)
{
	if (markers_on(r) && !replaceable(r) && n <= OS_SPANS_MAX) {
		struct os_span pages[OS_SPANS_MAX] = {{0}};
		for (unsigned i = 0; i < n; i++) pages[i] = (struct os_span){(void *)(r->base + off[i]), os_page};
		if (os_advise_spans(pages, n, MADV_GUARD_INSTALL) == 0) {
			r->flags |= REGION_MARKED;
			return true;
		}
		/* Refused: each page again, where guard_close sorts out why and falls back. */
	}
	for (unsigned i = 0; i < n; i++)
		if (!guard_close(r, off[i], os_page)) return false;
	return true;
}

bool guard_open(struct guard_region *r, size_t off, size_t len)
{
	invariant(span_of(r, off, len));
	void *p = (void *)(r->base + off);
	if (!len) return true;
	if (r->flags & REGION_MARKED) {
		int err = os_advise(p, len, MADV_GUARD_REMOVE);
		if (err) {
			if (!os_is_oom(err)) report_kernel(OP_GUARD_REMOVE, err, p);
			return false;
		}
	}
	if (r->flags & REGION_PROTECTED) {
		int err = os_protect(p, len, rw_of(r));
		if (err) {
			if (!os_is_oom(err)) report_kernel(OP_MPROTECT, err, p);
			/* Leave it unreachable again: markers were removed above. */
			if (!guard_close(r, off, len)) report_fatal(OP_INTERNAL, ERR_RECLOSE, p);
			return false;
		}
	}
	if (r->flags & REGION_RESIDUE) memset(p, 0, len);
	return true;
}

/* Runs of pages that are not resident in a span to seal, at most: each costs a system
 * call (below); a block used that sparsely goes back to the kernel instead. */
#define SEAL_HOLES_MAX 8

/* Zero or drop the pages [p, p + n) by vec (one byte per page, bit 0: resident): a
 * resident run is zeroed in place; a page that is not resident may be in swap with the
 * old contents, and MADV_DONTNEED drops it (a page never touched costs nothing). False
 * once *holes passes SEAL_HOLES_MAX. */
static bool wipe_by(char *p, size_t n, const unsigned char *vec, unsigned *holes)
{
	size_t pages = n / os_page;
	for (size_t i = 0; i < pages;) {
		size_t j = i;
		bool in = vec[i] & 1;
		while (j < pages && (vec[j] & 1) == in) j++;
		char *run = p + i * os_page;
		if (in) memset(run, 0, (j - i) * os_page);
		else if (++*holes > SEAL_HOLES_MAX || os_advise(run, (j - i) * os_page, MADV_DONTNEED) != 0) return false;
		i = j;
	}
	return true;
}

/* Zero what the program can read back of [p, p + len): its resident pages, in place,
 * the others dropped (wipe_by), as vec says or, without it, mincore now. False when the
 * span is too sparse or the kernel will not say. */
static bool wipe_resident(char *p, size_t len, const unsigned char *vec)
{
	enum { PAGES = 512 }; /* pages per mincore: half a KiB of vector on the stack */
	unsigned char own[PAGES];
	unsigned holes = 0;
	int saved = errno;
	bool ok = true;
	if (vec) ok = wipe_by(p, len, vec, &holes);
	for (size_t off = 0; !vec && off < len && ok; off += PAGES * os_page) {
		size_t n = MIN(len - off, PAGES * os_page);
		ok = mincore(p + off, n, own) == 0 && wipe_by(p + off, n, own, &holes);
	}
	errno = saved;
	return ok;
}

bool guard_seal(struct guard_region *r, size_t off, size_t len, const unsigned char *vec)
{
	invariant(span_of(r, off, len));
	if (!len || off < os_page || off + len + os_page > r->size ||
	    (r->flags & (REGION_RESIDUE | REGION_STALE | REGION_GROWS | REGION_KEEP_ANON)))
		return false;
	/* Under markers the block shares its VMA with the guards around it unless the program
	 * set it apart (a protection, an advice, mlock, a key, a name): only such a span
	 * would carry that state to the next owner, and one system call sees it. Under
	 * mprotect the block is a VMA of its own between PROT_NONE guards whatever was done
	 * to it, and sealed it stays one (it keeps VM_ACCOUNT, which the guards never had):
	 * nothing shows what the program set on the whole block, so it is not kept. */
	if (!markers_on(r) || (r->flags & REGION_PROTECTED)) return false;
	char *p = (char *)(r->base + off), *around = p - os_page;
	if (os_spans_vmas(around, len + 2 * os_page)) return false;
	/* A locked VMA (mlockall(MCL_CURRENT) locks the guards with the block) refuses
	 * MADV_DONTNEED; the guard page below holds nothing to drop, and markers stay. */
	if (os_advise(around, os_page, MADV_DONTNEED) != 0) return false;
	return wipe_resident(p, len, vec) && os_protect(p, len, PROT_NONE) == 0;
}

bool guard_unseal(struct guard_region *r, size_t off, size_t len)
{
	invariant(span_of(r, off, len));
	void *p = (void *)(r->base + off);
	int err = os_protect(p, len, RW);
	if (err && !os_is_oom(err)) report_kernel(OP_MPROTECT, err, p);
	return err == 0;
}

bool guard_extend(struct guard_region *r, size_t off, size_t len)
{
	invariant(span_of(r, off, len));
	size_t marked = (size_t)r->marked_pages * os_page;
	if (off < marked) {
		/* Address space grown behind markers: taking them away opens it. */
		size_t n = MIN(len, marked - off);
		void *p = (void *)(r->base + off);
		int err = os_advise(p, n, MADV_GUARD_REMOVE);
		if (err) {
			if (!os_is_oom(err)) report_kernel(OP_GUARD_REMOVE, err, p);
			return false;
		}
		off += n;
		len -= n;
		if (!len) return true;
	}
	void *p = (void *)(r->base + off);
	int err = os_protect(p, len, rw_of(r));
	if (err && !os_is_oom(err)) report_kernel(OP_MPROTECT, err, p);
	return err == 0;
}

bool guard_reserve(struct guard_region *r, size_t size, const char *name)
{
	void *p = NULL;
	if (os_map(&p, size, OS_CLOSED, OS_ANYWHERE)) return false;
	uint32_t flags = guard_backend() == GUARD_MADVISE ? REGION_MARKERS | REGION_MARKED : REGION_PROTECTED;
	*r = (struct guard_region){(uintptr_t)p, size, flags, 0};
	label(r, name);
	return true;
}

void guard_start(struct guard_region *r, uintptr_t base)
{
	*r = (struct guard_region){base, 0,
				   REGION_GROWS | (guard_backend() == GUARD_MADVISE ? REGION_MARKERS | REGION_MARKED : REGION_PROTECTED), 0};
}

/* The kernel refused the markers (err) on a read-write growth [p, p + len): EINVAL, a
 * locked mapping, latches the backend off; the growth is given back, for the caller to
 * grow closed. Only the top of a VMA or a whole mapping is unmapped: no split the VMA
 * limit could refuse. */
static void give_back_refused(struct guard_region *r, int err, void *p, size_t len)
{
	if (err == EINVAL) latch_off();
	else if (!os_is_oom(err)) report_kernel(OP_GUARD_INSTALL, err, p);
	r->flags &= ~REGION_MARKERS;
	err = os_unmap(p, len);
	if (err) report_kernel(OP_MUNMAP, err, p);
}

/* Grow r by [p, p + len) read-write behind guard markers: closed like PROT_NONE, but
 * one VMA with the region's open spans, so a class in use costs one VMA instead of three
 * (the closed page below, the open slabs, the closed rest). Each VMA costs every fork and
 * every exit (docs/guard-backends.md, "Kernel mappings of the slab allocator").
 *
 * Mapped read-write first, markers after: the new space joins the VMA below it at the
 * mmap. Marked while PROT_NONE, it got an anon_vma of its own (installing markers
 * prepares one) and never merged: each growth of a class's region stayed a VMA apart
 * (bash kept nine regions of four VMAs each). Until the markers are in, the new space is
 * read-write and unmarked, but nothing points into it and the region's last page below
 * it is still marked. Under mlockall(MCL_FUTURE) the mapping is populated and the
 * markers are refused (give_back_refused). Tagged regions (arm64) never take this way:
 * their spans are PROT_MTE, which a read-write mmap is not. False when the caller
 * should grow it closed. */
static bool map_growth_marked(struct guard_region *r, void *p, size_t len, const char *name)
{
	if (os_map(&p, len, OS_READ_WRITE, OS_NOREPLACE)) return false;
	/* Named before the markers: a nameless piece beside a named region would stay a VMA
	 * of its own. The page below carries the label too. */
	struct guard_region piece = {(uintptr_t)p, len, 0, 0};
	label(&piece, name);
	int err = os_advise(p, len, MADV_GUARD_INSTALL);
	if (!err) return true;
	give_back_refused(r, err, p, len);
	return false;
}

/* May r grow by read-write space behind markers up to size? Markers cost page tables
 * where PROT_NONE costs nothing: only small growth behind the marked part is marked. */
static bool may_grow_marked(const struct guard_region *r, size_t size)
{
	return markers_on(r) && !(r->flags & REGION_TAGGED) && (size_t)r->marked_pages * os_page == r->size &&
	       size <= GUARD_MARKED_GROWTH_MAX;
}

/* What a growth of r by space of a kind (PROT_NONE or not) costs in VMAs: a first one
 * is a mapping of its own; a later one joins the VMA below it when its last page is of
 * the same kind (that page is never a slab's: grown space ends with a closed page past
 * the last position, read-write behind markers within marked_pages). */
static long growth_vmas(const struct guard_region *r, bool protected)
{
	if (!r->size) return 1;
	bool last_protected = r->size > (size_t)r->marked_pages * os_page;
	return last_protected != protected;
}

/* guard_grow's closed way: PROT_NONE, opened later by mprotect. */
static bool grow_closed(struct guard_region *r, void *p, size_t len, size_t size, const char *name)
{
	if (os_map(&p, len, OS_CLOSED, OS_NOREPLACE)) return false;
	/* The page below carries the label too: a page named apart from its neighbour is a
	 * VMA of its own. */
	struct guard_region piece = {(uintptr_t)p, len, 0, 0};
	label(&piece, name);
	vma_add(growth_vmas(r, true));
	r->size = size;
	return true;
}

/* The growth of r to size: where it starts and how long it is. The first growth maps
 * the closed page below in the same call: one system call fewer for every class a
 * process uses (each new process pays them at start-up). */
static void *growth_of(const struct guard_region *r, size_t size, size_t *len)
{
	size_t below = r->size ? 0 : os_page;
	*len = size - r->size + below;
	return (void *)(r->base + r->size - below);
}

bool guard_grow(struct guard_region *r, size_t size, const char *name)
{
	/* Only a region guard_start began grows; its marked part lies inside it (guard.h). */
	invariant((r->flags & REGION_GROWS) && (size_t)r->marked_pages * os_page <= r->size);
	if (size <= r->size) return true;
	size_t len;
	void *p = growth_of(r, size, &len);
	if (may_grow_marked(r, size)) {
		long vmas = growth_vmas(r, false);
		if (map_growth_marked(r, p, len, name)) {
			vma_add(vmas);
			r->marked_pages = (uint32_t)(size / os_page);
			r->size = size;
			return true;
		}
	}
	return grow_closed(r, p, len, size, name);
}

/* A growth of a region behind markers with [open_off, open_off + open_len) of the new
 * space open at once: mapped read-write, markers only around the span, so neither the
 * span nor the rest needs a call of its own. A class's first slab costs three calls
 * (mmap and a madvise for each side) where closed-then-opened takes four, and every
 * process pays that for every class it uses; a later growth whose slab starts where the
 * region ended (the guard below it is the region's closed top) costs two, mmap and the
 * markers above the slab, where a marked growth and then opening the slab take three.
 * Named before the markers, as map_growth_marked names: it joins the VMA below.
 * Under mlockall(MCL_FUTURE) the mapping is populated before the kernel refuses the
 * markers (EINVAL): it is given back and the growth made closed, unmarked, as guard_grow
 * makes it; the refusal latches the backend off, so a process pays that once. A tagged
 * region (arm64) grows closed and opens PROT_MTE (guard_extend): a read-write mmap would
 * leave its slabs untagged. */
bool guard_grow_open(struct guard_region *r, size_t size, const char *name, size_t open_off, size_t open_len,
		     bool *opened)
{
	*opened = false;
	if (!open_len || open_off < r->size || open_off + open_len > size || !may_grow_marked(r, size))
		return guard_grow(r, size, name);
	size_t len;
	void *p = growth_of(r, size, &len);
	long vmas = growth_vmas(r, false);
	/* Refused read-write (the commit limit, a memlock limit under mlockall): the
	 * closed way, which charges only what it opens. */
	if (os_map(&p, len, OS_READ_WRITE, OS_NOREPLACE)) return grow_closed(r, p, len, size, name);
	struct guard_region piece = {(uintptr_t)p, len, 0, 0};
	label(&piece, name);
	uintptr_t open = r->base + open_off, end = (uintptr_t)p + len;
	struct os_span sides[2] = {{p, open - (uintptr_t)p}, {(void *)(open + open_len), end - open - open_len}};
	int err = os_advise_spans(sides, 2, MADV_GUARD_INSTALL);
	if (err) {
		give_back_refused(r, err, p, len);
		return grow_closed(r, p, len, size, name);
	}
	vma_add(vmas);
	r->marked_pages = (uint32_t)(size / os_page);
	r->size = size;
	*opened = true;
	return true;
}

/* --- fresh mappings --------------------------------------------------------------- */

/* Unmap the parts of [base, base+total) outside [keep, keep+keep_len); where the
 * kernel refuses, the part stays and joins the guard. Returns the kept start. */
static uintptr_t trim(uintptr_t base, size_t total, uintptr_t *keep, size_t *keep_len)
{
	uintptr_t end = base + total, kend = *keep + *keep_len;
	if (*keep > base && os_unmap((void *)base, *keep - base)) {
		*keep_len += *keep - base;
		*keep = base;
	}
	if (end > kend && os_unmap((void *)kend, end - kend)) *keep_len += end - kend;
	return *keep;
}

/* Map [lead | len | trail] (plus the slack an alignment needs, trimmed off again) as one
 * mapping: read-write for the marker scheme, PROT_NONE for the mprotect one. */
static bool map_fresh(struct guard_region *r, uintptr_t at, size_t *lead, size_t len, size_t *trail, size_t align,
		      bool markers)
{
	size_t slack = align > os_page ? align - os_page : 0;
	size_t total = *lead + len + *trail;
	if (total < len || total + slack < total) return false;
	void *p = (void *)at;
	if (os_map(&p, total + slack, markers ? OS_READ_WRITE : OS_CLOSED, at ? OS_NOREPLACE : OS_ANYWHERE))
		return false;
	uintptr_t base = (uintptr_t)p;
	if (guard_in_window(base, base + total + slack)) {
		/* The kernel ran out of other address space: a window's addresses decode as
		 * slab or metadata pointers, so nothing else may live there. */
		int err = os_unmap(p, total + slack);
		if (err) report_kernel(OP_MUNMAP, err, p);
		return false;
	}
	if (slack) {
		/* Place the open span on the alignment; lead absorbs what is below it. */
		uintptr_t data = align_up(base + *lead, align);
		uintptr_t keep = data - *lead;
		size_t keep_len = total;
		base = trim(base, total + slack, &keep, &keep_len);
		*lead = data - base;
		*trail = keep_len - *lead - len;
		total = keep_len;
	}
	*r = (struct guard_region){base, total, markers ? REGION_MARKERS | REGION_MARKED : REGION_PROTECTED, 0};
	return true;
}

/* A fresh region is one VMA that merges with the mappings it is laid against (large
 * regions lie end to end, their edges closed the same way), and unmapping it splits them
 * apart again: what a region of its own costs, given its mapped neighbours. */
static long region_vmas(const struct guard_region *r)
{
	return 1 - os_page_mapped((void *)(r->base - os_page)) - os_page_mapped((void *)(r->base + r->size));
}

bool guard_map(struct guard_region *r, size_t *lead, size_t len, size_t *trail, size_t align,
	       const char *name)
{
	return guard_map_at(r, 0, lead, len, trail, align, name);
}

bool guard_map_at(struct guard_region *r, uintptr_t at, size_t *lead, size_t len, size_t *trail, size_t align,
		  const char *name)
{
	size_t want_lead = *lead, want_trail = *trail;
	bool markers = guard_backend() == GUARD_MADVISE;
	if (!map_fresh(r, at, lead, len, trail, align, markers)) return false;
	if (markers) {
		void *p = (void *)r->base;
		int err = os_advise(p, *lead, MADV_GUARD_INSTALL);
		if (!err) err = os_advise((void *)(r->base + *lead + len), *trail, MADV_GUARD_INSTALL);
		if (err) {
			/* A fresh mapping: simplest to start over, aligned again, under the
			 * mprotect scheme. */
			if (err == EINVAL) latch_off();
			else if (!os_is_oom(err)) report_kernel(OP_GUARD_INSTALL, err, p);
			stat_inc(STAT_GUARD_FALLBACK);
			if (os_unmap(p, r->size)) report_kernel(OP_MUNMAP, EINVAL, p);
			*lead = want_lead;
			*trail = want_trail;
			markers = false;
			if (!map_fresh(r, at, lead, len, trail, align, false)) return false;
		}
	}
	if (!markers && len) {
		void *p = (void *)(r->base + *lead);
		int err = os_protect(p, len, RW);
		if (err) {
			if (!os_is_oom(err)) report_kernel(OP_MPROTECT, err, p);
			if (os_unmap((void *)r->base, r->size)) report_kernel(OP_MUNMAP, EINVAL, p);
			return false;
		}
	}
	label(r, name);
	stat_inc(STAT_MAPS);
	vma_add(region_vmas(r));
	return true;
}

/* Give back [p, p+len) of a region that is being given up in parts; where the kernel
 * refuses (VMA limit), drop the memory and leave the span closed. */
static void unmap_part(void *p, size_t len)
{
	if (!len) return;
	int err = os_unmap(p, len);
	if (!err) return;
	if (!os_is_oom(err)) report_kernel(OP_MUNMAP, err, p);
	stat_inc(STAT_UNMAP_REFUSED);
	struct guard_region part = {(uintptr_t)p, len, REGION_PROTECTED, 0};
	if (!close_protected(&part, p, len)) stat_inc(STAT_LEAKED);
}

/* Fill the hole a move left at [off, off+len) with a fresh closed mapping, like the rest
 * of the region (a fresh mapping has no anon_vma yet, so it merges with its neighbours
 * again). Never over anything: another thread's mmap may have landed in the hole. The
 * fresh span holds nothing a program did, so its markers go straight on; guard_close
 * (which would map it afresh once more) only where the kernel refuses them. */
static bool fill_moved_hole(struct guard_region *r, size_t off, size_t len)
{
	void *p = (void *)(r->base + off);
	if (markers_on(r)) {
		if (os_map(&p, len, OS_READ_WRITE, OS_NOREPLACE)) return false;
		label_again(r->flags, p, len);
		if (os_advise(p, len, MADV_GUARD_INSTALL) == 0) {
			r->flags |= REGION_MARKED;
			return true;
		}
		if (guard_close(r, off, len)) return true;
		unmap_part(p, len); /* ours, open: not left readable behind a forgotten source */
		return false;
	}
	if (os_map(&p, len, OS_CLOSED, OS_NOREPLACE)) return false;
	label_again(r->flags, p, len);
	r->flags |= REGION_PROTECTED;
	return true;
}

bool guard_move(struct guard_region *from, size_t from_off, size_t len, struct guard_region *to,
		size_t to_off, size_t new_len, bool *source_kept)
{
	uintptr_t src = from->base + from_off, dst = to->base + to_off;
	/* A block the program split (or one moved here before) may span several VMAs; before
	 * Linux 6.17 mremap moves one VMA at a time (from 6.17, the whole span at once). The
	 * last VMA moves grown to new_len: the kernel extends it, so the growth is no VMA of
	 * its own. The kernel grows only a source in one VMA (6.18 too), so a growing move
	 * goes one VMA at a time on every kernel: a block of one VMA, the usual case, is one
	 * call after the probe. Each hole is refilled at once; after the first refill that
	 * fails no more are, and the source is given up. */
	size_t moved = 0, refilled = 0;
	bool whole = new_len == len && os_moves_cross_vmas();
	while (moved < len) {
		size_t piece = whole ? len - moved : os_one_mapping((void *)(src + moved), len - moved);
		size_t grown = moved + piece == len ? new_len - moved : piece;
		int err = os_move((void *)(src + moved), piece, grown, (void *)(dst + moved));
		if (err) {
			if (!os_is_oom(err)) report_kernel(OP_MREMAP, err, (void *)(src + moved));
			/* Some kernels unmap the destination before they find they cannot move:
			 * make it open again. */
			void *hole = (void *)(dst + moved);
			if (os_map(&hole, grown, OS_READ_WRITE, OS_NOREPLACE)) { /* EEXIST: still there */ }
			if (!moved) return false;
			/* Half moved (VMA limit): copying the rest needs no new mapping, the
			 * destination is open already. Its source stays mapped until closed. */
			memcpy((void *)(dst + moved), (void *)(src + moved), len - moved);
			if (refilled == moved && guard_close(from, from_off + moved, len - moved)) refilled = len;
			break;
		}
		if (refilled == moved && fill_moved_hole(from, from_off + moved, piece)) refilled += piece;
		moved += piece;
	}
	*source_kept = refilled == len;
	if (!*source_kept) {
		/* Give back what is still ours, never the holes [refilled, moved): one of them
		 * may hold another thread's mapping now. */
		unmap_part((void *)from->base, from_off + refilled);
		unmap_part((void *)(src + moved), from->size - from_off - moved);
	}
	return true;
}

bool guard_moves_whole(const struct guard_region *r)
{
	return markers_on(r) && replaceable(r) && !(r->flags & (REGION_PROTECTED | REGION_RESIDUE | REGION_STALE)) &&
	       !os_spans_vmas((void *)r->base, r->size);
}

bool guard_map_space(struct guard_region *r, uintptr_t at, size_t *lead, size_t len, size_t *trail, size_t align)
{
	if (!map_fresh(r, at, lead, len, trail, align, false)) return false;
	stat_inc(STAT_MAPS);
	return true;
}

bool guard_move_whole(struct guard_region *from, size_t from_off, size_t len, struct guard_region *to,
		      size_t to_off, size_t new_len, bool *source_kept)
{
	invariant(to_off >= from_off && new_len >= len && to_off + new_len <= to->size);
	/* The moved region starts skip bytes into the space (more lead than the region had:
	 * an alignment's slack, the extra guard of a region the kernel placed); those stay
	 * closed PROT_NONE, as the space was mapped. */
	size_t skip = to_off - from_off, size = to->size - skip;
	void *at = (void *)(to->base + skip);
	int err = os_move((void *)from->base, from->size, size, at);
	if (err) {
		if (!os_is_oom(err)) report_kernel(OP_MREMAP, err, (void *)from->base);
		/* Some kernels unmap the destination before they find they cannot move. */
		void *hole = at;
		if (os_map(&hole, size, OS_CLOSED, OS_NOREPLACE)) { /* EEXIST: still there */ }
		return false;
	}
	/* One VMA now: the region's own, its markers moved with it, and what the kernel
	 * extended it by past its old end, open and empty. It keeps the region's label. */
	uint32_t label_bits = from->flags & REGION_LABEL_MASK;
	to->flags = (from->flags & (REGION_MARKERS | REGION_MARKED)) | label_bits | (skip ? REGION_PROTECTED : 0);
	if (skip) label_again(to->flags, (void *)to->base, skip);
	/* The block grows over its old trail guard: its markers go (they cost no memory to
	 * take away, so only a kernel error refuses). Where they would not, the span is
	 * mapped afresh, open and empty: a VMA more, never a closed byte inside the block. */
	char *grown = (char *)(to->base + to_off + len);
	err = os_advise(grown, new_len - len, MADV_GUARD_REMOVE);
	if (err) {
		void *fresh = grown;
		if (!os_is_oom(err) || os_map(&fresh, new_len - len, OS_READ_WRITE, OS_REPLACE))
			report_kernel(OP_GUARD_REMOVE, err, grown);
		label_again(to->flags, grown, new_len - len);
	}
	/* The new trail guard: what the kernel extended the region by is unguarded (markers
	 * stay at their old offsets when a mapping grows). Refused, it is closed the way
	 * guard_close closes (a fresh mapping, then markers or PROT_NONE); where even that
	 * is refused (the VMA limit), it is given back and the region ends with the block:
	 * a hole above it faults as a guard would, until something else is mapped there. */
	size_t t_off = to_off + new_len, t_len = to->size - t_off;
	void *trail = (void *)(to->base + t_off);
	err = t_len ? os_advise(trail, t_len, MADV_GUARD_INSTALL) : 0;
	if (err) {
		if (err != EINVAL && !os_is_oom(err)) report_kernel(OP_GUARD_INSTALL, err, trail);
		stat_inc(STAT_GUARD_FALLBACK);
		if (!guard_close(to, t_off, t_len)) {
			int unmapped = os_unmap(trail, t_len); /* the top of a VMA: no split */
			if (unmapped) report_kernel(OP_MUNMAP, unmapped, trail);
			to->size = t_off;
		}
	}
	/* The old region is a hole, whole: filled closed again, it goes through the
	 * quarantine as a freed block does. Where it cannot be filled (another thread's
	 * mapping landed in it, or no memory), nothing of it is still ours to give back. */
	*source_kept = fill_moved_hole(from, 0, from->size);
	return true;
}

bool guard_map_bare(struct guard_region *r, uintptr_t at, size_t *lead, size_t len, size_t *trail, size_t align,
		    const char *name)
{
	*lead = *trail = 0;
	/* Read-write from the start: map_fresh's marker layout with no guards to mark. */
	if (!map_fresh(r, at, lead, len, trail, align, true)) return false;
	r->flags = REGION_PROTECTED; /* closes with fresh PROT_NONE mappings, opens with mprotect */
	label(r, name);
	vma_add(region_vmas(r));
	return true;
}

/* --- closed regions held for long --------------------------------------------------- */

/* Closed regions held below this many need no look at the limit. */
#define CLOSED_UNCHECKED 1024

bool guard_closed_room(size_t held)
{
	if (guard_backend() == GUARD_MADVISE || held < CLOSED_UNCHECKED) return true;
	return held < vma_limit() / 8;
}

bool guard_retire(struct guard_region *r)
{
	void *p = (void *)r->base;
	int err = os_map(&p, r->size, OS_CLOSED, OS_REPLACE);
	if (err) {
		if (!os_is_oom(err)) report_kernel(OP_MMAP, err, p);
		return false;
	}
	label_again(r->flags, p, r->size);
	r->flags = (r->flags & (REGION_LABEL_MASK | REGION_GROWS)) | REGION_PROTECTED | REGION_STALE;
	return true;
}

bool guard_unmap(struct guard_region *r)
{
	if ((r->flags & REGION_GROWS) && r->size) {
		/* The closed page below a growing region goes with it; where the kernel
		 * refuses (the VMA limit), it stays, closed. */
		int err = os_unmap((void *)(r->base - os_page), os_page);
		if (err && !os_is_oom(err)) report_kernel(OP_MUNMAP, err, (void *)(r->base - os_page));
	}
	long vmas = r->flags & REGION_GROWS ? 0 : region_vmas(r); /* a growing region's own are its owner's */
	int err = os_unmap((void *)r->base, r->size);
	if (!err) {
		vma_add(-vmas);
		return true;
	}
	if (!os_is_oom(err)) report_kernel(OP_MUNMAP, err, (void *)r->base);
	/* Splitting a merged VMA would pass the limit: drop the memory, keep the range. */
	stat_inc(STAT_UNMAP_REFUSED);
	if (!guard_close(r, 0, r->size)) stat_inc(STAT_LEAKED);
	return false;
}

int guard_drop_fresh(void *p, size_t len) { return os_advise(p, len, MADV_DONTNEED); }
int guard_want_huge(void *p, size_t len) { return os_advise(p, len, MADV_HUGEPAGE); }
int guard_populate(void *p, size_t len) { return os_advise(p, len, MADV_POPULATE_WRITE); }
