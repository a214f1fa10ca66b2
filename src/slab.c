/*
 * slab.c — size-class regions, slabs and slots.
 *
 * Layout of one (arena, class) region (2^region_shift bytes of the reservation):
 *
 *   [ guard area: random page count | slab 0 | slab 1 | guard | slab 3 | ... | unopened ]
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
 * Descriptors live in metadata chunks of CHUNK slabs, found through a directory; the
 * per-class state (lock, lists, quarantines, generator) is one cache-aligned struct.
 *
 * Lists, by slab state:
 *   ACTIVE  open, 1..slots slots in use; on the partial list unless full
 *   EMPTY   open, no slot in use, in the small empty cache (contents are zero), a
 *           list sorted by position: the lowest is reused first, the highest closed
 *           first, for the same reason as the closed set below
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
#include "random.h"

#if CONFIG_WRITE_AFTER_FREE_CHECK && !CONFIG_ZERO_ON_FREE
#error "CONFIG_WRITE_AFTER_FREE_CHECK needs CONFIG_ZERO_ON_FREE"
#endif

#define CHUNK_SHIFT 9u
#define CHUNK (1u << CHUNK_SHIFT)
/* At most this many slab positions per region: bounds the directory (64 KiB). */
#define MAX_POSITIONS (1u << 22)
/* Smallest region tried when the address space is short (e.g. 39-bit arm64). */
#define MIN_REGION_SHIFT 26u
/* Slot quarantine entries per class: at most this many (rand16 indexes it). */
#define SLOT_Q_MAX 4096u

enum { SLAB_NONE, SLAB_ACTIVE, SLAB_EMPTY, SLAB_CLOSED };

/* Hot fields first: an allocation touches only the first cache line. */
struct slab {
	uint64_t used[SLAB_WORDS]; /* handed out or quarantined; bits past `slots` are set */
	uint64_t canary;           /* leading (lowest-address) byte zero */
	uint32_t next, prev;       /* list links: position + 1, 0 = none */
	uint16_t nused;
	uint8_t state;
	uint64_t quar[SLAB_WORDS] __attribute__((aligned(64))); /* in the slot quarantine */
};

struct slab_class {
	struct lock lock;
	/* Geometry, fixed at start-up. */
	uint32_t size, usable, slots, nwords, pages, page_shift;
	uint64_t slot_magic, pages_magic; /* n / d == mulhi(n, magic) for n < 2^32 */
	size_t slab_bytes;
	uint32_t max_pos;
	uint32_t cls;
	bool open_slabs;            /* false for the zero class: its memory never opens */
	struct guard_region region; /* base = slab position 0 */
	uint64_t tail[SLAB_WORDS];  /* used bits of an empty slab (the slots past `slots`) */
	struct slab **dir;
	/* State. */
	uint32_t hwm;         /* positions below were taken into use (or skipped as guards) */
	uint32_t since_guard; /* fresh slabs taken since the last guard */
	uint32_t partial, empty, empty_last;
	uint32_t nclosed;          /* slabs in the closed set (out of the slab quarantine) */
	uint64_t *closed_chunks;   /* bit per descriptor chunk: it has a slab in the closed set */
	uint32_t nempty;
	uint32_t *sq; /* slab quarantine ring */
	uint32_t sq_head, sq_count;
	uintptr_t *qrand, *qring; /* slot quarantine */
	uint32_t qrand_mask, qring_mask, qhead, qcount;
	uint64_t rbits;
	uint32_t rleft;
	struct random_state rnd;
} __attribute__((aligned(64)));

static __thread unsigned tls_arena __attribute__((tls_model("initial-exec")));
static _Atomic unsigned next_arena;

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
	return &k->dir[pos >> CHUNK_SHIFT][pos & (CHUNK - 1)];
}

static inline uintptr_t slab_start(const struct slab_class *k, uint32_t pos)
{
	return k->region.base + (size_t)pos * k->slab_bytes;
}

static inline struct slab_class *class_at(uintptr_t a)
{
	return &ro.slab.classes[(a - ro.slab.base) >> ro.slab.region_shift];
}

/* 16 random bits from the class's generator: a ChaCha block serves many choices.
 * (Unused where neither random slot choice nor the slot quarantine is built: light.) */
static inline __attribute__((unused)) uint32_t rand16(struct slab_class *k)
{
	if (unlikely(!k->rleft)) {
		k->rbits = random_u64(&k->rnd);
		k->rleft = 4;
	}
	uint32_t r = (uint32_t)(k->rbits & 0xffff);
	k->rbits >>= 16;
	k->rleft--;
	return r;
}

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

/* Every position below the high-water mark must have a descriptor: live_slot reads it. */
static bool have_desc(struct slab_class *k, uint32_t pos)
{
	if (k->dir[pos >> CHUNK_SHIFT]) return true;
	/* Chunks of descriptors keep metadata mappings few; zeroed: state SLAB_NONE. The
	 * chunk's bitmap of the closed set follows its descriptors. */
	k->dir[pos >> CHUNK_SHIFT] = meta_alloc(CHUNK * sizeof(struct slab) + CHUNK / 8);
	return k->dir[pos >> CHUNK_SHIFT] != NULL;
}

/* --- the closed set: a bit per position, a summary bit per chunk ------------------ */

static inline uint64_t *closed_bits(const struct slab_class *k, uint32_t chunk)
{
	return (uint64_t *)(k->dir[chunk] + CHUNK);
}

static void closed_add(struct slab_class *k, uint32_t pos)
{
	uint32_t c = pos >> CHUNK_SHIFT, i = pos & (CHUNK - 1);
	closed_bits(k, c)[i >> 6] |= (uint64_t)1 << (i & 63);
	k->closed_chunks[c >> 6] |= (uint64_t)1 << (c & 63);
	k->nclosed++;
}

static void closed_remove(struct slab_class *k, uint32_t pos)
{
	uint32_t c = pos >> CHUNK_SHIFT, i = pos & (CHUNK - 1);
	uint64_t *bits = closed_bits(k, c), any = 0;
	bits[i >> 6] &= ~((uint64_t)1 << (i & 63));
	for (uint32_t w = 0; w < CHUNK / 64; w++) any |= bits[w];
	if (!any) k->closed_chunks[c >> 6] &= ~((uint64_t)1 << (c & 63));
	k->nclosed--;
}

/* The lowest position in the closed set (which must not be empty). */
static uint32_t closed_lowest(const struct slab_class *k)
{
	uint32_t w = 0;
	while (!k->closed_chunks[w]) w++;
	uint32_t c = (w << 6) + (uint32_t)__builtin_ctzll(k->closed_chunks[w]);
	const uint64_t *bits = closed_bits(k, c);
	for (w = 0; !bits[w]; w++) {}
	return (c << CHUNK_SHIFT) + (w << 6) + (uint32_t)__builtin_ctzll(bits[w]);
}

/* Take the next never-used position into use, skipping a guard first when one is due;
 * false on OOM. */
static bool fresh_slab(struct slab_class *k, uint32_t *out)
{
	uint32_t every = guard_interval(k);
	bool guard = every && k->since_guard >= every;
	uint32_t pos = k->hwm + guard;
	if (pos >= k->max_pos || !have_desc(k, k->hwm) || !have_desc(k, pos)) return false;
	if (k->open_slabs) {
		/* The guard opens with its slab and closes again at once, never handed out:
		 * so it belongs to the read-write span (one anon_vma, see guard.c), and the
		 * slab after it shares that anon_vma instead of faulting in one of its own,
		 * which would keep the closed slabs on either side from ever merging. */
		size_t start = (size_t)k->hwm * k->slab_bytes, end = (size_t)(pos + 1) * k->slab_bytes;
		if (!guard_extend(&k->region, start, end - start)) return false;
		if (guard && !guard_close(&k->region, start, k->slab_bytes)) {
			/* No marker and no VMA to spare: leave this guard open but never use it;
			 * it is still a slab's worth of unused addresses between slabs. */
		}
	}
	k->hwm = pos + 1;
	k->since_guard = guard ? 1 : k->since_guard + 1;
	*out = pos;
	return true;
}

/* Into the empty list, in position order (it holds a few dozen slabs at most). */
static void empty_insert(struct slab_class *k, uint32_t pos, struct slab *s)
{
	uint32_t prev = 0, next = k->empty;
	while (next && next - 1 < pos) {
		prev = next;
		next = desc(k, next - 1)->next;
	}
	s->prev = prev;
	s->next = next;
	if (prev) desc(k, prev - 1)->next = pos + 1;
	else k->empty = pos + 1;
	if (next) desc(k, next - 1)->prev = pos + 1;
	else k->empty_last = pos + 1;
	s->state = SLAB_EMPTY;
	k->nempty++;
}

static void empty_remove(struct slab_class *k, struct slab *s)
{
	if (s->prev) desc(k, s->prev - 1)->next = s->next;
	else k->empty = s->next;
	if (s->next) desc(k, s->next - 1)->prev = s->prev;
	else k->empty_last = s->prev;
	s->next = s->prev = 0;
	k->nempty--;
}

/* A slab with a free slot, put on the partial list; false on OOM. */
static noinline bool new_slab(struct slab_class *k, uint32_t *out)
{
	uint32_t pos;
	struct slab *s;
	if (k->empty) {
		pos = k->empty - 1;
		s = desc(k, pos);
		empty_remove(k, s);
	} else if (k->nclosed) {
		pos = closed_lowest(k);
		s = desc(k, pos);
		if (k->open_slabs && !guard_open(&k->region, (size_t)pos * k->slab_bytes, k->slab_bytes)) return false;
		closed_remove(k, pos);
	} else {
		if (!fresh_slab(k, &pos)) return false;
		s = desc(k, pos);
	}
	memcpy(s->used, k->tail, sizeof s->used);
	memset(s->quar, 0, sizeof s->quar);
	s->nused = 0;
	s->state = SLAB_ACTIVE;
	s->canary = random_u64(&k->rnd) & ~(uint64_t)0xff; /* little-endian: first byte 0 */
	partial_push(k, pos, s);
	*out = pos;
	return true;
}

/* Close an empty slab into the slab quarantine; false when the kernel cannot now. The
 * zero class's memory never opens, so its slabs close without a system call. */
static bool close_slab(struct slab_class *k, uint32_t pos, struct slab *s)
{
	if (k->open_slabs && !guard_close(&k->region, (size_t)pos * k->slab_bytes, k->slab_bytes)) return false;
	s->state = SLAB_CLOSED;
#if CONFIG_SLAB_QUARANTINE
	if (k->sq_count == CONFIG_SLAB_QUARANTINE) {
		uint32_t old = k->sq[k->sq_head];
		k->sq_head = (k->sq_head + 1) % CONFIG_SLAB_QUARANTINE;
		k->sq_count--;
		closed_add(k, old);
	}
	k->sq[(k->sq_head + k->sq_count) % CONFIG_SLAB_QUARANTINE] = pos;
	k->sq_count++;
#else
	closed_add(k, pos);
#endif
	return true;
}

/* The last slot of a slab went back: cache it, or close a slab (contents are zero). */
static void slab_emptied(struct slab_class *k, uint32_t pos, struct slab *s)
{
	bool room = k->nempty < CONFIG_SLAB_EMPTY_CACHE || (k->nempty + 1) * k->slab_bytes <= CONFIG_SLAB_EMPTY_CACHE_BYTES;
	if (!room && k->empty_last > pos + 1) {
		/* The lower one stays open: the open slabs stay together at the bottom. */
		uint32_t hi = k->empty_last - 1;
		struct slab *h = desc(k, hi);
		empty_remove(k, h);
		if (close_slab(k, hi, h)) room = true;
		else empty_insert(k, hi, h);
	}
	/* Kept open also when the kernel cannot close it now. */
	if (room || !close_slab(k, pos, s)) empty_insert(k, pos, s);
}

/* A slot goes back to its slab for good (it left the quarantine, or there is none). */
static void release(struct slab_class *k, struct slab *s, uint32_t pos, uint32_t i)
{
	uint64_t bit = (uint64_t)1 << (i & 63);
	s->used[i >> 6] &= ~bit;
	s->quar[i >> 6] &= ~bit;
	bool was_full = s->nused == k->slots;
	s->nused--;
	if (!s->nused) {
		if (!was_full) partial_remove(k, s);
		slab_emptied(k, pos, s);
	} else if (was_full) {
		partial_push(k, pos, s);
	}
}

#if CONFIG_SLOT_QUARANTINE
static void release_addr(struct slab_class *k, uintptr_t a)
{
	size_t off = a - k->region.base;
	uint32_t pos = div32((uint32_t)(off >> k->page_shift), k->pages, k->pages_magic);
	uint32_t in = (uint32_t)(off - (size_t)pos * k->slab_bytes);
	release(k, desc(k, pos), pos, div32(in, k->size, k->slot_magic));
}

/* A freed slot enters a random array slot; what sat there joins the FIFO, whose
 * oldest entry goes back to its slab once the FIFO is full. */
static void quarantine_slot(struct slab_class *k, uintptr_t a)
{
	uint32_t j = rand16(k) & k->qrand_mask;
	uintptr_t out = k->qrand[j];
	k->qrand[j] = a;
	if (!out) return;
	if (k->qcount > k->qring_mask) {
		uintptr_t old = k->qring[k->qhead];
		k->qhead = (k->qhead + 1) & k->qring_mask;
		k->qcount--;
		release_addr(k, old);
	}
	k->qring[(k->qhead + k->qcount) & k->qring_mask] = out;
	k->qcount++;
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
	uint64_t m = ~s->used[w] & (~(uint64_t)0 << (start & 63));
	if (m) return (w << 6) + (uint32_t)__builtin_ctzll(m);
	for (uint32_t n = 1; n <= k->nwords; n++) {
		uint32_t ww = w + n < k->nwords ? w + n : w + n - k->nwords;
		m = ~s->used[ww];
		if (m) return (ww << 6) + (uint32_t)__builtin_ctzll(m);
	}
	die(k, "slab metadata inconsistent", s);
}

static unsigned assign_arena(void)
{
	unsigned a = atomic_fetch_add_explicit(&next_arena, 1, memory_order_relaxed) % ro.slab.arenas + 1;
	tls_arena = a;
	return a;
}

void *slab_alloc(unsigned c)
{
	unsigned a = tls_arena;
	if (unlikely(!a)) a = assign_arena();
	struct slab_class *k = &ro.slab.classes[(a - 1) * SC_COUNT + c];
	class_lock(k);
	uint32_t pos;
	if (likely(k->partial)) {
		pos = k->partial - 1;
	} else if (!new_slab(k, &pos)) {
		class_unlock(k);
		return NULL;
	}
	struct slab *s = desc(k, pos);
	uint32_t i = pick_slot(k, s);
	s->used[i >> 6] |= (uint64_t)1 << (i & 63);
	if (++s->nused == k->slots) partial_remove(k, s);
	char *p = (char *)slab_start(k, pos) + (size_t)i * k->size;
#if CONFIG_SLOT_CANARY
	/* Stamped under the lock: a free of a neighbour checks the canary of every live
	 * slot next to it, and must never see this one live without its canary. */
	if (k->open_slabs) {
#if CONFIG_WRITE_AFTER_FREE_CHECK
		uint64_t old;
		memcpy(&old, p + k->usable, 8);
		if (unlikely(old)) die(k, "write after free", p);
#endif
		memcpy(p + k->usable, &s->canary, 8);
	}
#endif
	class_unlock(k);

#if CONFIG_WRITE_AFTER_FREE_CHECK
	/* The usable part is ours alone now (no neighbour check reads a live slot's
	 * data), so the scan for stale writes runs outside the lock. */
	if (k->open_slabs) {
		const uint64_t *w = (const uint64_t *)p;
		size_t words = k->usable / 8, n = 0;
		uint64_t acc = 0;
		for (; n + 2 <= words; n += 2) acc |= w[n] | w[n + 1];
		if (n < words) acc |= w[n];
		if (unlikely(acc)) fatal("write after free", p);
	}
#endif
	return p;
}

/* Decode a pointer that must be the start of a live slot of k (lock held). */
static inline struct slab *live_slot(struct slab_class *k, uintptr_t a, uint32_t *pos_out,
				     uint32_t *i_out, const char *op)
{
	size_t off = a - k->region.base;
	if (unlikely(off >= k->region.size)) die(k, op, (void *)a); /* the guard area */
	uint32_t pos = div32((uint32_t)(off >> k->page_shift), k->pages, k->pages_magic);
	if (unlikely(pos >= k->hwm)) die(k, op, (void *)a);
	struct slab *s = desc(k, pos);
	if (unlikely(s->state != SLAB_ACTIVE)) {
		if (s->state == SLAB_NONE) die(k, op, (void *)a); /* a guard slab */
		die(k, "use of a pointer into a freed slab (double free?)", (void *)a);
	}
	uint32_t in = (uint32_t)(off - (size_t)pos * k->slab_bytes);
	uint32_t i = div32(in, k->size, k->slot_magic);
	if (unlikely(i >= k->slots || i * k->size != in)) die(k, "invalid pointer: not the start of a slot", (void *)a);
	uint64_t bit = (uint64_t)1 << (i & 63);
	if (unlikely(!(s->used[i >> 6] & bit))) die(k, "slot is not allocated (double free or invalid pointer)", (void *)a);
	if (unlikely(s->quar[i >> 6] & bit)) die(k, "slot was already freed (double free?)", (void *)a);
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
	return (s->used[i >> 6] & ~s->quar[i >> 6]) >> (i & 63) & 1;
}

/* A free also checks what a bug in the freed block can have damaged without touching
 * its own canary: the slot before it (an underflow ends in that slot's canary) and a
 * free slot after it (an overflow that stepped over the canary). A live slot after it
 * holds data nobody can judge; it is checked at its own free. Lock held, so a live
 * neighbour's canary is already stamped (slab_alloc stamps it under the lock). */
static inline void check_neighbours(struct slab_class *k, const struct slab *s, uintptr_t a, uint32_t i)
{
	if (i > 0) {
		uint64_t v;
		memcpy(&v, (const char *)a - 8, 8);
		if (slot_live(s, i - 1)) {
#if CONFIG_SLOT_CANARY
			if (unlikely(v != s->canary))
				die(k, "neighbour slot canary overwritten (heap overflow or underflow)", (void *)(a - k->size));
#endif
		}
#if CONFIG_ZERO_ON_FREE
		else if (unlikely(v)) {
			die(k, "free neighbour slot written (heap overflow, underflow or write after free)",
			    (void *)(a - k->size));
		}
#endif
	}
#if CONFIG_ZERO_ON_FREE
	if (i + 1 < k->slots && !slot_live(s, i + 1)) {
		uint64_t v[2];
		memcpy(v, (const char *)a + k->size, 16);
		if (unlikely(v[0] | v[1]))
			die(k, "free neighbour slot written (heap overflow, underflow or write after free)",
			    (void *)(a + k->size));
	}
#endif
}

void slab_free(void *p, bool sized, unsigned c_claimed)
{
	uintptr_t a = (uintptr_t)p;
	struct slab_class *k = class_at(a);
	class_lock(k);
	uint32_t pos, i;
	struct slab *s = live_slot(k, a, &pos, &i, "free of a pointer that is not a live allocation");
	if (unlikely(sized && c_claimed != k->cls)) die(k, "sized free with a wrong size or alignment", p);
	if (k->open_slabs) {
		check_canary(k, s, a);
		check_neighbours(k, s, a, i);
#if CONFIG_ZERO_ON_FREE
		memset(p, 0, k->size);
#endif
	}
#if CONFIG_SLOT_QUARANTINE
	s->quar[i >> 6] |= (uint64_t)1 << (i & 63);
	quarantine_slot(k, a);
#else
	release(k, s, pos, i);
#endif
	class_unlock(k);
}

size_t slab_usable_size(const void *p)
{
	struct slab_class *k = class_at((uintptr_t)p);
	class_lock(k);
	uint32_t pos, i;
	(void)live_slot(k, (uintptr_t)p, &pos, &i, "malloc_usable_size of a pointer that is not a live allocation");
	class_unlock(k);
	return k->usable;
}

unsigned slab_class_of_live(const void *p)
{
	struct slab_class *k = class_at((uintptr_t)p);
	class_lock(k);
	uint32_t pos, i;
	struct slab *s = live_slot(k, (uintptr_t)p, &pos, &i, "realloc of a pointer that is not a live allocation");
	if (k->open_slabs) check_canary(k, s, (uintptr_t)p);
	class_unlock(k);
	return k->cls;
}

size_t slab_object_size(const void *p)
{
	static const char what[] = "malloc_object_size of a pointer into rampart's memory that is not a live allocation";
	uintptr_t a = (uintptr_t)p;
	struct slab_class *k = class_at(a);
	size_t off = a - k->region.base;
	class_lock(k);
	/* Everything in the reservation belongs to some slot's life cycle or to a guard:
	 * a question about anything but a live slot means the caller holds a stale or
	 * forged pointer, like a free of one would. */
	if (unlikely(off >= k->region.size)) die(k, what, p);
	uint32_t pos = div32((uint32_t)(off >> k->page_shift), k->pages, k->pages_magic);
	if (unlikely(pos >= k->hwm || desc(k, pos)->state != SLAB_ACTIVE)) die(k, what, p);
	struct slab *s = desc(k, pos);
	uint32_t in = (uint32_t)(off - (size_t)pos * k->slab_bytes);
	uint32_t i = div32(in, k->size, k->slot_magic), at = in - i * k->size;
	if (unlikely(i >= k->slots || !slot_live(s, i))) die(k, what, p);
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
		if (!k->dir[pos >> CHUNK_SHIFT]) continue; /* a guard position alone in its chunk */
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
		if (ro.slab.classes[r].open_slabs) check_class_at_exit(&ro.slab.classes[r], &last);
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
	return n < 1 ? 1 : n > SLOT_Q_MAX / 2 ? SLOT_Q_MAX / 2 : n;
#else
	(void)size;
	return 0;
#endif
}

bool slab_init(void)
{
	unsigned arenas = CONFIG_SLAB_ARENAS, nregions = arenas * SC_COUNT;
	unsigned shift = CONFIG_SLAB_REGION_SHIFT;
	unsigned page_shift = (unsigned)__builtin_ctzl(os_page);
	struct guard_region all;
	while (!guard_reserve(&all, (size_t)nregions << shift, "rampart:slab"))
		if (--shift < MIN_REGION_SHIFT) return false;
	size_t region = (size_t)1 << shift;

	/* One generator seeds the per-class ones: one getrandom call, not hundreds. */
	struct random_state seed;
	random_reseed(&seed);

	/* Geometry and metadata sizes first, so everything comes from two meta_allocs. */
	struct sc_geometry geo[SC_COUNT];
	size_t extra = 0;
	for (unsigned c = 0; c < SC_COUNT; c++) {
		sc_geometry(c, os_page, &geo[c]);
		size_t bytes = (size_t)geo[c].pages * os_page;
		size_t pos = MIN(region / bytes, (size_t)MAX_POSITIONS);
		extra += ((pos + CHUNK - 1) / CHUNK) * sizeof(struct slab *);
		extra += ((pos + CHUNK - 1) / CHUNK + 63) / 64 * sizeof(uint64_t);
		extra += 2 * (size_t)slot_q_half(geo[c].size) * sizeof(uintptr_t);
		extra += CONFIG_SLAB_QUARANTINE * sizeof(uint32_t);
		extra = align_up(extra, 8);
	}
	extra *= arenas;
	struct slab_class *classes = meta_alloc(nregions * sizeof *classes);
	char *mem = meta_alloc(extra);
	if (!classes || !mem) {
		meta_free(classes, nregions * sizeof *classes);
		meta_free(mem, extra);
		(void)guard_unmap(&all);
		return false;
	}

	for (unsigned r = 0; r < nregions; r++) {
		struct slab_class *k = &classes[r];
		unsigned c = r % SC_COUNT;
		const struct sc_geometry *g = &geo[c];
		lock_reset(&k->lock);
		k->cls = c;
		k->size = g->size;
		k->usable = g->usable;
		k->slots = g->slots;
		k->nwords = (g->slots + 63) / 64;
		k->pages = g->pages;
		k->page_shift = page_shift;
		k->slot_magic = magic_of(g->size);
		k->pages_magic = magic_of(g->pages);
		k->slab_bytes = (size_t)g->pages * os_page;
		k->open_slabs = c != 0;
		for (uint32_t i = g->slots; i < SLAB_MAX_SLOTS; i++) k->tail[i >> 6] |= (uint64_t)1 << (i & 63);

		/* The random guard area: up to 1/16 of the region, at least one page. */
		size_t guard_pages = 1 + random_below(&seed, region / 16 / os_page);
		uintptr_t area = all.base + (size_t)r * region + guard_pages * os_page;
		k->max_pos = (uint32_t)MIN((region - guard_pages * os_page) / k->slab_bytes, (size_t)MAX_POSITIONS);
		k->region = (struct guard_region){area, (size_t)k->max_pos * k->slab_bytes, all.flags | REGION_KEEP_ANON};

		size_t pos_all = MIN(region / k->slab_bytes, (size_t)MAX_POSITIONS);
		k->dir = (struct slab **)mem;
		mem += ((pos_all + CHUNK - 1) / CHUNK) * sizeof(struct slab *);
		k->closed_chunks = (uint64_t *)mem;
		mem += ((pos_all + CHUNK - 1) / CHUNK + 63) / 64 * sizeof(uint64_t);
		uint32_t half = slot_q_half(g->size);
		if (half) {
			k->qrand = (uintptr_t *)mem;
			mem += half * sizeof(uintptr_t);
			k->qring = (uintptr_t *)mem;
			mem += half * sizeof(uintptr_t);
			k->qrand_mask = k->qring_mask = half - 1;
		}
		k->sq = (uint32_t *)mem;
		mem += CONFIG_SLAB_QUARANTINE * sizeof(uint32_t);
		mem = (char *)align_up((uintptr_t)mem, 8);

		/* Its own generator, keyed from the seed generator (fast key erasure there). */
		for (int w = 0; w < 4; w++) {
			uint64_t v = random_u64(&seed);
			memcpy(&k->rnd.key[2 * w], &v, 8);
		}
		k->rnd.counter = 0;
		k->rnd.until_reseed = RANDOM_RESEED_BYTES;
		k->rnd.pos = RANDOM_BUF_BYTES;
	}
	memset(&seed, 0, sizeof seed);
	ro.slab = (struct slab_roots){.base = all.base, .size = all.size, .region_shift = shift,
				      .arenas = arenas, .classes = classes};
	return true;
}

void slab_fork_prepare(void)
{
	unsigned n = ro.slab.arenas * SC_COUNT;
	for (unsigned r = 0; r < n; r++) class_lock(&ro.slab.classes[r]);
}

void slab_fork_parent(void)
{
	unsigned n = ro.slab.arenas * SC_COUNT;
	for (unsigned r = n; r-- > 0;) class_unlock(&ro.slab.classes[r]);
}

void slab_fork_child(void)
{
	unsigned n = ro.slab.arenas * SC_COUNT;
	for (unsigned r = 0; r < n; r++) {
		struct slab_class *k = &ro.slab.classes[r];
		lock_reset(&k->lock);
		/* Parent and child must not share a future stream: reseed on next use. */
		k->rnd.until_reseed = 0;
		k->rnd.pos = RANDOM_BUF_BYTES;
		k->rleft = 0;
	}
}

/* --- introspection: statistics and trim --------------------------------------------
 * Read (and, for trim, close) slab state under each class lock, like any slow path:
 * nothing is counted on the fast paths, every figure is derived from the descriptors. */

static void class_figures_locked(const struct slab_class *k, struct slab_class_figures *f)
{
	for (uint32_t pos = 0; pos < k->hwm; pos++) {
		if (!k->dir[pos >> CHUNK_SHIFT]) { /* a chunk holding only a guard position */
			pos |= CHUNK - 1;
			continue;
		}
		const struct slab *s = desc(k, pos);
		if (s->state == SLAB_ACTIVE) {
			size_t quar = 0;
			for (uint32_t w = 0; w < k->nwords; w++) quar += (size_t)__builtin_popcountll(s->quar[w]);
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
	for (unsigned a = 0; a < ro.slab.arenas; a++) {
		struct slab_class *k = &ro.slab.classes[a * SC_COUNT + c];
		f->slot_size = k->size;
		f->usable = k->usable;
		f->slab_bytes = k->open_slabs ? k->slab_bytes : 0;
		class_lock(k);
		class_figures_locked(k, f);
		class_unlock(k);
	}
}

/* Close the empty slabs a class keeps open (highest first, as slab_emptied does when
 * over its budget); the bytes closed. Stops at the first slab the kernel cannot close. */
static size_t trim_class(struct slab_class *k)
{
	size_t closed = 0;
	class_lock(k);
	while (k->empty_last) {
		uint32_t pos = k->empty_last - 1;
		struct slab *s = desc(k, pos);
		empty_remove(k, s);
		if (!close_slab(k, pos, s)) {
			empty_insert(k, pos, s);
			break;
		}
		closed += k->slab_bytes;
	}
	class_unlock(k);
	return closed;
}

size_t slab_trim(void)
{
	size_t closed = 0;
	unsigned n = ro.slab.arenas * SC_COUNT;
	for (unsigned r = 0; r < n; r++)
		if (ro.slab.classes[r].open_slabs) closed += trim_class(&ro.slab.classes[r]);
	return closed;
}
