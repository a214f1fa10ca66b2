/*
 * large.c — allocations served by their own mapping.
 *
 * Layout of a region:  [ lead guard | usable (open) | trail guard ]
 * The guards are at least one page and grow randomly with the size, so the distance
 * from one allocation to the next is not predictable. realloc shrinks by closing the
 * cut tail (it joins the trail guard), grows in place by opening part of the trail
 * guard while at least a page of it stays, and otherwise moves the pages with mremap
 * into a new region: growth never copies.
 */
#define _GNU_SOURCE
#include "large/large.h"

#include <string.h>
#include <sys/resource.h>

#include "base/partition.h"
#include "base/report.h"
#include "large/reuse_cache.h"
#include "large/resident_cache.h"
#include "guard/guard.h"
#include "guard/place.h"
#include "base/roots.h"
#include "os/lock.h"
#include "guard/meta.h"
#include "os/os.h"
#include "large/region_quarantine.h"
#include "os/random.h"
#include "large/populate.h"
#include "base/counters.h"
#include "guard/vma_budget.h"

enum { ENTRY_LIVE = 1, ENTRY_QUARANTINED = 2 };

struct large_entry {
	uintptr_t data; /* key: the pointer handed out; 0 = empty slot */
	size_t usable;
	size_t requested;
	uint8_t state;
	uint8_t kind;        /* how it was allocated (enum alloc_kind) */
	uint8_t vmas;        /* what it costs in VMAs while it lives (block_count) ... */
	uint8_t guard_vmas;  /* ... of which its guards' own */
	uint8_t align_log2;  /* alignment asked for, for free_aligned_sized */
	uint8_t partition;   /* its call-site partition (large.h): who may reuse its region */
	size_t populated;    /* bytes from data + populated_off that populate_block filled */
	size_t populated_off; /* (populate.h) */
	struct guard_region region;
};

struct large_state {
	struct lock lock;
	struct random_state rnd;
	uint64_t hash_mul;
	struct large_entry *table;
	size_t cap, used; /* power of two; used includes quarantined entries */
	struct region_quarantine quarantine;
	/* Huge regions (CONFIG_REGION_QUARANTINE_SKIP and up), retired: held, never reused. */
	struct region_quarantine huge;
	struct reuse_cache cache;
	struct resident_cache resident; /* light profile: freed blocks kept with their pages */
	struct live_level live;         /* usable bytes of live blocks; their recent peak */
	/* The statistics' totals: blocks allocated and freed, and their bytes (a realloc
	 * frees the old size and allocates the new one; allocated - freed = live.bytes). */
	size_t allocs, frees, alloc_bytes, freed_bytes;
	struct populate_credit populate;
	struct guard_area area; /* where fresh regions go (guard/place.h) */
	/* The arrays last: init writes only the fields above, so a process that frees few
	 * large blocks never touches most of their pages (fresh from meta_alloc). */
	struct region_quarantine_item q_ring[CONFIG_REGION_QUARANTINE_FIFO + 1];
	struct region_quarantine_item q_slots[CONFIG_REGION_QUARANTINE_RANDOM];
	struct region_quarantine_item h_ring[CONFIG_HUGE_QUARANTINE_FIFO + 1];
	struct region_quarantine_item h_slots[CONFIG_HUGE_QUARANTINE_RANDOM];
	struct reuse_cache_entry cache_slots[CONFIG_CACHE_ENTRIES];
	/* Light profile: a freed block's os_residency, read once for the populating credit,
	 * the keep decision and the wipe (resident_cache_keep); touched only there. */
	unsigned char resident_vec[RESIDENT_VEC_PAGES];
};

/* The biggest request served: anything above cannot be mapped with guards anyway,
 * and keeping sizes below 2^62 makes every sum below overflow-free. */
#define LARGE_MAX ((size_t)1 << 62)

/* --- hash table: open addressing, linear probing, backward-shift deletion --- */

static size_t bucket_of(const struct large_state *s, uintptr_t key)
{
	return (size_t)(((key >> 12) * s->hash_mul) >> 32) & (s->cap - 1);
}

static struct large_entry *lookup(struct large_state *s, uintptr_t key)
{
	for (size_t i = bucket_of(s, key);; i = (i + 1) & (s->cap - 1)) {
		struct large_entry *e = &s->table[i];
		if (e->data == key) return e;
		if (!e->data) return NULL;
	}
}

static void place(struct large_state *s, const struct large_entry *e)
{
	/* The load stays at most a half (reserve_slot), so every probe ends at an empty
	 * bucket; a block lies in its region, whole pages (large.h); the lock is held. */
	invariant((s->used + 1) * 2 <= s->cap && lock_taken(&s->lock));
	invariant(e->data && e->data - e->region.base <= e->region.size &&
		  e->usable <= e->region.size - (e->data - e->region.base) && !(e->usable & (os_page - 1)));
	size_t i = bucket_of(s, e->data);
	while (s->table[i].data) i = (i + 1) & (s->cap - 1);
	s->table[i] = *e;
}

static void remove_entry(struct large_state *s, struct large_entry *e)
{
	invariant(lock_taken(&s->lock) && e->data && s->used);
	size_t i = (size_t)(e - s->table), mask = s->cap - 1;
	for (size_t j = (i + 1) & mask; s->table[j].data; j = (j + 1) & mask) {
		size_t home = bucket_of(s, s->table[j].data);
		/* Move j back into the hole at i unless its home lies cyclically in (i, j]. */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			s->table[i] = s->table[j];
			i = j;
		}
	}
	s->table[i].data = 0;
	s->used--;
}

/* Keep the load at most one half, so probes stay short and lookup always ends. */
static bool reserve_slot(struct large_state *s)
{
	if ((s->used + 1) * 2 <= s->cap) return true;
	size_t ncap = s->cap * 2;
	struct large_entry *nt = meta_alloc(ncap * sizeof *nt);
	if (!nt) return false;
	struct large_entry *old = s->table;
	size_t ocap = s->cap;
	s->table = nt;
	s->cap = ncap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].data) place(s, &old[i]);
	meta_free(old, ocap * sizeof *old);
	return true;
}

/* --- guards --- */

/* Guards are one page plus a random part that grows with the size, up to a bound. */
static size_t max_guard(size_t len)
{
	return (1 + MIN(len / os_page / CONFIG_GUARD_FRACTION, roots.opt.large_guard_max_pages)) * os_page;
}

static size_t random_guard(struct large_state *s, size_t len)
{
	return os_page + (size_t)random_below(&s->rnd, max_guard(len) / os_page) * os_page;
}

static size_t lead_of(const struct large_entry *e) { return e->data - e->region.base; }

/* The call-site partition of a block allocated (or moved by a realloc) at site; 0 for
 * all with one partition, where site_partition must not be asked. */
static unsigned partition_of(uintptr_t site)
{
	return roots.opt.partitions > 1 ? site_partition(site) : 0;
}

/* A closed region that has left the table for good: kept for reuse by its block's
 * partition, or unmapped where it may carry what a program did to it (reuse_cache_put). */
static void retire_region(struct large_state *s, struct guard_region *r, unsigned partition)
{
	reuse_cache_put(&s->cache, r, partition, os_now_ms());
}

/* The live bytes changed by a block's allocation, free or resize: counted, and told at
 * once to the process-wide total whose peak the statistics keep (counters.h): a large
 * block's call costs system calls anyway. */
static void live_change(struct large_state *s, size_t gone, size_t added)
{
	live_level_change(&s->live, gone, added);
	s->alloc_bytes += added;
	s->freed_bytes += gone;
	stat_add_peak(STAT_HEAP_BYTES_NOW, STAT_HEAP_BYTES_PEAK, (long)added - (long)gone, os_single_threaded());
}

/* A block more or less, for the same total. */
static void live_count(struct large_state *s, long blocks)
{
	if (blocks > 0) s->allocs++;
	else s->frees++;
	stat_add_peak(STAT_HEAP_BLOCKS_NOW, STAT_HEAP_BLOCKS_PEAK, blocks, os_single_threaded());
}

/* A quarantined entry leaves its quarantine for good: its region goes on to the reuse
 * cache (reusable) or is unmapped. */
static void leave_quarantine(struct large_state *s, struct region_quarantine_item out, bool reusable)
{
	struct large_entry *old = lookup(s, out.key);
	if (!old || old->state != ENTRY_QUARANTINED) report_fatal(OP_INTERNAL, ERR_LARGE_METADATA, (void *)out.key);
	struct guard_region gone = old->region;
	unsigned partition = old->partition;
	stat_dec(STAT_QUARANTINE_NOW);
	stat_add(STAT_QUARANTINE_BYTES_NOW, -(long)out.bytes);
	remove_entry(s, old);
	if (reusable) retire_region(s, &gone, partition);
	else (void)guard_unmap(&gone);
}

/* Unmap a quarantine's oldest regions until need bytes are given back or it is empty;
 * the bytes given back. */
static size_t give_back(struct large_state *s, struct region_quarantine *q, size_t need)
{
	size_t given = 0;
	struct region_quarantine_item out;
	while (given < need && region_quarantine_drain(q, &out)) {
		leave_quarantine(s, out, false);
		given += out.bytes;
	}
	return given;
}

/* What a fresh region is mapped as: a block between guards, a block without
 * (guards_room), or closed space that a whole region moves into (guard_move_whole). */
enum map_how { MAP_BARE, MAP_GUARDED, MAP_SPACE };

/* One mapping at exactly at (0: where the kernel chooses), as how says. */
static bool map_at_address(struct guard_region *r, uintptr_t at, size_t *lead, size_t len, size_t *trail, size_t align,
			   enum map_how how)
{
	if (how == MAP_SPACE) return guard_map_space(r, at, lead, len, trail, align);
	return how == MAP_GUARDED ? guard_map_at(r, at, lead, len, trail, align, "rampart:large")
				  : guard_map_bare(r, at, lead, len, trail, align, "rampart:large");
}

/* No foreign mapping comes nearer a block than the largest guard any block gets. */
#define AREA_CLEAR ((1 + roots.opt.large_guard_max_pages) * os_page)

/* In the large area (guard_area_take); where it has no room, or the kernel refuses the
 * mapping there, where the kernel chooses, as before the area, with AREA_CLEAR more of
 * guard on each side: the kernel puts the region right against other mappings (below
 * the libraries, say). Where even that is refused, without the extra guard: the area
 * never fails an allocation that the kernel's placement would serve. */
static bool map_placed(struct large_state *s, struct guard_region *r, size_t *lead, size_t len, size_t *trail,
		       size_t align, enum map_how how)
{
	size_t want_lead = *lead, want_trail = *trail;
	size_t slack = align > os_page ? align - os_page : 0; /* no overflow: len, align <= 2^62 */
	uint64_t rnd = random_u64(&s->rnd);                   /* first: in a fork child it reseeds */
	uintptr_t at = guard_area_take(&s->area, *lead + len + *trail + slack, AREA_CLEAR, s->rnd.generation, rnd);
	if (at) {
		if (map_at_address(r, at, lead, len, trail, align, how)) {
			guard_area_placed(&s->area, r->base + r->size);
			return true;
		}
		guard_area_refused(&s->area);
	}
	if (how != MAP_BARE) {
		*lead = want_lead + AREA_CLEAR;
		*trail = want_trail + AREA_CLEAR;
		if (map_at_address(r, 0, lead, len, trail, align, how)) return true;
	}
	*lead = want_lead;
	*trail = want_trail;
	return map_at_address(r, 0, lead, len, trail, align, how);
}

/* Map a fresh region for [lead | len | trail] (map_placed). Out of address space or memory,
 * what the caches hold goes back first, then the quarantine's oldest regions: a freed region
 * waiting out its quarantine is worth less than a correct program's allocation (with
 * RLIMIT_AS this is what keeps large churn going). But only as much of the quarantine
 * as the request needs, and none for a request bigger than all it holds: a request
 * that cannot succeed anyway (an absurd size, perhaps the attacker's) must not empty
 * the quarantine and with it the use-after-free protection of every freed block. */
static bool map_or_give_back(struct large_state *s, struct guard_region *r, size_t *lead, size_t len,
			     size_t *trail, size_t align, enum map_how how)
{
	if (map_placed(s, r, lead, len, trail, align, how)) return true;
	if ((resident_cache_flush(&s->resident) + reuse_cache_flush(&s->cache)) &&
	    map_placed(s, r, lead, len, trail, align, how))
		return true;
	size_t need = *lead + len + *trail + (align > os_page ? align : 0); /* no overflow: len < 2^62 */
	if (need > s->quarantine.bytes + s->huge.bytes) return false;
	/* Huge regions first: they hold the most address space for the fewest blocks. */
	size_t given = give_back(s, &s->huge, need);
	if (given < need) give_back(s, &s->quarantine, need - given);
	return map_placed(s, r, lead, len, trail, align, how);
}

/* May a new block have guards? Under markers they cost no VMA. Under PROT_NONE a block
 * between its guards costs two VMAs (regions lie end to end: a block's trail guard and
 * the next one's lead guard are one VMA); near the limit it comes without (one
 * read-write VMA, merging with such neighbours), counted and said (vma_budget.h). */
static bool guards_room(void)
{
	if (guard_backend() == GUARD_MADVISE || vma_room(VMA_LARGE, 2)) return true;
	vma_left_out();
	return false;
}

/* The VMAs a live block's layout costs beyond its region closed whole (which merges with
 * the closed guards beside it): none behind markers, two for an open span between
 * PROT_NONE guards (one of them the guards', shared with the next block's), one for a
 * block without guards; pages moved in (moved) keep their own anon_vma and merge with
 * nothing: behind markers a region that moved whole is a VMA apart, and pages moved
 * into a fresh region split it. Counted while it lives (block_count). */
static void block_count(struct large_entry *e, bool guarded, int moved)
{
	bool markers = e->region.flags & REGION_MARKERS;
	e->guard_vmas = !markers && guarded;
	e->vmas = (uint8_t)(markers ? moved : guarded ? 2 : 1);
	vma_add(e->vmas - e->guard_vmas);
	vma_add_guards(e->guard_vmas);
}

static void block_uncount(struct large_entry *e)
{
	vma_add(-(long)(e->vmas - e->guard_vmas));
	vma_add_guards(-(long)e->guard_vmas);
	e->vmas = e->guard_vmas = 0;
}

/* The address space the quarantine and the cache may each hold: their configured bounds,
 * and at most a sixteenth of RLIMIT_AS, which counts closed regions like any other. */
static size_t held_bound(size_t configured, const struct rlimit *as)
{
	return as->rlim_cur != RLIM_INFINITY ? MIN(configured, (size_t)as->rlim_cur / 16) : configured;
}

struct large_state *large_init(void)
{
	/* Both blocks in one go (meta_alloc_many): three system calls where two meta_allocs
	 * took five, at every start-up. */
	enum { FIRST_CAP = 64 };
	size_t bytes[2] = {sizeof(struct large_state), FIRST_CAP * sizeof(struct large_entry)};
	void *got[2];
	if (!meta_alloc_many(bytes, got, 2)) return NULL;
	struct large_state *s = got[0];
	s->cap = FIRST_CAP;
	s->table = got[1];
	s->rnd.source = NULL; /* one generator: its key straight from the kernel */
	random_reseed(&s->rnd);
	s->hash_mul = random_u64(&s->rnd) | 1;
	/* The bounds are run-time options (RAMPART_OPTIONS), within the storage above. */
	struct rlimit as;
	if (getrlimit(RLIMIT_AS, &as) != 0) as.rlim_cur = RLIM_INFINITY;
	/* A user who sets the quarantine shorter than the minimum stay (large_quarantine_entries)
	 * or empty (large_quarantine_bytes=0) asked for early reuse: the minimum follows. */
	size_t entries = MIN(roots.opt.large_quarantine_entries, (size_t)CONFIG_REGION_QUARANTINE_FIFO);
	size_t min_stay = roots.opt.large_quarantine_bytes ? MIN(entries, (size_t)CONFIG_REGION_QUARANTINE_MIN) : 0;
	region_quarantine_init(&s->quarantine, s->q_slots, CONFIG_REGION_QUARANTINE_RANDOM, s->q_ring, entries,
			       held_bound(roots.opt.large_quarantine_bytes, &as), min_stay);
	region_quarantine_init(&s->huge, s->h_slots, CONFIG_HUGE_QUARANTINE_RANDOM, s->h_ring, CONFIG_HUGE_QUARANTINE_FIFO,
			       held_bound(CONFIG_HUGE_QUARANTINE_BYTES, &as), CONFIG_REGION_QUARANTINE_MIN);
	reuse_cache_init(&s->cache, s->cache_slots, MIN(roots.opt.large_cache_entries, (size_t)CONFIG_CACHE_ENTRIES),
		   held_bound(roots.opt.large_cache_bytes, &as), roots.opt.large_cache_decay_ms);
	populate_init(&s->populate, roots.opt.large_refill_bytes);
	/* Without the quarantine (light) freed blocks may keep their pages; with it, never. */
	resident_cache_init(&s->resident, roots.opt.large_quarantine ? 0 : roots.opt.large_resident_bytes,
			    roots.opt.large_cache_decay_ms, &s->cache);
	return s;
}

/* Reuse a cached region of partition for [lead | len | trail]. The trail guard takes what
 * the region has beyond lead + len: anything from one page up to the largest random trail
 * a fresh mapping could get counts as guard; beyond that it is waste, at most
 * CONFIG_CACHE_MAX_WASTE_PERCENT of the request. One madvise or mprotect, never an mmap.
 * Aligned requests are not served here. */
static bool take_cached(struct large_state *s, unsigned partition, struct guard_region *r, size_t lead, size_t len,
			size_t align)
{
	reuse_cache_decay(&s->cache, os_now_ms());
	if (align > os_page) return false;
	size_t trail_max = max_guard(len);
	size_t waste_max = len / 100 * CONFIG_CACHE_MAX_WASTE_PERCENT;
	size_t trail = random_guard(s, len);
	if (!reuse_cache_take(&s->cache, partition, lead + len + os_page, trail_max - os_page + waste_max,
			      lead + len + trail, r))
		return false;
	size_t waste = r->size - MIN(r->size, lead + len + trail_max);
	stat_add(STAT_CACHE_WASTE_BYTES, (long)waste);
	if (guard_open(r, lead, len)) return true;
	(void)guard_unmap(r);
	return false;
}

void *large_alloc(size_t size, size_t align, enum alloc_kind kind, uintptr_t site)
{
	struct large_state *s = roots.large;
	size_t len;
	if (size > LARGE_MAX || !page_round(size, &len) || align > LARGE_MAX) return NULL;
	void *result = NULL;
	size_t populate = 0, populate_off = 0;
	lock_take(&s->lock);
	if (reserve_slot(s)) {
		struct large_entry e = {.usable = len, .requested = size, .state = ENTRY_LIVE, .kind = (uint8_t)kind,
					.align_log2 = align ? (uint8_t)__builtin_ctzl(align) : 0,
					.partition = (uint8_t)partition_of(site)};
		size_t lead = random_guard(s, len), trail = random_guard(s, len);
		/* Near the VMA limit (mprotect scheme), a block comes without guards rather
		 * than not at all; a cached region would open a block inside closed space. */
		bool guarded = guards_room();
		bool resident = guarded && resident_cache_take(&s->resident, e.partition, &e.region, &lead, len, align);
		/* Out of address space or memory: what the cache holds is the first thing to
		 * give back before failing. */
		if (resident || (guarded && take_cached(s, e.partition, &e.region, lead, len, align)) ||
		    map_or_give_back(s, &e.region, &lead, len, &trail, align, guarded ? MAP_GUARDED : MAP_BARE)) {
			e.data = e.region.base + lead;
			live_count(s, 1);
			live_change(s, 0, len);
			resident_cache_shrink(&s->resident, &s->live); /* less room for kept blocks */
			block_count(&e, guarded, 0);
			/* A kept block's pages are there already. */
			if (!resident) populate = populate_take(&s->populate, e.data, len, &populate_off);
			e.populated = populate;
			e.populated_off = populate_off;
			place(s, &e);
			s->used++;
			stat_inc(STAT_LARGE_LIVE_NOW);
			result = (void *)e.data;
		}
	}
	lock_give(&s->lock);
	if (populate) populate_block(&s->populate, (char *)result + populate_off, populate);
	return result;
}

/* The entry of a live allocation, or a fatal report naming what p is — except that a
 * free under on_error=report is reported and ignored (report_go_on): NULL, with the lock
 * given back. */
static struct large_entry *live_entry(struct large_state *s, const void *p, enum report_op op)
{
	struct large_entry *e = lookup(s, (uintptr_t)p);
	if (likely(e && e->state == ENTRY_LIVE)) return e;
	lock_give(&s->lock);
	enum report_kind kind = !e ? ERR_NOT_LIVE : op == OP_FREE ? ERR_DOUBLE_FREE : ERR_USE_AFTER_FREE;
	if (!report_go_on(op, kind, p)) report_fatal(op, kind, p);
	return NULL;
}

/* A free (op: kind_free_op(kind)) or realloc (OP_REALLOC, kind KIND_MALLOC) of the live
 * block e, allocated as another kind: fatal, with the lock given back, but under
 * on_error=report, where it is reported and the call goes on, the block taken for
 * one of `kind` from now on. */
static noinline void kind_mismatch_at(struct large_state *s, struct large_entry *e, enum alloc_kind kind,
				      enum report_op op)
{
	const void *p = (const void *)e->data;
	enum report_kind err = kind_mismatch((enum alloc_kind)e->kind);
	if (!report_go_on(op, err, p)) {
		lock_give(&s->lock);
		report_fatal(op, err, p);
	}
	e->kind = (uint8_t)kind;
}

/* A sized free of the live block e whose size or alignment is not e's: fatal, with the
 * lock given back, unless on_error=report (or sized_free=off) lets the free go on. The
 * line shows both sizes: a block's recorded alignment, or a page, which any alignment
 * up to a page matches. */
static noinline void wrong_size_at(struct large_state *s, const struct large_entry *e, size_t size, size_t align)
{
	const void *p = (const void *)e->data;
	struct report_sizes sz = {.passed = size, .block = e->requested, .passed_align = align,
				  .block_align = e->align_log2 ? (size_t)1 << e->align_log2 : os_page};
	if (report_wrong_size_go_on(p, &sz)) return;
	lock_give(&s->lock);
	report_wrong_size(p, &sz);
}

/* e enters quarantine q; whatever must leave it now goes on as leave_quarantine says,
 * except that a region leaving before CONFIG_REGION_QUARANTINE_MIN frees (the bounds
 * left no older one to take) is unmapped, never reused by rampart. */
static void enter_quarantine(struct large_state *s, struct region_quarantine *q, struct large_entry *e, bool reusable)
{
	invariant(e->state == ENTRY_LIVE); /* one place at a time (large.h) */
	e->state = ENTRY_QUARANTINED;
	/* Under the mprotect scheme every closed region held can be a VMA: within a share
	 * of the VMA limit, the oldest leave to make room. */
	q->count_max = guard_closed_room(q->count) ? SIZE_MAX : q->count;
	region_quarantine_push(q, (struct region_quarantine_item){.key = e->data, .bytes = e->region.size});
	stat_inc(STAT_QUARANTINE_NOW);
	stat_add(STAT_QUARANTINE_BYTES_NOW, (long)e->region.size);
	struct region_quarantine_item out;
	bool early;
	while (region_quarantine_evict(q, &out, &s->rnd, &early)) leave_quarantine(s, out, reusable && !early);
}

static void quarantine_region(struct large_state *s, struct large_entry *e)
{
	if (!roots.opt.large_quarantine) { /* large_quarantine=off (profile light) */
		struct guard_region r = e->region;
		unsigned partition = e->partition;
		remove_entry(s, e);
		retire_region(s, &r, partition);
		return;
	}
	/* A region beyond the byte bound (RLIMIT_AS/16 under a limit, or a bound set to 0)
	 * leaves at once, as if pushed and evicted, but without pushing every other region
	 * out of the quarantine first; and since it leaves early, it is unmapped, not
	 * cached: the cache must never hand out an address that skipped the quarantine
	 * (unless the user turned the minimum stay off). */
	if (e->region.size < CONFIG_REGION_QUARANTINE_SKIP && e->region.size > s->quarantine.bytes_max) {
		struct guard_region r = e->region;
		unsigned partition = e->partition;
		remove_entry(s, e);
		if (s->quarantine.min_stay) (void)guard_unmap(&r);
		else retire_region(s, &r, partition);
		return;
	}
	if (e->region.size < CONFIG_REGION_QUARANTINE_SKIP) {
		enter_quarantine(s, &s->quarantine, e, true);
		return;
	}
	/* Huge: retired whole (one closed mapping, no memory) and held in a quarantine of
	 * its own, so the kernel cannot hand the address to the next huge block while a
	 * dangling pointer may still reach it; then unmapped, never reused. Beyond the
	 * huge quarantine's bound, or where the kernel will not map it, it goes at once. */
	if (e->region.size > s->huge.bytes_max || !guard_retire(&e->region)) {
		struct guard_region big = e->region;
		remove_entry(s, e);
		(void)guard_unmap(&big);
		return;
	}
	enter_quarantine(s, &s->huge, e, false);
}

void large_free(void *p, bool sized, size_t size, size_t align, enum alloc_kind kind)
{
	struct large_state *s = roots.large;
	lock_take(&s->lock);
	struct large_entry *e = live_entry(s, p, OP_FREE);
	if (unlikely(!e)) return; /* on_error=report: reported and ignored */
	/* How it was allocated first: a sized delete of a block new[] made is that mismatch. */
	if (unlikely(e->kind != kind)) kind_mismatch_at(s, e, kind, kind_free_op(kind));
	if (sized) {
		/* The exact size asked for (C23 free_sized), not just its pages. Alignments up
		 * to a page need no special placement and are not recorded: any of them
		 * matches an allocation made without one. */
		bool align_ok = !align || (is_pow2(align) && (e->align_log2 ? (unsigned)__builtin_ctzl(align) == e->align_log2
									   : align <= os_page));
		if (unlikely(size != e->requested || !align_ok)) wrong_size_at(s, e, size, align);
	}
	stat_dec(STAT_LARGE_LIVE_NOW);
	live_count(s, -1);
	live_change(s, e->usable, 0);
	block_uncount(e);
	bool quarantine = roots.opt.large_quarantine;
	if (quarantine) {
		populate_freed(&s->populate, (const void *)e->data, e->usable, e->populated_off, e->populated, NULL);
	} else {
		struct resident_freed b = {.region = e->region, .lead = lead_of(e), .len = e->usable,
					   .populated_off = e->populated_off, .populated = e->populated,
					   .partition = e->partition};
		if (resident_cache_keep(&s->resident, &s->live, &s->populate, &b, s->resident_vec)) {
			remove_entry(s, e);
			lock_give(&s->lock);
			return;
		}
	}
	/* Close at once: the pages go back and any later access faults. Where even that is
	 * refused (VMA limit), give the whole region back instead. The whole region, its
	 * closed guards with the block: one fresh mapping, which merges with its closed
	 * neighbours (a region that moved whole keeps its guards in the moved VMA, which no
	 * fresh block span would merge with). A huge region is closed whole by the
	 * quarantine (guard_retire), without markers first. */
	if (quarantine && e->region.size >= CONFIG_REGION_QUARANTINE_SKIP) {
		quarantine_region(s, e);
	} else if (!guard_close(&e->region, 0, e->region.size)) {
		struct guard_region r = e->region;
		remove_entry(s, e);
		(void)guard_unmap(&r);
	} else {
		quarantine_region(s, e);
	}
	lock_give(&s->lock);
}

size_t large_usable_size(const void *p, enum report_op op)
{
	struct large_state *s = roots.large;
	lock_take(&s->lock);
	struct large_entry *e = live_entry(s, p, op);
	if (op == OP_REALLOC && unlikely(e->kind != KIND_MALLOC)) kind_mismatch_at(s, e, KIND_MALLOC, op);
	size_t n = e->usable;
	lock_give(&s->lock);
	return n;
}

/* Move the allocation's pages into a new region of len open bytes; the new start, or 0
 * when there is no memory. The new trail guard gets room for the block to grow by half
 * again in place (address space only: a guard costs no memory), so a growing block moves
 * once per few reallocs, not at each. The kernel extends the moved mapping to len itself,
 * so the grown block is no more VMAs than it was: moved pages keep their own anon_vma
 * and never merge with fresh ones, and a block that moved into fresh pages was two VMAs
 * (three with its guards under markers). Under markers a region in one VMA moves whole,
 * guards and all (guard_move_whole): its lead guard goes with it, and the block and its
 * guards stay one VMA. Otherwise (the mprotect scheme, or a block the program split) its
 * pages move into the open span of a fresh region between new guards. The old region
 * stays whole and closed, and goes through the quarantine like a freed one: a stale
 * pointer faults, a free of it is a double free, and its address space is reused
 * instead of leaving a hole, by the old block's partition; the moved block takes
 * partition (the realloc's site's). */
static uintptr_t move_region(struct large_state *s, struct large_entry *e, size_t len, unsigned partition)
{
	uintptr_t key = e->data;
	if (!reserve_slot(s)) return 0;
	e = lookup(s, key); /* the table may have moved */
	struct large_entry n = *e;
	size_t trail = random_guard(s, len) + MIN(align_up(len / 2, os_page), (size_t)CONFIG_REALLOC_HEADROOM_MAX);
	size_t align = e->align_log2 ? (size_t)1 << e->align_log2 : 0;
	bool guarded = guards_room();
	bool whole = guarded && guard_moves_whole(&e->region);
	size_t lead = whole ? lead_of(e) : random_guard(s, len);
	if (!map_or_give_back(s, &n.region, &lead, len, &trail, align, whole ? MAP_SPACE : guarded ? MAP_GUARDED : MAP_BARE))
		return 0;
	e = lookup(s, key); /* draining the quarantine may have moved it */
	bool kept;
	if (whole ? !guard_move_whole(&e->region, lead_of(e), e->usable, &n.region, lead, len, &kept)
		  : !guard_move(&e->region, lead_of(e), e->usable, &n.region, lead, len, &kept)) {
		(void)guard_unmap(&n.region);
		return 0;
	}
	n.data = n.region.base + lead;
	n.usable = len;
	n.partition = (uint8_t)partition;
	live_change(s, e->usable, len);
	block_uncount(e); /* the old block is closed */
	block_count(&n, guarded, whole ? 1 : 2);
	place(s, &n); /* fills an empty slot: e stays where it is */
	s->used++;
	stat_inc(STAT_REALLOC_MOVED);
	if (kept) quarantine_region(s, e);
	else remove_entry(s, e); /* guard_move gave back what was left of it */
	return n.data;
}

void *large_realloc(void *p, size_t size, uintptr_t site)
{
	struct large_state *s = roots.large;
	size_t len;
	if (size > LARGE_MAX || !page_round(size, &len)) return NULL;
	lock_take(&s->lock);
	struct large_entry *e = live_entry(s, p, OP_REALLOC);
	if (unlikely(e->kind != KIND_MALLOC)) kind_mismatch_at(s, e, KIND_MALLOC, OP_REALLOC);
	size_t lead = lead_of(e), end = lead + e->usable;
	size_t trail = e->region.size - end;
	uintptr_t result = e->data;
	if (len <= e->usable) {
		/* Shrink: the cut tail joins the trail guard. If the kernel refuses, the block
		 * simply keeps its larger usable size. */
		if (len < e->usable && guard_cut(&e->region, lead + len, e->usable - len)) {
			live_change(s, e->usable, len);
			e->usable = len;
		}
		stat_inc(STAT_REALLOC_IN_PLACE);
	} else if (len - e->usable + os_page <= trail && guard_open(&e->region, end, len - e->usable)) {
		live_change(s, e->usable, len);
		e->usable = len;
		stat_inc(STAT_REALLOC_IN_PLACE);
	} else {
		result = move_region(s, e, len, partition_of(site));
	}
	if (result) lookup(s, result)->requested = size;
	lock_give(&s->lock);
	return (void *)result;
}

size_t large_object_size(const void *p)
{
	struct large_state *s = roots.large;
	uintptr_t a = (uintptr_t)p;
	size_t n = 0;
	lock_take(&s->lock);
	struct large_entry *e = lookup(s, a);
	if (!e) {
		/* Interior pointer: rare enough that a scan of the table is acceptable. */
		for (size_t i = 0; i < s->cap && !e; i++)
			if (s->table[i].data && a - s->table[i].region.base < s->table[i].region.size) e = &s->table[i];
	}
	/* Inside a freed region, or one kept for reuse: a stale pointer, so the program's
	 * idea of the heap is wrong. A live block's guards (one past the end) hold 0 bytes. */
	if ((e && e->state != ENTRY_LIVE) ||
	    (!e && (reuse_cache_contains(&s->cache, a) || resident_cache_contains(&s->resident, a)))) {
		lock_give(&s->lock);
		report_fatal(OP_OBJECT_SIZE, ERR_INTO_FREED, p);
	}
	if (e && a - e->data < e->usable) n = e->data + e->usable - a;
	lock_give(&s->lock);
	return n;
}

bool large_trim(void)
{
	struct large_state *s = roots.large;
	lock_take(&s->lock);
	bool any = resident_cache_flush(&s->resident) + reuse_cache_flush(&s->cache) > 0;
	lock_give(&s->lock);
	return any;
}

void large_figures(struct large_figures *f)
{
	struct large_state *s = roots.large;
	*f = (struct large_figures){0};
	lock_take(&s->lock);
	for (size_t i = 0; i < s->cap; i++) {
		if (s->table[i].data && s->table[i].state == ENTRY_LIVE) {
			f->live++;
			f->live_bytes += s->table[i].usable;
		}
	}
	f->quarantined = s->quarantine.count + s->huge.count;
	f->quarantined_bytes = s->quarantine.bytes + s->huge.bytes;
	f->cached = s->cache.count + s->resident.count;
	f->cached_bytes = s->cache.bytes + resident_cache_region_bytes(&s->resident);
	f->allocs = s->allocs;
	f->frees = s->frees;
	f->alloc_bytes = s->alloc_bytes;
	f->freed_bytes = s->freed_bytes;
	lock_give(&s->lock);
}

void large_fork_prepare(void) { lock_take(&roots.large->lock); }
void large_fork_parent(void) { lock_give(&roots.large->lock); }
void large_fork_child(bool locked)
{
	if (locked) lock_reset(&roots.large->lock);
	populate_fork_child(&roots.large->populate); /* its generator reseeds on its next draw */
}
