/*
 * text.h — the one text writer: messages, warnings, reports and file names are put
 * together with it, never with printf (which may allocate) and never by hand.
 *
 * Invariants:
 *  - Nothing here allocates or changes errno; the text lives in storage the caller
 *    gives (out_fd, out_string), on the stack or static.
 *  - A writer to a file descriptor (out_fd) flushes with write(2) when its storage is
 *    full and at out_flush: output is cut into pieces of the storage's size, never lost
 *    for want of room (a failing write loses the rest).
 *  - A string writer (out_string) keeps what fits, cut at the end of its storage, and
 *    its storage always holds a terminated string.
 */
#ifndef RAMPART_TEXT_H
#define RAMPART_TEXT_H

#include "base/common.h"

struct out {
	char *buf;
	size_t cap, n;
	int fd; /* -1: a string writer */
};

static inline struct out out_fd(int fd, char *storage, size_t size)
{
	return (struct out){.buf = storage, .cap = size, .fd = fd};
}
static inline struct out out_string(char *storage, size_t size)
{
	storage[0] = 0;
	return (struct out){.buf = storage, .cap = size, .fd = -1};
}

void out_str(struct out *o, const char *s);
/* n bytes of s, or up to its terminator if that comes first. */
void out_mem(struct out *o, const char *s, size_t n);
void out_num(struct out *o, unsigned long v);
/* "0x" and the hexadecimal digits of v. */
void out_hex(struct out *o, uintptr_t v);
/* v / 10^decimals with that many decimals (v scaled by the caller). */
void out_fixed(struct out *o, unsigned long v, unsigned decimals);
/* A writer to a file descriptor: write what is held. A string writer: nothing to do. */
void out_flush(struct out *o);

#endif
