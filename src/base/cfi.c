/* cfi.c — following a frame's unwind rules to its caller (cfi.h). The instructions are
 * DWARF 5's (section 6.4) as .eh_frame carries them; expressions: dwarf_expr.c. */
#include "base/cfi.h"

#include <stddef.h>

#include "base/dwarf.h"
#include "base/dwarf_expr.h"

_Static_assert(offsetof(struct cfi_regs, pc) == CFI_REGS * sizeof(uintptr_t), "CFI_SNAPSHOT stores pc after r[]");

/* How a register of the caller is found (struct cfi_rule.how). SAME is 0: a register
 * no rule names keeps its value, as GCC's unwinder assumes for the callee-saved ones. */
enum { SAME, UNDEF, OFFSET, VAL_OFFSET, REG, EXPR, VAL_EXPR };

static bool known(const struct cfi_regs *regs, uint64_t r)
{
	return r < CFI_REGS && (regs->known >> r & 1);
}

/* What an expression or a rule of this frame may read: its registers and its stack. */
static struct dwarf_env env_of(struct peek *pk, const struct cfi_stack *stk, const struct cfi_regs *regs)
{
	return (struct dwarf_env){pk, regs->r, regs->known, CFI_REGS, stk->lo, stk->hi};
}

/* --- the instructions (DWARF 5, 6.4.2) ----------------------------------------------- */

static void set(struct cfi_row *r, uint64_t reg, uint8_t how, int64_t v, uint32_t len)
{
	if (reg < CFI_REGS) r->reg[reg] = (struct cfi_rule){how, len, v}; /* others (vector registers): not needed */
}

/* An expression block: its length, then its bytes, skipped. */
static void block(struct dwarf_cur *c, struct cfi_rule *out, uint8_t how)
{
	uint64_t len = dwarf_uleb(c);
	*out = (struct cfi_rule){how, (uint32_t)len, (int64_t)c->at};
	if (len > UINT32_MAX) c->bad = true;
	dwarf_skip(c, len);
}

/* Run the instructions of [at, end) from *loc until the row for pc is complete. */
static bool run(struct cfi_space *s, struct peek *pk, const struct fde *f, uintptr_t at, uintptr_t end, uintptr_t pc,
		uintptr_t *loc, unsigned *depth)
{
	struct dwarf_cur c = dwarf_cur(pk, at, end);
	struct cfi_row *r = &s->row;
	int64_t da = f->data_align;
	while (c.at < c.end) {
		uint8_t op = (uint8_t)dwarf_u(&c, 1);
		uint64_t reg, delta;
		struct cfi_rule e;
		switch (op >> 6) { /* the three with an operand in their low six bits */
		case 1: delta = op & 0x3f; goto advance;
		case 2: set(r, op & 0x3f, OFFSET, (int64_t)dwarf_uleb(&c) * da, 0); continue;
		case 3: if ((op & 0x3f) < CFI_REGS) r->reg[op & 0x3f] = s->initial.reg[op & 0x3f]; continue;
		}
		switch (op) {
		case 0x00: break; /* nop */
		case 0x02: delta = dwarf_u(&c, 1); goto advance;
		case 0x03: delta = dwarf_u(&c, 2); goto advance;
		case 0x04: delta = dwarf_u(&c, 4); goto advance;
		case 0x05: reg = dwarf_uleb(&c); set(r, reg, OFFSET, (int64_t)dwarf_uleb(&c) * da, 0); break;
		case 0x06: reg = dwarf_uleb(&c); if (reg < CFI_REGS) r->reg[reg] = s->initial.reg[reg]; break;
		case 0x07: set(r, dwarf_uleb(&c), UNDEF, 0, 0); break;
		case 0x08: set(r, dwarf_uleb(&c), SAME, 0, 0); break;
		case 0x09: reg = dwarf_uleb(&c); set(r, reg, REG, (int64_t)dwarf_uleb(&c), 0); break;
		case 0x0a: /* remember_state: the whole row, CFA included */
			if (*depth == CFI_DEPTH) return false;
			s->saved[(*depth)++] = *r;
			break;
		case 0x0b:
			if (!*depth) return false;
			*r = s->saved[--*depth];
			break;
		case 0x0c: /* def_cfa: register, then offset */
			reg = dwarf_uleb(&c);
			r->cfa = (struct cfi_rule){REG, 0, (int64_t)reg};
			r->cfa_off = (int64_t)dwarf_uleb(&c);
			break;
		case 0x0d: r->cfa = (struct cfi_rule){REG, 0, (int64_t)dwarf_uleb(&c)}; break;
		case 0x0e: r->cfa_off = (int64_t)dwarf_uleb(&c); break;
		case 0x0f: block(&c, &r->cfa, EXPR); break;
		case 0x10: reg = dwarf_uleb(&c); block(&c, &e, EXPR); set(r, reg, EXPR, e.v, e.len); break;
		case 0x11: reg = dwarf_uleb(&c); set(r, reg, OFFSET, dwarf_sleb(&c) * da, 0); break;
		case 0x12: /* def_cfa_sf */
			reg = dwarf_uleb(&c);
			r->cfa = (struct cfi_rule){REG, 0, (int64_t)reg};
			r->cfa_off = dwarf_sleb(&c) * da;
			break;
		case 0x13: r->cfa_off = dwarf_sleb(&c) * da; break;
		case 0x14: reg = dwarf_uleb(&c); set(r, reg, VAL_OFFSET, (int64_t)dwarf_uleb(&c) * da, 0); break;
		case 0x15: reg = dwarf_uleb(&c); set(r, reg, VAL_OFFSET, dwarf_sleb(&c) * da, 0); break;
		case 0x16: reg = dwarf_uleb(&c); block(&c, &e, VAL_EXPR); set(r, reg, VAL_EXPR, e.v, e.len); break;
#if defined(__aarch64__)
		case 0x2d: r->ra_signed = !r->ra_signed; break; /* AARCH64_negate_ra_state */
#endif
		case 0x2e: dwarf_uleb(&c); break; /* GNU_args_size: nothing to restore */
		case 0x2f: reg = dwarf_uleb(&c); set(r, reg, OFFSET, -(int64_t)dwarf_uleb(&c) * da, 0); break;
		default: return false; /* set_loc and the rest: not written by today's compilers */
		}
		if (c.bad) return false;
		continue;
	advance:
		if (c.bad) return false;
		*loc += delta * f->code_align;
		if (*loc > pc) return true; /* the next row starts past pc: this one is pc's */
	}
	return !c.bad;
}

#if defined(__aarch64__)
/* A return address signed with pointer authentication, without its code: xpaclri (a
 * hint, so a no-op on CPUs without it, where nothing was signed). */
static uintptr_t strip_pac(uintptr_t ra)
{
	register uintptr_t x30 __asm__("x30") = ra;
	__asm__("hint 7" : "+r"(x30));
	return x30;
}
#endif

/* The caller's value of register i by rule ru; false where it is unknown. */
static bool recover(const struct dwarf_env *env, const struct cfi_regs *regs, const struct cfi_rule *ru, unsigned i,
		    uintptr_t cfa, uintptr_t *v)
{
	uintptr_t a;
	switch (ru->how) {
	case SAME: *v = regs->r[i]; return known(regs, i);
	case OFFSET: return dwarf_stack_word(env, cfa + (uintptr_t)ru->v, v);
	case VAL_OFFSET: *v = cfa + (uintptr_t)ru->v; return true;
	case REG: *v = known(regs, (uint64_t)ru->v) ? regs->r[ru->v] : 0; return known(regs, (uint64_t)ru->v);
	case EXPR: return dwarf_expr(env, (uintptr_t)ru->v, ru->len, true, cfa, &a) && dwarf_stack_word(env, a, v);
	case VAL_EXPR: return dwarf_expr(env, (uintptr_t)ru->v, ru->len, true, cfa, v);
	default: return false; /* UNDEF */
	}
}

enum cfi_step cfi_step(struct cfi_space *s, struct peek *pk, const struct fde *f, const struct cfi_stack *stk,
		       struct cfi_regs *regs, uintptr_t at)
{
	static const struct cfi_row empty;
	s->row = s->initial = empty;
	uintptr_t loc = f->pc_begin;
	unsigned depth = 0;
	if (!run(s, pk, f, f->cie_instr, f->cie_end, at, &loc, &depth)) return CFI_UNKNOWN;
	s->initial = s->row;
	if (!run(s, pk, f, f->instr, f->end, at, &loc, &depth)) return CFI_UNKNOWN;
	const struct cfi_row *r = &s->row;
#if defined(__x86_64__)
	regs->r[16] = regs->pc; /* the return address column is the frame's own rip (PLT rules read it) */
	regs->known |= 1u << 16;
#endif
	struct dwarf_env env = env_of(pk, stk, regs);
	uintptr_t cfa;
	if (r->cfa.how == EXPR) {
		if (!dwarf_expr(&env, (uintptr_t)r->cfa.v, r->cfa.len, false, 0, &cfa)) return CFI_UNKNOWN;
	} else if (r->cfa.how == REG && known(regs, (uint64_t)r->cfa.v)) {
		cfa = regs->r[r->cfa.v] + (uintptr_t)r->cfa_off;
	} else {
		return CFI_UNKNOWN;
	}
	if (f->ra >= CFI_REGS) return CFI_UNKNOWN;
	if (r->reg[f->ra].how == UNDEF) return CFI_OUTERMOST; /* _start, a thread's first frame */
	struct cfi_regs out = {.known = 0};
	for (unsigned i = 0; i < CFI_REGS; i++)
		if (recover(&env, regs, &r->reg[i], i, cfa, &out.r[i])) out.known |= (uint64_t)1 << i;
	/* The caller's stack pointer is the CFA, unless a rule says otherwise (a signal
	 * frame restores it from the interrupted context). */
	if (r->reg[CFI_SP].how == SAME) {
		out.r[CFI_SP] = cfa;
		out.known |= (uint64_t)1 << CFI_SP;
	}
	if (!known(&out, f->ra)) return CFI_UNKNOWN;
	out.pc = out.r[f->ra];
#if defined(__aarch64__)
	if (r->ra_signed) out.pc = strip_pac(out.pc);
#endif
	if (!out.pc) return CFI_OUTERMOST;
	*regs = out;
	return CFI_STEPPED;
}
