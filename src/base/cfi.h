/*
 * cfi.h — one step up the stack by the call frame information: from a frame's
 * registers to its caller's, by the rules of the FDE that covers the frame's pc
 * (DWARF's CFA instructions and expressions), and the registers of the frame a trace
 * starts in (CFI_SNAPSHOT).
 *
 * Invariants:
 *  - A step reads the stack only inside the bounds it is given, and every byte through
 *    peek (peek.h): it cannot fault. Unwind data is read through a dwarf cursor bounded
 *    by the FDE's table; expressions are evaluated by dwarf_expr.c, under the same
 *    bounds.
 *  - A register whose value a rule cannot give is unknown (its bit clear in known),
 *    never guessed; a step that needs an unknown register answers CFI_UNKNOWN.
 *  - Nothing allocates; the rule rows live in a struct cfi_space the caller gives
 *    (static storage: a trace must run on a thread's last few KiB of stack).
 */
#ifndef RAMPART_CFI_H
#define RAMPART_CFI_H

#include "base/common.h"
#include "base/eh_frame.h"
#include "base/peek.h"

/* The registers DWARF numbers and a step may need: the CFA's base and what the rules
 * read. x86_64: rax rdx rcx rbx rsi rdi rbp rsp r8-r15, and 16 the return address
 * (rip). arm64: x0-x30 and 31 sp; x30 holds the return address. */
#if defined(__x86_64__)
#define CFI_REGS 17
#define CFI_SP 7
#elif defined(__aarch64__)
#define CFI_REGS 32
#define CFI_SP 31
#else
#define CFI_REGS 1 /* no unwinding: the trace falls back to its scan */
#define CFI_SP 0
#endif

struct cfi_regs {
	uintptr_t r[CFI_REGS];
	uintptr_t pc;   /* right after r[]: CFI_SNAPSHOT stores it there */
	uint64_t known; /* bit i: r[i] holds the frame's value */
};

/* Where a frame's saved registers may be read: the stack it runs on. */
struct cfi_stack {
	uintptr_t lo, hi;
};

enum cfi_step {
	CFI_STEPPED,   /* regs now describe the caller */
	CFI_OUTERMOST, /* the frame has no caller (its return address is undefined or 0) */
	CFI_UNKNOWN,   /* the rules cannot be followed: unreadable, unsupported, unknown registers */
};

/* A row of rules per register, and DW_CFA_remember_state's stack of rows. */
#define CFI_DEPTH 8
struct cfi_rule {
	uint8_t how;
	uint32_t len; /* an expression's length */
	int64_t v;    /* an offset, a register, or an expression's address */
};
struct cfi_row {
	struct cfi_rule reg[CFI_REGS], cfa;
	int64_t cfa_off;
	bool ra_signed; /* arm64: the return address carries a pointer authentication code */
};
struct cfi_space {
	struct cfi_row row, initial, saved[CFI_DEPTH];
};

/* One step from the frame regs describes, covered by f. at: the address whose row
 * applies (the pc itself where it is the interrupted or current instruction, pc - 1
 * where it is a return address: the call it returns from may be a function's last
 * instruction). */
enum cfi_step cfi_step(struct cfi_space *s, struct peek *pk, const struct fde *f, const struct cfi_stack *stk,
		       struct cfi_regs *regs, uintptr_t at);

/* The registers of the frame this runs in, with pc the address of an instruction of
 * it whose row describes them (nothing between moves the stack pointer). */
#if defined(__x86_64__)
#define CFI_SNAPSHOT(regs) \
	do { \
		__asm__ volatile("lea 0(%%rip), %%rax\n\t" \
				 "mov %%rax, 136(%0)\n\t" \
				 "mov %%rbx, 24(%0)\n\t" \
				 "mov %%rbp, 48(%0)\n\t" \
				 "mov %%rsp, 56(%0)\n\t" \
				 "mov %%r12, 96(%0)\n\t" \
				 "mov %%r13, 104(%0)\n\t" \
				 "mov %%r14, 112(%0)\n\t" \
				 "mov %%r15, 120(%0)\n\t" \
				 : \
				 : "r"((regs)->r) \
				 : "rax", "memory"); \
		(regs)->known = 1u << 3 | 1u << 6 | 1u << 7 | 0xfu << 12; \
	} while (0)
#elif defined(__aarch64__)
#define CFI_SNAPSHOT(regs) \
	do { \
		__asm__ volatile("adr x16, .\n\t" \
				 "str x16, [%0, #256]\n\t" \
				 "stp x19, x20, [%0, #152]\n\t" \
				 "stp x21, x22, [%0, #168]\n\t" \
				 "stp x23, x24, [%0, #184]\n\t" \
				 "stp x25, x26, [%0, #200]\n\t" \
				 "stp x27, x28, [%0, #216]\n\t" \
				 "stp x29, x30, [%0, #232]\n\t" \
				 "mov x16, sp\n\t" \
				 "str x16, [%0, #248]\n\t" \
				 : \
				 : "r"((regs)->r) \
				 : "x16", "memory"); \
		(regs)->known = 0xfff80000u; \
	} while (0)
#else
#define CFI_SNAPSHOT(regs) \
	do { \
		(regs)->pc = 0; \
		(regs)->known = 0; \
	} while (0)
#endif

#endif
