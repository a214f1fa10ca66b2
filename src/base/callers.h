/*
 * callers.h — the calls that led to an error, printed after its line: the "callers"
 * list of a fatal report or of an on_error=report report (report.c).
 *
 * Invariants:
 *  - Nothing allocates, takes a lock or changes errno; no read can fault; the working
 *    storage is static, so a thread with a small stack still ends in SIGABRT.
 *  - The list starts at the first return address outside rampart's own code.
 */
#ifndef RAMPART_CALLERS_H
#define RAMPART_CALLERS_H

#include "base/common.h"

/* The list, on stderr. One trace at a time: another one that starts meanwhile prints
 * nothing. give_back: free the storage for a later trace (on_error=report goes on);
 * a fatal report keeps it, the process ending. */
void callers_print(bool give_back);

#endif
