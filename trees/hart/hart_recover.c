/*
 * hart_recover.c -- HART recovery: the logs of Algorithms 3 and 6, then Algorithm 7
 *
 * Steps, each idempotent (a crash inside recovery and a second run give the
 * same result; every step only ever moves the image forward and clears its
 * log last):
 *   1. recycle log (Algorithm 6): if PCurrent names a chunk that is still
 *      allocated, unlink it if some chain still holds it (the paper's
 *      "resume from line 6 / line 10", found by walking the chains rather
 *      than trusting PPrev, which may not have been written yet), free it
 *      (line 11), then clear PCurrent and PPrev.
 *   2. the DRAM chunk index is rebuilt from the chains.
 *   3. chunk allocation in flight (meta.alog): every pm_alloc object that is
 *      neither the meta object nor a chained chunk is an orphan EPMalloc
 *      allocated but never linked; it is freed.
 *   4. update logs (Algorithm 3): PNewV set: resume from line 7 (set the
 *      new value's bit, swing the leaf, reset the old value's bit); PNewV
 *      not set: the new value never got its bit, the old one is intact, the
 *      log is dropped.  Then the log is reclaimed and the old chunk recycled.
 *   5. Algorithm 7: every leaf whose bit is set goes into its ART (the hash
 *      table is rebuilt on the way); every free leaf gets Algorithm 2's
 *      repair (lines 12-16), so no value survives whose leaf never committed.
 *   6. every chained chunk with no used slot is recycled (Algorithm 6, with
 *      its log, so a crash here is step 1's next time).  Not in the paper:
 *      a crash between resetting a slot's bit and EPRecycle (Algorithm 3
 *      lines 9-10, Algorithm 5 lines 11-14, or a chunk EPMalloc chained for
 *      an insert that never committed) leaves an empty chunk chained, which
 *      the paper's recovery keeps forever; this keeps "no chained chunk is
 *      empty" true after every recovery, as it is after every operation.
 */
#include <stdio.h>
#include <stdlib.h>
#include "hart_internal.h"

/* recover_recycle -- step 1 (internal) */
static void recover_recycle(struct hart *t)
{
	struct hart_meta *m = t->meta;
	struct ep_chunk *c = m->pcurrent;
	if (c && pm_contains(c) && pm_object_size(c) >= chunk_bytes(CH_VAL8)) {
#ifndef BUG_HART_RECYCLE_RESUME_FREE
		struct ep_chunk *prev;
		int ch = ep_chain_of(t, c, &prev);
		if (ch >= 0 && !prev) {                 /* PCurrent == PHead: line 6 */
			store8(&m->head[ch], (uintptr_t)c->next);
			persistent(&m->head[ch], 8);
		} else if (ch >= 0) {                   /* lines 8-10 */
			store8(&m->pprev, (uintptr_t)prev);
			persistent(&m->pprev, 8);
			store8(&prev->next, (uintptr_t)c->next);
			persistent(&prev->next, 8);
		}
#else
		/* BUG_HART_RECYCLE_RESUME_FREE: every logged recycle resumes at
		 * line 11, even when the chunk is still chained (the crash came
		 * before line 6 or 10): the chain keeps a freed chunk */
#endif
		pm_free(c);                             /* line 11 */
	}
	if (m->pcurrent || m->pprev) {                  /* line 12 */
		store8(&m->pcurrent, 0);
		store8(&m->pprev, 0);
		persistent(&m->pprev, 16);
	}
}

struct objs {
	void **p;
	size_t n, cap;
};

/* add_obj -- collect one pm_alloc object (internal) */
static void add_obj(void *ctx, const void *obj, size_t size)
{
	struct objs *o = ctx;
	(void)size;
	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 64;
		void **p = realloc(o->p, cap * sizeof(*p));
		if (!p)
			abort();
		o->p = p, o->cap = cap;
	}
	o->p[o->n++] = (void *)obj;
}

/* recover_alloc -- step 3 (internal) */
static void recover_alloc(struct hart *t)
{
	struct hart_meta *m = t->meta;
	if (!m->alog)
		return;
	struct objs o = {0};
	pm_allocated(add_obj, &o);
	for (size_t i = 0; i < o.n; i++) {
		unsigned s;
		struct ep_info *e = ep_find(t, ((struct ep_chunk *)o.p[i])->slots, &s);
		if (o.p[i] != (void *)m && !(e && (void *)e->c == o.p[i]))
			pm_free(o.p[i]);
	}
	free(o.p);
	store8(&m->alog, 0);
	persistent(&m->alog, 8);
}

/* recover_update -- step 4 for log U (internal) */
static void recover_update(struct hart *t, struct hart_ulog *u)
{
	unsigned s;
	struct hart_leaf *l = (struct hart_leaf *)(uintptr_t)u->pleaf;
	struct ep_info *le = ep_find(t, l, &s);
	struct ep_chunk *oldc = NULL;
	if (u->pleaf && u->poldv && u->pnewv && le && le->chain == CH_LEAF) {
		void *nv = pval_addr(u->pnewv), *ov = pval_addr(u->poldv);
		struct ep_info *ne = ep_find(t, nv, &s);
		if (ne && ne->chain != CH_LEAF) {
#ifndef BUG_HART_ULOG_RESUME_8
			ep_set_bit(t, nv, 1);                   /* line 7 */
#else
			/* BUG_HART_ULOG_RESUME_8: resumes at line 8, so a crash
			 * before line 7 leaves the leaf on a value whose bit is clear */
#endif
			store8(&l->pval, u->pnewv);             /* line 8 */
			persistent(&l->pval, 8);
			struct ep_info *oe = ep_find(t, ov, &s);
			if (oe && oe->chain != CH_LEAF && ov != nv) {
				ep_set_bit(t, ov, 0);           /* line 9 */
				oldc = oe->c;
			}
		}
	}
	/* line 11 (PNewV, POldV, PLeaf in that order: see ulog_reclaim) */
	store8(&u->pnewv, 0);
	store8(&u->poldv, 0);
	store8(&u->pleaf, 0);
	persistent(u, 24);
	if (oldc)
		ep_recycle(t, oldc);                            /* line 10 */
}

/* is_leaf_chunk, is_empty_chunk -- selectors for chunk_snapshot (internal) */
static int is_leaf_chunk(const struct ep_info *e) { return e->chain == CH_LEAF; }
static int is_empty_chunk(const struct ep_info *e) { return !hdr_bitmap(load8(&e->c->hdr)); }

/*
 * chunk_snapshot -- the indexed chunks KEEP selects, N in *N (NULL if out of
 * memory): steps 5 and 6 recycle chunks, which edits the index they walk
 * (internal)
 */
static struct ep_chunk **chunk_snapshot(struct hart *t, int (*keep)(const struct ep_info *), size_t *n)
{
	struct ep_chunk **v = malloc((t->nidx + 1) * sizeof(*v));
	if (!v)
		return NULL;
	*n = 0;
	for (size_t i = 0; i < t->nidx; i++)
		if (keep(&t->idx[i]))
			v[(*n)++] = t->idx[i].c;
	return v;
}

/* recycle_empty -- step 6 (internal) */
static int recycle_empty(struct hart *t)
{
	size_t n;
	struct ep_chunk **v = chunk_snapshot(t, is_empty_chunk, &n);
	if (!v)
		return -1;
#ifdef BUG_HART_RECOVER_KEEPS_EMPTY
	/* BUG_HART_RECOVER_KEEPS_EMPTY: the paper's recovery, which has no
	 * step 6: a chunk emptied just before a crash stays chained forever */
	n = 0;
#endif
	for (size_t i = 0; i < n; i++)
		ep_recycle(t, v[i]);
	free(v);
	return 0;
}

/* hart_recover -- the steps above, then the DRAM side is complete */
int hart_recover(struct hart *t)
{
	ht_free(t);
	recover_recycle(t);                                             /* step 1 */
	if (ep_index_build(t))                                          /* step 2 */
		return -1;
	recover_alloc(t);                                               /* step 3 */
	for (int i = 0; i < HART_ULOGS; i++)                            /* step 4 */
		if (t->meta->ulog[i].pleaf || t->meta->ulog[i].poldv || t->meta->ulog[i].pnewv)
			recover_update(t, &t->meta->ulog[i]);
	size_t n;
	struct ep_chunk **lc = chunk_snapshot(t, is_leaf_chunk, &n);    /* step 5 */
	if (!lc)
		return -1;
	for (size_t i = 0; i < n; i++) {                                /* Algorithm 7 lines 2-6 */
		uint64_t bm = hdr_bitmap(load8(&lc[i]->hdr));
		for (unsigned s = 0; s < HART_SLOTS; s++) {
			struct hart_leaf *l = (struct hart_leaf *)(lc[i]->slots + s * sizeof(struct hart_leaf));
			if (!(bm >> s & 1)) {
				ep_repair_leaf(t, l);
				continue;
			}
			if (l->klen < 1 || l->klen > HART_KEY_MAX)
				continue; /* hart_check reports it */
			struct hart_art *a = ht_find(t, l->key, l->klen, 1);
			if (!a) {
				free(lc);
				return -1;
			}
			if (!art_search(a, l->key, l->klen) && art_insert(a, l)) {
				free(lc);
				return -1;
			}
		}
	}
	free(lc);
	return recycle_empty(t);                                        /* step 6 */
}
