/* dwarf.c — DWARF's byte encodings, read through a bounded cursor (dwarf.h). */
#include "base/dwarf.h"

uint64_t dwarf_u(struct dwarf_cur *c, size_t n)
{
	uint64_t v = 0;
	if (c->bad || n > c->end - c->at || !peek_bytes(c->pk, c->at, &v, n)) {
		c->bad = true;
		return 0;
	}
	c->at += n;
	return v; /* little-endian: the n bytes are v's low ones */
}

void dwarf_skip(struct dwarf_cur *c, uint64_t n)
{
	if (c->bad || n > c->end - c->at) c->bad = true;
	else c->at += n;
}

/* A LEB128 number: 7 bits a byte, low first; at most 10 bytes make 64 bits. */
static uint64_t leb(struct dwarf_cur *c, bool is_signed)
{
	uint64_t v = 0;
	unsigned shift = 0;
	for (unsigned i = 0; i < 10; i++) {
		uint64_t b = dwarf_u(c, 1);
		if (shift < 64) v |= (b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (is_signed && shift < 64 && (b & 0x40)) v |= ~(uint64_t)0 << shift;
			return v;
		}
	}
	c->bad = true;
	return 0;
}

uint64_t dwarf_uleb(struct dwarf_cur *c) { return leb(c, false); }
int64_t dwarf_sleb(struct dwarf_cur *c) { return (int64_t)leb(c, true); }

uintptr_t dwarf_ptr(struct dwarf_cur *c, uint8_t enc, uintptr_t datarel)
{
	if (enc == DW_EH_PE_omit) return 0;
	uintptr_t field = c->at, v;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: v = (uintptr_t)dwarf_u(c, 8); break;
	case DW_EH_PE_uleb128: v = (uintptr_t)dwarf_uleb(c); break;
	case DW_EH_PE_udata2: v = (uintptr_t)dwarf_u(c, 2); break;
	case DW_EH_PE_udata4: v = (uintptr_t)dwarf_u(c, 4); break;
	case DW_EH_PE_udata8: v = (uintptr_t)dwarf_u(c, 8); break;
	case DW_EH_PE_sleb128: v = (uintptr_t)dwarf_sleb(c); break;
	case DW_EH_PE_sdata2: v = (uintptr_t)(int64_t)(int16_t)dwarf_u(c, 2); break;
	case DW_EH_PE_sdata4: v = (uintptr_t)(int64_t)(int32_t)dwarf_u(c, 4); break;
	case DW_EH_PE_sdata8: v = (uintptr_t)dwarf_u(c, 8); break;
	default: c->bad = true; return 0;
	}
	switch (enc & 0x70) {
	case 0: break;
	case DW_EH_PE_pcrel: v += field; break;
	case DW_EH_PE_datarel: v += datarel; break;
	default: c->bad = true; return 0;
	}
	if (enc & DW_EH_PE_indirect) c->bad = true;
	return c->bad ? 0 : v;
}
