/* cfi.c — following a frame's unwind rules to its caller (cfi.h). The instructions and
 * expressions are DWARF 5's (sections 6.4 and 2.5) as .eh_frame carries them. */
#include "base/cfi.h"

#include <stddef.h>

#include "base/dwarf.h"

_Static_assert(offsetof(struct cfi_regs, pc) == CFI_REGS * sizeof(uintptr_t), "CFI_SNAPSHOT stores pc after r[]");

/* How a register of the caller is found (struct cfi_rule.how). SAME is 0: a register
 * no rule names keeps its value, as GCC's unwinder assumes for the callee-saved ones. */
enum { SAME, UNDEF, OFFSET, VAL_OFFSET, REG, EXPR, VAL_EXPR };

static bool stack_word(struct peek *pk, const struct cfi_stack *stk, uintptr_t a, uintptr_t *v)
{
	return a >= stk->lo && stk->hi >= sizeof *v && a <= stk->hi - sizeof *v && peek_word(pk, a, v);
}

static bool known(const struct cfi_regs *regs, uint64_t r)
{
	return r < CFI_REGS && (regs->known >> r & 1);
}

/* --- expressions (DWARF 5, 2.5) ------------------------------------------------------ */

#define EXPR_STACK 16
#define EXPR_STEPS 256 /* a branch may loop: bounded */

/* The value of the expression at [at, at + len); first is pushed first where push. */
static bool eval(struct peek *pk, const struct cfi_stack *stk, const struct cfi_regs *regs, uintptr_t at,
		 uint32_t len, bool push, uintptr_t first, uintptr_t *out)
{
	uintptr_t st[EXPR_STACK], a, b;
	unsigned n = 0;
	if (push) st[n++] = first;
	struct dwarf_cur c = dwarf_cur(pk, at, at + len);
#define NEED(k) \
	if (n < (k)) return false
#define PUSH(v) \
	do { \
		uintptr_t pushed_ = (v); \
		if (n == EXPR_STACK) return false; \
		st[n++] = pushed_; \
	} while (0)
#define BINARY(expr) \
	do { \
		NEED(2); \
		b = st[--n]; \
		a = st[n - 1]; \
		st[n - 1] = (expr); \
	} while (0)
	for (unsigned steps = 0; c.at < c.end && steps < EXPR_STEPS; steps++) {
		uint8_t op = (uint8_t)dwarf_u(&c, 1);
		if (c.bad) return false;
		if (op >= 0x30 && op <= 0x4f) { /* lit0..31 */
			PUSH((uintptr_t)(op - 0x30));
			continue;
		}
		if (op >= 0x50 && op <= 0x6f) { /* reg0..31: the register's value */
			if (!known(regs, op - 0x50u)) return false;
			PUSH(regs->r[op - 0x50]);
			continue;
		}
		if (op >= 0x70 && op <= 0x8f) { /* breg0..31: the register's value + offset */
			int64_t off = dwarf_sleb(&c);
			if (!known(regs, op - 0x70u)) return false;
			PUSH(regs->r[op - 0x70] + (uintptr_t)off);
			continue;
		}
		switch (op) {
		case 0x06: /* deref */
			NEED(1);
			if (!stack_word(pk, stk, st[n - 1], &st[n - 1])) return false;
			break;
		case 0x94: { /* deref_size */
			uint64_t size = dwarf_u(&c, 1);
			uintptr_t w;
			NEED(1);
			if (size == 0 || size > sizeof w || !stack_word(pk, stk, st[n - 1], &w)) return false;
			st[n - 1] = size == sizeof w ? w : w & (((uintptr_t)1 << (size * 8)) - 1);
			break;
		}
		case 0x08: PUSH((uintptr_t)dwarf_u(&c, 1)); break;
		case 0x09: PUSH((uintptr_t)(int64_t)(int8_t)dwarf_u(&c, 1)); break;
		case 0x0a: PUSH((uintptr_t)dwarf_u(&c, 2)); break;
		case 0x0b: PUSH((uintptr_t)(int64_t)(int16_t)dwarf_u(&c, 2)); break;
		case 0x0c: PUSH((uintptr_t)dwarf_u(&c, 4)); break;
		case 0x0d: PUSH((uintptr_t)(int64_t)(int32_t)dwarf_u(&c, 4)); break;
		case 0x0e: case 0x0f: PUSH((uintptr_t)dwarf_u(&c, 8)); break;
		case 0x10: PUSH((uintptr_t)dwarf_uleb(&c)); break;
		case 0x11: PUSH((uintptr_t)dwarf_sleb(&c)); break;
		case 0x12: NEED(1); PUSH(st[n - 1]); break;   /* dup */
		case 0x13: NEED(1); n--; break;               /* drop */
		case 0x14: NEED(2); PUSH(st[n - 2]); break;   /* over */
		case 0x15: {                                  /* pick */
			uint64_t k = dwarf_u(&c, 1);
			NEED(k + 1);
			PUSH(st[n - 1 - k]);
			break;
		}
		case 0x16: NEED(2); a = st[n - 1]; st[n - 1] = st[n - 2]; st[n - 2] = a; break; /* swap */
		case 0x17: /* rot */
			NEED(3);
			a = st[n - 1];
			st[n - 1] = st[n - 2];
			st[n - 2] = st[n - 3];
			st[n - 3] = a;
			break;
		case 0x19: NEED(1); if ((int64_t)st[n - 1] < 0) st[n - 1] = -st[n - 1]; break; /* abs */
		case 0x1a: BINARY(a & b); break;
		case 0x1b: /* div, signed */
			NEED(2);
			if (!st[n - 1]) return false;
			BINARY((uintptr_t)((int64_t)a / (int64_t)b));
			break;
		case 0x1c: BINARY(a - b); break;
		case 0x1d: /* mod */
			NEED(2);
			if (!st[n - 1]) return false;
			BINARY(a % b);
			break;
		case 0x1e: BINARY(a * b); break;
		case 0x1f: NEED(1); st[n - 1] = -st[n - 1]; break;
		case 0x20: NEED(1); st[n - 1] = ~st[n - 1]; break;
		case 0x21: BINARY(a | b); break;
		case 0x22: BINARY(a + b); break;
		case 0x23: NEED(1); st[n - 1] += (uintptr_t)dwarf_uleb(&c); break; /* plus_uconst */
		case 0x24: BINARY(b < 64 ? a << b : 0); break;
		case 0x25: BINARY(b < 64 ? a >> b : 0); break;
		case 0x26: BINARY((uintptr_t)((int64_t)a >> (b < 64 ? b : 63))); break;
		case 0x27: BINARY(a ^ b); break;
		case 0x29: BINARY((int64_t)a == (int64_t)b); break;
		case 0x2a: BINARY((int64_t)a >= (int64_t)b); break;
		case 0x2b: BINARY((int64_t)a > (int64_t)b); break;
		case 0x2c: BINARY((int64_t)a <= (int64_t)b); break;
		case 0x2d: BINARY((int64_t)a < (int64_t)b); break;
		case 0x2e: BINARY((int64_t)a != (int64_t)b); break;
		case 0x28: /* bra */
		case 0x2f: { /* skip */
			int64_t off = (int16_t)dwarf_u(&c, 2);
			bool jump = true;
			if (op == 0x28) {
				NEED(1);
				jump = st[--n] != 0;
			}
			if (!jump) break;
			if (off < (int64_t)(at - c.at) || off > (int64_t)(c.end - c.at)) return false;
			c.at += (uintptr_t)off;
			break;
		}
		case 0x90: { /* regx */
			uint64_t r = dwarf_uleb(&c);
			if (!known(regs, r)) return false;
			PUSH(regs->r[r]);
			break;
		}
		case 0x92: { /* bregx */
			uint64_t r = dwarf_uleb(&c);
			int64_t off = dwarf_sleb(&c);
			if (!known(regs, r)) return false;
			PUSH(regs->r[r] + (uintptr_t)off);
			break;
		}
		case 0x96: break; /* nop */
		default: return false; /* addr (a link-time address), call_frame_cfa and the rest */
		}
		if (c.bad) return false;
	}
#undef NEED
#undef PUSH
#undef BINARY
	if (c.at != c.end || !n) return false;
	*out = st[n - 1];
	return true;
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
static bool recover(struct peek *pk, const struct cfi_stack *stk, const struct cfi_regs *regs,
		    const struct cfi_rule *ru, unsigned i, uintptr_t cfa, uintptr_t *v)
{
	uintptr_t a;
	switch (ru->how) {
	case SAME: *v = regs->r[i]; return known(regs, i);
	case OFFSET: return stack_word(pk, stk, cfa + (uintptr_t)ru->v, v);
	case VAL_OFFSET: *v = cfa + (uintptr_t)ru->v; return true;
	case REG: *v = known(regs, (uint64_t)ru->v) ? regs->r[ru->v] : 0; return known(regs, (uint64_t)ru->v);
	case EXPR: return eval(pk, stk, regs, (uintptr_t)ru->v, ru->len, true, cfa, &a) && stack_word(pk, stk, a, v);
	case VAL_EXPR: return eval(pk, stk, regs, (uintptr_t)ru->v, ru->len, true, cfa, v);
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
	uintptr_t cfa;
	if (r->cfa.how == EXPR) {
		if (!eval(pk, stk, regs, (uintptr_t)r->cfa.v, r->cfa.len, false, 0, &cfa)) return CFI_UNKNOWN;
	} else if (r->cfa.how == REG && known(regs, (uint64_t)r->cfa.v)) {
		cfa = regs->r[r->cfa.v] + (uintptr_t)r->cfa_off;
	} else {
		return CFI_UNKNOWN;
	}
	if (f->ra >= CFI_REGS) return CFI_UNKNOWN;
	if (r->reg[f->ra].how == UNDEF) return CFI_OUTERMOST; /* _start, a thread's first frame */
	struct cfi_regs out = {.known = 0};
	for (unsigned i = 0; i < CFI_REGS; i++)
		if (recover(pk, stk, regs, &r->reg[i], i, cfa, &out.r[i])) out.known |= (uint64_t)1 << i;
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
