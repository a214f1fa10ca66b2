/* procmaps.c — reading /proc/self/maps (procmaps.h). */
#define _GNU_SOURCE
#include "base/procmaps.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

bool maps_open(struct maps_reader *m)
{
	m->fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
	m->len = m->pos = 0;
	return m->fd >= 0;
}

static uintptr_t parse_hex(const char **p)
{
	uintptr_t v = 0;
	for (;; (*p)++) {
		char c = **p;
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
		if (d == 16) return v;
		v = v << 4 | d;
	}
}

bool maps_next(struct maps_reader *m, struct maps_line *l)
{
	size_t n = 0;
	for (;;) {
		if (m->pos == m->len) {
			ssize_t r = read(m->fd, m->buf, sizeof m->buf);
			if (r <= 0) {
				if (!n) return false;
				break;
			}
			m->len = (size_t)r;
			m->pos = 0;
		}
		char c = m->buf[m->pos++];
		if (c == '\n') break;
		if (n < sizeof l->line - 1) l->line[n++] = c;
	}
	l->line[n] = 0;
	/* start-end perms offset dev inode path */
	const char *p = l->line;
	l->start = parse_hex(&p);
	if (*p == '-') p++;
	l->end = parse_hex(&p);
	while (*p == ' ') p++;
	l->r = p[0] == 'r';
	l->x = p[0] && p[1] && p[2] == 'x';
	for (int field = 0; field < 2 && *p; field++) { /* perms, then offset */
		while (*p && *p != ' ') p++;
		while (*p == ' ') p++;
		if (field == 0) {
			l->offset = parse_hex(&p);
			p--; /* let the loop skip the rest of the field */
		}
	}
	for (int field = 0; field < 2 && *p; field++) { /* dev, inode */
		while (*p && *p != ' ') p++;
		while (*p == ' ') p++;
	}
	l->path = p;
	return true;
}

void maps_close(struct maps_reader *m) { (void)close(m->fd); }

long maps_count(void)
{
	struct maps_reader m;
	if (!maps_open(&m)) return -1;
	long lines = 0;
	for (;;) {
		ssize_t r = read(m.fd, m.buf, sizeof m.buf);
		if (r <= 0) break;
		for (ssize_t i = 0; i < r; i++) lines += m.buf[i] == '\n';
	}
	maps_close(&m);
	return lines;
}
