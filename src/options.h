/*
 * options.h — run-time options from RAMPART_OPTIONS.
 *
 * Grammar: entries separated by ',' or ':'; each entry is key=value; spaces and tabs
 * around keys and values are ignored; empty entries are skipped; a later entry
 * overrides an earlier one. An unknown key, a missing '=' or a bad value is reported
 * on stderr (naming the key or the value) and the entry is ignored.
 *
 * Invariants: read once during initialisation and never again; ignored entirely for
 * set-user-ID and other AT_SECURE programs, whose environment an attacker controls.
 * Nothing here allocates.
 */
#ifndef RAMPART_OPTIONS_H
#define RAMPART_OPTIONS_H

#include "common.h"
#include "guard.h"

enum stats_report { STATS_OFF, STATS_TEXT, STATS_JSON };

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
};

/* The defaults: the compile-time configuration. */
void options_default(struct options *o);
/* Parse text (may be NULL) into o, starting from the defaults; bad entries are
 * reported on stderr and ignored. */
void options_parse(struct options *o, const char *text);
/* The process's options: RAMPART_OPTIONS unless AT_SECURE. */
void options_read(struct options *o);
/* The list of options, on stderr (RAMPART_OPTIONS=help=1). */
void options_help(void);

#endif
