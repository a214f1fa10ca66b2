/*
 * secure_probe.c — installed set-user-ID root by test/systemwide/check.sh and run as
 * nobody, so that the loader runs it with AT_SECURE set. Says whether librampart is
 * mapped (/proc/self/maps) and whether the allocator answering is rampart's (its
 * rampart_guard_backend, looked up at run time: the program is not linked with it).
 * Also prints the guard backend: under AT_SECURE rampart ignores RAMPART_OPTIONS, so
 * guard=mprotect in the environment must not change it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

int main(void)
{
	char *p = malloc(100000); /* rampart starts here (and would read its options) */
	if (!p) return 1;
	memset(p, 1, 100000);
	free(p);

	int mapped = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f) return 1;
	char line[4096];
	while (fgets(line, sizeof line, f))
		if (strstr(line, "librampart")) mapped = 1;
	fclose(f);

	const char *(*backend)(void) = NULL;
	void *sym = dlsym(RTLD_DEFAULT, "rampart_guard_backend");
	memcpy(&backend, &sym, sizeof sym);
	printf("euid %d ruid %d at_secure %lu librampart %s allocator %s\n", (int)geteuid(), (int)getuid(),
	       getauxval(AT_SECURE), mapped ? "mapped" : "absent", backend ? "rampart" : "not rampart");
	if (backend) printf("guard backend %s\n", backend());
	return 0;
}
