/* commit_charge.c — rampart never says yes where the kernel's overcommit accounting
 * would say no, and charges what it opens as glibc's memory is charged (issue 34,
 * item 2).
 *
 * Under overcommit modes 0 (heuristic) and 2 (strict) the kernel refuses a writable
 * private mapping bigger than it could ever back. Every allocation function asked for
 * such a size (64 GiB to 16 TiB, the ones above RAM + swap) returns NULL with ENOMEM
 * (posix_memalign: ENOMEM), and a realloc that would have to move leaves the block as
 * it was. A 4 GiB block moves the process's charge by about 4 GiB while it lives, and
 * freeing it gives the charge back; small blocks are charged as they are opened, as
 * glibc's heap is. Mode 1 (always overcommit) says yes to everything: skipped.
 *
 * The charge is read as the process's own: the mappings /proc/self/smaps flags "ac"
 * (VM_ACCOUNT, what the kernel counts into Committed_AS for this process), not the
 * machine-wide Committed_AS, which every other process on a busy machine moves too. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rampart.h"
#include "../harness.h"

/* musl's headers do not declare it; rampart defines it. */
void *pvalloc(size_t size);

/* A field of /proc/meminfo, in bytes; -1 when missing. */
static long long meminfo(const char *field)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f) return -1;
	char line[256];
	long long v = -1;
	size_t n = strlen(field);
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, field, n) && line[n] == ':') {
			v = atoll(line + n + 1) * 1024;
			break;
		}
	fclose(f);
	return v;
}

/* The bytes this process has charged to the commit limit: the sizes of its mappings
 * whose VmFlags hold "ac". -1 when smaps is unreadable. */
static long long own_charge(void)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f) return -1;
	char line[512];
	long long total = 0, size = 0;
	while (fgets(line, sizeof line, f)) {
		long long kb;
		if (sscanf(line, "Size: %lld kB", &kb) == 1) size = kb * 1024;
		else if (!strncmp(line, "VmFlags:", 8) && strstr(line, " ac"))
			total += size;
	}
	fclose(f);
	return total;
}

static int failures;

static void expect_refused(const char *call, const void *p, int err)
{
	if (p || err != ENOMEM) {
		printf("FAIL %s: %p, errno %d (want NULL, ENOMEM)\n", call, p, err);
		failures++;
	}
}

static void absurd(size_t size)
{
	char call[96];
	void *p;
	errno = 0;
	p = malloc(size);
	snprintf(call, sizeof call, "malloc(%zu GiB)", size >> 30);
	expect_refused(call, p, errno);
	free(p);

	errno = 0;
	p = calloc(size / 4096, 4096);
	snprintf(call, sizeof call, "calloc(%zu GiB)", size >> 30);
	expect_refused(call, p, errno);
	free(p);

	errno = 0;
	p = aligned_alloc((size_t)1 << 30, size);
	snprintf(call, sizeof call, "aligned_alloc(1 GiB, %zu GiB)", size >> 30);
	expect_refused(call, p, errno);
	free(p);

	p = NULL;
	int err = posix_memalign(&p, (size_t)1 << 30, size);
	snprintf(call, sizeof call, "posix_memalign(1 GiB, %zu GiB)", size >> 30);
	expect_refused(call, p, err);
	free(p);

	errno = 0;
	p = memalign(4096, size);
	snprintf(call, sizeof call, "memalign(4096, %zu GiB)", size >> 30);
	expect_refused(call, p, errno);
	free(p);

	errno = 0;
	p = valloc(size);
	snprintf(call, sizeof call, "valloc(%zu GiB)", size >> 30);
	expect_refused(call, p, errno);
	free(p);

	errno = 0;
	p = pvalloc(size);
	snprintf(call, sizeof call, "pvalloc(%zu GiB)", size >> 30);
	expect_refused(call, p, errno);
	free(p);

	/* realloc of a large and of a small block: NULL, and the block is untouched. */
	size_t from[] = {100, 1 << 20};
	for (int i = 0; i < 2; i++) {
		unsigned char *b = malloc(from[i]);
		if (!b) {
			printf("FAIL malloc(%zu)\n", from[i]);
			failures++;
			return;
		}
		memset(b, 0x3c, from[i]);
		errno = 0;
		p = realloc(b, size);
		snprintf(call, sizeof call, "realloc(%zu bytes, %zu GiB)", from[i], size >> 30);
		expect_refused(call, p, errno);
		if (p) {
			free(p);
			continue;
		}
		for (size_t j = 0; j < from[i]; j++)
			if (b[j] != 0x3c) {
				printf("FAIL %s: the block changed\n", call);
				failures++;
				break;
			}
		free(b);
	}
}

/* The charge moves with a 4 GiB block (the largest of three tries counts). */
static bool charge_follows(void)
{
	const long long want = 4LL << 30, slack = 512LL << 20;
	long long best_up = 0, best_down = 0;
	for (int attempt = 0; attempt < 3 && (best_up < want - slack || best_down < want - slack); attempt++) {
		long long before = own_charge();
		char *p = malloc((size_t)want);
		if (!p) {
			printf("FAIL malloc(4 GiB) refused\n");
			return false;
		}
		p[0] = p[want - 1] = 1;
		long long during = own_charge();
		free(p);
		long long after = own_charge();
		if (during - before > best_up) best_up = during - before;
		if (during - after > best_down) best_down = during - after;
	}
	printf("a 4 GiB block: charge +%lld MiB while it lives, -%lld MiB at its free\n", best_up >> 20,
	       best_down >> 20);
	if (best_up < want - slack || best_down < want - slack) {
		printf("FAIL: the 4 GiB block is not charged like glibc's (want about 4096 MiB both ways)\n");
		return false;
	}
	return true;
}

/* Small blocks are charged too, as glibc's heap is: 512 MiB of 48-byte blocks move the
 * charge by at least 400 MiB (slabs, guard slabs and metadata may add to it); the
 * largest of three tries counts. */
static bool small_charged(void)
{
	enum { N = 8 << 20, SIZE = 48 };
	const long long want = 400LL << 20;
	char **v = malloc(N * sizeof *v);
	if (!v) return false;
	long long best = 0;
	for (int attempt = 0; attempt < 3 && best < want; attempt++) {
		long long before = own_charge();
		for (long i = 0; i < N; i++) {
			v[i] = malloc(SIZE);
			if (!v[i]) {
				printf("FAIL malloc(%d) after %ld blocks\n", SIZE, i);
				return false;
			}
			v[i][0] = 1;
		}
		long long during = own_charge();
		for (long i = 0; i < N; i++) free(v[i]);
		if (during - before > best) best = during - before;
	}
	free(v);
	printf("%d blocks of %d bytes (%d MiB of slots): charge +%lld MiB\n", N, SIZE, (N >> 20) * 64,
	       best >> 20);
	if (best < want) {
		printf("FAIL: small blocks are not charged like glibc's heap\n");
		return false;
	}
	return true;
}

int main(void)
{
	free(malloc(1));
	printf("guard backend: %s\n", rampart_guard_backend());
	FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
	int mode = -1;
	if (!f || fscanf(f, "%d", &mode) != 1) mode = -1;
	if (f) fclose(f);
	if (mode != 0 && mode != 2)
		test_skip("vm.overcommit_memory is %d; the kernel refuses nothing to compare with", mode);
	long long ram = meminfo("MemTotal"), swap = meminfo("SwapTotal");
	if (ram < 0 || swap < 0) test_skip("/proc/meminfo unreadable");
	int tried = 0;
	for (size_t size = (size_t)64 << 30; size <= (size_t)16 << 40; size *= 4) {
		if ((long long)size <= ram + swap) continue;
		absurd(size);
		tried++;
	}
	printf("%d absurd sizes tried (RAM + swap: %lld GiB), overcommit mode %d\n", tried, (ram + swap) >> 30, mode);
	if (!charge_follows()) failures++;
	if (!small_charged()) failures++;
	printf("%s\n", failures ? "FAIL" : "ok");
	return failures ? 1 : 0;
}
