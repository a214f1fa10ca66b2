/*
 * os.c — thin syscall layer. The error policy of the whole allocator lives here:
 * wrappers return the kernel's error code with errno untouched; os_unexpected()
 * and fatal() are the only ways rampart ends the process.
 */
#define _GNU_SOURCE
#include "os/os.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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

size_t os_resident_ends(void *addr, size_t len, size_t need, size_t head, size_t tail, size_t ends_in[2])
{
	enum { PAGES = 1024 }; /* pages per call: 1 KiB of vector on the stack */
	unsigned char vec[PAGES];
	int saved = errno;
	size_t found = 0, tail_from = len - MIN(tail, len);
	if (ends_in) ends_in[0] = ends_in[1] = 0;
	for (size_t off = 0; off < len && found + (len - off) >= need; off += PAGES * os_page) {
		size_t n = MIN(len - off, PAGES * os_page);
		if (mincore((char *)addr + off, n, vec) != 0) break;
		for (size_t i = 0; i < (n + os_page - 1) / os_page; i++) {
			size_t in = (vec[i] & 1) * os_page, at = off + i * os_page;
			found += in;
			if (ends_in && at < head) ends_in[0] += in;
			if (ends_in && at >= tail_from) ends_in[1] += in;
		}
	}
	errno = saved;
	return found;
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


/* --- the callers of a fatal error ---------------------------------------------------
 *
 * After the fatal line, the return addresses found on the calling thread's stack, as
 * "module+offset". Chosen so that nothing can allocate, take a lock the program might
 * hold, or read anything a heap bug may have damaged:
 *  - no unwinder (libgcc's allocates and takes locks) and no frame-pointer chain
 *    (rampart and most distribution code are built without frame pointers, so the
 *    chain would be garbage): the stack is scanned for words that point just after a
 *    call instruction in an executable, readable file mapping;
 *  - no dladdr or dl_iterate_phdr: their link maps live in the heap that is corrupt.
 *    Modules come from /proc/self/maps (kernel data), read with raw system calls into
 *    a fixed buffer (openat directly, so an interposed or wrapped open() is not used);
 *  - the scan covers only the mapping that holds the stack pointer (the thread's
 *    stack), upwards from it, at most TRACE_SCAN bytes and TRACE_FRAMES frames;
 *  - nothing is read that could fault: a report must end in SIGABRT (or, under
 *    on_error=report, go on), never in a SIGSEGV that runs the program's handler on the
 *    damaged heap. The mapping that holds the stack pointer need not be readable all
 *    the way: a stack the program took from the heap (coroutines, ucontext, green
 *    threads, pthread_attr_setstack) lies in one of rampart's regions, where the next
 *    guard is a marker inside the same mapping under the madvise backend, and any
 *    program may put markers or PROT_NONE pages anywhere (a file mapping past its end
 *    raises SIGBUS). So every page is asked of the kernel before its first byte is read
 *    (page_readable), the stack's pages one by one and the scan ends at the first one
 *    that is not; the same for the bytes before a candidate return address and for a
 *    module's ELF header. A page found readable may still become a guard before it is
 *    read, if another thread closes a slab there at that moment: copying each page with
 *    process_vm_readv would close that window, but is a system call rampart makes
 *    nowhere else (seccomp filters built from its list would kill the process by
 *    SIGSYS) and qemu-user lacks it.
 * A scan can also show stale return addresses left by earlier calls: the heading says
 * so. The offset is from the module's first mapping (its load base): what
 * addr2line -e module expects for shared objects and PIE programs; a program linked
 * at a fixed address (ET_EXEC) gets its addresses as they are. */
#define TRACE_FRAMES 16
#define TRACE_RANGES 256
#define TRACE_SCAN (64u * 1024u)
#define TRACE_NAME 160

struct maps_reader {
	int fd;
	size_t len, pos;
	char buf[2048];
};

struct maps_line {
	uintptr_t start, end, offset;
	bool r, x;
	const char *path; /* points into line[]; "" for anonymous mappings */
	char line[512];
};

static bool maps_open(struct maps_reader *m)
{
	m->fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
	m->len = m->pos = 0;
	return m->fd >= 0;
}

static uintptr_t parse_hex(const char **p)
{
	uintptr_t v = 0;
	for (;; (*p)++) {
		char c = **p;
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
		if (d == 16) return v;
		v = v << 4 | d;
	}
}

/* The next line of /proc/self/maps, parsed; false at the end. Long lines are cut. */
static bool maps_next(struct maps_reader *m, struct maps_line *l)
{
	size_t n = 0;
	for (;;) {
		if (m->pos == m->len) {
			ssize_t r = read(m->fd, m->buf, sizeof m->buf);
			if (r <= 0) {
				if (!n) return false;
				break;
			}
			m->len = (size_t)r;
			m->pos = 0;
		}
		char c = m->buf[m->pos++];
		if (c == '\n') break;
		if (n < sizeof l->line - 1) l->line[n++] = c;
	}
	l->line[n] = 0;
	/* start-end perms offset dev inode path */
	const char *p = l->line;
	l->start = parse_hex(&p);
	if (*p == '-') p++;
	l->end = parse_hex(&p);
	while (*p == ' ') p++;
	l->r = p[0] == 'r';
	l->x = p[0] && p[1] && p[2] == 'x';
	for (int field = 0; field < 2 && *p; field++) { /* perms, then offset */
		while (*p && *p != ' ') p++;
		while (*p == ' ') p++;
		if (field == 0) {
			l->offset = parse_hex(&p);
			p--; /* let the loop skip the rest of the field */
		}
	}
	for (int field = 0; field < 2 && *p; field++) { /* dev, inode */
		while (*p && *p != ' ') p++;
		while (*p == ' ') p++;
	}
	l->path = p;
	return true;
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
	(void)close(m.fd);
	errno = saved;
	return hit;
}

/* Two system calls, where the maps file costs the kernel a formatted line per mapping and
 * its path: measured on Linux 6.18 (x86_64 VM), a start-up window checked in about 20 us
 * through the file, a few us this way. Sanitizers that keep shadow memory
 * (ThreadSanitizer, MemorySanitizer, ...) intercept mmap: asked for an address outside
 * the program's part of the address space, they let the kernel place the mapping
 * anywhere, and abort the process if that lands outside it too. Where one is linked in,
 * only the maps file is asked. */
extern void __tsan_init(void) __attribute__((weak));
extern void __msan_init(void) __attribute__((weak));
extern void __asan_init(void) __attribute__((weak));
extern void __hwasan_init(void) __attribute__((weak));

bool os_range_free(uintptr_t lo, uintptr_t hi)
{
	if (__tsan_init || __msan_init || __asan_init || __hwasan_init) return !os_range_mapped(lo, hi);
	void *p = (void *)lo;
	int err = os_map(&p, hi - lo, OS_RESERVED, OS_NOREPLACE);
	if (err == EEXIST) return false;
	if (err) return !os_range_mapped(lo, hi);
	err = os_unmap(p, hi - lo);
	if (err) os_unexpected("munmap", err, p);
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
	(void)close(m.fd);
	errno = saved;
	return found;
}

struct exec_range {
	uintptr_t start, end, base;
};

/* Can the page at p (page-aligned) be read without a fault? The kernel reads a path
 * from it and answers EFAULT where a user access would fault: a guard marker (the
 * madvise backend is chosen only where access() answers EFAULT on one, guard.c), a
 * PROT_NONE page, a file page past the end of its file. No signal, no allocation, and
 * a system call rampart's start-up probe already makes. Every page size Linux has is
 * a multiple of 4 KiB and the kernel reads at most PATH_MAX (4096) bytes of a path,
 * so it never reads past this page. Only an answer that shows the path was read counts: an error
 * that may come before the read (ENOMEM, or a seccomp filter's EPERM or ENOSYS) leaves
 * the page unknown, hence unread. The raw call, like openat above: a program's own
 * access() (a sandbox's or fakeroot's wrapper) must not run here. On readable bytes
 * the kernel looks the "path" up (mostly a short relative name in the working
 * directory, not found): harmless, and at most a few dozen of them per report. */
static bool page_readable(uintptr_t p)
{
	int saved = errno;
#ifdef SYS_access
	long r = syscall(SYS_access, (const char *)p, F_OK);
#else
	long r = syscall(SYS_faccessat, AT_FDCWD, (const char *)p, F_OK, 0);
#endif
	int err = r == 0 ? 0 : errno;
	errno = saved;
	return err == 0 || err == ENOENT || err == ENOTDIR || err == ENAMETOOLONG || err == EACCES || err == ELOOP;
}

/* Can [lo, hi) be read? Page by page; *known is the last page found readable, so that
 * asking about the same page again costs nothing (NO_PAGE: none yet; page 0 may be
 * mapped, UINTPTR_MAX is never a page's address). */
#define NO_PAGE UINTPTR_MAX
static bool span_readable(uintptr_t lo, uintptr_t hi, uintptr_t *known)
{
	for (uintptr_t p = align_down(lo, os_page); p < hi; p += os_page) {
		if (p == *known) continue;
		if (!page_readable(p)) return false;
		*known = p;
	}
	return true;
}

/* Does the instruction before ra look like a call? (ra lies in a readable range, at
 * least 8 bytes from its start, and the 8 bytes before it were found readable.) */
static __attribute__((no_sanitize_address)) bool after_call(uintptr_t ra)
{
#if defined(__x86_64__)
	const unsigned char *b = (const unsigned char *)ra;
	if (b[-5] == 0xe8) return true; /* call rel32 */
	static const int back[] = {2, 3, 4, 6, 7};
	for (size_t i = 0; i < sizeof back / sizeof *back; i++) /* call r/m64: ff /2 */
		if (b[-back[i]] == 0xff && ((b[-back[i] + 1] >> 3) & 7) == 2) return true;
	return false;
#elif defined(__aarch64__)
	uint32_t insn;
	memcpy(&insn, (const void *)(ra - 4), 4);
	return (insn & 0xfc000000u) == 0x94000000u || (insn & 0xfffffc1fu) == 0xd63f0000u; /* bl, blr */
#else
	(void)ra;
	return false;
#endif
}

/* The working storage is static, not on the stack: a thread with a small stack must
 * still abort with SIGABRT. One thread at a time; a second fatal error racing the
 * first prints its line without callers. */
static struct {
	struct exec_range ranges[TRACE_RANGES];
	struct maps_reader m;
	struct maps_line l;
	char names[TRACE_FRAMES][TRACE_NAME];
} trace_space;
static atomic_flag trace_busy = ATOMIC_FLAG_INIT;

static noinline __attribute__((no_sanitize_address)) void print_trace_held(void)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	struct exec_range *ranges = trace_space.ranges;
	size_t nranges = 0;
	uintptr_t stack_end = 0, base = 0, known = NO_PAGE;
	char last_path[TRACE_NAME] = "";
	struct maps_reader *mp = &trace_space.m;
	struct maps_line *lp = &trace_space.l;

	/* Pass 1: the stack's mapping, and the executable file ranges with their base. */
	if (!maps_open(mp)) return;
	while (maps_next(mp, lp)) {
		if (sp >= lp->start && sp < lp->end) stack_end = lp->end;
		if (!lp->path[0] || lp->path[0] == '[') continue;
		if (strncmp(lp->path, last_path, sizeof last_path - 1) != 0) { /* a module's first mapping */
			base = lp->start - lp->offset;
			/* A program linked at a fixed address (ET_EXEC: static or non-PIE) is
			 * already at its link address: addr2line wants the address itself. */
			const unsigned char *ehdr = (const unsigned char *)lp->start;
			if (!lp->offset && lp->r && span_readable(lp->start, lp->start + 18, &known) && ehdr[0] == 0x7f &&
			    ehdr[1] == 'E' && ehdr[2] == 'L' && ehdr[3] == 'F' && ehdr[16] == 2 && ehdr[17] == 0)
				base = 0;
			size_t k = 0;
			for (; lp->path[k] && k < sizeof last_path - 1; k++) last_path[k] = lp->path[k];
			last_path[k] = 0;
		}
		if (lp->r && lp->x && nranges < TRACE_RANGES) ranges[nranges++] = (struct exec_range){lp->start, lp->end, base};
	}
	close(mp->fd);
	if (!stack_end) return;

	/* The scan: words on this thread's stack that return just after a call. Each page
	 * is asked about before its first word is read (an aligned word never straddles
	 * two); the stack ends, for the scan, at the first page that cannot be read. */
	uintptr_t frames[TRACE_FRAMES], bases[TRACE_FRAMES];
	size_t nframes = 0;
	uintptr_t top = stack_end - sp > TRACE_SCAN ? sp + TRACE_SCAN : stack_end, stack_known = NO_PAGE;
	for (uintptr_t a = align_up(sp, sizeof(uintptr_t)); a + sizeof(uintptr_t) <= top && nframes < TRACE_FRAMES;
	     a += sizeof(uintptr_t)) {
		if (!span_readable(a, a + sizeof(uintptr_t), &stack_known)) break;
		uintptr_t v = *(const uintptr_t *)a;
		for (size_t i = 0; i < nranges; i++) {
			if (v < ranges[i].start + 8 || v >= ranges[i].end) continue;
			if (span_readable(v - 8, v, &known) && after_call(v)) {
				frames[nframes] = v;
				bases[nframes++] = ranges[i].base;
			}
			break;
		}
	}
	if (!nframes) return;

	/* Pass 2: the module names, then the lines. */
	static const char heading[] = "rampart: callers (return addresses found on the stack, innermost first):\n";
	write_all(heading, sizeof heading - 1);
	char (*names)[TRACE_NAME] = trace_space.names;
	for (size_t f = 0; f < nframes; f++) names[f][0] = 0;
	if (maps_open(mp)) {
		while (maps_next(mp, lp))
			for (size_t f = 0; f < nframes; f++)
				if (frames[f] >= lp->start && frames[f] < lp->end) {
					size_t k = 0;
					for (; lp->path[k] && k < TRACE_NAME - 1; k++) names[f][k] = lp->path[k];
					names[f][k] = 0;
				}
		close(mp->fd);
	}
	for (size_t f = 0; f < nframes; f++) {
		char line[TRACE_NAME + 64];
		size_t n = put_str(line, 0, sizeof line - 1, "rampart:   #");
		n = put_dec(line, n, sizeof line - 1, (unsigned)f);
		n = put_str(line, n, sizeof line - 1, " ");
		n = put_str(line, n, sizeof line - 1, names[f][0] ? names[f] : "?");
		n = put_str(line, n, sizeof line - 1, "+");
		n = put_hex(line, n, sizeof line - 1, frames[f] - bases[f]);
		line[n++] = '\n';
		write_all(line, n);
	}
}

/* For fatal errors: the storage is never given back (the process aborts). */
static void print_trace(void)
{
	if (atomic_flag_test_and_set(&trace_busy)) return;
	print_trace_held();
}

static __attribute__((noreturn)) void die(const char *line, size_t n)
{
	/* A reader that stops reading stderr (a closed pipe) must not turn the abort into
	 * a death by SIGPIPE: the writes then fail with EPIPE instead. */
	sigset_t pipe_only;
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	sigprocmask(SIG_BLOCK, &pipe_only, NULL);
	write_all(line, n);
	print_trace();
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

/* on_error=report: the error line and its callers, and the process goes on. The trace's
 * static storage is taken with trace_busy and given back here (fatal never gives it
 * back: it aborts). A program that keeps making the same mistake must not flood its
 * stderr: after OS_REPORTS_MAX reports one last line says that the rest are silent. */
#define OS_REPORTS_MAX 100
static _Atomic unsigned reports;

void os_report(const char *what, const void *addr, const char *outcome)
{
	unsigned n_before = atomic_fetch_add_explicit(&reports, 1, memory_order_relaxed);
	if (n_before > OS_REPORTS_MAX) return;
	int saved = errno;
	char line[320];
	size_t n;
	if (n_before == OS_REPORTS_MAX) {
		n = put_str(line, 0, sizeof line - 1, "rampart: error: more errors; no more are reported\n");
		write_all(line, n);
		errno = saved;
		return;
	}
	n = put_str(line, 0, sizeof line - 1, "rampart: error: ");
	n = put_str(line, n, sizeof line - 1, what);
	n = put_str(line, n, sizeof line - 1, " at ");
	n = put_hex(line, n, sizeof line - 1, (uintptr_t)addr);
	n = put_str(line, n, sizeof line - 1, "; ");
	n = put_str(line, n, sizeof line - 1, outcome);
	n = put_str(line, n, sizeof line - 1, " (on_error=report)");
	line[n++] = '\n';
	write_all(line, n);
	if (!atomic_flag_test_and_set(&trace_busy)) {
		print_trace_held();
		atomic_flag_clear(&trace_busy);
	}
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

/* --- transparent huge pages (paths built with the reporting formatters) --- */

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
		size_t at = put_str(path, 0, sizeof path - 1, "/sys/kernel/mm/transparent_hugepage/hugepages-");
		at = put_dec(path, at, sizeof path - 1, (unsigned)(pmd >> 10));
		at = put_str(path, at, sizeof path - 1, "kB/enabled");
		path[at] = 0;
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
