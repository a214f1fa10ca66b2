/*
 * resident_reuse — the light variant keeps a freed large block's pages in place (wiped
 * and sealed) and hands them to the next block of about its size (docs/large.md,
 * "Kept with their pages"). Asserts, under the madvise backend:
 *  - a freed 256 KiB block whose every page was written comes back at the same address,
 *    and writing every page of it again takes no page fault (getrusage minor faults);
 *  - while it waits it is unreachable (read and write refused by the kernel, and a fork
 *    child touching it dies by SIGSEGV);
 *  - the block handed out again reads zero, by malloc and by calloc;
 *  - the resident bytes kept (cache_resident_bytes_now) stay within what the live blocks
 *    fell below their peak (or an eighth of the option large_resident_bytes, if
 *    more), so kept and live blocks together hold no more than the live ones did, while
 *    blocks of many sizes are freed; and malloc_trim gives them all back.
 * Under the mprotect backend a sealed block would be a VMA of its own whatever the
 * program did to it, so nothing is kept: the test then asserts that (no resident bytes)
 * and that the block still comes back zeroed. A block expected back is asked for at the
 * call site that allocated the freed one (test/site.h): a kept block goes only to its
 * own call-site partition (system/large_partitions).
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rampart.h"
#include "../harness.h"
#include "../profile.h"
#include "../site.h"

#define SIZE (256u << 10)
/* The option large_resident_bytes and the eighth of it kept whatever the live blocks do
 * (black-box: the test sees no CONFIG_*). */
#define RESIDENT_BOUND test_option("large_resident_bytes")
#define RESIDENT_FLOOR (RESIDENT_BOUND / 8)

static int failures;
static size_t page;

#define EXPECT(cond, ...)                                                \
	do {                                                            \
		if (!(cond)) {                                          \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);     \
			printf(__VA_ARGS__);                            \
			printf("\n");                                   \
			failures++;                                     \
		}                                                       \
	} while (0)

static long minor_faults(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return u.ru_minflt;
}

static unsigned long resident_now(void)
{
	unsigned long v = 0;
	if (rampart_get_counter("cache_resident_bytes_now", &v) != 0) {
		printf("FAIL rampart_get_counter(\"cache_resident_bytes_now\"): errno %d\n", errno);
		exit(1);
	}
	return v;
}

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i]) return false;
	return true;
}

static void fill(unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i += page) memset(p + i, v, page);
}

int main(void)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	free(malloc(1));
	bool markers = !strcmp(rampart_guard_backend(), "madvise");
	printf("guard backend: %s\n", rampart_guard_backend());

	unsigned char *a = site_malloc(SIZE);
	EXPECT(a, "malloc(%u)", SIZE);
	if (!a) return 1;
	fill(a, SIZE, 0xa5);
	free(a);
	unsigned long kept = resident_now();
	if (markers) {
		EXPECT(kept >= SIZE, "a freed 256 KiB block is not kept with its pages (%lu bytes kept)", kept);
		EXPECT(inaccessible(a) && inaccessible(a + SIZE - 1), "the kept block is reachable");
	} else {
		EXPECT(kept == 0, "the mprotect backend kept %lu bytes with their pages", kept);
	}

	unsigned char *b = site_malloc(SIZE);
	EXPECT(b, "malloc(%u) again", SIZE);
	if (!b) return 1;
	if (markers) EXPECT(b == a, "the kept block did not come back (%p, then %p)", (void *)a, (void *)b);
	EXPECT(all_zero(b, SIZE), "a block handed out again holds the old owner's bytes");
	long f0 = minor_faults();
	fill(b, SIZE, 0x5a);
	long faults = minor_faults() - f0;
	if (markers) EXPECT(faults == 0, "writing every page of a kept block took %ld page faults", faults);
	printf("writing %u KiB of a block handed out again: %ld page faults\n", SIZE >> 10, faults);
	free(b);
	/* After the faults are counted: a fork makes the parent's pages copy-on-write. */
	if (markers) EXPECT(child_access(b, false) == SIGSEGV, "a fork child reads the kept block without a fault");

	/* calloc's own block, written and freed, then calloc again at the same site. */
	unsigned char *d = site_calloc(1, SIZE);
	EXPECT(d, "calloc(1, %u)", SIZE);
	if (!d) return 1;
	fill(d, SIZE, 0xc3);
	free(d);
	unsigned char *c = site_calloc(1, SIZE);
	EXPECT(c && all_zero(c, SIZE), "calloc of a kept block is not zero");
	if (markers) EXPECT(c == d, "calloc did not get the kept block back");
	free(c);

	/* Many sizes, all written: the bound holds at every step (nothing is live between). */
	unsigned long most = 0, peak = 0;
	for (int i = 0; i < 200; i++) {
		size_t n = ((size_t)132 << 10) + (size_t)(i * 37 % 61) * (size_t)(96 << 10);
		unsigned char *p = malloc(n), *q = malloc(n / 2 + (200 << 10));
		size_t live = malloc_usable_size(p) + malloc_usable_size(q);
		if (live > peak) peak = live;
		EXPECT(p && q, "malloc of %zu", n);
		if (!p || !q) return 1;
		EXPECT(all_zero(p, n), "a large block of %zu bytes is not zero", n);
		fill(p, n, (unsigned char)i);
		fill(q, n / 2 + (200 << 10), (unsigned char)i);
		free(p);
		free(q);
		unsigned long now = resident_now();
		if (now > most) most = now;
	}
	unsigned long bound = peak > RESIDENT_FLOOR ? peak : RESIDENT_FLOOR;
	EXPECT(most <= bound, "kept %lu bytes, above the live blocks' peak or the floor (%lu)", most, bound);
	printf("most bytes kept with their pages: %lu (live peak %lu, floor %lu)\n", most, peak, RESIDENT_FLOOR);
	if (markers) EXPECT(most > 0, "nothing was kept under churn");
	malloc_trim(0);
	EXPECT(resident_now() == 0, "malloc_trim left %lu bytes kept", resident_now());

	if (failures) return 1;
	printf("ok\n");
	return 0;
}
