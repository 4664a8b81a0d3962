/*
 * format.c -- keys, values and JSON strings as the driver prints them (see format.h)
 */
#include "crashcheck_own.h" /* first: this file is crashcheck's own code (rt_fault.c) */
#include <inttypes.h>
#include <string.h>
#include "format.h"

/* cc_hex -- N bytes as lower-case hex at DST (2 * N chars, no NUL); returns the end */
char *cc_hex(char *dst, const uint8_t *b, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		*dst++ = digits[b[i] >> 4];
		*dst++ = digits[b[i] & 15];
	}
	return dst;
}

/* cc_u64 -- V in decimal at DST (no NUL); returns the end.  Two digits per
 * division: a continuation's scans print a few hundred numbers per check */
char *cc_u64(char *dst, uint64_t v)
{
	static const char pairs[] =
		"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
		"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
		"8081828384858687888990919293949596979899";
	char tmp[20];
	int n = 20;
	while (v >= 100) {
		unsigned r = (unsigned)(v % 100);
		v /= 100;
		n -= 2;
		memcpy(tmp + n, pairs + 2 * r, 2);
	}
	if (v >= 10) {
		n -= 2;
		memcpy(tmp + n, pairs + 2 * v, 2);
	} else {
		tmp[--n] = (char)('0' + v);
	}
	memcpy(dst, tmp + n, (size_t)(20 - n));
	return dst + 20 - n;
}

/* cc_print_hex -- N bytes as lower-case hex.  Built in a buffer and written
 * at once: a check prints thousands of bytes this way, and one fprintf per
 * byte was most of a check's time (bench/crashsim_throughput) */
void cc_print_hex(FILE *out, const uint8_t *b, size_t n)
{
	char buf[256];
	while (n) {
		size_t k = n < sizeof(buf) / 2 ? n : sizeof(buf) / 2;
		fwrite(buf, 1, (size_t)(cc_hex(buf, b, k) - buf), out);
		b += k;
		n -= k;
	}
}

/* u64_text -- 8 bytes as a decimal, big- or little-endian, at DST; returns the end (internal) */
static char *u64_text(char *dst, const uint8_t *b, int big_endian)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)b[big_endian ? 7 - i : i] << (8 * i);
	return cc_u64(dst, v); /* fprintf's format parsing cost more */
}

/* bytes_text -- a key (BIG_ENDIAN) or value of N bytes in history notation at DST (internal) */
static char *bytes_text(char *dst, const uint8_t *b, size_t n, int big_endian)
{
	if (n == 8)
		return u64_text(dst, b, big_endian);
	memcpy(dst, "x:", 2);
	return cc_hex(dst + 2, b, n);
}

/* cc_key_text, cc_value_text -- a key / value in history notation at DST (no NUL; at most
 * CC_TEXT_MAX(n) chars); return the end */
char *cc_key_text(char *dst, const uint8_t *key, size_t klen)
{
	return bytes_text(dst, key, klen, 1);
}

char *cc_value_text(char *dst, const uint8_t *val, size_t vlen)
{
	return bytes_text(dst, val, vlen, 0);
}

/* print_bytes -- a key or value in history notation: short ones built in a buffer (internal) */
static void print_bytes(FILE *out, const uint8_t *b, size_t n, int big_endian)
{
	char buf[256];
	if (CC_TEXT_MAX(n) <= sizeof(buf)) {
		fwrite(buf, 1, (size_t)(bytes_text(buf, b, n, big_endian) - buf), out);
		return;
	}
	fputs("x:", out);
	cc_print_hex(out, b, n);
}

/* cc_print_key -- a key in history notation */
void cc_print_key(FILE *out, const uint8_t *key, size_t klen)
{
	print_bytes(out, key, klen, 1);
}

/* cc_print_value -- a value in history notation */
void cc_print_value(FILE *out, const uint8_t *val, size_t vlen)
{
	print_bytes(out, val, vlen, 0);
}

/* cc_print_json_text -- SEP, then the N bytes at S (up to a NUL among them) escaped as a JSON
 * string, written a few hundred bytes at a time: a character at a time, each a locked stdio
 * call, was a tenth of a checked state's CPU with a continuation's answers (and the separator
 * written on its own, with a continuation's answer for each of its operations, a few percent
 * of a state).  Runs of characters that need no escape (nearly all of a result line) are
 * copied whole */
void cc_print_json_text(FILE *out, const char *sep, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	enum { ROOM = 512 };
	char buf[ROOM + 8], *e = buf;
	size_t k = strlen(sep);
	if (k > ROOM - 1) {
		fputs(sep, out);
		k = 0;
	}
	memcpy(e, sep, k);
	e += k;
	*e++ = '"';
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	while (p < end && *p) {
		const unsigned char *q = p;
		while (q < end && *q >= 0x20 && *q < 0x7f && *q != '"' && *q != '\\')
			q++;
		if (q > p) {
			size_t k = (size_t)(q - p);
			if (e + k > buf + ROOM) {
				fwrite(buf, 1, (size_t)(e - buf), out);
				e = buf;
			}
			if (k > ROOM) {
				fwrite(p, 1, k, out);
			} else {
				memcpy(e, p, k);
				e += k;
			}
			p = q;
			continue;
		}
		if (!*p)
			break;
		if (e > buf + ROOM) {
			fwrite(buf, 1, (size_t)(e - buf), out);
			e = buf;
		}
		if (*p == '"' || *p == '\\') {
			*e++ = '\\';
			*e++ = (char)*p;
		} else if (*p == '\n') {
			*e++ = '\\';
			*e++ = 'n';
		} else {
			memcpy(e, "\\u00", 4);
			e[4] = hex[*p >> 4];
			e[5] = hex[*p & 15];
			e += 6;
		}
		p++;
	}
	*e++ = '"';
	fwrite(buf, 1, (size_t)(e - buf), out);
}

/* cc_print_json_string -- S escaped as a JSON string */
void cc_print_json_string(FILE *out, const char *s)
{
	cc_print_json_text(out, "", s, strlen(s));
}

/* cc_print_arg -- a generic argument in history notation */
void cc_print_arg(FILE *out, const struct cc_arg *arg)
{
	if (arg->kind == CC_ARG_U64) {
		fprintf(out, "%llu", (unsigned long long)arg->u);
		return;
	}
	fputs("x:", out);
	cc_print_hex(out, arg->bytes, arg->len);
}
