/*
 * hart_check.c -- HART's invariants, reachable objects and allocated objects
 *
 * Invariants (after recovery, and after every completed operation):
 *   - the logs are empty (recycle log, allocation flag, every update log);
 *   - every chained chunk's header agrees with its bitmap (next-free index
 *     = lowest free slot or 56, full indicator = all 56 bits set);
 *   - no chained chunk is empty: EPRecycle returns a chunk to the pool once
 *     its last slot is freed (Algorithms 3, 5 and 6), and recovery recycles
 *     the ones a crash left behind;
 *   - every leaf whose bit is set has a key of 1..24 bytes, is found by a
 *     lookup of its key, and points at a value slot of the chain for its
 *     value length whose bit is set; no two leaves share a value;
 *   - every leaf in the DRAM trees has its bit set (so DRAM and PM agree);
 *   - no free leaf still names a value (recovery's repair cleared them).
 * Objects: allocated = every pm_alloc object (meta, chunks) plus every slot
 * whose bit is set; reachable = meta, chained chunks, valid leaves and their
 * values.  So the driver's "allocated minus reachable" is exactly the leaked
 * chunks and the value slots whose bit is set but no valid leaf names.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "hart_internal.h"

struct report {
	cc_violation_fn fn;
	void *ctx;
	size_t n;
};

/* say_at -- one violation, with the site of its check (internal) */
static void say_at(struct report *r, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void say_at(struct report *r, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cc_vviolation_at(r->fn, r->ctx, file, line, fmt, ap);
	va_end(ap);
	r->n++;
}
/* the check's own file:line names the rule it broke (trees/common/cc_tree.h CC_VIOLATION) */
#define say(r, ...) say_at((r), __FILE__, __LINE__, __VA_ARGS__)

/* ptr_cmp -- address order (internal) */
static int ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return (x > y) - (x < y);
}

struct dram_ctx {
	struct report *r;
	struct hart *t;
};

/* dram_leaf -- a leaf of the DRAM trees must have its bit set (internal) */
static void dram_leaf(void *ctx, struct hart_leaf *l)
{
	struct dram_ctx *d = ctx;
	if (!ep_bit(d->t, l))
		say(d->r, "leaf %p is in the DRAM tree but its bit is clear", (void *)l);
}

/* hart_check -- report every broken invariant; returns how many */
size_t hart_check(struct hart *t, cc_violation_fn fn, void *ctx)
{
	struct report rep = {fn, ctx, 0}, *r = &rep;
	struct dram_ctx dc = {r, t};
	struct hart_meta *m = t->meta;
	if (m->pcurrent || m->pprev)
		say(r, "recycle log not empty (PCurrent %p, PPrev %p)",
		    (void *)m->pcurrent, (void *)m->pprev);
	if (m->alog)
		say(r, "chunk allocation flag still set");
	for (int i = 0; i < HART_ULOGS; i++)
		if (m->ulog[i].pleaf || m->ulog[i].poldv || m->ulog[i].pnewv)
			say(r, "update log %d not empty", i);

	uintptr_t *vals = NULL;
	size_t nvals = 0, nvalid = 0;
	for (size_t i = 0; i < t->nidx; i++) {
		struct ep_chunk *c = t->idx[i].c;
		int ch = t->idx[i].chain;
		uint64_t h = load8(&c->hdr);
		if (h != hdr_make(hdr_bitmap(h)))
			say(r, "chunk %p: header %#llx disagrees with its bitmap (next free %u, full %u)",
			    (void *)c, (unsigned long long)h, hdr_next_free(h), hdr_full(h));
		if (!hdr_bitmap(h) && !t->idx[i].reserved)
			say(r, "chunk %p (chain %d, %zu-byte slots) has no used slot but is still chained",
			    (void *)c, ch, slot_size[ch]);
		if (ch != CH_LEAF)
			continue;
		if (!vals && !(vals = malloc(HART_SLOTS * t->nidx * sizeof(*vals))))
			abort();
		for (unsigned s = 0; s < HART_SLOTS; s++) {
			struct hart_leaf *l = (struct hart_leaf *)(c->slots + s * sizeof(*l));
			uint64_t pv = load8(&l->pval);
			if (!(h >> s & 1)) {
				if (pv)
					say(r, "free leaf %p still points at value %p", (void *)l, pval_addr(pv));
				continue;
			}
			nvalid++;
			if (l->klen < 1 || l->klen > HART_KEY_MAX) {
				say(r, "leaf %p has its bit set but a key of %llu bytes",
				    (void *)l, (unsigned long long)l->klen);
				continue;
			}
			struct hart_art *a = ht_find(t, l->key, l->klen, 0);
			if (!a || art_search(a, l->key, l->klen) != l)
				say(r, "leaf %p has its bit set but a lookup of its key does not reach it", (void *)l);
			unsigned vs;
			void *v = pval_addr(pv);
			struct ep_info *ve = ep_find(t, v, &vs);
			size_t vlen = pval_len(pv);
			if (!ve || ve->chain == CH_LEAF || vlen < 1 || vlen > HART_VAL_MAX ||
			    ve->chain != val_chain(vlen))
				say(r, "leaf %p: value pointer %#llx names no value slot of its size",
				    (void *)l, (unsigned long long)pv);
			else if (!(load8(&ve->c->hdr) >> vs & 1))
				say(r, "leaf %p points at value %p whose bit is clear", (void *)l, v);
			vals[nvals++] = (uintptr_t)v;
		}
	}
	qsort(vals, nvals, sizeof(*vals), ptr_cmp);
	for (size_t i = 1; i < nvals; i++)
		if (vals[i] == vals[i - 1])
			say(r, "value %p is shared by two leaves", (void *)vals[i]);
	free(vals);

	size_t ndram = 0;
	for (size_t i = 0; i < t->nbuckets; i++)
		for (struct hart_art *a = t->buckets[i]; a; a = a->next) {
			art_each(a, dram_leaf, &dc);
			ndram += a->n;
		}
	if (ndram != nvalid)
		say(r, "%zu leaves have their bit set but the DRAM trees hold %zu", nvalid, ndram);
	return r->n;
}

/* hart_reachable -- meta, chained chunks, valid leaves and their values */
void hart_reachable(struct hart *t, cc_obj_fn fn, void *ctx)
{
	fn(ctx, t->meta, sizeof(*t->meta));
	for (size_t i = 0; i < t->nidx; i++) {
		struct ep_chunk *c = t->idx[i].c;
		fn(ctx, c, chunk_bytes(t->idx[i].chain));
		if (t->idx[i].chain != CH_LEAF)
			continue;
		uint64_t bm = hdr_bitmap(load8(&c->hdr));
		for (unsigned s = 0; s < HART_SLOTS; s++) {
			if (!(bm >> s & 1))
				continue;
			struct hart_leaf *l = (struct hart_leaf *)(c->slots + s * sizeof(*l));
			fn(ctx, l, sizeof(*l));
			unsigned vs;
			struct ep_info *ve = ep_find(t, pval_addr(load8(&l->pval)), &vs);
			if (ve && ve->chain != CH_LEAF)
				fn(ctx, pval_addr(load8(&l->pval)), slot_size[ve->chain]);
		}
	}
}

/* hart_allocated -- pm_alloc objects plus every slot whose bit is set */
void hart_allocated(struct hart *t, cc_obj_fn fn, void *ctx)
{
	pm_allocated(fn, ctx);
	for (size_t i = 0; i < t->nidx; i++) {
		struct ep_chunk *c = t->idx[i].c;
		size_t sz = slot_size[t->idx[i].chain];
		uint64_t bm = hdr_bitmap(load8(&c->hdr));
		for (unsigned s = 0; s < HART_SLOTS; s++)
			if (bm >> s & 1)
				fn(ctx, c->slots + s * sz, sz);
	}
}
