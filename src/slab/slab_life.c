/*
 * slab_life.c — a slab's life: taken fresh (the high-water mark, guard slabs, the region
 * growing), active (slots drawn from the lowest with a free slot), empty within a budget
 * that follows use, closed through the guard layer into the slab quarantine and then
 * the closed set. See the sets in slab_class.h and the invariants in slab_life.h. Every
 * function here runs under the class lock.
 */
#include "slab/slab_life.h"

#include <string.h>

#include "guard/meta.h"
#include "guard/vma_budget.h"
#include "slab/slab_setup.h"
#include "slab/slab_sets.h"

/* --- slabs ----------------------------------------------------------------------- */

/* Fresh slabs between two guard slabs, for the way the region closes spans now: a guard
 * marker costs no VMA, a PROT_NONE guard up to two. Read at each guard decision, so a
 * region that the EINVAL latch (mlockall) moves to PROT_NONE spaces its guards out. */
static uint32_t guard_interval(const struct slab_class *k)
{
	bool markers = (k->region.flags & REGION_MARKERS) && guard_backend() == GUARD_MADVISE;
	size_t every = markers ? roots.opt.slab_guard_interval : roots.opt.slab_guard_interval_mprotect;
	return (uint32_t)MAX(every, (size_t)1);
}

/* Is a guard slab due, and can the process afford it? Markers cost no VMA. A PROT_NONE
 * guard between open slabs costs two: as the process nears the VMA limit such guards
 * come further apart (a quarter as many from halfway to the slabs' threshold, a
 * sixteenth from three quarters), and past the threshold none is made (counted as left
 * out), so a class that grows to millions of slabs gets fewer guards instead of failing
 * the program at the limit (vma_budget.h); large blocks keep theirs longer. */
static bool guard_due(const struct slab_class *k)
{
	uint32_t every = guard_interval(k);
	if (!every || k->since_guard < every) return false;
	bool markers = (k->region.flags & REGION_MARKERS) && guard_backend() == GUARD_MADVISE;
	if (markers) return true;
	unsigned pressure = vma_pressure();
	if (pressure >= 8 && k->since_guard < every * (pressure >= 12 ? 16u : 4u)) return false;
	if (vma_room(VMA_SLAB, 2)) return true;
	vma_left_out();
	return false;
}

/* --- VMAs: what a position's span costs ------------------------------------------- */

/* The descriptor of pos where it has one (a position skipped below a spill region may
 * lie in a chunk never made). */
static struct slab *desc_or_null(const struct slab_class *k, uint32_t pos)
{
	if (pos < FIRST_POSITIONS) return desc(k, pos);
	uint32_t c = pos >> CHUNK_SHIFT;
	return c < k->dir_cap && k->dir[c] ? desc(k, pos) : NULL;
}

/* Is the space at offset off of area a, where position pos would lie, PROT_NONE? A
 * position of a that was ever opened says how it is mapped; any other space was never
 * opened (beyond the high-water mark, a region's positions that its nursery cell holds,
 * the closed page past the last position): read-write behind markers within
 * marked_pages, PROT_NONE beyond. */
static bool space_protected(struct slab_class *k, const struct guard_region *a, uint32_t pos, size_t off)
{
	size_t at;
	struct slab *s;
	if (pos < k->max_pos && area_of(k, pos, &at) == a && at == off && (s = desc_or_null(k, pos)) && s->span)
		return s->span == SPAN_PROTECTED;
	return off >= (size_t)a->marked_pages * os_page;
}

static bool span_protected(struct slab_class *k, uint32_t pos, const struct slab *s)
{
	if (s->span) return s->span == SPAN_PROTECTED;
	size_t off;
	const struct guard_region *a = area_of(k, pos, &off);
	return off >= (size_t)a->marked_pages * os_page;
}

/* The VMAs that turning pos's span from its kind (was_protected) to the other adds:
 * against each neighbour of the old kind a boundary appears, against each of the new
 * one goes (+2 for a slab closed between open ones, -2 for one closed between closed
 * ones). Below an area's first position lies its closed page (marked where the area
 * grew behind markers); past its mapped end, nothing. */
static long span_change_vmas(struct slab_class *k, uint32_t pos, bool was_protected)
{
	size_t off;
	const struct guard_region *a = area_of(k, pos, &off);
	bool below = off ? space_protected(k, a, pos - 1, off - k->slab_bytes) : !a->marked_pages;
	long n = below == was_protected ? 1 : -1;
	size_t end = off + k->slab_bytes;
	if (end < a->size) n += space_protected(k, a, pos + 1, end) == was_protected ? 1 : -1;
	return n;
}

/* Record how pos's span is mapped now, and what that did to the VMAs. */
static void span_set(struct slab_class *k, uint32_t pos, struct slab *s, uint8_t span)
{
	bool was = span_protected(k, pos, s);
	s->span = span;
	/* Every VMA boundary inside an area is a PROT_NONE span's: the protections' own. */
	if (was != (span == SPAN_PROTECTED)) vma_add_guards(span_change_vmas(k, pos, was));
}

/* How guard_close closed a span of a just now: a refused marker falls back for good. */
static uint8_t span_closed(const struct guard_region *a)
{
	return guard_closes_marked(a) ? SPAN_MARKED : SPAN_PROTECTED;
}

/* Close pos's span (an empty slab's): behind markers, or PROT_NONE. Where PROT_NONE would
 * split its area and the VMAs are near the limit, its pages are given back in place
 * instead (SPAN_DROPPED: it reads as zero, but an access no longer faults), counted as a
 * guard left out. False when the kernel refuses. */
static bool close_span(struct slab_class *k, uint32_t pos, struct slab *s)
{
	size_t off;
	struct guard_region *a = area_of(k, pos, &off);
	if (!guard_closes_marked(a) && !span_protected(k, pos, s)) {
		long cost = span_change_vmas(k, pos, false);
		if (cost > 0 && !vma_room(VMA_SLAB, (unsigned)cost)) {
			if (!guard_drop(a, off, k->slab_bytes)) return false;
			vma_left_out();
			span_set(k, pos, s, SPAN_DROPPED);
			return true;
		}
	}
	if (!guard_close(a, off, k->slab_bytes)) return false;
	span_set(k, pos, s, span_closed(a));
	return true;
}

/* Open pos's closed span again; it reads as zero. A span closed in place is given back
 * again first: a stale pointer may have written to it while it was closed. */
static bool open_span(struct slab_class *k, uint32_t pos, struct slab *s)
{
	size_t off;
	struct guard_region *a = area_of(k, pos, &off);
	if (s->span == SPAN_DROPPED) {
		/* Locked memory keeps its pages: wiped by hand. */
		if (!guard_drop(a, off, k->slab_bytes)) memset((void *)(a->base + off), 0, k->slab_bytes);
	} else if (!guard_open(a, off, k->slab_bytes)) {
		return false;
	}
	span_set(k, pos, s, SPAN_OPEN);
	return true;
}

/* Room in the directory for chunk c: the directory and the sets' summary words follow
 * the slabs in use instead of being sized for the whole region up front (they are
 * metadata every class would otherwise map from the start). Lock held. */
static bool dir_room(struct slab_class *k, uint32_t c)
{
	if (c < k->dir_cap) return true;
	uint32_t cap = k->dir_cap;
	while (cap <= c) cap *= 2;
	uint32_t words = (cap + 63) / 64;
	struct slab **dir = meta_alloc(dir_bytes(cap));
	if (!dir) return false;
	uint64_t *sets = (uint64_t *)(dir + cap);
	memcpy(dir, k->dir, k->dir_cap * sizeof *dir);
	for (unsigned set = 0; set < sets_in_use(); set++)
		memcpy(sets + set * words, set_summary(k, set), k->set_words * sizeof(uint64_t));
	k->set_sum = sets;
	/* The old directory stays mapped: a batched free may be reading it unlocked (it
	 * holds the same chunks). Directories double, so the ones outgrown take less than
	 * the one in use. Release: a reader of the new one sees the chunks copied in. */
	__atomic_store_n(&k->dir, dir, __ATOMIC_RELEASE);
	k->dir_cap = cap;
	k->set_words = words;
	return true;
}

/* Every position below the high-water mark must have a descriptor: decode_slot reads it. */
static bool have_desc(struct slab_class *k, uint32_t pos)
{
	if (pos < FIRST_POSITIONS) return true;
	if (!dir_room(k, pos >> CHUNK_SHIFT)) return false;
	if (k->dir[pos >> CHUNK_SHIFT]) return true;
	/* Chunks of descriptors keep metadata mappings few; zeroed: state SLAB_NONE. The
	 * chunk's bitmaps of the sets (slab_sets.h) come first, in the page of its
	 * lowest descriptors: a class using a few slabs touches one page of the chunk, not
	 * also its last. Its slabs' kinds follow the descriptors (kinds_of): pages that only
	 * C++ allocations write, and their owner maps (with partitions) what every allocation
	 * from a fresh slot writes. */
	char *chunk = meta_alloc(chunk_bytes(k));
	if (!chunk) return false;
	__atomic_store_n(&k->dir[pos >> CHUNK_SHIFT], (struct slab *)(chunk + CHUNK_HEAD_BYTES), __ATOMIC_RELEASE);
	return true;
}

/* Map an area (the class's own region, its nursery cell or a spill region) at least up
 * to end, never past window, by step more than it has (at least CONFIG_SLAB_GROW_MIN),
 * so that a class in use costs a few mmap calls in all and its mapped but unused tail
 * stays bounded. The slab ending at end opens in the same set-up where the growth is
 * behind markers and starts at or below it (*opened; guard_grow_open), when open. False
 * when out of address space (RLIMIT_AS) or when another mapping sits where the area
 * would grow. */
static bool grow_area(struct guard_region *g, size_t end, size_t window, size_t slab_bytes, size_t step, bool open,
		      bool *opened)
{
	*opened = false;
	/* A closed page past the highest slab (guard_grow maps one below the first): the
	 * window around an area is only set aside, and another mapping could otherwise
	 * lie right against a slab. */
	size_t need = MIN(end + os_page, window);
	size_t have = g->size;
	if (need <= have) return true;
	size_t want = MAX(need, have + MAX(step, (size_t)CONFIG_SLAB_GROW_MIN));
	want = MIN((want + slab_bytes - 1) / slab_bytes * slab_bytes, window);
	size_t open_len = open ? slab_bytes : 0;
	/* Short of address space, the exact need may still fit. */
	return guard_grow_open(g, want, "rampart:slab", end - slab_bytes, open_len, opened) ||
	       guard_grow_open(g, need, "rampart:slab", end - slab_bytes, open_len, opened);
}

/* The cell could not grow (another mapping lies where it would, or no memory): its
 * positions end below the closed page at the top of what it mapped (none if it mapped
 * nothing), and the class goes on in its region, whose positions from there were never
 * opened. Every position taken so far lies below that page (grow_area maps one past
 * each slab), so no slab changes its area; the spans only widen the region's. */
static void cell_ends(struct slab_class *k)
{
	size_t room = k->nursery.size > os_page ? k->nursery.size - os_page : 0;
	k->nursery_bytes = room / k->slab_bytes * k->slab_bytes;
	invariant(k->nursery_bytes >= (size_t)k->hwm * k->slab_bytes);
	spans_update(k);
}

/* Map the area of position pos up to its end, opening pos there when open and the
 * growth allows (*opened). The spans that decode pointers follow what is mapped, bounded
 * by the area's own positions. A class's nursery cell is mapped as it is used, as a
 * region is, not whole at its first slab: a process that uses one or two slabs of a
 * class maps a quarter of its cell or less, and everything mapped counts against
 * RLIMIT_MEMLOCK under an unprivileged mlockall (system/mlock_unpriv). */
static bool grow_for(struct slab_class *k, uint32_t pos, bool open, bool *opened)
{
	size_t off;
	struct guard_region *a = area_of(k, pos, &off);
	size_t end = off + k->slab_bytes;
	if (pos >= k->home_pos) {
		/* A spill region has room for a closed page past its last position. The
		 * class's last one may end early, at positions_cap: what it maps and
		 * decodes stops there, so that no offset past it reaches decode_slot, whose
		 * page index would wrap. */
		struct slab_spill *sp = spill_of(k, pos);
		size_t positions = MIN((size_t)k->seg_pos * k->slab_bytes, (size_t)k->max_pos * k->slab_bytes - sp->span.lo);
		bool grown = grow_area(a, end, positions + os_page, k->slab_bytes, a->size / 4, open, opened);
		span_write(&sp->span, sp->span.base, sp->span.lo, sp->span.lo + MIN(sp->region.size, positions));
		return grown;
	}
	if (a == &k->nursery) {
		/* Doubling: a cell is at most CONFIG_SLAB_NURSERY_PAGES, so a class that fills
		 * it grows it three times, not six, and maps at most twice what it uses. */
		bool grown = grow_area(a, end, k->nursery_bytes + os_page, k->slab_bytes, a->size, open, opened);
		spans_update(k);
		if (grown) return true;
		cell_ends(k);
	}
	bool grown = grow_area(&k->region, end, (size_t)k->home_pos * k->slab_bytes, k->slab_bytes, k->region.size / 4,
			       open, opened);
	spans_update(k);
	return grown;
}

/* Open positions [from, to) taken fresh into use: one call per area they lie in (a
 * range never runs from one region into a spill region: fresh_slab opens a spill
 * region's first slab alone). */
static bool extend_positions(struct slab_class *k, uint32_t from, uint32_t to)
{
	if (from == to) return true;
	if (to * k->slab_bytes > k->nursery_bytes && from * k->slab_bytes < k->nursery_bytes) {
		uint32_t split = (uint32_t)(k->nursery_bytes / k->slab_bytes);
		return extend_positions(k, from, split) && extend_positions(k, split, to);
	}
	size_t off;
	struct guard_region *area = area_of(k, from, &off);
	if (!guard_extend(area, off, (size_t)(to - from) * k->slab_bytes)) return false;
	for (uint32_t pos = from; pos < to; pos++) span_set(k, pos, desc(k, pos), SPAN_OPEN);
	return true;
}

/* Take the next never-used position into use, skipping a guard first when one is due;
 * false on OOM. */
static bool fresh_slab(struct slab_class *k, uint32_t *out)
{
	bool guard = guard_due(k);
	uint32_t pos = k->hwm + guard;
	if (pos >= k->max_pos) {
		/* The class's last region is full: its next slab is the first of a spill
		 * region, above a closed page of its own (no guard slab needed before it; a
		 * guard that was due stays a position never opened in the region below). */
		uint32_t first = k->max_pos;
		if (!slab_spill_add(k)) return false;
		pos = first;
		guard = pos > k->hwm;
	}
	if (!have_desc(k, k->hwm) || !have_desc(k, pos)) return false;
	bool opened = false;
	if (!grow_for(k, pos, k->open_slabs, &opened)) return false;
	size_t off, hwm_off;
	struct guard_region *area = area_of(k, pos, &off); /* after grow_for: a cell may end */
	if (k->open_slabs && !opened) {
		struct guard_region *hwm_area = area_of(k, k->hwm, &hwm_off);
		if (pos >= k->home_pos && hwm_area != area) {
			/* A spill region's first slab: the skipped position (if any) lies in
			 * the region below, which may never have mapped it. */
			if (!guard_extend(area, off, k->slab_bytes)) return false;
			span_set(k, pos, desc(k, pos), SPAN_OPEN);
		} else if (area == hwm_area && guard_span_in_marked(area, hwm_off, off + k->slab_bytes - hwm_off)) {
			/* Grown behind markers: the guard is closed already. */
			if (!extend_positions(k, pos, pos + 1)) return false;
		} else {
			/* The guard opens with its slab and closes again at once, never handed
			 * out: so it belongs to the read-write span (one anon_vma, see guard.c),
			 * and the slab after it shares that anon_vma instead of faulting in one
			 * of its own, which would keep the closed slabs on either side from ever
			 * merging. */
			if (!extend_positions(k, k->hwm, pos + 1)) return false;
			/* Where the kernel refuses to close it, the guard stays open but is
			 * never used: still a slab's worth of unused addresses between slabs. */
			if (guard && guard_close(hwm_area, hwm_off, k->slab_bytes))
				span_set(k, k->hwm, desc(k, k->hwm), span_closed(hwm_area));
		}
	} else if (opened) {
		span_set(k, pos, desc(k, pos), SPAN_OPEN);
	}
	/* Read unlocked by a batched free: release, after the directory and the chunk that
	 * cover the new positions (have_desc). */
	__atomic_store_n(&k->hwm, pos + 1, __ATOMIC_RELEASE);
	k->since_guard = guard ? 1 : k->since_guard + 1;
	*out = pos;
	return true;
}

static void empty_insert(struct slab_class *k, uint32_t pos, struct slab *s)
{
	set_add(k, SET_EMPTY, pos);
	s->state = SLAB_EMPTY;
}

/* Slabs the class may keep empty and open beyond its budget: as many as take it back to
 * its recent peak of slabs in use (this decay period's or the last one's). A program that
 * frees a structure and builds it again reuses the same slabs without faulting them in
 * again, and the class's open slabs never outnumber what it had in use a moment ago. */
static uint32_t back_to_peak(const struct slab_class *k)
{
	uint32_t peak = MAX(k->peak_now, k->peak_prev);
	return peak > k->nactive ? peak - k->nactive : 0;
}

/* A slab must be reopened or taken fresh: if one was closed a moment ago the budget was
 * too small for this churn, so it grows (bounded by a fraction of the slabs in use). */
static void grow_empty_budget(struct slab_class *k)
{
	uint64_t now = os_now_ms();
	uint32_t cap = k->empty_floor + k->nactive / CONFIG_SLAB_EMPTY_MAX_FRACTION;
	if (now - k->closed_at_ms < CONFIG_SLAB_EMPTY_DECAY_MS && k->empty_max < cap) {
		k->empty_max++;
		k->empty_reused = true;
	}
}

/* The zero class's slabs cost nothing open and never decay: its budget stays fixed, so
 * its slabs keep going through the slab quarantine. */
static uint32_t empty_allowed(const struct slab_class *k)
{
	return k->open_slabs ? MAX(k->empty_max, back_to_peak(k)) : k->empty_max;
}

static void decay_idle_classes(const struct slab_class *self, uint64_t now);
static void slab_emptied(struct slab_class *k, uint32_t pos, struct slab *s);

/* A slab closes with partitions: its pages went back, and its slots are fresh again when
 * it reopens, anyone's (docs/slab.md, "Call-site partitions"); it leaves the partitions'
 * sets, and its owner map is cleared for the draws from it then. */
static void forget_owners(struct slab_class *k, uint32_t pos, struct slab *s)
{
	for (uint32_t m = s->psets; m; m &= m - 1) set_remove(k, set_of_part((unsigned)__builtin_ctz(m)), pos);
	for (unsigned p = 0; p < roots.opt.partitions; p++)
		if (k->parts->cur[p] == pos + 1) k->parts->cur[p] = 0;
	s->psets = 0;
	s->nown = 0;
	memset(owner_map(k, s, pos), 0, owner_stride(k));
}

/* The empty slab to draw slots from, taken out of the set: the lowest or, with
 * partitions, the lowest with a slot no partition owns (the others wait in the set for
 * their owners, slab_take_own); UINT32_MAX: none. */
static uint32_t empty_to_reuse(struct slab_class *k)
{
	if (!k->parted) return set_take_lowest(k, SET_EMPTY);
	for (uint32_t pos = set_next(k, SET_EMPTY, 0); pos != UINT32_MAX; pos = set_next(k, SET_EMPTY, pos + 1))
		if (desc(k, pos)->nused < k->slots) {
			set_remove(k, SET_EMPTY, pos);
			return pos;
		}
	return UINT32_MAX;
}

/* Where slab_new's slab came from: an empty slab kept open (its record kept), a closed or
 * reset one (zero pages), a position never used (zero and unread). */
enum slab_from { FROM_KEPT, FROM_ZEROED, FROM_FRESH };

/* With partitions, a class out of fresh positions whose empty slabs all hold slots their
 * partitions own: the lowest is reset in place, its pages given back (wiped by hand
 * where they are locked), so that its slots are fresh again and anyone's, as a closed
 * slab's are when it reopens. Without it such a class would fail allocations with
 * whole empty slabs open. */
static uint32_t reset_empty(struct slab_class *k)
{
	uint32_t pos = set_lowest(k, SET_EMPTY);
	struct slab *s = desc(k, pos);
	size_t off;
	struct guard_region *a = area_of(k, pos, &off);
	if (!guard_drop(a, off, k->slab_bytes)) memset((void *)(a->base + off), 0, k->slab_bytes);
	set_remove(k, SET_EMPTY, pos);
	slab_pages_closed(k, pos, s);
	forget_owners(k, pos, s);
	return pos;
}

/* The slab slab_new takes: an empty one, a closed one, a fresh one; UINT32_MAX on OOM. */
static uint32_t slab_source(struct slab_class *k, enum slab_from *from)
{
	uint32_t pos;
	*from = FROM_KEPT;
	if (k->nset[SET_EMPTY] && (pos = empty_to_reuse(k)) != UINT32_MAX) {
		k->empty_reused = true;
		return pos;
	}
	*from = FROM_ZEROED;
	if (k->nset[SET_CLOSED]) {
		if (k->open_slabs) grow_empty_budget(k);
		pos = set_lowest(k, SET_CLOSED);
		if (k->open_slabs && !open_span(k, pos, desc(k, pos))) return UINT32_MAX;
		set_remove(k, SET_CLOSED, pos);
		return pos;
	}
	if (k->open_slabs && k->sq_count) grow_empty_budget(k); /* closed ones still in quarantine */
	*from = FROM_FRESH;
	if (fresh_slab(k, &pos)) return pos;
	*from = FROM_ZEROED;
	return k->parted && k->nset[SET_EMPTY] ? reset_empty(k) : UINT32_MAX;
}

noinline bool slab_new(struct slab_class *k)
{
	if (unlikely(!k->size)) slab_class_setup(k);
	if (k->open_slabs) decay_idle_classes(k, os_now_ms());
	enum slab_from from;
	uint32_t pos = slab_source(k, &from);
	if (pos == UINT32_MAX) return false;
	struct slab *s = desc(k, pos);
	k->nactive++;
	if (k->nactive > k->peak_now) k->peak_now = k->nactive;
	/* A fresh slab's descriptor is not read first: on a page nothing has written yet a
	 * read maps the zero page, and the write after it takes a second fault (a class's
	 * first slab, in every process). */
	if (from != FROM_KEPT) {
		/* From fresh or closed (dropped) pages: every slot reads as zero. An empty slab
		 * that stayed open keeps its record: its slots were wiped only as far as used,
		 * and those handed out before still hold its canary, so it keeps that too. */
		for (uint32_t w = 0; w < k->nwords; w++) s->bits[w].fresh = ~tail_word(k, w);
		s->returned = 0;
		s->canary = random_u64(k->rnd) & ~(uint64_t)0xff; /* little-endian: first byte 0 */
	}
	/* With partitions an empty slab kept open keeps its owned slots too (used and
	 * quarantined in its bits, as they were when it emptied): they stay their
	 * partitions' while it is open. Its other slots are free, as every slot of the
	 * others is. */
	bool owned = from == FROM_KEPT && k->parted;
	if (!owned)
		for (uint32_t w = 0; w < k->nwords; w++) {
			s->bits[w].used = tail_word(k, w);
			s->bits[w].quar = 0;
		}
	s->nused = owned ? s->nown : 0;
	s->state = SLAB_ACTIVE;
	k->current = pos + 1;
	return true;
}

void slab_lower_current(struct slab_class *k)
{
	if (!k->nset[SET_PARTIAL]) return;
	uint32_t low = set_lowest(k, SET_PARTIAL);
	if (k->current && low > k->current - 1) return;
	set_remove(k, SET_PARTIAL, low);
	if (k->current) set_add(k, SET_PARTIAL, k->current - 1);
	k->current = low + 1;
}

void slab_lost_last_slot(struct slab_class *k, uint32_t pos, struct slab *s, bool was_full)
{
	if (k->current == pos + 1) k->current = 0;
	else if (!was_full) set_remove(k, SET_PARTIAL, pos);
	slab_emptied(k, pos, s);
}

/* Close an empty slab into the slab quarantine; false when the kernel cannot now. The
 * zero class's memory never opens, so its slabs close without a system call. */
static bool close_slab(struct slab_class *k, uint32_t pos, struct slab *s)
{
	if (k->open_slabs && !close_span(k, pos, s)) return false;
	slab_pages_closed(k, pos, s);
	if (k->parted) forget_owners(k, pos, s);
	s->state = SLAB_CLOSED;
	/* The ring holds up to slab_quarantine entries (at most CONFIG_SLAB_QUARANTINE, its
	 * storage); 0: a closed slab goes straight to the closed set. */
	uint32_t held = (uint32_t)roots.opt.slab_quarantine;
	if (!held) {
		set_add(k, SET_CLOSED, pos);
		return true;
	}
	if (k->sq_count == held) {
		uint32_t old = k->sq[k->sq_head];
		k->sq_head = (k->sq_head + 1) % held;
		k->sq_count--;
		set_add(k, SET_CLOSED, old);
	}
	invariant(k->sq_count < held && held <= CONFIG_SLAB_QUARANTINE);
	k->sq[(k->sq_head + k->sq_count) % held] = pos;
	k->sq_count++;
	return true;
}

/* Close the highest empty slab; false when the kernel cannot now. */
bool slab_close_highest_empty(struct slab_class *k)
{
	uint32_t hi = set_highest(k, SET_EMPTY);
	struct slab *h = desc(k, hi);
	set_remove(k, SET_EMPTY, hi);
	if (close_slab(k, hi, h)) {
		k->closed_at_ms = os_now_ms();
		return true;
	}
	empty_insert(k, hi, h);
	return false;
}

/* Every CONFIG_SLAB_EMPTY_DECAY_MS in which no empty slab was taken again, the budget
 * above the floor halves, and the empty slabs beyond it close at once: a class that
 * stopped churning gives its memory back. */
static void decay_empty_budget(struct slab_class *k, uint64_t now)
{
	if (now < k->decay_at_ms) return;
	k->decay_at_ms = now + CONFIG_SLAB_EMPTY_DECAY_MS;
	k->peak_prev = k->peak_now;
	k->peak_now = k->nactive;
	bool reused = k->empty_reused;
	k->empty_reused = false;
	if (!reused) k->empty_max = k->empty_floor + (k->empty_max - k->empty_floor) / 2;
	k->empty_max = MIN(k->empty_max, k->empty_floor + k->nactive / CONFIG_SLAB_EMPTY_MAX_FRACTION);
	while (k->nset[SET_EMPTY] > empty_allowed(k) && slab_close_highest_empty(k)) {}
}

/* A class decays under its own lock, when one of its slabs empties: one that went idle
 * after freeing a structure would keep it open for good. So once per decay period a
 * slow path of any class sweeps every other class (of every arena: a thread that ended
 * leaves its arena idle). A class whose lock is taken is in use: it is skipped. Only an
 * idle process keeps its empty slabs (malloc_trim gives them back). */
static void decay_idle_classes(const struct slab_class *self, uint64_t now)
{
	static _Atomic uint64_t next_sweep_ms;
	uint64_t due = atomic_load_explicit(&next_sweep_ms, memory_order_relaxed);
	if (now < due || !atomic_compare_exchange_strong_explicit(&next_sweep_ms, &due, now + CONFIG_SLAB_EMPTY_DECAY_MS,
								   memory_order_relaxed, memory_order_relaxed))
		return;
	unsigned n = roots.slab.arenas * SC_COUNT;
	for (unsigned r = 0; r < n; r++) {
		struct slab_class *k = &roots.slab.classes[r];
		if (k == self || !class_is_set_up(r) || !lock_try(&k->lock)) continue;
		if (k->open_slabs && k->nset[SET_EMPTY]) decay_empty_budget(k, now); /* not the zero class */
		slab_return_pages(k, now, false);
		class_unlock(k);
	}
}

/* The last slot of a slab went back: cache it, or close a slab (its contents are zero
 * but for the canaries of slots handed out). */
static void slab_emptied(struct slab_class *k, uint32_t pos, struct slab *s)
{
	invariant(k->nactive && s->nused == s->nown && k->current != pos + 1);
	invariant(!s->ncxx); /* every slot's kind went with its free (slot_kind.h) */
	k->nactive--;
	if (k->open_slabs) {
		uint64_t now = os_now_ms();
		decay_empty_budget(k, now);
		slab_return_pages(k, now, false);
		decay_idle_classes(k, now);
	}
	bool room = k->nset[SET_EMPTY] < empty_allowed(k);
	if (!room && k->nset[SET_EMPTY] && set_highest(k, SET_EMPTY) > pos) {
		/* The lower one stays open: the open slabs stay together at the bottom. */
		room = slab_close_highest_empty(k);
	}
	/* Kept open also when the kernel cannot close it now. */
	if (room || !close_slab(k, pos, s)) empty_insert(k, pos, s);
	else k->closed_at_ms = os_now_ms();
}


/* --- call-site partitions ---------------------------------------------------------- */

void slab_join_part(struct slab_class *k, uint32_t pos, struct slab *s, unsigned p)
{
	s->psets = (uint16_t)(s->psets | 1u << p);
	set_add(k, set_of_part(p), pos);
}

/* An empty slab kept open, holding a slot partition p takes: active again, not the
 * current slab (one with a slot no partition owns joins the partial set). */
static void wake_empty(struct slab_class *k, uint32_t pos, struct slab *s)
{
	set_remove(k, SET_EMPTY, pos);
	k->empty_reused = true;
	k->nactive++;
	if (k->nactive > k->peak_now) k->peak_now = k->nactive;
	s->state = SLAB_ACTIVE;
	if (s->nused < k->slots) set_add(k, SET_PARTIAL, pos);
}

void slab_leave_part(struct slab_class *k, uint32_t pos, struct slab *s, unsigned p)
{
	set_remove(k, set_of_part(p), pos);
	s->psets = (uint16_t)(s->psets & ~(1u << p));
	if (k->parts->cur[p] == pos + 1) k->parts->cur[p] = 0;
}

struct own_slot slab_take_own_lowest(struct slab_class *k, unsigned p)
{
	struct own_slot o = {0, 0, false, false};
	if (!k->parts->n[p]) return o;
	uint32_t pos = set_lowest(k, set_of_part(p));
	if (k->current && pos >= k->current) return o;
	struct slab *s = desc(k, pos);
	uint64_t *map = owner_map(k, s, pos);
	uint32_t i = owned_slot(k, map, p, k->random_slots ? (rand16(k) * k->slots) >> 16 : 0);
	invariant(i != UINT32_MAX); /* a slab leaves the set with p's last slot there */
	if (s->state == SLAB_EMPTY) wake_empty(k, pos, s);
	k->parts->cur[p] = pos + 1; /* own_taken forgets it again if that was p's last */
	own_taken(k, pos, s, map, i, p, &o.fresh);
	o.pos = pos;
	o.i = i;
	o.found = true;
	return o;
}
