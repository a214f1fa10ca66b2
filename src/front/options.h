/*
 * options.h — run-time options from RAMPART_OPTIONS.
 *
 * Grammar: entries separated by ',' or ':'; each entry is key=value; spaces and tabs
 * around keys and values are ignored; empty entries are skipped; a later entry
 * overrides an earlier one. An unknown key, a missing '=' or a bad value is reported
 * on stderr (naming the key or the value) and the entry is ignored.
 *
 * The bare word `passthrough` is accepted as passthrough=1 (the policy file's idiom,
 * src/front/policy.h). The same grammar serves RAMPART_OPTIONS and the lines of the policy
 * file; messages name their source ("RAMPART_OPTIONS" or "/etc/rampart.conf:12").
 *
 * Invariants: read once, when the library is loaded or by the first call if that
 * comes first (src/front/init.c), and never again; the environment is
 * ignored entirely for set-user-ID and other AT_SECURE programs, whose environment an
 * attacker controls (src/front/policy.c combines file and environment). Nothing here
 * allocates.
 */
#ifndef RAMPART_OPTIONS_H
#define RAMPART_OPTIONS_H

#include "base/common.h"
#include "guard/guard.h"

enum stats_report { STATS_OFF, STATS_TEXT, STATS_JSON };
/* What a detected error on a free path does: see policy.h, policy_tolerate_*. */
enum on_error { ON_ERROR_ABORT, ON_ERROR_REPORT };

struct options {
	enum guard_backend guard;   /* guard=auto|madvise|mprotect */
	bool check_at_exit;         /* check_at_exit=0|1: verify live slots' canaries at exit */
	enum stats_report stats;    /* stats=0|1|text|json: a report on stderr at exit */
	bool verbose;               /* verbose=0|1: say at start-up what was chosen */
	bool help;                  /* help=1: list the options on stderr */
	size_t large_quarantine_bytes;   /* region quarantine: bytes of address space held */
	size_t large_quarantine_entries; /* region quarantine: FIFO entries */
	size_t large_cache_bytes;        /* reuse cache: bytes of address space held */
	size_t large_cache_entries;      /* reuse cache: regions held */
	size_t large_cache_decay_ms;     /* reuse cache: idle time before a region is unmapped */
	size_t large_refill_bytes;       /* most credit for populating new large blocks (refill.h) */
	size_t arenas;                   /* arenas=N: slab arenas; 0 (default): one per CPU, capped */
	bool passthrough;           /* passthrough=0|1: every call to the C library's allocator */
	bool sized_free;            /* sized_free=on|off: check the size of sized frees (default on) */
	enum on_error on_error;     /* on_error=abort|report: an invalid, double or mis-sized free */
};

/* The defaults: the compile-time configuration. */
void options_default(struct options *o);
/* Parse text (may be NULL) into o, starting from the defaults; bad entries are
 * reported on stderr and ignored. */
void options_parse(struct options *o, const char *text);
/* Apply the len bytes at text (no terminator needed) on top of o; bad entries are
 * reported on stderr as "<source>: ..." and ignored. */
void options_apply(struct options *o, const char *text, size_t len, const char *source);
/* RAMPART_OPTIONS alone, on top of the defaults, unless AT_SECURE; help=1 prints the
 * list. (The process's options come from policy_read, which adds the policy file.) */
void options_read(struct options *o);
/* The list of options, on stderr (RAMPART_OPTIONS=help=1). */
void options_help(void);

#endif
