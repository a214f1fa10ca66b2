/*
 * callers.h — the calls that led to an error, printed after its line: the "callers"
 * list of a fatal report or of an on_error=report report (report.c).
 *
 * The stack is unwound by the unwind tables every module carries (.eh_frame, read by
 * eh_frame.c and cfi.c), where a frame has none by a scan of the stack for return
 * addresses; the modules come from /proc/self/maps (modules.c), names from their
 * dynamic symbol tables (symbols.c). docs/errors.md says why, with the measurements.
 *
 * Invariants:
 *  - Nothing allocates, takes a lock (the loader's included) or changes errno; no read
 *    can fault (peek.h); the working storage is static, so a thread with a small stack
 *    still ends in SIGABRT.
 *  - The list starts at the first frame outside rampart's own code: the program's call
 *    into rampart (or, at exit, the loader's call of rampart's destructor).
 *  - Each line names a module and the address of the call in it, as addr2line -e
 *    module takes it: the return address - 1 (inside the call instruction), or the
 *    instruction itself for a frame a signal interrupted. A frame found by a scan is
 *    marked so: it may be a stale return address.
 */
#ifndef RAMPART_CALLERS_H
#define RAMPART_CALLERS_H

#include "base/common.h"

/* The list, on stderr. One trace at a time: another one that starts meanwhile prints
 * nothing. give_back: free the storage for a later trace (on_error=report goes on);
 * a fatal report keeps it, the process ending. */
void callers_print(bool give_back);

#endif
