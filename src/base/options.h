/*
 * options.h — the run-time options (RAMPART_OPTIONS and the policy file) as the process
 * holds them, in the read-only roots (roots.h). The parser is front/options.h.
 *
 * Invariants: set once during initialisation, before the roots are made read-only;
 * never written afterwards.
 */
#ifndef RAMPART_BASE_OPTIONS_H
#define RAMPART_BASE_OPTIONS_H

#include "base/common.h"

enum guard_backend { GUARD_AUTO, GUARD_MADVISE, GUARD_MPROTECT };

enum stats_report { STATS_OFF, STATS_TEXT, STATS_JSON };
/* What a detected error on a free path does: see report.h, report_go_on. */
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

#endif
