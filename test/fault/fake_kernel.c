/* fake_kernel.c — see fake_kernel.h. */
#define _GNU_SOURCE
#include "fake_kernel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "front/init.h"

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

static unsigned long hex(const char **s)
{
	unsigned long v = 0;
	for (;; (*s)++) {
		char c = **s;
		if (c >= '0' && c <= '9') v = v * 16 + (unsigned long)(c - '0');
		else if (c >= 'a' && c <= 'f') v = v * 16 + (unsigned long)(c - 'a' + 10);
		else return v;
	}
}

unsigned long fake_vma_end(const void *addr)
{
	static char buf[1 << 22];
	int fd = __real_open("/proc/self/maps", O_RDONLY);
	if (fd < 0) return 0;
	size_t len = 0;
	ssize_t n;
	while (len < sizeof buf - 1 && (n = read(fd, buf + len, sizeof buf - 1 - len)) > 0) len += (size_t)n;
	close(fd);
	buf[len] = 0;
	unsigned long a = (unsigned long)addr;
	for (const char *line = buf; *line;) {
		const char *s = line;
		unsigned long start = hex(&s);
		s++;
		unsigned long end = hex(&s);
		if (a >= start && a < end) return end;
		const char *nl = strchr(line, '\n');
		if (!nl) break;
		line = nl + 1;
	}
	return 0;
}

int __real_pthread_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));
int __wrap_pthread_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));
int __wrap_pthread_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
	fk.atfork_calls++;
	fk.atfork_state = atomic_load(&rampart_state);
	if (fk.atfork_allocates) {
		void *p = malloc(24);
		fk.atfork_alloc_ok = p != NULL;
		free(p);
	}
	return __real_pthread_atfork(prepare, parent, child);
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	fk.mmap_calls++;
	if (flags & MAP_FIXED) fk.mmap_fixed++;
	bool fail = fk.mmap_fail_all || ((flags & MAP_FIXED) && fk.mmap_fail_fixed);
	if (fk.mmap_fail_nth > 0 && --fk.mmap_fail_nth == 0) fail = true;
	if (!fail && fk.noreplace_fail > 0 && (flags & MAP_FIXED_NOREPLACE) && !(flags & MAP_NORESERVE) &&
	    len >= fk.noreplace_min) {
		fk.noreplace_fail--;
		fk.noreplace_failed++;
		errno = fk.noreplace_errno ? fk.noreplace_errno : EEXIST;
		return MAP_FAILED;
	}
	if (fail) {
		fk.mmap_failed++;
		errno = fk.mmap_errno ? fk.mmap_errno : ENOMEM;
		return MAP_FAILED;
	}
	if (fk.noreplace_unknown && (flags & MAP_FIXED_NOREPLACE)) flags &= ~MAP_FIXED_NOREPLACE;
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
	if (fk.munmap_errno) {
		errno = fk.munmap_errno;
		return -1;
	}
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
	if (advice == MADV_GUARD_REMOVE) {
		fk.guard_remove_calls++;
		if (fk.guard_remove_errno) {
			errno = fk.guard_remove_errno;
			return -1;
		}
	}
	if (advice == MADV_DONTNEED || advice == MADV_HUGEPAGE) {
		int err = advice == MADV_DONTNEED ? fk.dontneed_errno : fk.hugepage_errno;
		if (advice == MADV_DONTNEED) fk.dontneed_calls++;
		else fk.hugepage_calls++;
		if (err) {
			errno = err;
			return -1;
		}
	}
	if (advice == MADV_POPULATE_WRITE) {
		fk.populate_calls++;
		if (fk.populate_errno) {
			errno = fk.populate_errno;
			return -1;
		}
	}
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
	if (fk.mremap_one_vma) {
		unsigned long end = fake_vma_end(old);
		if (!end || (unsigned long)old + old_len > end) {
			if (flags & MREMAP_FIXED) {
				fk.mremap_split_moves++;
				__real_munmap(dst, new_len); /* what the old kernels did first */
			}
			fk.mremap_efault++;
			errno = EFAULT;
			return MAP_FAILED;
		}
	}
	void *r = __real_mremap(old, old_len, new_len, flags, dst);
	if (r == MAP_FAILED && errno == EFAULT) {
		fk.mremap_efault++;
		if (flags & MREMAP_FIXED) fk.mremap_move_efault++;
	}
	if (r != MAP_FAILED && (flags & MREMAP_FIXED) && fk.mremap_intrude > 0 && fk.intruder_count < 8) {
		fk.mremap_intrude--;
		void *in = __real_mmap(old, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (in == old) {
			memset(in, 0xa5, 4096);
			fk.intruders[fk.intruder_count++] = in;
		}
	}
	return r;
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
