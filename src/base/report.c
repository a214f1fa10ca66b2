/*
 * report.c — every message rampart writes when something is wrong, the callers of a
 * fatal error, and the on_error decisions (report.h). Messages come from the tables
 * below; fixed buffers only, nothing here may allocate.
 */
#define _GNU_SOURCE
#include "base/report.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/procmaps.h"
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

/* "<what> at <addr>" */
static void put_what(struct out *o, enum report_op op, enum report_kind kind, const void *addr)
{
	if (kinds[kind].op_first) {
		out_str(o, op_names[op]);
		out_str(o, " ");
	}
	out_str(o, kinds[kind].what);
	out_str(o, " at ");
	out_hex(o, (uintptr_t)addr);
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

/* --- the callers of a fatal error -----------------------------------------------------
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
 * The list starts at the first return address outside rampart's own code (own_code):
 * the frames of the call that found the error, and of what it called, are left out.
 * A scan can also show stale return addresses left by earlier calls: the heading says
 * so. The offset is from the module's first mapping (its load base): what
 * addr2line -e module expects for shared objects and PIE programs; a program linked
 * at a fixed address (ET_EXEC) gets its addresses as they are. */
#define TRACE_FRAMES 16
#define TRACE_RANGES 256
#define TRACE_SCAN (64u * 1024u)
#define TRACE_NAME 160
/* Candidates kept before rampart's own frames are left out: its frames, and the stale
 * return addresses among them, are a few dozen words at most. */
#define TRACE_FOUND (3 * TRACE_FRAMES)
#define TRACE_STALE_RUN 2

/* rampart's own code, left out of a trace. The static library moves every code section
 * of its objects into sections of its own, rampart_text and rampart_text_cold (Makefile,
 * librampart.a), whose bounds the linker defines in the program it is linked into. In
 * the shared library they do not exist (weak: 0), and rampart's code is its whole
 * module. Built into a program as plain objects (the unit tests), it cannot be told from
 * the program's own code: nothing is left out. */
extern const char __start_rampart_text[] __attribute__((weak, visibility("hidden")));
extern const char __stop_rampart_text[] __attribute__((weak, visibility("hidden")));
extern const char __start_rampart_text_cold[] __attribute__((weak, visibility("hidden")));
extern const char __stop_rampart_text_cold[] __attribute__((weak, visibility("hidden")));
#define NO_MODULE UINTPTR_MAX

/* Is v in rampart's code? base: the load base of the module v lies in; own_base:
 * rampart's module, NO_MODULE where rampart is part of the program. */
static bool own_code(uintptr_t v, uintptr_t base, uintptr_t own_base)
{
	uintptr_t text = (uintptr_t)__start_rampart_text, text_cold = (uintptr_t)__start_rampart_text_cold;
	if (text || text_cold)
		return v - text < (uintptr_t)__stop_rampart_text - text ||
		       v - text_cold < (uintptr_t)__stop_rampart_text_cold - text_cold;
	return base == own_base;
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
 * so it never reads past this page. Only an answer that shows the path was read counts:
 * an error that may come before the read (ENOMEM, or a seccomp filter's EPERM or ENOSYS) leaves
 * the page unknown, hence unread. The raw call, like the openat of procmaps.c: a program's own
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
	struct frame {
		uintptr_t ra, base;
		bool own;
	} found[TRACE_FOUND];
} trace_space STATIC_APART(trace_space);
static atomic_flag trace_busy = ATOMIC_FLAG_INIT;

static noinline __attribute__((no_sanitize_address)) void print_trace_held(void)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	struct exec_range *ranges = trace_space.ranges;
	size_t nranges = 0;
	uintptr_t stack_end = 0, base = 0, known = NO_PAGE;
	/* rampart's own module, and the program's (its program headers are in it). */
	uintptr_t self = (uintptr_t)&report_fatal, phdr = (uintptr_t)getauxval(AT_PHDR);
	uintptr_t self_base = NO_MODULE, phdr_base = NO_MODULE;
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
		if (self >= lp->start && self < lp->end) self_base = base;
		if (phdr >= lp->start && phdr < lp->end) phdr_base = base;
		if (lp->r && lp->x && nranges < TRACE_RANGES) ranges[nranges++] = (struct exec_range){lp->start, lp->end, base};
	}
	maps_close(mp);
	if (!stack_end) return;
	uintptr_t own_base = self_base != phdr_base ? self_base : NO_MODULE;

	/* The scan: words on this thread's stack that return just after a call. Each page
	 * is asked about before its first word is read (an aligned word never straddles
	 * two); the stack ends, for the scan, at the first page that cannot be read. */
	struct frame *found = trace_space.found;
	size_t nfound = 0;
	uintptr_t top = stack_end - sp > TRACE_SCAN ? sp + TRACE_SCAN : stack_end, stack_known = NO_PAGE;
	for (uintptr_t a = align_up(sp, sizeof(uintptr_t)); a + sizeof(uintptr_t) <= top && nfound < TRACE_FOUND;
	     a += sizeof(uintptr_t)) {
		if (!span_readable(a, a + sizeof(uintptr_t), &stack_known)) break;
		uintptr_t v = *(const uintptr_t *)a;
		for (size_t i = 0; i < nranges; i++) {
			if (v < ranges[i].start + 8 || v >= ranges[i].end) continue;
			if (span_readable(v - 8, v, &known) && after_call(v))
				found[nfound++] = (struct frame){v, ranges[i].base, own_code(v, ranges[i].base, own_base)};
			break;
		}
	}
	/* The innermost frames are rampart's own, down to the call that found the error:
	 * left out, so that the list starts with the program's call into rampart. Among
	 * and before them lie stale return addresses left by what ran there earlier (the C
	 * library's system call wrappers rampart called, which a static program holds in
	 * its own code; start-up code), one or two in a row: rampart's frames end, for the
	 * list, at its last one before more than TRACE_STALE_RUN frames in a row outside it. */
	size_t first = 0, run = 0;
	bool seen = false;
	for (size_t i = 0; i < nfound && run <= TRACE_STALE_RUN; i++) {
		if (found[i].own) {
			first = i + 1;
			run = 0;
			seen = true;
		} else if (seen) {
			run++;
		}
	}
	found += first;
	size_t nframes = MIN(nfound - first, (size_t)TRACE_FRAMES);
	if (!nframes) return;

	/* Pass 2: the module names, then the lines. */
	char line[TRACE_NAME + 64];
	struct out o = out_fd(STDERR_FILENO, line, sizeof line);
	out_str(&o, "rampart: callers (return addresses found on the stack, innermost first):\n");
	out_flush(&o);
	char (*names)[TRACE_NAME] = trace_space.names;
	for (size_t f = 0; f < nframes; f++) names[f][0] = 0;
	if (maps_open(mp)) {
		while (maps_next(mp, lp))
			for (size_t f = 0; f < nframes; f++)
				if (found[f].ra >= lp->start && found[f].ra < lp->end) {
					size_t k = 0;
					for (; lp->path[k] && k < TRACE_NAME - 1; k++) names[f][k] = lp->path[k];
					names[f][k] = 0;
				}
		maps_close(mp);
	}
	for (size_t f = 0; f < nframes; f++) { /* a line a write */
		out_str(&o, "rampart:   #");
		out_num(&o, f);
		out_str(&o, " ");
		out_str(&o, names[f][0] ? names[f] : "?");
		out_str(&o, "+");
		out_hex(&o, found[f].ra - found[f].base);
		out_str(&o, "\n");
		out_flush(&o);
	}
}

/* For fatal errors: the storage is never given back (the process aborts). */
static void print_trace(void)
{
	if (atomic_flag_test_and_set(&trace_busy)) return;
	print_trace_held();
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
	print_trace();
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
	put_what(&o, op, kind, addr);
	out_str(&o, "\n");
	out_flush(&o);
}

void report_fatal(enum report_op op, enum report_kind kind, const void *addr)
{
	char line[256];
	struct out o = out_fd(STDERR_FILENO, line, sizeof line);
	out_str(&o, "rampart: fatal: ");
	put_what(&o, op, kind, addr);
	out_str(&o, "\n");
	write_and_abort(&o);
}

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

/* on_error=report: the error line and its callers, and the process goes on. The trace's
 * static storage is taken with trace_busy and given back here (a fatal error never gives
 * it back: it aborts). A program that keeps making the same mistake must not flood its
 * stderr: after REPORTS_MAX reports one last line says that the rest are silent. */
#define REPORTS_MAX 100
static _Atomic unsigned reports;

static void report_error(enum report_op op, enum report_kind kind, const void *addr)
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
	put_what(&o, op, kind, addr);
	out_str(&o, "; ");
	out_str(&o, kinds[kind].go_on);
	out_str(&o, " (on_error=report)\n");
	out_flush(&o);
	if (!atomic_flag_test_and_set(&trace_busy)) {
		print_trace_held();
		atomic_flag_clear(&trace_busy);
	}
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

bool report_go_on(enum report_op op, enum report_kind kind, const void *addr)
{
	if (!kinds[kind].go_on || !may_go_on(op, kind)) return false;
	if (kind == ERR_WRONG_SIZE && !roots.opt.sized_free) return true;
	if (roots.opt.on_error != ON_ERROR_REPORT) return false;
	report_error(op, kind, addr);
	return true;
}
