/*
 * report.c — every message rampart writes when something is wrong, and the on_error
 * decisions (report.h); the callers listed after a report come from callers.c.
 * Messages come from the tables below; fixed buffers only, nothing here may allocate.
 */
#define _GNU_SOURCE
#include "base/report.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/callers.h"
#include "base/roots.h"
#include "base/text.h"

/* --- the tables -------------------------------------------------------------------- */

/* How an operation is named in a message. */
static const char *const op_names[OP_COUNT] = {
	[OP_INTERNAL] = "rampart",
	[OP_ALLOC] = "malloc",
	[OP_FREE] = "free",
	[OP_REALLOC] = "realloc",
	[OP_USABLE_SIZE] = "malloc_usable_size",
	[OP_OBJECT_SIZE] = "malloc_object_size",
	[OP_NEW] = "operator new",
	[OP_DELETE] = "operator delete",
	[OP_DELETE_ARRAY] = "operator delete[]",
	[OP_EXIT] = "the check at exit",
	[OP_MMAP] = "mmap",
	[OP_MUNMAP] = "munmap",
	[OP_MPROTECT] = "mprotect",
	[OP_MREMAP] = "mremap",
	[OP_GUARD_INSTALL] = "madvise(MADV_GUARD_INSTALL)",
	[OP_GUARD_REMOVE] = "madvise(MADV_GUARD_REMOVE)",
	[OP_GETRANDOM] = "getrandom",
};

struct kind_text {
	const char *what;    /* the message */
	bool op_first;       /* the operation's name comes first: "<op> <what>" */
	const char *go_on;   /* a free may go on (report_go_on): what happens then; else NULL */
};

static const char ignored[] = "the call was ignored";
/* A block freed by the wrong family's function is still a live block: the call can be
 * done as asked. */
static const char done_anyway[] = "done as the call asks";

static const struct kind_text kinds[ERR_COUNT] = {
	[ERR_NEVER_HANDED_OUT] = {"of a pointer rampart never handed out", true, NULL},
	[ERR_NOT_LIVE] = {"of a pointer that is not a live allocation", true, ignored},
	[ERR_NOT_LIVE_INSIDE] = {"of a pointer into rampart's memory that is not a live allocation", true, NULL},
	[ERR_NOT_SLOT_START] = {"invalid pointer: not the start of a slot", false, ignored},
	[ERR_SLOT_NOT_ALLOCATED] = {"slot is not allocated (double free or invalid pointer)", false, ignored},
	[ERR_FREED_SLAB] = {"use of a pointer into a freed slab (double free?)", false, ignored},
	[ERR_SLOT_FREED] = {"slot was already freed (double free?)", false, ignored},
	/* Under memory tagging a stale pointer to a slot handed out again carries the old
	 * owner's tag; a forged one any other. */
	[ERR_WRONG_TAG] = {"pointer's tag is not its slot's (stale or invalid pointer)", false, ignored},
	[ERR_DOUBLE_FREE] = {"double free", false, ignored},
	[ERR_USE_AFTER_FREE] = {"use after free", false, NULL},
	[ERR_INTO_FREED] = {"object size of a pointer into freed memory", false, NULL},
	[ERR_WRONG_SIZE] = {"sized free with a wrong size or alignment", false, "freed as by free()"},
	[ERR_MISALIGNED_DELETE] = {"C++ aligned delete of a pointer without that alignment", false, NULL},
	[ERR_BAD_ALIGNMENT] = {"C++ aligned new/delete with an alignment that is not a power of two", false, NULL},
	[ERR_NO_BAD_ALLOC] = {"operator new failed and std::bad_alloc cannot be thrown (no libstdc++)", false, NULL},
	[ERR_ALLOCATED_BY_MALLOC] = {"of a block allocated by malloc (allocation and deallocation do not match)", true,
				     done_anyway},
	[ERR_ALLOCATED_BY_NEW] = {"of a block allocated by operator new (allocation and deallocation do not match)", true,
				  done_anyway},
	[ERR_ALLOCATED_BY_NEW_ARRAY] = {"of a block allocated by operator new[] (allocation and deallocation do not "
					"match)", true, done_anyway},
	[ERR_CANARY] = {"slot canary overwritten (heap overflow)", false, NULL},
	[ERR_NEIGHBOUR_CANARY] = {"neighbour slot canary overwritten (heap overflow or underflow)", false, NULL},
	[ERR_WRITE_AFTER_FREE] = {"write after free", false, NULL},
	/* A freed slot must hold zeros (and its canary): a stale pointer's write is by far
	 * the likelier cause, an overflow of the slot's neighbour the other. */
	[ERR_FREED_NEIGHBOUR] = {"write after free (or a heap overflow or underflow) into a freed slot", false, NULL},
	[ERR_FREED_CANARY] = {"write after free (or a heap overflow) over a freed slot's canary", false, NULL},
	[ERR_EXIT_CANARY] = {"live slot canary overwritten, found at exit (heap overflow)", false, NULL},
	/* Bytes past the request are zero while the slot is live unless something wrote
	 * them: the owner's overflow by far likelier, a stale pointer's write the other. */
	[ERR_SLACK] = {"write past the requested size, into the slot's slack (heap overflow)", false, NULL},
	[ERR_SLAB_METADATA] = {"slab metadata inconsistent", false, NULL},
	[ERR_LARGE_METADATA] = {"large metadata inconsistent", false, NULL},
	[ERR_RECLOSE] = {"cannot re-close span", false, NULL},
	[ERR_META_GUARD] = {"cannot close metadata guard page", false, NULL},
	[ERR_REENTERED] = {"allocator re-entered: malloc or free called from a signal handler that interrupted one (this "
			   "thread holds the lock it asks for)", false, NULL},
	[ERR_KERNEL] = {"unexpected error", false, NULL},
};

static const char *const warnings[WARN_COUNT][2] = { /* before and after the detail */
	[WARN_OPTION] = {"", " (entry ignored)"},
	[WARN_EMPTY_RULE] = {"", " has no options"},
	[WARN_GUARD_MADVISE] = {"guard=madvise is not usable here, using mprotect", ""},
	[WARN_VMA_LIMIT] = {"near the VMA limit (vm.max_map_count): new large blocks and slabs get fewer guards", ""},
	[WARN_ROOTS_WRITABLE] = {"cannot make the roots read-only", ""},
	[WARN_NO_PASSTHROUGH] = {"passthrough unavailable (no C library allocator to hand calls to: not glibc, or a "
				 "static program); rampart stays", ""},
	[WARN_FORK_HANDLERS] = {"cannot register fork handlers", ""},
	[WARN_STATS_FILE] = {"stats_file ", ": not a regular file (a symbolic link, FIFO, device or directory); no "
					    "statistics report"},
};

/* Error numbers by name and by the C library's text for them (glibc's strerror in the
 * C locale), for the messages that give one. Not strerror itself: glibc's translates
 * (dcgettext takes a lock and may load a catalogue into the heap) and formats an
 * unknown number with asprintf into a per-thread buffer; a report must not allocate or
 * wait for a lock the program may hold. The numbers a system call rampart makes, or
 * the open of stats_file, can answer; another prints as "errno N". */
static const struct {
	int err;
	const char *name, *text;
} errno_texts[] = {
	{EPERM, "EPERM", "Operation not permitted"},
	{ENOENT, "ENOENT", "No such file or directory"},
	{ESRCH, "ESRCH", "No such process"},
	{EINTR, "EINTR", "Interrupted system call"},
	{EIO, "EIO", "Input/output error"},
	{ENXIO, "ENXIO", "No such device or address"},
	{EBADF, "EBADF", "Bad file descriptor"},
	{EAGAIN, "EAGAIN", "Resource temporarily unavailable"},
	{ENOMEM, "ENOMEM", "Cannot allocate memory"},
	{EACCES, "EACCES", "Permission denied"},
	{EFAULT, "EFAULT", "Bad address"},
	{EBUSY, "EBUSY", "Device or resource busy"},
	{EEXIST, "EEXIST", "File exists"},
	{ENODEV, "ENODEV", "No such device"},
	{ENOTDIR, "ENOTDIR", "Not a directory"},
	{EISDIR, "EISDIR", "Is a directory"},
	{EINVAL, "EINVAL", "Invalid argument"},
	{ENFILE, "ENFILE", "Too many open files in system"},
	{EMFILE, "EMFILE", "Too many open files"},
	{ETXTBSY, "ETXTBSY", "Text file busy"},
	{EFBIG, "EFBIG", "File too large"},
	{ENOSPC, "ENOSPC", "No space left on device"},
	{EROFS, "EROFS", "Read-only file system"},
	{ENAMETOOLONG, "ENAMETOOLONG", "File name too long"},
	{ENOSYS, "ENOSYS", "Function not implemented"},
	{ELOOP, "ELOOP", "Too many levels of symbolic links"},
	{EOVERFLOW, "EOVERFLOW", "Value too large for defined data type"},
	{EOPNOTSUPP, "EOPNOTSUPP", "Operation not supported"},
	{ESTALE, "ESTALE", "Stale file handle"},
	{EDQUOT, "EDQUOT", "Disk quota exceeded"},
};

void report_put_errno(struct out *o, int err)
{
	for (size_t i = 0; i < sizeof errno_texts / sizeof *errno_texts; i++) {
		if (errno_texts[i].err != err) continue;
		out_str(o, errno_texts[i].name);
		out_str(o, " (");
		out_str(o, errno_texts[i].text);
		out_str(o, ")");
		return;
	}
	out_str(o, "errno ");
	out_num(o, (unsigned)err);
}

static void put_size(struct out *o, size_t size, size_t align, bool aligned)
{
	out_str(o, " size ");
	out_num(o, size);
	if (!aligned) return;
	out_str(o, " aligned to ");
	out_num(o, align);
}

/* "<what> at <addr>", and for a sized free with sizes ": passed size N, the block's size M":
 * which number is wrong is what its reader must know first. */
static void put_what(struct out *o, enum report_op op, enum report_kind kind, const void *addr,
		     const struct report_sizes *sz)
{
	if (kinds[kind].op_first) {
		out_str(o, op_names[op]);
		out_str(o, " ");
	}
	out_str(o, kinds[kind].what);
	out_str(o, " at ");
	out_hex(o, (uintptr_t)addr);
	if (!sz) return;
	out_str(o, ": passed");
	put_size(o, sz->passed, sz->passed_align, sz->passed_align);
	out_str(o, ", the block's");
	put_size(o, sz->block, sz->block_align, sz->passed_align);
}

void report_warn(enum report_warning w, const char *detail)
{
	char line[256];
	struct out o = out_fd(STDERR_FILENO, line, sizeof line); /* errno unchanged: a warning is no failure */
	out_str(&o, "rampart: warning: ");
	out_str(&o, warnings[w][0]);
	if (detail) out_str(&o, detail);
	out_str(&o, warnings[w][1]);
	out_str(&o, "\n");
	out_flush(&o);
}

static __attribute__((noreturn)) void write_and_abort(struct out *o)
{
	/* A reader that stops reading stderr (a closed pipe) must not turn the abort into
	 * a death by SIGPIPE: the writes then fail with EPIPE instead. */
	sigset_t pipe_only;
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	sigprocmask(SIG_BLOCK, &pipe_only, NULL);
	out_flush(o);
	callers_print(false); /* the process is ending: the trace's storage is not given back */
	/* The heap is not trustworthy any more: no user SIGABRT handler may run on it. */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGABRT, &dfl, NULL);
	abort();
}

void report_fatal_line(enum report_op op, enum report_kind kind, const void *addr)
{
	char line[256];
	struct out o = out_fd(STDERR_FILENO, line, sizeof line);
	out_str(&o, "rampart: fatal: ");
	put_what(&o, op, kind, addr, NULL);
	out_str(&o, "\n");
	out_flush(&o);
}

static __attribute__((noreturn)) void fatal(enum report_op op, enum report_kind kind, const void *addr,
					    const struct report_sizes *sz)
{
	char line[256];
	struct out o = out_fd(STDERR_FILENO, line, sizeof line);
	out_str(&o, "rampart: fatal: ");
	put_what(&o, op, kind, addr, sz);
	out_str(&o, "\n");
	write_and_abort(&o);
}

void report_fatal(enum report_op op, enum report_kind kind, const void *addr) { fatal(op, kind, addr, NULL); }

void report_wrong_size(const void *addr, const struct report_sizes *sz) { fatal(OP_FREE, ERR_WRONG_SIZE, addr, sz); }

#if CONFIG_INVARIANTS
void report_invariant(const char *what)
{
	char line[256];
	struct out o = out_fd(STDERR_FILENO, line, sizeof line);
	out_str(&o, "rampart: fatal: invariant broken: ");
	out_str(&o, what);
	out_str(&o, "\n");
	write_and_abort(&o);
}
#endif

void report_kernel(enum report_op call, int err, const void *addr)
{
	char line[256];
	struct out o = out_fd(STDERR_FILENO, line, sizeof line);
	out_str(&o, "rampart: fatal: ");
	out_str(&o, kinds[ERR_KERNEL].what);
	out_str(&o, " ");
	report_put_errno(&o, err);
	out_str(&o, " from ");
	out_str(&o, op_names[call]);
	out_str(&o, " at ");
	out_hex(&o, (uintptr_t)addr);
	out_str(&o, "\n");
	write_and_abort(&o);
}

/* on_error=report: the error line and its callers, and the process goes on. A program
 * that keeps making the same mistake must not flood its stderr: after REPORTS_MAX
 * reports one last line says that the rest are silent. */
#define REPORTS_MAX 100
static _Atomic unsigned reports;

static void report_error(enum report_op op, enum report_kind kind, const void *addr, const struct report_sizes *sz)
{
	unsigned n_before = atomic_fetch_add_explicit(&reports, 1, memory_order_relaxed);
	if (n_before > REPORTS_MAX) return;
	int saved = errno;
	char line[320];
	struct out o = out_fd(STDERR_FILENO, line, sizeof line);
	if (n_before == REPORTS_MAX) {
		out_str(&o, "rampart: error: more errors; no more are reported\n");
		out_flush(&o);
		errno = saved;
		return;
	}
	out_str(&o, "rampart: error: ");
	put_what(&o, op, kind, addr, sz);
	out_str(&o, "; ");
	out_str(&o, kinds[kind].go_on);
	out_str(&o, " (on_error=report)\n");
	out_flush(&o);
	callers_print(true);
	errno = saved;
}

/* A mismatch of allocation and deallocation is found by any of the calls that free or
 * move a block; every other error that may go on, only by a free. */
static bool may_go_on(enum report_op op, enum report_kind kind)
{
	if (kind == ERR_ALLOCATED_BY_MALLOC || kind == ERR_ALLOCATED_BY_NEW || kind == ERR_ALLOCATED_BY_NEW_ARRAY)
		return op == OP_FREE || op == OP_DELETE || op == OP_DELETE_ARRAY || op == OP_REALLOC;
	return op == OP_FREE;
}

static bool go_on(enum report_op op, enum report_kind kind, const void *addr, const struct report_sizes *sz)
{
	if (!kinds[kind].go_on || !may_go_on(op, kind)) return false;
	if (kind == ERR_WRONG_SIZE && !roots.opt.sized_free) return true;
	if (roots.opt.on_error != ON_ERROR_REPORT) return false;
	report_error(op, kind, addr, sz);
	return true;
}

bool report_go_on(enum report_op op, enum report_kind kind, const void *addr) { return go_on(op, kind, addr, NULL); }

bool report_wrong_size_go_on(const void *addr, const struct report_sizes *sz)
{
	return go_on(OP_FREE, ERR_WRONG_SIZE, addr, sz);
}
