/* refill.c — populate new large blocks with the credit of touched ones freed; see refill.h. */
#include "refill.h"

#include <errno.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "os.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

void refill_init(struct refill *r, size_t cap)
{
	*r = (struct refill){.cap = cap & ~(os_page - 1)};
}

/* The smallest span worth a system call to populate. */
#define REFILL_MIN_BYTES ((size_t)16 * os_page)

/* Pages sampled to tell how much of a populated span the program wrote. */
#define SAMPLES 8

static bool page_zero(const unsigned char *p)
{
	const uint64_t *w = (const uint64_t *)(const void *)p;
	uint64_t acc = 0;
	for (size_t i = 0; i < os_page / 8; i++) acc |= w[i];
	return !acc;
}

/* The bytes of [p, p + populated) the program wrote, estimated from SAMPLES pages
 * spread over it (all of them when there are fewer). */
static size_t written_estimate(const unsigned char *p, size_t populated)
{
	size_t pages = populated / os_page, n = MIN(pages, (size_t)SAMPLES), hit = 0;
	for (size_t k = 0; k < n; k++)
		hit += !page_zero(p + (k * pages / n) * os_page);
	return n ? populated / n * hit : 0;
}

void refill_freed(struct refill *r, const void *p, size_t len, size_t populated)
{
	if (!r->cap || atomic_load_explicit(&r->off, memory_order_relaxed)) return;
	if (!r->dense && r->skip) {
		r->skip--;
		return;
	}
	uint64_t now = os_now_ms();
	if (now >= r->until_ms) r->credit = 0;
	if (r->credit >= r->cap) { /* full: no mincore at all */
		r->until_ms = now + CONFIG_LARGE_REFILL_MS;
		return;
	}
	populated = MIN(populated, len);
	size_t resident = os_resident((void *)p, len, len);
	size_t used = (resident > populated ? resident - populated : 0);
	if (populated) used += written_estimate(p, populated);
	r->dense = used >= len / 2;
	if (!r->dense) {
		r->skip = REFILL_PROBE_EVERY - 1;
		return;
	}
	r->until_ms = now + CONFIG_LARGE_REFILL_MS;
	r->credit = MIN(r->cap, r->credit + (used & ~(os_page - 1)));
}

size_t refill_take(struct refill *r, size_t len)
{
	if (!r->credit) return 0;
	if (os_now_ms() >= r->until_ms) {
		r->credit = 0;
		return 0;
	}
	size_t take = MIN(len, r->credit);
	if (take < REFILL_MIN_BYTES) return 0; /* a fault or two cost less than the call */
	r->credit -= take;
	return take;
}

void refill_populate(struct refill *r, void *p, size_t len)
{
	int err = os_advise(p, len, MADV_POPULATE_WRITE);
	/* Before Linux 5.14 the advice is unknown; anything else (ENOMEM, a signal) only
	 * means the pages come by faults, as they would have. */
	if (err == EINVAL) atomic_store_explicit(&r->off, true, memory_order_relaxed);
}
