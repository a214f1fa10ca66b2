/* fake_kernel.c — see fake_kernel.h. */
#define _GNU_SOURCE
#include "fake_kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct fake_kernel fk;

void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __real_munmap(void *addr, size_t len);
int __real_mprotect(void *addr, size_t len, int prot);
int __real_madvise(void *addr, size_t len, int advice);
void *__real_mremap(void *old, size_t old_len, size_t new_len, int flags, ...);
int __real_open(const char *path, int flags, ...);

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __wrap_munmap(void *addr, size_t len);
int __wrap_mprotect(void *addr, size_t len, int prot);
int __wrap_madvise(void *addr, size_t len, int advice);
void *__wrap_mremap(void *old, size_t old_len, size_t new_len, int flags, ...);
int __wrap_open(const char *path, int flags, ...);
int __wrap_prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5);
int __real_prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5);

/* PR_SET_VMA (0x53564d41): recorded; answered as a kernel with or without anon names. */
int __wrap_prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5)
{
	if (option != 0x53564d41) return __real_prctl(option, a2, a3, a4, a5);
	if (fk.label_calls < 64) {
		fk.labels[fk.label_calls].addr = a3;
		fk.labels[fk.label_calls].len = a4;
	}
	fk.label_calls++;
	if (fk.labels_supported) return 0;
	errno = EINVAL;
	return -1;
}

void fake_reset(void) { memset(&fk, 0, sizeof fk); }

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	fk.mmap_calls++;
	if (flags & MAP_FIXED) fk.mmap_fixed++;
	bool fail = fk.mmap_fail_all || ((flags & MAP_FIXED) && fk.mmap_fail_fixed);
	if (fk.mmap_fail_nth > 0 && --fk.mmap_fail_nth == 0) fail = true;
	if (fail) {
		fk.mmap_failed++;
		errno = fk.mmap_errno ? fk.mmap_errno : ENOMEM;
		return MAP_FAILED;
	}
	void *p = __real_mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED) {
		if (prot == PROT_NONE) fk.mmap_none++;
		else fk.mmap_rw++;
		if (!(flags & MAP_FIXED)) fk.net_bytes += (long)len;
	}
	return p;
}

int __wrap_munmap(void *addr, size_t len)
{
	fk.munmap_calls++;
	int r = __real_munmap(addr, len);
	if (r == 0) fk.net_bytes -= (long)len;
	return r;
}

int __wrap_mprotect(void *addr, size_t len, int prot)
{
	if (fk.mprotect_errno) {
		errno = fk.mprotect_errno;
		return -1;
	}
	fk.mprotect_calls++;
	return __real_mprotect(addr, len, prot);
}

int __wrap_madvise(void *addr, size_t len, int advice)
{
	fk.madvise_calls++;
	if (advice == MADV_GUARD_REMOVE) fk.guard_remove_calls++;
	if (advice != MADV_GUARD_INSTALL) return __real_madvise(addr, len, advice);
	fk.guard_install_calls++;
	int err = fk.guard_install_errno;
	if (fk.guard_install_fail_nth > 0 && --fk.guard_install_fail_nth == 0)
		err = fk.guard_install_nth_errno ? fk.guard_install_nth_errno : EINVAL;
	if (err) {
		fk.guard_install_failed++;
		errno = err;
		return -1;
	}
	if (fk.guard_install_ignored) return 0;
	return __real_madvise(addr, len, advice);
}

void *__wrap_mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	fk.mremap_calls++;
	void *dst = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		dst = va_arg(ap, void *);
		va_end(ap);
	}
	return __real_mremap(old, old_len, new_len, flags, dst);
}

int __wrap_open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	if (strcmp(path, "/proc/sys/vm/overcommit_memory") == 0) {
		fk.overcommit_reads++;
		if (fk.overcommit_fake) {
			int pfd[2];
			if (pipe2(pfd, O_CLOEXEC)) return -1;
			char buf[16];
			int n = snprintf(buf, sizeof buf, "%d\n", fk.overcommit);
			if (write(pfd[1], buf, (size_t)n) != n) {
				close(pfd[0]);
				close(pfd[1]);
				errno = EIO;
				return -1;
			}
			close(pfd[1]);
			return pfd[0];
		}
	}
	return __real_open(path, flags, mode);
}
