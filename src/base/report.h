/*
 * report.h — how rampart tells of a failure: fatal errors, warnings, the callers of a
 * fatal error, and the on_error decisions of the free paths.
 *
 * Invariants:
 *  - Callers name what failed by two enums, the operation (enum report_op) and the kind
 *    of error (enum report_kind); every message comes from the tables in report.c, and
 *    no decision depends on a message's wording.
 *  - Nothing here allocates, takes a lock the program may hold, or changes errno; a
 *    fatal report ends in SIGABRT (the program's SIGABRT handler does not run), never
 *    in another signal.
 *  - The callers listed after a report (callers.h) start at the first frame outside
 *    rampart's own code.
 *  - Only a deallocation (OP_FREE, and OP_DELETE or OP_DELETE_ARRAY for a block
 *    allocated otherwise) may go on after an error, or a realloc whose only fault is the
 *    block's allocation kind, and only where report_go_on says so; every other error is
 *    fatal.
 */
#ifndef RAMPART_REPORT_H
#define RAMPART_REPORT_H

#include "base/common.h"

/* The operation during which an error was found. */
enum report_op {
	OP_INTERNAL,    /* rampart's own bookkeeping, whichever call of the program led there */
	OP_ALLOC,       /* malloc and every other call that allocates */
	OP_FREE,        /* free, free_sized, free_aligned_sized, C++ delete */
	OP_REALLOC,
	OP_USABLE_SIZE, /* malloc_usable_size */
	OP_OBJECT_SIZE, /* malloc_object_size */
	OP_NEW,         /* C++ operator new */
	OP_DELETE,      /* C++ operator delete, named only when the block is not new's */
	OP_DELETE_ARRAY, /* C++ operator delete[], likewise */
	OP_EXIT,        /* the check at exit (check_at_exit=1) */
	/* The system calls an unexpected kernel error comes from (report_kernel). */
	OP_MMAP,
	OP_MUNMAP,
	OP_MPROTECT,
	OP_MREMAP,
	OP_GUARD_INSTALL, /* madvise(MADV_GUARD_INSTALL) */
	OP_GUARD_REMOVE,  /* madvise(MADV_GUARD_REMOVE) */
	OP_GETRANDOM,
	OP_COUNT
};

/* What was found. */
enum report_kind {
	/* A pointer the operation cannot take. */
	ERR_NEVER_HANDED_OUT,    /* rampart is not running, so no pointer is its */
	ERR_NOT_LIVE,            /* no live block starts there */
	ERR_NOT_LIVE_INSIDE,     /* inside rampart's memory, but in no live block */
	ERR_NOT_SLOT_START,      /* inside a slab, between slot starts */
	ERR_SLOT_NOT_ALLOCATED,  /* a slot never handed out, or long since freed */
	ERR_FREED_SLAB,          /* inside a slab that was closed (all its slots freed) */
	ERR_SLOT_FREED,          /* a slot freed already (double free) */
	ERR_DOUBLE_FREE,         /* a large block freed already */
	ERR_USE_AFTER_FREE,      /* a large block freed already, used by another call */
	ERR_INTO_FREED,          /* inside a freed large region */
	ERR_WRONG_SIZE,          /* a sized free whose size or alignment is not the block's */
	ERR_MISALIGNED_DELETE,   /* C++ aligned delete of a pointer without that alignment */
	ERR_BAD_ALIGNMENT,       /* C++ aligned new or delete: not a power of two */
	ERR_NO_BAD_ALLOC,        /* operator new failed and cannot throw */
	/* A block freed otherwise than it was allocated (base/alloc_kind.h): the operation
	 * is the deallocation, the kind says how the block was made. */
	ERR_ALLOCATED_BY_MALLOC,    /* delete or delete[] of a block of malloc's family */
	ERR_ALLOCATED_BY_NEW,       /* free, realloc or delete[] of a block of operator new */
	ERR_ALLOCATED_BY_NEW_ARRAY, /* free, realloc or delete of a block of operator new[] */
	/* Memory found damaged. */
	ERR_CANARY,              /* a live slot's canary, at its free or realloc */
	ERR_NEIGHBOUR_CANARY,    /* a live neighbour slot's canary */
	ERR_WRITE_AFTER_FREE,    /* a freed slot's data, at its reuse or batched entry */
	ERR_FREED_NEIGHBOUR,     /* a freed neighbour slot's bytes */
	ERR_FREED_CANARY,        /* a freed (batched) slot's canary word */
	ERR_EXIT_CANARY,         /* a live slot's canary, at exit */
	ERR_SLACK,               /* a live slot's bytes past its request, at its free or resize */
	/* rampart's own state. */
	ERR_SLAB_METADATA,       /* a slab's bits contradict its count */
	ERR_LARGE_METADATA,      /* the large table contradicts the quarantine */
	ERR_RECLOSE,             /* a span could not be closed again after a failed open */
	ERR_META_GUARD,          /* the metadata's guard page could not be closed */
	ERR_REENTERED,           /* the thread holds the lock it asks for */
	ERR_KERNEL,              /* a system call failed in a way it never should (report_kernel) */
	ERR_WRONG_TAG,           /* a live slot, through a pointer without its memory tag (arm64 MTE) */
	ERR_COUNT
};

/* "rampart: fatal: <what> at <addr>", the callers, and SIGABRT. */
cold __attribute__((noreturn)) void report_fatal(enum report_op op, enum report_kind kind, const void *addr);
/* The same line alone, without the callers and without ending the process, for a
 * report that names several places before the last one goes through report_fatal. */
cold void report_fatal_line(enum report_op op, enum report_kind kind, const void *addr);
/* A kernel error that is not "no memory" from call, during an operation that must not
 * fail: "rampart: fatal: unexpected error <err> from <call> at <addr>" and the callers,
 * err as report_put_errno writes it. */
cold __attribute__((noreturn)) void report_kernel(enum report_op call, int err, const void *addr);

/* The on_error decision, asked where an error leaves nothing changed (the caller holds
 * no lock it has not said it holds). True: go on, reported under on_error=report as
 * "rampart: error: <what> at <addr>; <outcome> (on_error=report)" with the callers (at
 * most 100 reports a process, then one line saying the rest are not reported), or
 * silently for a wrong size under sized_free=off. False: the caller makes it fatal.
 * Only OP_FREE goes on, but for a block freed otherwise than it was allocated: for a
 * pointer that is no live block the call is ignored; for ERR_WRONG_SIZE the block is
 * freed as by free(); for ERR_ALLOCATED_BY_* (OP_FREE, OP_DELETE, OP_DELETE_ARRAY or
 * OP_REALLOC) the call is done as asked, the block taken for one of its kind. */
cold bool report_go_on(enum report_op op, enum report_kind kind, const void *addr);

/* What a sized free passed against what its block has, for ERR_WRONG_SIZE's line. The
 * alignments are shown only where one was passed (passed_align != 0). */
struct report_sizes {
	size_t passed, block;
	size_t passed_align, block_align;
};
/* report_go_on and report_fatal for a sized free (OP_FREE) whose size or alignment is not
 * its block's (ERR_WRONG_SIZE): the one line ends with both sizes, as in
 * "rampart: fatal: sized free ... at 0x...: passed size 16, the block's size 300000"
 * (and "aligned to A" after each size where an alignment was passed). */
cold bool report_wrong_size_go_on(const void *addr, const struct report_sizes *sz);
cold __attribute__((noreturn)) void report_wrong_size(const void *addr, const struct report_sizes *sz);

/* An error number as a message gives it: "ENOENT (No such file or directory)", its name
 * and the C library's text in the C locale, from a table (strerror may allocate);
 * "errno N" for a number the table lacks. */
struct out;
void report_put_errno(struct out *o, int err);

/* Warnings: one line on stderr, "rampart: warning: ...", and the process goes on. */
enum report_warning {
	WARN_OPTION,         /* a bad option entry; detail: what the parser says of it */
	WARN_EMPTY_RULE,     /* a policy rule without options; detail: where, and its pattern */
	WARN_GUARD_MADVISE,  /* guard=madvise asked for where it does not work */
	WARN_VMA_LIMIT,      /* near vm.max_map_count: fewer guards from now on */
	WARN_ROOTS_WRITABLE, /* the roots' page could not be made read-only */
	WARN_NO_PASSTHROUGH, /* passthrough asked for where there is no C library allocator */
	WARN_FORK_HANDLERS,  /* pthread_atfork refused */
	WARN_STATS_FILE,     /* stats_file is no regular file (a symbolic link, FIFO, device...); detail: its path */
	WARN_COUNT
};
/* detail: the text the warning carries (WARN_OPTION, WARN_EMPTY_RULE, WARN_STATS_FILE), NULL for
 * the others. */
void report_warn(enum report_warning w, const char *detail);

#endif
