/*
 * option_table.h — the run-time options (RAMPART_OPTIONS and the policy file): one table.
 *
 * Invariants:
 *  - RAMPART_OPTION_TABLE is the one list of options. struct options, options_default,
 *    the parser's keys (front/options.c), the help=1 text and the option lists of the
 *    rampart(3) and rampart.conf(5) man pages (pkg/options_man.c, at build time) are
 *    generated from it: an
 *    option is added, documented or given a new default in one line.
 *  - A default that is a build setting names its CONFIG_ value; the value itself is
 *    written only in config.mk.
 *  - struct options is plain data of fixed size (it lives in the read-only roots):
 *    a PATH option is stored in the struct itself, never as a pointer.
 *  - A leaf: includes only system headers and base files.
 */
#ifndef RAMPART_OPTION_TABLE_H
#define RAMPART_OPTION_TABLE_H

#include "base/common.h"

/* config.mk sets every CONFIG_ value, checked (config-check.mk); C never guesses one. */
#ifndef CONFIG_POLICY_PATH
#error "the CONFIG_ values are not set: compile with config.mk's CONFIG_CPPFLAGS"
#endif

enum guard_backend { GUARD_AUTO, GUARD_MADVISE, GUARD_MPROTECT };
enum stats_report { STATS_OFF, STATS_TEXT, STATS_JSON };
/* What a detected error on a free path does: see base/report.h, report_go_on. */
enum on_error { ON_ERROR_ABORT, ON_ERROR_REPORT };
/* Memory tagging of small blocks on arm64 CPUs with MTE (os/mte.h): the tag-check mode. */
enum mte_option { MTE_OPTION_SYNC, MTE_OPTION_ASYNC, MTE_OPTION_OFF };
/* The strength a process runs at: each profile is a set of values of the options
 * RAMPART_PROFILE_LIGHT lists (strong: their table defaults). */
enum profile { PROFILE_STRONG, PROFILE_LIGHT };

/* Bytes of a PATH value, terminator included. The options live in the roots, which must
 * fit one page with the largest CONFIG_SLAB_ARENAS (base/roots.h checks): hence no more. */
#define OPTIONS_PATH_MAX 128

/* The most call-site partitions (the option partitions): a slot's owner is kept in four
 * bits of a byte of metadata (slab_class.h), and 16 is what Linux's random kmalloc
 * caches use. */
#define OPTION_PARTITIONS_MAX 16u

/* X(key, kind, default, most, doc): key=value sets the field of struct options named
 * key. kind: GUARD, BOOL, STATS, ONOFF, ONERROR, MTE, PROFILE (words), SIZE (bytes, k/m/g allowed),
 * COUNT (a whole number), PATH (a file name). most: the largest SIZE or COUNT accepted
 * (0 for other kinds). doc: one line for help=1 and the man page, without the default,
 * which both print from the table. */
#define RAMPART_OPTION_TABLE(X)                                                                           \
	X(profile, PROFILE, PROFILE_STRONG, 0,                                                             \
	  "strength: sets slot_random to partitions to strong's or light's values "             \
	  "(rampart.conf(5)); an option given after it overrides one")                                     \
	X(slot_random, ONOFF, CONFIG_SLOT_RANDOM, 0, "hand out a random free slot of a slab, not the first")   \
	X(write_after_free_check, ONOFF, CONFIG_WRITE_AFTER_FREE_CHECK && CONFIG_ZERO_ON_FREE, 0,           \
	  "check at allocation that a reused slot still holds the zeros its free wrote")                   \
	X(slot_quarantine_bytes, SIZE, CONFIG_SLOT_QUARANTINE_BYTES, (size_t)16 << 20,                      \
	  "slots each size class's slot quarantine holds back after their free, in bytes (0: none)")       \
	X(slab_quarantine, COUNT, CONFIG_SLAB_QUARANTINE, CONFIG_SLAB_QUARANTINE,                          \
	  "closed empty slabs each size class holds back before reusing one")                              \
	X(slab_guard_interval, COUNT, CONFIG_GUARD_SLAB_INTERVAL, 65536,                                   \
	  "fresh slabs between two guard slabs under guard markers (0 counts as 1)")                       \
	X(slab_guard_interval_mprotect, COUNT, CONFIG_GUARD_SLAB_INTERVAL_MPROTECT, 65536,                 \
	  "fresh slabs between two guard slabs under PROT_NONE guards (0 counts as 1)")                    \
	X(large_quarantine, ONOFF, CONFIG_REGION_QUARANTINE, 0,                                            \
	  "hold freed large regions closed before their address is reused (off: keep up to "              \
	  "large_resident_bytes of them with their pages instead)")                                        \
	X(large_guard_max_pages, COUNT, CONFIG_GUARD_MAX_PAGES, 65536,                                     \
	  "most random pages of guard on each side of a large block, beyond the first")                    \
	X(partitions, COUNT, CONFIG_PARTITIONS, OPTION_PARTITIONS_MAX,                                     \
	  "call-site partitions, a power of two: a slot freed by one is never taken by another while "     \
	  "its slab is open, nor a large block's region (1: none)")                                         \
	X(large_resident_bytes, SIZE, CONFIG_CACHE_RESIDENT_BYTES, (size_t)1 << 46,                         \
	  "with large_quarantine off: most bytes of freed large blocks kept with their pages")             \
	X(guard, GUARD, GUARD_AUTO, 0, "guard backend; auto probes for madvise guards, else mprotect")     \
	X(check_at_exit, BOOL, false, 0, "check every live slot's canary at exit")                         \
	X(stats, STATS, STATS_OFF, 0, "statistics report at exit (1 is text), on stderr or in stats_file") \
	X(stats_file, PATH, "", 0,                                                                         \
	  "append the stats report to this file (created mode 0600) instead of stderr, and turn it on "    \
	  "(as stats=1) if off; not for set-user-ID programs")                                             \
	X(verbose, BOOL, false, 0, "say at start-up what was chosen")                                      \
	X(help, BOOL, false, 0, "list the options on stderr")                                              \
	X(large_quarantine_bytes, SIZE, CONFIG_REGION_QUARANTINE_BYTES, (size_t)1 << 46,                   \
	  "address space the large-region quarantine holds")                                               \
	X(large_quarantine_entries, COUNT, CONFIG_REGION_QUARANTINE_FIFO, CONFIG_REGION_QUARANTINE_FIFO,   \
	  "FIFO entries of the large-region quarantine")                                                   \
	X(large_cache_bytes, SIZE, CONFIG_CACHE_BYTES, (size_t)1 << 46,                                    \
	  "address space the large-region reuse cache holds")                                              \
	X(large_cache_entries, COUNT, CONFIG_CACHE_ENTRIES, CONFIG_CACHE_ENTRIES,                          \
	  "regions the reuse cache holds (0: no cache)")                                                   \
	X(large_cache_decay_ms, COUNT, CONFIG_CACHE_DECAY_MS, (size_t)1 << 40,                             \
	  "milliseconds a cached region may stay idle")                                                    \
	X(large_refill_bytes, SIZE, CONFIG_LARGE_REFILL_BYTES, (size_t)1 << 46,                            \
	  "most bytes of new large blocks populated up front, earned by touched ones freed (0: off)")      \
	X(slab_return_ms, COUNT, CONFIG_SLAB_RETURN_MS, ((size_t)1 << 31) - 1,                             \
	  "milliseconds before free slots' pages in an open slab go back: one to two periods after the "  \
	  "last free into it, at most one where its class hands out nothing (0: never)")                   \
	X(arenas, COUNT, 0, CONFIG_SLAB_ARENAS,                                                            \
	  "slab arenas threads are spread over (0: one per CPU the process may run on)")                   \
	X(passthrough, BOOL, false, 0,                                                                     \
	  "hand every call to the C library's allocator, for the life of the process "                     \
	  "(the bare word passthrough means 1)")                                                           \
	X(sized_free, ONOFF, true, 0, "abort on a sized free or sized delete whose size does not match")   \
	X(dealloc_kind, ONOFF, true, 0,                                                                    \
	  "abort on a block freed by another kind of call than allocated it: free or realloc of what "     \
	  "operator new or new[] made, delete of new[]'s or malloc's, delete[] of new's or malloc's")      \
	X(on_error, ONERROR, ON_ERROR_ABORT, 0,                                                            \
	  "report an invalid, double, mis-sized or mismatched free and carry on")                          \
	X(mte, MTE, MTE_OPTION_SYNC, 0,                                                                    \
	  "arm64 with MTE: tag small blocks, tag checks sync or async (off: none); no effect elsewhere")

/* The kinds of option, once: RAMPART_OPTION_KINDS(X) gives X(kind, field type, words)
 * for every kind. words lists the values a user writes, each as W(word, value) (how the
 * value is printed, and shown in the list of values), S(word, value) (shown, accepted,
 * never printed: an alias that help=1 lists) or A(word, value) (accepted only); the
 * first W of a value is its spelling. A kind without words (NUMBER, PATH) is read as a
 * number or a file name: struct options, the parser, the help text, the man pages, the
 * verbose line and rampart_get_option are all generated from this list. */
#define OPTION_NO_WORDS
#define RAMPART_OPTION_KINDS(X)                                                                                 \
	X(GUARD, enum guard_backend, W("auto", GUARD_AUTO) W("madvise", GUARD_MADVISE) W("mprotect", GUARD_MPROTECT)) \
	X(BOOL, bool, W("0", 0) W("1", 1))                                                                      \
	X(STATS, enum stats_report, W("0", STATS_OFF) S("1", STATS_TEXT) W("text", STATS_TEXT) W("json", STATS_JSON)) \
	X(ONOFF, bool, W("on", 1) W("off", 0) A("1", 1) A("0", 0))                                              \
	X(ONERROR, enum on_error, W("abort", ON_ERROR_ABORT) W("report", ON_ERROR_REPORT))                     \
	X(MTE, enum mte_option, W("sync", MTE_OPTION_SYNC) W("async", MTE_OPTION_ASYNC) W("off", MTE_OPTION_OFF)) \
	X(PROFILE, enum profile, W("strong", PROFILE_STRONG) W("light", PROFILE_LIGHT))                        \
	X(SIZE, size_t, OPTION_NO_WORDS)                                                                        \
	X(COUNT, size_t, OPTION_NO_WORDS)                                                                       \
	X(PATH, char, OPTION_NO_WORDS)

enum option_kind {
#define OPTION_KIND_ENUM(kind, type, words) OPTION_##kind,
	RAMPART_OPTION_KINDS(OPTION_KIND_ENUM)
#undef OPTION_KIND_ENUM
};

/* Each kind's field (a PATH is stored in the struct itself: see the invariants). */
#define OPTION_FIELD_GUARD(name) enum guard_backend name
#define OPTION_FIELD_BOOL(name) bool name
#define OPTION_FIELD_STATS(name) enum stats_report name
#define OPTION_FIELD_ONOFF(name) bool name
#define OPTION_FIELD_ONERROR(name) enum on_error name
#define OPTION_FIELD_MTE(name) enum mte_option name
#define OPTION_FIELD_PROFILE(name) enum profile name
#define OPTION_FIELD_SIZE(name) size_t name
#define OPTION_FIELD_COUNT(name) size_t name
#define OPTION_FIELD_PATH(name) char name[OPTIONS_PATH_MAX]

/* Each kind's check of the table at compile time: a default within the bound. */
#define OPTION_FITS_NUMBER(key, def, most) _Static_assert((def) <= (most), "the default of " #key " exceeds its bound");
#define OPTION_FITS_GUARD(key, def, most)
#define OPTION_FITS_BOOL(key, def, most)
#define OPTION_FITS_STATS(key, def, most)
#define OPTION_FITS_ONOFF(key, def, most)
#define OPTION_FITS_ONERROR(key, def, most)
#define OPTION_FITS_MTE(key, def, most)
#define OPTION_FITS_PROFILE(key, def, most)
#define OPTION_FITS_SIZE OPTION_FITS_NUMBER
#define OPTION_FITS_COUNT OPTION_FITS_NUMBER
#define OPTION_FITS_PATH(key, def, most) \
	_Static_assert(sizeof(def) <= OPTIONS_PATH_MAX, "the default of " #key " is too long");

/* A word of a kind: how it is written, its value, and whether it is printed (W),
 * shown in the list of values (W, S) or only accepted (A). */
enum option_word_use { OPTION_WORD_SPELLING, OPTION_WORD_SHOWN, OPTION_WORD_ACCEPTED };
struct option_word {
	const char *word;
	int value;
	enum option_word_use use;
};

/* The words of kind, ended by a NULL word (none for a kind without words). */
static inline const struct option_word *option_words(enum option_kind kind)
{
#define W(word, value) {word, value, OPTION_WORD_SPELLING},
#define S(word, value) {word, value, OPTION_WORD_SHOWN},
#define A(word, value) {word, value, OPTION_WORD_ACCEPTED},
#define OPTION_KIND_WORDS(kind, type, words) \
	static const struct option_word kind##_words[] = {words{NULL, 0, OPTION_WORD_SPELLING}};
	RAMPART_OPTION_KINDS(OPTION_KIND_WORDS)
#undef OPTION_KIND_WORDS
#undef W
#undef S
#undef A
	switch (kind) {
#define OPTION_KIND_CASE(kind, type, words) \
	case OPTION_##kind: return kind##_words;
		RAMPART_OPTION_KINDS(OPTION_KIND_CASE)
#undef OPTION_KIND_CASE
	}
	return NULL;
}

/* The list of values help=1 and the man pages show ("auto|madvise|mprotect"): the shown
 * words joined by '|', or what a number or a file name is; into buf (64 bytes). */
static inline const char *option_values_text(enum option_kind kind, char buf[64])
{
	if (kind == OPTION_SIZE) return "SIZE";
	if (kind == OPTION_COUNT) return "N";
	if (kind == OPTION_PATH) return "PATH";
	size_t n = 0;
	for (const struct option_word *w = option_words(kind); w->word; w++) {
		if (w->use == OPTION_WORD_ACCEPTED) continue;
		for (const char *c = n ? "|" : ""; *c && n < 63; c++) buf[n++] = *c;
		for (const char *c = w->word; *c && n < 63; c++) buf[n++] = *c;
	}
	buf[n] = 0;
	return buf;
}

/* The value of a field of a kind with words, as an int. */
static inline int option_word_field(enum option_kind kind, const void *field)
{
	switch (kind) {
#define OPTION_KIND_READ(kind, type, words) \
	case OPTION_##kind: return (int)*(const type *)field;
		RAMPART_OPTION_KINDS(OPTION_KIND_READ)
#undef OPTION_KIND_READ
	}
	return 0;
}

/* What profile=light sets, option by option (config.mk's CONFIG_LIGHT_ values);
 * profile=strong sets the same options to their defaults in the table above. */
#define RAMPART_PROFILE_LIGHT(X)                                                       \
	X(slot_random, CONFIG_LIGHT_SLOT_RANDOM)                                       \
	X(write_after_free_check, CONFIG_LIGHT_WRITE_AFTER_FREE_CHECK)                 \
	X(slot_quarantine_bytes, CONFIG_LIGHT_SLOT_QUARANTINE_BYTES)                   \
	X(slab_quarantine, CONFIG_LIGHT_SLAB_QUARANTINE)                               \
	X(slab_guard_interval, CONFIG_LIGHT_GUARD_SLAB_INTERVAL)                       \
	X(slab_guard_interval_mprotect, CONFIG_LIGHT_GUARD_SLAB_INTERVAL_MPROTECT)     \
	X(large_quarantine, CONFIG_LIGHT_REGION_QUARANTINE)                            \
	X(large_guard_max_pages, CONFIG_LIGHT_GUARD_MAX_PAGES)                         \
	X(partitions, CONFIG_LIGHT_PARTITIONS)


struct options {
#define OPTION_DECLARE(key, kind, def, most, doc) OPTION_FIELD_##kind(key);
	RAMPART_OPTION_TABLE(OPTION_DECLARE)
#undef OPTION_DECLARE
	/* Where profile was chosen: the source of its last entry ("RAMPART_OPTIONS",
	 * "/etc/rampart.conf:12"); empty: the build's default (options_profile_from). */
	char profile_from[40];
};

static inline const char *options_profile_from(const struct options *o)
{
	return o->profile_from[0] ? o->profile_from : "default";
}

/* Profile p's values of the options it sets, over o. */
static inline void options_set_profile(struct options *o, enum profile p)
{
	o->profile = p;
	if (p == PROFILE_LIGHT) {
#define OPTION_LIGHT(key, value) o->key = value;
		RAMPART_PROFILE_LIGHT(OPTION_LIGHT)
#undef OPTION_LIGHT
		return;
	}
	struct options strong = {
#define OPTION_DEFAULT(key, kind, def, most, doc) .key = def,
		RAMPART_OPTION_TABLE(OPTION_DEFAULT)
#undef OPTION_DEFAULT
	};
#define OPTION_STRONG(key, value) o->key = strong.key;
	RAMPART_PROFILE_LIGHT(OPTION_STRONG)
#undef OPTION_STRONG
}

/* The defaults: the table's, which take the build's from config.mk, then the build's
 * default profile (CONFIG_PROFILE_LIGHT). */
static inline void options_default(struct options *o)
{
	*o = (struct options){
#define OPTION_DEFAULT(key, kind, def, most, doc) .key = def,
		RAMPART_OPTION_TABLE(OPTION_DEFAULT)
#undef OPTION_DEFAULT
	};
	if (CONFIG_PROFILE_LIGHT) options_set_profile(o, PROFILE_LIGHT);
}

/* The value of an option of kind `kind` at field, as a user writes it (the help text's,
 * the man page's and the verbose line's); digits go to buf. */
static inline const char *option_value_text(enum option_kind kind, const void *field, char buf[24])
{
	if (kind == OPTION_PATH) return *(const char *)field ? (const char *)field : "none";
	if (kind != OPTION_SIZE && kind != OPTION_COUNT) {
		int v = option_word_field(kind, field);
		for (const struct option_word *w = option_words(kind); w->word; w++)
			if (w->value == v && w->use == OPTION_WORD_SPELLING) return w->word;
		return "?";
	}
	size_t n = *(const size_t *)field;
	char tmp[24];
	int i = 0, j = 0;
	do tmp[i++] = (char)('0' + n % 10); while (n /= 10);
	while (i) buf[j++] = tmp[--i];
	buf[j] = 0;
	return buf;
}

#endif
