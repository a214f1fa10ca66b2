/* roots.c — the storage of the read-only roots and of the start-up state (roots.h). */
#include "base/roots.h"

/* The roots sit alone on their page so that page can be made read-only. */
union roots_page roots_page __attribute__((aligned(ROOTS_PAGE_BYTES))) STATIC_APART(roots_page);

_Atomic int rampart_state = STATE_NEW;

/* The kernel's page size: 4096 until os_init() asks the kernel (common.h). Below os/ so
 * that base's page arithmetic needs nothing above it. */
size_t os_page = 4096;
