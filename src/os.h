/*
 * os.h — the only module that talks to the kernel about memory.
 *
 * Invariants:
 *  - Every wrapper leaves errno exactly as it found it and reports failure as a
 *    return code (0 = success, otherwise the errno value the kernel gave).
 *  - Out-of-memory answers (ENOMEM, EAGAIN from a memlock limit) are returned to the
 *    caller. Any other error is returned too, and the caller decides through
 *    os_unexpected() whether it is fatal — that decision lives here, in one place.
 *  - fatal() never allocates and never returns.
 */
#ifndef RAMPART_OS_H
#define RAMPART_OS_H

#include "common.h"

void os_init(void);

/* Map len bytes of private anonymous memory; prot is PROT_NONE or PROT_READ|PROT_WRITE.
 * With fixed, replace whatever is at *addr (MAP_FIXED). */
must_check int os_map(void **addr, size_t len, int prot, bool fixed);
must_check int os_unmap(void *addr, size_t len);
must_check int os_protect(void *addr, size_t len, int prot);
must_check int os_advise(void *addr, size_t len, int advice);
/* Move the pages of [old, old+len) to exactly dst (MREMAP_FIXED|MREMAP_MAYMOVE). */
must_check int os_move(void *old, size_t len, void *dst);
/* Name an anonymous mapping in /proc/PID/maps; false where the kernel cannot
 * (built without CONFIG_ANON_VMA_NAME, or older than 5.17). */
bool os_label(void *addr, size_t len, const char *name);
/* Fill buf with random bytes from the kernel; fatal if the kernel refuses. */
void os_random(void *buf, size_t len);
/* Read a small decimal number from a /proc file; -1 when unreadable. */
long os_read_long(const char *path);

/* An allocation-path failure: true for errors that mean "no memory". */
static inline bool os_is_oom(int err) { return err == 12 /* ENOMEM */ || err == 11 /* EAGAIN */; }

/* Abort with "rampart: fatal: <what> at <addr>" on stderr. Never allocates. */
cold __attribute__((noreturn)) void fatal(const char *what, const void *addr);
/* A kernel error that is not "no memory" during an operation that must not fail. */
cold __attribute__((noreturn)) void os_unexpected(const char *call, int err, const void *addr);
/* One line on stderr, no allocation. */
void os_warn(const char *msg, const char *detail);

#endif
