/*
 * fake_kernel.h — a controllable stand-in for the kernel's memory calls, linked into
 * the fault-injection tests with -Wl,--wrap=mmap,munmap,mprotect,madvise,mremap,open.
 * Only calls made from rampart's objects (and the tests) go through it; libc's own
 * calls do not. Zero-initialised it passes everything through and only counts.
 */
#ifndef RAMPART_FAKE_KERNEL_H
#define RAMPART_FAKE_KERNEL_H

#include <stdbool.h>
#include <stddef.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif
#ifndef MADV_GUARD_REMOVE
#define MADV_GUARD_REMOVE 103
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

struct fake_kernel {
	/* --- knobs --- */
	int guard_install_errno;     /* every MADV_GUARD_INSTALL fails with this (0: off) */
	int guard_install_fail_nth;  /* the Nth guard install from now fails (counts down; 0: off) */
	int guard_install_nth_errno; /* ... with this errno (0 means EINVAL) */
	bool guard_install_ignored;  /* accepted (returns 0) and ignored: an emulator */
	int guard_remove_errno;      /* every MADV_GUARD_REMOVE fails with this (0: off) */
	int mmap_fail_nth;           /* the Nth mmap from now fails (counts down; 0: off) */
	bool mmap_fail_all;          /* every mmap fails */
	bool mmap_fail_fixed;        /* MAP_FIXED mmaps fail */
	int mmap_errno;              /* errno of failing mmaps (0 means ENOMEM) */
	int mprotect_errno;          /* every mprotect fails with this (0: off) */
	int munmap_errno;            /* every munmap fails with this (0: off) */
	bool labels_supported;       /* prctl(PR_SET_VMA_ANON_NAME) succeeds (and is recorded) */
	bool overcommit_fake;        /* /proc/sys/vm/overcommit_memory reads as ... */
	int overcommit;              /* ... this value */
	/* Linux before 6.17: mremap's source must lie in one VMA, else EFAULT; a move
	 * (MREMAP_FIXED) has unmapped its destination before it fails. */
	bool mremap_one_vma;
	/* Another thread's mmap lands in the hole the next N moves leave: a page at the old
	 * address, filled with 0xa5, recorded in intruders[]. */
	int mremap_intrude;
	/* Linux before 4.17: MAP_FIXED_NOREPLACE is unknown, the address only a hint. */
	bool noreplace_unknown;
	/* The next noreplace_fail MAP_FIXED_NOREPLACE mmaps of at least noreplace_min bytes
	 * fail with noreplace_errno (0 means EEXIST): another mapping is there, or the
	 * kernel is out of memory. Not MAP_NORESERVE ones: those only ask whether address
	 * space is free (os_range_free). */
	int noreplace_fail, noreplace_errno;
	size_t noreplace_min;
	/* MADV_POPULATE_WRITE fails with this (0: off); EINVAL is Linux before 5.14. */
	int populate_errno;
	/* MADV_DONTNEED (locked memory: EINVAL) and MADV_HUGEPAGE fail with these (0: off). */
	int dontneed_errno, hugepage_errno;
	/* pthread_atfork (wrapped) allocates, as musl's does, and records the state. */
	bool atfork_allocates;

	/* --- counters --- */
	unsigned long mmap_calls, mmap_none, mmap_rw, mmap_fixed, mmap_failed, noreplace_failed;
	unsigned long munmap_calls, mprotect_calls, mremap_calls, madvise_calls;
	unsigned long guard_install_calls, guard_remove_calls, guard_install_failed;
	unsigned long populate_calls, dontneed_calls, hugepage_calls;
	unsigned long overcommit_reads;
	unsigned long label_calls;                      /* PR_SET_VMA prctl calls */
	struct { unsigned long addr, len; } labels[64]; /* the first 64 of them */
	long net_bytes; /* bytes mapped by (non-fixed) mmap minus bytes given to munmap */
	unsigned long mremap_efault;      /* mremap calls refused with EFAULT (any cause) */
	unsigned long mremap_split_moves; /* moves whose source crossed VMAs (answered EFAULT) */
	unsigned long mremap_move_efault; /* moves (MREMAP_FIXED) the real kernel refused with EFAULT */
	void *intruders[8];
	unsigned long intruder_count;
	unsigned long atfork_calls;
	int atfork_state;     /* rampart_state when pthread_atfork was called */
	bool atfork_alloc_ok; /* the allocation made inside it succeeded */
};

extern struct fake_kernel fk;

/* Back to pass-through with all counters zero. */
void fake_reset(void);
/* End of the VMA holding addr (from /proc/self/maps), 0 if none. */
unsigned long fake_vma_end(const void *addr);

#endif
