/*
 * os.c — thin syscall layer. The error policy of the whole allocator lives here:
 * wrappers return the kernel's error code with errno untouched; os_unexpected()
 * and fatal() are the only ways rampart ends the process.
 */
#define _GNU_SOURCE
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

size_t os_page = 4096;

void os_init(void)
{
	unsigned long p = getauxval(AT_PAGESZ);
	if (p && is_pow2(p)) os_page = p;
}

/* Run a libc call that reports through errno; return its error, restore errno. */
#define OS_CALL(expr_failed)                       \
	do {                                       \
		int saved_ = errno, err_ = 0;      \
		if (expr_failed) err_ = errno;     \
		errno = saved_;                    \
		return err_;                       \
	} while (0)

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

int os_map(void **addr, size_t len, int prot, enum os_place place)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	if (prot == PROT_NONE) flags |= MAP_NORESERVE;
	if (place == OS_REPLACE) flags |= MAP_FIXED;
	if (place == OS_NOREPLACE) flags |= MAP_FIXED_NOREPLACE;
	int saved = errno, err = 0;
	void *p = mmap(place == OS_ANYWHERE ? NULL : *addr, len, prot, flags, -1, 0);
	if (p == MAP_FAILED) {
		err = errno;
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

int os_move(void *old, size_t len, void *dst)
{
	OS_CALL(mremap(old, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst) == MAP_FAILED);
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
		os_unexpected("mremap", errno, addr); /* grew into a hole: cannot happen in a region */
	errno = saved;
	return crossing;
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
	if (!lo) os_unexpected("mremap", EFAULT, addr); /* not even one page is mapped */
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
			os_unexpected("getrandom", errno, buf);
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

/* --- reporting: fixed buffers only, nothing here may allocate --- */

static size_t put_str(char *dst, size_t at, size_t cap, const char *s)
{
	while (*s && at < cap) dst[at++] = *s++;
	return at;
}

static size_t put_hex(char *dst, size_t at, size_t cap, uintptr_t v)
{
	char tmp[18];
	int n = 0;
	do tmp[n++] = "0123456789abcdef"[v & 15]; while (v >>= 4);
	at = put_str(dst, at, cap, "0x");
	while (n && at < cap) dst[at++] = tmp[--n];
	return at;
}

static size_t put_dec(char *dst, size_t at, size_t cap, unsigned v)
{
	char tmp[12];
	int n = 0;
	do tmp[n++] = (char)('0' + v % 10); while (v /= 10);
	while (n && at < cap) dst[at++] = tmp[--n];
	return at;
}

static void write_all(const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(STDERR_FILENO, buf, len);
		if (n < 0 && errno == EINTR) continue;
		if (n <= 0) return;
		buf += n;
		len -= (size_t)n;
	}
}

void os_warn(const char *msg, const char *detail)
{
	char line[256];
	size_t n = put_str(line, 0, sizeof line - 1, "rampart: warning: ");
	n = put_str(line, n, sizeof line - 1, msg);
	if (detail) n = put_str(line, n, sizeof line - 1, detail);
	line[n++] = '\n';
	int saved = errno; /* a warning is no failure of the caller's call */
	write_all(line, n);
	errno = saved;
}

static __attribute__((noreturn)) void die(const char *line, size_t n)
{
	write_all(line, n);
	/* The heap is not trustworthy any more: no user SIGABRT handler may run on it. */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGABRT, &dfl, NULL);
	abort();
}

/* "rampart: fatal: <what> at <addr>" into line; returns its length. */
static size_t fatal_line(char *line, size_t cap, const char *what, const void *addr)
{
	size_t n = put_str(line, 0, cap - 1, "rampart: fatal: ");
	n = put_str(line, n, cap - 1, what);
	n = put_str(line, n, cap - 1, " at ");
	n = put_hex(line, n, cap - 1, (uintptr_t)addr);
	line[n++] = '\n';
	return n;
}

void fatal_report(const char *what, const void *addr)
{
	char line[256];
	size_t n = fatal_line(line, sizeof line, what, addr);
	int saved = errno;
	write_all(line, n);
	errno = saved;
}

void fatal(const char *what, const void *addr)
{
	char line[256];
	die(line, fatal_line(line, sizeof line, what, addr));
}

void os_unexpected(const char *call, int err, const void *addr)
{
	char line[256];
	size_t n = put_str(line, 0, sizeof line - 1, "rampart: fatal: unexpected error ");
	n = put_dec(line, n, sizeof line - 1, (unsigned)err);
	n = put_str(line, n, sizeof line - 1, " from ");
	n = put_str(line, n, sizeof line - 1, call);
	n = put_str(line, n, sizeof line - 1, " at ");
	n = put_hex(line, n, sizeof line - 1, (uintptr_t)addr);
	line[n++] = '\n';
	die(line, n);
}
