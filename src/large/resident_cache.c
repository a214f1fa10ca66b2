/* resident_cache.c — freed large blocks kept sealed with their pages; see resident_cache.h. */
#include "large/resident_cache.h"

#include "base/counters.h"

void resident_cache_init(struct resident_cache *c, size_t max_bytes)
{
	c->count = c->bytes = 0;
	c->max_bytes = max_bytes & ~(os_page - 1);
}

long resident_cache_fit(const struct resident_cache *c, size_t len, size_t max_excess)
{
	long best = -1;
	for (size_t i = 0; i < c->count; i++) {
		size_t have = c->blocks[i].len;
		if (have >= len && have - len <= max_excess && (best < 0 || have < c->blocks[best].len)) best = (long)i;
	}
	return best;
}

size_t resident_cache_oldest(const struct resident_cache *c)
{
	size_t best = 0;
	for (size_t i = 1; i < c->count; i++)
		if (c->blocks[i].since_ms < c->blocks[best].since_ms) best = i;
	return best;
}

struct resident_block resident_cache_remove(struct resident_cache *c, size_t i)
{
	struct resident_block b = c->blocks[i];
	c->blocks[i] = c->blocks[--c->count]; /* order does not matter: searches are linear */
	c->bytes -= b.len;
	stat_add(STAT_CACHE_RESIDENT_BYTES_NOW, -(long)b.len);
	return b;
}

void resident_cache_add(struct resident_cache *c, const struct resident_block *b)
{
	c->blocks[c->count++] = *b;
	c->bytes += b->len;
	stat_add(STAT_CACHE_RESIDENT_BYTES_NOW, (long)b->len);
}

bool resident_cache_contains(const struct resident_cache *c, uintptr_t a)
{
	for (size_t i = 0; i < c->count; i++)
		if (a - c->blocks[i].region.base < c->blocks[i].region.size) return true;
	return false;
}
