/*
 * guard.h — the guard-region layer: every span rampart makes unreachable goes
 * through here. Nothing above this layer calls mmap, mprotect or madvise.
 *
 * Invariants:
 *  - A region is one kernel mapping rampart created; it is split only into spans
 *    that are open (read-write) or closed (any access faults, no resident pages
 *    unless REGION_RESIDUE says the kernel refused to drop them).
 *  - A growing region's closed space is PROT_NONE, except its first marked_pages pages
 *    (with the page below), which are read-write behind guard markers.
 *  - A span reopened with guard_open() or first opened with guard_extend() reads
 *    as zero.
 *  - The backend is chosen once (guard_init) and only ever moves from madvise to
 *    mprotect (the EINVAL latch), never back.
 *  - No function here changes errno. Failures that mean "no memory" return false;
 *    any other kernel error is fatal (report_kernel), except for the advice on open
 *    spans (guard_drop_fresh, guard_want_huge, guard_populate), which only says.
 *  - Callers serialise operations on one region; distinct regions are independent.
 */
#ifndef RAMPART_GUARD_H
#define RAMPART_GUARD_H

#include "base/common.h"
#include "base/option_table.h" /* enum guard_backend */
#include "guard/label.h"

/* Region flags: how spans are closed and what reopening them takes. */
enum {
	REGION_MARKERS = 1u,   /* closes install guard markers (made under the madvise backend) */
	REGION_MARKED = 2u,    /* markers may exist: reopening removes them */
	REGION_PROTECTED = 4u, /* PROT_NONE spans may exist: reopening mprotects */
	REGION_RESIDUE = 8u,   /* a close left pages behind (locked memory): reopening zeroes */
	REGION_KEEP_ANON = 16u, /* spans open and close piecemeal: closes keep the anon_vma */
	REGION_GROWS = 32u,     /* grows in a window (guard_start): a closed page lies below base */
	REGION_STALE = 64u,     /* a span was closed in place: it may keep what a program did to it
				 * (mlock, advice, protection), so the region is never reused */
	REGION_TAGGED = 128u,   /* open spans are PROT_MTE (arm64 memory tagging, os/mte.h) */
};
/* The bits above hold the number of the region's name: REGION_LABEL_MASK (label.h). */

struct guard_region {
	uintptr_t base;
	size_t size;
	uint32_t flags;
	/* Growing regions: [0, marked_pages pages) was mapped read-write behind guard
	 * markers (guard_grow), the rest of what the region grew PROT_NONE. */
	uint32_t marked_pages;
};

/* Choose the backend: want is the user's request (GUARD_AUTO to probe). */
void guard_init(enum guard_backend want);
enum guard_backend guard_backend(void);
const char *guard_backend_name(void);

/* A new mapping laid out as [lead guard | len open bytes | trail guard]; the open
 * span starts at base + lead and is aligned to align (0 or a power of two). With
 * align above a page the slack is trimmed or folded into the guards, so lead and
 * trail may come back larger than asked. lead and trail are at least one page. */
must_check bool guard_map(struct guard_region *r, size_t *lead, size_t len, size_t *trail,
			  size_t align, const char *label);
/* The same at exactly at (page-aligned; the alignment's slack above it is trimmed off
 * again), never over anything (MAP_FIXED_NOREPLACE): false when something is there, as
 * when out of memory. at 0: where the kernel chooses (guard_map). */
must_check bool guard_map_at(struct guard_region *r, uintptr_t at, size_t *lead, size_t len, size_t *trail,
			     size_t align, const char *label);
/* An empty growing region at base, closed the way the backend closes spans now. */
void guard_start(struct guard_region *r, uintptr_t base);
/* Map more of a growing region: [base + r->size, base + size) as closed address space,
 * exactly there and never over another mapping; the first growth also maps a closed page
 * just below base (the window around the region is only set aside: nothing else may lie
 * against it). False, with nothing mapped, when that is out of memory or something else
 * is mapped there. guard_unmap gives back the page below too.
 * Under the madvise backend, while the region stays within GUARD_MARKED_GROWTH_MAX, the
 * new space is read-write behind guard markers: one VMA with the spans opened in it
 * (PROT_NONE space is one VMA more on each side of every open span). Beyond that it is
 * PROT_NONE, which costs no page tables: a big class's region grows by a quarter at a
 * time, and markers over hundreds of MiB not yet used would take page-table pages of
 * their own. Up to 2 MiB (what one page-table page covers; a region starts at a random
 * page, so two) they mostly share the page-table pages of the slabs opened there. */
#define GUARD_MARKED_GROWTH_MAX ((size_t)2 << 20)
must_check bool guard_grow(struct guard_region *r, size_t size, const char *label);
/* guard_grow, opening [open_off, open_off + open_len) of the new space (at or past the
 * region's old end) in the same set-up where the growth is behind markers (*opened then
 * true): the rest of the growth is closed, so a span below the open one (a guard slab)
 * needs nothing more. Otherwise as guard_grow, and the span is left for guard_extend. */
must_check bool guard_grow_open(struct guard_region *r, size_t size, const char *label, size_t open_off,
				size_t open_len, bool *opened);
/* Is [off, off + len) of a growing region space grown behind markers? Then opening part
 * of it splits nothing, and what is left unopened there is closed already: a caller
 * opens only what it hands out. */
static inline bool guard_span_in_marked(const struct guard_region *r, size_t off, size_t len)
{
	return off + len <= (size_t)r->marked_pages * os_page;
}
/* A PROT_NONE reservation of size bytes; spans are opened with guard_extend(). */
must_check bool guard_reserve(struct guard_region *r, size_t size, const char *label);
/* Open a span of a reservation or of a growing region that was never opened before. */
must_check bool guard_extend(struct guard_region *r, size_t off, size_t len);
/* Reopen a span closed by guard_close(). */
must_check bool guard_open(struct guard_region *r, size_t off, size_t len);
/* Close a span: any access faults, its pages go back to the kernel. False only when
 * the kernel could not make it unreachable (VMA limit); the span is then unchanged. */
must_check bool guard_close(struct guard_region *r, size_t off, size_t len);
/* Does guard_close of r install markers now (no VMA), rather than PROT_NONE (a VMA
 * boundary wherever the span meets open memory)? Asked before a close, for its cost, and
 * after it, for what it made (a refused marker falls back for good). */
bool guard_closes_marked(const struct guard_region *r);
/* Give back the pages of an open span and leave it open, reading as zero: a closed slab
 * that costs no VMA where a PROT_NONE one would split its area (vma_budget.h), at the
 * price of an access that no longer faults. Also how such a span is wiped again before it
 * is reopened. False when the kernel refuses (locked memory): nothing changed. */
must_check bool guard_drop(struct guard_region *r, size_t off, size_t len);
/* guard_close of a span of a large region whose next page is closed already (the tail a
 * realloc cuts off, which joins the trail guard). Under markers, where the span and that
 * page are one VMA, the markers go on in place (the span is not mapped afresh): a
 * region that moved whole stays one VMA. */
must_check bool guard_cut(struct guard_region *r, size_t off, size_t len);
/* guard_close of n single pages (at most OS_SPANS_MAX) at the offsets given. */
must_check bool guard_close_pages(struct guard_region *r, const size_t *off, unsigned n);
/* Seal an open span of a region of its own with its pages kept (the light variant's
 * resident reuse, docs/large.md): its resident pages are zeroed, then it is made
 * PROT_NONE in place, so reopening it with guard_unseal costs no page fault. False, with
 * the span open or closed but its pages not to be trusted, when the span may carry what
 * the program did to it: it lies in a VMA apart from its guards (another protection, an
 * advice such as MADV_DONTFORK, mlock, a protection key, a name) or its VMA is locked
 * (mlockall), or the region is not under the madvise backend (where a PROT_NONE block is a
 * VMA of its own whatever the program did to it); the caller then closes it with
 * guard_close, which maps it afresh. vec, where not NULL, is the span's os_residency read
 * by the caller (under its lock, before this call): the wipe then asks the kernel no
 * more. Every page is still either zeroed or dropped, whatever its state now. */
must_check bool guard_seal(struct guard_region *r, size_t off, size_t len, const unsigned char *vec);
/* Reopen a span sealed by guard_seal: it reads as zero, its pages present. False (the
 * span still sealed) when the kernel refuses (no memory, the VMA limit). */
must_check bool guard_unseal(struct guard_region *r, size_t off, size_t len);
/* Move the pages of an open span into another region's open span of new_len bytes
 * (new_len >= len), no copying except the rest of a move the kernel stops half-way. The
 * kernel extends the last VMA moved to new_len itself, so a block of one VMA stays one
 * (moved pages keep their anon_vma and never merge with the destination's own pages:
 * grown by them, it would be two). Every hole the move leaves is filled with a fresh
 * closed mapping, so the source region stays whole and closed there (*source_kept).
 * Where a hole cannot be refilled (another thread's mapping landed in it, or no memory),
 * guard_move gives the rest of the source region back itself, leaving the holes alone:
 * the caller just forgets the source. (MREMAP_DONTUNMAP would keep the source without a
 * refill, but it clears VM_ACCOUNT on the old range, which then never merges with its
 * neighbours again: one more VMA for every move.) False, with nothing changed but the
 * destination's contents, when not even the first page could move. */
must_check bool guard_move(struct guard_region *from, size_t from_off, size_t len,
			   struct guard_region *to, size_t to_off, size_t new_len, bool *source_kept);
/* May guard_move_whole move the region r, guards and all? Under markers, a region of its
 * own in one VMA, every closed span in it a marker (one system call: os_spans_vmas). */
bool guard_moves_whole(const struct guard_region *r);
/* Address space for guard_move_whole: [lead | len | trail] (alignment as guard_map_at)
 * mapped PROT_NONE, one call, no label; the move replaces it. at as for guard_map_at. */
must_check bool guard_map_space(struct guard_region *r, uintptr_t at, size_t *lead, size_t len, size_t *trail,
				size_t align);
/* Move the whole region from (guard_moves_whole), its open span [from_off, from_off + len)
 * and its guard markers with it, into the space to (guard_map_space, to_off >= from_off),
 * the kernel extending it so that the span is new_len bytes at to_off: the old trail's
 * markers inside the grown span are taken away, the new trail gets markers. The block
 * and its guards are then one VMA. The old region is filled closed again as guard_move
 * does (*source_kept), or forgotten. to_off - from_off bytes of the space stay below the
 * moved region, closed (PROT_NONE). Where the kernel cannot close the new trail at all
 * (the VMA limit), it is given back and the region ends with the block. False, with the
 * space still there and the source unchanged, when the kernel refuses the move. */
must_check bool guard_move_whole(struct guard_region *from, size_t from_off, size_t len,
				 struct guard_region *to, size_t to_off, size_t new_len, bool *source_kept);
/* A mapping without guards, open whole (read-write, charged): for a large block where
 * guards would take the process near its VMA limit (vma_room, guard/vma_budget.h). The open span
 * starts at base + *lead, aligned to align; *lead and *trail are what trimming the
 * alignment's slack left (open, unused), usually 0. Closes and reopens as any region
 * of the mprotect scheme. at as for guard_map_at. */
must_check bool guard_map_bare(struct guard_region *r, uintptr_t at, size_t *lead, size_t len, size_t *trail,
			       size_t align, const char *label);
/* May a holder of closed regions kept for long (the region quarantine) keep one more,
 * having held? Under the mprotect scheme each closed region can be a VMA of its own, so
 * such regions get an eighth of vm.max_map_count (read when held first reaches the
 * threshold of 1,024); under madvise they cost no VMA: always true. */
bool guard_closed_room(size_t held);
/* Close the whole region for good with one fresh closed mapping: no memory, no page
 * tables (markers need them), no commit charge, one VMA. Only guard_unmap may follow.
 * False, with the region unchanged, when the kernel will not map it (VMA limit). */
must_check bool guard_retire(struct guard_region *r);
/* Advice on an open span of a region, for populating new large blocks (large/populate.h):
 * each returns 0 or the kernel's error, and a refusal leaves the span as it was, its
 * pages to come by faults. Drop the pages of a span nobody has seen yet, and with them
 * its empty page tables where the kernel reclaims those (MADV_DONTNEED): */
must_check int guard_drop_fresh(void *p, size_t len);
/* Ask for huge pages there (MADV_HUGEPAGE): */
must_check int guard_want_huge(void *p, size_t len);
/* Fill the span with pages now instead of at first touch (MADV_POPULATE_WRITE). */
must_check int guard_populate(void *p, size_t len);
/* Give the whole region back. Where the kernel cannot (the split would exceed the
 * VMA limit) the region is closed instead and false is returned: its address space
 * stays reserved but holds no memory. */
bool guard_unmap(struct guard_region *r);

#endif
