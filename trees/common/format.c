/*
 * format.c -- keys, values and JSON strings as the driver prints them (see format.h)
 */
#include <inttypes.h>
#include "format.h"

/* cc_print_hex -- N bytes as lower-case hex */
void cc_print_hex(FILE *out, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%02x", b[i]);
}

/* print_u64 -- 8 bytes as a decimal, big- or little-endian (internal) */
static void print_u64(FILE *out, const uint8_t *b, int big_endian)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)b[big_endian ? 7 - i : i] << (8 * i);
	fprintf(out, "%" PRIu64, v);
}

/* cc_print_key -- a key in history notation */
void cc_print_key(FILE *out, const uint8_t *key, size_t klen)
{
	if (klen == 8) {
		print_u64(out, key, 1);
		return;
	}
	fputs("x:", out);
	cc_print_hex(out, key, klen);
}

/* cc_print_value -- a value in history notation */
void cc_print_value(FILE *out, const uint8_t *val, size_t vlen)
{
	if (vlen == 8) {
		print_u64(out, val, 0);
		return;
	}
	fputs("x:", out);
	cc_print_hex(out, val, vlen);
}

/* cc_print_json_string -- S escaped as a JSON string */
void cc_print_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", out);
		else if (*p < 0x20 || *p >= 0x7f)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
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
