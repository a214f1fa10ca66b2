/* peek.c — reads that cannot fault (peek.h). */
#define _GNU_SOURCE
#include "base/peek.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/roots.h"

#define NO_PAGE UINTPTR_MAX /* never a page's address; page 0 may be mapped */

void peek_init(struct peek *pk)
{
	for (unsigned i = 0; i < PEEK_PAGES; i++) pk->page[i] = NO_PAGE;
	pk->last = NO_PAGE;
	pk->next = 0;
}

/* The kernel reads a path from p and answers EFAULT where a user access would fault:
 * a guard marker (the madvise backend is chosen only where access() answers EFAULT on
 * one, guard.c), a PROT_NONE page, a file page past the end of its file. No signal, no
 * allocation, and a system call rampart's start-up probe already makes. It reads up to
 * the first zero byte, at most PATH_MAX (4096) bytes: an answer that shows the path was
 * read means that the byte at p, hence its page, can be read; EFAULT may also come from
 * the next page, where the bytes run on into it (the page is then taken as unreadable,
 * never wrongly as readable). An error that may come before the read (ENOMEM, or a
 * seccomp filter's EPERM or ENOSYS) leaves the page unknown, hence unread. The raw call, like
 * the openat of procmaps.c: a program's own access() (a sandbox's or fakeroot's
 * wrapper) must not run here. On readable bytes the kernel looks the "path" up (mostly
 * a short relative name in the working directory, not found): harmless, and a few
 * dozen of them per trace. (process_vm_readv would copy without that look-up, but is a
 * system call rampart makes nowhere else, which seccomp filters built from its list
 * would kill, and which qemu-user lacks.) */
bool peek_page(uintptr_t p)
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

/* A page, as the cache keys it: on arm64 without the pointer's memory tag (the top
 * byte), which says nothing of whether the page can be read. */
static uintptr_t page_of(uintptr_t a)
{
#if defined(__aarch64__)
	a &= ((uintptr_t)1 << 56) - 1;
#endif
	return align_down(a, os_page);
}

static bool known(const struct peek *pk, uintptr_t p)
{
	for (unsigned i = 0; i < PEEK_PAGES; i++)
		if (pk->page[i] == p) return true;
	return false;
}

__attribute__((no_sanitize_address)) bool peek_bytes(struct peek *pk, uintptr_t addr, void *dst, size_t n)
{
	if (!n) return true;
	if (addr + n < addr) return false;
	/* Each page is asked about at the first byte wanted in it, through the pointer as
	 * given: under memory tagging the kernel may refuse a pointer whose tag is not its
	 * granule's, and the page's first granule may belong to another block. (An answer
	 * "readable" is always right; a string running from there into an unreadable next
	 * page may make the kernel answer EFAULT for a readable page: the read fails.) */
	for (uintptr_t at = addr; at - addr < n; at = align_down(at, os_page) + os_page) {
		uintptr_t p = page_of(at);
		if (p == pk->last || known(pk, p)) {
			pk->last = p;
			continue;
		}
		if (!peek_page(at)) return false;
		pk->page[pk->next] = pk->last = p;
		pk->next = (pk->next + 1) % PEEK_PAGES;
	}
	/* Byte by byte through a volatile pointer: the compiler must not widen the reads
	 * past what was asked about, nor call a memcpy a sanitizer intercepts. Where rampart
	 * tags its blocks (arm64 MTE, roots.mte), a word of a stack may lie in a granule of
	 * another tag (a stack the program took from a tagged block, read past its end):
	 * the bytes are read with tag checks suspended (PSTATE.TCO, as os/mte.h reads a
	 * slot's word), an instruction that exists only where MTE does. */
	const volatile unsigned char *s = (const volatile unsigned char *)addr;
	unsigned char *d = dst;
#if defined(__aarch64__)
	bool unchecked = roots.mte != 0;
	if (unchecked) __asm__ volatile(".arch armv8.5-a+memtag\n\tmsr tco, #1" ::: "memory");
#endif
	for (size_t i = 0; i < n; i++) d[i] = s[i];
#if defined(__aarch64__)
	if (unchecked) __asm__ volatile(".arch armv8.5-a+memtag\n\tmsr tco, #0" ::: "memory");
#endif
	return true;
}
