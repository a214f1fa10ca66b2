/*
 * mte_keep_mode.c — rampart keeps a tag-check mode the program chose before its first
 * allocation (issue 38: "never overriding a mode the program has already chosen").
 *
 * The program's choice is glibc's tunable, the one way a program sets its mode before any
 * allocation (rampart starts at the first one, which a static program's libc start-up
 * makes before main): GLIBC_TUNABLES=glibc.mem.tagging=1 makes glibc's start-up ask for
 * asynchronous checks, =3 for synchronous ones. check-arm64 runs it both ways under
 * qemu-aarch64 -cpu max, with MTE_EXPECT naming the mode chosen, and asserts that
 * rampart reports that mode, that the thread's mode is still that one with tagged
 * addresses enabled, and that rampart's block carries a tag. Without MTE (no
 * HWCAP2_MTE) it exits 77.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>

#include "rampart.h"

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

int main(void)
{
	if (!(getauxval(AT_HWCAP2) & HWCAP2_MTE)) {
		printf("SKIP: this CPU has no MTE\n");
		return 77;
	}
	const char *want = getenv("MTE_EXPECT");
	if (!want || (strcmp(want, "sync") && strcmp(want, "async"))) {
		printf("FAIL: MTE_EXPECT=sync or async: the mode glibc.mem.tagging chose\n");
		return 1;
	}
	unsigned long wanted = !strcmp(want, "sync") ? PR_MTE_TCF_SYNC : PR_MTE_TCF_ASYNC;
	unsigned char *p = malloc(100);
	/* Tagged by rampart: a non-zero tag in bits 56-59 (glibc's malloc is not in use). */
	unsigned tag = (unsigned)((uintptr_t)p >> 56) & 15;
	free(p);
	long ctrl = prctl(PR_GET_TAGGED_ADDR_CTRL, 0, 0, 0, 0);
	unsigned long tcf = ctrl < 0 ? 0 : (unsigned long)ctrl & PR_MTE_TCF_MASK;
	int ok = !strcmp(rampart_memory_tagging(), want) && tcf == wanted && ctrl >= 0 &&
		 (ctrl & PR_TAGGED_ADDR_ENABLE) && tag;
	printf("%s: the program chose %s; rampart reports %s, its block's tag is %u; the thread's mode is %s, "
	       "tagged addresses %s\n",
	       ok ? "ok" : "FAIL", want, rampart_memory_tagging(), tag,
	       tcf == PR_MTE_TCF_SYNC ? "sync" : tcf == PR_MTE_TCF_ASYNC ? "async" : tcf ? "sync+async" : "none",
	       ctrl >= 0 && (ctrl & PR_TAGGED_ADDR_ENABLE) ? "enabled" : "disabled");
	return ok ? 0 : 1;
}
