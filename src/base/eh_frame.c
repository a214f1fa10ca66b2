/* eh_frame.c — the unwind entry that covers an address (eh_frame.h). The format: the
 * Linux Standard Base's "Exception Frames" (.eh_frame, .eh_frame_hdr). */
#include "base/eh_frame.h"

#include "base/dwarf.h"

/* A record's body and the record after it, for the record whose length word is at
 * at. False at the terminator (length 0) or where the record leaves [at, end). */
static bool record(struct peek *pk, uintptr_t at, uintptr_t end, uintptr_t *body, uintptr_t *next)
{
	struct dwarf_cur c = dwarf_cur(pk, at, end);
	uint64_t len = dwarf_u(&c, 4);
	if (len == 0xffffffffu) len = dwarf_u(&c, 8);
	if (c.bad || len < 4 || len > c.end - c.at) return false;
	*body = c.at;
	*next = c.at + len;
	return true;
}

/* The CIE at cie: what every FDE that names it shares. *enc: the encoding of its FDEs'
 * addresses; *z: its FDEs carry an augmentation length. */
static bool parse_cie(struct peek *pk, uintptr_t cie, struct fde *f, uint8_t *enc, bool *z)
{
	uintptr_t body, next;
	if (!record(pk, cie, f->hi, &body, &next)) return false;
	struct dwarf_cur c = dwarf_cur(pk, body, next);
	if (dwarf_u(&c, 4) != 0) return false; /* an FDE, not a CIE */
	uint64_t version = dwarf_u(&c, 1);
	if (version != 1 && version != 3) return false;
	char aug[8];
	size_t n = 0;
	for (char ch; (ch = (char)dwarf_u(&c, 1)) != 0 && !c.bad;) {
		if (n == sizeof aug - 1) return false;
		aug[n++] = ch;
	}
	aug[n] = 0;
	f->code_align = dwarf_uleb(&c);
	f->data_align = dwarf_sleb(&c);
	f->ra = (unsigned)(version == 1 ? dwarf_u(&c, 1) : dwarf_uleb(&c));
	f->signal = false;
	*enc = DW_EH_PE_absptr;
	*z = aug[0] == 'z';
	if (*z) {
		uint64_t len = dwarf_uleb(&c);
		if (c.bad || len > c.end - c.at) return false;
		uintptr_t data_end = c.at + len;
		for (size_t i = 1; aug[i] && !c.bad; i++) {
			switch (aug[i]) {
			case 'R': *enc = (uint8_t)dwarf_u(&c, 1); break;
			case 'L': dwarf_u(&c, 1); break; /* the LSDA's encoding */
			case 'P': {                       /* the personality routine: skipped */
				uint8_t p = (uint8_t)dwarf_u(&c, 1);
				dwarf_ptr(&c, p & 0x0f, 0);
				break;
			}
			case 'S': f->signal = true; break;
			case 'B': case 'G': break; /* arm64: branch protection, memory-tagged frames */
			default: return false;
			}
		}
		if (c.bad) return false;
		c.at = data_end;
	} else if (n) {
		return false; /* the old "eh" augmentation and others: not written any more */
	}
	f->cie_instr = c.at;
	f->cie_end = next;
	return !c.bad;
}

/* The FDE at fde, with its CIE. */
static bool parse_fde(struct peek *pk, uintptr_t fde, struct fde *f)
{
	uintptr_t body, next;
	if (!record(pk, fde, f->hi, &body, &next)) return false;
	struct dwarf_cur c = dwarf_cur(pk, body, next);
	uint64_t back = dwarf_u(&c, 4); /* from this word back to its CIE */
	uint8_t enc;
	bool z;
	if (c.bad || back == 0 || back > body - f->lo || !parse_cie(pk, body - back, f, &enc, &z)) return false;
	f->pc_begin = dwarf_ptr(&c, enc, 0);
	f->pc_end = f->pc_begin + dwarf_ptr(&c, enc & 0x0f, 0);
	if (z) dwarf_skip(&c, dwarf_uleb(&c));
	f->instr = c.at;
	f->end = next;
	return !c.bad && f->pc_end >= f->pc_begin;
}

/* A walk through the records of [at, end) for the FDE covering pc. The encoding of
 * the last CIE met is kept: a table's FDEs share a few CIEs. */
static bool walk(struct peek *pk, uintptr_t at, uintptr_t end, uintptr_t pc, struct fde *f)
{
	uintptr_t body, next, cie = 0;
	uint8_t enc = DW_EH_PE_absptr;
	bool z;
	for (; at < end && record(pk, at, end, &body, &next); at = next) {
		struct dwarf_cur c = dwarf_cur(pk, body, next);
		uint64_t back = dwarf_u(&c, 4);
		if (c.bad || back == 0 || back > body - f->lo) continue; /* a CIE */
		if (body - back != cie) {
			if (!parse_cie(pk, body - back, f, &enc, &z)) continue;
			cie = body - back;
		}
		uintptr_t begin = dwarf_ptr(&c, enc, 0), range = dwarf_ptr(&c, enc & 0x0f, 0);
		if (!c.bad && pc >= begin && pc - begin < range) return parse_fde(pk, at, f);
	}
	return false;
}

/* .eh_frame_hdr: version 1, the encodings of .eh_frame's address, of the count and of
 * the table, then the table: (start of a function, its FDE) pairs sorted by start,
 * relative to the header. The linkers write the table as 4-byte signed offsets; any
 * other form is walked instead. */
static bool via_header(const struct module *m, struct peek *pk, uintptr_t pc, struct fde *f)
{
	struct dwarf_cur c = dwarf_cur(pk, m->eh_hdr, m->hi);
	uint64_t version = dwarf_u(&c, 1);
	uint8_t ptr_enc = (uint8_t)dwarf_u(&c, 1), count_enc = (uint8_t)dwarf_u(&c, 1),
		table_enc = (uint8_t)dwarf_u(&c, 1);
	uintptr_t eh_frame = dwarf_ptr(&c, ptr_enc, m->eh_hdr);
	if (c.bad || version != 1) return false;
	if (count_enc == DW_EH_PE_omit || table_enc != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return eh_frame >= m->lo && walk(pk, eh_frame, m->hi, pc, f);
	uint64_t count = dwarf_ptr(&c, count_enc, m->eh_hdr);
	uintptr_t table = c.at;
	if (c.bad || count == 0 || count > (m->hi - table) / 8) return false;
	size_t lo = 0, hi = (size_t)count; /* the answer is in [lo, hi) */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		struct dwarf_cur e = dwarf_cur(pk, table + mid * 8, table + mid * 8 + 4);
		uintptr_t start = dwarf_ptr(&e, table_enc, m->eh_hdr);
		if (e.bad) return false;
		if (start <= pc) lo = mid;
		else hi = mid;
	}
	struct dwarf_cur e = dwarf_cur(pk, table + lo * 8, table + lo * 8 + 8);
	uintptr_t start = dwarf_ptr(&e, table_enc, m->eh_hdr), fde = dwarf_ptr(&e, table_enc, m->eh_hdr);
	return !e.bad && start <= pc && fde >= m->lo && parse_fde(pk, fde, f) && pc >= f->pc_begin &&
	       pc < f->pc_end;
}

bool eh_frame_find(const struct module *m, struct peek *pk, uintptr_t pc, struct fde *f)
{
	f->lo = m->lo;
	f->hi = m->hi;
	if (m->eh_hdr) return via_header(m, pk, pc, f);
	if (!m->eh_frame) return false;
	f->lo = m->eh_frame;
	f->hi = m->eh_frame_end;
	return walk(pk, m->eh_frame, m->eh_frame_end, pc, f);
}
