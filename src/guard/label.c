/* label.c — the names of rampart's mappings; see label.h. */
#define _GNU_SOURCE
#include "guard/label.h"

#include <stdatomic.h>
#include <string.h>

#include "os/os.h"

#if CONFIG_LABEL_MEMORY
#define LABEL_NAMES 8
_Static_assert(LABEL_NAMES <= REGION_LABEL_MASK >> REGION_LABEL_SHIFT, "a name's number fits its bits");

static _Atomic bool labels_work = true;
static const char *_Atomic label_names[LABEL_NAMES];

/* The number of name (1-based), registered on first use; 0 when the table is full. */
static uint32_t label_number(const char *name)
{
	for (uint32_t i = 0; i < LABEL_NAMES; i++) {
		const char *have = atomic_load_explicit(&label_names[i], memory_order_acquire);
		if (!have) {
			const char *expected = NULL;
			if (atomic_compare_exchange_strong_explicit(&label_names[i], &expected, name, memory_order_acq_rel,
								    memory_order_acquire))
				return i + 1;
			have = expected;
		}
		if (have == name || !strcmp(have, name)) return i + 1;
	}
	return 0;
}

uint32_t label_region(void *p, size_t len, const char *name, uint32_t flags)
{
	if (!name || !atomic_load_explicit(&labels_work, memory_order_relaxed)) return flags;
	if (!os_label(p, len, name)) {
		atomic_store_explicit(&labels_work, false, memory_order_relaxed);
		return flags;
	}
	return (flags & ~REGION_LABEL_MASK) | label_number(name) << REGION_LABEL_SHIFT;
}

void label_again(uint32_t flags, void *p, size_t len)
{
	uint32_t n = (flags & REGION_LABEL_MASK) >> REGION_LABEL_SHIFT;
	invariant(n <= LABEL_NAMES);
	if (n && atomic_load_explicit(&labels_work, memory_order_relaxed))
		(void)os_label(p, len, atomic_load_explicit(&label_names[n - 1], memory_order_acquire));
}
#else
uint32_t label_region(void *p, size_t len, const char *name, uint32_t flags) { return flags; }
void label_again(uint32_t flags, void *p, size_t len) {}
#endif
