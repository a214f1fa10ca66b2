/*
 * slab_setup.c — the slab window at start-up (where each class's region and nursery
 * slot lie), each arena's metadata block and the places of its classes' shares in it,
 * a class's set-up at its first slab (geometry, guard area, nursery cell, generator),
 * the spill regions a full class takes, and opening arenas. The invariants are slab_setup.h's.
 */
#define _GNU_SOURCE
#include "slab/slab_setup.h"

#include <string.h>

#include "guard/meta.h"
#include "guard/place.h"
#include "slab/class_tally.h"

struct lock slab_arena_lock; /* serialises opening; taken before any class lock */

/* The multiplier for div32 (slab_class.h). */
static uint64_t magic_of(uint32_t d) { return d > 1 ? UINT64_MAX / d + 1 : 0; }

/* Entries of the slot quarantine's random array for slots of `size` bytes: enough for
 * slot_quarantine_bytes of slots, rounded up to a power of two (for masking), so
 * between that and twice it; its FIFO ring holds 2^SLOT_Q_FIFO_SHIFT times as many.
 * 0: no quarantine (slot_quarantine_bytes=0, profile light). */
static uint32_t slot_q_random(uint32_t size)
{
	if (!roots.opt.slot_quarantine_bytes) return 0;
	uint64_t want = ((uint64_t)roots.opt.slot_quarantine_bytes + size - 1) / size;
	uint32_t n = SLOT_Q_MIN_RANDOM;
	while (n < want && n < SLOT_Q_MAX_RANDOM) n <<= 1;
	return n;
}

/* Entries of the quarantine that live in the arena's hot block: a small random array
 * whole with its ring (SLOT_Q_HOT_WHOLE), else the random array's first entries,
 * SLOT_Q_HOT_BYTES of slots (a power of two from 8 up; at most half the array, which
 * only a slot_quarantine_bytes below SLOT_Q_HOT_BYTES limits). */
static uint32_t slot_q_hot(uint32_t size)
{
	uint32_t all = slot_q_random(size), n = 8;
	if (all <= SLOT_Q_HOT_WHOLE) return all + (all << SLOT_Q_FIFO_SHIFT);
	while (2 * n <= SLOT_Q_HOT_BYTES / size) n <<= 1;
	return MIN(n, all / 2);
}

/* Metadata bytes of class c in its arena's block, in three parts. What every malloc
 * writes, its generator, in a run of all the classes' generators: a short-lived
 * process whose classes mostly allocate writes a page of them for a dozen classes, not
 * a page each. What every free writes, its slot quarantine's first entries, beside
 * every other class's: a process that frees into a dozen classes after fork copies the
 * few pages they fill together rather than one page for each (a shell's command
 * substitutions faulted on quarantine arrays spread between the directories). Whole
 * lines, so that classes under different locks never share one. A class's tally, which
 * every malloc and free writes too, follows its generator (class_tally.h: tally_of). */
#define GENERATOR_BYTES align_up(sizeof(struct random_state) + sizeof(struct class_tally), 64)
static size_t class_hot_bytes(unsigned c)
{
	/* The size alone, not sc_geometry: slab_class_setup adds this up for the classes below
	 * its own, and the geometry's search for all of them is a cost a short-lived
	 * process notices. */
	return align_up((size_t)slot_q_hot((uint32_t)sc_size(c)) * sizeof(qentry_t), 64);
}

/* And, written on slow paths: a directory of DIR_START chunks with the sets' summary
 * words, the slab quarantine ring, chunk 0's set bitmaps (set0_of). */
static size_t class_control_bytes(void)
{
	return dir_bytes(DIR_START) + SQ_BYTES + SET0_BYTES;
}

/* Where the generators start: after the block of first descriptors, their kinds (touched
 * only by C++ allocations) and every class's control part (a fixed size each), on a
 * line. The hot parts follow them. */
static size_t arena_generators_start(void)
{
	return align_up(FIRST_BLOCK_BYTES + FIRST_KINDS_BYTES + SC_COUNT * class_control_bytes(), 64);
}

static size_t arena_hot_start(void)
{
	return arena_generators_start() + SC_COUNT * GENERATOR_BYTES;
}

/* Where the hot parts end. */
static size_t arena_hot_end(void)
{
	size_t bytes = arena_hot_start();
	for (unsigned c = 0; c < SC_COUNT; c++) bytes += class_hot_bytes(c);
	return bytes;
}

/* With partitions: the bytes of class c's owner map in a row of its arena's first
 * positions (struct class_parts; none for the zero class, never partitioned), sized
 * before the class is set up by a bound on its slots. */
static size_t owner_column_bytes(unsigned c)
{
	return c ? owner_map_bytes(sc_slots_most(c, os_page)) : 0;
}

/* A row of them: position p of every class. */
static size_t owner_row_bytes(void)
{
	size_t bytes = 0;
	for (unsigned c = 0; c < SC_COUNT; c++) bytes += owner_column_bytes(c);
	return align_up(bytes, 64);
}

/* With partitions, after the hot parts: every class's partition block, then the rows of
 * owner maps of the first positions. Only partitioned paths touch them. */
static size_t arena_parts_bytes(void)
{
	if (!slab_parted()) return 0;
	return SC_COUNT * sizeof(struct class_parts) + FIRST_POSITIONS * owner_row_bytes();
}

/* Metadata bytes of one arena besides its class structs: the block of first
 * descriptors and their kinds, then the control parts of all classes, their generators,
 * then their hot parts, each in class order, then the partitions' part. */
static size_t arena_mem_bytes(void)
{
	return arena_hot_end() + arena_parts_bytes();
}

/* Class k's partition block and the owner map of its position 0 (the rows' start, then
 * the columns of the classes below it). */
static void parts_place(struct slab_class *k, char *mem)
{
	char *parts = mem + arena_hot_end();
	uint8_t *first = (uint8_t *)parts + SC_COUNT * sizeof(struct class_parts);
	for (unsigned below = 0; below < k->cls; below++) first += owner_column_bytes(below);
	k->parts = (struct class_parts *)parts + k->cls;
	k->parts->first = first;
}

/* A class's cold part, what only a class that churns writes: its FIFO ring, then its
 * random array at full length (where the hot entries move: slot_quarantine.c). Mapped
 * for that class alone when it fills its hot entries, so a process maps the full arrays
 * of the classes it churns and no others: an unprivileged mlockall counts every page
 * mapped against RLIMIT_MEMLOCK (system/mlock_unpriv), and one block per arena for every
 * class's arrays (about 1 MiB) took a small program past 8 MiB under a sanitizer's
 * runtime. */
static size_t class_cold_bytes(unsigned c)
{
	uint32_t r = slot_q_random((uint32_t)sc_size(c));
	if (r <= SLOT_Q_HOT_WHOLE) return 0;
	return ((size_t)r + ((size_t)r << SLOT_Q_FIFO_SHIFT)) * sizeof(qentry_t);
}

qentry_t *slab_class_cold(struct slab_class *k)
{
	size_t bytes = class_cold_bytes(k->cls);
	invariant(bytes);
	/* Under the class lock: meta's lock is the innermost. A class asks once (its hot
	 * entries move once); a class that could not have it goes on without. */
	return meta_alloc(bytes);
}

/* Most positions class k may number, home and spill regions together: MAX_POSITIONS,
 * and no more than keep a pointer's page index from the span's base (position * pages
 * + page, which decode_slot divides as 32 bits) below 2^32. Only a window with regions
 * and spill regions far above the defaults reaches the second bound (65 regions of
 * 64 GiB are 2^30 pages). */
static uint32_t positions_cap(const struct slab_class *k)
{
	return (uint32_t)MIN((uint64_t)MAX_POSITIONS, ((uint64_t)1 << 32) / k->pages);
}

/* The nursery's cell size, a power of two (0: none). */
static size_t nursery_cell_bytes(void)
{
	size_t cell = (size_t)CONFIG_SLAB_NURSERY_PAGES * os_page;
	return cell & (cell - 1) ? 0 : cell;
}

/* The place of class r (its index in `classes`) in the window's regions and in the
 * nursery's slots: where it is in the owner table (a cold path, once per class). */
static unsigned place_of(unsigned r)
{
	unsigned j = 0;
	while (roots.slab.owner[j] != r) j++;
	return j;
}

/* Class k's share of its arena's metadata (arena_mem_bytes): its first descriptors,
 * its control part, its generator and tally, its quarantine's hot entries, and with
 * partitions its partition block. */
static void class_metadata(struct slab_class *k, unsigned a, const struct sc_geometry *g)
{
	unsigned c = k->cls;
	char *mem = roots.slab.arena_mem + (size_t)a * roots.slab.arena_mem_bytes;
	char *control = mem + FIRST_BLOCK_BYTES + FIRST_KINDS_BYTES + (size_t)c * class_control_bytes();
	char *hot = mem + arena_hot_start();
	for (unsigned below = 0; below < c; below++) hot += class_hot_bytes(below);
	k->first = (struct slab *)mem + c;
	k->rnd = (struct random_state *)(mem + arena_generators_start() + (size_t)c * GENERATOR_BYTES);
	struct class_tally *t = tally_of(k);
	t->step = t->level = MAX(TALLY_STEP_BYTES / g->size, (size_t)TALLY_MIN_STEP);
	t->top = 2 * t->step;
	uint32_t nrandom = slot_q_random(g->size);
	if (nrandom) {
		k->qrand = (qentry_t *)hot;
		k->qmask = nrandom - 1;
		k->qhot = UINT32_MAX;
		if (nrandom <= SLOT_Q_HOT_WHOLE) k->qring = k->qrand + nrandom;
		else k->qhot = slot_q_hot(g->size); /* the ring: slab_class_cold */
	}
	k->dir = (struct slab **)control;
	k->dir_cap = DIR_START;
	k->set_words = (DIR_START + 63) / 64;
	k->set_sum = (uint64_t *)(k->dir + DIR_START);
	k->sq = (uint32_t *)(control + dir_bytes(DIR_START));
	k->parted = class_parted(c);
	k->owner_words = (uint8_t)(owner_map_bytes(g->slots) / 8);
	if (k->parted) {
		invariant(g->slots <= sc_slots_most(c, os_page)); /* its owner maps' columns */
		parts_place(k, mem);
	}
}

/* The profile's choices, copied where the hot paths read them, and the copy of those
 * paths the class takes (slab_class.h, enum hot_mode): with partitions, the copy that
 * reads the choices from the class, which alone has the partitions' code. After
 * class_metadata, which sets up the quarantine (qmask) and the partitions. */
static void class_choices(struct slab_class *k)
{
	k->random_slots = roots.opt.slot_random;
	k->check_reuse = roots.opt.write_after_free_check;
	if (k->parted) k->hot_mode = HOT_MIXED;
	else if (k->random_slots && k->check_reuse && k->qmask) k->hot_mode = HOT_STRONG;
	else if (!k->random_slots && !k->check_reuse && !k->qmask) k->hot_mode = HOT_LIGHT;
	else k->hot_mode = HOT_MIXED;
}

/* Set up the class struct k (its lock held) the first time a slab is asked of it:
 * geometry, a random guard area, its share of the arena's metadata, its generator.
 * Until then it is all zero: an unlocked lock, no region (a pointer decoding into it is
 * no live block: decode_slot finds it outside the region), no open slabs (the decay
 * sweep passes it by). So a process writes the structs and takes the random draws of
 * the classes it uses only, not of all SC_COUNT (setting them all up at once cost every
 * start-up time and page faults). */
/* The nursery cell of class k (its index r among all arenas' classes): at a random
 * cell-aligned place in its slot, then as many positions as fit above a random lead of
 * up to a quarter of the cell (at least a page, never mapped) and below a closed page.
 * None where the nursery is off or the cell holds no slab of the class. */
static void place_nursery_cell(struct slab_class *k, unsigned r)
{
	size_t cell = nursery_cell_bytes();
	if (!roots.slab.slot_shift || !cell) return;
	size_t slot = (size_t)1 << roots.slab.slot_shift;
	uintptr_t at = roots.slab.nursery + ((size_t)place_of(r) << roots.slab.slot_shift) +
		       random_below(k->rnd, slot / cell) * cell;
	size_t lead = (1 + random_below(k->rnd, MAX(cell / 4 / os_page, 1))) * os_page;
	size_t fit = cell > lead + os_page ? (cell - lead - os_page) / k->slab_bytes : 0;
	if (!fit) return;
	k->nursery_bytes = fit * k->slab_bytes;
	guard_start(&k->nursery, at + lead);
	k->nursery.flags |= slab_region_flags();
}

noinline void slab_class_setup(struct slab_class *k)
{
	unsigned r = (unsigned)(k - roots.slab.classes), a = r / SC_COUNT, c = r % SC_COUNT;
	struct sc_geometry g;
	sc_geometry(c, os_page, &g);
	size_t region = (size_t)1 << roots.slab.region_shift;
	k->cls = c;
	k->arena1 = a + 1;
	/* The deferred slots hold at most what the hot part of the slot quarantine holds
	 * (classes up to 1 KiB): an idle arena keeps them until its class is used again. */
	k->defer_frees = roots.opt.slot_quarantine_bytes && (size_t)g.size * DEFERRED_MAX <= SLOT_Q_HOT_BYTES;
	k->size = g.size;
	k->usable = g.usable;
	k->slots = g.slots;
	k->nwords = (uint8_t)((g.slots + 63) / 64);
	k->pages = g.pages;
	k->page_shift = (uint8_t)__builtin_ctzl(os_page);
	k->slot_magic = magic_of(g.size);
	k->pages_magic = magic_of(g.pages);
	k->slab_bytes = (size_t)g.pages * os_page;
	k->track_extent = g.slots <= SLAB_EXTENT_SLOTS;
	k->extent_shift = 0;
	while ((g.usable + ((size_t)1 << k->extent_shift) - 1) >> k->extent_shift > EXTENT_MAX_UNITS) k->extent_shift++;
	k->empty_floor = (uint32_t)MAX((size_t)CONFIG_SLAB_EMPTY_CACHE, CONFIG_SLAB_EMPTY_CACHE_BYTES / k->slab_bytes);
	k->empty_max = k->empty_floor;

	class_metadata(k, a, &g);
	class_choices(k);

	/* Its own generator, seeded from the slab allocator's source (one system call for
	 * all of them). The random guard area: up to 1/16 of the region, at least one page.
	 * Never mapped: the region starts above it. */
	k->rnd->source = roots.slab.seeds;
	random_reseed(k->rnd);
	k->rnd->owner_generation = k->rnd->generation; /* its quarantine's (slot_quarantine.c) */
	size_t guard_pages = 1 + random_below(k->rnd, region / 16 / os_page);
	uintptr_t area = roots.slab.base + (size_t)place_of(r) * region + guard_pages * os_page;
	k->max_pos = (uint32_t)MIN((region - guard_pages * os_page) / k->slab_bytes, (size_t)positions_cap(k));
	k->home_pos = k->max_pos;
	/* Positions of each spill region: what fits above the largest lead a spill region
	 * draws (a sixteenth of it, as the home region's guard area) and below a closed
	 * page. The same count in every one, so a position names its spill region by one
	 * division (spill_of). */
	k->seg_pos = (uint32_t)MIN((region - region / 16 - os_page) / k->slab_bytes, (size_t)positions_cap(k));
	k->seg_magic = magic_of(k->seg_pos);
	guard_start(&k->region, area);
	k->region.flags |= slab_region_flags();
	if (c) place_nursery_cell(k, r); /* the zero class's memory never opens: its region */
	spans_update(k);
	k->open_slabs = c != 0;
	atomic_fetch_or_explicit(&slab_set_up_classes[a], (uint64_t)1 << c, memory_order_release);
}

/* Spill regions handed out so far (each to one class, for good). */
static _Atomic unsigned spill_taken;

/* The window region number of spill region 0: after the classes' regions and the
 * nursery's (class_at decodes with the same constants). */
#define SPILL_FIRST ((size_t)CONFIG_SLAB_ARENAS * SC_COUNT + (CONFIG_SLAB_NURSERY_PAGES ? 1 : 0))

/* A class's own region holds 2^region_shift bytes whatever it needs; a program that
 * keeps more than that live in one class (31 GiB of 128 KiB blocks) goes on in spill
 * regions. Taken without a lock (a compare-and-swap on the count: nothing for fork to
 * hold), laid out with the class's lock held: a random lead below its first position,
 * as the home region's guard area, never mapped. The owner is published last, so a
 * decoder that finds it sees the span. */
bool slab_spill_add(struct slab_class *k)
{
	if (!roots.slab.nspill || !k->seg_pos || k->max_pos >= positions_cap(k)) return false;
	if (!k->seg) {
		k->seg = meta_alloc(roots.slab.nspill * sizeof *k->seg);
		if (!k->seg) return false;
	}
	unsigned j = atomic_load_explicit(&spill_taken, memory_order_relaxed);
	do {
		if (j >= roots.slab.nspill) return false;
	} while (!atomic_compare_exchange_weak_explicit(&spill_taken, &j, j + 1, memory_order_relaxed,
							memory_order_relaxed));
	struct slab_spill *sp = &roots.slab.spill[j];
	size_t region = (size_t)1 << roots.slab.region_shift;
	size_t lead = (1 + random_below(k->rnd, region / 16 / os_page)) * os_page;
	uintptr_t start = roots.slab.base + ((SPILL_FIRST + j) << roots.slab.region_shift) + lead;
	guard_start(&sp->region, start);
	sp->region.flags |= slab_region_flags();
	size_t lo = (size_t)k->max_pos * k->slab_bytes; /* its first position's offset */
	span_write(&sp->span, start - lo, lo, lo);   /* nothing mapped yet */
	__atomic_store_n(&sp->owner, k, __ATOMIC_RELEASE);
	k->seg[k->nseg++] = (uint16_t)j;
	k->max_pos = (uint32_t)MIN((size_t)k->max_pos + k->seg_pos, (size_t)positions_cap(k));
	return true;
}

/* Arena a's class structs and metadata were mapped at start-up and are zero; each class
 * is set up at its first use (slab_class_setup). The first thread sent to arena a (numbered
 * from 0) opens it: a program with one thread never touches the others' metadata (a
 * few hundred KiB per process). */
noinline void slab_arena_open(unsigned a)
{
	lock_take(&slab_arena_lock);
	atomic_fetch_or_explicit(&slab_open_arenas, (uint32_t)1 << a, memory_order_release);
	lock_give(&slab_arena_lock);
}

unsigned slab_arenas_open(void)
{
	return (unsigned)__builtin_popcount(atomic_load_explicit(&slab_open_arenas, memory_order_acquire));
}

_Static_assert((CONFIG_SLAB_NURSERY_PAGES & (CONFIG_SLAB_NURSERY_PAGES - 1)) == 0,
	       "CONFIG_SLAB_NURSERY_PAGES is a power of two (or 0)");
_Static_assert(CONFIG_SLAB_ARENAS * SC_COUNT < UINT16_MAX, "owner[] holds class indexes and a none");

/* Lay the nursery out in the window's region after the classes': n slots of
 * 2^slot_shift bytes, together at least 2^CONFIG_SLAB_NURSERY_SHIFT bytes wide (under
 * twice that), at a random place aligned to the power of two that holds them, so that
 * they reach across as few page tables of each level as they can. Where the window was
 * shrunk for a short address space the slots shrink with it, down to a cell each, so
 * that the nursery takes at most half its region; past that the process goes without. */
static void nursery_place(struct slab_roots *sr, unsigned n, struct random_state *rnd)
{
	size_t cell = nursery_cell_bytes(), region = (size_t)1 << sr->region_shift;
	if (!cell) return;
	unsigned cell_shift = (unsigned)__builtin_ctzl(cell), shift = cell_shift;
	while (((size_t)n << shift) < (size_t)1 << CONFIG_SLAB_NURSERY_SHIFT) shift++;
	while (shift > cell_shift && ((size_t)n << shift) > region / 2) shift--;
	size_t span = (size_t)n << shift;
	if (span > region / 2) return;
	size_t align = (size_t)1 << (64 - __builtin_clzl(span - 1)); /* <= region / 2 */
	uintptr_t lo = sr->base + ((size_t)n << sr->region_shift), first = align_up(lo, align);
	sr->nursery = first + random_below(rnd, (lo + region - span - first) / align + 1) * align;
	sr->slot_shift = shift;
}

/* Draw where every (arena, class) lives, its region and its nursery slot (roots.h,
 * owner): independently of its class and arena, so that where one class is tells
 * nothing of where another is but that it is elsewhere. */
static void window_place(struct slab_roots *sr, unsigned n)
{
	struct random_state rnd = {.source = NULL};
	random_reseed(&rnd);
	for (unsigned j = 0; j < n; j++) sr->owner[j] = (uint16_t)j;
	for (unsigned j = n - 1; j > 0; j--) { /* Fisher-Yates */
		unsigned i = (unsigned)random_below(&rnd, j + 1);
		uint16_t t = sr->owner[j];
		sr->owner[j] = sr->owner[i];
		sr->owner[i] = t;
	}
	sr->owner[n] = UINT16_MAX; /* class_at's answer for no place */
	nursery_place(sr, n, &rnd);
	explicit_bzero(&rnd, sizeof rnd);
}

/* One arena per CPU the process may run on: at most one thread per CPU runs at a time,
 * so that many arenas keep most running threads off each other's locks, and every
 * arena more holds its own partial slabs, quarantines and empty slabs: more arenas than
 * CPUs cost memory and gain no time. The affinity mask is read once, at start-up. */
static unsigned arenas_wanted(void)
{
	if (roots.opt.arenas) return (unsigned)roots.opt.arenas;
	unsigned cpus = os_cpus();
	return cpus && cpus < CONFIG_SLAB_ARENAS ? cpus : CONFIG_SLAB_ARENAS;
}

bool slab_window(struct slab_roots *out)
{
	/* The window and the nursery are laid out for every arena the build has (address
	 * space only: class_at decodes with the build's constants). Set aside, not mapped:
	 * each region maps what it uses as it grows; one more region's worth holds the
	 * nursery, and the spill regions follow. */
	unsigned shift = CONFIG_SLAB_REGION_SHIFT;
	size_t total = SPILL_FIRST + CONFIG_SLAB_SPILL_REGIONS;
	uintptr_t base;
	while (!guard_window(total << shift, &base))
		if (--shift < MIN_REGION_SHIFT) return false;
	*out = (struct slab_roots){.base = base, .size = total << shift, .region_shift = shift};
	return true;
}

bool slab_init(struct slab_roots *out)
{
	/* Threads are sent to the first `arenas` of the build's arenas. */
	unsigned arenas = CONFIG_SLAB_ARENAS, nregions = arenas * SC_COUNT;
	uintptr_t base = out->base;
	size_t size = out->size;
	unsigned shift = out->region_shift;

	/* Mapped for every arena now, touched only as classes are set up (fresh pages are
	 * zero, and a zero class struct is an unlocked lock over nothing). */
	size_t per_arena = arena_mem_bytes();
	/* In one go (meta_alloc_many): each its own guard page, two system calls for all. The
	 * seed source takes a page: the rest of it holds batched_free.c's pool state
	 * (slab_batch_pool). */
	const size_t bytes[] = {nregions * sizeof(struct slab_class), arenas * per_arena, sizeof(struct random_source),
				CONFIG_SLAB_SPILL_REGIONS * sizeof(struct slab_spill)};
	void *got[4];
	if (!meta_alloc_many(bytes, got, CONFIG_SLAB_SPILL_REGIONS ? 4 : 3)) return false;
	struct slab_class *classes = got[0];
	char *mem = got[1];
	struct random_source *seeds = got[2];
	struct slab_spill *spill = CONFIG_SLAB_SPILL_REGIONS ? got[3] : NULL;
	random_source_init(seeds);
	*out = (struct slab_roots){.base = base, .size = size, .region_shift = shift,
				     .arenas = arenas_wanted(), .classes = classes, .arena_mem = mem,
				     .arena_mem_bytes = per_arena, .seeds = seeds, .spill = spill,
				     .nspill = CONFIG_SLAB_SPILL_REGIONS,
				     .owner_row = slab_parted() ? owner_row_bytes() : 0};
	window_place(out, nregions);
	slab_arena_open(0);
	return true;
}
