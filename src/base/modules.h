/*
 * modules.h — the program and the shared objects loaded into the process, as the caller
 * trace needs them (callers.c): where each one's code lies, its name, its load bias,
 * its unwind tables and its dynamic symbol table.
 *
 * Found from /proc/self/maps (kernel data, read with raw system calls into fixed
 * storage) and from each object's ELF headers in its own read-only mapping, never from
 * the dynamic loader's list: that list lives in the heap a bug may have damaged, and
 * dl_iterate_phdr takes the loader's lock, which a thread inside dlopen holds.
 *
 * Invariants:
 *  - Nothing allocates or takes a lock; every byte of an object is read through peek
 *    (peek.h), and only inside the mappings /proc/self/maps listed for that object.
 *  - A module is a run of consecutive mappings of one file that includes executable
 *    code; its ELF header is its mapping at file offset 0 (the vDSO's too).
 *  - An address a module's headers give is used only if it lies inside that module.
 */
#ifndef RAMPART_MODULES_H
#define RAMPART_MODULES_H

#include "base/common.h"
#include "base/peek.h"
#include "base/procmaps.h"

/* A large program loads a few hundred objects; a frame in one past these ends the list.
 * (Static storage that every process has, untouched until a report: kept small, names
 * read only for the modules a report prints.) */
#define MODULES_MAX 256
#define MODULE_RANGES 512 /* executable mappings */
#define MODULE_NAME 160

struct module {
	uintptr_t lo, hi; /* from its first mapping's start to its last one's end */
	uintptr_t hdr;    /* its mapping at file offset 0 (the ELF header); 0: none */
	uintptr_t bias;   /* the file's addresses + bias = where they are now (ET_EXEC: 0) */
	/* From the ELF headers, read at the first question (modules_elf). */
	bool elf_read, elf_ok;
	uintptr_t eh_hdr;                  /* .eh_frame_hdr; 0: none */
	uintptr_t eh_frame, eh_frame_end;  /* .eh_frame found without a header; 0: none */
	uintptr_t dyn, dyn_end;            /* the dynamic section; 0: none */
};

struct exec_range {
	uintptr_t start, end;
	unsigned module;
};

struct modules {
	struct module m[MODULES_MAX];
	unsigned n;
	struct exec_range r[MODULE_RANGES];
	unsigned nr;
	int own, program; /* the module holding rampart's code, the program's; -1: none */
	uintptr_t stack_lo, stack_hi; /* the mapping that holds the stack pointer given */
	struct maps_reader reader;
	struct maps_line line;
};

/* An address as /proc/self/maps gives it: on arm64 the top byte of a pointer may carry
 * a memory tag (a stack the program took from a tagged block: its stack pointer is
 * tagged), which the hardware ignores and the file never shows. */
static inline uintptr_t address_untagged(uintptr_t a)
{
#if defined(__aarch64__)
	return a & (((uintptr_t)1 << 56) - 1);
#else
	return a;
#endif
}

/* Read /proc/self/maps: the modules, the program's (AT_PHDR), the one holding own (an
 * address of rampart's code), and the stack mapping holding sp (untagged: the bounds
 * are too). False when the file cannot be read or sp lies in no mapping. */
bool modules_read(struct modules *ms, uintptr_t sp, uintptr_t own);
/* The paths of the modules which[0..n) (the vDSO's: [vdso]), cut at MODULE_NAME - 1
 * bytes, from /proc/self/maps read again: names[k] for module which[k], "?" where the
 * file no longer shows it. */
void modules_names(struct modules *ms, const unsigned *which, size_t n, char (*names)[MODULE_NAME]);
/* The module whose executable mapping holds pc; -1: none. */
int modules_find(const struct modules *ms, uintptr_t pc);
/* Module i's ELF headers read (once); false when they cannot be. */
bool modules_elf(struct modules *ms, unsigned i, struct peek *pk);
/* The mapping that holds addr (untagged), read again from /proc/self/maps (a signal
 * handler's frame may lie on another stack than the code it interrupted). */
bool modules_mapping_of(struct modules *ms, uintptr_t addr, uintptr_t *lo, uintptr_t *hi);

#endif
