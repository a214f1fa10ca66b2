/*
 * mte.c — choosing the tag-check mode at start-up (mte.h).
 */
#define _GNU_SOURCE
#include "os/mte.h"

#if RAMPART_MTE
#include <errno.h>
#include <sys/auxv.h>
#include <sys/prctl.h>

/* Older headers lack these (Linux 5.10 uapi). */
#ifndef HWCAP2_MTE
#define HWCAP2_MTE (1ul << 18)
#endif
#ifndef PR_SET_TAGGED_ADDR_CTRL
#define PR_SET_TAGGED_ADDR_CTRL 55
#define PR_GET_TAGGED_ADDR_CTRL 56
#define PR_TAGGED_ADDR_ENABLE (1ul << 0)
#endif
#ifndef PR_MTE_TCF_SHIFT
#define PR_MTE_TCF_SHIFT 1
#define PR_MTE_TCF_SYNC (1ul << PR_MTE_TCF_SHIFT)
#define PR_MTE_TCF_ASYNC (2ul << PR_MTE_TCF_SHIFT)
#define PR_MTE_TCF_MASK (3ul << PR_MTE_TCF_SHIFT)
#endif

enum mte_state mte_start(enum mte_option want)
{
	if (want == MTE_OPTION_OFF || !(getauxval(AT_HWCAP2) & HWCAP2_MTE)) return MTE_NONE;
	int saved = errno;
	enum mte_state got = MTE_NONE;
	long ctrl = prctl(PR_GET_TAGGED_ADDR_CTRL, 0, 0, 0, 0);
	if (ctrl >= 0) {
		/* A mode the program set (sync wins where both are: the kernel's choice per
		 * CPU) is its decision: tag the memory, check as it asked. */
		unsigned long tcf = (unsigned long)ctrl & PR_MTE_TCF_MASK;
		if (!tcf) tcf = want == MTE_OPTION_ASYNC ? PR_MTE_TCF_ASYNC : PR_MTE_TCF_SYNC;
		unsigned long set = ((unsigned long)ctrl & ~PR_MTE_TCF_MASK) | PR_TAGGED_ADDR_ENABLE | tcf;
		if (prctl(PR_SET_TAGGED_ADDR_CTRL, set, 0, 0, 0) == 0) got = tcf & PR_MTE_TCF_SYNC ? MTE_SYNC : MTE_ASYNC;
	}
	errno = saved;
	return got;
}
#else
enum mte_state mte_start(enum mte_option want)
{
	(void)want;
	return MTE_NONE;
}
#endif

const char *mte_state_name(unsigned state)
{
	return state == MTE_SYNC ? "sync" : state == MTE_ASYNC ? "async" : "off";
}
