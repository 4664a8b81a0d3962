/*
 * check.c -- recover an image and print the check JSON (see check.h)
 *
 * Besides the adapter's own invariants, three generic ones hold for every
 * structure: the dump is in strictly increasing key order; every dumped key
 * is found by lookup with the dumped value; every reachable object is an
 * allocated object (when the adapter reports allocations) and is reached
 * once.  The adapter's check runs first, before any lookup, because a
 * lookup may repair lazily.
 */
#include "crashcheck_own.h" /* first: this file is crashcheck's own code (rt_fault.c) */
#include <errno.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "followup_memo.h"
#include "format.h"
#include "history.h"
#include "ops.h"
#include "own_image.h"
#include "pm_alloc.h"

#define MAX_VIOLATIONS 200   /* beyond this a summary line says how many more */
#define EARLY_VIOLATIONS 4   /* written to stderr as found: the first names the rule */

struct pair {
	uint8_t key[CC_KEY_MAX];
	size_t klen;
	uint8_t val[CC_VAL_MAX];
	size_t vlen;
};

struct obj {
	uintptr_t addr;
	size_t size;
};

struct vec {
	void *items;
	size_t n, cap, width;
};

/* vec_push -- append one item of the vector's width; aborts on out of memory (internal) */
static void *vec_push(struct vec *v)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 64;
		v->items = realloc(v->items, v->cap * v->width);
		if (!v->items) {
			fprintf(stderr, "check: out of memory\n");
			abort();
		}
	}
	return (char *)v->items + v->n++ * v->width;
}

struct violations {
	struct vec texts;   /* char * */
	size_t total;
};

/* add_violation -- cc_violation_fn collecting copies, each also written to
 * stderr at once (specs/oracle.py VIOLATION_PREFIX): a lookup that crashes
 * later in the check must not take the broken rule with it (internal) */
static void add_violation(void *ctx, const char *text)
{
	struct violations *v = ctx;
	if (v->total < EARLY_VIOLATIONS)
		fprintf(stderr, "check: violation: %s\n", text);
	if (v->total++ < MAX_VIOLATIONS)
		*(char **)vec_push(&v->texts) = strdup(text);
}

struct dump_ctx {
	struct vec *pairs;
	struct violations *v;
};

/* report_long -- a violation naming KEY whose key or value is longer than the driver takes (internal) */
static void report_long(struct violations *v, const char *what, const char *part,
			const uint8_t *key, size_t klen, size_t len, int max)
{
	char *buf = NULL;
	size_t blen = 0;
	FILE *m = open_memstream(&buf, &blen);
	if (!m)
		abort();
	fputs("key ", m);
	cc_print_key(m, key, klen);
	fprintf(m, ": %s %s is %zu bytes, longer than the %d the driver takes", what, part, len, max);
	fclose(m);
	add_violation(v, buf);
	free(buf);
}

/* add_pair -- cc_kv_fn collecting the dump; an over-long key or value is a
 * violation naming the key, and the pair is left out, never cut (internal) */
static int add_pair(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	struct dump_ctx *d = ctx;
	if (klen > CC_KEY_MAX || vlen > CC_VAL_MAX) {
		if (klen > CC_KEY_MAX)
			report_long(d->v, "dumped", "key", key, klen, klen, CC_KEY_MAX);
		else
			report_long(d->v, "its dumped", "value", key, klen, vlen, CC_VAL_MAX);
		return 0;
	}
	struct pair *p = vec_push(d->pairs);
	memset(p, 0, sizeof(*p));
	p->klen = klen;
	p->vlen = vlen;
	memcpy(p->key, key, klen);
	memcpy(p->val, val, vlen);
	return 0;
}

/* add_obj -- cc_obj_fn collecting objects (internal) */
static void add_obj(void *ctx, const void *obj, size_t size)
{
	struct obj *o = vec_push(ctx);
	o->addr = (uintptr_t)obj;
	o->size = size;
}

static int obj_cmp(const void *a, const void *b)
{
	const struct obj *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* sort_objs -- V's objects by address.  Allocators and tree walks usually list
 * them in order already, and qsort of a sorted list was a quarter of a
 * check's time: a sorted list is left as it is.  Otherwise a radix sort, a
 * byte per pass over only the bytes in which the addresses differ (three
 * passes in a pool below 16 MiB): qsort, a comparison call per step, was
 * still a tenth of a small check's time.  Stable, as glibc's merge sort is,
 * so equal addresses keep their order and the output is the same (internal) */
static void sort_objs(struct vec *v)
{
	struct obj *o = v->items;
	size_t n = v->n, i = 1;
	while (i < n && o[i - 1].addr <= o[i].addr)
		i++;
	if (i >= n)
		return;
	uintptr_t lo = o[0].addr, hi = o[0].addr;
	for (i = 1; i < n; i++) {
		lo = o[i].addr < lo ? o[i].addr : lo;
		hi = o[i].addr > hi ? o[i].addr : hi;
	}
	struct obj *tmp = malloc(n * sizeof(*tmp));
	if (!tmp) {
		qsort(o, n, sizeof(*o), obj_cmp);
		return;
	}
	struct obj *src = o, *dst = tmp;
	for (unsigned shift = 0; shift < 64 && (hi - lo) >> shift; shift += 8) {
		size_t start[257] = { 0 };
		for (i = 0; i < n; i++)
			start[((src[i].addr - lo) >> shift & 0xff) + 1]++;
		for (i = 1; i < 257; i++)
			start[i] += start[i - 1];
		for (i = 0; i < n; i++)
			dst[start[(src[i].addr - lo) >> shift & 0xff]++] = src[i];
		struct obj *t = src;
		src = dst;
		dst = t;
	}
	if (src != o)
		memcpy(o, src, n * sizeof(*o));
	free(tmp);
}

/* key_cmp -- byte order, a proper prefix first (internal) */
static int key_cmp(const struct pair *a, const struct pair *b)
{
	size_t n = a->klen < b->klen ? a->klen : b->klen;
	int c = memcmp(a->key, b->key, n);
	return c ? c : (a->klen > b->klen) - (a->klen < b->klen);
}

/* generic_checks -- the invariants every structure shares (internal) */
static void generic_checks(const struct cc_adapter *a, void *t, const struct vec *dump,
			   const struct vec *alloc, struct vec *reach, struct violations *v)
{
	char text[256];
	const struct pair *p = dump->items;
	for (size_t i = 0; i < dump->n; i++) {
		if (i && key_cmp(&p[i - 1], &p[i]) >= 0) {
			snprintf(text, sizeof(text), "dump is not in increasing key order at pair %zu", i);
			add_violation(v, text);
		}
		uint8_t val[CC_LOOKUP_GUARD]; /* an adapter writing too much is caught, not cut */
		size_t vlen = 0;
		int st = a->lookup(t, p[i].key, p[i].klen, val, &vlen);
		if (st == CC_OK && vlen > CC_VAL_MAX) {
			report_long(v, "its looked-up", "value", p[i].key, p[i].klen, vlen, CC_VAL_MAX);
		} else if (st != CC_OK || vlen != p[i].vlen || memcmp(val, p[i].val, vlen)) {
			FILE *m;
			char *buf = NULL;
			size_t len = 0;
			if ((m = open_memstream(&buf, &len))) {
				fputs("key ", m);
				cc_print_key(m, p[i].key, p[i].klen);
				if (st != CC_OK)
					fputs(" is in the dump but lookup does not find it", m);
				else
					fputs(" is in the dump but lookup returns another value", m);
				fclose(m);
				add_violation(v, buf);
				free(buf);
			}
		}
	}
	struct obj *r = reach->items;
	sort_objs(reach);
	for (size_t i = 1; i < reach->n; i++)
		if (r[i].addr == r[i - 1].addr) {
			snprintf(text, sizeof(text), "object at %#lx is reachable more than once",
				 (unsigned long)r[i].addr);
			add_violation(v, text);
		}
	if (!a->allocated)
		return;
	const struct obj *al = alloc->items;
	size_t j = 0;
	for (size_t i = 0; i < reach->n; i++) {
		while (j < alloc->n && al[j].addr < r[i].addr)
			j++;
		if (j == alloc->n || al[j].addr != r[i].addr || al[j].size < r[i].size) {
			snprintf(text, sizeof(text), "reachable object at %#lx (%zu bytes) is not an allocated object",
				 (unsigned long)r[i].addr, r[i].size);
			add_violation(v, text);
		}
	}
}

/* print_objs -- [[offset, size], ...] relative to BASE; items formatted by
 * hand, not by fprintf, which cost more than the rest of the check, and
 * written a few KiB at a time, not an fwrite (and its stream lock) per item
 * (internal) */
static void print_objs(FILE *out, const struct obj *o, size_t n, uintptr_t base)
{
	char buf[4096], *e = buf;
	*e++ = '[';
	for (size_t i = 0; i < n; i++) {
		if (e > buf + sizeof(buf) - 64) {
			fwrite(buf, 1, (size_t)(e - buf), out);
			e = buf;
		}
		if (i) {
			*e++ = ',';
			*e++ = ' ';
		}
		*e++ = '[';
		e = cc_u64(e, (uint64_t)(unsigned long)(o[i].addr - base));
		*e++ = ',';
		*e++ = ' ';
		e = cc_u64(e, (uint64_t)o[i].size);
		*e++ = ']';
	}
	*e++ = ']';
	fwrite(buf, 1, (size_t)(e - buf), out);
}

/* print_violations -- V's texts as a JSON list, freeing them (internal) */
static void print_violations(FILE *out, struct violations *v)
{
	char **texts = v->texts.items;
	fputc('[', out);
	for (size_t i = 0; i < v->texts.n; i++) {
		fputs(i ? ", " : "", out);
		cc_print_json_string(out, texts[i]);
		free(texts[i]);
	}
	if (v->total > MAX_VIOLATIONS)
		fprintf(out, ", \"... and %zu more violations\"", v->total - MAX_VIOLATIONS);
	fputc(']', out);
}

/* run_followup -- run FOLLOWUP after recovery, one JSON string per result (internal) */
static void run_followup(const struct cc_adapter *a, void *t, const struct cc_history *h, FILE *out)
{
	fputc('[', out);
	fflush(out); /* one that hangs or dies in the first op: a follow-up's doing, not recovery's */
	/* one memory stream for all the results, each the text written since the previous one
	 * (a stream opened and closed per operation cost more than most operations) */
	char *buf = NULL;
	size_t len = 0, start = 0;
	FILE *m = h->n ? open_memstream(&buf, &len) : NULL;
	if (h->n && !m)
		abort();
	if (m) /* this thread alone writes it: no lock taken per character and number */
		__fsetlocking(m, FSETLOCKING_BYCALLER);
	for (size_t i = 0; i < h->n; i++) {
		cc_run_op(a, t, &h->ops[i], m);
		fflush(m);
		size_t n = len - start;
		if (n && buf[start + n - 1] == '\n')
			n--;
		cc_print_json_text(out, i ? ", " : "", buf + start, n);
		start = len;
		fflush(out); /* a later op that crashes must not take earlier results with it */
	}
	if (m) {
		fclose(m);
		free(buf);
	}
	fputc(']', out);
}

/* page_zero -- the N bytes at P are all zero (internal) */
static int page_zero(const unsigned char *p, size_t n)
{
	const uint64_t *w = (const uint64_t *)p;
	for (size_t i = 0; i < n / 8; i++)
		if (w[i])
			return 0;
	return 1;
}

/* open_own_pool -- a structure that maps its pool file itself (cc_tree.h open_file) is given the
 * image POOL in place (own_image.c), or with CRASHCHECK_OWN_POOL_COPY as a file of its own: a
 * private temporary copy (sparse: a pool is mostly zero
 * pages, and writing all of it per checked state would cost more than the check), removed once
 * opened (its mapping stays); ERR says why it could not be (internal) */
static void *open_own_pool(const struct cc_adapter *a, void *pool, size_t size, char *err, size_t errlen)
{
	enum { PAGE = 4096 };
	char path[64];
	if (!cc_own_image_copy()) {
		/* no copy: the structure maps the image the check process holds (own_image.c) */
		if (cc_own_image_begin(pool, size, path, sizeof(path), err, errlen))
			return NULL;
		void *t = a->open_file(path, size);
		unlink(path);
		if (!t)
			snprintf(err, errlen, "the structure cannot open the image (its open_file failed)");
		return t;
	}
	snprintf(path, sizeof(path), "%s/cc-image-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	int fd = mkstemp(path);
	if (fd < 0) {
		snprintf(err, errlen, "cannot make a file for the image: %s", strerror(errno));
		return NULL;
	}
	const unsigned char *p = pool;
	int bad = ftruncate(fd, (off_t)size) != 0;
	for (size_t off = 0; off < size && !bad; off += PAGE) {
		size_t n = size - off < PAGE ? size - off : PAGE;
		if (!page_zero(p + off, n))
			bad = pwrite(fd, p + off, n, (off_t)off) != (ssize_t)n;
	}
	if (bad) {
		snprintf(err, errlen, "cannot write the image file: %s", strerror(errno));
		close(fd);
		unlink(path);
		return NULL;
	}
	close(fd);
	void *t = a->open_file(path, size);
	unlink(path);
	if (!t)
		snprintf(err, errlen, "the structure cannot open the image (its open_file failed)");
	return t;
}

/* cc_check_image -- recover and judge one image, one JSON line to OUT */
int cc_check_image(const struct cc_adapter *a, void *pool, size_t size,
		   const char *followup, FILE *out)
{
	struct cc_history fh = {0};
	char err[300] = "", why[256];
	int borrowed = 0;   /* fh is the memo's (followup_memo.h) */
	if (followup && *followup &&
	    cc_followup_parse(followup, a, &fh, &borrowed, why, sizeof(why)))
		snprintf(err, sizeof(err), "followup: %s", why);

	void *t = NULL;
	int status = -1;
	/* the regions recovery registers past the pool start from their images (rt_supply.c) */
	crashcheck_supply_begin(cc_own_pool(a) ? 0 : 1);
	if (a->no_pm) {
		if ((t = a->open(NULL, 0)) != NULL)
			status = a->recover(t);
	} else if (cc_own_pool(a)) {
		if ((t = open_own_pool(a, pool, size, err, sizeof(err))) != NULL)
			status = a->recover(t);
	} else if (pm_pool_attach(pool, size) == 0 && (t = a->open(pool, size)) != NULL)
		status = a->recover(t);
	else if (!*err)
		snprintf(err, sizeof(err), "the image holds no pool the structure can open");

	struct vec dump = {.width = sizeof(struct pair)};
	struct vec alloc = {.width = sizeof(struct obj)};
	struct vec reach = {.width = sizeof(struct obj)};
	struct violations v = {.texts = {.width = sizeof(char *)}};
	int map = cc_is_map(a);
	if (t && status == 0) {
		struct dump_ctx d = {&dump, &v};
		if (map)
			a->dump(t, add_pair, &d);
		if (a->check)
			a->check(t, add_violation, &v);
		if (a->allocated)
			a->allocated(t, add_obj, &alloc);
		if (a->reachable)
			a->reachable(t, add_obj, &reach);
		sort_objs(&alloc);
		if (map)
			generic_checks(a, t, &dump, &alloc, &reach, &v);
	}

	fprintf(out, "{\"recovered\": %s, \"recover_status\": %d, \"dump\": ",
		t && status == 0 ? "true" : "false", status);
	if (!map) {
		/* a generic dump: [[cell, ...], ...], cells in history notation */
		if (t && status == 0)
			cc_print_items(a, t, out);
		else
			fputs("[]", out);
	} else {
		fputc('[', out);
	}
	const struct pair *p = dump.items;
	/* ["KEYHEX", "VALHEX"] pairs, written a few KiB at a time (see print_objs) */
	enum { PAIR_MAX = 2 * (CC_KEY_MAX + CC_VAL_MAX) + 16 };
	char buf[4096 + PAIR_MAX], *e = buf;
	for (size_t i = 0; i < dump.n; i++) {
		if (e > buf + 4096) {
			fwrite(buf, 1, (size_t)(e - buf), out);
			e = buf;
		}
		if (i) {
			*e++ = ',';
			*e++ = ' ';
		}
		memcpy(e, "[\"", 2);
		e = cc_hex(e + 2, p[i].key, p[i].klen);
		memcpy(e, "\", \"", 4);
		e = cc_hex(e + 4, p[i].val, p[i].vlen);
		memcpy(e, "\"]", 2);
		e += 2;
	}
	fwrite(buf, 1, (size_t)(e - buf), out);
	fputs(map ? "], \"violations\": " : ", \"violations\": ", out);
	print_violations(out, &v);
	fputs(", \"allocated\": ", out);
	print_objs(out, alloc.items, alloc.n, (uintptr_t)pool);
	fputs(", \"unreachable\": ", out);
	/* allocated objects no root reaches, matched by address */
	const struct obj *al = alloc.items, *r = reach.items;
	struct vec lost = {.width = sizeof(struct obj)};
	for (size_t i = 0, j = 0; i < alloc.n; i++) {
		while (j < reach.n && r[j].addr < al[i].addr)
			j++;
		if (j == reach.n || r[j].addr != al[i].addr)
			*(struct obj *)vec_push(&lost) = al[i];
	}
	print_objs(out, lost.items, lost.n, (uintptr_t)pool);
	fputs(", \"followup\": ", out);
	fflush(out);
	/* operations on a structure known to be broken prove nothing more and may
	 * crash, taking the violations with them: the followup runs on sound ones */
	if (t && status == 0 && !*err && v.total == 0) {
		run_followup(a, t, &fh, out);
		/* the follow-up's operations may break the structure's rules without any of their
		 * answers going wrong (an insert filed under the wrong key byte): check again. Printed
		 * only once the check is done, so a check that dies leaves the output ending at the
		 * follow-up's list (its violations are on stderr already) */
		if (a->check && fh.n) {
			struct violations fv = {.texts = {.width = sizeof(char *)}};
			a->check(t, add_violation, &fv);
			if (fv.total) {
				fputs(", \"followup_violations\": ", out);
				print_violations(out, &fv);
			}
			free(fv.texts.items);
		}
	} else {
		fputs("[]", out);
	}
	if (*err) {
		fputs(", \"error\": ", out);
		cc_print_json_string(out, err);
	}
	fputs("}\n", out);
	fflush(out);
	/* a structure opened on the image in place is not closed: the check process is put back or
	 * exits after the check, which undoes all of it, and libpmemobj's close costs a third of
	 * the check (bench/README.md) */
	if (t && a->close && !cc_own_image_active())
		a->close(t);
	if (!borrowed)
		cc_history_free(&fh);
	free(dump.items);
	free(alloc.items);
	free(reach.items);
	free(lost.items);
	free(v.texts.items);
	return 0;
}
