/*
 * format.h -- how the driver writes keys, values and JSON
 *
 * Result lines use the history notation: an 8-byte key as a decimal u64
 * (big-endian), an 8-byte value as a decimal u64 (little-endian), anything
 * else as x:HEX.  JSON output carries plain lower-case hex strings.
 */
#ifndef CC_FORMAT_H
#define CC_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "cc_tree.h"

void cc_print_key(FILE *out, const uint8_t *key, size_t klen);
void cc_print_value(FILE *out, const uint8_t *val, size_t vlen);
void cc_print_hex(FILE *out, const uint8_t *b, size_t n);
/* cc_key_text, cc_value_text -- a key / value in history notation at DST (no NUL),
 * at most CC_TEXT_MAX(length) chars; return the end */
#define CC_TEXT_MAX(n) (2 * (n) + 22)
char *cc_key_text(char *dst, const uint8_t *key, size_t klen);
char *cc_value_text(char *dst, const uint8_t *val, size_t vlen);

/* cc_hex, cc_u64 -- hex / decimal digits written at DST (no NUL); return the end */
char *cc_hex(char *dst, const uint8_t *b, size_t n);
char *cc_u64(char *dst, uint64_t v);
/* cc_print_arg -- a generic argument in history notation: decimal u64 or x:HEX */
void cc_print_arg(FILE *out, const struct cc_arg *arg);
/* cc_print_json_string -- S as a JSON string literal (quotes included) */
void cc_print_json_string(FILE *out, const char *s);
/* cc_print_json_text -- SEP (a few characters, e.g. ", "; written as they are), then the N bytes at
 * S, up to a NUL among them, as cc_print_json_string */
void cc_print_json_text(FILE *out, const char *sep, const char *s, size_t n);

#endif /* CC_FORMAT_H */
