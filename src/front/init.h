/*
 * init.h — start-up (the read-only roots it fills are base/roots.h).
 *
 * Invariants:
 *  - rampart_ready() is one acquire load; initialisation runs once, on first use,
 *    without calling malloc or dlsym. Only the options are read earlier, when the
 *    library is loaded (unless a call came first), so that a program that never
 *    allocates still shows help=1, verbose=1 and bad entries; verbose=1 starts
 *    everything then, to say what start-up chose.
 *  - A passthrough process (policy.h, passthrough.h) never becomes READY: its state is
 *    PASSTHROUGH from the first call on, so rampart_ready() is false and every entry
 *    point hands the call to the C library on its cold path. The fast path of a
 *    process that runs rampart is unchanged: the same one load and one branch.
 */
#ifndef RAMPART_INIT_H
#define RAMPART_INIT_H

#include <stdatomic.h>

#include "base/common.h"
#include "base/roots.h"

must_check bool rampart_init_slow(void);
/* After rampart_ready() said false: is this a passthrough process (rather than one whose
 * initialisation failed)? Both the state and the read-only roots must say so. */
static inline bool rampart_passthrough(void)
{
	return atomic_load_explicit(&rampart_state, memory_order_acquire) == STATE_PASSTHROUGH && roots.opt.passthrough;
}
static inline must_check bool rampart_ready(void)
{
	if (likely(atomic_load_explicit(&rampart_state, memory_order_acquire) == STATE_READY)) return true;
	return rampart_init_slow();
}

#endif
