/*
 * reuse_cache.c — the large-region reuse cache: a size-sorted array with a hard waste bound.
 *
 * Why a hard bound: Scudo's secondary cache also retrieves by an "optimal fit" with a
 * 10% figure, but there the 10% only decides when the search may stop early; what a
 * fit leaves unreleased is bounded by a fixed four pages (MaxUnreleasedCachePages = 4
 * in compiler-rt/lib/scudo/standalone/secondary.h), and its cached blocks stay
 * readable. Here the bound is the contract: the caller says how much it may waste,
 * no region beyond that is returned, and cached regions are closed.
 */
#define _GNU_SOURCE
#include "large/reuse_cache.h"

#include <string.h>

#include "base/counters.h"

void reuse_cache_init(struct reuse_cache *c, struct reuse_cache_entry *storage, size_t max_entries, size_t max_bytes,
		uint64_t decay_ms)
{
	*c = (struct reuse_cache){.entries = storage, .max_entries = max_entries, .max_bytes = max_bytes,
				   .decay_ms = decay_ms};
}

/* Is entry e ordered before (partition, size)? Partitions first: each partition's
 * entries are one run, sorted by size, which one binary search finds. */
static bool before(const struct reuse_cache_entry *e, unsigned partition, size_t size)
{
	return e->partition != partition ? e->partition < partition : e->region.size < size;
}

/* First index whose entry is at least (partition, size). */
static size_t lower_bound(const struct reuse_cache *c, unsigned partition, size_t size)
{
	size_t lo = 0, hi = c->count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (before(&c->entries[mid], partition, size)) lo = mid + 1;
		else hi = mid;
	}
	return lo;
}

static struct guard_region remove_at(struct reuse_cache *c, size_t i)
{
	struct guard_region r = c->entries[i].region;
	memmove(&c->entries[i], &c->entries[i + 1], (c->count - i - 1) * sizeof c->entries[0]);
	c->count--;
	c->bytes -= r.size;
	stat_dec(STAT_CACHE_NOW);
	stat_add(STAT_CACHE_BYTES_NOW, -(long)r.size);
	return r;
}

static void evict_at(struct reuse_cache *c, size_t i)
{
	struct guard_region r = remove_at(c, i);
	(void)guard_unmap(&r);
	stat_inc(STAT_CACHE_EVICTIONS);
}

static size_t oldest(const struct reuse_cache *c)
{
	size_t best = 0;
	for (size_t i = 1; i < c->count; i++)
		if (c->entries[i].idle_since_ms < c->entries[best].idle_since_ms) best = i;
	return best;
}

/* Insert keeping the (partition, size) order; the caller has made room. */
static void insert(struct reuse_cache *c, const struct guard_region *r, unsigned partition, uint64_t idle_since_ms)
{
	invariant(c->count < c->max_entries);
	size_t i = lower_bound(c, partition, r->size);
	memmove(&c->entries[i + 1], &c->entries[i], (c->count - i) * sizeof c->entries[0]);
	c->entries[i] = (struct reuse_cache_entry){*r, idle_since_ms, partition};
	c->count++;
	c->bytes += r->size;
	stat_inc(STAT_CACHE_NOW);
	stat_add(STAT_CACHE_BYTES_NOW, (long)r->size);
}

/* Join r with cached regions of its partition that touch it: fewer, larger entries, and
 * address space handed back later as one piece instead of leaving holes between
 * neighbours. Never with another partition's: the joined region, and every piece later
 * cut from it, would be handed to one partition only, so the other's freed addresses
 * would go to it. */
static void coalesce(struct reuse_cache *c, struct guard_region *r, unsigned partition)
{
	for (size_t i = 0; i < c->count;) {
		const struct guard_region *n = &c->entries[i].region;
		bool touches = n->base + n->size == r->base || r->base + r->size == n->base;
		if (touches && c->entries[i].partition == partition) {
			struct guard_region m = remove_at(c, i);
			r->base = MIN(r->base, m.base);
			r->size += m.size;
			r->flags |= m.flags;
			i = 0;
		} else {
			i++;
		}
	}
}

void reuse_cache_put(struct reuse_cache *c, const struct guard_region *r, unsigned partition, uint64_t now_ms)
{
	struct guard_region joined = *r;
	if (joined.flags & (REGION_RESIDUE | REGION_STALE)) { /* it may carry the last owner's doings */
		(void)guard_unmap(&joined);
		return;
	}
	coalesce(c, &joined, partition);
	if (joined.size > c->max_bytes || !c->max_entries) {
		(void)guard_unmap(&joined);
		return;
	}
	while (c->count && (c->count == c->max_entries || c->bytes + joined.size > c->max_bytes))
		evict_at(c, oldest(c));
	insert(c, &joined, partition, now_ms);
	invariant(c->count <= c->max_entries && c->bytes <= c->max_bytes);
}

bool reuse_cache_take(struct reuse_cache *c, unsigned partition, size_t need, size_t slack, size_t split,
		      struct guard_region *out)
{
	size_t i = lower_bound(c, partition, need);
	if (i == c->count || c->entries[i].partition != partition) { /* past the partition's run */
		stat_inc(STAT_CACHE_MISSES);
		return false;
	}
	uint64_t idle_since = c->entries[i].idle_since_ms;
	*out = remove_at(c, i);
	stat_inc(STAT_CACHE_HITS);
	if (out->size - need > slack) {
		/* Too big to hand out whole: cut off what is asked; the rest stays cached.
		 * Both parts are closed already, so the cut costs no system call. */
		struct guard_region rest = *out;
		rest.base += split;
		rest.size -= split;
		invariant(split >= need && split - need <= slack);
		out->size = split;
		insert(c, &rest, partition, idle_since);
	}
	invariant(out->size >= need && out->size - need <= slack); /* the hard bound */
	return true;
}
void reuse_cache_decay(struct reuse_cache *c, uint64_t now_ms)
{
	/* Look at most four times per interval: the scan is linear, the lookups are not. */
	if (now_ms - c->last_decay_ms < c->decay_ms / 4) return;
	c->last_decay_ms = now_ms;
	for (size_t i = c->count; i-- > 0;)
		if (now_ms - c->entries[i].idle_since_ms >= c->decay_ms) evict_at(c, i);
}

size_t reuse_cache_flush(struct reuse_cache *c)
{
	size_t n = c->count;
	while (c->count) evict_at(c, c->count - 1);
	return n;
}

bool reuse_cache_contains(const struct reuse_cache *c, uintptr_t a)
{
	for (size_t i = 0; i < c->count; i++)
		if (a - c->entries[i].region.base < c->entries[i].region.size) return true;
	return false;
}
