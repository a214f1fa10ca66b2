/*
 * os.c — thin syscall layer: wrappers return the kernel's error code with errno
 * untouched; what an error means is the caller's to decide (base/report.h).
 */
#define _GNU_SOURCE
#include "os/os.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/procmaps.h"
#include "base/report.h"
#include "base/text.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

void os_init(void)
{
	unsigned long p = getauxval(AT_PAGESZ);
	if (p && is_pow2(p)) os_page = p;
}

/* Run a libc call that reports through errno; return its error, restore errno. A
 * failure always has its code: 0 would tell the caller it worked. */
#define OS_CALL(expr_failed)                          \
	do {                                          \
		int saved_ = errno, err_ = 0;         \
		if (expr_failed) {                    \
			err_ = errno;                 \
			invariant(err_ != 0);         \
		}                                     \
		errno = saved_;                       \
		return err_;                          \
	} while (0)

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

int os_map(void **addr, size_t len, enum os_prot kind, enum os_place place)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	int prot = kind == OS_READ_WRITE ? PROT_READ | PROT_WRITE : PROT_NONE;
	if (kind == OS_RESERVED) flags |= MAP_NORESERVE;
	if (place == OS_REPLACE) flags |= MAP_FIXED;
	if (place == OS_NOREPLACE) flags |= MAP_FIXED_NOREPLACE;
	int saved = errno, err = 0;
	void *p = mmap(place == OS_ANYWHERE ? NULL : *addr, len, prot, flags, -1, 0);
	if (p == MAP_FAILED) {
		err = errno;
		invariant(err != 0);
	} else if (place == OS_NOREPLACE && p != *addr) {
		/* Before 4.17 the flag is unknown and the address only a hint: the kernel
		 * placed the mapping elsewhere because something is at *addr. */
		munmap(p, len);
		err = EEXIST;
	} else {
		*addr = p;
	}
	errno = saved;
	return err;
}

int os_unmap(void *addr, size_t len) { OS_CALL(munmap(addr, len) != 0); }
int os_protect(void *addr, size_t len, int prot) { OS_CALL(mprotect(addr, len, prot) != 0); }
int os_advise(void *addr, size_t len, int advice) { OS_CALL(madvise(addr, len, advice) != 0); }
int os_read_only(void *addr, size_t len) { return os_protect(addr, len, PROT_READ); }

/* One madvise a span. process_madvise on the calling thread would take them all in one
 * call (Linux 6.14+), and a class's first slab would cost one call less; but a seccomp
 * filter that allows madvise and kills on any call it does not list (OpenSSH's
 * pre-authentication sandbox, systemd's SystemCallFilter= without
 * SystemCallErrorNumber=) would then kill a program whose allocator it never had to
 * know about. A new system call in a path every program takes is a change a filter's
 * author must make first; until then, none. */
int os_advise_spans(const struct os_span *s, unsigned n, int advice)
{
	if (n > OS_SPANS_MAX) return EINVAL;
	int err = 0;
	for (unsigned i = 0; i < n && !err; i++)
		if (s[i].len) err = os_advise(s[i].p, s[i].len, advice);
	return err;
}

int os_move(void *old, size_t len, size_t new_len, void *dst)
{
	OS_CALL(mremap(old, len, new_len, MREMAP_MAYMOVE | MREMAP_FIXED, dst) == MAP_FAILED);
}

/* Adds the resident bytes of pages [at, at + n) of a span of len bytes, vec[0] being
 * the page at at; ends_in as os_resident_ends. */
static size_t count_resident(const unsigned char *vec, size_t at, size_t n, size_t len, size_t head, size_t tail,
			     size_t ends_in[2])
{
	size_t found = 0, tail_from = len - MIN(tail, len);
	for (size_t i = 0; i < (n + os_page - 1) / os_page; i++) {
		size_t in = (vec[i] & 1) * os_page, off = at + i * os_page;
		found += in;
		if (ends_in && off < head) ends_in[0] += in;
		if (ends_in && off >= tail_from) ends_in[1] += in;
	}
	return found;
}

size_t os_resident_ends(void *addr, size_t len, size_t need, size_t head, size_t tail, size_t ends_in[2])
{
	enum { PAGES = 1024 }; /* pages per call: 1 KiB of vector on the stack */
	unsigned char vec[PAGES];
	int saved = errno;
	size_t found = 0;
	if (ends_in) ends_in[0] = ends_in[1] = 0;
	for (size_t off = 0; off < len && found + (len - off) >= need; off += PAGES * os_page) {
		size_t n = MIN(len - off, PAGES * os_page);
		if (mincore((char *)addr + off, n, vec) != 0) break;
		found += count_resident(vec, off, n, len, head, tail, ends_in);
	}
	errno = saved;
	return found;
}

bool os_residency(void *addr, size_t len, unsigned char *vec)
{
	int saved = errno;
	bool ok = mincore(addr, len, vec) == 0;
	errno = saved;
	return ok;
}

size_t os_resident_counted(const unsigned char *vec, size_t len, size_t head, size_t tail, size_t ends_in[2])
{
	if (ends_in) ends_in[0] = ends_in[1] = 0;
	return count_resident(vec, 0, len, len, head, tail, ends_in);
}

/* Does [addr, addr+len) cross a VMA boundary? Asking the kernel to grow the span in
 * place, without moving it, answers without side effects: every kernel checks first
 * that the span lies in one VMA (EFAULT), then fails to grow it (ENOMEM) because the
 * region goes on behind it. Moving instead would be no probe: before 6.17 a refused
 * move has already unmapped its destination. */
static bool crosses(void *addr, size_t len)
{
	int saved = errno;
	void *p = mremap(addr, len, len + os_page, 0);
	bool crossing = p == MAP_FAILED && errno == EFAULT;
	if (p != MAP_FAILED && mremap(p, len + os_page, len, 0) == MAP_FAILED)
		report_kernel(OP_MREMAP, errno, addr); /* grew into a hole: cannot happen in a region */
	errno = saved;
	return crossing;
}

bool os_spans_vmas(void *addr, size_t len) { return crosses(addr, len); }

bool os_page_mapped(const void *addr)
{
	unsigned char vec;
	int saved = errno;
	/* ENOMEM: nothing mapped there. */
	bool mapped = mincore((void *)((uintptr_t)addr & ~(os_page - 1)), os_page, &vec) == 0 || errno != ENOMEM;
	errno = saved;
	return mapped;
}

/* Linux 6.17 lets mremap move a span that crosses VMAs; before, the move fails with
 * EFAULT after unmapping its destination. Asked once, on scratch pages laid out as three
 * VMAs (the middle one read-only): move the first two pages onto the last two. Either
 * way only what is still rampart's is unmapped afterwards, never the hole the move or
 * the refusal left (another thread may have mapped something there). */
static _Atomic int cross_moves = -1; /* -1 not asked yet, 0 no, 1 yes */

bool os_moves_cross_vmas(void)
{
	int known = atomic_load_explicit(&cross_moves, memory_order_relaxed);
	if (known >= 0) return known;
	void *p = NULL;
	if (os_map(&p, 4 * os_page, OS_READ_WRITE, OS_ANYWHERE)) return false; /* ask again later */
	char *c = p;
	if (os_protect(c + os_page, os_page, PROT_READ)) {
		if (os_unmap(c, 4 * os_page)) {}
		return false;
	}
	int saved = errno;
	bool moved = mremap(c, 2 * os_page, 2 * os_page, MREMAP_MAYMOVE | MREMAP_FIXED, c + 2 * os_page) != MAP_FAILED;
	int err = errno;
	errno = saved;
	if (os_unmap(moved ? c + 2 * os_page : c, 2 * os_page)) {}
	/* Any answer but "moved" or EFAULT (say ENOMEM) settles nothing: ask again later. */
	if (moved || err == EFAULT) atomic_store_explicit(&cross_moves, moved, memory_order_relaxed);
	return moved;
}

size_t os_one_mapping(void *addr, size_t len)
{
	if (!crosses(addr, len)) return len;
	/* Bisect on whole pages: [addr, addr + lo) is in one VMA, [addr, addr + hi) is not. */
	size_t lo = 0, hi = len / os_page;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (crosses(addr, mid * os_page)) hi = mid;
		else lo = mid;
	}
	if (!lo) report_kernel(OP_MREMAP, EFAULT, addr); /* not even one page is mapped */
	return lo * os_page;
}

bool os_label(void *addr, size_t len, const char *name)
{
	int saved = errno;
	bool ok = prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)addr, len, (unsigned long)name) == 0;
	errno = saved;
	return ok;
}

void os_random(void *buf, size_t len)
{
	int saved = errno;
	unsigned char *p = buf;
	while (len) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0) {
			if (errno == EINTR) continue;
			report_kernel(OP_GETRANDOM, errno, buf);
		}
		p += n;
		len -= (size_t)n;
	}
	errno = saved;
}

uint64_t os_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

long os_read_long(const char *path)
{
	int saved = errno;
	long v = -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char buf[32];
		ssize_t n = read(fd, buf, sizeof buf - 1);
		if (n > 0 && buf[0] >= '0' && buf[0] <= '9') {
			v = 0;
			for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++) v = v * 10 + (buf[i] - '0');
		}
		close(fd);
	}
	errno = saved;
	return v;
}

unsigned os_cpus(void)
{
	int saved = errno;
	/* The raw call: glibc's wrapper needs a cpu_set_t of its own size, and the kernel
	 * answers with the bytes it wrote, at most the size of its own mask. */
	unsigned long mask[4096 / (8 * sizeof(unsigned long))];
	long n = syscall(SYS_sched_getaffinity, 0, sizeof mask, mask);
	unsigned count = 0;
	for (long i = 0; i < n / (long)sizeof mask[0]; i++) count += (unsigned)__builtin_popcountl(mask[i]);
	errno = saved;
	return count;
}

bool os_range_mapped(uintptr_t lo, uintptr_t hi)
{
	struct maps_reader m;
	struct maps_line l;
	int saved = errno;
	bool hit = false;
	if (!maps_open(&m)) {
		errno = saved;
		return false;
	}
	while (!hit && maps_next(&m, &l)) hit = l.start < hi && lo < l.end;
	maps_close(&m);
	errno = saved;
	return hit;
}

/* Two system calls, where the maps file costs the kernel a formatted line per mapping and
 * its path, so asking the kernel directly is several times cheaper at start-up
 * (bench/journal/2026-11-27-figures-from-code-comments.md). Sanitizers that keep shadow memory
 * (ThreadSanitizer, MemorySanitizer, ...) intercept mmap: asked for an address outside
 * the program's part of the address space, they let the kernel place the mapping
 * anywhere, and abort the process if that lands outside it too. Where one is linked in,
 * only the maps file is asked. */
extern void __tsan_init(void) __attribute__((weak));
extern void __msan_init(void) __attribute__((weak));
extern void __asan_init(void) __attribute__((weak));
extern void __hwasan_init(void) __attribute__((weak));

bool os_intercepted(void) { return __tsan_init || __msan_init || __asan_init || __hwasan_init; }

bool os_range_free(uintptr_t lo, uintptr_t hi)
{
	if (os_intercepted()) return !os_range_mapped(lo, hi);
	void *p = (void *)lo;
	int err = os_map(&p, hi - lo, OS_RESERVED, OS_NOREPLACE);
	if (err == EEXIST) return false;
	if (err) return !os_range_mapped(lo, hi);
	err = os_unmap(p, hi - lo);
	if (err) report_kernel(OP_MUNMAP, err, p);
	return true;
}

bool os_find_gap(uintptr_t lo, uintptr_t hi, size_t size, uintptr_t *start, uintptr_t *end)
{
	struct maps_reader m;
	struct maps_line l;
	int saved = errno;
	bool found = false;
	if (!maps_open(&m)) {
		errno = saved;
		return false;
	}
	uintptr_t from = lo; /* the lines come in address order */
	while (!found && from < hi) {
		uintptr_t to = maps_next(&m, &l) ? MIN(l.start, hi) : hi;
		if (to > from && to - from >= size) {
			*start = from;
			*end = to;
			found = true;
		}
		if (to == hi) break;
		from = MAX(from, l.end);
	}
	maps_close(&m);
	errno = saved;
	return found;
}

/* --- transparent huge pages --- */

/* The THP mode a sysfs "enabled" file names: the word in brackets ("always [madvise]
 * never"); 0 when the file cannot be read now (a transient failure: ask again later),
 * -1 when it says "[inherit]" or does not exist. */
static int huge_mode_file(const char *path)
{
	char buf[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return errno == ENOENT || errno == EACCES ? -1 : 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0) return 0;
	buf[n] = 0;
	if (strstr(buf, "[always]")) return OS_HUGE_ALWAYS;
	if (strstr(buf, "[madvise]")) return OS_HUGE_ASKED;
	if (strstr(buf, "[never]")) return OS_HUGE_NEVER;
	return -1;
}

int os_huge_pages(size_t *size)
{
	int saved = errno;
	*size = 0;
	long pmd = os_read_long("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
	int mode = huge_mode_file("/sys/kernel/mm/transparent_hugepage/enabled");
	if (mode > 0 && pmd > 0) {
		/* Linux 6.8+: the PMD size has its own setting, which may defer ("inherit"). */
		char path[96];
		struct out o = out_string(path, sizeof path);
		out_str(&o, "/sys/kernel/mm/transparent_hugepage/hugepages-");
		out_num(&o, (unsigned long)pmd >> 10);
		out_str(&o, "kB/enabled");
		int own = huge_mode_file(path);
		if (own) mode = own > 0 ? own : mode;
		else mode = 0;
	}
	if (mode == 0) { /* unreadable for now */
		errno = saved;
		return 0;
	}
	if (mode < 0 || pmd <= 0 || (size_t)pmd <= os_page || (pmd & (pmd - 1))) mode = OS_HUGE_NEVER;
	/* PR_SET_THP_DISABLE (inherited across fork and exec): 1 turns huge pages off for
	 * the process; with PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18, the answer has more
	 * bits) only spans marked MADV_HUGEPAGE get them. An old kernel answers -1. */
	int off = prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
	if (off == 1) mode = OS_HUGE_NEVER;
	else if (off > 1 && mode == OS_HUGE_ALWAYS) mode = OS_HUGE_ASKED;
	if (mode != OS_HUGE_NEVER) *size = (size_t)pmd;
	errno = saved;
	return mode;
}
