/*
 * slab.c — size-class regions, slabs and slots.
 *
 * Layout of one (arena, class) region (2^region_shift bytes of the slab window):
 *
 *   [ guard area: random page count | slab 0 | slab 1 | guard | slab 3 | ... | unopened | unmapped ]
 *
 * The guard area is never mapped; the slab area is mapped (PROT_NONE) from its start
 * as it grows (grow_region) and opened slab by slab.
 *
 * The nursery (the window's last region) holds a cell per (arena, class):
 *
 *   [ cell of class 17 | cell of class 3 | ... ]      (random order per arena)
 *   cell: [ lead | closed page | slab 0 | guard | slab 2 | ... | closed page | unused ]
 *
 * Positions below nursery_bytes / slab_bytes are the cell's, mapped all at once at the
 * class's first slab (closed until opened); the region takes over from there, its own
 * first positions never opened. Each class would otherwise need page tables of its own
 * from its very first slab (regions are 64 GiB apart): a shell with 30 classes in use
 * kept 71 page-table pages, which every fork copies and every exit frees (VmPTE 284
 * against 84 KiB with the nursery; the shell benchmark 1.41 -> 1.31 s, 5 rounds).
 *
 * Slab positions are fixed-size steps from the area start, so a pointer decodes to
 * (position, slot) with two multiply-shift divisions. Guard slabs are positions the
 * high-water mark skips: after every CONFIG_GUARD_SLAB_INTERVAL fresh slabs while the
 * region closes spans with guard markers, after every CONFIG_GUARD_SLAB_INTERVAL_MPROTECT
 * once it closes them with PROT_NONE (from start-up, or from the moment the madvise
 * backend is latched off). A guard is never usable and its descriptor stays SLAB_NONE,
 * so decoding a pointer needs no record of where the guards are. The area below the
 * high-water mark grows as one read-write span in which guards and closed slabs are
 * closed spans: guard markers (a class costs one VMA) or PROT_NONE holes.
 *
 * Descriptors live in metadata chunks of CHUNK slabs, found through a directory, except
 * each class's first FIRST_POSITIONS: those of all the classes of an arena live side by
 * side, position by position, so a process that uses a few slabs in each of many classes
 * writes a few pages of descriptors, not one per class. The per-class state (lock,
 * lists, quarantine heads) is one cache-aligned struct; its generator and quarantine
 * arrays sit in the arena's block beside every other class's.
 *
 * Lists, by slab state:
 *   ACTIVE  open, 1..slots slots in use; on the partial list unless full
 *   EMPTY   open, no slot in use, in the empty set (a budget that follows use; the
 *           contents are zero but for the canaries of slots handed out): the lowest
 *           is reused first, the highest closed first, for the same reason as the
 *           closed set below
 *   CLOSED  closed through the guard layer; in the slab quarantine ring, then in the
 *           closed set from which the lowest position is reopened before fresh space
 *           is used (so churn keeps reusing the same low slabs and the open ones stay
 *           together: reused in any other order, the few slabs left open after a
 *           wave of frees wander over the whole area and each splits it anew)
 *   NONE    never used, or a guard position
 */
#define _GNU_SOURCE
#include "slab.h"

#include <stdatomic.h>
#include <string.h>

#include "guard.h"
#include "init.h"
#include "lock.h"
#include "meta.h"
#include "os.h"
#include "policy.h"
#include "random.h"

#if CONFIG_WRITE_AFTER_FREE_CHECK && !CONFIG_ZERO_ON_FREE
#error "CONFIG_WRITE_AFTER_FREE_CHECK needs CONFIG_ZERO_ON_FREE"
#endif

/* Descriptors come in chunks of CHUNK positions (about 24 KiB of metadata each): small
 * enough that a class in light use maps little, big enough to keep chunks few. */
#define CHUNK_SHIFT 7u
#define CHUNK (1u << CHUNK_SHIFT)
/* Positions whose descriptors every class of an arena keeps in one shared block (row
 * by row: position 0 of every class, then position 1, ...; a row is about 2.8 pages).
 * A short-lived process such as one stage of a shell pipeline uses a slab or two per
 * class: its descriptors are then a few pages in all, not one per class, and so are the
 * pages a forked child copies when it writes them. A class's chunk 0, once it needs one,
 * still has room for all CHUNK positions: the first FIRST_POSITIONS stay unused there. */
#define FIRST_POSITIONS 8u
_Static_assert(FIRST_POSITIONS <= CHUNK, "the first positions lie in chunk 0");
/* At most this many slab positions per region: bounds the directory (256 KiB). */
#define MAX_POSITIONS (1u << 22)
/* A pointer's page index in its region is 32 bits (live_slot), with pages of 4 KiB or more. */
_Static_assert(CONFIG_SLAB_REGION_SHIFT <= 44, "a page index in a region fits in 32 bits");
/* Smallest region tried when the address space is short (e.g. 39-bit arm64). */
#define MIN_REGION_SHIFT 26u
/* Directory chunks every class starts with (CHUNK slab positions each), and the bytes
 * of that directory with both sets' summary words. */
#define DIR_START 32u
#define DIR_BYTES (DIR_START * sizeof(struct slab *) + 2 * ((DIR_START + 63) / 64) * sizeof(uint64_t))
/* Cross-arena frees a class holds back from its quarantine (a cache line with the count). */
#define DEFERRED_MAX 15u
/* Slot quarantine entries per class: at most this many (rand16 indexes it). */
#define SLOT_Q_MAX 4096u
/* ... and at least this many in each half (random array and FIFO). */
#define SLOT_Q_MIN_HALF 4u

enum { SLAB_NONE, SLAB_ACTIVE, SLAB_EMPTY, SLAB_CLOSED };
enum { AREA_REGION, AREA_NURSERY };

/* Classes with at most this many slots a slab keep a dirty extent per slot (slab.h). */
#define SLAB_EXTENT_SLOTS 32u
/* Extents are kept in 16-byte units: a slot of 128 KiB is 8192 units. */
#define EXTENT_UNIT 16u

/* A slot's three state bits sit side by side, word by word: a slab of up to 64 slots
 * (every class from 64 bytes up but three with 71 to 85) keeps all an allocation or a
 * free reads of it, but the extents, in the descriptor's first cache line. (With an
 * array per state the quarantine bits were in the second line: callgrind's cache model
 * of small churn counted 1.3 first-level misses more per free, for 14 instructions
 * fewer per malloc and free.) */
struct slot_bits {
	uint64_t used;  /* handed out or quarantined; bits past `slots` are set */
	uint64_t quar;  /* in the slot quarantine */
	uint64_t fresh; /* not handed out since the slab was opened: all zero */
};

/* Line-aligned: in an arena's shared block (FIRST_POSITIONS) descriptors of different
 * classes, under different locks, sit side by side and must not share a line between
 * threads. */
struct slab {
	uint64_t canary;     /* leading (lowest-address) byte zero */
	uint32_t next, prev; /* list links: position + 1, 0 = none */
	uint16_t nused;
	uint8_t state;
	/* A slab keeps extents only when it has at most SLAB_EXTENT_SLOTS slots, so one word
	 * of bits: the extents share the later words' place. Two lines a descriptor instead
	 * of three, and a class's first extents in the line of its bits. Only the class's
	 * nwords words of bits are ever read or written. */
	union {
		struct slot_bits bits[SLAB_WORDS];
		struct {
			struct slot_bits bits0;
			/* Live: the units the program may have written. Not live: the units
			 * the free wiped, which the next allocation checks. */
			uint16_t extent[SLAB_EXTENT_SLOTS];
		};
	};
} __attribute__((aligned(64)));
_Static_assert(offsetof(struct slab, bits) + sizeof(struct slot_bits) <= 64, "a slab's first word of bits is in its first line");
_Static_assert(SLAB_EXTENT_SLOTS <= 64, "a slab that keeps extents has one word of bits");
_Static_assert(sizeof(struct slab) == 128, "a descriptor is two lines");

struct slab_class {
	/* Line 0: the lock and the geometry, fixed when the class is set up (class_setup,
	 * on its first slab). */
	struct lock lock;
	uint32_t size, usable, slots, nwords, pages, page_shift;
	uint64_t slot_magic, pages_magic; /* n / d == mulhi(n, magic) for n < 2^32 */
	size_t slab_bytes;
	uint32_t max_pos;
	uint32_t cls;
	/* Line 1: the rest of what every malloc and free reads here. For decoding, per area
	 * (AREA_REGION, AREA_NURSERY): offsets from base in [lo, hi) may be slots, that is,
	 * are the area's positions and mapped (spans_update). Indexed, not branched on:
	 * frees land in either area at random. The region's lo is nursery_bytes. */
	struct area_span { uintptr_t base; size_t lo, hi; } span[2];
	uint32_t partial;
	uint32_t hwm;         /* positions below were taken into use (or skipped as guards) */
#if CONFIG_SLOT_QUARANTINE
	uint32_t arena1;            /* its arena + 1: tls_arena of the threads it serves */
	bool defer_frees;           /* frees from other arenas wait in `deferred` (slab_free) */
#endif
	bool open_slabs;            /* false for the zero class: its memory never opens */
	bool track_extent;          /* slots <= SLAB_EXTENT_SLOTS: per-slot dirty extents */
	/* Line 2: descriptors and the slot quarantine. */
	struct slab *first;   /* descriptor of position 0; position p < FIRST_POSITIONS at
			       * first[p * SC_COUNT] (the arena's shared block) */
	struct slab **dir;    /* dir_cap chunks of descriptors; grows with hwm */
	uint32_t *qrand, *qring; /* slot quarantine: entries by qentry() */
	/* Its generator, in the arena's metadata block beside every other class's (out of
	 * the struct: 312 bytes that made it 832). */
	struct random_state *rnd;
	uint32_t qrand_mask, qring_mask, qhead, qcount;
	uint32_t qfill; /* entries the random array was given in order, until it was full */
#if CONFIG_SLOT_QUARANTINE
	uint32_t ndeferred; /* slots waiting in `deferred` */
#endif
	/* Slow paths from here. */
	uint32_t dir_cap;
	uint32_t since_guard; /* fresh slabs taken since the last guard */
	struct guard_region region; /* base = slab position 0; size: mapped so far (grows) */
	/* Positions below nursery_bytes / slab_bytes lie in the class's nursery cell (base =
	 * position 0 there too), the rest in the region; 0: no nursery. */
	struct guard_region nursery;
	size_t nursery_bytes;
	uint64_t tail[SLAB_WORDS];  /* used bits of an empty slab (the slots past `slots`) */
	bool dir_own;         /* dir was allocated on its own (not start-up's shared block) */
	/* The closed set (closed slabs out of the slab quarantine) and the empty set (empty
	 * slabs kept open): a bit per position in its descriptor chunk, a summary bit per
	 * chunk, so the lowest and the highest member are found in a few loads. */
	uint64_t *set_chunks[2];
	uint32_t set_words; /* summary words per set */
	uint64_t set0[2][CHUNK / 64]; /* chunk 0's bitmaps (it may have no chunk of its own) */
	uint32_t nclosed, nempty;
	/* The empty-slab budget follows use: empty_max grows when the class reopens a slab
	 * soon after closing one (churn) and decays towards its floor when it does not.
	 * peak_now/peak_prev: most slabs in use in this decay period and the one before. */
	uint32_t empty_max, empty_floor, nactive;
	uint32_t peak_now, peak_prev;
	bool empty_reused; /* an empty slab was taken, or the budget grew, this period */
	uint64_t closed_at_ms, decay_at_ms;
	uint32_t *sq; /* slab quarantine ring */
	uint32_t sq_head, sq_count;
#if CONFIG_SLOT_QUARANTINE
	/* Slots freed by threads of other arenas, already wiped and marked quarantined,
	 * waiting to enter the slot quarantine (their own line: see defer_slot). */
	uint32_t deferred[DEFERRED_MAX] __attribute__((aligned(64)));
#endif
} __attribute__((aligned(64)));

_Static_assert(offsetof(struct slab_class, dir_cap) <= 3 * 64, "the hot fields fill the first three lines");

static __thread unsigned tls_arena __attribute__((tls_model("initial-exec")));
static _Atomic unsigned next_arena;

/* Arena 0 is opened at start-up, the others by the first thread sent there
 * (arena_open). Bit a of arenas_open: arena a is open, its classes may be set up (each
 * on its first slab). A pointer decoding into a class never set up is no live block:
 * its region is empty. */
static _Atomic uint32_t arenas_open;
/* Bit c of classes_set_up[a]: class c of arena a is set up (class_setup). Sweeps over
 * all classes (decay, trim, exit checks, figures) read this instead of the structs, so
 * they neither lock nor fault in the struct of a class the program never used. (An
 * allocation's own class, a stray free, and the fork handlers of a threaded process
 * still touch its lock word.) */
static _Atomic uint64_t classes_set_up[CONFIG_SLAB_ARENAS];
_Static_assert(SC_COUNT <= 64, "classes_set_up has a bit per class");
static struct lock arena_lock; /* serialises opening; taken before any class lock */
_Static_assert(CONFIG_SLAB_ARENAS >= 1 && CONFIG_SLAB_ARENAS <= 32, "arenas_open has a bit per arena");

/* Acquire pairs with the release in arena_open; a reader takes a class's lock before
 * reading its fields anyway. */
static inline bool arena_is_open(unsigned a)
{
	return atomic_load_explicit(&arenas_open, memory_order_acquire) >> a & 1;
}

/* Class r (arena r / SC_COUNT) is set up; acquire pairs with class_setup's release. */
static inline bool class_is_set_up(unsigned r)
{
	return atomic_load_explicit(&classes_set_up[r / SC_COUNT], memory_order_acquire) >> (r % SC_COUNT) & 1;
}

/* --- locking (lock.h) ----------------------------------------------------------- */

static inline void class_lock(struct slab_class *k) { lock_take(&k->lock); }
static inline void class_unlock(struct slab_class *k) { lock_give(&k->lock); }

/* --- arithmetic ------------------------------------------------------------------ */

static uint64_t magic_of(uint32_t d) { return d > 1 ? UINT64_MAX / d + 1 : 0; }

static inline uint32_t div32(uint32_t n, uint32_t d, uint64_t magic)
{
	if (d == 1) return n;
	return (uint32_t)(((unsigned __int128)magic * n) >> 64);
}

static inline struct slab *desc(const struct slab_class *k, uint32_t pos)
{
	if (pos < FIRST_POSITIONS) return &k->first[(size_t)pos * SC_COUNT];
	return &k->dir[pos >> CHUNK_SHIFT][pos & (CHUNK - 1)];
}

/* Whether position pos has a descriptor yet (positions below hwm all do, but for a
 * guard alone in its chunk). */
static inline bool desc_exists(const struct slab_class *k, uint32_t pos)
{
	return pos < FIRST_POSITIONS || k->dir[pos >> CHUNK_SHIFT];
}

/* The area holding position pos: its nursery cell or its region. Offsets into either
 * are pos * slab_bytes from its base. */
static inline struct guard_region *area_of(struct slab_class *k, uint32_t pos)
{
	return (size_t)pos * k->slab_bytes < k->nursery_bytes ? &k->nursery : &k->region;
}

static inline uintptr_t slab_start(const struct slab_class *k, uint32_t pos)
{
	size_t off = (size_t)pos * k->slab_bytes;
	return k->span[off < k->span[AREA_REGION].lo ? AREA_NURSERY : AREA_REGION].base + off;
}

/* Bytes of slot i that may be dirty (live) or that were wiped (not live). */
static inline size_t extent_of(const struct slab_class *k, const struct slab *s, uint32_t i)
{
	return k->track_extent ? MIN((size_t)s->extent[i] * EXTENT_UNIT, (size_t)k->usable) : k->usable;
}

static inline void set_extent(const struct slab_class *k, struct slab *s, uint32_t i, size_t n)
{
	if (k->track_extent) s->extent[i] = (uint16_t)((MIN(n, (size_t)k->usable) + EXTENT_UNIT - 1) / EXTENT_UNIT);
}

static inline void grow_extent(const struct slab_class *k, struct slab *s, uint32_t i, size_t n)
{
	if (n > extent_of(k, s, i)) set_extent(k, s, i, n);
}

/* The class of an address in the slab window and its area (AREA_REGION or
 * AREA_NURSERY); NULL when its arena never opened or a is in no region and no cell:
 * then nothing there was ever handed out, and no class struct is to be read. Both
 * answers are worked out and one is picked by mask (small churn frees into both areas
 * at random, so a branch would mispredict). Measured: this, a branch, and a table-free
 * cell order all cost small churn about 3%; a build without a nursery compiles the
 * single-area decode of before. */
static inline struct slab_class *class_at(uintptr_t a, unsigned *area)
{
	const size_t n = (size_t)CONFIG_SLAB_ARENAS * SC_COUNT;
	size_t r = (a - ro.slab.base) >> ro.slab.region_shift;
#if !CONFIG_SLAB_NURSERY_PAGES
	/* Built without a nursery: the regions alone, and the decode costs what it did
	 * before there was one (small churn 2-3% less). */
	*area = AREA_REGION;
	(void)n;
	return arena_is_open((unsigned)(r / SC_COUNT)) ? &ro.slab.classes[r] : NULL;
#endif
	size_t cell = MIN((a - ro.slab.nursery) >> ro.slab.cell_shift, n); /* n: in no cell */
	size_t in_cell = ro.slab.cell_region[cell];
	size_t pick = -(size_t)(r >= n); /* the nursery's region (there is one then) */
	*area = r >= n;
	r = (in_cell & pick) | (r & ~pick); /* masks: the compiler keeps them branch-free */
	if (unlikely(r >= n)) return NULL;
	return arena_is_open((unsigned)(r / SC_COUNT)) ? &ro.slab.classes[r] : NULL;
}

/* a's offset from position 0 of its area, or SIZE_MAX when a is not among that area's
 * positions (the nursery's below nursery_bytes, the region's from there) or beyond what
 * the area has mapped. */
static inline size_t position_offset(const struct slab_class *k, uintptr_t a, unsigned area)
{
	const struct area_span *sp = &k->span[area];
	size_t off = a - sp->base;
	return off - sp->lo < sp->hi - sp->lo ? off : SIZE_MAX;
}

/* The spans decoding goes by, after either area changed what it maps. */
static void spans_update(struct slab_class *k)
{
	size_t nb = k->nursery_bytes;
	k->span[AREA_REGION] = (struct area_span){k->region.base, nb, MAX(k->region.size, nb)};
	k->span[AREA_NURSERY] = (struct area_span){k->nursery.base, 0, k->nursery.size ? nb : 0};
}

/* 16 random bits from the class's generator: a ChaCha block serves many choices.
 * (Unused where neither random slot choice nor the slot quarantine is built: light.) */
static inline __attribute__((unused)) uint32_t rand16(struct slab_class *k) { return random_u16(k->rnd); }

static cold __attribute__((noreturn)) void die(struct slab_class *k, const char *what, const void *p)
{
	class_unlock(k);
	fatal(what, p);
}

/* --- lists ----------------------------------------------------------------------- */

static void partial_push(struct slab_class *k, uint32_t pos, struct slab *s)
{
	s->prev = 0;
	s->next = k->partial;
	if (k->partial) desc(k, k->partial - 1)->prev = pos + 1;
	k->partial = pos + 1;
}

static void partial_remove(struct slab_class *k, struct slab *s)
{
	if (s->prev) desc(k, s->prev - 1)->next = s->next;
	else k->partial = s->next;
	if (s->next) desc(k, s->next - 1)->prev = s->prev;
	s->next = s->prev = 0;
}

/* --- slabs ----------------------------------------------------------------------- */

/* Fresh slabs between two guard slabs, for the way the region closes spans now: a guard
 * marker costs no VMA, a PROT_NONE guard up to two. Read at each guard decision, so a
 * region that the EINVAL latch (mlockall) moves to PROT_NONE spaces its guards out. */
static uint32_t guard_interval(const struct slab_class *k)
{
	bool markers = (k->region.flags & REGION_MARKERS) && guard_backend() == GUARD_MADVISE;
	return markers ? CONFIG_GUARD_SLAB_INTERVAL : CONFIG_GUARD_SLAB_INTERVAL_MPROTECT;
}

/* Room in the directory for chunk c: the directory and the sets' summary words follow
 * the slabs in use instead of being sized for the whole region up front (they are
 * metadata every class would otherwise map from the start). Lock held: every reader of
 * the directory holds it too. */
static bool dir_room(struct slab_class *k, uint32_t c)
{
	if (c < k->dir_cap) return true;
	uint32_t cap = k->dir_cap;
	while (cap <= c) cap *= 2;
	uint32_t words = (cap + 63) / 64;
	size_t bytes = cap * sizeof(struct slab *) + 2 * (size_t)words * sizeof(uint64_t);
	struct slab **dir = meta_alloc(bytes);
	if (!dir) return false;
	uint64_t *sets = (uint64_t *)(dir + cap);
	memcpy(dir, k->dir, k->dir_cap * sizeof *dir);
	for (unsigned set = 0; set < 2; set++) {
		memcpy(sets + set * words, k->set_chunks[set], k->set_words * sizeof(uint64_t));
		k->set_chunks[set] = sets + set * words;
	}
	if (k->dir_own) {
		uint32_t old_words = (k->dir_cap + 63) / 64;
		meta_free(k->dir, k->dir_cap * sizeof(struct slab *) + 2 * (size_t)old_words * sizeof(uint64_t));
	}
	k->dir = dir;
	k->dir_cap = cap;
	k->dir_own = true;
	k->set_words = words;
	return true;
}

/* A chunk's bitmaps of the closed and the empty set: a bit per position in each. They
 * head the chunk, padded to a cache line so that its descriptors stay aligned. */
#define SET_CHUNK_BYTES (2u * CHUNK / 8u)
#define CHUNK_HEAD_BYTES 64u
_Static_assert(SET_CHUNK_BYTES <= CHUNK_HEAD_BYTES, "a chunk's bitmaps fit its head");

/* Every position below the high-water mark must have a descriptor: live_slot reads it. */
static bool have_desc(struct slab_class *k, uint32_t pos)
{
	if (pos < FIRST_POSITIONS) return true;
	if (!dir_room(k, pos >> CHUNK_SHIFT)) return false;
	if (k->dir[pos >> CHUNK_SHIFT]) return true;
	/* Chunks of descriptors keep metadata mappings few; zeroed: state SLAB_NONE. The
	 * chunk's bitmaps of the closed and the empty set come first, in the page of its
	 * lowest descriptors: a class using a few slabs touches one page of the chunk, not
	 * also its last. */
	char *chunk = meta_alloc(CHUNK_HEAD_BYTES + CHUNK * sizeof(struct slab));
	if (!chunk) return false;
	k->dir[pos >> CHUNK_SHIFT] = (struct slab *)(chunk + CHUNK_HEAD_BYTES);
	return true;
}

/* --- position sets: the closed set and the empty set ------------------------------ */

enum { SET_CLOSED, SET_EMPTY };

static inline uint64_t *set_bits(struct slab_class *k, unsigned set, uint32_t chunk)
{
	if (!chunk) return k->set0[set];
	return (uint64_t *)((char *)k->dir[chunk] - CHUNK_HEAD_BYTES) + set * (CHUNK / 64);
}

static inline uint32_t *set_count(struct slab_class *k, unsigned set)
{
	return set == SET_CLOSED ? &k->nclosed : &k->nempty;
}

static void set_add(struct slab_class *k, unsigned set, uint32_t pos)
{
	uint32_t c = pos >> CHUNK_SHIFT, i = pos & (CHUNK - 1);
	set_bits(k, set, c)[i >> 6] |= (uint64_t)1 << (i & 63);
	k->set_chunks[set][c >> 6] |= (uint64_t)1 << (c & 63);
	++*set_count(k, set);
}

static void set_remove(struct slab_class *k, unsigned set, uint32_t pos)
{
	uint32_t c = pos >> CHUNK_SHIFT, i = pos & (CHUNK - 1);
	uint64_t *bits = set_bits(k, set, c), any = 0;
	bits[i >> 6] &= ~((uint64_t)1 << (i & 63));
	for (uint32_t w = 0; w < CHUNK / 64; w++) any |= bits[w];
	if (!any) k->set_chunks[set][c >> 6] &= ~((uint64_t)1 << (c & 63));
	--*set_count(k, set);
}

/* The lowest member (the set must not be empty). */
static uint32_t set_lowest(struct slab_class *k, unsigned set)
{
	const uint64_t *sum = k->set_chunks[set];
	uint32_t w = 0;
	while (!sum[w]) w++;
	uint32_t c = (w << 6) + (uint32_t)__builtin_ctzll(sum[w]);
	const uint64_t *bits = set_bits(k, set, c);
	for (w = 0; !bits[w]; w++) {}
	return (c << CHUNK_SHIFT) + (w << 6) + (uint32_t)__builtin_ctzll(bits[w]);
}

/* The highest member (the set must not be empty). */
static uint32_t set_highest(struct slab_class *k, unsigned set)
{
	const uint64_t *sum = k->set_chunks[set];
	uint32_t w = k->set_words - 1;
	while (!sum[w]) w--;
	uint32_t c = (w << 6) + 63 - (uint32_t)__builtin_clzll(sum[w]);
	const uint64_t *bits = set_bits(k, set, c);
	for (w = CHUNK / 64 - 1; !bits[w]; w--) {}
	return (c << CHUNK_SHIFT) + (w << 6) + 63 - (uint32_t)__builtin_clzll(bits[w]);
}

/* Map the region at least up to end: by a quarter more each time, so that a class in
 * use costs a few mmap calls in all and its mapped but unused tail stays a quarter of
 * what it uses (plus one step of CONFIG_SLAB_GROW_MIN). False when out of address
 * space (RLIMIT_AS) or when another mapping sits where the region would grow. */
static bool grow_region(struct slab_class *k, size_t end)
{
	/* A closed page past the highest slab (guard_grow maps one below the first): the
	 * window around a region is only set aside, and another mapping could otherwise
	 * lie right against a slab. */
	size_t window = (size_t)k->max_pos * k->slab_bytes;
	size_t need = MIN(end + os_page, window);
	size_t have = k->region.size;
	if (need <= have) return true;
	size_t want = MAX(need, have + MAX(have / 4, (size_t)CONFIG_SLAB_GROW_MIN));
	want = MIN((want + k->slab_bytes - 1) / k->slab_bytes * k->slab_bytes, window);
	/* Short of address space, the exact need may still fit. */
	bool grown = guard_grow(&k->region, want, "rampart:slab") || guard_grow(&k->region, need, "rampart:slab");
	spans_update(k);
	return grown;
}

/* Map the class's nursery cell, all of its positions and a closed page above them, at
 * its first slab (closed address space costs nothing until opened). If that fails
 * (address space, a foreign mapping there) the class does without: nothing was placed
 * there yet, so its positions all move to the region. */
static void map_nursery(struct slab_class *k)
{
	if (k->nursery_bytes && !k->nursery.size && !guard_grow(&k->nursery, k->nursery_bytes + os_page, "rampart:slab"))
		k->nursery_bytes = 0;
	spans_update(k);
}

/* Open positions [from, to) taken fresh into use: one call per area they lie in. */
static bool extend_positions(struct slab_class *k, uint32_t from, uint32_t to)
{
	if (from == to) return true;
	if (to * k->slab_bytes > k->nursery_bytes && from * k->slab_bytes < k->nursery_bytes) {
		uint32_t split = (uint32_t)(k->nursery_bytes / k->slab_bytes);
		return extend_positions(k, from, split) && extend_positions(k, split, to);
	}
	return guard_extend(area_of(k, from), (size_t)from * k->slab_bytes, (size_t)(to - from) * k->slab_bytes);
}

/* Take the next never-used position into use, skipping a guard first when one is due;
 * false on OOM. */
static bool fresh_slab(struct slab_class *k, uint32_t *out)
{
	uint32_t every = guard_interval(k);
	bool guard = every && k->since_guard >= every;
	uint32_t pos = k->hwm + guard;
	if (pos >= k->max_pos || !have_desc(k, k->hwm) || !have_desc(k, pos)) return false;
	if (!k->hwm) map_nursery(k);
	size_t end = (size_t)(pos + 1) * k->slab_bytes;
	if (end > k->nursery_bytes && !grow_region(k, end)) return false;
	if (k->open_slabs) {
		struct guard_region *area = area_of(k, k->hwm);
		if (area == area_of(k, pos) &&
		    guard_grown_marked(area, (size_t)k->hwm * k->slab_bytes, (size_t)(pos + 1 - k->hwm) * k->slab_bytes)) {
			/* Grown behind markers: the guard is closed already. */
			if (!extend_positions(k, pos, pos + 1)) return false;
		} else {
			/* The guard opens with its slab and closes again at once, never handed
			 * out: so it belongs to the read-write span (one anon_vma, see guard.c),
			 * and the slab after it shares that anon_vma instead of faulting in one
			 * of its own, which would keep the closed slabs on either side from ever
			 * merging. */
			if (!extend_positions(k, k->hwm, pos + 1)) return false;
			if (guard && !guard_close(area, (size_t)k->hwm * k->slab_bytes, k->slab_bytes)) {
				/* No marker and no VMA to spare: leave this guard open but never
				 * use it; it is still a slab's worth of unused addresses between
				 * slabs. */
			}
		}
	}
	k->hwm = pos + 1;
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
static void class_setup(struct slab_class *k);

/* A slab with a free slot, put at the head of the partial list; false on OOM. */
static noinline bool new_slab(struct slab_class *k)
{
	uint32_t pos;
	struct slab *s;
	if (unlikely(!k->size)) class_setup(k);
	if (k->open_slabs) decay_idle_classes(k, os_now_ms());
	if (k->nempty) {
		pos = set_lowest(k, SET_EMPTY);
		s = desc(k, pos);
		set_remove(k, SET_EMPTY, pos);
		k->empty_reused = true;
	} else if (k->nclosed) {
		if (k->open_slabs) grow_empty_budget(k);
		pos = set_lowest(k, SET_CLOSED);
		s = desc(k, pos);
		if (k->open_slabs && !guard_open(area_of(k, pos), (size_t)pos * k->slab_bytes, k->slab_bytes)) return false;
		set_remove(k, SET_CLOSED, pos);
	} else {
		if (k->open_slabs && k->sq_count) grow_empty_budget(k); /* closed ones still in quarantine */
		if (!fresh_slab(k, &pos)) return false;
		s = desc(k, pos);
	}
	k->nactive++;
	if (k->nactive > k->peak_now) k->peak_now = k->nactive;
	if (s->state != SLAB_EMPTY) {
		/* From fresh or closed (dropped) pages: every slot reads as zero. An empty slab
		 * that stayed open keeps its record: its slots were wiped only as far as used,
		 * and those handed out before still hold its canary, so it keeps that too. */
		for (uint32_t w = 0; w < k->nwords; w++) s->bits[w].fresh = ~k->tail[w];
		s->canary = random_u64(k->rnd) & ~(uint64_t)0xff; /* little-endian: first byte 0 */
	}
	for (uint32_t w = 0; w < k->nwords; w++) {
		s->bits[w].used = k->tail[w];
		s->bits[w].quar = 0;
	}
	s->nused = 0;
	s->state = SLAB_ACTIVE;
	partial_push(k, pos, s);
	return true;
}

/* Close an empty slab into the slab quarantine; false when the kernel cannot now. The
 * zero class's memory never opens, so its slabs close without a system call. */
static bool close_slab(struct slab_class *k, uint32_t pos, struct slab *s)
{
	if (k->open_slabs && !guard_close(area_of(k, pos), (size_t)pos * k->slab_bytes, k->slab_bytes)) return false;
	s->state = SLAB_CLOSED;
#if CONFIG_SLAB_QUARANTINE
	if (k->sq_count == CONFIG_SLAB_QUARANTINE) {
		uint32_t old = k->sq[k->sq_head];
		k->sq_head = (k->sq_head + 1) % CONFIG_SLAB_QUARANTINE;
		k->sq_count--;
		set_add(k, SET_CLOSED, old);
	}
	k->sq[(k->sq_head + k->sq_count) % CONFIG_SLAB_QUARANTINE] = pos;
	k->sq_count++;
#else
	set_add(k, SET_CLOSED, pos);
#endif
	return true;
}

/* Close the highest empty slab; false when the kernel cannot now. */
static bool close_highest_empty(struct slab_class *k)
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
	while (k->nempty > empty_allowed(k) && close_highest_empty(k)) {}
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
	unsigned n = ro.slab.arenas * SC_COUNT;
	for (unsigned r = 0; r < n; r++) {
		struct slab_class *k = &ro.slab.classes[r];
		if (k == self || !class_is_set_up(r) || !lock_try(&k->lock)) continue;
		if (k->open_slabs && k->nempty) decay_empty_budget(k, now); /* not the zero class */
		class_unlock(k);
	}
}

/* The last slot of a slab went back: cache it, or close a slab (its contents are zero
 * but for the canaries of slots handed out). */
static void slab_emptied(struct slab_class *k, uint32_t pos, struct slab *s)
{
	k->nactive--;
	if (k->open_slabs) {
		uint64_t now = os_now_ms();
		decay_empty_budget(k, now);
		decay_idle_classes(k, now);
	}
	bool room = k->nempty < empty_allowed(k);
	if (!room && k->nempty && set_highest(k, SET_EMPTY) > pos) {
		/* The lower one stays open: the open slabs stay together at the bottom. */
		room = close_highest_empty(k);
	}
	/* Kept open also when the kernel cannot close it now. */
	if (room || !close_slab(k, pos, s)) empty_insert(k, pos, s);
	else k->closed_at_ms = os_now_ms();
}

/* A slot goes back to its slab for good (it left the quarantine, or there is none). */
static void release(struct slab_class *k, struct slab *s, uint32_t pos, uint32_t i)
{
	uint64_t bit = (uint64_t)1 << (i & 63);
	s->bits[i >> 6].used &= ~bit;
	s->bits[i >> 6].quar &= ~bit;
	bool was_full = s->nused == k->slots;
	s->nused--;
	if (!s->nused) {
		if (!was_full) partial_remove(k, s);
		slab_emptied(k, pos, s);
	} else if (was_full) {
		partial_push(k, pos, s);
	}
}

/* A quarantine entry names a slot by its slab position and its index there, plus one
 * (zero: no entry): 32 bits, half the metadata of addresses and half the pages a
 * process writes into after fork (every page written after fork is a copy), and
 * decoded with a shift and a mask where an address would take two divisions. */
#define QENTRY_SLOT_BITS 8u
_Static_assert(SLAB_MAX_SLOTS <= 1u << QENTRY_SLOT_BITS, "a slot index fits its part of an entry");
_Static_assert((uint64_t)MAX_POSITIONS << QENTRY_SLOT_BITS < UINT32_MAX, "an entry fits in 32 bits");
#if CONFIG_SLOT_QUARANTINE
static inline uint32_t qentry(uint32_t pos, uint32_t i)
{
	return (pos << QENTRY_SLOT_BITS | i) + 1;
}

static inline uint32_t qentry_pos(uint32_t e) { return (e - 1) >> QENTRY_SLOT_BITS; }
static inline uint32_t qentry_slot(uint32_t e) { return (e - 1) & ((1u << QENTRY_SLOT_BITS) - 1); }

static void release_entry(struct slab_class *k, uint32_t e)
{
	uint32_t pos = qentry_pos(e);
	release(k, desc(k, pos), pos, qentry_slot(e));
}

/* A freed slot enters a random array slot; what sat there joins the FIFO, whose
 * oldest entry goes back to its slab once the FIFO is full. Until the random array is
 * full it is filled in order: nothing leaves it before then (drawn at random, an early
 * entry could be pushed out by the next free), and a short-lived process writes the
 * first page of each class's array, not a page wherever a draw lands (tr under bash
 * took a dozen page faults in quarantine_slot before). */
static void quarantine_slot(struct slab_class *k, uint32_t pos, uint32_t i)
{
	if (unlikely(k->qfill <= k->qrand_mask)) {
		k->qrand[k->qfill++] = qentry(pos, i);
		return;
	}
	uint32_t j = rand16(k) & k->qrand_mask;
	uint32_t out = k->qrand[j];
	k->qrand[j] = qentry(pos, i);
	if (!out) return;
	if (k->qcount > k->qring_mask) {
		uint32_t old = k->qring[k->qhead];
		k->qhead = (k->qhead + 1) & k->qring_mask;
		k->qcount--;
		release_entry(k, old);
	}
	k->qring[(k->qhead + k->qcount) & k->qring_mask] = out;
	k->qcount++;
}

/* The deferred slots enter the quarantine, in the order they were freed. */
static noinline void drain_deferred(struct slab_class *k)
{
	for (uint32_t n = 0; n < k->ndeferred; n++)
		quarantine_slot(k, qentry_pos(k->deferred[n]), qentry_slot(k->deferred[n]));
	k->ndeferred = 0;
}

/* A free from a thread of another arena: the slot is already wiped and marked
 * quarantined (a second free of it is caught at once, as in one thread), but it enters
 * the quarantine later, when a thread of the class's own arena allocates from it, or when
 * DEFERRED_MAX more wait. The quarantine's lines (its arrays, the generator, the
 * descriptors of the slot that leaves it and of its slab's neighbours on the partial
 * list) then stay with the threads that use the class instead of moving to every core
 * that frees into it. Measured on larson (four threads freeing each other's blocks):
 * 0.84-0.87 s against 0.79-0.81 s; producer/consumer, where every free is another
 * arena's, unchanged (1.01-1.11 s against 1.00-1.12 s). A slot waits in the quarantine
 * itself as long as ever once it enters it. */
static inline void defer_slot(struct slab_class *k, uint32_t pos, uint32_t i)
{
	if (k->ndeferred == DEFERRED_MAX) drain_deferred(k);
	k->deferred[k->ndeferred++] = qentry(pos, i);
}
#endif

/* --- slots ----------------------------------------------------------------------- */

static inline uint32_t pick_slot(struct slab_class *k, const struct slab *s)
{
#if CONFIG_SLOT_RANDOM
	uint32_t start = (rand16(k) * k->slots) >> 16;
#else
	uint32_t start = 0;
#endif
	uint32_t w = start >> 6;
	uint64_t m = ~s->bits[w].used & (~(uint64_t)0 << (start & 63));
	if (m) return (w << 6) + (uint32_t)__builtin_ctzll(m);
	for (uint32_t n = 1; n <= k->nwords; n++) {
		uint32_t ww = w + n < k->nwords ? w + n : w + n - k->nwords;
		m = ~s->bits[ww].used;
		if (m) return (ww << 6) + (uint32_t)__builtin_ctzll(m);
	}
	die(k, "slab metadata inconsistent", s);
}

#if CONFIG_WRITE_AFTER_FREE_CHECK
/* Are the n bytes at p (16-byte aligned, n a multiple of 8) all zero? 64 bytes a step in
 * 16-byte vectors, which every x86_64 (SSE2) and arm64 (NEON) has: this scan is most of
 * what a write-after-free check costs. */
typedef uint64_t zero_vec __attribute__((vector_size(16), aligned(16), may_alias));
static inline bool all_zero(const void *p, size_t n)
{
	const zero_vec *v = p;
	zero_vec acc = {0, 0};
	size_t i = 0;
	/* The hardware prefetcher follows a stream only within a page: a request for the
	 * first line of every later page at once takes the stall at each page start off
	 * the scan (mid: 3-5% of the time). */
	for (size_t pg = 4096 / 16; pg < n / 16; pg += 4096 / 16) __builtin_prefetch(v + pg);
	for (; i + 4 <= n / 16; i += 4) acc |= v[i] | v[i + 1] | v[i + 2] | v[i + 3];
	for (; i < n / 16; i++) acc |= v[i];
	uint64_t tail = 0;
	if (n % 16) memcpy(&tail, (const char *)p + n - 8, 8);
	return !(acc[0] | acc[1] | tail);
}
#endif

static void arena_open(unsigned a);

static unsigned assign_arena(void)
{
	unsigned a = atomic_fetch_add_explicit(&next_arena, 1, memory_order_relaxed) % ro.slab.arenas + 1;
	if (!arena_is_open(a - 1)) arena_open(a - 1);
	tls_arena = a;
	return a;
}

void *slab_alloc(unsigned c, size_t size, bool zero)
{
	unsigned a = tls_arena;
	if (unlikely(!a)) a = assign_arena();
	struct slab_class *k = &ro.slab.classes[(a - 1) * SC_COUNT + c];
	class_lock(k);
#if CONFIG_SLOT_QUARANTINE
	if (unlikely(k->ndeferred)) drain_deferred(k);
#endif
	if (unlikely(!k->partial) && !new_slab(k)) {
		class_unlock(k);
		return NULL;
	}
	uint32_t pos = k->partial - 1;
	struct slab *s = desc(k, pos);
	uint32_t i = pick_slot(k, s);
	uint64_t bit = (uint64_t)1 << (i & 63);
	s->bits[i >> 6].used |= bit;
	if (++s->nused == k->slots) partial_remove(k, s);
	char *p = (char *)slab_start(k, pos) + (size_t)i * k->size;
	bool fresh = s->bits[i >> 6].fresh & bit;
	s->bits[i >> 6].fresh &= ~bit;
	/* What the last free wiped; nothing to look at in a fresh slot. */
	size_t wiped = fresh ? k->usable : extent_of(k, s, i);
	set_extent(k, s, i, size);
#if CONFIG_SLOT_CANARY
	/* A slot keeps its canary from its first allocation on (a free wipes the data, not
	 * the canary), so only a fresh slot's is stamped, here under the lock: a free of a
	 * neighbour checks the canary of every live slot next to it, and must never see
	 * this one live without its canary. Any other allocation leaves the slot's last
	 * line alone: it was a cache miss on every reuse (about a third of slab_alloc's
	 * samples). A stale write over a freed slot's canary is found at the slot's next
	 * free, or at its neighbours'. */
	if (fresh && k->open_slabs) memcpy(p + k->usable, &s->canary, 8);
#endif
	class_unlock(k);
	if (fresh || !k->open_slabs) return p;

#if CONFIG_WRITE_AFTER_FREE_CHECK
	/* The slot is ours alone now (no neighbour check reads a live slot's data), so the
	 * scan for stale writes runs outside the lock, over what the last free wiped. */
	if (unlikely(!all_zero(p, wiped))) fatal("write after free", p);
	size_t known_zero = wiped;
#else
	/* Without the check a stale pointer may have written since the wipe: calloc must
	 * return zeros to a correct program whatever a buggy one did. */
	size_t known_zero = 0;
	(void)wiped;
#endif
	if (zero && size > known_zero) memset(p + known_zero, 0, size - known_zero);
	return p;
}

/* Decode a pointer that must be the start of a live slot of k (lock held). */
/* A pointer that is not a live slot: fatal, except that a free under on_error=report is
 * reported and ignored (policy.h). The class lock is given back either way. */
static noinline cold struct slab *not_live(struct slab_class *k, const char *what, const void *p, bool on_free)
{
	class_unlock(k);
	if (!on_free || !policy_ignore_bad_free(what, p)) fatal(what, p);
	return NULL;
}

/* The descriptor of the live slot at a, or NULL (lock given back) when a free of
 * anything else is to be ignored; otherwise a fatal report naming what a is. Always
 * inlined: as a call, its out-parameters would live on the stack, and the stack
 * protector would then guard every free (measured: 2% of small churn with the
 * allocation's own out-parameter, now gone too). */
static inline __attribute__((always_inline)) struct slab *
live_slot(struct slab_class *k, uintptr_t a, unsigned area, uint32_t *pos_out, uint32_t *i_out, const char *op,
	  bool on_free)
{
	size_t off = position_offset(k, a, area);
	if (unlikely(off == SIZE_MAX)) return not_live(k, op, (void *)a, on_free); /* a guard area */
	uint32_t pos = div32((uint32_t)(off >> k->page_shift), k->pages, k->pages_magic);
	if (unlikely(pos >= k->hwm)) return not_live(k, op, (void *)a, on_free);
	struct slab *s = desc(k, pos);
	if (unlikely(s->state != SLAB_ACTIVE)) {
		if (s->state == SLAB_NONE) return not_live(k, op, (void *)a, on_free); /* a guard slab */
		return not_live(k, "use of a pointer into a freed slab (double free?)", (void *)a, on_free);
	}
	uint32_t in = (uint32_t)(off - (size_t)pos * k->slab_bytes);
	uint32_t i = div32(in, k->size, k->slot_magic);
	if (unlikely(i >= k->slots || i * k->size != in))
		return not_live(k, "invalid pointer: not the start of a slot", (void *)a, on_free);
	uint64_t bit = (uint64_t)1 << (i & 63);
	if (unlikely(!(s->bits[i >> 6].used & bit)))
		return not_live(k, "slot is not allocated (double free or invalid pointer)", (void *)a, on_free);
	if (unlikely(s->bits[i >> 6].quar & bit)) return not_live(k, "slot was already freed (double free?)", (void *)a, on_free);
	*pos_out = pos;
	*i_out = i;
	return s;
}

static inline void check_canary(struct slab_class *k, const struct slab *s, uintptr_t a)
{
#if CONFIG_SLOT_CANARY
	uint64_t v;
	memcpy(&v, (const char *)a + k->usable, 8);
	if (unlikely(v != s->canary)) die(k, "slot canary overwritten (heap overflow)", (void *)a);
#else
	(void)k, (void)s, (void)a;
#endif
}

static inline bool slot_live(const struct slab *s, uint32_t i)
{
	return (s->bits[i >> 6].used & ~s->bits[i >> 6].quar) >> (i & 63) & 1;
}

/* All ones when bit i (mod 64) of x is set, else zero. */
static inline uint64_t bit_mask(uint64_t x, uint32_t i) { return -(x >> (i & 63) & 1); }

static noinline cold void neighbour_damaged(struct slab_class *k, uintptr_t slot, uint64_t live)
{
	die(k, live ? "neighbour slot canary overwritten (heap overflow or underflow)"
		    : "free neighbour slot written (heap overflow, underflow or write after free)",
	    (void *)slot);
}

/* A free also checks what a bug in the freed block can have damaged without touching
 * its own canary: the slot before it (an underflow ends in that slot's canary) and a
 * free slot after it (an overflow that stepped over the canary). A live slot after it
 * holds data nobody can judge; it is checked at its own free. Lock held, so a live
 * neighbour's canary is already stamped (slab_alloc stamps it under the lock).
 * Whether a neighbour is live is a coin toss in churn, so what each check expects is
 * worked out with masks, not branches on it (measured, small churn: the checks cost
 * about 5% of the run as branches, half that as masks). */
static inline void check_neighbours(struct slab_class *k, const struct slab *s, uintptr_t a, uint32_t i)
{
	if (i > 0) {
		const struct slot_bits *b = &s->bits[(i - 1) >> 6];
		uint64_t live = bit_mask(b->used & ~b->quar, i - 1), fresh = bit_mask(b->fresh, i - 1);
		uint64_t v;
		memcpy(&v, (const char *)a - 8, 8);
		/* A slot ends in its canary once handed out, live or freed since (a free
		 * wipes the data, not the canary), in zeros while fresh; a live slot is never
		 * fresh. Without zero-on-free a free slot's end is not judged, nor without
		 * canaries a live slot's (that is its data). */
		uint64_t expect = CONFIG_SLOT_CANARY ? s->canary & ~fresh : 0;
		uint64_t judged = (CONFIG_ZERO_ON_FREE ? ~(uint64_t)0 : live) & (CONFIG_SLOT_CANARY ? ~(uint64_t)0 : ~live);
		if (unlikely((v ^ expect) & judged)) neighbour_damaged(k, a - k->size, live);
	}
#if CONFIG_ZERO_ON_FREE
	if (i + 1 < k->slots) {
		const struct slot_bits *b = &s->bits[(i + 1) >> 6];
		uint64_t live = bit_mask(b->used & ~b->quar, i + 1), fresh = bit_mask(b->fresh, i + 1);
		/* A live next slot's data is its owner's, who may be writing it now: read the
		 * freed slot's own first words instead then (masked out below). */
		uint64_t v[2];
		memcpy(v, (const char *)a + (k->size & ~live), 16);
		/* In a slot of 16 bytes the second word is the canary (kept once handed out). */
		uint64_t second = CONFIG_SLOT_CANARY && k->usable < 16 ? s->canary & ~fresh : 0;
		if (unlikely((v[0] | (v[1] ^ second)) & ~live)) neighbour_damaged(k, a + k->size, 0);
	}
#endif
}

/* A free of a pointer into an arena that never opened: fatal, or under
 * on_error=report reported and ignored. */
static noinline cold void free_unopened(const char *what, const void *p)
{
	if (!policy_ignore_bad_free(what, p)) fatal(what, p);
}

void slab_free(void *p, bool sized, unsigned c_claimed)
{
	static const char what[] = "free of a pointer that is not a live allocation";
	uintptr_t a = (uintptr_t)p;
	unsigned area;
	struct slab_class *k = class_at(a, &area);
	if (unlikely(!k)) {
		free_unopened(what, p);
		return;
	}
	class_lock(k);
	uint32_t pos = 0, i = 0; /* set by live_slot when it answers */
	struct slab *s = live_slot(k, a, area, &pos, &i, what, true);
	if (unlikely(!s)) return; /* on_error=report: reported and ignored */
	if (unlikely(sized && c_claimed != k->cls) && !policy_tolerate_size(p))
		die(k, "sized free with a wrong size or alignment", p);
	if (k->open_slabs) {
		check_canary(k, s, a);
		check_neighbours(k, s, a, i);
#if CONFIG_ZERO_ON_FREE
		/* What the program could have written (the canary stays); the extent stays
		 * as the record of what the next allocation must find zero. */
		memset(p, 0, extent_of(k, s, i));
#endif
	}
#if CONFIG_SLOT_QUARANTINE
	s->bits[i >> 6].quar |= (uint64_t)1 << (i & 63);
	if (likely(tls_arena == k->arena1) || !k->defer_frees) quarantine_slot(k, pos, i);
	else defer_slot(k, pos, i);
#else
	release(k, s, pos, i);
#endif
	class_unlock(k);
}

size_t slab_usable_size(const void *p)
{
	static const char what[] = "malloc_usable_size of a pointer that is not a live allocation";
	unsigned area;
	struct slab_class *k = class_at((uintptr_t)p, &area);
	if (unlikely(!k)) fatal(what, p);
	class_lock(k);
	uint32_t pos = 0, i = 0; /* set by live_slot when it answers */
	struct slab *s = live_slot(k, (uintptr_t)p, area, &pos, &i, what, false);
	set_extent(k, s, i, k->usable); /* the program may use all of it now */
	class_unlock(k);
	return k->usable;
}

bool slab_resize(void *p, unsigned c_new, size_t size, size_t *copy)
{
	static const char what[] = "realloc of a pointer that is not a live allocation";
	unsigned area;
	struct slab_class *k = class_at((uintptr_t)p, &area);
	if (unlikely(!k)) fatal(what, p);
	class_lock(k);
	uint32_t pos = 0, i = 0; /* set by live_slot when it answers */
	struct slab *s = live_slot(k, (uintptr_t)p, area, &pos, &i, what, false);
	if (k->open_slabs) check_canary(k, s, (uintptr_t)p);
	bool stays = c_new == k->cls;
	if (stays) grow_extent(k, s, i, size);
	*copy = extent_of(k, s, i);
	class_unlock(k);
	return stays;
}

size_t slab_object_size(const void *p)
{
	static const char what[] = "malloc_object_size of a pointer into rampart's memory that is not a live allocation";
	uintptr_t a = (uintptr_t)p;
	unsigned area;
	struct slab_class *k = class_at(a, &area);
	if (!k) return 0; /* a region never mapped: whatever is there is not rampart's */
	class_lock(k);
	const struct guard_region *g = area == AREA_NURSERY ? &k->nursery : &k->region;
	size_t off = a - g->base;
	/* Outside what the region or the nursery cell has mapped (the closed page below its
	 * first slab, the slabs, the closed tail) the window is only set aside: another
	 * mapping may sit there (a program's mmap with an address hint), so that is not
	 * rampart's memory. */
	if (off >= g->size) {
		bool page_below = g->size && g->base - a <= os_page;
		if (unlikely(page_below)) die(k, what, p);
		class_unlock(k);
		return 0;
	}
	/* Everything the region mapped belongs to some slot's life cycle or to a guard (the
	 * region's positions that are the nursery's are closed, and so is the page above the
	 * nursery's): a question about anything but a live slot means the caller holds a
	 * stale or forged pointer, like a free of one would. */
	if (unlikely(position_offset(k, a, area) == SIZE_MAX)) die(k, what, p);
	uint32_t pos = div32((uint32_t)(off >> k->page_shift), k->pages, k->pages_magic);
	if (unlikely(pos >= k->hwm || desc(k, pos)->state != SLAB_ACTIVE)) die(k, what, p);
	struct slab *s = desc(k, pos);
	uint32_t in = (uint32_t)(off - (size_t)pos * k->slab_bytes);
	uint32_t i = div32(in, k->size, k->slot_magic), at = in - i * k->size;
	if (unlikely(i >= k->slots || !slot_live(s, i))) die(k, what, p);
	if (at < k->usable) set_extent(k, s, i, k->usable); /* told it may use all of it */
	class_unlock(k);
	/* From the end of the usable part to the end of the slot (the canary) the pointer
	 * is still the block's, one past its end included: nothing left to access. */
	return at < k->usable ? k->usable - at : 0;
}

/* --- the check at exit (RAMPART_OPTIONS=check_at_exit=1) -------------------------- */

#if CONFIG_SLOT_CANARY
#define EXIT_CANARY_MSG "live slot canary overwritten, found at exit (heap overflow)"

/* Report every live slot of k whose canary is damaged except the last one found,
 * which is left in *last for the caller to report as it aborts. */
static void check_class_at_exit(struct slab_class *k, uintptr_t *last)
{
	class_lock(k);
	for (uint32_t pos = 0; pos < k->hwm; pos++) {
		if (!desc_exists(k, pos)) continue; /* a guard position alone in its chunk */
		const struct slab *s = desc(k, pos);
		if (s->state != SLAB_ACTIVE) continue;
		uintptr_t start = slab_start(k, pos);
		for (uint32_t i = 0; i < k->slots; i++) {
			if (!slot_live(s, i)) continue;
			uint64_t v;
			memcpy(&v, (const char *)start + (size_t)i * k->size + k->usable, 8);
			if (likely(v == s->canary)) continue;
			if (*last) fatal_report(EXIT_CANARY_MSG, (const void *)*last);
			*last = start + (size_t)i * k->size;
		}
	}
	class_unlock(k);
}
#endif

/* A destructor, so the check runs when the program exits normally (returning from
 * main or calling exit), after its own atexit handlers, without registering anything
 * at run time (registration may allocate). It lives here rather than in a file of its
 * own because a static link pulls in only archive members something refers to, and
 * every program that allocates refers to this one. */
__attribute__((destructor)) static void slab_check_at_exit(void)
{
#if CONFIG_SLOT_CANARY
	if (atomic_load_explicit(&rampart_state, memory_order_acquire) != STATE_READY || !ro.opt.check_at_exit)
		return;
	uintptr_t last = 0;
	unsigned n = ro.slab.arenas * SC_COUNT;
	for (unsigned r = 0; r < n; r++)
		if (class_is_set_up(r) && r % SC_COUNT) check_class_at_exit(&ro.slab.classes[r], &last);
	if (last) fatal(EXIT_CANARY_MSG, (void *)last);
#endif
}

/* --- start-up and fork ------------------------------------------------------------- */

/* Slot quarantine entries for a class: about CONFIG_SLOT_QUARANTINE_BYTES of slots,
 * split evenly between the random array and the FIFO (powers of two for masking). */
static uint32_t slot_q_half(uint32_t size)
{
#if CONFIG_SLOT_QUARANTINE
	uint32_t want = (uint32_t)(CONFIG_SLOT_QUARANTINE_BYTES / size) / 2;
	uint32_t n = want ? (uint32_t)1 << (31 - __builtin_clz(want)) : 0;
	/* Big slots get a few entries all the same: with one, a freed slot would come back
	 * after a fixed number of frees. */
	return n < SLOT_Q_MIN_HALF ? SLOT_Q_MIN_HALF : n > SLOT_Q_MAX / 2 ? SLOT_Q_MAX / 2 : n;
#else
	(void)size;
	return 0;
#endif
}

/* The arena's shared block of its classes' first descriptors (line-aligned: it starts
 * the arena's metadata, and each arena's share is a whole number of lines). */
#define FIRST_BLOCK_BYTES ((size_t)FIRST_POSITIONS * SC_COUNT * sizeof(struct slab))

/* Metadata bytes of class c in its arena's block, in two parts. What every malloc and
 * free writes, its generator and its slot quarantine, beside every other class's: a
 * process that frees into a dozen classes after fork copies the few pages they fill
 * together rather than one page for each (bash: about ten of the faults per command
 * substitution were quarantine arrays spread between the directories). Whole lines,
 * so that classes under different locks never share one. */
#define GENERATOR_BYTES align_up(sizeof(struct random_state), 64)
static size_t class_hot_bytes(unsigned c)
{
	/* The size alone, not sc_geometry: class_setup adds this up for the classes below
	 * its own, and the geometry's search took about 6 us for all classes (perf: 0.7% of
	 * `tr` in a pipeline). */
	return GENERATOR_BYTES + align_up(2 * (size_t)slot_q_half((uint32_t)sc_size(c)) * sizeof(uint32_t), 64);
}

/* And, written on slow paths: a directory of DIR_START chunks with both sets' summary
 * words, the slab quarantine ring. */
static size_t class_control_bytes(void)
{
	return DIR_BYTES + align_up(CONFIG_SLAB_QUARANTINE * sizeof(uint32_t), 8);
}

/* Where the hot parts start: after the block of first descriptors and every class's
 * control part (a fixed size each), on a line. */
static size_t arena_hot_start(void)
{
	return align_up(FIRST_BLOCK_BYTES + SC_COUNT * class_control_bytes(), 64);
}

/* Metadata bytes of one arena besides its class structs: the block of first
 * descriptors, then the control parts of all classes, then their hot parts, each in
 * class order. */
static size_t arena_mem_bytes(void)
{
	size_t bytes = arena_hot_start();
	for (unsigned c = 0; c < SC_COUNT; c++) bytes += class_hot_bytes(c);
	return bytes;
}

/* Set up the class struct k (its lock held) the first time a slab is asked of it:
 * geometry, a random guard area, its share of the arena's metadata, its generator.
 * Until then it is all zero: an unlocked lock, no region (a pointer decoding into it is
 * no live block: live_slot finds it outside the region), no open slabs (the decay
 * sweep passes it by). So a process writes the structs and takes the random draws of
 * the classes it uses only, not of all SC_COUNT (measured: start-up 43 us and 11 page
 * faults for every class set up at once, Linux 6.18 in a VM). */
static noinline void class_setup(struct slab_class *k)
{
	unsigned r = (unsigned)(k - ro.slab.classes), a = r / SC_COUNT, c = r % SC_COUNT;
	struct sc_geometry g;
	sc_geometry(c, os_page, &g);
	size_t region = (size_t)1 << ro.slab.region_shift;
	k->cls = c;
#if CONFIG_SLOT_QUARANTINE
	k->arena1 = a + 1;
	/* The deferred slots hold at most what the slot quarantine holds (classes up to 1 KiB):
	 * an idle arena keeps them until its class is used again. */
	k->defer_frees = (size_t)g.size * DEFERRED_MAX <= CONFIG_SLOT_QUARANTINE_BYTES;
#endif
	k->size = g.size;
	k->usable = g.usable;
	k->slots = g.slots;
	k->nwords = (g.slots + 63) / 64;
	k->pages = g.pages;
	k->page_shift = (unsigned)__builtin_ctzl(os_page);
	k->slot_magic = magic_of(g.size);
	k->pages_magic = magic_of(g.pages);
	k->slab_bytes = (size_t)g.pages * os_page;
	k->track_extent = g.slots <= SLAB_EXTENT_SLOTS;
	k->empty_floor = (uint32_t)MAX((size_t)CONFIG_SLAB_EMPTY_CACHE, CONFIG_SLAB_EMPTY_CACHE_BYTES / k->slab_bytes);
	k->empty_max = k->empty_floor;
	for (uint32_t w = 0; w < SLAB_WORDS; w++) /* the bits of slots past g.slots */
		k->tail[w] = g.slots >= 64 * (w + 1) ? 0 : g.slots <= 64 * w ? ~(uint64_t)0 : ~(uint64_t)0 << (g.slots & 63);

	/* Its share of the arena's metadata (arena_mem_bytes). */
	char *mem = ro.slab.arena_mem + (size_t)a * ro.slab.arena_mem_bytes;
	char *control = mem + FIRST_BLOCK_BYTES + (size_t)c * class_control_bytes();
	char *hot = mem + arena_hot_start();
	for (unsigned below = 0; below < c; below++) hot += class_hot_bytes(below);
	k->first = (struct slab *)mem + c;
	k->rnd = (struct random_state *)hot;
	uint32_t half = slot_q_half(g.size);
	if (half) {
		k->qrand = (uint32_t *)(hot + GENERATOR_BYTES);
		k->qring = k->qrand + half;
		k->qrand_mask = k->qring_mask = half - 1;
	}
	k->dir = (struct slab **)control;
	k->dir_cap = DIR_START;
	k->set_words = (DIR_START + 63) / 64;
	k->set_chunks[SET_CLOSED] = (uint64_t *)(k->dir + DIR_START);
	k->set_chunks[SET_EMPTY] = k->set_chunks[SET_CLOSED] + k->set_words;
	k->sq = (uint32_t *)(control + DIR_BYTES);

	/* Its own generator, seeded from the slab allocator's source (one system call for
	 * all of them). The random guard area: up to 1/16 of the region, at least one page.
	 * Never mapped: the region starts above it. */
	k->rnd->source = ro.slab.seeds;
	random_reseed(k->rnd);
	size_t guard_pages = 1 + random_below(k->rnd, region / 16 / os_page);
	uintptr_t area = ro.slab.base + (size_t)r * region + guard_pages * os_page;
	k->max_pos = (uint32_t)MIN((region - guard_pages * os_page) / k->slab_bytes, (size_t)MAX_POSITIONS);
	guard_start(&k->region, area);
	k->region.flags |= REGION_KEEP_ANON;
	/* Its nursery cell: as many positions as fit above a random lead of up to a
	 * quarter of the cell (at least a page, never mapped) and below a closed page. The
	 * zero class's memory never opens: it keeps to its region. */
	size_t cell = ro.slab.cell_shift ? (size_t)1 << ro.slab.cell_shift : 0;
	if (cell && c) {
		unsigned j = 0;
		while (ro.slab.cell_region[a * SC_COUNT + j] != r) j++;
		size_t lead = (1 + random_below(k->rnd, MAX(cell / 4 / os_page, 1))) * os_page;
		size_t fit = cell > lead + os_page ? (cell - lead - os_page) / k->slab_bytes : 0;
		if (fit) {
			k->nursery_bytes = fit * k->slab_bytes;
			guard_start(&k->nursery, ro.slab.nursery + (((size_t)a * SC_COUNT + j) << ro.slab.cell_shift) + lead);
			k->nursery.flags |= REGION_KEEP_ANON;
		}
	}
	spans_update(k);
	k->open_slabs = c != 0;
	atomic_fetch_or_explicit(&classes_set_up[a], (uint64_t)1 << c, memory_order_release);
}

/* Arena a's class structs and metadata were mapped at start-up and are zero; each class
 * is set up at its first use (class_setup). The first thread sent to arena a (numbered
 * from 0) opens it: a program with one thread never touches the others' metadata (a
 * few hundred KiB per process). */
static noinline void arena_open(unsigned a)
{
	lock_take(&arena_lock);
	atomic_fetch_or_explicit(&arenas_open, (uint32_t)1 << a, memory_order_release);
	lock_give(&arena_lock);
}

unsigned slab_arenas_open(void)
{
	return (unsigned)__builtin_popcount(atomic_load_explicit(&arenas_open, memory_order_acquire));
}

_Static_assert((CONFIG_SLAB_NURSERY_PAGES & (CONFIG_SLAB_NURSERY_PAGES - 1)) == 0,
	       "CONFIG_SLAB_NURSERY_PAGES is a power of two (or 0)");
_Static_assert(CONFIG_SLAB_ARENAS * SC_COUNT < UINT16_MAX, "cell_region holds region numbers");

/* The nursery's cell size, a power of two (0: none). */
static size_t nursery_cell_bytes(void)
{
	size_t cell = (size_t)CONFIG_SLAB_NURSERY_PAGES * os_page;
	return cell & (cell - 1) ? 0 : cell;
}

/* Place the nursery in the window's last region, at a random page offset, and give each
 * arena's classes their cells in a random order; or go without one when the cells would
 * take more than half a region (a window shrunk for a short address space). */
static void nursery_place(struct slab_roots *sr, unsigned nregions)
{
	size_t cell = nursery_cell_bytes(), region = (size_t)1 << sr->region_shift;
	sr->cell_region[nregions] = UINT16_MAX; /* class_at's answer for no cell */
	if (!cell || (size_t)nregions * cell > region / 2) return;
	struct random_state rnd = {.source = NULL};
	random_reseed(&rnd);
	size_t room = region - (size_t)nregions * cell;
	sr->nursery = sr->base + ((size_t)nregions << sr->region_shift) + random_below(&rnd, room / os_page + 1) * os_page;
	sr->cell_shift = (unsigned)__builtin_ctzl(cell);
	for (unsigned a = 0; a < nregions / SC_COUNT; a++) {
		uint16_t *order = &sr->cell_region[a * SC_COUNT];
		for (unsigned c = 0; c < SC_COUNT; c++) order[c] = (uint16_t)(a * SC_COUNT + c);
		for (unsigned c = SC_COUNT - 1; c > 0; c--) { /* Fisher-Yates */
			unsigned j = (unsigned)random_below(&rnd, c + 1);
			uint16_t t = order[c];
			order[c] = order[j];
			order[j] = t;
		}
	}
	explicit_bzero(&rnd, sizeof rnd);
}

/* One arena per CPU the process may run on: at most one thread per CPU runs at a time,
 * so that many arenas keep most running threads off each other's locks, and every
 * arena more holds its own partial slabs, quarantines and empty slabs (larson, four
 * threads on two CPUs, four arenas against two: peak RSS 8.2 against 5.6 MiB, time
 * 1.34 against 1.39 s). The affinity mask is read once, at start-up. */
static unsigned arenas_wanted(void)
{
	if (ro.opt.arenas) return (unsigned)ro.opt.arenas;
	unsigned cpus = os_cpus();
	return cpus && cpus < CONFIG_SLAB_ARENAS ? cpus : CONFIG_SLAB_ARENAS;
}

bool slab_init(struct slab_roots *roots)
{
	/* The window and the nursery are laid out for every arena the build has (address
	 * space only: class_at decodes with the build's constants); threads are sent to
	 * the first `arenas` of them. */
	unsigned arenas = CONFIG_SLAB_ARENAS, nregions = arenas * SC_COUNT;
	unsigned shift = CONFIG_SLAB_REGION_SHIFT;
	/* Address space set aside, not mapped: each region maps what it uses as it grows;
	 * one more region's worth holds the nursery. */
	unsigned extra = nursery_cell_bytes() ? 1 : 0;
	uintptr_t base;
	while (!guard_window((size_t)(nregions + extra) << shift, &base))
		if (--shift < MIN_REGION_SHIFT) return false;

	/* Mapped for every arena now, touched only as classes are set up (fresh pages are
	 * zero, and a zero class struct is an unlocked lock over nothing). */
	size_t per_arena = arena_mem_bytes();
	struct slab_class *classes = meta_alloc(nregions * sizeof *classes);
	char *mem = meta_alloc(arenas * per_arena);
	struct random_source *seeds = meta_alloc(sizeof *seeds);
	if (!classes || !mem || !seeds) {
		meta_free(classes, nregions * sizeof *classes);
		meta_free(mem, arenas * per_arena);
		meta_free(seeds, sizeof *seeds);
		guard_window_release(base);
		return false;
	}
	random_source_init(seeds);
	*roots = (struct slab_roots){.base = base, .size = (size_t)(nregions + extra) << shift, .region_shift = shift,
				     .arenas = arenas_wanted(), .classes = classes, .arena_mem = mem,
				     .arena_mem_bytes = per_arena, .seeds = seeds};
	nursery_place(roots, nregions);
	arena_open(0);
	return true;
}

/* Only open arenas have locks anyone can hold (arena_lock keeps one from opening
 * meanwhile), so only theirs are taken, and unopened arenas stay untouched. */
void slab_fork_prepare(void)
{
	lock_take(&arena_lock);
	unsigned n = ro.slab.arenas * SC_COUNT;
	for (unsigned r = 0; r < n; r++)
		if (arena_is_open(r / SC_COUNT)) class_lock(&ro.slab.classes[r]);
	lock_take(&ro.slab.seeds->lock); /* a leaf: taken inside class locks */
}

void slab_fork_parent(void)
{
	lock_give(&ro.slab.seeds->lock);
	unsigned n = ro.slab.arenas * SC_COUNT;
	for (unsigned r = n; r-- > 0;)
		if (arena_is_open(r / SC_COUNT)) class_unlock(&ro.slab.classes[r]);
	lock_give(&arena_lock);
}

void slab_fork_child(void)
{
	unsigned n = ro.slab.arenas * SC_COUNT;
	for (unsigned r = 0; r < n; r++) {
		if (!arena_is_open(r / SC_COUNT)) continue;
		lock_reset(&ro.slab.classes[r].lock);
	}
	lock_reset(&ro.slab.seeds->lock);
	lock_reset(&arena_lock);
}

/* --- introspection: statistics and trim --------------------------------------------
 * Read (and, for trim, close) slab state under each class lock, like any slow path:
 * nothing is counted on the fast paths, every figure is derived from the descriptors. */

static void class_figures_locked(const struct slab_class *k, struct slab_class_figures *f)
{
	for (uint32_t pos = 0; pos < k->hwm; pos++) {
		if (!desc_exists(k, pos)) { /* a chunk holding only a guard position */
			pos |= CHUNK - 1;
			continue;
		}
		const struct slab *s = desc(k, pos);
		if (s->state == SLAB_ACTIVE) {
			size_t quar = 0;
			for (uint32_t w = 0; w < k->nwords; w++) quar += (size_t)__builtin_popcountll(s->bits[w].quar);
			f->slabs_active++;
			f->live += s->nused - quar;
			f->quarantined += quar;
			f->free += k->slots - s->nused;
		} else if (s->state == SLAB_EMPTY) {
			f->slabs_empty++;
			f->free += k->slots;
		} else if (s->state == SLAB_CLOSED) {
			f->slabs_closed++;
		}
	}
}

void slab_class_figures(unsigned c, struct slab_class_figures *f)
{
	*f = (struct slab_class_figures){0};
	struct sc_geometry g; /* every class's, set up yet or not */
	sc_geometry(c, os_page, &g);
	f->slot_size = g.size;
	f->usable = g.usable;
	f->slab_bytes = c ? (size_t)g.pages * os_page : 0;
	for (unsigned a = 0; a < ro.slab.arenas; a++) {
		if (!class_is_set_up(a * SC_COUNT + c)) continue; /* no slab yet */
		struct slab_class *k = &ro.slab.classes[a * SC_COUNT + c];
		class_lock(k);
		class_figures_locked(k, f);
		class_unlock(k);
	}
}

/* Close the empty slabs a class keeps open (highest first, as slab_emptied does when
 * over its budget), and drop the budget back to its floor; the bytes closed. Stops at
 * the first slab the kernel cannot close. */
static size_t trim_class(struct slab_class *k)
{
	size_t closed = 0;
	class_lock(k);
	k->empty_max = k->empty_floor;
	k->peak_now = k->peak_prev = k->nactive;
	while (k->nempty && close_highest_empty(k)) closed += k->slab_bytes;
	class_unlock(k);
	return closed;
}

size_t slab_trim(void)
{
	size_t closed = 0;
	unsigned n = ro.slab.arenas * SC_COUNT;
	for (unsigned r = 0; r < n; r++)
		if (class_is_set_up(r) && r % SC_COUNT) closed += trim_class(&ro.slab.classes[r]);
	return closed;
}
