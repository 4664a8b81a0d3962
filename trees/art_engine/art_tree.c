/*
 * art_tree.c -- the tree-level operations shared by WOART and ART+CoW (see art_nodes.h)
 *
 * Owns create/open, recovery (the eager pass of the header repair plus a
 * refusal of images no operation could walk), the operation skeletons
 * (insert, delete, update, lookup; each calls the tree's write policy,
 * struct art_ops, where WOART and ART+CoW differ), the ordered walks (scan,
 * dump) and the reachable-object walk.  Compiled into each tree that lists
 * trees/art_engine in its shared.txt (WOART and ART+CoW).
 *
 * Walkers never trust an image further than they must: every descent is
 * bounded by the key length (depth strictly grows), so a corrupt image can
 * make an answer wrong but cannot make a walk loop forever.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "art_nodes.h"
#include "persist.h"
#include "pm_alloc.h"

/* kv_ok -- (internal) only 8-byte keys and values are accepted */
static int
kv_ok(size_t klen, size_t vlen)
{
	return klen == ART_KEY_LEN && vlen == ART_VAL_LEN;
}

/* art_create -- format POOL and build an empty tree (root = an empty NODE4) */
void *
art_create(void *pool, size_t size, const struct art_ops *ops)
{
	if (pm_pool_format(pool, size) != 0)
		return NULL;
	struct art_root *r = pm_root();
	struct art_entries none = { .n = 0 };
	struct art_node *root = art_node_build(ops->n4, art_hdr_make(0, 0, NULL), &none);
	if (!root) {
		fprintf(stderr, "%s: pool too small for the root node\n", ops->name);
		return NULL;
	}
	persistent(root, art_node_size(ops->n4));
	r->root = root;
	persistent(&r->root, sizeof(r->root));
	r->magic = ops->magic;    /* last: an image with the magic has a root */
	persistent(&r->magic, sizeof(r->magic));
	return art_open(pool, size, ops);
}

/* art_open -- attach to a formatted pool holding this tree */
void *
art_open(void *pool, size_t size, const struct art_ops *ops)
{
	if (pm_pool_attach(pool, size) != 0)
		return NULL;
	struct art_root *r = pm_root();
	if (r->magic != ops->magic) {
		fprintf(stderr, "%s: pool holds no %s tree\n", ops->name, ops->name);
		return NULL;
	}
	struct art_tree *t = malloc(sizeof(*t));
	if (!t) {
		perror("malloc");
		return NULL;
	}
	t->root = r;
	t->ops = ops;
	return t;
}

/* valid_object -- (internal) non-zero if P starts an allocated object of at least SIZE bytes */
static int
valid_object(const void *p, size_t size)
{
	return p && pm_contains(p) && pm_object_size(p) >= size;
}

/*
 * recover_node -- (internal) eager pass of recovery over the subtree at P
 * reached at DEPTH: repair headers (WOART) and refuse what no operation
 * could handle (a pointer to no allocated object, an unknown node type).
 */
static int
recover_node(const struct art_tree *t, struct art_node *p, unsigned depth)
{
	if (ART_IS_LEAF(p)) {
		/* every operation reads the value through the leaf: both must exist */
		struct art_leaf *l = ART_LEAF(p);
		if (valid_object(l, sizeof(*l)) && valid_object(l->val, sizeof(*l->val)))
			return 0;
		fprintf(stderr, "%s: bad leaf %p at depth %u\n", t->ops->name, (void *)l, depth);
		return -1;
	}
	if (!valid_object(p, sizeof(struct art_node)) || !art_node_size(p->type) ||
	    !valid_object(p, art_node_size(p->type)) || depth >= ART_KEY_LEN) {
		fprintf(stderr, "%s: bad node %p at depth %u\n", t->ops->name, (void *)p, depth);
		return -1;
	}
	if (art_visit(t, p, depth) != 0) {
		fprintf(stderr, "%s: header of %p beyond repair\n", t->ops->name, (void *)p);
		return -1;
	}
	struct art_entries e;
	art_children(p, &e);
	unsigned d = depth + p->hdr.f.plen + 1;
	for (unsigned i = 0; i < e.n; i++)
		if (e.child[i] && recover_node(t, e.child[i], d) != 0)
			return -1;
	return 0;
}

/*
 * art_recover -- crash recovery.  The thesis' trees need none beyond WOART's
 * lazy header repair; we run that repair eagerly over the whole tree so the
 * image is consistent (and checkable) the moment recovery returns.  Nothing
 * allocated-but-unlinked is reclaimed: those leaks are the thesis' own.
 */
int
art_recover(void *tp)
{
	struct art_tree *t = tp;
	struct art_node *root = t->root->root;
	if (!root || ART_IS_LEAF(root)) {
		fprintf(stderr, "%s: no root node\n", t->ops->name);
		return -1;
	}
	return recover_node(t, root, 0);
}

/*
 * art_find_leaf -- descend to KEY's leaf.  Returns the slot that points to
 * it, or NULL.  REPAIR: fix stale headers on the way (operations do; the
 * invariant check, which must not write, does not).
 */
struct art_node **
art_find_leaf(const struct art_tree *t, const uint8_t *key, int repair)
{
	struct art_node *n = t->root->root;
	unsigned depth = 0;
	while (n && !ART_IS_LEAF(n) && depth < ART_KEY_LEN) {
		if (repair && art_visit(t, n, depth) != 0)
			return NULL;
		if (art_prefix_mismatch(n, key, depth) < n->hdr.f.plen)
			return NULL;
		depth += n->hdr.f.plen;
		if (depth >= ART_KEY_LEN)
			return NULL;
		struct art_node **ref = art_find_child(n, key[depth]);
		if (!ref)
			return NULL;
		if (ART_IS_LEAF(*ref))
			return memcmp(ART_LEAF(*ref)->key, key, ART_KEY_LEN) == 0 ? ref : NULL;
		n = *ref;
		depth++;
	}
	return NULL;
}

/* art_lookup -- copy KEY's value to VAL */
int
art_lookup(void *tp, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen)
{
	if (klen != ART_KEY_LEN)
		return CC_ERROR;
	struct art_node **ref = art_find_leaf(tp, key, 1);
	if (!ref)
		return CC_NOTFOUND;
	memcpy(val, ART_LEAF(*ref)->val->bytes, ART_VAL_LEN);
	*vlen = ART_VAL_LEN;
	return CC_OK;
}

/*
 * art_update -- replace KEY's value out of place: a new persistent value
 * object, then one 8-byte swing of the leaf's value pointer, persisted,
 * then the old object is freed.
 */
int
art_update(void *tp, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	if (!kv_ok(klen, vlen))
		return CC_ERROR;
	struct art_node **ref = art_find_leaf(tp, key, 1);
	if (!ref)
		return CC_NOTFOUND;
	struct art_leaf *l = ART_LEAF(*ref);
	struct art_value *old = l->val;
#ifndef BUG_ART_UPDATE_NO_FENCE
	struct art_value *v = art_value_new(val);
	if (!v)
		return CC_NOSPACE;
#else
	/* BUG_ART_UPDATE_NO_FENCE: the new value is flushed but not fenced before
	 * the swing, so the swing may persist while the value does not. */
	struct art_value *v = art_value_alloc(val);
	if (!v)
		return CC_NOSPACE;
	cc_flush(v, sizeof(*v));
#endif
	l->val = v;
	persistent(&l->val, sizeof(l->val));
	pm_free(old);
	return CC_OK;
}

/*
 * expand_leaf -- (internal) lazy expansion: the slot REF holds leaf OLD whose
 * key differs from KEY; replace it by a new NODE4 (at DEPTH) holding both
 * leaves.  The node is built and persisted first, then published by the one
 * store to *REF (Section 3.2: the first pointer on the new path goes last).
 */
static int
expand_leaf(const struct art_tree *t, struct art_node **ref, unsigned depth,
	    const uint8_t *key, const uint8_t *val)
{
	const uint8_t *okey = ART_LEAF(*ref)->key;
	unsigned b = depth;
	while (b < ART_KEY_LEN && okey[b] == key[b])
		b++;
	if (b >= ART_KEY_LEN || b - depth > ART_MAX_PREFIX)
		return CC_ERROR;   /* equal keys are caught by the caller */
	struct art_node *leaf = art_leaf_new(key, val);
	if (!leaf)
		return CC_NOSPACE;
	struct art_entries e = { .n = 0 };
	art_entries_insert(&e, okey[b], *ref);
	art_entries_insert(&e, key[b], leaf);
	struct art_node *n = art_node_build(t->ops->n4, art_hdr_make(depth, b - depth, &key[depth]), &e);
	if (!n) {
		art_leaf_free(leaf);
		return CC_NOSPACE;
	}
	persistent(n, art_node_size(n->type));
	return art_replace(ref, NULL, n);
}

/* art_insert -- add KEY -> VAL; CC_EXISTS (and no change) if KEY is present */
int
art_insert(void *tp, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	struct art_tree *t = tp;
	if (!kv_ok(klen, vlen))
		return CC_ERROR;
	struct art_node **ref = &t->root->root;
	struct art_node *n = *ref;
	unsigned depth = 0;
	for (;;) {
		if (art_visit(t, n, depth) != 0)
			return CC_ERROR;
		unsigned plen = n->hdr.f.plen;
		unsigned m = art_prefix_mismatch(n, key, depth);
		if (m < plen) {
			struct art_node *leaf = art_leaf_new(key, val);
			if (!leaf)
				return CC_NOSPACE;
			int rc = t->ops->split(ref, n, m, leaf, key[depth + m]);
			if (rc != CC_OK)
				art_leaf_free(leaf);
			return rc;
		}
		depth += plen;
		if (depth >= ART_KEY_LEN)
			return CC_ERROR;   /* only a corrupt header gets here */
		struct art_node **cref = art_find_child(n, key[depth]);
		if (!cref) {
			struct art_node *leaf = art_leaf_new(key, val);
			if (!leaf)
				return CC_NOSPACE;
			int rc = t->ops->add(t, ref, n, key[depth], leaf);
			if (rc != CC_OK)
				art_leaf_free(leaf);
			return rc;
		}
		if (ART_IS_LEAF(*cref)) {
			if (memcmp(ART_LEAF(*cref)->key, key, ART_KEY_LEN) == 0)
				return CC_EXISTS;
			return expand_leaf(t, cref, depth + 1, key, val);
		}
		ref = cref;
		n = *cref;
		depth++;
	}
}

/* art_delete -- remove KEY; the tree's policy unlinks it, then the leaf is freed */
int
art_delete(void *tp, const uint8_t *key, size_t klen)
{
	struct art_tree *t = tp;
	if (klen != ART_KEY_LEN)
		return CC_ERROR;
	struct art_node **ref = &t->root->root;
	struct art_node *n = *ref;
	unsigned depth = 0;
	for (;;) {
		if (art_visit(t, n, depth) != 0)
			return CC_ERROR;
		if (art_prefix_mismatch(n, key, depth) < n->hdr.f.plen)
			return CC_NOTFOUND;
		depth += n->hdr.f.plen;
		if (depth >= ART_KEY_LEN)
			return CC_ERROR;
		struct art_node **cref = art_find_child(n, key[depth]);
		if (!cref)
			return CC_NOTFOUND;
		struct art_node *c = *cref;
		if (ART_IS_LEAF(c)) {
			if (memcmp(ART_LEAF(c)->key, key, ART_KEY_LEN) != 0)
				return CC_NOTFOUND;
			int rc = t->ops->remove(t, ref, n, ref == &t->root->root, key[depth]);
			if (rc == CC_OK)
				art_leaf_free(c);   /* unlinked and persistent: now free */
			return rc;
		}
		ref = cref;
		n = c;
		depth++;
	}
}

/* --- ordered walks: scan and dump --- */

struct scan_state {
	const struct art_tree *t;
	const uint8_t *from;   /* lower bound, NULL for none */
	size_t left;           /* pairs still wanted */
	size_t seen;
	cc_kv_fn fn;
	void *ctx;
	int stop;
};

/*
 * scan_node -- (internal) emit the pairs below P (reached at DEPTH) in key
 * order.  BOUNDED: P's keys agree with the lower bound so far, so entries
 * below it must still be compared; once a byte is greater, everything
 * below is in range and no comparison is needed.
 */
static void
scan_node(struct scan_state *s, struct art_node *p, unsigned depth, int bounded)
{
	if (s->stop || !p)
		return;
	if (ART_IS_LEAF(p)) {
		struct art_leaf *l = ART_LEAF(p);
		if (bounded && memcmp(l->key, s->from, ART_KEY_LEN) < 0)
			return;
		s->seen++;
		if (s->fn(s->ctx, l->key, ART_KEY_LEN, l->val->bytes, ART_VAL_LEN) || --s->left == 0)
			s->stop = 1;
		return;
	}
	if (depth >= ART_KEY_LEN || art_visit(s->t, p, depth) != 0)
		return;
	unsigned plen = p->hdr.f.plen;
	if (depth + plen >= ART_KEY_LEN)
		return;
	if (bounded) {
		int c = memcmp(p->hdr.f.prefix, s->from + depth, plen);
		if (c < 0)
			return;        /* the whole subtree sorts before the bound */
		if (c > 0)
			bounded = 0;
	}
	unsigned d = depth + plen;
	struct art_entries e;
	art_children(p, &e);
	for (unsigned i = 0; i < e.n && !s->stop; i++) {
		if (bounded && e.key[i] < s->from[d])
			continue;
		scan_node(s, e.child[i], d + 1, bounded && e.key[i] == s->from[d]);
	}
}

/* art_scan -- up to COUNT pairs with key >= KEY, in key order */
size_t
art_scan(void *tp, const uint8_t *key, size_t klen, size_t count, cc_kv_fn fn, void *ctx)
{
	struct art_tree *t = tp;
	if (klen != ART_KEY_LEN || count == 0)
		return 0;
	struct scan_state s = { .t = t, .from = key, .left = count, .fn = fn, .ctx = ctx };
	scan_node(&s, t->root->root, 0, 1);
	return s.seen;
}

/* art_dump -- every pair, in key order */
void
art_dump(void *tp, cc_kv_fn fn, void *ctx)
{
	struct art_tree *t = tp;
	struct scan_state s = { .t = t, .from = NULL, .left = SIZE_MAX, .fn = fn, .ctx = ctx };
	scan_node(&s, t->root->root, 0, 0);
}

/* --- reachable objects --- */

/* reach_node -- (internal) report P and everything below it */
static void
reach_node(struct art_node *p, unsigned level, cc_obj_fn fn, void *ctx)
{
	if (!p || level > ART_KEY_LEN)
		return;
	if (ART_IS_LEAF(p)) {
		struct art_leaf *l = ART_LEAF(p);
		fn(ctx, l, sizeof(*l));
		if (l->val)
			fn(ctx, l->val, sizeof(*l->val));
		return;
	}
	size_t size = art_node_size(p->type);
	if (!size)
		return;
	fn(ctx, p, size);
	struct art_entries e;
	art_children(p, &e);
	for (unsigned i = 0; i < e.n; i++)
		reach_node(e.child[i], level + 1, fn, ctx);
}

/* art_reachable -- every PM object reachable from the root: nodes, leaves, values */
void
art_reachable(void *tp, cc_obj_fn fn, void *ctx)
{
	struct art_tree *t = tp;
	reach_node(t->root->root, 0, fn, ctx);
}

/* art_allocated -- the allocator's record of objects in use */
void
art_allocated(void *tp, cc_obj_fn fn, void *ctx)
{
	(void)tp;
	pm_allocated(fn, ctx);
}

/* art_close -- release the DRAM handle */
void
art_close(void *tp)
{
	free(tp);
}
