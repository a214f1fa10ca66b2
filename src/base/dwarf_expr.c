/* dwarf_expr.c — DWARF expressions for unwind rules (dwarf_expr.h). */
#include "base/dwarf_expr.h"

#include "base/dwarf.h"

#define EXPR_STACK 16
#define EXPR_STEPS 256 /* a branch may loop: bounded */

struct machine {
	const struct dwarf_env *env;
	struct dwarf_cur c;
	uintptr_t start; /* the expression's first byte: where a branch may go back to */
	uintptr_t st[EXPR_STACK];
	unsigned n;
};

bool dwarf_stack_word(const struct dwarf_env *env, uintptr_t a, uintptr_t *v)
{
	return a >= env->lo && env->hi >= sizeof *v && a <= env->hi - sizeof *v && peek_word(env->pk, a, v);
}

static bool push(struct machine *m, uintptr_t v)
{
	if (m->n == EXPR_STACK) return false;
	m->st[m->n++] = v;
	return true;
}

/* Register r's value, plus off. */
static bool push_reg(struct machine *m, uint64_t r, int64_t off)
{
	if (r >= m->env->nregs || !(m->env->known >> r & 1)) return false;
	return push(m, m->env->r[r] + (uintptr_t)off);
}

/* dup, drop, over, pick, swap, rot */
static bool shuffle(struct machine *m, uint8_t op)
{
	uintptr_t *st = m->st, t;
	uint64_t k = op == 0x15 ? dwarf_u(&m->c, 1) : op == 0x14 ? 1 : 0;
	unsigned need = op == 0x17 ? 3 : op == 0x16 ? 2 : 1;
	if (m->n < need || m->n <= k) return false;
	switch (op) {
	case 0x12: case 0x14: case 0x15: return push(m, st[m->n - 1 - k]); /* dup, over, pick */
	case 0x13: m->n--; return true;
	case 0x16: t = st[m->n - 1], st[m->n - 1] = st[m->n - 2], st[m->n - 2] = t; return true;
	default: /* rot */
		t = st[m->n - 1], st[m->n - 1] = st[m->n - 2], st[m->n - 2] = st[m->n - 3], st[m->n - 3] = t;
		return true;
	}
}

/* The operations on the top one or two entries: arithmetic, logic, comparisons
 * (signed, as DWARF says). */
static bool arith(struct machine *m, uint8_t op)
{
	uintptr_t *st = m->st;
	if (op == 0x19 || op == 0x1f || op == 0x20) { /* abs, neg, not */
		if (!m->n) return false;
		uintptr_t *a = &st[m->n - 1];
		*a = op == 0x20 ? ~*a : op == 0x1f || (int64_t)*a < 0 ? -*a : *a;
		return true;
	}
	if (m->n < 2) return false;
	uintptr_t b = st[--m->n], a = st[m->n - 1], *r = &st[m->n - 1];
	int64_t sa = (int64_t)a, sb = (int64_t)b;
	switch (op) {
	case 0x1a: *r = a & b; return true;
	case 0x1b: if (!b) return false; *r = (uintptr_t)(sa / sb); return true;
	case 0x1c: *r = a - b; return true;
	case 0x1d: if (!b) return false; *r = a % b; return true;
	case 0x1e: *r = a * b; return true;
	case 0x21: *r = a | b; return true;
	case 0x22: *r = a + b; return true;
	case 0x24: *r = b < 64 ? a << b : 0; return true;
	case 0x25: *r = b < 64 ? a >> b : 0; return true;
	case 0x26: *r = (uintptr_t)(sa >> (b < 64 ? b : 63)); return true;
	case 0x27: *r = a ^ b; return true;
	case 0x29: *r = sa == sb; return true;
	case 0x2a: *r = sa >= sb; return true;
	case 0x2b: *r = sa > sb; return true;
	case 0x2c: *r = sa <= sb; return true;
	case 0x2d: *r = sa < sb; return true;
	case 0x2e: *r = sa != sb; return true;
	default: return false;
	}
}

/* A constant of the size and sign the operation names. */
static bool constant(struct machine *m, uint8_t op)
{
	struct dwarf_cur *c = &m->c;
	switch (op) {
	case 0x08: return push(m, (uintptr_t)dwarf_u(c, 1));
	case 0x09: return push(m, (uintptr_t)(int64_t)(int8_t)dwarf_u(c, 1));
	case 0x0a: return push(m, (uintptr_t)dwarf_u(c, 2));
	case 0x0b: return push(m, (uintptr_t)(int64_t)(int16_t)dwarf_u(c, 2));
	case 0x0c: return push(m, (uintptr_t)dwarf_u(c, 4));
	case 0x0d: return push(m, (uintptr_t)(int64_t)(int32_t)dwarf_u(c, 4));
	case 0x0e: case 0x0f: return push(m, (uintptr_t)dwarf_u(c, 8));
	case 0x10: return push(m, (uintptr_t)dwarf_uleb(c));
	default: return push(m, (uintptr_t)dwarf_sleb(c)); /* 0x11, consts */
	}
}

/* bra (when the top entry, popped, is not 0) and skip: a 2-byte signed offset. */
static bool branch(struct machine *m, uint8_t op)
{
	int64_t off = (int16_t)dwarf_u(&m->c, 2);
	if (op == 0x28) {
		if (!m->n) return false;
		if (!m->st[--m->n]) return true;
	}
	if (off < -(int64_t)(m->c.at - m->start) || off > (int64_t)(m->c.end - m->c.at)) return false;
	m->c.at += (uintptr_t)off;
	return true;
}

static bool operation(struct machine *m, uint8_t op)
{
	uintptr_t w;
	if (op >= 0x30 && op <= 0x4f) return push(m, (uintptr_t)(op - 0x30)); /* lit0..31 */
	if (op >= 0x50 && op <= 0x6f) return push_reg(m, op - 0x50u, 0);    /* reg0..31 */
	if (op >= 0x70 && op <= 0x8f) return push_reg(m, op - 0x70u, dwarf_sleb(&m->c)); /* breg0..31 */
	if (op >= 0x08 && op <= 0x11) return constant(m, op);
	if ((op >= 0x12 && op <= 0x17)) return shuffle(m, op);
	if ((op >= 0x19 && op <= 0x27 && op != 0x23) || (op >= 0x29 && op <= 0x2e)) return arith(m, op);
	switch (op) {
	case 0x06: /* deref */
		return m->n && dwarf_stack_word(m->env, m->st[m->n - 1], &m->st[m->n - 1]);
	case 0x94: { /* deref_size */
		uint64_t size = dwarf_u(&m->c, 1);
		if (!m->n || size == 0 || size > sizeof w || !dwarf_stack_word(m->env, m->st[m->n - 1], &w)) return false;
		m->st[m->n - 1] = size == sizeof w ? w : w & (((uintptr_t)1 << (size * 8)) - 1);
		return true;
	}
	case 0x23: /* plus_uconst */
		if (!m->n) return false;
		m->st[m->n - 1] += (uintptr_t)dwarf_uleb(&m->c);
		return true;
	case 0x28: case 0x2f: return branch(m, op);
	case 0x90: return push_reg(m, dwarf_uleb(&m->c), 0); /* regx */
	case 0x92: {                                         /* bregx */
		uint64_t r = dwarf_uleb(&m->c);
		return push_reg(m, r, dwarf_sleb(&m->c));
	}
	case 0x96: return true; /* nop */
	default: return false;  /* addr (a link-time address), call_frame_cfa and the rest */
	}
}

bool dwarf_expr(const struct dwarf_env *env, uintptr_t at, uint32_t len, bool push_first, uintptr_t first,
		uintptr_t *out)
{
	struct machine m = {.env = env, .c = dwarf_cur(env->pk, at, at + len), .start = at, .n = 0};
	if (push_first) m.st[m.n++] = first;
	for (unsigned steps = 0; m.c.at < m.c.end; steps++) {
		uint8_t op = (uint8_t)dwarf_u(&m.c, 1);
		if (steps == EXPR_STEPS || m.c.bad || !operation(&m, op) || m.c.bad) return false;
	}
	if (m.c.at != m.c.end || !m.n) return false;
	*out = m.st[m.n - 1];
	return true;
}
