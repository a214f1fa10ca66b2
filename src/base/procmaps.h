/*
 * procmaps.h — /proc/self/maps line by line, for the questions about the address space
 * (os.c) and the caller trace (modules.c); /proc/self/smaps mapping by mapping, for the
 * resident memory the statistics report (slab_stats.c).
 *
 * Invariants: no allocation and no C library call that could be interposed or wrapped
 * (the file is opened with the raw openat system call); nothing is read that the kernel
 * did not write; errno is the caller's to save (every system call here may set it).
 */
#ifndef RAMPART_PROCMAPS_H
#define RAMPART_PROCMAPS_H

#include "base/common.h"

struct maps_reader {
	int fd;
	size_t len, pos;
	char buf[2048];
};

struct maps_line {
	uintptr_t start, end, offset;
	bool r, x;
	const char *path; /* points into line[]; "" for anonymous mappings */
	char line[512];
};

/* Open the file; false when it cannot be opened. */
bool maps_open(struct maps_reader *m);
/* The next line of /proc/self/maps, parsed; false at the end. Long lines are cut. */
bool maps_next(struct maps_reader *m, struct maps_line *l);
void maps_close(struct maps_reader *m);
/* How many mappings (VMAs) the process has now: the lines of the file; -1 when it
 * cannot be read. */
long maps_count(void);

/* /proc/self/smaps: a mapping's range and its resident bytes, the kernel's Rss line
 * (pages in memory mapped there; the shared zero page, which a read of a page never
 * written maps, is not among them, as VmRSS does not count it). */
struct smaps_entry {
	uintptr_t start, end;
	size_t rss;
};
struct smaps_reader {
	struct maps_reader m;
	bool pending;     /* line holds the next mapping's first line, read already */
	char line[128];   /* a mapping's first line is cut here: only its range is read */
};
bool smaps_open(struct smaps_reader *r);
/* The next mapping; false at the end. */
bool smaps_next(struct smaps_reader *r, struct smaps_entry *e);
void smaps_close(struct smaps_reader *r);

#endif
