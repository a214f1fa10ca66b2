/*
 * eh_frame.h — finding the unwind rules of an address: the frame description entry
 * (FDE) that covers it in its module's .eh_frame, and that entry's common information
 * entry (CIE), as the compilers write them for C++ exceptions (and by default for C on
 * x86_64 and arm64: -fasynchronous-unwind-tables).
 *
 * Invariants:
 *  - Every byte is read through a dwarf cursor (dwarf.h) bounded by the module's
 *    mappings, or by the .eh_frame section where its extent is known: nothing read can
 *    fault, and a damaged or unusual table gives "not found", never a wrong range.
 *  - A found entry covers pc: pc_begin <= pc < pc_end.
 */
#ifndef RAMPART_EH_FRAME_H
#define RAMPART_EH_FRAME_H

#include "base/common.h"
#include "base/modules.h"
#include "base/peek.h"

struct fde {
	uintptr_t pc_begin, pc_end;
	uintptr_t cie_instr, cie_end; /* the CIE's initial instructions */
	uintptr_t instr, end;         /* the FDE's own instructions */
	uintptr_t lo, hi;             /* the bounds of the table they lie in */
	uint64_t code_align;
	int64_t data_align;
	unsigned ra;  /* the column of the return address */
	bool signal;  /* a signal trampoline ('S'): its caller's pc is the interrupted instruction */
};

/* The entry of module m covering pc: through .eh_frame_hdr's sorted table where there
 * is one, else by a walk through .eh_frame (a static program). */
bool eh_frame_find(const struct module *m, struct peek *pk, uintptr_t pc, struct fde *f);

#endif
