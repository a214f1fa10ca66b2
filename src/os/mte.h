/*
 * mte.h — the Memory Tagging Extension of arm64 (MTE): whether the CPU has it, the
 * process's tag-check mode (prctl), and the instructions that read and set the 4-bit
 * tag of a 16-byte granule. Chosen once at start-up (mte_start, front/init.c); the
 * answer lives in the read-only roots (roots.mte). Elsewhere than on arm64 every
 * helper compiles to nothing, and nothing calls them on the fast path: x86_64 builds
 * are what they were.
 *
 * Invariants:
 *  - A pointer's tag is its top byte; a tagged granule's tag is 0 to 15. rampart hands
 *    out pointers whose top byte is the tag (0 when tagging is off), and only ever
 *    maps slab memory PROT_MTE (guard.h, REGION_TAGGED).
 *  - Tags are set only through a pointer of rampart's own slot (mte_set_tags): setting
 *    a tag checks none.
 *  - Nothing here changes errno.
 */
#ifndef RAMPART_MTE_H
#define RAMPART_MTE_H

#include "base/common.h"
#include "base/option_table.h"

#if defined(__aarch64__)
#define RAMPART_MTE 1
#else
#define RAMPART_MTE 0
#endif

/* What start-up chose (roots.mte): no tagging, or tags checked synchronously (the
 * faulting instruction traps) or asynchronously (the fault is raised at the next
 * entry into the kernel). */
enum mte_state { MTE_NONE, MTE_SYNC, MTE_ASYNC };

/* The tag-check mode for the process: want (the option), unless the CPU or the kernel
 * has no MTE; a mode the program chose already is kept (and reported), never changed.
 * Enables tagged addresses in system calls too. Returns the mode in effect. */
enum mte_state mte_start(enum mte_option want);
/* "sync", "async" or "off". */
const char *mte_state_name(unsigned state);

#define MTE_GRANULE 16u
#define MTE_TAG_SHIFT 56u

/* The address without its tag (the top byte, which arm64 ignores in addressing). */
static inline uintptr_t mte_untag(uintptr_t p)
{
#if RAMPART_MTE
	return p & (((uintptr_t)1 << MTE_TAG_SHIFT) - 1);
#else
	return p;
#endif
}

/* The top byte of a pointer: its tag, or garbage for a forged one. */
static inline unsigned mte_top(uintptr_t p) { return (unsigned)(p >> MTE_TAG_SHIFT); }
static inline uintptr_t mte_with_tag(uintptr_t a, unsigned tag) { return mte_untag(a) | (uintptr_t)tag << MTE_TAG_SHIFT; }

#if RAMPART_MTE
/* The instructions are named for the assembler inside each statement (".arch", which
 * only widens what it accepts from there on): the rest of rampart is built for the
 * baseline arm64 and runs on CPUs without MTE, where none of this is reached. */
/* The tag of the granule at a (untagged or not). */
static inline unsigned mte_load_tag(uintptr_t a)
{
	uintptr_t r = a;
	__asm__ volatile(".arch armv8.5-a+memtag\n\tldg %0, [%1]" : "+r"(r) : "r"(a) : "memory");
	return mte_top(r) & 15;
}

/* The 8 bytes at a (aligned), read with tag checks suspended (PSTATE.TCO): for a word
 * of a slot whose tag another thread may change between a tag load and the read (a
 * free into a thread's batch retags its slot without the class lock). One load, single-
 * copy atomic, as an aligned ldr is. */
static inline uint64_t mte_load_unchecked(uintptr_t a)
{
	uint64_t v;
	__asm__ volatile(".arch armv8.5-a+memtag\n\tmsr tco, #1\n\tldr %0, [%1]\n\tmsr tco, #0"
			 : "=r"(v)
			 : "r"(mte_untag(a))
			 : "memory");
	return v;
}

/* Give the n bytes at a (granule-aligned, n a multiple of the granule) the tag `tag`. */
static inline void mte_set_tags(uintptr_t a, size_t n, unsigned tag)
{
	uintptr_t t = mte_with_tag(a, tag), end = t + n;
	for (; t + 2 * MTE_GRANULE <= end; t += 2 * MTE_GRANULE)
		__asm__ volatile(".arch armv8.5-a+memtag\n\tst2g %0, [%0]" : : "r"(t) : "memory");
	if (t < end) __asm__ volatile(".arch armv8.5-a+memtag\n\tstg %0, [%0]" : : "r"(t) : "memory");
}
#endif

#endif
