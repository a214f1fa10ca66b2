/* stats.c — the public snapshots of the counters and of the heap, and the reports, all
 * generated from the lists in base/counters.h and front/stats.h. */
#define _GNU_SOURCE
#include "front/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rampart.h"
#include "base/report.h"
#include "base/text.h"
#include "guard/guard.h"
#include "guard/vma_budget.h"
#include "os/mte.h"
#include "front/init.h"
#include "large/large.h"
#include "slab/slab.h"

/* struct rampart_stats is the public face of RAMPART_COUNTERS: the header cannot include
 * src/, so it is written out there and held to the list here, field by field. */
#define STAT_AT_ITS_PLACE(id, field, heap, what)                                                       \
	_Static_assert(offsetof(struct rampart_stats, field) == STAT_##id * sizeof(unsigned long) &&     \
			       sizeof(((struct rampart_stats *)0)->field) == sizeof(unsigned long),        \
		       "struct rampart_stats (include/rampart.h): " #field                                 \
		       " must be an unsigned long at the place of STAT_" #id " in RAMPART_COUNTERS");
RAMPART_COUNTERS(STAT_AT_ITS_PLACE)
#undef STAT_AT_ITS_PLACE
_Static_assert(sizeof(struct rampart_stats) == STAT_PUBLIC_COUNT * sizeof(unsigned long),
	       "struct rampart_stats (include/rampart.h) must hold exactly the counters of RAMPART_COUNTERS");

__attribute__((visibility("default"))) void rampart_get_stats(struct rampart_stats *out)
{
#define STAT_READ(id, field, heap, what) out->field = stat_read(STAT_##id);
	RAMPART_COUNTERS(STAT_READ)
#undef STAT_READ
}

static int totals_by_name(const char *name, unsigned long *value);

__attribute__((visibility("default"))) int rampart_get_counter(const char *name, unsigned long *value)
{
	static const char *const names[STAT_COUNT] = {
#define STAT_NAME(id, field, heap, what) [STAT_##id] = #field,
		RAMPART_COUNTERS(STAT_NAME) RAMPART_COUNTERS_SINCE_1_0(STAT_NAME)
#undef STAT_NAME
	};
	if (!name || !value) {
		errno = EINVAL;
		return -1;
	}
	for (unsigned i = 0; i < STAT_COUNT; i++)
		if (!strcmp(names[i], name)) {
			*value = stat_read((enum stat_id)i);
			return 0;
		}
	return totals_by_name(name, value);
}

/* --- the heap's figures and the reports --- */

void stats_gather(struct rampart_heap_stats *h) { stats_gather_totals(h, NULL); }

/* Class c's figures into h and t, summed into their totals; with part, its blocks by
 * partition too (NULL: not asked). */
static void gather_class(unsigned c, struct rampart_heap_stats *h, struct heap_totals *t,
			 struct slab_part_figures *part)
{
	struct slab_class_figures f;
	slab_class_figures(c, &f, part);
	struct rampart_class_stats *k = &h->size_class[c];
	*k = (struct rampart_class_stats){
		.slot_size = f.slot_size, .usable = f.usable, .slab_bytes = f.slab_bytes,
		.live = f.live, .quarantined = f.quarantined, .free = f.free,
		.slabs_active = f.slabs_active, .slabs_empty = f.slabs_empty, .slabs_closed = f.slabs_closed,
		.bytes_open = (f.slabs_active + f.slabs_empty) * f.slab_bytes,
		.bytes_live = f.live * f.slot_size,
	};
	t->size_class[c] = (struct class_totals){.allocated = f.allocs, .freed = f.frees};
	t->allocated_blocks += f.allocs;
	t->allocated_bytes += f.allocs * f.slot_size;
	t->freed_blocks += f.frees;
	t->freed_bytes += f.frees * f.slot_size;
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

/* stats_gather_totals, and with part (an entry a class; NULL: not asked) each class's
 * blocks by partition. */
static void gather(struct rampart_heap_stats *h, struct heap_totals *t, struct slab_part_figures *part)
{
	*h = (struct rampart_heap_stats){.version = RAMPART_VERSION, .guard_backend = guard_backend_name()};
	struct heap_totals unused;
	if (!t) t = &unused;
	*t = (struct heap_totals){0};
	_Static_assert(SC_COUNT <= RAMPART_STATS_CLASSES, "RAMPART_STATS_CLASSES too small");
	h->classes = SC_COUNT;
	for (unsigned c = 0; c < SC_COUNT; c++) gather_class(c, h, t, part ? &part[c] : NULL);
	h->slab_free_bytes = h->slab_open_bytes - MIN(h->slab_open_bytes, h->slab_live_bytes + h->slab_quarantined_bytes);
	struct large_figures l;
	large_figures(&l);
	h->large_live = l.live;
	h->large_live_bytes = l.live_bytes;
	h->large_quarantined = l.quarantined;
	h->large_quarantined_bytes = l.quarantined_bytes;
	h->large_cached = l.cached;
	h->large_cached_bytes = l.cached_bytes;
	t->large_allocated = l.allocs;
	t->large_freed = l.frees;
	t->allocated_blocks += l.allocs;
	t->allocated_bytes += l.alloc_bytes;
	t->freed_blocks += l.frees;
	t->freed_bytes += l.freed_bytes;
	/* The peaks are the process-wide total's, which may lag behind the classes by a step
	 * each (slab/class_tally.h): never less than what lives now, counted exactly here. */
	t->peak_blocks = MAX(stat_read(STAT_HEAP_BLOCKS_PEAK), h->slab_live + h->large_live);
	t->peak_bytes = MAX(stat_read(STAT_HEAP_BYTES_PEAK), h->slab_live_bytes + h->large_live_bytes);
	struct rampart_stats c;
	rampart_get_stats(&c);
#define IN_HEAP(copy) copy
#define NOT_IN_HEAP(copy)
#define STAT_COPY(id, field, heap, what) heap(h->field = c.field;)
	RAMPART_COUNTERS(STAT_COPY)
#undef STAT_COPY
#undef NOT_IN_HEAP
#undef IN_HEAP
}

void stats_gather_totals(struct rampart_heap_stats *h, struct heap_totals *t) { gather(h, t, NULL); }

void stats_gather_report(struct stats_figures *f, struct slab_part_figures *part)
{
	gather(&f->h, &f->t, part);
	f->part = part;
	size_t resident[SC_COUNT];
	_Static_assert(SC_COUNT <= sizeof f->resident / sizeof f->resident[0], "a resident figure per class");
	memset(f->resident, 0, sizeof f->resident);
	f->slab_resident = 0;
	if (!slab_resident(resident)) return;
	for (unsigned c = 0; c < SC_COUNT; c++) {
		f->resident[c] = resident[c];
		f->slab_resident += resident[c];
	}
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

/* The same right-aligned in width. */
static void bytes_cell(struct out *o, unsigned long v, size_t width)
{
	char space[32];
	struct out b = out_string(space, sizeof space);
	bytes(&b, v);
	for (size_t n = strlen(space); n < width; n++) out_str(o, " ");
	out_str(o, space);
}

/* The values of RAMPART_HEAP_FIGURES that are not fields of the heap stats. */
static unsigned long stats_hit_permille(const struct rampart_heap_stats *h)
{
	unsigned long n = h->cache_hits + h->cache_misses;
	return n ? h->cache_hits * 1000 / n : 0;
}
static unsigned long stats_arenas_open(void) { return slab_arenas_open(); }
static unsigned long stats_arenas(void) { return roots.slab.arenas; }
/* The option partitions: 1 says none (no class then has partition_live arrays). */
static unsigned long stats_partitions(void) { return roots.opt.partitions; }
static unsigned long stats_guards_omitted(void) { return vma_omitted(); }
static long stats_vmas(void) { return vma_count(); }
static unsigned long stats_pages_returned(void) { return stat_read(STAT_SLAB_PAGES_RETURNED); }
/* Slab memory tagged under arm64 MTE, and how tags are checked: "sync", "async" or "off". */
static const char *stats_memory_tagging(void) { return mte_state_name(roots.mte); }
static const char *stats_profile(void) { return roots.opt.profile == PROFILE_LIGHT ? "light" : "strong"; }

enum stat_group {
#define GROUP_ENUM(group, json, text) GROUP_##group,
	RAMPART_STAT_GROUPS(GROUP_ENUM)
#undef GROUP_ENUM
	GROUP_COUNT
};
static const struct {
	const char *json, *text;
} group_names[GROUP_COUNT] = {
#define GROUP_NAME(group, json, text) {json, text},
	RAMPART_STAT_GROUPS(GROUP_NAME)
#undef GROUP_NAME
};

enum figure_kind { FIGURE_NUM, FIGURE_BYTES, FIGURE_PERMILLE, FIGURE_STR };
struct figure {
	enum stat_group group;
	enum figure_kind kind;
	const char *json, *text, *xml, *xml_attr;
};
static const struct figure figures[] = {
#define FIGURE(group, kind, value, json, text, xml, attr) {GROUP_##group, FIGURE_##kind, json, text, xml, attr},
	RAMPART_HEAP_FIGURES(FIGURE)
#undef FIGURE
};
#define FIGURE_COUNT (sizeof figures / sizeof figures[0])

struct figure_value {
	unsigned long n;
	const char *s;
};
#define VALUE_NUM(v) {.n = (v)}
#define VALUE_BYTES(v) {.n = (v)}
#define VALUE_PERMILLE(v) {.n = (v)}
#define VALUE_STR(v) {.s = (v)}

static void figure_values(const struct stats_figures *f, struct figure_value v[FIGURE_COUNT])
{
	const struct rampart_heap_stats *h = &f->h;
	const struct heap_totals *t = &f->t;
	size_t i = 0;
#define FIGURE_VALUE(group, kind, value, json, text, xml, attr) v[i++] = (struct figure_value)VALUE_##kind(value);
	RAMPART_HEAP_FIGURES(FIGURE_VALUE)
#undef FIGURE_VALUE
}

/* rampart_get_counter's answer for a figure of the report's "totals" group (the JSON
 * key): gathered as the report gathers it, a walk over the classes; 0 before start-up
 * (nothing allocated yet) and under passthrough. */
static int totals_by_name(const char *name, unsigned long *value)
{
	for (size_t i = 0; i < FIGURE_COUNT; i++) {
		if (figures[i].group != GROUP_TOTAL || strcmp(figures[i].json, name)) continue;
		*value = 0;
		if (!rampart_ready()) return 0;
		struct stats_figures f = {0}; /* no resident memory: not a total */
		stats_gather_totals(&f.h, &f.t);
		struct figure_value v[FIGURE_COUNT];
		figure_values(&f, v);
		*value = v[i].n;
		return 0;
	}
	errno = ENOENT;
	return -1;
}

/* ,"name":{"key":value,...} */
static void json_group(struct out *o, const char *lead, enum stat_group g, const struct figure_value *v)
{
	out_str(o, lead);
	out_str(o, "\"");
	out_str(o, group_names[g].json);
	out_str(o, "\":");
	const char *sep = "{";
	for (size_t i = 0; i < FIGURE_COUNT; i++) {
		if (figures[i].group != g || !figures[i].json) continue;
		if (figures[i].kind == FIGURE_STR) {
			out_str(o, sep);
			out_str(o, "\"");
			out_str(o, figures[i].json);
			out_str(o, "\":\"");
			out_str(o, v[i].s);
			out_str(o, "\"");
		} else {
			kv(o, sep, figures[i].json, v[i].n);
		}
		sep = ",";
	}
}

/* ,"key":[n,...] for each figure of RAMPART_PARTITION_FIGURES, an entry a partition;
 * nothing for a class that keeps no partitions. */
static void json_partitions(struct out *o, const struct slab_part_figures *pf)
{
	if (!pf->partitions) return;
#define PART_JSON(value, json)                                  \
	out_str(o, ",\"" json "\":");                           \
	for (unsigned p = 0; p < pf->partitions; p++) {         \
		out_str(o, p ? "," : "[");                      \
		out_num(o, value);                              \
	}                                                       \
	out_str(o, "]");
	RAMPART_PARTITION_FIGURES(PART_JSON)
#undef PART_JSON
}

static void report_json(struct out *o, const struct stats_figures *f)
{
	const struct rampart_heap_stats *h = &f->h;
	const struct heap_totals *t = &f->t;
	struct figure_value v[FIGURE_COUNT];
	figure_values(f, v);
	out_str(o, "{\"rampart\":\"");
	out_str(o, h->version);
	out_str(o, "\",\"profile\":\"");
	out_str(o, stats_profile());
	out_str(o, "\"");
	kv(o, ",", "pid", (unsigned long)getpid());
	json_group(o, ",", GROUP_GUARD, v);
	out_str(o, "},\"classes\":[");
	for (size_t c = 0; c < h->classes; c++) {
		const struct rampart_class_stats *k = &h->size_class[c];
		const struct class_totals *kt = &t->size_class[c];
		out_str(o, c ? ",\n" : "\n");
		kv(o, "{", "class", c);
#define CLASS_JSON(value, json, xml, text) kv(o, ",", json, value);
		RAMPART_CLASS_FIGURES(CLASS_JSON)
#undef CLASS_JSON
		if (f->part) json_partitions(o, &f->part[c]);
		out_str(o, "}");
	}
	out_str(o, "]");
	for (enum stat_group g = 0; g < GROUP_COUNT; g++) {
		if (g == GROUP_GUARD) continue; /* first, above */
		json_group(o, ",\n", g, v);
		out_str(o, "}");
	}
	out_str(o, "}\n");
}

/* A table's title, right-aligned in width. */
static void title(struct out *o, const char *s, size_t width)
{
	for (size_t n = strlen(s); n < width; n++) out_str(o, " ");
	out_str(o, s);
}

static void report_text(struct out *o, const struct stats_figures *f)
{
	const struct rampart_heap_stats *h = &f->h;
	const struct heap_totals *t = &f->t;
	struct figure_value v[FIGURE_COUNT];
	figure_values(f, v);
	out_str(o, "rampart ");
	out_str(o, h->version);
	out_str(o, " statistics (pid ");
	out_num(o, (unsigned long)getpid());
	out_str(o, ", profile ");
	out_str(o, stats_profile());
	out_str(o, ", guard backend ");
	out_str(o, h->guard_backend);
	out_str(o, ")\nsmall blocks, per size class in use:\n");
	title(o, "class", 5);
#define COL(width, name) title(o, name, width);
#define COL_BYTES(width, name) title(o, name, width);
#define NO_COL
#define CLASS_TITLE(value, json, xml, text) text
	RAMPART_CLASS_FIGURES(CLASS_TITLE)
#undef CLASS_TITLE
#undef COL
#undef COL_BYTES
	out_str(o, "\n");
	for (size_t c = 0; c < h->classes; c++) {
		const struct rampart_class_stats *k = &h->size_class[c];
		const struct class_totals *kt = &t->size_class[c];
		if (!k->live && !k->quarantined && !k->slabs_active && !k->slabs_empty && !k->slabs_closed && !kt->allocated)
			continue;
		cell(o, c, 5);
#define COL(width, name) cell(o, figure, width);
#define COL_BYTES(width, name) bytes_cell(o, figure, width);
#define CLASS_CELL(value, json, xml, text) { unsigned long figure = value; (void)figure; text }
		RAMPART_CLASS_FIGURES(CLASS_CELL)
#undef CLASS_CELL
#undef COL
#undef COL_BYTES
#undef NO_COL
		out_str(o, "\n");
	}
	for (enum stat_group g = 0; g < GROUP_COUNT; g++) {
		out_str(o, group_names[g].text);
		for (size_t i = 0; i < FIGURE_COUNT; i++) {
			if (figures[i].group != g || !figures[i].text) continue;
			switch (figures[i].kind) {
			case FIGURE_NUM: out_num(o, v[i].n); break;
			case FIGURE_BYTES: bytes(o, v[i].n); break;
			case FIGURE_PERMILLE: out_fixed(o, v[i].n, 1); break;
			case FIGURE_STR: out_str(o, v[i].s); break;
			}
			out_str(o, figures[i].text);
		}
	}
}

/* After glibc's malloc_info, with rampart's own elements; the totals are glibc's. */
void stats_report_xml(FILE *fp, const struct stats_figures *f)
{
	const struct rampart_heap_stats *h = &f->h;
	const struct heap_totals *t = &f->t;
	struct figure_value v[FIGURE_COUNT];
	figure_values(f, v);
	fprintf(fp, "<malloc version=\"rampart-1\">\n<rampart version=\"%s\" profile=\"%s\" guard=\"%s\"/>\n<heap nr=\"0\">\n<sizes>\n",
		h->version, stats_profile(), h->guard_backend);
	for (size_t c = 0; c < h->classes; c++) {
		const struct rampart_class_stats *k = &h->size_class[c];
		const struct class_totals *kt = &t->size_class[c];
		fprintf(fp, "  <class index=\"%zu\"", c);
#define CLASS_XML(value, json, xml, text) fprintf(fp, " " xml "=\"%zu\"", (size_t)(value));
		RAMPART_CLASS_FIGURES(CLASS_XML)
#undef CLASS_XML
		fputs("/>\n", fp);
	}
	fputs("</sizes>\n", fp);
	const char *open = NULL; /* the element being written */
	for (size_t i = 0; i < FIGURE_COUNT; i++) {
		if (!figures[i].xml) continue;
		if (!open || strcmp(open, figures[i].xml)) {
			if (open) fputs("/>\n", fp);
			open = figures[i].xml;
			fprintf(fp, "<%s", open);
		}
		if (figures[i].kind == FIGURE_STR) fprintf(fp, " %s=\"%s\"", figures[i].xml_attr, v[i].s);
		else fprintf(fp, " %s=\"%lu\"", figures[i].xml_attr, v[i].n);
	}
	if (open) fputs("/>\n", fp);
	fprintf(fp, "<total type=\"mmap\" count=\"%zu\" size=\"%zu\"/>\n"
		"<system type=\"current\" size=\"%zu\"/>\n"
		"<aspace type=\"total\" size=\"%zu\"/>\n"
		"</heap>\n</malloc>\n",
		h->large_live, h->large_live_bytes, h->slab_open_bytes + h->large_live_bytes,
		h->slab_open_bytes + h->large_live_bytes);
}

/* A report's figures gathered (with part, by partition too: room for SC_COUNT classes),
 * then written to fd with no lock held. */
static void report_to(int fd, bool json, struct slab_part_figures *part)
{
	struct stats_figures f;
	stats_gather_report(&f, part);
	char space[2048];
	struct out o = out_fd(fd, space, sizeof space);
	if (json) report_json(&o, &f);
	else report_text(&o, &f);
	out_flush(&o);
}

/* The JSON report, with each class's blocks by partition: out of line, so that their
 * room is on the JSON report's stack alone, not on malloc_stats' (any thread's). */
static noinline void report_json_by_partition(int fd)
{
	struct slab_part_figures part[SC_COUNT];
	report_to(fd, true, part);
}

void stats_report(int fd, int json)
{
	if (json) report_json_by_partition(fd);
	else report_to(fd, false, NULL);
}

/* stats_file's descriptor for the report at exit: a regular file only. The file is
 * opened only now: programs such as ls and sort close stderr before exit, and a file
 * opened at start-up would be a descriptor the program never asked for. A path set in
 * /etc/rampart.conf applies to root daemons, so the last component is not followed
 * (O_NOFOLLOW: a link planted there would append the report anywhere), and nothing can
 * block (O_NONBLOCK: a FIFO without a reader would hang the exit). Answers the
 * descriptor; -1 when the path names something that is no regular file (warned: no
 * report at all); STDERR_FILENO when it cannot be opened otherwise (said under verbose=1). */
static int stats_file_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0) {
		int err = errno;
		/* ELOOP: the last component is a symbolic link; ENXIO: a FIFO with no reader, a
		 * socket or a device without its driver; EISDIR: a directory. */
		if (err == ELOOP || err == ENXIO || err == EISDIR) {
			report_warn(WARN_STATS_FILE, path);
			return -1;
		}
		if (roots.opt.verbose) {
			char space[256];
			struct out w = out_fd(STDERR_FILENO, space, sizeof space);
			out_str(&w, "rampart: stats_file ");
			out_str(&w, path);
			out_str(&w, ": cannot be opened: ");
			report_put_errno(&w, err);
			out_str(&w, "; the report goes to stderr\n");
			out_flush(&w);
		}
		return STDERR_FILENO;
	}
	struct stat sb;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) { /* a FIFO with a reader, a device, ... */
		close(fd);
		report_warn(WARN_STATS_FILE, path);
		return -1;
	}
	return fd;
}

void stats_report_at_exit(void)
{
	int saved = errno;
	int fd = STDERR_FILENO;
	bool own = roots.opt.stats_file[0] && !getauxval(AT_SECURE);
	if (own) fd = stats_file_open(roots.opt.stats_file);
	if (fd >= 0) stats_report(fd, roots.opt.stats == STATS_JSON);
	/* The descriptor opened may be 0, 1 or 2 in a program that closed those. */
	if (own && fd >= 0 && fd != STDERR_FILENO) close(fd);
	errno = saved;
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
