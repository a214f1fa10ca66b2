/* resident_cache.c — freed large blocks kept sealed with their pages; see resident_cache.h. */
#include "large/resident_cache.h"

#include "base/counters.h"
#include "guard/vma_budget.h"
#include "os/os.h"

/* The part of the bound kept whatever the live blocks do. */
#define RESIDENT_FLOOR_PART 8

void resident_cache_init(struct resident_cache *c, size_t max_bytes, uint64_t decay_ms, struct reuse_cache *reuse)
{
	c->count = c->bytes = 0;
	c->max_bytes = max_bytes & ~(os_page - 1);
	c->decay_ms = decay_ms;
	c->reuse = reuse;
}

/* Index of partition's block whose sealed span fits len with the least excess, at most
 * max_excess; -1 when none does. */
static long fit(const struct resident_cache *c, unsigned partition, size_t len, size_t max_excess)
{
	long best = -1;
	for (size_t i = 0; i < c->count; i++) {
		size_t have = c->blocks[i].len;
		if (c->blocks[i].partition != partition || have < len || have - len > max_excess) continue;
		if (best < 0 || have < c->blocks[best].len) best = (long)i;
	}
	return best;
}

/* Index of the block idle longest; count > 0. */
static size_t oldest(const struct resident_cache *c)
{
	size_t best = 0;
	for (size_t i = 1; i < c->count; i++)
		if (c->blocks[i].since_ms < c->blocks[best].since_ms) best = i;
	return best;
}

static struct resident_block remove_at(struct resident_cache *c, size_t i)
{
	invariant(i < c->count && c->bytes >= c->blocks[i].len);
	struct resident_block b = c->blocks[i];
	c->blocks[i] = c->blocks[--c->count]; /* order does not matter: searches are linear */
	c->bytes -= b.len;
	stat_add(STAT_CACHE_RESIDENT_BYTES_NOW, -(long)b.len);
	return b;
}

/* A kept block leaves: its pages go back (guard_close maps the region afresh, as a free
 * does) and its region joins the reuse cache, closed like any other and still its
 * partition's. */
static void drop(struct resident_cache *c, size_t i)
{
	struct resident_block b = remove_at(c, i);
	if (guard_close(&b.region, 0, b.region.size)) reuse_cache_put(c->reuse, &b.region, b.partition, os_now_ms());
	else (void)guard_unmap(&b.region);
}

/* Blocks kept longer than the idle bound go back. */
static void decay(struct resident_cache *c, uint64_t now_ms)
{
	for (size_t i = c->count; i-- > 0;)
		if (now_ms - c->blocks[i].since_ms >= c->decay_ms) drop(c, i);
}

/* How many bytes kept blocks may hold now (resident_cache.h: the budget); the peak
 * restarts at the live bytes once a decay interval has passed. */
static size_t budget(const struct resident_cache *c, struct live_level *live)
{
	uint64_t now = os_now_ms();
	if (now - live->peak_since_ms >= c->decay_ms) {
		live->peak = live->bytes;
		live->peak_since_ms = now;
	}
	invariant(live->peak >= live->bytes); /* live_level_change */
	size_t room = live->peak - live->bytes;
	return MIN(c->max_bytes, MAX(c->max_bytes / RESIDENT_FLOOR_PART, room));
}

bool resident_cache_take(struct resident_cache *c, unsigned partition, struct guard_region *r, size_t *lead,
			 size_t len, size_t align)
{
	if (!c->count) return false;
	decay(c, os_now_ms());
	long i = fit(c, partition, len, len);
	if (i < 0) return false;
	struct resident_block *b = &c->blocks[i];
	if (align > os_page && (b->region.base + b->lead) % align) return false;
	struct resident_block got = remove_at(c, (size_t)i);
	if (!guard_unseal(&got.region, got.lead, got.len)) {
		(void)guard_unmap(&got.region);
		return false;
	}
	if (got.len > len && !guard_close(&got.region, got.lead + len, got.len - len)) {
		/* The VMA limit: the excess cannot be closed, so it stays the block's. */
		(void)guard_unmap(&got.region);
		return false;
	}
	stat_inc(STAT_CACHE_HITS);
	*r = got.region;
	*lead = got.lead;
	return true;
}

void resident_cache_shrink(struct resident_cache *c, struct live_level *live)
{
	if (!c->count) return;
	for (size_t most = budget(c, live); c->bytes > most;) drop(c, oldest(c));
}

/* Might the cache keep b? Its checks that cost no system call. A block whose pages got
 * huge-page marks is set apart by them: guard_seal would refuse it after a system call
 * (docs/large.md). */
static bool may_keep(const struct resident_cache *c, struct live_level *live, struct populate_credit *p,
		     const struct resident_freed *b)
{
	return c->max_bytes && vma_room(VMA_LARGE, 2) && b->len <= budget(c, live) &&
	       !populate_marked(p, b->region.base + b->lead + b->populated_off, b->populated);
}

/* Keep b's pages, wiped and sealed in place, instead of giving them back; false when it
 * is not kept (beyond the budget, or the block may carry what the program did to it:
 * guard_seal). vec: the block's os_residency where the caller read it, else NULL. */
static bool keep(struct resident_cache *c, struct live_level *live, struct populate_credit *p,
		 const struct resident_freed *b, const unsigned char *vec)
{
	if (!may_keep(c, live, p, b)) return false;
	size_t most = budget(c, live);
	void *data = (void *)(b->region.base + b->lead);
	/* A block mostly untouched has few page faults to save: not worth its seal. */
	size_t resident = vec ? os_resident_counted(vec, b->len, 0, 0, NULL) : os_resident(data, b->len, b->len / 2);
	if (resident < b->len / 2) return false;
	while (c->count == RESIDENT_SLOTS || c->bytes + b->len > most) drop(c, oldest(c));
	struct resident_block k = {.region = b->region, .lead = b->lead, .len = b->len, .since_ms = os_now_ms(),
				   .partition = b->partition};
	if (!guard_seal(&k.region, k.lead, k.len, vec)) return false;
	c->blocks[c->count++] = k;
	c->bytes += k.len;
	stat_add(STAT_CACHE_RESIDENT_BYTES_NOW, (long)k.len);
	invariant(c->count <= RESIDENT_SLOTS && c->bytes <= c->max_bytes);
	return true;
}

bool resident_cache_keep(struct resident_cache *c, struct live_level *live, struct populate_credit *p,
			 const struct resident_freed *b, unsigned char *vec)
{
	/* One mincore serves the credit, the keep decision and the wipe: three passes over
	 * the same pages cost three system calls. */
	void *data = (void *)(b->region.base + b->lead);
	const unsigned char *read = NULL;
	if (b->len / os_page <= RESIDENT_VEC_PAGES && (may_keep(c, live, p, b) || populate_counts(p)) &&
	    os_residency(data, b->len, vec))
		read = vec;
	populate_freed(p, data, b->len, b->populated_off, b->populated, read);
	return keep(c, live, p, b, read);
}

size_t resident_cache_flush(struct resident_cache *c)
{
	size_t n = c->count;
	while (c->count) drop(c, c->count - 1);
	return n;
}

bool resident_cache_contains(const struct resident_cache *c, uintptr_t a)
{
	for (size_t i = 0; i < c->count; i++)
		if (a - c->blocks[i].region.base < c->blocks[i].region.size) return true;
	return false;
}

size_t resident_cache_region_bytes(const struct resident_cache *c)
{
	size_t n = 0;
	for (size_t i = 0; i < c->count; i++) n += c->blocks[i].region.size;
	return n;
}
