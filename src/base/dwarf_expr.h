/*
 * dwarf_expr.h — DWARF expressions (DWARF 5, section 2.5) as unwind rules use them: a
 * stack machine over a frame's registers and the words of its stack, which says where
 * a frame's caller's registers are (a signal frame's rules, a realigned stack's, a PLT
 * entry's).
 *
 * Invariants:
 *  - The expression's bytes are read through a dwarf cursor (dwarf.h), the stack's words
 *    through peek (peek.h) and only inside the bounds given: nothing read can fault.
 *  - An operation on an unknown register, one that would overflow or underflow the
 *    machine's stack, a division by zero, a branch out of the expression, more than
 *    EXPR_STEPS operations, or an operation not listed in dwarf_expr.c: no value.
 */
#ifndef RAMPART_DWARF_EXPR_H
#define RAMPART_DWARF_EXPR_H

#include "base/common.h"
#include "base/peek.h"

/* What an expression may read: registers (value r[i] where bit i of known is set, i <
 * nregs) and the stack's words in [lo, hi). */
struct dwarf_env {
	struct peek *pk;
	const uintptr_t *r;
	uint64_t known;
	unsigned nregs;
	uintptr_t lo, hi;
};

/* The value of the expression at [at, at + len) in *out, first pushed first where push
 * (a register rule's expression starts from the frame's CFA); false where it has none. */
bool dwarf_expr(const struct dwarf_env *env, uintptr_t at, uint32_t len, bool push, uintptr_t first,
		uintptr_t *out);
/* The word at a, if [a, a + 8) lies in [env->lo, env->hi) and can be read. */
bool dwarf_stack_word(const struct dwarf_env *env, uintptr_t a, uintptr_t *v);

#endif
