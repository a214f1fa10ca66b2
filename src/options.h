/*
 * options.h — run-time options from RAMPART_OPTIONS (comma-separated key=value).
 *
 * Invariants: read once during initialisation and never again; ignored entirely for
 * set-user-ID and other AT_SECURE programs, whose environment an attacker controls.
 */
#ifndef RAMPART_OPTIONS_H
#define RAMPART_OPTIONS_H

#include "common.h"
#include "guard.h"

struct options {
	enum guard_backend guard; /* guard=auto|madvise|mprotect */
	bool check_at_exit;       /* check_at_exit=0|1: verify live slots' canaries at exit */
};

/* Parse text (may be NULL) into o; unknown keys or values are reported on stderr. */
void options_parse(struct options *o, const char *text);
/* The process's options: RAMPART_OPTIONS unless AT_SECURE. */
void options_read(struct options *o);

#endif
