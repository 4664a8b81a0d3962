/*
 * history.c -- parse the driver's history text into operations (see history.h)
 *
 * Every mistake is a user error: the reason names the line and what was
 * expected, so the driver can print it and exit 2.
 */
#include "crashcheck_own.h" /* first: this file is crashcheck's own code (rt_fault.c) */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "history.h"

/* fail -- format a one-line reason into ERR and return -1 (internal) */
static int fail(char *err, size_t errlen, unsigned line, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "line %u: ", line);
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < errlen)
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* parse_u64 -- a decimal u64 filling all of S; 0 or -1 (internal) */
static int parse_u64(const char *s, uint64_t *out)
{
	if (!*s)
		return -1;
	for (const char *p = s; *p; p++)
		if (!isdigit((unsigned char)*p))
			return -1;
	errno = 0;
	unsigned long long v = strtoull(s, NULL, 10);
	if (errno == ERANGE)
		return -1;
	*out = v;
	return 0;
}

/* hexval -- value of a hex digit or -1 (internal) */
static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/*
 * parse_bytes -- a decimal u64 (BIG_ENDIAN selects key order) or x:HEX into
 * OUT of at most MAX bytes; returns the length or -1 with WHY set (internal)
 */
static long parse_bytes(const char *s, int big_endian, uint8_t *out, size_t max, const char **why)
{
	if (s[0] == 'x' && s[1] == ':') {
		size_t n = strlen(s + 2);
		if (n == 0 || n % 2) {
			*why = "x:HEX needs an even number of hex digits, at least two";
			return -1;
		}
		if (n / 2 > max) {
			*why = "too many bytes";  /* keys: CC_KEY_MAX, values: CC_VAL_MAX */
			return -1;
		}
		for (size_t i = 0; i < n / 2; i++) {
			int hi = hexval(s[2 + 2 * i]), lo = hexval(s[3 + 2 * i]);
			if (hi < 0 || lo < 0) {
				*why = "not a hex digit";
				return -1;
			}
			out[i] = (uint8_t)(hi << 4 | lo);
		}
		return (long)(n / 2);
	}
	uint64_t v;
	if (parse_u64(s, &v)) {
		*why = "expected a decimal u64 or x:HEX";
		return -1;
	}
	for (int i = 0; i < 8; i++)
		out[big_endian ? 7 - i : i] = (uint8_t)(v >> (8 * i));
	return 8;
}

/* parse_line -- one non-blank, non-comment line into OP (internal) */
static int parse_line(char *s, unsigned line, int key_kind, size_t value_min, size_t value_size,
		      struct cc_op *op, char *err, size_t errlen)
{
	char *tok[4];
	int nt = 0;
	for (char *p = strtok(s, " \t\r"); p; p = strtok(NULL, " \t\r")) {
		if (nt == 4)
			return fail(err, errlen, line, "too many words");
		tok[nt++] = p;
	}
	static const struct { const char *name; enum cc_op_kind kind; int args; } verbs[] = {
		{"insert", OP_INSERT, 2}, {"update", OP_UPDATE, 2}, {"delete", OP_DELETE, 1},
		{"lookup", OP_LOOKUP, 1}, {"scan", OP_SCAN, 2},
	};
	size_t v;
	for (v = 0; v < sizeof(verbs) / sizeof(verbs[0]); v++)
		if (!strcmp(tok[0], verbs[v].name))
			break;
	if (v == sizeof(verbs) / sizeof(verbs[0]))
		return fail(err, errlen, line, "unknown operation '%s' (insert, update, delete, lookup, scan)", tok[0]);
	if (nt - 1 != verbs[v].args)
		return fail(err, errlen, line, "%s takes %d argument%s, got %d", tok[0],
			    verbs[v].args, verbs[v].args > 1 ? "s" : "", nt - 1);
	memset(op, 0, sizeof(*op));
	op->kind = verbs[v].kind;
	op->line = line;
	const char *why = "";
	long n = parse_bytes(tok[1], 1, op->key, CC_KEY_MAX, &why);
	if (n < 0)
		return fail(err, errlen, line, "bad key '%s': %s", tok[1], why);
	if (key_kind == CC_KEYS_U64 && n != 8)
		return fail(err, errlen, line, "bad key '%s': this structure takes 8-byte keys", tok[1]);
	op->klen = (size_t)n;
	if (op->kind == OP_SCAN) {
		if (parse_u64(tok[2], &op->count))
			return fail(err, errlen, line, "bad scan count '%s': expected a decimal number", tok[2]);
	} else if (nt == 3) {
		n = parse_bytes(tok[2], 0, op->val, CC_VAL_MAX, &why);
		if (n < 0)
			return fail(err, errlen, line, "bad value '%s': %s", tok[2], why);
		if (value_min == value_size && (size_t)n != value_size)
			return fail(err, errlen, line, "bad value '%s': this structure takes %zu-byte values",
				    tok[2], value_size);
		if ((size_t)n < value_min || (size_t)n > value_size)
			return fail(err, errlen, line, "bad value '%s': this structure takes values of %zu to %zu bytes",
				    tok[2], value_min, value_size);
		op->vlen = (size_t)n;
	}
	return 0;
}

/* parse_generic -- one line `NAME ARG ...` against the table OPS (internal) */
static int parse_generic(char *s, unsigned line, const struct cc_op_decl *ops,
			 struct cc_op *op, char *err, size_t errlen)
{
	char *tok[CC_OP_ARGS_MAX + 1];
	int nt = 0;
	for (char *p = strtok(s, " \t\r"); p; p = strtok(NULL, " \t\r")) {
		if (nt == CC_OP_ARGS_MAX + 1)
			return fail(err, errlen, line, "too many words");
		tok[nt++] = p;
	}
	int v;
	for (v = 0; ops && ops[v].name; v++)
		if (!strcmp(tok[0], ops[v].name))
			break;
	if (!ops || !ops[v].name) {
		char known[200] = "";
		size_t n = 0;
		for (int i = 0; ops && ops[i].name && n < sizeof(known); i++)
			n += (size_t)snprintf(known + n, sizeof(known) - n, "%s%s", i ? ", " : "", ops[i].name);
		return fail(err, errlen, line, "unknown operation '%s' (%s)", tok[0], known);
	}
	int want = (int)strlen(ops[v].args);
	if (nt - 1 != want)
		return fail(err, errlen, line, "%s takes %d argument%s, got %d", tok[0], want,
			    want == 1 ? "" : "s", nt - 1);
	memset(op, 0, sizeof(*op));
	op->kind = OP_GENERIC;
	op->line = line;
	op->gen.name = ops[v].name;
	op->gen.index = v;
	op->gen.nargs = (size_t)want;
	for (int i = 0; i < want; i++) {
		struct cc_arg *arg = &op->gen.args[i];
		if (ops[v].args[i] == 'u') {
			arg->kind = CC_ARG_U64;
			if (parse_u64(tok[i + 1], &arg->u))
				return fail(err, errlen, line, "%s: bad argument %d '%s': expected a decimal u64",
					    tok[0], i + 1, tok[i + 1]);
		} else {
			const char *why = "";
			arg->kind = CC_ARG_BYTES;
			long n = parse_bytes(tok[i + 1], 1, arg->bytes, CC_KEY_MAX, &why);
			if (n < 0)
				return fail(err, errlen, line, "%s: bad argument %d '%s': %s", tok[0], i + 1,
					    tok[i + 1], why);
			arg->len = (size_t)n;
		}
	}
	return 0;
}

/* parse_text -- every line of TEXT through the map verbs or, with OPS, generically (internal) */
static int parse_text(const char *text, int key_kind, size_t value_min, size_t value_size,
		      const struct cc_op_decl *ops, int generic, struct cc_history *h, char *err, size_t errlen)
{
	size_t cap = 64;
	h->n = 0;
	h->ops = malloc(cap * sizeof(*h->ops));
	char *copy = strdup(text);
	if (!h->ops || !copy) {
		free(copy);
		cc_history_free(h);
		return fail(err, errlen, 0, "out of memory");
	}
	unsigned line = 0, thread = 0;
	h->nthreads = 0;
	char *next = copy;
	while (next) {
		char *s = next;
		next = strchr(s, '\n');
		if (next)
			*next++ = '\0';
		line++;
		while (*s == ' ' || *s == '\t' || *s == '\r')
			s++;
		if (!*s || *s == '#')
			continue;
		if (!strncmp(s, "thread", 6) && (s[6] == ' ' || s[6] == '\t' || !s[6])) {
			/* `thread N`: the next section, numbered 1, 2, ... in order */
			char *end;
			unsigned long n = strtoul(s + 6, &end, 10);
			while (*end == ' ' || *end == '\t' || *end == '\r')
				end++;
			if (*end || n != thread + 1 || n > CC_THREADS_MAX) {
				free(copy);
				cc_history_free(h);
				return fail(err, errlen, line, "expected 'thread %u' (sections numbered 1, 2, ... "
					    "in order, at most %d)", thread + 1, CC_THREADS_MAX);
			}
			thread = (unsigned)n;
			h->nthreads = thread;
			continue;
		}
		if (h->n == cap) {
			struct cc_op *ops = realloc(h->ops, 2 * cap * sizeof(*ops));
			if (!ops) {
				free(copy);
				cc_history_free(h);
				return fail(err, errlen, line, "out of memory");
			}
			h->ops = ops;
			cap *= 2;
		}
		if (generic ? parse_generic(s, line, ops, &h->ops[h->n], err, errlen)
			    : parse_line(s, line, key_kind, value_min, value_size, &h->ops[h->n], err, errlen)) {
			free(copy);
			cc_history_free(h);
			return -1;
		}
		h->ops[h->n].thread = thread;
		h->n++;
	}
	free(copy);
	return 0;
}

/* cc_history_parse -- parse a whole history text of map verbs */
int cc_history_parse(const char *text, int key_kind, size_t value_min, size_t value_size,
		     struct cc_history *h, char *err, size_t errlen)
{
	return parse_text(text, key_kind, value_min, value_size, NULL, 0, h, err, errlen);
}

/* cc_history_parse_for -- parse a whole history text for adapter A */
int cc_history_parse_for(const char *text, const struct cc_adapter *a,
			 struct cc_history *h, char *err, size_t errlen)
{
	if (!cc_is_map(a))
		return parse_text(text, 0, 0, 0, a->ops, 1, h, err, errlen);
	if (cc_history_parse(text, a->key_kind, cc_value_min(a), a->value_size, h, err, errlen))
		return -1;
	/* an operation the adapter leaves out (a NULL verb) is a user error, never a crash */
	for (size_t i = 0; i < h->n; i++) {
		const char *verb = cc_missing_verb(a, h->ops[i].kind);
		if (verb) {
			unsigned line = h->ops[i].line;
			const char *member = h->ops[i].kind == OP_DELETE ? "remove" : verb;
			cc_history_free(h);
			return fail(err, errlen, line, "%s has no %s (its adapter leaves .%s NULL)", a->name,
				    verb, member);
		}
	}
	return 0;
}

/* cc_missing_verb -- the name of KIND when adapter A leaves its entry point NULL, else NULL */
const char *cc_missing_verb(const struct cc_adapter *a, enum cc_op_kind kind)
{
	switch (kind) {
	case OP_INSERT: return a->insert ? NULL : "insert";
	case OP_UPDATE: return a->update ? NULL : "update";
	case OP_DELETE: return a->remove ? NULL : "delete";
	case OP_LOOKUP: return a->lookup ? NULL : "lookup";
	case OP_SCAN: return a->scan ? NULL : "scan";
	default: return NULL;
	}
}

/* cc_history_free -- release a parsed history */
void cc_history_free(struct cc_history *h)
{
	free(h->ops);
	h->ops = NULL;
	h->n = 0;
	h->nthreads = 0;
}
