/*
 * os.h — the only module that talks to the kernel about memory.
 *
 * Invariants:
 *  - Every wrapper leaves errno exactly as it found it and reports failure as a
 *    return code (0 = success, otherwise the errno value the kernel gave).
 *  - Out-of-memory answers (ENOMEM, EAGAIN from a memlock limit) are returned to the
 *    caller. Any other error is returned too, and the caller decides whether it is
 *    fatal (report_kernel, base/report.h).
 *  - Memory-changing system calls (mmap, munmap, mprotect, madvise, mremap) are made
 *    here and in the guard layer only; above it nobody calls them, nor the wrappers
 *    below that take a protection or an advice.
 */
#ifndef RAMPART_OS_H
#define RAMPART_OS_H

#include "base/common.h"

void os_init(void);

/* Where os_map puts a mapping. */
enum os_place {
	OS_ANYWHERE,  /* where the kernel chooses */
	OS_REPLACE,   /* exactly at *addr, replacing what is there: only over rampart's own spans */
	OS_NOREPLACE, /* exactly at *addr, into a hole; EEXIST if anything is there (another
		       * thread's mapping may have landed in a hole rampart left) */
};

/* What os_map maps (private anonymous memory, always):
 *  - OS_READ_WRITE: read-write memory, charged to the commit (Committed_AS);
 *  - OS_CLOSED: PROT_NONE; spans later opened with mprotect are charged then, as any
 *    writable memory is, and a request the kernel's overcommit accounting refuses fails
 *    there with ENOMEM (a program asking for 16 TiB gets NULL, not a pointer it is
 *    killed for later). Every region rampart makes is closed this way;
 *  - OS_RESERVED: PROT_NONE address space (MAP_NORESERVE) that is never opened: only
 *    for asking whether address space is free (os_range_free). */
enum os_prot { OS_READ_WRITE, OS_CLOSED, OS_RESERVED };
must_check int os_map(void **addr, size_t len, enum os_prot prot, enum os_place place);
must_check int os_unmap(void *addr, size_t len);
must_check int os_protect(void *addr, size_t len, int prot);
must_check int os_advise(void *addr, size_t len, int advice);
/* The same advice for up to OS_SPANS_MAX spans (empty ones skipped), one madvise each
 * (os.c says why not process_madvise); 0 or the first errno. */
struct os_span {
	void *p;
	size_t len;
};
#define OS_SPANS_MAX 8
must_check int os_advise_spans(const struct os_span *s, unsigned n, int advice);
/* Make [addr, addr+len) read-only for good (the read-only roots, base/roots.h). */
must_check int os_read_only(void *addr, size_t len);
/* Move the pages of [old, old+len) to exactly dst (MREMAP_FIXED|MREMAP_MAYMOVE), the
 * moved mapping made new_len long there (new_len >= len: the kernel extends the moved
 * VMA itself, so what it grows by is the same VMA, with no pages yet). Before Linux 6.17
 * the source must lie in one VMA (see os_one_mapping), and at any version when new_len
 * differs from len: a source that crosses VMAs fails with EFAULT *after* the kernel has
 * unmapped [dst, dst+new_len). */
must_check int os_move(void *old, size_t len, size_t new_len, void *dst);
/* Bytes of [addr, addr+len) (whole pages) resident in memory; the count stops early,
 * below need, once the pages left could no longer bring it to need. 0 where mincore
 * refuses (the caller treats that as "none"). With ends_in, the same pass also counts
 * the resident bytes of the first head and of the last tail bytes (whole pages; exact
 * only when the count ran to the end, that is reached need). */
size_t os_resident_ends(void *addr, size_t len, size_t need, size_t head, size_t tail, size_t ends_in[2]);
static inline size_t os_resident(void *addr, size_t len, size_t need)
{
	return os_resident_ends(addr, len, need, 0, 0, NULL);
}
/* One mincore over [addr, addr+len) into vec (a byte per page, bit 0 set for a resident
 * page), so that callers deciding several things about the same span ask the kernel
 * once; errno unchanged. False where the kernel refuses. */
bool os_residency(void *addr, size_t len, unsigned char *vec);
/* os_resident_ends counted from such a vector (the whole span, no early stop). */
size_t os_resident_counted(const unsigned char *vec, size_t len, size_t head, size_t tail, size_t ends_in[2]);
/* Does [addr, addr+len) cross a VMA boundary? One system call, no side effect. */
bool os_spans_vmas(void *addr, size_t len);
/* Is the page at addr mapped (whatever its protection)? One mincore; errno unchanged. */
bool os_page_mapped(const void *addr);
/* How many bytes from addr (at most len, whole pages) lie in the same VMA as addr. For
 * spans inside rampart's regions, which are always followed by more of the region. */
size_t os_one_mapping(void *addr, size_t len);
/* Does os_move accept a source that crosses VMAs (Linux 6.17+)? Found out once. */
bool os_moves_cross_vmas(void);
/* Name an anonymous mapping in /proc/PID/maps; false where the kernel cannot
 * (built without CONFIG_ANON_VMA_NAME, or older than 5.17). */
bool os_label(void *addr, size_t len, const char *name);
/* Fill buf with random bytes from the kernel; fatal if the kernel refuses. */
void os_random(void *buf, size_t len);
/* The C library knows the process has never had a second thread (glibc's
 * __libc_single_threaded, 2.32 and later); false when it cannot tell (musl). Inline:
 * every lock asks it (lock.h). Weak: absent from musl and from glibc before 2.32. glibc
 * clears it at the start of pthread_create, before the new thread exists, and its own
 * malloc skips its arena locks on the same answer. */
extern char __libc_single_threaded __attribute__((weak));
static inline bool os_single_threaded(void) { return &__libc_single_threaded && __libc_single_threaded; }
/* Milliseconds from a coarse monotonic clock (vDSO: no system call). */
uint64_t os_now_ms(void);
/* Does any mapping of the process overlap [lo, hi)? From /proc/self/maps, read with
 * raw system calls and no allocation; false when it cannot be read (the caller's
 * MAP_FIXED_NOREPLACE still refuses an occupied address later). */
bool os_range_mapped(uintptr_t lo, uintptr_t hi);
/* The same question, answered first by mapping [lo, hi) PROT_NONE where nothing may be
 * and unmapping it again; where the kernel will not map it (RLIMIT_AS, a memlock limit
 * under mlockall(MCL_FUTURE), the VMA limit), by os_range_mapped. Only for address
 * space no other thread maps into without asking for that address (start-up windows). */
bool os_range_free(uintptr_t lo, uintptr_t hi);
/* Is a sanitizer that keeps shadow memory linked in? It intercepts mmap and moves (or
 * aborts on) a mapping asked for outside the program's part of the address space. */
bool os_intercepted(void);
/* The lowest unmapped span of at least size bytes inside [lo, hi), from the same file:
 * false when there is none or the file cannot be read. */
bool os_find_gap(uintptr_t lo, uintptr_t hi, size_t size, uintptr_t *start, uintptr_t *end);
/* Read a small decimal number from a /proc file; -1 when unreadable. */
long os_read_long(const char *path);
/* How many CPUs the calling thread may run on (its affinity mask, one system call);
 * 0 when the kernel does not say (a mask wider than 4,096 CPUs). errno unchanged. */
unsigned os_cpus(void);

/* Transparent huge pages, from sysfs (up to three small files) and prctl: whether the
 * kernel maps huge pages into anonymous memory by itself (OS_HUGE_ALWAYS), only into
 * spans marked MADV_HUGEPAGE (OS_HUGE_ASKED), or not at all for this process
 * (OS_HUGE_NEVER, also where the files do not exist); 0 when a file could not be read
 * now (no file descriptor left, say: ask again later). *size is the huge page size (the
 * span one page table maps: 2 MiB with 4 KiB pages), 0 unless huge pages can be had.
 * errno unchanged. */
enum { OS_HUGE_NEVER = 1, OS_HUGE_ASKED, OS_HUGE_ALWAYS };
int os_huge_pages(size_t *size);

/* An allocation-path failure: true for errors that mean "no memory". */
static inline bool os_is_oom(int err) { return err == 12 /* ENOMEM */ || err == 11 /* EAGAIN */; }

#endif
