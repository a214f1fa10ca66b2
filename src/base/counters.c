/* counters.c — the storage of the counters (counters.h). */
#include "base/counters.h"

_Atomic unsigned long stat_counters[STAT_COUNT];
