/*
 * buf.c -- the checker runner's growable byte buffer
 *
 * Owns struct buf: request bodies, answers and captured output all grow in
 * one.  Growing a buffer changes the runner's address-space size, which
 * the child's RLIMIT_AS is computed from, so it marks that size stale
 * (see ccr_child_run).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner_internal.h"

/* ccr_buf_reserve -- make room for N more bytes; -1 when out of memory */
int ccr_buf_reserve(struct buf *b, size_t n, int *vm_stale)
{
	if (b->len + n <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + n)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (p == NULL)
		return -1;
	b->p = p;
	b->cap = cap;
	if (vm_stale)
		*vm_stale = 1;
	return 0;
}

/* ccr_buf_add -- append N bytes */
int ccr_buf_add(struct runner *r, struct buf *b, const void *data, size_t n)
{
	if (n == 0)
		return 0;   /* B may have no storage yet */
	if (ccr_buf_reserve(b, n, &r->vm_stale) < 0)
		return -1;
	memcpy(b->p + b->len, data, n);
	b->len += n;
	return 0;
}

/* ccr_buf_str -- append a C string */
int ccr_buf_str(struct runner *r, struct buf *b, const char *s)
{
	return ccr_buf_add(r, b, s, strlen(s));
}

/* ccr_buf_fmt -- append printf-formatted text */
int ccr_buf_fmt(struct runner *r, struct buf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -1;
	return ccr_buf_add(r, b, tmp, (size_t)n);
}
