/*
 * large_death.c — each case commits one memory-safety bug on a large allocation
 * (256 KiB - 4 MiB) in a forked child; it passes only if the child dies the right way:
 * SIGSEGV/SIGBUS for an access that must fault, SIGABRT with "rampart: fatal:" for
 * corruption rampart must detect. run.sh runs it under both guard backends.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../harness.h"
#include "rampart.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

/* The compiler must not see through the bugs (and warn or fold them away). */
static void *volatile launder_slot;
static unsigned char *launder(void *p)
{
	launder_slot = p;
	return launder_slot;
}

static void touch_read(unsigned char *p)
{
	volatile unsigned char c = *(volatile unsigned char *)p;
	(void)c;
}
static void touch_write(unsigned char *p) { *(volatile unsigned char *)p = 0x41; }

static unsigned char *freed_block(size_t n)
{
	unsigned char *p = malloc(n);
	memset(p, 0x5a, n);
	free(p);
	return launder(p);
}

/* Dozens of later allocations and frees of similar sizes: the freed block must stay
 * unreachable whatever the quarantine and the reuse cache did with it. */
static void churn(int rounds)
{
	for (int i = 0; i < rounds; i++) {
		void *q = malloc(256 * KiB + (size_t)(i % 7) * 64 * KiB);
		memset(q, i, 4096);
		free(q);
	}
}

static void uaf_read(void) { touch_read(freed_block(MiB)); }
static void uaf_write(void) { touch_write(freed_block(MiB) + 12345); }
static void uaf_read_last_byte(void) { touch_read(freed_block(256 * KiB) + 256 * KiB - 1); }
static void uaf_read_after_churn(void)
{
	unsigned char *p = freed_block(512 * KiB);
	churn(60);
	touch_read(p + 4096);
}
static void uaf_write_after_churn(void)
{
	unsigned char *p = freed_block(300 * KiB);
	churn(80);
	touch_write(p);
}
static void uaf_after_many_frees(void)
{
	/* The victim goes first, then dozens of frees of exactly its size. */
	unsigned char *p = freed_block(4 * MiB);
	void *q[48];
	for (int i = 0; i < 48; i++) q[i] = malloc(4 * MiB);
	for (int i = 0; i < 48; i++) free(q[i]);
	touch_write(p + 2 * MiB);
}

static void overflow_one(void)
{
	unsigned char *p = malloc(300 * KiB);
	size_t u = malloc_usable_size(p);
	memset(p, 1, u); /* all of the usable size is fine ... */
	touch_write(launder(p) + u); /* ... one byte more is not */
}
static void overflow_read_one(void)
{
	unsigned char *p = malloc(2 * MiB + 5);
	touch_read(launder(p) + malloc_usable_size(p));
}
static void underflow_one(void)
{
	unsigned char *p = malloc(MiB);
	touch_write(launder(p) - 1);
}
static void underflow_read_one(void)
{
	unsigned char *p = malloc(256 * KiB);
	touch_read(launder(p) - 1);
}

static void double_free(void)
{
	unsigned char *p = malloc(MiB);
	free(p);
	free(launder(p));
}
static void double_free_after_churn(void)
{
	unsigned char *p = malloc(400 * KiB);
	free(p);
	churn(200); /* long gone from the quarantine: still caught */
	free(launder(p));
}
static void free_interior(void)
{
	unsigned char *p = malloc(MiB);
	free(launder(p) + 4096);
}
static void free_interior_unaligned(void)
{
	unsigned char *p = malloc(MiB);
	free(launder(p) + 16);
}
static void realloc_interior(void)
{
	unsigned char *p = malloc(MiB);
	void *q = realloc(launder(p) + 4096, 2 * MiB);
	(void)q;
}
static void realloc_freed(void)
{
	unsigned char *p = malloc(MiB);
	free(p);
	void *q = realloc(launder(p), 2 * MiB);
	(void)q;
}
static void usable_size_of_interior(void)
{
	unsigned char *p = malloc(MiB);
	(void)malloc_usable_size(launder(p) + 8192);
}

static void realloc_shrink_tail(void)
{
	unsigned char *p = malloc(2 * MiB);
	memset(p, 3, 2 * MiB);
	unsigned char *q = realloc(p, 300 * KiB);
	/* Whether or not it stayed in place, the old tail must be gone. */
	touch_write(launder(p) + MiB);
	(void)q;
}
static void realloc_shrink_first_cut_byte(void)
{
	unsigned char *p = malloc(MiB);
	unsigned char *q = realloc(p, 256 * KiB);
	touch_read(launder(q) + malloc_usable_size(q));
}

static void uaf_after_mlockall(int flags, bool allocate_before)
{
	unsigned char *early = allocate_before ? malloc(MiB) : NULL;
	if (allocate_before) memset(early, 1, MiB);
	if (mlockall(flags)) {
		fprintf(stderr, "mlockall: %s\n", strerror(errno));
		_exit(3);
	}
	unsigned char *p = early ? early : malloc(MiB);
	if (!p) _exit(4);
	memset(p, 2, MiB);
	free(p);
	churn(10);
	touch_write(launder(p) + 100);
}
static void uaf_mlockall_future_onfault(void) { uaf_after_mlockall(MCL_FUTURE | MCL_ONFAULT, false); }
static void uaf_mlockall_future_onfault_early(void) { uaf_after_mlockall(MCL_FUTURE | MCL_ONFAULT, true); }
static void uaf_mlockall_current_future(void) { uaf_after_mlockall(MCL_CURRENT | MCL_FUTURE, true); }
static void uaf_mlockall_current_future_late(void) { uaf_after_mlockall(MCL_CURRENT | MCL_FUTURE, false); }
static void overflow_mlockall_current(void)
{
	unsigned char *p = malloc(MiB);
	if (mlockall(MCL_CURRENT | MCL_FUTURE)) _exit(3);
	unsigned char *q = realloc(p, 256 * KiB); /* the cut tail needs a guard on a locked mapping */
	touch_write(launder(q) + 300 * KiB);
}

/* Blocks populated with huge pages (src/large/populate.h): a touched 16 MiB block freed makes
 * the next one populated, its 2 MiB-aligned spans with huge pages where the kernel has
 * them. The guards, the cut tail and the freed block must fault all the same. */
#define HUGE_BLOCK (16 * MiB)
static unsigned char *huge_block(void)
{
	for (int i = 0; i < 17; i++) { /* the refill measures one free in 16 at first */
		unsigned char *t = malloc(HUGE_BLOCK);
		memset(t, 1, HUGE_BLOCK);
		free(t);
	}
	unsigned char *p = malloc(HUGE_BLOCK);
	memset(p, 2, HUGE_BLOCK);
	return p;
}
static void huge_overflow_one(void) { touch_write(launder(huge_block()) + HUGE_BLOCK); }
static void huge_underflow_one(void) { touch_read(launder(huge_block()) - 1); }
static void huge_uaf_write(void)
{
	unsigned char *p = huge_block();
	free(p);
	touch_write(launder(p) + 6 * MiB + 12345);
}
static void huge_shrink_cut_inside_huge_page(void)
{
	unsigned char *p = huge_block();
	/* The cut falls in the middle of an aligned 2 MiB span: the huge page is split. */
	uintptr_t cut = (((uintptr_t)p + 4 * MiB) & ~(uintptr_t)(2 * MiB - 1)) + MiB;
	unsigned char *q = realloc(p, cut - (uintptr_t)p);
	touch_write(launder(q) + (cut - (uintptr_t)p) + 4096);
}

/* malloc_object_size answers for live memory; inside a freed block it is fatal. */
static void object_size_of_freed(void) { (void)malloc_object_size(freed_block(MiB)); }
static void object_size_inside_freed(void) { (void)malloc_object_size(freed_block(MiB) + 5000); }

/* Sized frees check the exact size asked for, not its pages; the report shows the size
 * passed and the block's, with the alignments where one was passed. */
static void sized_free_short(void)
{
	unsigned char *p = malloc(300 * KiB);
	free_sized(p, 300 * KiB - 1);
}
static void aligned_sized_free_short(void)
{
	/* A C++ delete of an 8 KiB-aligned 16,384-byte object, told 16,374 bytes. */
	void *p = aligned_alloc(8192, 16384);
	free_aligned_sized(p, 8192, 16374);
}
static void aligned_sized_free_wrong_alignment(void)
{
	void *p = aligned_alloc(8192, 16384);
	free_aligned_sized(p, 16384, 16384);
}
/* A wild pointer handed to realloc is reported as a realloc. */
static void realloc_wild(void)
{
	void *q = realloc((void *)launder((void *)1), 16);
	(void)q;
}

/* Controls: the same programs without the bug exit normally. */
static void control(void)
{
	unsigned char *p = malloc(MiB);
	size_t u = malloc_usable_size(p);
	memset(p, 1, u);
	p = realloc(p, 300 * KiB);
	p = realloc(p, 3 * MiB);
	free(p);
	churn(50);
	/* Exact sizes, one past the end, and a big block that is unmapped at once. */
	p = malloc(300 * KiB + 1);
	if (malloc_object_size(p + 300 * KiB + 1) != 4096 - 1) _exit(5);
	free_sized(p, 300 * KiB + 1);
	p = aligned_alloc(8192, 16384);
	if (malloc_object_size(p + malloc_usable_size(p)) != 0) _exit(6);
	free_aligned_sized(p, 8192, 16384);
	free_sized(malloc(256 * MiB), 256 * MiB);
}
static void control_mlockall(void)
{
	if (mlockall(MCL_CURRENT | MCL_FUTURE)) _exit(3);
	control();
}

static const struct death_case cases[] = {
	{"control", control, DIE_NOT, NULL},
	{"control after mlockall", control_mlockall, DIE_NOT, NULL},
	{"use after free: read", uaf_read, DIE_FAULT, NULL},
	{"use after free: write", uaf_write, DIE_FAULT, NULL},
	{"use after free: read of the last byte", uaf_read_last_byte, DIE_FAULT, NULL},
	{"use after free: read after 60 later frees", uaf_read_after_churn, DIE_FAULT, NULL},
	{"use after free: write after 80 later frees", uaf_write_after_churn, DIE_FAULT, NULL},
	{"use after free: write after 48 frees of the same size", uaf_after_many_frees, DIE_FAULT, NULL},
	{"overflow: write one byte past the usable size", overflow_one, DIE_FAULT, NULL},
	{"overflow: read one byte past the usable size", overflow_read_one, DIE_FAULT, NULL},
	{"underflow: write one byte before the start", underflow_one, DIE_FAULT, NULL},
	{"underflow: read one byte before the start", underflow_read_one, DIE_FAULT, NULL},
	{"double free", double_free, DIE_FATAL, NULL},
	{"double free after 200 later frees", double_free_after_churn, DIE_FATAL, NULL},
	{"free of an interior pointer (page)", free_interior, DIE_FATAL, NULL},
	{"free of an interior pointer (16 bytes in)", free_interior_unaligned, DIE_FATAL, NULL},
	{"realloc of an interior pointer", realloc_interior, DIE_FATAL, NULL},
	{"realloc of a freed pointer", realloc_freed, DIE_FATAL, NULL},
	{"malloc_usable_size of an interior pointer", usable_size_of_interior, DIE_FATAL, NULL},
	{"malloc_object_size of a freed block", object_size_of_freed, DIE_FATAL, "freed memory"},
	{"malloc_object_size inside a freed block", object_size_inside_freed, DIE_FATAL, "freed memory"},
	{"free_sized one byte short", sized_free_short, DIE_FATAL, ": passed size 307199, the block's size 307200\n"},
	{"free_aligned_sized(8192, 16374) of a 16384-byte block", aligned_sized_free_short, DIE_FATAL,
	 ": passed size 16374 aligned to 8192, the block's size 16384 aligned to 8192\n"},
	{"free_aligned_sized(16384, 16384) of an 8192-aligned block", aligned_sized_free_wrong_alignment, DIE_FATAL,
	 ": passed size 16384 aligned to 16384, the block's size 16384 aligned to 8192\n"},
	{"realloc((void *)1, 16)", realloc_wild, DIE_FATAL, "realloc of a pointer that is not a live allocation"},
	{"realloc shrink: write to the cut tail", realloc_shrink_tail, DIE_FAULT, NULL},
	{"realloc shrink: read of the first cut byte", realloc_shrink_first_cut_byte, DIE_FAULT, NULL},
	{"huge pages: write one byte past a populated 16 MiB block", huge_overflow_one, DIE_FAULT, NULL},
	{"huge pages: read one byte before a populated 16 MiB block", huge_underflow_one, DIE_FAULT, NULL},
	{"huge pages: write into a freed populated 16 MiB block", huge_uaf_write, DIE_FAULT, NULL},
	{"huge pages: realloc shrink cutting a huge page, write past the cut", huge_shrink_cut_inside_huge_page,
	 DIE_FAULT, NULL},
	{"use after free after mlockall(MCL_FUTURE|MCL_ONFAULT)", uaf_mlockall_future_onfault, DIE_FAULT, NULL},
	{"use after free after mlockall(MCL_FUTURE|MCL_ONFAULT), block from before",
	 uaf_mlockall_future_onfault_early, DIE_FAULT, NULL},
	{"use after free after mlockall(MCL_CURRENT|MCL_FUTURE)", uaf_mlockall_current_future, DIE_FAULT, NULL},
	{"use after free after mlockall(MCL_CURRENT|MCL_FUTURE), block from after",
	 uaf_mlockall_current_future_late, DIE_FAULT, NULL},
	{"realloc shrink after mlockall(MCL_CURRENT|MCL_FUTURE): write to the cut tail",
	 overflow_mlockall_current, DIE_FAULT, NULL},
};

int main(void)
{
	alarm(300);
	return death_run_all(cases, sizeof cases / sizeof *cases);
}
