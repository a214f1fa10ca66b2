/* test_stats — the cumulative and peak figures (issue 51): allocations and frees per size
 * class and in all, their bytes, the most blocks and bytes live at once; by name through
 * rampart_get_counter, and in the text, JSON and malloc_info reports; a class's resident
 * memory beside its open memory, and the pages of free slots given back (issue 52), in
 * the text and JSON reports and by the counter; the JSON report's blocks by call-site
 * partition (issue 49), and its shape with partitions=1. Each check is a difference over
 * what the test itself did, or a count, in classes it alone uses. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../all_arenas.h"
#include "../check_main.h"
#include "rampart.h"
#include "base/partition.h"
#include "front/stats.h"
#include "slab/class_tally.h"
#include "slab/sizeclass.h"
#include "slab/slab_class.h"

/* Sizes no other code of this process asks for: 3,000 bytes (the 3,072-byte class),
 * 20,000 bytes (a class of 20,480), 6,000 bytes (the 6,144-byte class, by partition),
 * 12,000 bytes (the 12,288-byte class, three pages a slot: resident memory) and 1 MiB
 * blocks (large). */
#define SMALL 3000
#define MID 20000
#define PARTED 6000
#define PAGED 12000
#define LARGE ((size_t)1 << 20)

static struct rampart_heap_stats h;
static struct heap_totals t;

/* Check's assertions allocate (each records where it is), so none may run between two
 * gatherings whose difference is asserted: checks there only note the first line that
 * failed, asserted after. */
static int bad_line;
#define QUIET_CHECK(cond) \
	do { \
		if (!(cond) && !bad_line) bad_line = __LINE__; \
	} while (0)
#define QUIET_DONE() ck_assert_msg(!bad_line, "failed at line %d", bad_line)

/* Bytes the large blocks account for in the totals: what is left after the classes'. */
static size_t large_bytes(const struct heap_totals *x, bool freed)
{
	size_t slab = 0;
	for (size_t c = 0; c < h.classes; c++)
		slab += (freed ? x->size_class[c].freed : x->size_class[c].allocated) * h.size_class[c].slot_size;
	return (freed ? x->freed_bytes : x->allocated_bytes) - slab;
}

static void gather(struct heap_totals *out)
{
	stats_gather_totals(&h, out);
}

/* How far the process-wide total may lag behind the classes: a step of each class in
 * use, in blocks and in bytes (slab/class_tally.h). */
static void lag(const struct heap_totals *x, size_t *blocks, size_t *bytes)
{
	*blocks = *bytes = 0;
	for (size_t c = 0; c < h.classes; c++) {
		if (!x->size_class[c].allocated) continue;
		size_t slot = h.size_class[c].slot_size;
		size_t step = MAX(TALLY_STEP_BYTES / slot, (size_t)TALLY_MIN_STEP);
		*blocks += step;
		*bytes += step * slot;
	}
}

/* Every block allocated and not freed is live: exactly, with one thread (no free waits
 * in a batch). */
static void assert_balanced(void)
{
	ck_assert_uint_eq(t.allocated_blocks - t.freed_blocks, h.slab_live + h.large_live);
	ck_assert_uint_eq(t.allocated_bytes - t.freed_bytes, h.slab_live_bytes + h.large_live_bytes);
	size_t sum_alloc = t.large_allocated, sum_freed = t.large_freed;
	for (size_t c = 0; c < h.classes; c++) {
		sum_alloc += t.size_class[c].allocated;
		sum_freed += t.size_class[c].freed;
		ck_assert_uint_eq(t.size_class[c].allocated - t.size_class[c].freed, h.size_class[c].live);
	}
	ck_assert_uint_eq(sum_alloc, t.allocated_blocks);
	ck_assert_uint_eq(sum_freed, t.freed_blocks);
	ck_assert_uint_ge(t.peak_blocks, h.slab_live + h.large_live);
	ck_assert_uint_ge(t.peak_bytes, h.slab_live_bytes + h.large_live_bytes);
}

/* N blocks allocated, M of them freed: the class's counts, the totals, their bytes. */
START_TEST(test_class_counts)
{
	enum { N = 2000, M = 1500 };
	static void *p[N];
	struct heap_totals before;
	unsigned c = sc_of(SMALL);
	size_t slot = sc_size(c);
	gather(&before);
	for (int i = 0; i < N; i++) QUIET_CHECK(p[i] = malloc(SMALL));
	gather(&t);
	QUIET_CHECK(t.size_class[c].allocated - before.size_class[c].allocated == N);
	QUIET_CHECK(t.size_class[c].freed == before.size_class[c].freed);
	QUIET_CHECK(t.allocated_blocks - before.allocated_blocks == N);
	QUIET_CHECK(t.allocated_bytes - before.allocated_bytes == (size_t)N * slot);
	QUIET_CHECK(t.freed_blocks == before.freed_blocks);
	size_t live_at_peak = h.slab_live + h.large_live, bytes_at_peak = h.slab_live_bytes + h.large_live_bytes;
	for (int i = 0; i < M; i++) free(p[i]);
	gather(&t);
	QUIET_DONE();
	assert_balanced();
	ck_assert_uint_eq(t.size_class[c].allocated - before.size_class[c].allocated, N);
	ck_assert_uint_eq(t.size_class[c].freed - before.size_class[c].freed, M);
	/* The assertions since the first gathering allocated and freed blocks of their own,
	 * in other classes: the class's counts are exact, the totals at least as much. */
	ck_assert_uint_ge(t.freed_blocks - before.freed_blocks, M);
	ck_assert_uint_ge(t.freed_bytes - before.freed_bytes, (size_t)M * slot);
	/* The peak is the N blocks', to within the total's lag, however far they fell. */
	size_t lag_blocks, lag_bytes;
	lag(&t, &lag_blocks, &lag_bytes);
	ck_assert_msg(t.peak_blocks + lag_blocks >= live_at_peak && t.peak_blocks <= live_at_peak + lag_blocks,
		      "peak %zu blocks, %zu live at the peak, lag %zu", t.peak_blocks, live_at_peak, lag_blocks);
	ck_assert_msg(t.peak_bytes + lag_bytes >= bytes_at_peak && t.peak_bytes <= bytes_at_peak + lag_bytes,
		      "peak %zu bytes, %zu live at the peak, lag %zu", t.peak_bytes, bytes_at_peak, lag_bytes);
	for (int i = M; i < N; i++) free(p[i]);
	gather(&t);
	assert_balanced();
}
END_TEST

/* A realloc that moves a block between classes frees one and allocates the other; one
 * that stays does neither. */
START_TEST(test_realloc_counts)
{
	struct heap_totals before;
	unsigned small = sc_of(SMALL), mid = sc_of(MID);
	gather(&before);
	char *p = malloc(SMALL);
	p = realloc(p, SMALL - 100); /* the same class: in place */
	p = realloc(p, MID);         /* moved */
	gather(&t);
	ck_assert_ptr_nonnull(p);
	assert_balanced();
	ck_assert_uint_eq(t.size_class[small].allocated - before.size_class[small].allocated, 1);
	ck_assert_uint_eq(t.size_class[small].freed - before.size_class[small].freed, 1);
	ck_assert_uint_eq(t.size_class[mid].allocated - before.size_class[mid].allocated, 1);
	ck_assert_uint_eq(t.size_class[mid].freed - before.size_class[mid].freed, 0);
	free(p);
	gather(&t);
	ck_assert_uint_eq(t.size_class[mid].freed - before.size_class[mid].freed, 1);
	assert_balanced();
}
END_TEST

/* Large blocks: each allocation and free counted, and their pages; a resize frees the
 * old size and allocates the new one, a block neither. */
START_TEST(test_large_counts)
{
	struct heap_totals before;
	gather(&before);
	size_t peak_before = before.peak_bytes;
	char *a = malloc(LARGE), *b = malloc(LARGE), *c = malloc(LARGE);
	ck_assert(a && b && c);
	gather(&t);
	assert_balanced();
	ck_assert_uint_eq(t.large_allocated - before.large_allocated, 3);
	ck_assert_uint_eq(large_bytes(&t, false) - large_bytes(&before, false), 3 * LARGE);
	/* Large blocks tell the process-wide total at once. */
	ck_assert_uint_ge(t.peak_bytes, h.slab_live_bytes + h.large_live_bytes);
	free(a);
	free(b);
	c = realloc(c, 3 * LARGE);
	ck_assert_ptr_nonnull(c);
	gather(&t);
	assert_balanced();
	ck_assert_uint_eq(t.large_allocated - before.large_allocated, 3);
	ck_assert_uint_eq(t.large_freed - before.large_freed, 2);
	/* The resize freed 1 MiB and allocated 3. */
	ck_assert_uint_eq(large_bytes(&t, false) - large_bytes(&before, false), 3 * LARGE + 3 * LARGE);
	ck_assert_uint_eq(large_bytes(&t, true) - large_bytes(&before, true), 2 * LARGE + LARGE);
	ck_assert_uint_ge(t.peak_bytes, peak_before);
	free(c);
	gather(&t);
	assert_balanced();
	ck_assert_uint_eq(t.large_freed - before.large_freed, 3);
}
END_TEST

/* Frees from another thread (another arena's: a batch) count when their batch enters
 * the quarantine, at the latest when the thread exits. */
enum { CROSS = 300 };
static void *cross[CROSS];
static void *free_all(void *arg)
{
	(void)arg;
	free(malloc(SMALL)); /* this thread's arena set up */
	for (int i = 0; i < CROSS; i++) free(cross[i]);
	return NULL;
}

START_TEST(test_cross_thread_frees)
{
	struct heap_totals before;
	unsigned c = sc_of(SMALL);
	gather(&before);
	for (int i = 0; i < CROSS; i++) QUIET_CHECK(cross[i] = malloc(SMALL));
	pthread_t th;
	QUIET_CHECK(!pthread_create(&th, NULL, free_all, NULL));
	QUIET_CHECK(!pthread_join(th, NULL));
	gather(&t);
	QUIET_DONE();
	ck_assert_uint_eq(t.size_class[c].allocated - before.size_class[c].allocated, CROSS + 1);
	ck_assert_uint_eq(t.size_class[c].freed - before.size_class[c].freed, CROSS + 1);
	assert_balanced();
}
END_TEST

/* By name: the totals' JSON keys and the process-wide gauges. */
START_TEST(test_by_name)
{
	void *keep = malloc(SMALL);
	unsigned long v = 7;
	static const char *const names[] = {"allocated_blocks", "allocated_bytes", "freed_blocks",
					    "freed_bytes",      "peak_blocks",     "peak_bytes"};
	unsigned long got[sizeof names / sizeof *names];
	int rc[sizeof names / sizeof *names], err[sizeof names / sizeof *names];
	gather(&t);
	const size_t want[] = {t.allocated_blocks, t.allocated_bytes, t.freed_blocks,
			       t.freed_bytes,      t.peak_blocks,     t.peak_bytes};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) { /* nothing allocated meanwhile */
		errno = 1234;
		rc[i] = rampart_get_counter(names[i], &got[i]);
		err[i] = errno;
	}
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		ck_assert_int_eq(rc[i], 0);
		ck_assert_int_eq(err[i], 1234);
		ck_assert_msg(got[i] == want[i], "%s: %lu, gathered %zu", names[i], got[i], want[i]);
	}
	ck_assert_int_eq(rampart_get_counter("heap_bytes_peak", &v), 0);
	ck_assert_uint_le(v, t.peak_bytes);
	ck_assert_int_eq(rampart_get_counter("heap_blocks_now", &v), 0);
	ck_assert_int_eq(rampart_get_counter("allocated", &v), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(rampart_get_counter("totals", &v), -1);
	ck_assert_int_eq(errno, ENOENT);
	free(keep);
}
END_TEST

/* The three reports carry the per-class and the total figures. */
static char text_out[1 << 16];
static void text_report(int json)
{
	/* A memory file, not a pipe: a report longer than a pipe holds (64 KiB) would block its
	 * writer with nobody reading. Between a gathering and the report: no allocation. */
	int fd = memfd_create("report", MFD_CLOEXEC);
	QUIET_CHECK(fd >= 0);
	stats_report(fd, json);
	size_t len = 0;
	for (ssize_t r; len < sizeof text_out - 1 &&
			(r = pread(fd, text_out + len, sizeof text_out - 1 - len, (off_t)len)) != 0;)
		if (r > 0) len += (size_t)r;
		else if (errno != EINTR) break;
	text_out[len] = 0;
	QUIET_CHECK(lseek(fd, 0, SEEK_END) < (off_t)sizeof text_out); /* nothing cut off */
	close(fd);
}

START_TEST(test_reports)
{
	void *p = malloc(SMALL);
	char want[160];
	unsigned c = sc_of(SMALL);
	gather(&t);
	text_report(0);
	QUIET_DONE();
	snprintf(want, sizeof want, "all blocks: %zu allocated (", t.allocated_blocks);
	ck_assert_msg(strstr(text_out, want), "'%s' not in '%s'", want, text_out);
	ck_assert_msg(strstr(text_out, "    allocated        freed   slabs: active"), "'%s'", text_out);
	ck_assert_msg(strstr(text_out, "; most live at once: "), "'%s'", text_out);
	gather(&t);
	text_report(1);
	QUIET_DONE();
	snprintf(want, sizeof want, "\"totals\":{\"allocated_blocks\":%zu,", t.allocated_blocks);
	ck_assert_msg(strstr(text_out, want), "'%s' not in '%s'", want, text_out);
	snprintf(want, sizeof want, "{\"class\":%u,", c);
	const char *row = strstr(text_out, want);
	ck_assert_ptr_nonnull(row);
	snprintf(want, sizeof want, ",\"allocated\":%zu,\"freed\":%zu,", t.size_class[c].allocated,
		 t.size_class[c].freed);
	ck_assert_msg(strstr(row, want) && strstr(row, want) < strchr(row, '}'), "'%s' not in '%.300s'", want, row);
	static char x[1 << 16];
	FILE *f = fmemopen(x, sizeof x - 1, "w"); /* its own allocation before the gathering */
	ck_assert_ptr_nonnull(f);
	gather(&t);
	int rc = malloc_info(0, f);
	fclose(f);
	ck_assert_int_eq(rc, 0);
	snprintf(want, sizeof want, "<totals allocated_blocks=\"%zu\" ", t.allocated_blocks);
	ck_assert_msg(strstr(x, want), "'%s' not in '%s'", want, x);
	snprintf(want, sizeof want, "<class index=\"%u\" size=\"%zu\"", c, sc_size(c));
	row = strstr(x, want);
	ck_assert_ptr_nonnull(row);
	snprintf(want, sizeof want, " allocated=\"%zu\" freed=\"%zu\" ", t.size_class[c].allocated,
		 t.size_class[c].freed);
	ck_assert_msg(strstr(row, want) && strstr(row, want) < strchr(row, '\n'), "'%s' not in '%.300s'", want, row);
	free(p);
}
END_TEST

/* --- reading a JSON report --------------------------------------------------------- */

/* The row of class c in a JSON report (text_out), up to its closing brace. */
static char row_out[4096];
static const char *class_row(unsigned c)
{
	char want[32];
	snprintf(want, sizeof want, "{\"class\":%u,", c);
	const char *at = strstr(text_out, want);
	ck_assert_msg(at != NULL, "no row of class %u in '%.300s'", c, text_out);
	size_t n = strcspn(at, "}");
	ck_assert_uint_lt(n, sizeof row_out);
	memcpy(row_out, at, n);
	row_out[n] = 0;
	return row_out;
}

/* The number after "key": in json; -1 when the key is not there. */
static long json_num(const char *json, const char *key)
{
	char want[64];
	snprintf(want, sizeof want, "\"%s\":", key);
	const char *at = strstr(json, want);
	return at ? strtol(at + strlen(want), NULL, 10) : -1;
}

/* --- resident memory and pages given back ------------------------------------------ */

/* A text report's byte figure ("12.5 MiB") at *at, in bytes, and the most its rounding
 * (tenths of its unit, cut) may have taken off; *at moves past it. */
static double text_bytes(const char **at, double *cut)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB"};
	char *end;
	double v = strtod(*at, &end);
	while (*end == ' ') end++;
	double scale = 1;
	for (size_t u = 0; u < sizeof units / sizeof *units; u++, scale *= 1024) {
		size_t n = strlen(units[u]);
		if (!strncmp(end, units[u], n) && (end[n] == ' ' || end[n] == '\n' || end[n] == ')')) {
			*at = end + n;
			*cut = u ? scale / 10 : 0;
			return v * scale;
		}
	}
	ck_abort_msg("no byte figure at '%.40s'", *at);
	return 0;
}

/* Sorted by address without qsort, which may allocate its buffer: a block of another class
 * freed then would add its own pages to those counted. */
static void sort_blocks(void **p, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && (uintptr_t)p[j - 1] > (uintptr_t)p[j]; j--) {
			void *x = p[j];
			p[j] = p[j - 1];
			p[j - 1] = x;
		}
}

/* ALLOC blocks of 12,000 bytes written whole, every other one by address freed (each slab
 * keeps a live block, so none empties or closes), and malloc_trim, which gives back the
 * pages of the freed slots that left the slot quarantine at once. Then, in the JSON and
 * text reports: the class's live slots are the kept ones; its resident memory holds
 * them, at most the slots still quarantined besides, and lies below its open memory,
 * which still counts the freed slots; the pages given back are the counter's, and grew by
 * exactly the freed slots' pages less the quarantined ones' (all of them under light,
 * which has no slot quarantine). Between the first trim and the reports: no assertion
 * (Check's allocate, and their blocks' pages could go back too). */
START_TEST(test_resident_and_returned)
{
	enum { ALLOC = 512, FREED = ALLOC / 2 };
	static void *p[ALLOC];
	static char text[sizeof text_out];
	unsigned c = sc_of(PAGED);
	size_t slot = sc_size(c), page = (size_t)sysconf(_SC_PAGESIZE);
	for (int i = 0; i < ALLOC; i++) {
		QUIET_CHECK(p[i] = malloc(PAGED));
		if (p[i]) memset(p[i], 'x', PAGED);
	}
	QUIET_DONE();
	sort_blocks(p, ALLOC);
	malloc_trim(0); /* what other classes have to give goes now, before the count */
	unsigned long before = 0, after = 0;
	QUIET_CHECK(!rampart_get_counter("slab_pages_returned", &before));
	for (int i = 1; i < ALLOC; i += 2) free(p[i]);
	malloc_trim(0);
	QUIET_CHECK(!rampart_get_counter("slab_pages_returned", &after));
	text_report(0);
	memcpy(text, text_out, sizeof text);
	text_report(1);
	QUIET_DONE();

	/* JSON: exact figures. */
	const char *row = class_row(c);
	long live = json_num(row, "live"), quarantined = json_num(row, "quarantined");
	long open = json_num(row, "bytes_open"), resident = json_num(row, "bytes_resident");
	long returned = json_num(text_out, "pages_returned");
	printf("%zu-byte slots, %d of %d freed, trimmed: %ld live, %ld quarantined, %ld bytes open, %ld resident; "
	       "%lu pages given back (%ld in the report)\n",
	       slot, FREED, ALLOC, live, quarantined, open, resident, after - before, returned);
	ck_assert_int_eq(live, ALLOC - FREED);
	ck_assert_int_ge(quarantined, 0);
	ck_assert_int_ge(resident, live * (long)slot);
	ck_assert_int_le(resident, (live + quarantined) * (long)slot);
	ck_assert_int_lt(resident, open);
	ck_assert_int_eq(returned, (long)after);
	if (slot % page == 0) /* the freed slots' own pages, no neighbour's */
		ck_assert_uint_eq(after - before, (FREED - (unsigned long)quarantined) * (slot / page));
	ck_assert_uint_gt(after - before, 0);

	/* Text: the same figures, bytes to their tenth of a unit. */
	char want[96];
	snprintf(want, sizeof want, ", %lu pages of free slots given back;", after);
	ck_assert_msg(strstr(text, want), "'%s' not in '%s'", want, text);
	const char *line = NULL;
	for (const char *at = text; at && *at; at = strchr(at, '\n'), at = at ? at + 1 : NULL) {
		unsigned cls;
		size_t size;
		if (sscanf(at, "%u %zu", &cls, &size) == 2 && cls == c && size == slot) line = at;
	}
	ck_assert_msg(line != NULL, "no row of class %u in '%s'", c, text);
	long cols[8];
	int used = 0;
	ck_assert_int_eq(sscanf(line, "%*u %*u %ld %ld %ld %ld %ld %ld %ld %ld%n", &cols[0], &cols[1], &cols[2],
				&cols[3], &cols[4], &cols[5], &cols[6], &cols[7], &used),
			 8);
	ck_assert_int_eq(cols[0], live);
	ck_assert_int_eq(cols[1], quarantined);
	const char *at = line + used;
	double open_cut, resident_cut;
	double text_open = text_bytes(&at, &open_cut), text_resident = text_bytes(&at, &resident_cut);
	ck_assert_msg(text_open <= open && text_open + open_cut >= open, "open %ld, the text's %.1f", open, text_open);
	ck_assert_msg(text_resident <= resident && text_resident + resident_cut >= resident,
		      "resident %ld, the text's %.1f", resident, text_resident);
	ck_assert_msg(text_resident < text_open, "'%.200s'", line);
	for (int i = 0; i < ALLOC; i += 2) free(p[i]);
}
END_TEST

/* --- blocks by call-site partition in the JSON report ------------------------------ */

/* The array of numbers after "key": in row, into v (at most `most`); its length, -1 when
 * the key is not there. */
static int json_array(const char *row, const char *key, size_t *v, int most)
{
	char want[64];
	snprintf(want, sizeof want, "\"%s\":[", key);
	const char *at = strstr(row, want);
	if (!at) return -1;
	at += strlen(want);
	int n = 0;
	for (char *end = NULL; *at != ']'; at = *end == ',' ? end + 1 : end) {
		ck_assert_int_lt(n, most);
		v[n++] = strtoul(at, &end, 10);
		ck_assert_msg(end != at && (*end == ',' || *end == ']'), "'%s' of '%s'", key, row);
	}
	return n;
}

/* The most slots class k's slot quarantine holds: its random array, its ring, and the
 * slot held for the next allocation (slab_class.h). */
static size_t quarantine_most(const struct slab_class *k)
{
	return k->qmask ? ((size_t)k->qmask + 1) * (1 + (1u << SLOT_Q_FIFO_SHIFT)) + 1 : 0;
}

/* Ids 0 and 1 of malloc_partition (distinct partitions whenever there are several, whose
 * numbers this test reads from inside: base/partition.h) allocate ALLOC blocks each, in
 * turn, so that every slab of the class holds blocks of both and none empties; id 0 frees
 * every other one of its blocks. The report's arrays: id 0's live blocks and id 1's under
 * their partitions' numbers, none under another; id 0's freed blocks owned by its
 * partition or still in the slot quarantine, which holds fewer of them than were freed
 * (97 of 6,144-byte slots by default: some are owned under strong too; all under light,
 * which has no quarantine). */
START_TEST(test_partition_counts)
{
	enum { ALLOC = 300, FREED = ALLOC / 2 };
	static void *mine[2][ALLOC];
	unsigned c = sc_of(PARTED), n = (unsigned)roots.opt.partitions;
	for (int i = 0; i < ALLOC; i++)
		for (unsigned id = 0; id < 2; id++) QUIET_CHECK(mine[id][i] = malloc_partition(PARTED, id));
	for (int i = 0; i < ALLOC; i += 2) free(mine[0][i]);
	text_report(1);
	QUIET_DONE();
	ck_assert_int_eq(json_num(text_out, "partitions"), n);
	/* The zero class keeps no owners: its slots are never accessible. */
	ck_assert_ptr_null(strstr(class_row(0), "\"partition_live\""));
	const char *row = class_row(c);
	size_t live[OPTION_PARTITIONS_MAX], owned[OPTION_PARTITIONS_MAX];
	if (n < 2) { /* partitions=1 (a build or run without them): no arrays */
		ck_assert_int_eq(json_array(row, "partition_live", live, OPTION_PARTITIONS_MAX), -1);
		ck_assert_int_eq(json_array(row, "partition_owned", owned, OPTION_PARTITIONS_MAX), -1);
		return;
	}
	ck_assert_int_eq(json_array(row, "partition_live", live, OPTION_PARTITIONS_MAX), n);
	ck_assert_int_eq(json_array(row, "partition_owned", owned, OPTION_PARTITIONS_MAX), n);
	unsigned p0 = site_partition(partition_named(0)), p1 = site_partition(partition_named(1));
	ck_assert_uint_ne(p0, p1);
	size_t live_sum = 0;
	for (unsigned p = 0; p < n; p++) {
		size_t want_live = p == p0 ? ALLOC - FREED : p == p1 ? ALLOC : 0;
		ck_assert_msg(live[p] == want_live, "partition %u: %zu live, want %zu ('%s')", p, live[p], want_live, row);
		if (p != p0) ck_assert_msg(!owned[p], "partition %u: %zu owned ('%s')", p, owned[p], row);
		live_sum += live[p];
	}
	ck_assert_uint_eq(live_sum, json_num(row, "live"));
	long quarantined = json_num(row, "quarantined");
	ck_assert_msg(owned[p0] + (size_t)quarantined == FREED, "%zu owned, %ld quarantined, %d freed ('%s')", owned[p0],
		      quarantined, FREED, row);
	const struct area_span *span;
	size_t held = quarantine_most(class_at((uintptr_t)mine[1][0], &span));
	ck_assert_msg(owned[p0] + held >= FREED, "%zu owned, the quarantine holds %zu, %d freed", owned[p0], held, FREED);
	for (int i = 0; i < ALLOC; i++) {
		if (i % 2) free(mine[0][i]);
		free(mine[1][i]);
	}
}
END_TEST

/* The child of test_partitions_off_report: blocks of two ids, then the JSON report on
 * stdout. */
static int json_report_child(void)
{
	static void *keep[2][10];
	for (int i = 0; i < 10; i++)
		for (unsigned id = 0; id < 2; id++)
			if (!(keep[id][i] = malloc_partition(PARTED, id))) return 1;
	stats_report(STDOUT_FILENO, 1);
	return 0;
}

/* partitions=1 (this program again, with it last in RAMPART_OPTIONS): the report says
 * "partitions":1 and no class has arrays by partition. */
START_TEST(test_partitions_off_report)
{
	if (access("/proc/self/exe", X_OK)) return; /* cannot run itself again (an emulator) */
	char opts[512];
	const char *own = getenv("RAMPART_OPTIONS");
	snprintf(opts, sizeof opts, "%s%spartitions=1", own ? own : "", own && *own ? "," : "");
	int fds[2];
	ck_assert_int_eq(pipe(fds), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		setenv("RAMPART_OPTIONS", opts, 1);
		execl("/proc/self/exe", "test_stats", "--json-report", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	size_t len = 0;
	for (ssize_t r; len < sizeof text_out - 1 && (r = read(fds[0], text_out + len, sizeof text_out - 1 - len));)
		if (r > 0) len += (size_t)r;
		else if (errno != EINTR) break;
	text_out[len] = 0;
	close(fds[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	ck_assert_msg(WIFEXITED(st) && !WEXITSTATUS(st), "the child: status %#x", st);
	ck_assert_msg(json_num(text_out, "partitions") == 1, "'%.400s'", text_out);
	ck_assert_msg(!strstr(text_out, "partition_live") && !strstr(text_out, "partition_owned"), "'%s'",
		      text_out);
	/* Its blocks are there all the same. */
	ck_assert_int_eq(json_num(class_row(sc_of(PARTED)), "live"), 20);
}
END_TEST

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--json-report")) return json_report_child();
	all_arenas(argv); /* test_cross_thread_frees crosses arenas */
	free(malloc(1));   /* rampart started */
	Suite *s = suite_create("stats");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_class_counts);
	tcase_add_test(tc, test_realloc_counts);
	tcase_add_test(tc, test_large_counts);
	tcase_add_test(tc, test_cross_thread_frees);
	tcase_add_test(tc, test_by_name);
	tcase_add_test(tc, test_reports);
	tcase_add_test(tc, test_resident_and_returned);
	tcase_add_test(tc, test_partition_counts);
	tcase_add_test(tc, test_partitions_off_report);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
