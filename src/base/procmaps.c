/* procmaps.c — reading /proc/self/maps and /proc/self/smaps (procmaps.h). */
#define _GNU_SOURCE
#include "base/procmaps.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool open_file(struct maps_reader *m, const char *path)
{
	m->fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	m->len = m->pos = 0;
	return m->fd >= 0;
}

bool maps_open(struct maps_reader *m) { return open_file(m, "/proc/self/maps"); }

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

/* The next line into line (cap bytes, cut there and terminated); false at the end. */
static bool next_line(struct maps_reader *m, char *line, size_t cap)
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
		if (n < cap - 1) line[n++] = c;
	}
	line[n] = 0;
	return true;
}

bool maps_next(struct maps_reader *m, struct maps_line *l)
{
	if (!next_line(m, l->line, sizeof l->line)) return false;
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

bool smaps_open(struct smaps_reader *r)
{
	r->pending = false;
	return open_file(&r->m, "/proc/self/smaps");
}

/* A mapping's first line starts with its range in lowercase hexadecimal; every line of
 * figures after it with a capitalised name ("Rss:", "VmFlags:"). */
static bool mapping_line(const char *line)
{
	return (line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f');
}

bool smaps_next(struct smaps_reader *r, struct smaps_entry *e)
{
	while (!r->pending) {
		if (!next_line(&r->m, r->line, sizeof r->line)) return false;
		r->pending = mapping_line(r->line);
	}
	r->pending = false;
	const char *p = r->line;
	e->start = parse_hex(&p);
	if (*p == '-') p++;
	e->end = parse_hex(&p);
	e->rss = 0;
	/* Its figures, up to the next mapping's first line (kept for the next call). */
	while (next_line(&r->m, r->line, sizeof r->line)) {
		if (mapping_line(r->line)) {
			r->pending = true;
			break;
		}
		if (r->line[0] != 'R' || r->line[1] != 's' || r->line[2] != 's' || r->line[3] != ':') continue;
		size_t kib = 0;
		for (p = r->line + 4; *p == ' '; p++) {}
		for (; *p >= '0' && *p <= '9'; p++) kib = kib * 10 + (size_t)(*p - '0');
		e->rss = kib * 1024;
	}
	return true;
}

void smaps_close(struct smaps_reader *r) { maps_close(&r->m); }
