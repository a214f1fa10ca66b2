/*
 * callers.c — the callers of an error (callers.h): the stack walked by the unwind
 * tables, frame by frame, from this function's own registers; where a frame has no
 * rules (code built without unwind tables: musl's C library, hand-written assembly),
 * a scan of the stack above it for a word that returns just after a call instruction
 * takes its place; then rampart's own frames are left out and the rest printed.
 */
#define _GNU_SOURCE
#include "base/callers.h"

#include <stdatomic.h>
#include <unistd.h>

#include "base/cfi.h"
#include "base/eh_frame.h"
#include "base/modules.h"
#include "base/peek.h"
#include "base/symbols.h"
#include "base/text.h"

#define TRACE_FRAMES 16          /* printed */
#define TRACE_WALK 64            /* walked, rampart's own frames included */
#define TRACE_SCAN (64u * 1024u) /* how far one scan reads up the stack */
/* Scanned frames only: stale return addresses among rampart's own ones (left by the
 * system call wrappers it called, start-up code) come one or two in a row, so its
 * frames end, for the list, at its last one before more than this many outside it. */
#define TRACE_STALE_RUN 2

enum { FRAME_OWN = 1, FRAME_SCANNED = 2, FRAME_EXACT = 4 };
struct frame {
	uintptr_t pc;
	unsigned module;
	unsigned flags;
};

/* The working storage is static, not on the stack: a thread with a small stack must
 * still abort with SIGABRT. */
static struct {
	struct modules ms;
	struct peek pk;
	struct cfi_space cfi;
	struct frame frames[TRACE_WALK];
	unsigned shown[TRACE_FRAMES]; /* the frames printed, by index */
	unsigned modules[TRACE_FRAMES]; /* and their modules, each once */
	char names[TRACE_FRAMES][MODULE_NAME];
	char symbol[SYMBOL_NAME];
} space STATIC_APART(callers_space);
static atomic_flag busy = ATOMIC_FLAG_INIT;

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

static bool own_code(const struct modules *ms, uintptr_t pc, unsigned module)
{
	uintptr_t text = (uintptr_t)__start_rampart_text, unlikely_text = (uintptr_t)__start_rampart_text_cold;
	if (text || unlikely_text)
		return pc - text < (uintptr_t)__stop_rampart_text - text ||
		       pc - unlikely_text < (uintptr_t)__stop_rampart_text_cold - unlikely_text;
	return (int)module == ms->own && ms->own != ms->program;
}

/* Does the instruction before ra look like a call? */
static bool after_call(struct peek *pk, uintptr_t ra)
{
#if defined(__x86_64__)
	unsigned char b[8];
	if (ra < sizeof b || !peek_bytes(pk, ra - sizeof b, b, sizeof b)) return false;
	if (b[8 - 5] == 0xe8) return true; /* call rel32 */
	static const int back[] = {2, 3, 4, 6, 7};
	for (size_t i = 0; i < sizeof back / sizeof *back; i++) /* call r/m64: ff /2 */
		if (b[8 - back[i]] == 0xff && ((b[8 - back[i] + 1] >> 3) & 7) == 2) return true;
	return false;
#elif defined(__aarch64__)
	uint32_t insn;
	if (ra < 4 || !peek_bytes(pk, ra - 4, &insn, 4)) return false;
	return (insn & 0xfc000000u) == 0x94000000u || (insn & 0xfffffc1fu) == 0xd63f0000u; /* bl, blr */
#else
	(void)pk, (void)ra;
	return false;
#endif
}

/* The first word at or above from, within TRACE_SCAN bytes and the stack, that returns
 * just after a call in a module: its address in *at, its value in *ra. */
static bool scan(const struct cfi_stack *stk, uintptr_t from, uintptr_t *at, uintptr_t *ra)
{
	uintptr_t top = stk->hi - from > TRACE_SCAN ? from + TRACE_SCAN : stk->hi;
	for (uintptr_t a = align_up(from, sizeof(uintptr_t)); a + sizeof(uintptr_t) <= top; a += sizeof(uintptr_t)) {
		uintptr_t v;
		/* The stack ends, for the scan, at a page that cannot be read. */
		if (a < stk->lo || !peek_word(&space.pk, a, &v)) return false;
		if (modules_find(&space.ms, v) >= 0 && after_call(&space.pk, v)) {
			*at = a;
			*ra = v;
			return true;
		}
	}
	return false;
}

/* The bounds of the stack that holds sp, from the mapping that holds it, with sp's
 * memory tag (arm64): every frame's address there derives from sp and carries it, and
 * its bytes are read through such addresses (an untagged read of a tagged stack would
 * fault on a tag check). */
static bool stack_of(uintptr_t sp, struct cfi_stack *stk)
{
	uintptr_t tag = sp - address_untagged(sp), lo, hi;
	if (!modules_mapping_of(&space.ms, address_untagged(sp), &lo, &hi)) return false;
	stk->lo = lo + tag;
	stk->hi = hi + tag;
	return true;
}

/* One frame up by the unwind rules. */
static enum cfi_step step(struct cfi_stack *stk, struct cfi_regs *regs, unsigned module, bool exact, bool *signal)
{
	struct fde f;
	uintptr_t at = exact ? regs->pc : regs->pc - 1, sp = regs->r[CFI_SP];
	if (!modules_elf(&space.ms, module, &space.pk) || !eh_frame_find(&space.ms.m[module], &space.pk, at, &f))
		return CFI_UNKNOWN;
	enum cfi_step st = cfi_step(&space.cfi, &space.pk, &f, stk, regs, at);
	if (st != CFI_STEPPED) return st;
	*signal = f.signal;
	uintptr_t next = regs->r[CFI_SP];
	if (!(regs->known >> CFI_SP & 1)) return CFI_UNKNOWN;
	if (next >= stk->lo && next < stk->hi) return f.signal || next > sp ? CFI_STEPPED : CFI_OUTERMOST; /* no loop */
	/* A signal handler may run on another stack than the code it interrupted. */
	return f.signal && stack_of(next, stk) ? CFI_STEPPED : CFI_OUTERMOST;
}

/* The frames from the one regs describes (rampart's own, this trace's) outwards. */
static size_t walk(struct frame *fr, struct cfi_regs *regs)
{
	uintptr_t tag = regs->r[CFI_SP] - address_untagged(regs->r[CFI_SP]);
	struct cfi_stack stk = {space.ms.stack_lo + tag, space.ms.stack_hi + tag};
	uintptr_t scan_from = regs->r[CFI_SP];
	unsigned flags = FRAME_EXACT;
	bool scanning = CFI_REGS == 1;
	size_t n = 0;
	while (n < TRACE_WALK) {
		int module = modules_find(&space.ms, regs->pc);
		if (module < 0) break; /* code outside every module (generated at run time) */
		bool own = own_code(&space.ms, regs->pc, (unsigned)module);
		fr[n++] = (struct frame){regs->pc, (unsigned)module, flags | (own ? FRAME_OWN : 0)};
		bool signal = false;
		enum cfi_step st = scanning ? CFI_UNKNOWN : step(&stk, regs, (unsigned)module, flags & FRAME_EXACT, &signal);
		if (st == CFI_OUTERMOST) break;
		if (st == CFI_STEPPED) {
			scan_from = regs->r[CFI_SP];
			flags = (flags & FRAME_SCANNED) | (signal ? FRAME_EXACT : 0);
			continue;
		}
		uintptr_t at, ra;
		if (!scan(&stk, scan_from, &at, &ra)) break;
		scan_from = at + sizeof ra;
		regs->pc = ra;
		regs->known = 0;
		flags = FRAME_SCANNED; /* and every frame after it: the scan may have found a stale address */
#if defined(__x86_64__)
		/* The return address was the last thing the call pushed: the caller's stack
		 * pointer is just above it, and its rules can go on from there. */
		regs->r[CFI_SP] = at + sizeof ra;
		regs->known = (uint64_t)1 << CFI_SP;
#else
		scanning = true; /* arm64: where the caller's frame ends is not known: scan on */
#endif
	}
	return n;
}

/* The first frame to print: after rampart's own. A frame the rules found outside
 * rampart ends them; scanned frames may be stale ones among them (TRACE_STALE_RUN). */
static size_t first_outside(const struct frame *fr, size_t n)
{
	size_t first = 0, run = 0;
	bool seen = false;
	for (size_t i = 0; i < n; i++) {
		if (fr[i].flags & FRAME_OWN) {
			first = i + 1;
			run = 0;
			seen = true;
		} else if (!(fr[i].flags & FRAME_SCANNED) || (seen && ++run > TRACE_STALE_RUN)) {
			break;
		}
	}
	return first;
}

/* "#i module+0xaddr (symbol+0xoff) [scanned]": addr as addr2line -e module takes it,
 * the address in the file (the module's bias taken off: 0 for a program linked at a
 * fixed address). name: the module's path. */
static void put_frame(struct out *o, size_t i, const struct frame *f, const char *name)
{
	struct module *m = &space.ms.m[f->module];
	uintptr_t at = f->flags & FRAME_EXACT ? f->pc : f->pc - 1, off;
	(void)modules_elf(&space.ms, f->module, &space.pk); /* the bias, where the headers give it */
	out_str(o, "rampart:   #");
	out_num(o, i);
	out_str(o, " ");
	out_str(o, name);
	out_str(o, "+");
	out_hex(o, at - m->bias);
	if (m->elf_ok && symbol_of(m, &space.pk, at, space.symbol, &off)) {
		out_str(o, " (");
		out_str(o, space.symbol);
		out_str(o, "+");
		out_hex(o, off);
		out_str(o, ")");
	}
	if (f->flags & FRAME_SCANNED) out_str(o, " [scanned]");
	out_str(o, "\n");
}

static noinline __attribute__((no_sanitize_address)) void print_held(void)
{
	struct cfi_regs regs;
	CFI_SNAPSHOT(&regs);
	if (!(regs.known >> CFI_SP & 1)) regs.r[CFI_SP] = (uintptr_t)__builtin_frame_address(0);
	peek_init(&space.pk);
	if (!modules_read(&space.ms, regs.r[CFI_SP], (uintptr_t)&print_held)) return;
	if (CFI_REGS == 1) regs.pc = (uintptr_t)&print_held;
	size_t n = walk(space.frames, &regs), first = first_outside(space.frames, n), shown = 0, nmod = 0;
	for (size_t i = first; i < n && shown < TRACE_FRAMES; i++) {
		/* rampart calls no code of the program's but a new-handler: a scan's word in
		 * rampart's code past the first frame is a stale one. */
		const struct frame *f = &space.frames[i];
		if ((f->flags & (FRAME_OWN | FRAME_SCANNED)) == (FRAME_OWN | FRAME_SCANNED)) continue;
		space.shown[shown++] = (unsigned)i;
		size_t k = 0;
		while (k < nmod && space.modules[k] != f->module) k++;
		if (k == nmod) space.modules[nmod++] = f->module;
	}
	if (!shown) return;
	modules_names(&space.ms, space.modules, nmod, space.names);
	char line[MODULE_NAME + SYMBOL_NAME + 64];
	struct out o = out_fd(STDERR_FILENO, line, sizeof line);
	out_str(&o, "rampart: callers (innermost first; each the address of its call, module+offset as addr2line -e "
		    "module takes it):\n");
	out_flush(&o);
	for (size_t i = 0; i < shown; i++) { /* a line a write */
		const struct frame *f = &space.frames[space.shown[i]];
		size_t k = 0;
		while (space.modules[k] != f->module) k++;
		put_frame(&o, i, f, space.names[k]);
		out_flush(&o);
	}
}

void callers_print(bool give_back)
{
	if (atomic_flag_test_and_set(&busy)) return;
	print_held();
	if (give_back) atomic_flag_clear(&busy);
}
