/*
 * dwarf.h — the byte encodings of DWARF unwind data (.eh_frame, .eh_frame_hdr): fixed
 * little-endian words, LEB128 numbers and the pointer encodings (DW_EH_PE_*), read
 * through a cursor that cannot leave its bounds or fault.
 *
 * Invariants:
 *  - A cursor reads only inside [at, end), through peek (peek.h); a read that would
 *    leave it, or a byte that cannot be read, marks the cursor bad and gives 0, and
 *    every later read of that cursor gives 0: callers check bad once, at the end.
 *  - Both targets are little-endian (x86_64, arm64).
 */
#ifndef RAMPART_DWARF_H
#define RAMPART_DWARF_H

#include "base/common.h"
#include "base/peek.h"

/* Pointer encodings (the low nibble the format, the next bits where it is relative to). */
#define DW_EH_PE_absptr 0x00
#define DW_EH_PE_uleb128 0x01
#define DW_EH_PE_udata2 0x02
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_udata8 0x04
#define DW_EH_PE_sleb128 0x09
#define DW_EH_PE_sdata2 0x0a
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_sdata8 0x0c
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30
#define DW_EH_PE_indirect 0x80
#define DW_EH_PE_omit 0xff

struct dwarf_cur {
	struct peek *pk;
	uintptr_t at, end;
	bool bad;
};

static inline struct dwarf_cur dwarf_cur(struct peek *pk, uintptr_t at, uintptr_t end)
{
	return (struct dwarf_cur){pk, at, end, end < at};
}

/* n bytes (1, 2, 4 or 8), unsigned. */
uint64_t dwarf_u(struct dwarf_cur *c, size_t n);
uint64_t dwarf_uleb(struct dwarf_cur *c);
int64_t dwarf_sleb(struct dwarf_cur *c);
/* A pointer in encoding enc; datarel: the base of DW_EH_PE_datarel (the .eh_frame_hdr's
 * start). Relative to the text or a function, aligned, or indirect: bad (no unwind
 * table rampart reads uses them). DW_EH_PE_omit: 0, nothing read. */
uintptr_t dwarf_ptr(struct dwarf_cur *c, uint8_t enc, uintptr_t datarel);
/* Skip n bytes. */
void dwarf_skip(struct dwarf_cur *c, uint64_t n);

#endif
