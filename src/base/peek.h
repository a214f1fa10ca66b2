/*
 * peek.h — reading memory that may not be readable, without a fault: the stack, unwind
 * tables and symbol tables read by the caller trace (callers.c).
 *
 * Invariants:
 *  - No byte is read before the kernel has said that its page can be read (peek_page);
 *    a page that cannot be read makes the read fail, never fault. (A page another
 *    thread turns into a guard between the question and the read still faults: the
 *    window docs/errors.md names.)
 *  - Nothing allocates, takes a lock or changes errno.
 */
#ifndef RAMPART_PEEK_H
#define RAMPART_PEEK_H

#include "base/common.h"

/* Pages found readable, so that each is asked about once: a few dozen pages serve a
 * trace (a stack's, a table's binary search, a symbol table's). */
#define PEEK_PAGES 64
struct peek {
	uintptr_t page[PEEK_PAGES];
	uintptr_t last; /* the page of the last read: most reads are on it again */
	unsigned next;  /* the entry the next page found replaces */
};

void peek_init(struct peek *pk);
/* Can the page that holds p be read without a fault? A question to the kernel, about
 * the bytes from p on (true: p's page can be read; false: it cannot, or perhaps only
 * the page after it cannot). */
bool peek_page(uintptr_t p);
/* Copy n bytes at addr to dst; false (dst unchanged) when a byte of them cannot be read. */
bool peek_bytes(struct peek *pk, uintptr_t addr, void *dst, size_t n);

static inline bool peek_word(struct peek *pk, uintptr_t addr, uintptr_t *v)
{
	return peek_bytes(pk, addr, v, sizeof *v);
}

#endif
