/*
 * populate.h — new large blocks populated up front, as far as the program recently gave
 * touched pages back.
 *
 * A freed large block's pages go back to the kernel at once (its region closes), so
 * the next large block takes one page fault per page the program writes. When the
 * freed blocks were touched, the next ones will likely be too, and populating a block
 * with one MADV_POPULATE_WRITE costs a fraction of faulting it in page by page, and its
 * spans aligned to the huge page size can take one huge page each (docs/large.md;
 * the figures: bench/journal/2026-11-27-figures-from-code-comments.md).
 *
 * Invariants:
 *  - Credit comes only from pages found resident (mincore) in large blocks as they are
 *    freed; a new block is populated only as far as the credit goes, which it spends.
 *    So populating never makes the process more resident than it was before those
 *    frees. The credit is capped (large_refill_bytes) and lapses after
 *    CONFIG_LARGE_REFILL_MS without a free.
 *  - Only blocks the program mostly used (at least half their pages) earn credit. While
 *    the freed blocks are used less than that, only one free in POPULATE_PROBE_EVERY is
 *    measured, so a program with sparse large blocks pays no system call for this on
 *    most frees.
 *  - Pages rampart populated earn credit again less a tax (whether the program wrote
 *    them cannot be seen without reading the block, which the program may have
 *    protected): a quarter, unless the program touched at least half of each of the
 *    block's unpopulated ends (then a sixty-fourth). A populated block always has such
 *    ends, its witnesses: its first and last 128th (at least a page each) are never
 *    populated. So credit a program does not use shrinks by a quarter of every block it
 *    populates instead of keeping itself going (gone after populating four times what
 *    it held; one block's worth: three blocks), while a block that keeps being used is
 *    populated nearly whole. A program that touches both ends of its blocks and little
 *    between keeps its credit (at most the cap).
 *  - Huge pages are asked for only where rampart populates anyway: the spans of a
 *    populated range that are aligned to the huge page size (emptied page tables, and
 *    MADV_HUGEPAGE where the kernel wants to be asked). Under THP "always", where a
 *    fault anywhere in an aligned span inside the block brings the whole span in, the
 *    populated range neither starts nor ends inside one. The mark stays
 *    with the address space after the block is freed (madvise backend): a later block
 *    there may get huge pages where the program touches it sparsely (khugepaged by
 *    default fills a 2 MiB span around a single touched page), which is the one way
 *    this can make a process more resident than populating alone would.
 *  - "Resident" is what mincore reports: pages the program only read (mapped to the
 *    kernel's shared zero page) count as used too.
 *  - Populating is advice: a failure leaves the block as it would be without it, and
 *    EINVAL before any success (a kernel before 5.14) switches it off for the process.
 *    Any other failure is never fatal: a block's pages may carry what a program did to
 *    them (mlock, a locked mapping's limit, a poisoned page).
 *  - A forked child starts without credit: the parent's frees are not the child's use.
 *  - Protections are unchanged: freed pages are still dropped at free; what is
 *    populated are fresh zero pages of the new block, before the program sees it.
 *  - populate_freed and populate_take run under the caller's lock; populate_block does
 *    not need it (it runs after the lock is given back).
 */
#ifndef RAMPART_POPULATE_H
#define RAMPART_POPULATE_H

#include <stdatomic.h>

#include "base/common.h"

#define POPULATE_PROBE_EVERY 16
/* Pages rampart populated earn credit again less a tax: a sixty-fourth where the program
 * touched at least half of each unpopulated end, a quarter otherwise (populate_freed).
 * A small tax for all would keep credit nobody uses alive for dozens of blocks; a
 * quarter for all leaves a used block's pages to page faults. Witnesses at both ends,
 * not one, so that a program that touches only the top of its blocks (like a stack)
 * does not keep its credit. The tax values were chosen on the large benchmark
 * (bench/journal/2026-11-27-figures-from-code-comments.md). */
#define POPULATE_TAX_SEEN 64
#define POPULATE_TAX_UNSEEN 4
/* A populated block's first and last 1/128 (at least a page each) are left to the
 * program: the witnesses of its use (1/64 in all). */
#define POPULATE_WITNESS_PART 64

struct populate_credit {
	size_t credit;     /* bytes that may be populated */
	size_t cap;        /* most credit held; 0: refill off */
	uint64_t until_ms; /* the credit lapses then */
	bool dense;        /* the last block measured was mostly used */
	unsigned skip;     /* frees left unmeasured before the next probe (while !dense) */
	_Atomic bool off;    /* the kernel cannot populate */
	_Atomic bool worked; /* populating succeeded at least once */
	/* 0 until a populate has asked; then os_huge_pages' huge page size | its mode (the
	 * size is a power of two above a page, so the low bits are free). */
	_Atomic size_t huge;
};

void populate_init(struct populate_credit *r, size_t cap);
/* A large block [p, p + len) is about to be freed, [p + off, p + off + populated)
 * filled by populate_block: its resident pages become credit. Never reads the block.
 * vec, where not NULL, is the block's os_residency, read by the caller just before:
 * then no mincore of its own. */
void populate_freed(struct populate_credit *r, const void *p, size_t len, size_t off, size_t populated,
		    const unsigned char *vec);
/* Bytes (whole pages) to populate in a new block [p, p + len), from p + *off (set
 * only when the answer is not 0). */
size_t populate_take(struct populate_credit *r, uintptr_t p, size_t len, size_t *off);
/* Will the next populate_freed count the block's resident pages (else it asks the
 * kernel nothing)? For a caller that reads them once for several uses. */
bool populate_counts(const struct populate_credit *r);
/* Did populate_block(r, p, len) ask for huge pages with marks of their own (which set
 * the span apart in a VMA of its own, so guard_seal will not keep the block)? */
bool populate_marked(struct populate_credit *r, uintptr_t p, size_t len);
/* Populate [p, p + len) of a block no one else has seen yet; errno unchanged. */
void populate_block(struct populate_credit *r, void *p, size_t len);
/* In the child after fork (no other thread exists there). */
void populate_fork_child(struct populate_credit *r);

#endif
