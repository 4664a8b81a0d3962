/*
 * art.c -- the DRAM adaptive radix tree below one hash key (libart's shape)
 *
 * Inner nodes (NODE4, NODE16, NODE48, NODE256) live in DRAM and are rebuilt
 * by recovery; leaves are HART's PM leaves, referenced by tagged pointers
 * (low bit set).  The ART key of a leaf is its key after the hash key.
 * Keys vary in length, so one key may be a proper prefix of another: every
 * inner node has a "term" slot for the leaf whose ART key ends exactly at the
 * node's depth (after its prefix).  Prefixes are stored whole (keys are at
 * most 24 bytes), so every comparison on the way down is exact; the leaf's
 * full key is still compared at the end.
 *
 * Nodes grow (4 -> 16 -> 48 -> 256) but do not shrink: a node that loses its
 * last child and its term leaf is freed, anything else stays until the next
 * recovery builds a compact tree.  Callers hold the ART's lock.
 */
#include <stdlib.h>
#include <string.h>
#include "hart_internal.h"

enum { NODE4 = 1, NODE16, NODE48, NODE256 };

struct node {
	uint8_t type;
	uint8_t plen;
	uint16_t count;                 /* children, term not counted */
	uint8_t prefix[HART_KEY_MAX];
	void *term;                     /* tagged leaf whose ART key ends here, or NULL */
};
struct node4 { struct node n; uint8_t keys[4]; void *child[4]; };
struct node16 { struct node n; uint8_t keys[16]; void *child[16]; };
struct node48 { struct node n; uint8_t index[256]; void *child[48]; }; /* index: slot + 1 */
struct node256 { struct node n; void *child[256]; };

#define IS_LEAF(x) (((uintptr_t)(x)) & 1)
#define LEAF_RAW(x) ((struct hart_leaf *)((uintptr_t)(x) & ~(uintptr_t)1))
#define SET_LEAF(l) ((void *)((uintptr_t)(l) | 1))

/* art_key -- the ART key of leaf L: its key after the hash key (internal) */
static inline const uint8_t *art_key(const struct hart_leaf *l, size_t *len)
{
	size_t kl = l->klen, skip = kl < HART_KH ? kl : HART_KH;
	*len = kl - skip;
	return l->key + skip;
}

/* alloc_node -- a zeroed inner node of TYPE, or NULL (internal) */
static struct node *alloc_node(uint8_t type)
{
	size_t sz = type == NODE4 ? sizeof(struct node4) : type == NODE16 ? sizeof(struct node16) :
		    type == NODE48 ? sizeof(struct node48) : sizeof(struct node256);
	struct node *n = calloc(1, sz);
	if (n)
		n->type = type;
	return n;
}

/* find_child -- the slot of N that holds byte C's child, NULL if none (internal) */
static void **find_child(struct node *n, uint8_t c)
{
	switch (n->type) {
	case NODE4: {
		struct node4 *p = (struct node4 *)n;
		for (int i = 0; i < n->count; i++)
			if (p->keys[i] == c)
				return &p->child[i];
		return NULL;
	}
	case NODE16: {
		struct node16 *p = (struct node16 *)n;
		for (int i = 0; i < n->count; i++)
			if (p->keys[i] == c)
				return &p->child[i];
		return NULL;
	}
	case NODE48: {
		struct node48 *p = (struct node48 *)n;
		return p->index[c] ? &p->child[p->index[c] - 1] : NULL;
	}
	case NODE256: {
		struct node256 *p = (struct node256 *)n;
		return p->child[c] ? &p->child[c] : NULL;
	}
	default:
		abort();
	}
}

/* copy_header -- prefix, term and count from SRC to DST (internal) */
static void copy_header(struct node *dst, const struct node *src)
{
	dst->plen = src->plen;
	dst->count = src->count;
	dst->term = src->term;
	memcpy(dst->prefix, src->prefix, src->plen);
}

/* add_child -- give N (held in *REF) child CHILD for byte C, growing N if full; -1 if out of DRAM (internal) */
static int add_child(struct node *n, void **ref, uint8_t c, void *child)
{
	switch (n->type) {
	case NODE4:
	case NODE16: {
		int cap = n->type == NODE4 ? 4 : 16;
		uint8_t *keys = n->type == NODE4 ? ((struct node4 *)n)->keys : ((struct node16 *)n)->keys;
		void **ch = n->type == NODE4 ? ((struct node4 *)n)->child : ((struct node16 *)n)->child;
		if (n->count < cap) {
			int i = 0;
			while (i < n->count && keys[i] < c)
				i++;
			memmove(keys + i + 1, keys + i, n->count - i);
			memmove(ch + i + 1, ch + i, (n->count - i) * sizeof(void *));
			keys[i] = c;
			ch[i] = child;
			n->count++;
			return 0;
		}
		struct node *g = alloc_node(n->type == NODE4 ? NODE16 : NODE48);
		if (!g)
			return -1;
		copy_header(g, n);
		if (g->type == NODE16) {
			memcpy(((struct node16 *)g)->keys, keys, 4);
			memcpy(((struct node16 *)g)->child, ch, 4 * sizeof(void *));
		} else {
			struct node48 *p = (struct node48 *)g;
			for (int i = 0; i < 16; i++) {
				p->child[i] = ch[i];
				p->index[keys[i]] = (uint8_t)(i + 1);
			}
		}
		*ref = g;
		free(n);
		return add_child(g, ref, c, child);
	}
	case NODE48: {
		struct node48 *p = (struct node48 *)n;
		if (n->count < 48) {
			int i = 0;
			while (p->child[i])
				i++;
			p->child[i] = child;
			p->index[c] = (uint8_t)(i + 1);
			n->count++;
			return 0;
		}
		struct node256 *g = (struct node256 *)alloc_node(NODE256);
		if (!g)
			return -1;
		copy_header(&g->n, n);
		for (int b = 0; b < 256; b++)
			if (p->index[b])
				g->child[b] = p->child[p->index[b] - 1];
		*ref = g;
		free(n);
		return add_child(&g->n, ref, c, child);
	}
	case NODE256:
		((struct node256 *)n)->child[c] = child;
		n->count++;
		return 0;
	default:
		abort();
	}
}

/* remove_child -- drop byte C's child from N (internal) */
static void remove_child(struct node *n, uint8_t c)
{
	switch (n->type) {
	case NODE4:
	case NODE16: {
		uint8_t *keys = n->type == NODE4 ? ((struct node4 *)n)->keys : ((struct node16 *)n)->keys;
		void **ch = n->type == NODE4 ? ((struct node4 *)n)->child : ((struct node16 *)n)->child;
		int i = 0;
		while (i < n->count && keys[i] != c)
			i++;
		if (i == n->count)
			return;
		memmove(keys + i, keys + i + 1, n->count - i - 1);
		memmove(ch + i, ch + i + 1, (n->count - i - 1) * sizeof(void *));
		n->count--;
		return;
	}
	case NODE48: {
		struct node48 *p = (struct node48 *)n;
		if (p->index[c]) {
			p->child[p->index[c] - 1] = NULL;
			p->index[c] = 0;
			n->count--;
		}
		return;
	}
	case NODE256:
		if (((struct node256 *)n)->child[c]) {
			((struct node256 *)n)->child[c] = NULL;
			n->count--;
		}
		return;
	default:
		abort();
	}
}

/* leaf_matches -- non-zero if leaf L holds exactly KEY (internal) */
static int leaf_matches(const struct hart_leaf *l, const uint8_t *key, size_t klen)
{
	return l->klen == klen && !memcmp(l->key, key, klen);
}

/* art_search -- the leaf of full key KEY in A, NULL if none (leaf bits are the caller's) */
struct hart_leaf *art_search(struct hart_art *a, const uint8_t *key, size_t klen)
{
	size_t skip = klen < HART_KH ? klen : HART_KH, alen = klen - skip, depth = 0;
	const uint8_t *ak = key + skip;
	void *x = a->root;
	while (x) {
		if (IS_LEAF(x))
			return leaf_matches(LEAF_RAW(x), key, klen) ? LEAF_RAW(x) : NULL;
		struct node *n = x;
		if (n->plen) {
			if (alen < depth + n->plen || memcmp(n->prefix, ak + depth, n->plen))
				return NULL;
			depth += n->plen;
		}
		if (alen == depth)
			return n->term && leaf_matches(LEAF_RAW(n->term), key, klen) ? LEAF_RAW(n->term) : NULL;
		void **c = find_child(n, ak[depth]);
		x = c ? *c : NULL;
		depth++;
	}
	return NULL;
}

/* place -- put leaf ref LREF (ART key AK, ALEN) under new node N at DEPTH (internal) */
static int place(struct node *n, void **ref, void *lref, const uint8_t *ak, size_t alen, size_t depth)
{
	if (alen == depth) {
		n->term = lref;
		return 0;
	}
	return add_child(n, ref, ak[depth], lref);
}

/* insert_rec -- libart's recursive_insert with term slots (internal) */
static int insert_rec(void **ref, void *lref, const uint8_t *ak, size_t alen, size_t depth)
{
	void *x = *ref;
	if (!x) {
		*ref = lref;
		return 0;
	}
	if (IS_LEAF(x)) {
		/* lazy expansion undone: a node holding both leaves below their common part */
		size_t olen;
		const uint8_t *ok = art_key(LEAF_RAW(x), &olen);
		size_t lcp = 0;
		while (depth + lcp < alen && depth + lcp < olen && ak[depth + lcp] == ok[depth + lcp])
			lcp++;
		if (depth + lcp == alen && alen == olen)
			return 1; /* same key: the caller checked, cannot happen */
		struct node *n = alloc_node(NODE4);
		if (!n)
			return -1;
		n->plen = (uint8_t)lcp;
		memcpy(n->prefix, ak + depth, lcp);
		void *nref = n;
		if (place(n, &nref, x, ok, olen, depth + lcp) || place(n, &nref, lref, ak, alen, depth + lcp)) {
			free(n);
			return -1;
		}
		*ref = nref;
		return 0;
	}
	struct node *n = x;
	if (n->plen) {
		size_t p = 0;
		while (p < n->plen && depth + p < alen && n->prefix[p] == ak[depth + p])
			p++;
		if (p < n->plen) {
			/* split the compressed path at P */
			struct node *s = alloc_node(NODE4);
			if (!s)
				return -1;
			s->plen = (uint8_t)p;
			memcpy(s->prefix, n->prefix, p);
			void *sref = s;
			uint8_t b = n->prefix[p];
			n->plen -= (uint8_t)(p + 1);
			memmove(n->prefix, n->prefix + p + 1, n->plen);
			add_child(s, &sref, b, n);  /* NODE4 with room: cannot fail */
			if (place(s, &sref, lref, ak, alen, depth + p))
				return -1;
			*ref = sref;
			return 0;
		}
		depth += n->plen;
	}
	if (alen == depth) {
		if (n->term)
			return 1;
		n->term = lref;
		return 0;
	}
	void **c = find_child(n, ak[depth]);
	if (c)
		return insert_rec(c, lref, ak, alen, depth + 1);
	return add_child(n, ref, ak[depth], lref);
}

/* art_insert -- link leaf L (its key set, absent from A); 0, or -1 if out of DRAM */
int art_insert(struct hart_art *a, struct hart_leaf *l)
{
	size_t alen;
	const uint8_t *ak = art_key(l, &alen);
	int r = insert_rec(&a->root, SET_LEAF(l), ak, alen, 0);
	if (r == 0)
		a->n++;
	return r < 0 ? -1 : 0;
}

/* delete_rec -- unlink the leaf of KEY below *REF; returns it, frees emptied nodes (internal) */
static struct hart_leaf *delete_rec(void **ref, const uint8_t *key, size_t klen,
				    const uint8_t *ak, size_t alen, size_t depth)
{
	void *x = *ref;
	if (!x)
		return NULL;
	if (IS_LEAF(x)) {
		if (!leaf_matches(LEAF_RAW(x), key, klen))
			return NULL;
		*ref = NULL;
		return LEAF_RAW(x);
	}
	struct node *n = x;
	if (n->plen) {
		if (alen < depth + n->plen || memcmp(n->prefix, ak + depth, n->plen))
			return NULL;
		depth += n->plen;
	}
	struct hart_leaf *l = NULL;
	if (alen == depth) {
		if (n->term && leaf_matches(LEAF_RAW(n->term), key, klen)) {
			l = LEAF_RAW(n->term);
			n->term = NULL;
		}
	} else {
		void **c = find_child(n, ak[depth]);
		if (c && (l = delete_rec(c, key, klen, ak, alen, depth + 1)) && !*c)
			remove_child(n, ak[depth]);
	}
	if (l && n->count == 0) {
		/* nothing below but maybe the term leaf: it takes the node's place */
		*ref = n->term;
		free(n);
	}
	return l;
}

/* art_delete -- unlink and return the leaf of full key KEY, NULL if absent */
struct hart_leaf *art_delete(struct hart_art *a, const uint8_t *key, size_t klen)
{
	size_t skip = klen < HART_KH ? klen : HART_KH;
	struct hart_leaf *l = delete_rec(&a->root, key, klen, key + skip, klen - skip, 0);
	if (l)
		a->n--;
	return l;
}

/* each_rec -- FN on every leaf below X (internal) */
static void each_rec(void *x, void (*fn)(void *, struct hart_leaf *), void *ctx)
{
	if (!x)
		return;
	if (IS_LEAF(x)) {
		fn(ctx, LEAF_RAW(x));
		return;
	}
	struct node *n = x;
	if (n->term)
		fn(ctx, LEAF_RAW(n->term));
	switch (n->type) {
	case NODE4:
		for (int i = 0; i < n->count; i++)
			each_rec(((struct node4 *)n)->child[i], fn, ctx);
		break;
	case NODE16:
		for (int i = 0; i < n->count; i++)
			each_rec(((struct node16 *)n)->child[i], fn, ctx);
		break;
	case NODE48:
		for (int b = 0; b < 256; b++)
			if (((struct node48 *)n)->index[b])
				each_rec(((struct node48 *)n)->child[((struct node48 *)n)->index[b] - 1], fn, ctx);
		break;
	case NODE256:
		for (int b = 0; b < 256; b++)
			each_rec(((struct node256 *)n)->child[b], fn, ctx);
		break;
	default:
		abort();
	}
}

/* art_each -- FN on every leaf of A, in key order */
void art_each(struct hart_art *a, void (*fn)(void *ctx, struct hart_leaf *l), void *ctx)
{
	each_rec(a->root, fn, ctx);
}

/* free_rec -- free the inner nodes below X (internal) */
static void free_rec(void *x)
{
	if (!x || IS_LEAF(x))
		return;
	struct node *n = x;
	switch (n->type) {
	case NODE4:
		for (int i = 0; i < n->count; i++)
			free_rec(((struct node4 *)n)->child[i]);
		break;
	case NODE16:
		for (int i = 0; i < n->count; i++)
			free_rec(((struct node16 *)n)->child[i]);
		break;
	case NODE48:
		for (int i = 0; i < 48; i++)
			free_rec(((struct node48 *)n)->child[i]);
		break;
	case NODE256:
		for (int b = 0; b < 256; b++)
			free_rec(((struct node256 *)n)->child[b]);
		break;
	default:
		abort();
	}
	free(n);
}

/* art_free -- free A's inner nodes (the leaves are PM and stay) */
void art_free(struct hart_art *a)
{
	free_rec(a->root);
	a->root = NULL;
	a->n = 0;
}
