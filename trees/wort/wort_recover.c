/*
 * wort_recover.c -- WORT's handle, header repair (Algorithm 2), recovery,
 * invariant checks and reachable objects: everything that judges an image
 *
 * Reads of an image after a crash trust nothing: pointers are checked
 * against the heap before they are followed, walks are bounded by the key
 * length (16 levels), so a corrupt image yields violations, not a crash.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "wort_internal.h"

/* wort_create -- a handle on the empty tree of a freshly formatted pool */
struct wort *wort_create(void)
{
	struct wort *t = malloc(sizeof(*t));
	if (t)
		t->root = pm_root(); /* zero after format: the empty tree */
	return t;
}

/* wort_open -- a handle on the tree of an existing pool */
struct wort *wort_open(void)
{
	return wort_create();
}

/* wort_close -- drop the handle */
void wort_close(struct wort *t)
{
	free(t);
}

/* wort_ref_ok -- REF points at an allocated object big enough for what it claims */
int wort_ref_ok(uintptr_t ref)
{
	const void *p = AS_LEAF(ref);
	size_t need = IS_LEAF(ref) ? sizeof(struct wort_leaf) : sizeof(struct wort_node);
	return wort_in_heap(p) && pm_object_size(p) >= need;
}

/* wort_min_leaf -- the leftmost leaf below REF */
struct wort_leaf *wort_min_leaf(uintptr_t ref)
{
	for (unsigned level = 0; ref && level <= WORT_NIBBLES; level++) {
		if (!wort_in_heap(AS_LEAF(ref)))
			return NULL;
		if (IS_LEAF(ref))
			return AS_LEAF(ref);
		struct wort_node *n = AS_NODE(ref);
		uintptr_t next = 0;
		for (unsigned c = 0; c < WORT_FANOUT && !next; c++)
			next = load8(&n->child[c]);
		ref = next;
	}
	return NULL;
}

#ifdef BUG_WORT_REPAIR_TWO_LEAVES
/* nth_leaf -- the K-th leaf (0-based) below REF in order, NULL if fewer (internal) */
static struct wort_leaf *nth_leaf(uintptr_t ref, unsigned *k, unsigned level)
{
	if (!ref || level > WORT_NIBBLES || !wort_in_heap(AS_LEAF(ref)))
		return NULL;
	if (IS_LEAF(ref))
		return (*k)-- == 0 ? AS_LEAF(ref) : NULL;
	for (unsigned c = 0; c < WORT_FANOUT; c++) {
		struct wort_leaf *l = nth_leaf(load8(&AS_NODE(ref)->child[c]), k, level + 1);
		if (l)
			return l;
	}
	return NULL;
}
#endif

/*
 * wort_repair -- Algorithm 2: rebuild the header of N, found at DEPTH
 *
 * The paper takes "two different arbitrary leaves" of N and keeps their
 * longest common prefix.  That is only N's prefix when the two leaves hang
 * below DIFFERENT children of N: two leaves of the same child share more,
 * and the repaired node would branch on the wrong nibble.  So we take the
 * leftmost leaf of N's first child and of its second child; they differ
 * exactly at the nibble N branches on.  (The paper-literal choice, the two
 * smallest leaves of N, is the seeded bug BUG_WORT_REPAIR_TWO_LEAVES.)
 */
uint64_t wort_repair(struct wort_node *n, unsigned depth)
{
	uint64_t old = load8(&n->hdr);
	uintptr_t c1 = 0, c2 = 0;
	for (unsigned c = 0; c < WORT_FANOUT && !c2; c++) {
		uintptr_t r = load8(&n->child[c]);
		if (r && !c1)
			c1 = r;
		else if (r)
			c2 = r;
	}
	if (!c2)
		return old; /* fewer than two children: nothing to compare; check reports it */
#ifdef BUG_WORT_REPAIR_TWO_LEAVES
	/* BUG (paper-literal): two arbitrary leaves, here the two smallest,
	 * which may both hang below the first child */
	unsigned k1 = 0, k2 = 1;
	struct wort_leaf *l1 = nth_leaf((uintptr_t)n, &k1, 0);
	struct wort_leaf *l2 = nth_leaf((uintptr_t)n, &k2, 0);
#else
	struct wort_leaf *l1 = wort_min_leaf(c1), *l2 = wort_min_leaf(c2);
#endif
	if (!l1 || !l2)
		return old;
	unsigned m = depth;
	while (m < WORT_NIBBLES && key_nibble(l1->key, m) == key_nibble(l2->key, m))
		m++;
	if (m >= WORT_NIBBLES)
		return old;
	uint64_t h = hdr_make(depth, m - depth, l1->key);
	store8(&n->hdr, h);  /* lines 9-12: one atomic store, persisted */
	persistent(&n->hdr, 8);
	return h;
}

/* recover_ref -- repair every header below REF, which sits at DEPTH (internal) */
static void recover_ref(uintptr_t ref, unsigned depth, unsigned level)
{
	if (!ref || IS_LEAF(ref) || !wort_in_heap(AS_NODE(ref)) || depth >= WORT_NIBBLES ||
	    level > WORT_NIBBLES)
		return;
	struct wort_node *n = AS_NODE(ref);
	uint64_t h = load8(&n->hdr);
#ifdef BUG_WORT_RECOVER_NO_REPAIR
	/* BUG: recovery skips the header repair; a split cut short by the
	 * crash leaves a node whose header does not fit its place */
#else
	if (hdr_depth(h) != depth)
		h = wort_repair(n, depth);
#endif
	unsigned idx = hdr_depth(h) + hdr_plen(h);
	for (unsigned c = 0; c < WORT_FANOUT; c++)
		recover_ref(load8(&n->child[c]), idx + 1, level + 1);
}

/* wort_recover -- repair all headers eagerly (traversals would repair lazily) */
int wort_recover(struct wort *t)
{
	uintptr_t root = load8(t->root);
	if (root && !wort_in_heap(AS_LEAF(root))) {
		fprintf(stderr, "wort: root pointer %#lx is outside the heap\n", (unsigned long)root);
		return -1;
	}
	recover_ref(root, 0, 0);
	return 0;
}

struct check {
	cc_violation_fn fn;
	void *ctx;
	size_t count;
	uint8_t path[WORT_NIBBLES + 1]; /* nibbles that lead to the current object */
};

/* violation_at -- report one broken invariant with the site of its check (internal) */
__attribute__((format(printf, 4, 5)))
static void violation_at(struct check *c, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cc_vviolation_at(c->fn, c->ctx, file, line, fmt, ap);
	va_end(ap);
	c->count++;
}
/* the check's own file:line names the rule it broke (trees/common/cc_tree.h CC_VIOLATION) */
#define violation(c, ...) violation_at((c), __FILE__, __LINE__, __VA_ARGS__)

/* key_u64 -- KEY as a number for messages (internal) */
static unsigned long long key_u64(const uint8_t *key)
{
	unsigned long long v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | key[i];
	return v;
}

/* check_leaf -- L at DEPTH: allocated, on its key's path, with an allocated value (internal) */
static void check_leaf(struct check *c, struct wort_leaf *l, unsigned depth)
{
	for (unsigned i = 0; i < depth; i++)
		if (key_nibble(l->key, i) != c->path[i]) {
			violation(c, "leaf %llu sits on the wrong path: nibble %u is %x, the path says %x",
				  key_u64(l->key), i, key_nibble(l->key, i), c->path[i]);
			break;
		}
	if (!wort_in_heap(l->value) || pm_object_size(l->value) < 8)
		violation(c, "leaf %llu has value pointer %p, not an allocated value object",
			  key_u64(l->key), (void *)l->value);
}

/* check_ref -- every invariant below REF, which sits at DEPTH (internal) */
static void check_ref(struct check *c, uintptr_t ref, unsigned depth, unsigned level)
{
	if (!ref)
		return;
	if (level > WORT_NIBBLES) {
		violation(c, "tree deeper than %u levels below the root (a cycle?)", WORT_NIBBLES);
		return;
	}
	if (!wort_ref_ok(ref)) {
		violation(c, "%s pointer %#lx at depth %u is not an allocated object",
			  IS_LEAF(ref) ? "leaf" : "node", (unsigned long)AS_LEAF(ref), depth);
		if (!wort_in_heap(AS_LEAF(ref)))
			return;
	}
	if (IS_LEAF(ref)) {
		check_leaf(c, AS_LEAF(ref), depth);
		return;
	}
	struct wort_node *n = AS_NODE(ref);
	uint64_t h = load8(&n->hdr);
	unsigned hd = hdr_depth(h), plen = hdr_plen(h), idx = hd + plen;
	if (depth >= WORT_NIBBLES) {
		violation(c, "inner node %p below the last key nibble", (void *)n);
		return;
	}
	if (hd != depth)
		violation(c, "node %p: header depth %u, but the node sits at depth %u", (void *)n, hd, depth);
	if (idx < depth || idx >= WORT_NIBBLES) {
		violation(c, "node %p: header {depth %u, prefix length %u} branches outside the key",
			  (void *)n, hd, plen);
		return;
	}
	unsigned children = 0;
	for (unsigned i = 0; i < WORT_FANOUT; i++)
		children += load8(&n->child[i]) != 0;
	if (children < 2)
		violation(c, "node %p has %u child%s (path compression keeps at least two)",
			  (void *)n, children, children == 1 ? "" : "ren");
	/* the path through N: its prefix as the header states it (a leaf
	 * supplies nibbles past the stored ones), then the branch nibble */
	struct wort_leaf *any = wort_min_leaf(ref);
	for (unsigned i = depth; i < idx; i++) {
		unsigned j = i - hd;
		if (i >= hd && j < WORT_PREFIX_CAP)
			c->path[i] = (uint8_t)hdr_nibble(h, j);
		else
			c->path[i] = any ? (uint8_t)key_nibble(any->key, i) : 0;
	}
	for (unsigned i = 0; i < WORT_FANOUT; i++) {
		c->path[idx] = (uint8_t)i;
		check_ref(c, load8(&n->child[i]), idx + 1, level + 1);
	}
}

/* wort_check -- every broken invariant of the tree */
size_t wort_check(struct wort *t, cc_violation_fn fn, void *ctx)
{
	struct check c = {.fn = fn, .ctx = ctx};
	check_ref(&c, load8(t->root), 0, 0);
	return c.count;
}

/* reach_ref -- report REF's object and everything below it (internal) */
static void reach_ref(uintptr_t ref, unsigned level, cc_obj_fn fn, void *ctx)
{
	if (!ref || level > WORT_NIBBLES || !wort_in_heap(AS_LEAF(ref)))
		return;
	if (IS_LEAF(ref)) {
		struct wort_leaf *l = AS_LEAF(ref);
		fn(ctx, l, sizeof(*l));
		if (wort_in_heap(l->value))
			fn(ctx, l->value, 8);
		return;
	}
	struct wort_node *n = AS_NODE(ref);
	fn(ctx, n, sizeof(*n));
	for (unsigned c = 0; c < WORT_FANOUT; c++)
		reach_ref(load8(&n->child[c]), level + 1, fn, ctx);
}

/* wort_reachable -- every PM object of the tree */
void wort_reachable(struct wort *t, cc_obj_fn fn, void *ctx)
{
	reach_ref(load8(t->root), 0, fn, ctx);
}
