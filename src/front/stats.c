/* stats.c — storage for the counters and the public snapshot. */
#define _GNU_SOURCE
#include "front/stats.h"

#include <unistd.h>

#include "rampart.h"
#include "base/text.h"
#include "guard/guard.h"
#include "front/init.h"
#include "large/large.h"
#include "slab/slab.h"

_Atomic unsigned long stat_counters[STAT_COUNT];

_Static_assert(sizeof(struct rampart_stats) / sizeof(unsigned long) == STAT_COUNT,
	       "struct rampart_stats must list every counter in enum stat order");

__attribute__((visibility("default"))) void rampart_get_stats(struct rampart_stats *out)
{
	unsigned long *dst = (unsigned long *)out;
	for (int i = 0; i < STAT_COUNT; i++)
		dst[i] = atomic_load_explicit(&stat_counters[i], memory_order_relaxed);
}

/* --- the heap's figures and the reports --- */

void stats_gather(struct rampart_heap_stats *h)
{
	*h = (struct rampart_heap_stats){.version = RAMPART_VERSION, .guard_backend = guard_backend_name()};
	_Static_assert(SC_COUNT <= RAMPART_STATS_CLASSES, "RAMPART_STATS_CLASSES too small");
	h->classes = SC_COUNT;
	for (unsigned c = 0; c < SC_COUNT; c++) {
		struct slab_class_figures f;
		slab_class_figures(c, &f);
		struct rampart_class_stats *k = &h->size_class[c];
		*k = (struct rampart_class_stats){
			.slot_size = f.slot_size, .usable = f.usable, .slab_bytes = f.slab_bytes,
			.live = f.live, .quarantined = f.quarantined, .free = f.free,
			.slabs_active = f.slabs_active, .slabs_empty = f.slabs_empty, .slabs_closed = f.slabs_closed,
			.bytes_open = (f.slabs_active + f.slabs_empty) * f.slab_bytes,
			.bytes_live = f.live * f.slot_size,
		};
		h->slab_live += k->live;
		h->slab_live_bytes += k->bytes_live;
		h->slab_quarantined += k->quarantined;
		/* The zero-size class holds no memory: its slots cost nothing. */
		h->slab_quarantined_bytes += f.slab_bytes ? k->quarantined * k->slot_size : 0;
		h->slab_open_bytes += k->bytes_open;
		h->slabs_active += k->slabs_active;
		h->slabs_empty += k->slabs_empty;
		h->slabs_closed += k->slabs_closed;
	}
	h->slab_free_bytes = h->slab_open_bytes - MIN(h->slab_open_bytes, h->slab_live_bytes + h->slab_quarantined_bytes);
	struct large_figures l;
	large_figures(&l);
	h->large_live = l.live;
	h->large_live_bytes = l.live_bytes;
	h->large_quarantined = l.quarantined;
	h->large_quarantined_bytes = l.quarantined_bytes;
	h->large_cached = l.cached;
	h->large_cached_bytes = l.cached_bytes;
	struct rampart_stats c;
	rampart_get_stats(&c);
	h->cache_hits = c.cache_hits;
	h->cache_misses = c.cache_misses;
	h->cache_waste_bytes = c.cache_waste_bytes;
	h->cache_evictions = c.cache_evictions;
	h->guard_fallbacks = c.guard_fallbacks;
	h->guard_latches = c.guard_latches;
	h->unmaps_refused = c.unmaps_refused;
	h->spans_leaked = c.spans_leaked;
}

/* "name": value pairs and table cells. */
static void kv(struct out *o, const char *sep, const char *name, unsigned long v)
{
	out_str(o, sep);
	out_str(o, "\"");
	out_str(o, name);
	out_str(o, "\":");
	out_num(o, v);
}

static void cell(struct out *o, unsigned long v, unsigned width)
{
	unsigned n = 0;
	unsigned long x = v;
	do n++; while (x /= 10);
	while (n++ < width) out_str(o, " ");
	out_num(o, v);
}

/* Bytes with a binary unit, one decimal: "12.5 MiB". */
static void bytes(struct out *o, unsigned long v)
{
	static const char *const unit[] = {" B", " KiB", " MiB", " GiB", " TiB"};
	unsigned u = 0;
	unsigned long scaled = v * 10; /* tenths */
	while (v >= 1024 && u < 4) {
		scaled = v * 10 / 1024;
		v /= 1024;
		u++;
	}
	out_fixed(o, u ? scaled : v, u ? 1 : 0);
	out_str(o, unit[u]);
}

static unsigned long hit_permille(const struct rampart_heap_stats *h)
{
	unsigned long n = h->cache_hits + h->cache_misses;
	return n ? h->cache_hits * 1000 / n : 0;
}

static void report_json(struct out *o, const struct rampart_heap_stats *h)
{
	out_str(o, "{\"rampart\":\"");
	out_str(o, h->version);
	out_str(o, "\"");
	kv(o, ",", "pid", (unsigned long)getpid());
	out_str(o, ",\"guard\":{\"backend\":\"");
	out_str(o, h->guard_backend);
	out_str(o, "\"");
	kv(o, ",", "fallbacks", h->guard_fallbacks);
	kv(o, ",", "latches", h->guard_latches);
	kv(o, ",", "unmaps_refused", h->unmaps_refused);
	kv(o, ",", "spans_leaked", h->spans_leaked);
	kv(o, ",", "guards_omitted", guard_guards_omitted());
	out_str(o, "},\"classes\":[");
	for (size_t c = 0; c < h->classes; c++) {
		const struct rampart_class_stats *k = &h->size_class[c];
		out_str(o, c ? ",\n" : "\n");
		kv(o, "{", "class", c);
		kv(o, ",", "slot_size", k->slot_size);
		kv(o, ",", "usable", k->usable);
		kv(o, ",", "live", k->live);
		kv(o, ",", "quarantined", k->quarantined);
		kv(o, ",", "free", k->free);
		kv(o, ",", "slabs_active", k->slabs_active);
		kv(o, ",", "slabs_empty", k->slabs_empty);
		kv(o, ",", "slabs_closed", k->slabs_closed);
		kv(o, ",", "bytes_open", k->bytes_open);
		kv(o, ",", "bytes_live", k->bytes_live);
		out_str(o, "}");
	}
	out_str(o, "],\n\"slab\":");
	kv(o, "{", "live", h->slab_live);
	kv(o, ",", "live_bytes", h->slab_live_bytes);
	kv(o, ",", "quarantined", h->slab_quarantined);
	kv(o, ",", "quarantined_bytes", h->slab_quarantined_bytes);
	kv(o, ",", "free_bytes", h->slab_free_bytes);
	kv(o, ",", "open_bytes", h->slab_open_bytes);
	kv(o, ",", "slabs_active", h->slabs_active);
	kv(o, ",", "slabs_empty", h->slabs_empty);
	kv(o, ",", "slabs_closed", h->slabs_closed);
	kv(o, ",", "arenas_open", slab_arenas_open());
	kv(o, ",", "arenas", ro.slab.arenas);
	out_str(o, "},\n\"large\":");
	kv(o, "{", "live", h->large_live);
	kv(o, ",", "live_bytes", h->large_live_bytes);
	kv(o, ",", "quarantined", h->large_quarantined);
	kv(o, ",", "quarantined_bytes", h->large_quarantined_bytes);
	kv(o, ",", "cached", h->large_cached);
	kv(o, ",", "cached_bytes", h->large_cached_bytes);
	out_str(o, "},\n\"cache\":");
	kv(o, "{", "hits", h->cache_hits);
	kv(o, ",", "misses", h->cache_misses);
	kv(o, ",", "hit_permille", hit_permille(h));
	kv(o, ",", "waste_bytes", h->cache_waste_bytes);
	kv(o, ",", "evictions", h->cache_evictions);
	out_str(o, "}}\n");
}

static void report_text(struct out *o, const struct rampart_heap_stats *h)
{
	out_str(o, "rampart ");
	out_str(o, h->version);
	out_str(o, " statistics (pid ");
	out_num(o, (unsigned long)getpid());
	out_str(o, ", guard backend ");
	out_str(o, h->guard_backend);
	out_str(o, ")\nsmall blocks, per size class in use:\n"
		   "class  slot size      live  quarantined       free   slabs: active  empty  closed      open memory\n");
	for (size_t c = 0; c < h->classes; c++) {
		const struct rampart_class_stats *k = &h->size_class[c];
		if (!k->live && !k->quarantined && !k->slabs_active && !k->slabs_empty && !k->slabs_closed) continue;
		cell(o, c, 5);
		cell(o, k->slot_size, 11);
		cell(o, k->live, 10);
		cell(o, k->quarantined, 13);
		cell(o, k->free, 11);
		cell(o, k->slabs_active, 16);
		cell(o, k->slabs_empty, 7);
		cell(o, k->slabs_closed, 8);
		out_str(o, "      ");
		bytes(o, k->bytes_open);
		out_str(o, "\n");
	}
	out_str(o, "small total: ");
	out_num(o, h->slab_live);
	out_str(o, " live (");
	bytes(o, h->slab_live_bytes);
	out_str(o, "), ");
	out_num(o, h->slab_quarantined);
	out_str(o, " quarantined, ");
	bytes(o, h->slab_open_bytes);
	out_str(o, " open in ");
	out_num(o, h->slabs_active + h->slabs_empty);
	out_str(o, " slabs (");
	out_num(o, h->slabs_empty);
	out_str(o, " empty), ");
	out_num(o, h->slabs_closed);
	out_str(o, " slabs closed; arenas open: ");
	out_num(o, slab_arenas_open());
	out_str(o, " of ");
	out_num(o, ro.slab.arenas);
	out_str(o, "\nlarge blocks: ");
	out_num(o, h->large_live);
	out_str(o, " live (");
	bytes(o, h->large_live_bytes);
	out_str(o, "), ");
	out_num(o, h->large_quarantined);
	out_str(o, " in quarantine (");
	bytes(o, h->large_quarantined_bytes);
	out_str(o, " of address space), ");
	out_num(o, h->large_cached);
	out_str(o, " cached (");
	bytes(o, h->large_cached_bytes);
	out_str(o, ")\nreuse cache: ");
	out_num(o, h->cache_hits);
	out_str(o, " hits, ");
	out_num(o, h->cache_misses);
	out_str(o, " misses (");
	out_fixed(o, hit_permille(h), 1);
	out_str(o, "% hits), ");
	bytes(o, h->cache_waste_bytes);
	out_str(o, " wasted in reused regions, ");
	out_num(o, h->cache_evictions);
	out_str(o, " evictions\nguard layer: ");
	out_str(o, h->guard_backend);
	out_str(o, " backend, ");
	out_num(o, h->guard_fallbacks);
	out_str(o, " fallbacks to mprotect, ");
	out_num(o, h->guard_latches);
	out_str(o, " latches, ");
	out_num(o, h->unmaps_refused);
	out_str(o, " unmaps refused, ");
	out_num(o, h->spans_leaked);
	out_str(o, " spans leaked, ");
	out_num(o, guard_guards_omitted());
	out_str(o, " guards left out near the VMA limit\n");
}

void stats_report(int fd, int json)
{
	struct rampart_heap_stats h;
	stats_gather(&h);
	char space[2048];
	struct out o = out_fd(fd, space, sizeof space);
	if (json) report_json(&o, &h);
	else report_text(&o, &h);
	out_flush(&o);
}

__attribute__((visibility("default"))) void rampart_get_heap_stats(struct rampart_heap_stats *out)
{
	if (!rampart_ready()) {
		*out = (struct rampart_heap_stats){.version = RAMPART_VERSION, .guard_backend = "none"};
		return;
	}
	stats_gather(out);
}

__attribute__((visibility("default"))) const char *rampart_version(void) { return RAMPART_VERSION; }
