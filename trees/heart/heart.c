/*
 * heart.c -- Heart's operations: lock-free insert, update, delete and split,
 * lock-free lookup, Perceivable Transformation, ordered scans
 *
 * Ordering under eADR
 * -------------------
 * Heart issues no flush: on an eADR machine a store is durable once it
 * leaves the store buffer, so a crash keeps a prefix of each thread's
 * stores.  Every change becomes visible, and durable, through one CAS on a
 * context (a locked RMW: a full barrier), and every object that CAS
 * publishes (a leaf, a split's new parent, a transformation's new node) is
 * written completely before it, in program order.  The CAS's seq_cst
 * ordering keeps the compiler from sinking those stores below it, and the
 * processor's locked instruction keeps the store buffer from doing so; a
 * crash therefore never exposes a half-written object.  The same barrier is
 * what makes a concurrent reader that sees the context see the object.
 *
 * Traversal
 * ---------
 * An operation starts at the root context (in the pool's root area) with
 * key position 0.  In a node reached through context PC it looks up the
 * child for the key byte at the current position (or the END slot if the
 * key ends here) inside one bucket; an internal child with prefix length p
 * moves the position on by 1 + p.  Before going down it re-reads PC
 * (Perceivable Transformation): a changed context sends it back to the root,
 * and an odd version anywhere (a transformation in progress) makes it yield
 * and start again.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heart_internal.h"
#include "pm_alloc.h"

#define EQUAL 255u   /* mismatch(): the keys are equal */

/* bad_kv -- non-zero if the lengths are out of range (internal) */
static int bad_kv(size_t klen, size_t vlen)
{
	return klen < 1 || klen > HEART_KEY_MAX || vlen < 1 || vlen > HEART_VAL_MAX;
}

/* mismatch -- first position where A and B differ or one ends; EQUAL if equal (internal) */
static unsigned mismatch(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return (unsigned)i;
	return alen == blen ? EQUAL : (unsigned)n;
}

/* leaf_fill -- write key and value into a fresh leaf (internal) */
static void leaf_fill(struct heart_leaf *l, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	l->klen = (uint8_t)klen;
	l->vlen = (uint8_t)vlen;
	memcpy(l->key, key, klen);
	memcpy(l->val, val, vlen);
}

/* leaf_new -- a leaf holding KEY and VAL, not yet published (NULL: pool full) (internal) */
static struct heart_leaf *leaf_new(const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	struct heart_leaf *l = heart_alloc(sizeof(*l));
	if (!l)
		return NULL;
#ifndef BUG_HEART_LEAF_PUBLISH_EARLY
	leaf_fill(l, key, klen, val, vlen);
#else
	(void)key, (void)klen, (void)val, (void)vlen;
#endif
	return l;
}

/*
 * leaf_published -- after the CAS that published L (internal).  Correct
 * Heart has nothing left to do: the leaf was complete before the CAS.
 */
static void leaf_published(struct heart_leaf *l, const uint8_t *key, size_t klen,
			   const uint8_t *val, size_t vlen)
{
#ifdef BUG_HEART_LEAF_PUBLISH_EARLY
	/* BUG_HEART_LEAF_PUBLISH_EARLY: the leaf is written after its context
	 * was CASed into the tree: a crash in between (eADR keeps the CAS but
	 * not the later stores) leaves a reachable leaf with no key */
	leaf_fill(l, key, klen, val, vlen);
#else
	(void)l, (void)key, (void)klen, (void)val, (void)vlen;
#endif
}

/* leaf_ctx -- the context of leaf L under key byte B */
static hctx leaf_ctx(const struct heart_leaf *l, unsigned b, size_t klen)
{
	return ctx_make(T_LEAF, 0, b, l, (unsigned)klen);
}

/*
 * find -- the child of NODE (type T) for KEY at position IDX (internal).
 * Returns its context and sets *SLOT, or returns 0 and sets *FREE to the
 * slot an insert would take (the END slot if the key ends here, else the
 * first zero slot of the bucket), NULL when there is none.
 */
static hctx find(hctx *node, unsigned t, const uint8_t *key, size_t klen, size_t idx,
		 hctx **slot, hctx **free)
{
	*free = NULL;
	if (idx == klen) {
		hctx *s = &node[nslots(t)];
		hctx c = ctx_load(s);
		*slot = s;
		if (CTX_TYPE(c) == T_LEAF)
			return c;
		if (c == 0)
			*free = s;
		return 0;
	}
	unsigned b = key[idx], pb = per_bucket(t);
	hctx *base = node + (size_t)bucket_of(t, b) * pb;
	for (unsigned i = 0; i < pb; i++) {
		hctx c = ctx_load(&base[i]);
		if (CTX_LIVE(c) && CTX_BYTE(c) == b) {
			*slot = &base[i];
			return c;
		}
		if (c == 0 && !*free)
			*free = &base[i];
	}
	return 0;
}

/* place -- put child context C (key byte B, or the END slot if END) into a private node (internal) */
static int place(hctx *node, unsigned t, hctx c, unsigned b, int end)
{
	if (end) {
		node[nslots(t)] = c;
		return 0;
	}
	unsigned pb = per_bucket(t);
	hctx *base = node + (size_t)bucket_of(t, b) * pb;
	for (unsigned i = 0; i < pb; i++)
		if (base[i] == 0) {
			base[i] = c;
			return 0;
		}
	return -1;
}

/* first_leaf -- any leaf below the internal context C, NULL if the subtree is empty (internal) */
static struct heart_leaf *first_leaf(hctx c)
{
	while (CTX_INNER(c)) {
		hctx *node = CTX_PTR(c);
		unsigned n = nslots(CTX_TYPE(c));
		hctx next = 0;
		for (unsigned i = 0; i <= n && !next; i++) {
			hctx k = ctx_load(&node[n - i]);   /* the END slot first */
			if (CTX_LIVE(k))
				next = k;
		}
		if (!next)
			return NULL;
		c = next;
	}
	return CTX_PTR(c);
}

/* count_live -- live children of NODE (type T) (internal) */
static unsigned count_live(hctx *node, unsigned t)
{
	unsigned n = 0;
	for (unsigned i = 0; i <= nslots(t); i++)
		n += CTX_LIVE(ctx_load(&node[i])) != 0;
	return n;
}

/*
 * transform -- Perceivable Transformation of the node whose context PC sits
 * at PSLOT (internal): rebuild it as the smallest type >= FROM that holds
 * its live children with room for key byte WANT (-1: none needed), or
 * unlink it (tombstone) if it has no children and is not the root.  Does
 * nothing if PC is no longer at PSLOT; the caller restarts either way.
 */
static void transform(hctx *pslot, hctx pc, unsigned from, int want, int is_root)
{
	unsigned t = CTX_TYPE(pc), v = CTX_VER(pc);
	hctx *node = CTX_PTR(pc);
#ifndef BUG_HEART_GROW_NO_VERSION
	/* before: the version goes odd, so every thread perceives the transformation */
	hctx busy = ctx_with_ver(pc, v + 1);
	if (!ctx_cas(pslot, pc, busy))
		return;
	/* freeze every slot (odd version): a writer's CAS on it now fails */
	for (unsigned i = 0; i <= nslots(t); i++) {
		for (;;) {
			hctx c = ctx_load(&node[i]);
			if (CTX_FROZEN(c)) {
				/* a child in its own transformation: wait for it to publish */
				sched_yield();
				continue;
			}
			if (ctx_cas(&node[i], c, ctx_with_ver(c, CTX_VER(c) + 1)))
				break;
		}
	}
#else
	/* BUG_HEART_GROW_NO_VERSION: the node is copied with no version bump and
	 * no freeze; a writer that CASes into the old node after the copy is
	 * lost when the copy is published (needs two threads) */
	hctx busy = pc;
	(void)v;
#endif
	hctx kids[257];
	int kend[257];
	unsigned n = 0;
	for (unsigned i = 0; i <= nslots(t); i++) {
		hctx c = ctx_load(&node[i]);
		if (CTX_LIVE(c)) {
			kend[n] = i == nslots(t);
			kids[n++] = ctx_with_ver(c, CTX_VER(c) & ~1u);   /* as it was before the freeze */
		}
	}
	hctx repl;
	if (n == 0 && !is_root) {
		repl = T_TOMB;
	} else {
		hctx *nn = NULL;
		unsigned nt;
		for (nt = from; nt <= T_N256; nt++) {
			nn = heart_alloc(node_bytes(nt));
			if (!nn)
				break;
			int ok = 1;
			for (unsigned i = 0; i < n && ok; i++)
				ok = place(nn, nt, kids[i], CTX_BYTE(kids[i]), kend[i]) == 0;
			if (ok && want >= 0) {
				hctx *f, *s;
				uint8_t b = (uint8_t)want;
				ok = find(nn, nt, &b, 1, 0, &s, &f) == 0 && f != NULL;
			}
			if (ok)
				break;
			heart_free(nn);
			nn = NULL;
		}
		if (!nn) {
			/* pool exhausted: unfreeze by publishing the old node again */
			for (unsigned i = 0; i <= nslots(t); i++) {
				hctx c = ctx_load(&node[i]);
				__atomic_store_n(&node[i], ctx_with_ver(c, CTX_VER(c) & ~1u), __ATOMIC_RELEASE);
			}
			ctx_cas(pslot, busy, ctx_with_ver(pc, v + 2));
			return;
		}
		/* after: the new node (complete, written above) and the even version in one CAS */
		repl = ctx_make(nt, v + 2, CTX_BYTE(pc), nn, CTX_PLEN(pc));
	}
	if (!ctx_cas(pslot, busy, repl)) {
#ifdef BUG_HEART_GROW_NO_VERSION
		if (CTX_INNER(repl))
			heart_free(CTX_PTR(repl));
		return;
#else
		fprintf(stderr, "heart: transformed node's context changed while it was odd\n");
		abort();
#endif
	}
	epoch_retire(node);
}

/* transform_grow -- room for key byte WANT in the node of PC at PSLOT (internal) */
static void transform_grow(hctx *pslot, hctx pc, int want, int is_root)
{
	transform(pslot, pc, CTX_TYPE(pc), want, is_root);
}

/* split -- a new N8 at position M holding OLD (key byte OB or END) and the leaf NL (internal) */
static hctx *split_node(hctx old, unsigned ob, int old_end, hctx nlc, unsigned nb, int nl_end)
{
	hctx *p = heart_alloc(node_bytes(T_N8));
	if (!p)
		return NULL;
#ifndef BUG_HEART_SPLIT_PUBLISH_EARLY
	place(p, T_N8, old, ob, old_end);
	place(p, T_N8, nlc, nb, nl_end);
#else
	(void)old, (void)ob, (void)old_end, (void)nlc, (void)nb, (void)nl_end;
#endif
	return p;
}

/* split_published -- after the CAS that published a split's parent P (internal) */
static void split_published(hctx *p, hctx old, unsigned ob, int old_end, hctx nlc, unsigned nb, int nl_end)
{
#ifdef BUG_HEART_SPLIT_PUBLISH_EARLY
	/* BUG_HEART_SPLIT_PUBLISH_EARLY: the new parent is published empty and
	 * filled afterwards: a crash in between exposes a parent without the
	 * old child (its keys vanish) */
	place(p, T_N8, old, ob, old_end);
	place(p, T_N8, nlc, nb, nl_end);
#else
	(void)p, (void)old, (void)ob, (void)old_end, (void)nlc, (void)nb, (void)nl_end;
#endif
}

/*
 * Insert, in named steps.  One attempt descends from the root context
 * (insert_attempt); at each node it either commits the new leaf into a free
 * slot (insert_commit), splits a leaf that shares a prefix with the key
 * (insert_split_leaf), splits a node whose compressed prefix the key leaves
 * (insert_split_prefix), grows a node whose bucket is full, or goes down a
 * level.  Whatever saw a change under it (a failed CAS, a frozen context, a
 * node that changed while we were in it: Perceivable Transformation) ends
 * the attempt with INS_RESTART and the next one starts at the root again.
 * The new leaf is allocated once, on first need, and reused by every
 * attempt until it is published.
 */
enum { INS_DESCEND, INS_RESTART, INS_DONE };

/* One insert in progress: its key and value, the leaf, what it returns. */
struct ins {
	const uint8_t *key, *val;
	size_t klen, vlen;
	struct heart_leaf *nl;   /* the new leaf, not yet published (NULL: not allocated yet) */
	int ret;                 /* heart_insert's answer, once INS_DONE */
};

/* ins_done -- end the insert with RET (internal) */
static int ins_done(struct ins *in, int ret)
{
	in->ret = ret;
	return INS_DONE;
}

/* ins_leaf -- the new leaf, allocated on first need; 0 when the pool is full (internal) */
static int ins_leaf(struct ins *in)
{
	return in->nl || (in->nl = leaf_new(in->key, in->klen, in->val, in->vlen)) != NULL;
}

/* ins_published -- the new leaf is in the tree: it is no longer ours to free (internal) */
static int ins_published(struct ins *in)
{
	leaf_published(in->nl, in->key, in->klen, in->val, in->vlen);
	in->nl = NULL;
	return ins_done(in, CC_OK);
}

/*
 * insert_commit -- the key's slot at position IDX is free (FR): publish the
 * new leaf there (internal)
 */
static int insert_commit(struct ins *in, hctx *fr, size_t idx)
{
	if (!ins_leaf(in))
		return ins_done(in, CC_NOSPACE);
	unsigned b = idx < in->klen ? in->key[idx] : 0;
#ifndef BUG_HEART_COMMIT_PLAIN_STORE
	/* commit: the leaf is complete (program order, eADR), one CAS publishes it */
	if (!ctx_cas(fr, 0, leaf_ctx(in->nl, b, in->klen)))
		return INS_RESTART;
#else
	/* BUG_HEART_COMMIT_PLAIN_STORE: the empty slot seen above is
	 * taken by a plain store: two inserters that saw it empty
	 * both "succeed", the second overwriting the first (needs two
	 * threads) */
	__atomic_store_n(fr, leaf_ctx(in->nl, b, in->klen), __ATOMIC_RELEASE);
#endif
	return ins_published(in);
}

/*
 * insert_split_leaf -- the key's slot at position IDX (SLOT) holds the leaf
 * context C of another key: a new N8 at the first position M where the
 * keys differ takes both leaves, published by one CAS on SLOT (internal)
 */
static int insert_split_leaf(struct ins *in, hctx *slot, hctx c, size_t idx)
{
	const uint8_t *key = in->key;
	size_t klen = in->klen;
	struct heart_leaf *l = CTX_PTR(c);
	unsigned m = mismatch(key, klen, l->key, l->klen);
	if (m == EQUAL)
		return ins_done(in, CC_EXISTS);
	if (m <= idx || m - idx - 1 > 63) {
		fprintf(stderr, "heart: leaf split at %u below position %zu\n", m, idx);
		return ins_done(in, CC_ERROR);
	}
	if (!ins_leaf(in))
		return ins_done(in, CC_NOSPACE);
	/* leaf split: a new N8 at position m holds the old leaf and the new one */
	int oe = l->klen == m, ne = klen == m;
	hctx nlc = leaf_ctx(in->nl, ne ? 0 : key[m], klen);
	hctx old = ctx_with_byte(c, oe ? 0 : l->key[m]);
	hctx *p = split_node(old, CTX_BYTE(old), oe, nlc, CTX_BYTE(nlc), ne);
	if (!p)
		return ins_done(in, CC_NOSPACE);
	/* publish the complete parent by one CAS (eADR: its stores precede it) */
#ifndef BUG_HEART_SPLIT_PLEN
	unsigned pplen = m - (unsigned)idx - 1;
#else
	/* BUG_HEART_SPLIT_PLEN: the new parent's prefix length counts the
	 * key byte at position idx too (m - idx): the parent then indexes
	 * position m + 1 while its children sit under their bytes at m */
	unsigned pplen = m - (unsigned)idx;
#endif
#ifndef BUG_HEART_SPLIT_PLAIN_STORE
	if (!ctx_cas(slot, c, ctx_make(T_N8, 0, key[idx], p, pplen))) {
		heart_free(p);
		return INS_RESTART;
	}
#else
	/* BUG_HEART_SPLIT_PLAIN_STORE: the complete parent is published
	 * by a plain store over the leaf's context read above: an
	 * update or delete of that leaf that committed in between (its
	 * CAS saw the old context) is overwritten with the old leaf
	 * (needs threads) */
	__atomic_store_n(slot, ctx_make(T_N8, 0, key[idx], p, pplen), __ATOMIC_RELEASE);
#endif
	split_published(p, old, CTX_BYTE(old), oe, nlc, CTX_BYTE(nlc), ne);
	return ins_published(in);
}

/*
 * insert_split_prefix -- the internal child C at SLOT (reached by the key
 * byte at IDX) compresses the key positions up to *END; check them against
 * a leaf below it (optimistic path compression).  The key follows them:
 * INS_DESCEND, with *END the position C indexes.  It leaves them at M: a
 * new N8 at M takes the rest of C's prefix and the new leaf, published by
 * one CAS on SLOT (node split).  C has no leaf left: it is unlinked and the
 * insert restarts (internal)
 */
static int insert_split_prefix(struct ins *in, hctx *slot, hctx c, size_t idx, size_t *endp)
{
	const uint8_t *key = in->key;
	size_t klen = in->klen;
	unsigned plen = CTX_PLEN(c);
	struct heart_leaf *r = first_leaf(c);
	if (!r) {
		/* a subtree a crash or a race left empty: unlink it, then retry */
		transform(slot, c, T_N8, -1, 0);
		return INS_RESTART;
	}
	size_t end = idx + 1 + plen, m = end;
	for (size_t j = idx + 1; j < end; j++)
		if (j >= klen || j >= r->klen || key[j] != r->key[j]) {
			m = j;
			break;
		}
	*endp = end;
	if (m == end)
		return INS_DESCEND;
	if (m >= r->klen) {
		fprintf(stderr, "heart: leaf shorter than its node's prefix\n");
		return ins_done(in, CC_ERROR);
	}
	if (!ins_leaf(in))
		return ins_done(in, CC_NOSPACE);
	/* node split: the new N8 at position m takes the mismatching part of the prefix */
	int ne = klen == m;
	hctx nlc = leaf_ctx(in->nl, ne ? 0 : key[m], klen);
	hctx old = ctx_with_plen(ctx_with_byte(c, r->key[m]), (unsigned)(end - m - 1));
	hctx *p = split_node(old, r->key[m], 0, nlc, CTX_BYTE(nlc), ne);
	if (!p)
		return ins_done(in, CC_NOSPACE);
	if (!ctx_cas(slot, c, ctx_make(T_N8, 0, key[idx], p, (unsigned)(m - idx - 1)))) {
		heart_free(p);
		return INS_RESTART;
	}
	split_published(p, old, r->key[m], 0, nlc, CTX_BYTE(nlc), ne);
	return ins_published(in);
}

/*
 * insert_attempt -- one descent from the root for IN: INS_DONE when the
 * insert ended (IN->ret), INS_RESTART when it must start again (internal)
 */
static int insert_attempt(struct heart *h, struct ins *in)
{
	hctx *pslot = &h->r->root;
	hctx pc = ctx_load(pslot);
	size_t idx = 0;
	for (;;) {
		if (CTX_FROZEN(pc)) {   /* the node is being transformed: wait, then start again */
			sched_yield();
			return INS_RESTART;
		}
		hctx *node = CTX_PTR(pc), *slot, *fr;
		unsigned t = CTX_TYPE(pc);
		int is_root = pslot == &h->r->root;
		hctx c = find(node, t, in->key, in->klen, idx, &slot, &fr);
		if (!c) {
			if (fr)
				return insert_commit(in, fr, idx);
			if (ctx_load(pslot) == pc)   /* not frozen: the bucket is full */
				transform_grow(pslot, pc, idx < in->klen ? in->key[idx] : -1, is_root);
			return INS_RESTART;
		}
		if (CTX_FROZEN(c)) {
			sched_yield();
			return INS_RESTART;
		}
		if (CTX_TYPE(c) == T_LEAF)
			return insert_split_leaf(in, slot, c, idx);
		size_t end;
		int st = insert_split_prefix(in, slot, c, idx, &end);
		if (st != INS_DESCEND)
			return st;
		/* Perceivable Transformation: our node must still be the one we entered */
		if (ctx_load(pslot) != pc)
			return INS_RESTART;
		pslot = slot;
		pc = c;
		idx = end;
	}
}

/* heart_insert -- add KEY with VAL unless present */
int heart_insert(struct heart *h, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	if (bad_kv(klen, vlen))
		return CC_ERROR;
	struct ins in = { key, val, klen, vlen, NULL, 0 };
	epoch_enter();
	while (insert_attempt(h, &in) == INS_RESTART)
		;
	if (in.nl)
		heart_free(in.nl);   /* never published: nobody can hold it */
	epoch_exit();
	return in.ret;
}

/*
 * locate -- find KEY's leaf (internal).  Returns its context and sets *SLOT
 * and *PA (the nodes down to the one holding it), or returns 0 if KEY is
 * absent.  The answer was true at the last re-check of the node's context.
 */
struct path {
	unsigned n;                        /* nodes on the path, the root first */
	hctx *pslot[HEART_KEY_MAX + 2];    /* where each node's context sits */
	hctx pc[HEART_KEY_MAX + 2];        /* the context as read */
};

static hctx locate(struct heart *h, const uint8_t *key, size_t klen, hctx **slotp, struct path *pa)
{
restart:;
	hctx *pslot = &h->r->root;
	hctx pc = ctx_load(pslot);
	size_t idx = 0;
	pa->n = 0;
	for (;;) {
		pa->pslot[pa->n] = pslot;
		pa->pc[pa->n++] = pc;
		if (CTX_FROZEN(pc)) {
			sched_yield();
			goto restart;
		}
		hctx *slot, *fr;
		hctx c = find(CTX_PTR(pc), CTX_TYPE(pc), key, klen, idx, &slot, &fr);
		hctx found = 0;
		int down = 0;
		if (c && CTX_TYPE(c) == T_LEAF) {
			const struct heart_leaf *l = CTX_PTR(c);
			if (CTX_PLEN(c) == klen && l->klen == klen && !memcmp(l->key, key, klen))
				found = c;
		} else if (c) {
			down = idx + 1 + CTX_PLEN(c) <= klen;
		}
		/* Perceivable Transformation: re-read the context after working in the node */
		if (ctx_load(pslot) != pc)
			goto restart;
		if (!down) {
			*slotp = slot;
			return found;
		}
		idx += 1 + CTX_PLEN(c);
		pslot = slot;
		pc = c;
	}
}

/* heart_lookup -- copy KEY's value to VAL */
int heart_lookup(struct heart *h, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen)
{
	if (klen < 1 || klen > HEART_KEY_MAX)
		return CC_NOTFOUND;
	hctx *slot;
	struct path pa;
	epoch_enter();
	hctx c = locate(h, key, klen, &slot, &pa);
	if (c) {
		const struct heart_leaf *l = CTX_PTR(c);
		*vlen = l->vlen;
		memcpy(val, l->val, l->vlen);
	}
	epoch_exit();
	return c ? CC_OK : CC_NOTFOUND;
}

/* heart_update -- replace KEY's value: a new leaf swapped in by one CAS */
int heart_update(struct heart *h, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	if (bad_kv(klen, vlen))
		return CC_ERROR;
	struct heart_leaf *nl = NULL;
	int ret;
	epoch_enter();
	for (;;) {
		hctx *slot;
		struct path pa;
		hctx c = locate(h, key, klen, &slot, &pa);
		if (!c) {
			ret = CC_NOTFOUND;
			break;
		}
		if (CTX_FROZEN(c)) {
			sched_yield();
			continue;
		}
#ifdef BUG_HEART_UPDATE_IN_PLACE
		/* BUG_HEART_UPDATE_IN_PLACE: a value of the old one's length is
		 * copied over it in place ("it fits") and drained by a full fence,
		 * with no new leaf and no CAS: the copy of a 16-byte value is two
		 * 8-byte pieces that persist in any order, so a crash inside it
		 * leaves a value torn between the old and the new one */
		if (((struct heart_leaf *)CTX_PTR(c))->vlen == vlen) {
			memcpy(((struct heart_leaf *)CTX_PTR(c))->val, val, vlen);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			ret = CC_OK;
			break;
		}
#endif
		if (!nl && !(nl = leaf_new(key, klen, val, vlen))) {
			ret = CC_NOSPACE;
			break;
		}
		/* commit: the new leaf is complete before the CAS (eADR program order) */
		if (!ctx_cas(slot, c, leaf_ctx(nl, CTX_BYTE(c), klen)))
			continue;
		leaf_published(nl, key, klen, val, vlen);
		nl = NULL;
#ifndef BUG_HEART_FREE_NO_EPOCH
		epoch_retire(CTX_PTR(c));
#else
		/* BUG_HEART_FREE_NO_EPOCH: the replaced leaf is freed at once, while
		 * a concurrent reader may still hold it (needs two threads) */
		heart_free(CTX_PTR(c));
#endif
		ret = CC_OK;
		break;
	}
	if (nl)
		heart_free(nl);
	epoch_exit();
	return ret;
}

/* heart_delete -- remove KEY: its slot becomes a tombstone by one CAS */
int heart_delete(struct heart *h, const uint8_t *key, size_t klen)
{
	if (klen < 1 || klen > HEART_KEY_MAX)
		return CC_NOTFOUND;
	int ret;
	epoch_enter();
	for (;;) {
		hctx *slot;
		struct path pa;
		hctx c = locate(h, key, klen, &slot, &pa);
		if (!c) {
			ret = CC_NOTFOUND;
			break;
		}
		if (CTX_FROZEN(c)) {
			sched_yield();
			continue;
		}
		hctx pc = pa.pc[pa.n - 1];
		hctx *node = CTX_PTR(pc);
		unsigned t = CTX_TYPE(pc);
		/* the END slot holds one leaf and nothing probes past it: it may go back to zero */
		hctx gone = slot == &node[nslots(t)] ? 0 : T_TOMB;
#ifdef BUG_HEART_DELETE_FREE_FIRST
		/* BUG_HEART_DELETE_FREE_FIRST: the leaf is freed before the CAS that
		 * unlinks it: a crash in between leaves a reachable leaf that the
		 * allocator counts free */
		heart_free(CTX_PTR(c));
#endif
		if (!ctx_cas(slot, c, gone))
			continue;
#ifndef BUG_HEART_DELETE_FREE_FIRST
#ifndef BUG_HEART_FREE_NO_EPOCH
		epoch_retire(CTX_PTR(c));
#else
		heart_free(CTX_PTR(c));   /* BUG_HEART_FREE_NO_EPOCH (see heart_update) */
#endif
#endif
		ret = CC_OK;
		/* shrink: unlink an empty node (and so on up the path), or move a
		 * sparse one to a smaller type; the delete is already committed */
		for (unsigned lv = pa.n; lv-- > 0;) {
			hctx *ps = pa.pslot[lv];
			hctx nc = ctx_load(ps);
			if (!CTX_INNER(nc) || CTX_PTR(nc) != CTX_PTR(pa.pc[lv]) || CTX_FROZEN(nc))
				break;
			unsigned live = count_live(CTX_PTR(nc), CTX_TYPE(nc));
			if (live == 0 && lv > 0) {
				transform(ps, nc, T_N8, -1, 0);
				continue;
			}
			if (CTX_TYPE(nc) > T_N8 && live <= nslots(CTX_TYPE(nc)) / 8)
				transform(ps, nc, T_N8, -1, lv == 0);
			break;
		}
		break;
	}
	epoch_exit();
	return ret;
}

/* ---- ordered traversal: scan and dump ---- */

struct scan_st {
	const uint8_t *from;
	size_t flen, left, seen;
	cc_kv_fn fn;
	void *ctx;
	int stop;
};

/* keycmp -- byte order, a proper prefix first (internal) */
static int keycmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int r = memcmp(a, b, alen < blen ? alen : blen);
	return r ? r : (alen > blen) - (alen < blen);
}

/* walk -- pass every leaf below C with key >= FROM to FN, in key order (internal) */
static void walk(hctx c, struct scan_st *s)
{
	if (s->stop || !CTX_LIVE(c))
		return;
	if (CTX_TYPE(c) == T_LEAF) {
		const struct heart_leaf *l = CTX_PTR(c);
		if (keycmp(l->key, l->klen, s->from, s->flen) < 0)
			return;
		s->seen++;
		if (s->fn(s->ctx, l->key, l->klen, l->val, l->vlen) || --s->left == 0)
			s->stop = 1;
		return;
	}
	hctx *node = CTX_PTR(c);
	unsigned n = nslots(CTX_TYPE(c));
	hctx by[256] = {0};
	walk(ctx_load(&node[n]), s);
	for (unsigned i = 0; i < n; i++) {
		hctx k = ctx_load(&node[i]);
		if (CTX_LIVE(k))
			by[CTX_BYTE(k)] = k;
	}
	for (unsigned b = 0; b < 256 && !s->stop; b++)
		walk(by[b], s);
}

/* heart_scan -- up to COUNT pairs with key >= KEY, in key order */
size_t heart_scan(struct heart *h, const uint8_t *key, size_t klen, size_t count, cc_kv_fn fn, void *ctx)
{
	struct scan_st s = {key, klen, count, 0, fn, ctx, count == 0};
	epoch_enter();
	walk(ctx_load(&h->r->root), &s);
	epoch_exit();
	return s.seen;
}

/* heart_dump -- every pair, in key order */
void heart_dump(struct heart *h, cc_kv_fn fn, void *ctx)
{
	heart_scan(h, (const uint8_t *)"", 0, SIZE_MAX, fn, ctx);
}

/* heart_create -- an empty N8 root, published by its context, then the magic */
struct heart *heart_create(void)
{
	struct heart *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->r = pm_root();
	hctx *root = heart_alloc(node_bytes(T_N8));
	if (!root) {
		fprintf(stderr, "heart: pool too small for the root node\n");
		free(h);
		return NULL;
	}
	__atomic_store_n(&h->r->root, ctx_make(T_N8, 0, 0, root, 0), __ATOMIC_SEQ_CST);
	__atomic_store_n(&h->r->magic, HEART_MAGIC, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return h;
}

/* heart_open -- attach to the pool's Heart (recover does the rest) */
struct heart *heart_open(void)
{
	struct heart *h = calloc(1, sizeof(*h));
	if (h)
		h->r = pm_root();
	return h;
}

/* heart_close -- free what is retired, drop the DRAM handle */
void heart_close(struct heart *h)
{
	epoch_drain();
	free(h);
}

/* heart_allocated -- every object the pool marks in use */
void heart_allocated(struct heart *h, cc_obj_fn fn, void *ctx)
{
	(void)h;
	pm_allocated(fn, ctx);
}
