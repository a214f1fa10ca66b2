/*
 * cxx_own.c — whether the process calls rampart's own C++ operators (cxx.h).
 *
 * Each operator's address is taken here by its public name, in a file that does not
 * define it: the compiler must ask the GOT, which the dynamic loader filled with the
 * definition a call by that name reaches (the program's own, where it replaced the
 * operator), and compares it with rampart's, named by a hidden alias. The references are
 * weak, so that this file does not pull the operators into a static C program: there
 * both are null, and equal. Under -fno-semantic-interposition with link-time
 * optimisation the compiler could bind the name to rampart's definition and see no
 * replacement; the program's own calls still reach its own (then dealloc_kind=off is
 * the way out).
 */
#include "front/cxx.h"

#define CXX_WEAK(ret, name, params) extern ret name params __attribute__((weak)); extern ret own##name params __attribute__((weak));
RAMPART_CXX_OPERATORS(CXX_WEAK)
#undef CXX_WEAK

bool cxx_operators_own(void)
{
#define CXX_SAME(ret, name, params) \
	if ((uintptr_t)&name != (uintptr_t)&own##name) return false;
	RAMPART_CXX_OPERATORS(CXX_SAME)
#undef CXX_SAME
	return true;
}
