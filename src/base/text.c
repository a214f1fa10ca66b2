/* text.c — the text writer (text.h). */
#define _GNU_SOURCE
#include "base/text.h"

#include <errno.h>
#include <unistd.h>

void out_flush(struct out *o)
{
	if (o->fd < 0) return;
	int saved = errno;
	for (size_t done = 0; done < o->n;) {
		ssize_t w = write(o->fd, o->buf + done, o->n - done);
		if (w < 0 && errno == EINTR) continue;
		if (w <= 0) break;
		done += (size_t)w;
	}
	o->n = 0;
	errno = saved;
}

void out_mem(struct out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n && s[i]; i++) {
		if (o->fd >= 0) {
			if (o->n == o->cap) out_flush(o);
		} else if (o->n + 1 >= o->cap) {
			break; /* a string: the terminator keeps the last byte */
		}
		o->buf[o->n++] = s[i];
	}
	if (o->fd < 0 && o->cap) o->buf[o->n] = 0;
}

void out_str(struct out *o, const char *s) { out_mem(o, s, SIZE_MAX); }

void out_num(struct out *o, unsigned long v)
{
	char tmp[24];
	size_t n = sizeof tmp;
	do tmp[--n] = (char)('0' + v % 10); while (v /= 10);
	out_mem(o, tmp + n, sizeof tmp - n);
}

void out_hex(struct out *o, uintptr_t v)
{
	char tmp[18];
	size_t n = sizeof tmp;
	do tmp[--n] = "0123456789abcdef"[v & 15]; while (v >>= 4);
	tmp[--n] = 'x';
	tmp[--n] = '0';
	out_mem(o, tmp + n, sizeof tmp - n);
}

void out_fixed(struct out *o, unsigned long v, unsigned decimals)
{
	unsigned long scale = 1;
	for (unsigned i = 0; i < decimals; i++) scale *= 10;
	out_num(o, v / scale);
	if (!decimals) return;
	out_str(o, ".");
	unsigned long frac = v % scale;
	for (unsigned long d = scale / 10; d; d /= 10) {
		char c = (char)('0' + frac / d % 10);
		out_mem(o, &c, 1);
	}
}
