/*
 * ops.c -- run operations through the adapter table and print result lines (see ops.h)
 */
#include "crashcheck_own.h" /* first: this file is crashcheck's own code (rt_fault.c) */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "crashcheck.h"
#include "fault.h"
#include "format.h"
#include "ops.h"

/* A scan's or dump's pairs, gathered here and written a few KiB at a time: a scan prints many,
 * and four stdio calls per pair were a tenth of a continuation's check, one per pair still a
 * few percent (internal) */
enum { PAIR_TEXT = 2 + CC_TEXT_MAX(CC_KEY_MAX) + CC_TEXT_MAX(CC_VAL_MAX) };
struct pairs_out {
	FILE *out;
	size_t n;
	char buf[4096];
};

/* pairs_flush -- write out what P gathered (internal) */
static void pairs_flush(struct pairs_out *p)
{
	if (p->n)
		fwrite(p->buf, 1, p->n, p->out);
	p->n = 0;
}

/* print_pair -- " K V" for scan and dump output, into CTX (a struct pairs_out) (internal) */
static int print_pair(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	struct pairs_out *p = ctx;
	if (klen > CC_KEY_MAX || vlen > CC_VAL_MAX) {   /* an adapter's own: printed as it is */
		pairs_flush(p);
		fputc(' ', p->out);
		cc_print_key(p->out, key, klen);
		fputc(' ', p->out);
		cc_print_value(p->out, val, vlen);
		return 0;
	}
	if (p->n + PAIR_TEXT > sizeof(p->buf))
		pairs_flush(p);
	char *e = p->buf + p->n;
	*e++ = ' ';
	e = cc_key_text(e, key, klen);
	*e++ = ' ';
	e = cc_value_text(e, val, vlen);
	p->n = (size_t)(e - p->buf);
	return 0;
}


/* status_word -- the result line of a status without payload (internal) */
static const char *status_word(int st)
{
	switch (st) {
	case CC_OK: return "ok";
	case CC_EXISTS: return "exists";
	case CC_NOTFOUND: return "notfound";
	case CC_NOSPACE: return "nospace";
	default: return "error";
	}
}

/* cc_run_op -- run one operation and print its result line */
int cc_run_op(const struct cc_adapter *a, void *t, const struct cc_op *op, FILE *out)
{
	int st;
	uint8_t val[CC_LOOKUP_GUARD]; /* room for an adapter that writes too much: reported, not cut */
	size_t vlen = 0;
	const char *missing = cc_missing_verb(a, op->kind);
	if (missing) {
		/* parsing refuses such a line; a caller that built OP itself gets "error" */
		fprintf(stderr, "%s: has no %s\n", a->name, missing);
		fputs("error\n", out);
		return CC_ERROR;
	}
	switch (op->kind) {
	case OP_GENERIC: {
		char res[CC_OUT_MAX] = "";
		st = a->op ? a->op(t, &op->gen, res, sizeof(res)) : CC_ERROR;
		if (!a->op)
			fprintf(stderr, "%s: no generic operation entry point (op)\n", a->name);
		fprintf(out, "%s\n", st == CC_ERROR && !res[0] ? "error" : res);
		return st;
	}
	case OP_INSERT:
		st = a->insert(t, op->key, op->klen, op->val, op->vlen);
		break;
	case OP_UPDATE:
		st = a->update(t, op->key, op->klen, op->val, op->vlen);
		break;
	case OP_DELETE:
		st = a->remove(t, op->key, op->klen);
		break;
	case OP_LOOKUP:
		st = a->lookup(t, op->key, op->klen, val, &vlen);
		if (st == CC_OK && vlen > CC_VAL_MAX) {
			fprintf(stderr, "%s: lookup of key ", a->name);
			cc_print_key(stderr, op->key, op->klen);
			fprintf(stderr, " returned a %zu-byte value, longer than CC_VAL_MAX (%d)\n",
				vlen, CC_VAL_MAX);
			st = CC_ERROR;
		} else if (st == CC_OK) {
			fputs("value ", out);
			cc_print_value(out, val, vlen);
			fputc('\n', out);
			return st;
		}
		break;
	case OP_SCAN: {
		/* "scan K V K V ...\n": with a short scan, one write in all */
		struct pairs_out p = {.out = out, .n = 4};
		memcpy(p.buf, "scan", 4);
		a->scan(t, op->key, op->klen, (size_t)op->count, print_pair, &p);
		if (p.n == sizeof(p.buf))
			pairs_flush(&p);
		p.buf[p.n++] = '\n';
		pairs_flush(&p);
		return CC_OK;
	}
	default:
		st = CC_ERROR;
	}
	fputs(status_word(st), out);
	fputc('\n', out);
	return st;
}

struct violation_out {
	FILE *out;
	size_t op;
	size_t n;
};

/* print_violation -- one "!invariant I TEXT" line, at most 8 per operation (internal) */
static void print_violation(void *ctx, const char *text)
{
	struct violation_out *v = ctx;
	if (v->n++ < 8)
		fprintf(v->out, "!invariant %zu %s\n", v->op, text);
}

/* cc_run_history -- run all operations with op markers, checking invariants with CHECK */
void cc_run_history(const struct cc_adapter *a, void *t, const struct cc_history *h, FILE *out,
		    int check)
{
	int strays = 0;
	pid_t parent = getppid();
	for (size_t i = 0; i < h->n; i++) {
		cc_fault_op(0, (long)i);
		crashcheck_op_begin(i);
		cc_run_op(a, t, &h->ops[i], out);
		crashcheck_op_end(i);
		cc_fault_op(0, -1);
		/* Each result reaches the file before the next operation starts, so
		 * whoever supervises the run can count how far it got when the
		 * structure hangs, stops or dies in a later operation. */
		fflush(out);
		if (check && a->check) {
			/* the first broken operation is the finding; later checks would
			 * only repeat it (and may trip over the damage); an adapter
			 * without a check has no invariants to test */
			struct violation_out v = {out, i, 0};
			if (a->check(t, print_violation, &v))
				check = 0;
			fflush(out);
		}
		/* A process the operation forked and left running (waitpid says a
		 * child exists but none has ended) is named once, by the operation
		 * after which it was first seen. */
		if (!strays && waitpid(-1, NULL, WNOHANG) == 0) {
			fprintf(out, "!stray %zu\n", i);
			fflush(out);
			strays = 1;
		}
		/* An operation that killed our parent (the supervisor) leaves us an
		 * orphan: say after which operation, and stop here. */
		if (getppid() != parent) {
			fprintf(out, "!orphan %zu\n", i);
			fflush(out);
			_exit(3);
		}
	}
}

/* one thread section of a threaded run */
struct section {
	const struct cc_adapter *a;
	void *t;
	const struct cc_history *h;
	FILE *out;
	unsigned thread;
};

/* run_section -- a thread's operations with !call / !ret lines (internal) */
static void *run_section(void *arg)
{
	struct section *s = arg;
	for (size_t i = 0; i < s->h->n; i++) {
		if (s->h->ops[i].thread != s->thread)
			continue;
		/* the call line goes out before the operation begins and the return
		 * line after it ends: each interval written contains the real one */
		flockfile(s->out);
		fprintf(s->out, "!call %u %zu\n", s->thread, i);
		fflush(s->out);
		funlockfile(s->out);
		char *res = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&res, &len);
		if (!m) {
			perror("open_memstream");
			exit(2);
		}
		/* a fault in the operation names it and this thread (fault.h): the
		 * lines alone cannot say which of the calls in flight died */
		cc_fault_op(s->thread, (long)i);
		crashcheck_op_begin(i);
		cc_run_op(s->a, s->t, &s->h->ops[i], m);
		crashcheck_op_end(i);
		cc_fault_op(s->thread, -1);
		fclose(m);
		if (len && res[len - 1] == '\n')
			res[--len] = '\0';
		flockfile(s->out);
		fprintf(s->out, "!ret %u %zu %s\n", s->thread, i, res ? res : "error");
		fflush(s->out);
		funlockfile(s->out);
		free(res);
	}
	return NULL;
}

/* cc_run_threads -- the load phase, then one pthread per thread section */
int cc_run_threads(const struct cc_adapter *a, void *t, const struct cc_history *h, FILE *out,
		   int check)
{
	size_t nload = 0;
	while (nload < h->n && h->ops[nload].thread == 0)
		nload++;
	struct cc_history load = {h->ops, nload, 0};
	cc_run_history(a, t, &load, out, check);
	struct section sec[CC_THREADS_MAX];
	pthread_t tid[CC_THREADS_MAX];
	unsigned started = 0;
	int rc = 0;
	for (unsigned k = 0; k < h->nthreads && k < CC_THREADS_MAX; k++) {
		sec[k] = (struct section){a, t, h, out, k + 1};
		int e = pthread_create(&tid[k], NULL, run_section, &sec[k]);
		if (e) {
			fprintf(stderr, "%s: cannot start thread %u: %s\n", a->name, k + 1, strerror(e));
			rc = -1;
			break;
		}
		started++;
	}
	for (unsigned k = 0; k < started; k++)
		pthread_join(tid[k], NULL);
	if (check && a->check && !rc && h->n > nload) {
		struct violation_out v = {out, h->n - 1, 0};
		a->check(t, print_violation, &v);
	}
	fflush(out);
	return rc;
}

/* print_item -- one dump item as a JSON array of history-notation strings (internal) */
static int print_item(void *ctx, const struct cc_arg *cells, size_t n)
{
	struct { FILE *out; size_t i; } *d = ctx;
	fputs(d->i++ ? ", [" : "[", d->out);
	for (size_t c = 0; c < n; c++) {
		fputs(c ? ", \"" : "\"", d->out);
		cc_print_arg(d->out, &cells[c]);
		fputc('"', d->out);
	}
	fputc(']', d->out);
	return 0;
}

/* cc_print_items -- a generic dump: [[cell, ...], ...] (JSON, cells as strings) */
void cc_print_items(const struct cc_adapter *a, void *t, FILE *out)
{
	struct { FILE *out; size_t i; } d = {out, 0};
	fputc('[', out);
	if (a->dump_items)
		a->dump_items(t, print_item, &d);
	fputc(']', out);
}

/* cc_print_dump -- the whole structure on one line */
void cc_print_dump(const struct cc_adapter *a, void *t, FILE *out)
{
	if (!cc_is_map(a)) {
		fputs("dump ", out);
		cc_print_items(a, t, out);
		fputc('\n', out);
		return;
	}
	fputs("dump", out);
	struct pairs_out p = {.out = out, .n = 0};
	a->dump(t, print_pair, &p);
	pairs_flush(&p);
	fputc('\n', out);
}
