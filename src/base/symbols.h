/*
 * symbols.h — the name of the function an address lies in, from its module's dynamic
 * symbol table (.dynsym: what the module exports, and what a program linked with
 * -rdynamic exports). A static function, or a program's own function it does not
 * export, has no name there: the trace then prints the address alone.
 *
 * Invariants: every byte read through peek, inside the module's mappings; nothing
 * allocates; a name is cut at SYMBOL_NAME - 1 bytes; a symbol is named only where the
 * address lies inside it (its start, its size), never the nearest one before it.
 */
#ifndef RAMPART_SYMBOLS_H
#define RAMPART_SYMBOLS_H

#include "base/common.h"
#include "base/modules.h"
#include "base/peek.h"

#define SYMBOL_NAME 128

/* The function of module m (its headers read: modules_elf) that holds pc: its name in
 * name, and *off, pc's distance from its start. False: none. */
bool symbol_of(const struct module *m, struct peek *pk, uintptr_t pc, char name[SYMBOL_NAME], uintptr_t *off);

#endif
