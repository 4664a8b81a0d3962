/*
 * art_check.c -- the invariants of WOART and ART+CoW (shared, see art_nodes.h)
 *
 * Read-only: checking never repairs, so what it reports is what recovery
 * left behind.  Invariants, per node reached from the root at depth D along
 * the key bytes PATH:
 *   - the pointer starts an allocated object of the node's size, of a type
 *     the tree uses;
 *   - header: depth == D, prefix length <= 6, depth + plen <= 7, prefix
 *     bytes past plen zero; the root has depth 0 and no prefix;
 *   - the node's own bookkeeping agrees (NODE4 slot word, NODE16 bitmap,
 *     counts, NODE48 index) and every valid entry has a child;
 *   - the number of children lies within the type's bounds;
 *   - every leaf and value pointer starts an allocated object, every leaf's
 *     key agrees with the path (prefixes and partial keys) above it;
 *   - the dump is strictly ascending and lookup finds every dumped key.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "art_nodes.h"
#include "pm_alloc.h"

#define REPORT_MAX 64   /* violations printed; the rest are only counted */

struct check_state {
	const struct art_tree *t;
	cc_violation_fn fn;
	void *ctx;
	size_t count;
	uint8_t path[ART_KEY_LEN];
	uint8_t last[ART_KEY_LEN];   /* previous leaf key, for the order check */
	int have_last;
};

/* violation_at -- (internal) count one broken invariant and report it with its check's site */
__attribute__((format(printf, 4, 5))) static void
violation_at(struct check_state *s, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	if (s->count++ >= REPORT_MAX || !s->fn)
		return;
	va_start(ap, fmt);
	cc_vviolation_at(s->fn, s->ctx, file, line, fmt, ap);
	va_end(ap);
}
/* the check's own file:line names the rule it broke (trees/common/cc_tree.h CC_VIOLATION) */
#define violation(s, ...) violation_at((s), __FILE__, __LINE__, __VA_ARGS__)

/* allocated -- (internal) P starts an allocated object of at least SIZE bytes */
static int
allocated(const void *p, size_t size)
{
	return pm_contains(p) && pm_object_size(p) >= size;
}

/* type_used -- (internal) TYPE belongs to this tree */
static int
type_used(const struct art_tree *t, unsigned type)
{
	return type == t->ops->n4 || type == t->ops->n16 || type == ART_N48 || type == ART_N256;
}

/* check_n4s -- (internal) WOART NODE4: valid slots form a prefix, distinct indices, sorted keys */
static void
check_n4s(struct check_state *s, const struct art_node4s *n)
{
	union art_slots sl = { .raw = n->slots.raw };
	unsigned seen = 0, i, end = 4;
	for (i = 0; i < 4; i++) {
		if (!sl.f.slot[i]) {
			if (end == 4)
				end = i;
			if (sl.f.key[i])
				violation(s, "node4 %p: unused entry %u has key %u", (void *)n, i, sl.f.key[i]);
			continue;
		}
		if (end != 4)
			violation(s, "node4 %p: entry %u valid after an unused one", (void *)n, i);
		if (sl.f.slot[i] > 4 || (seen >> sl.f.slot[i] & 1))
			violation(s, "node4 %p: slot %u of entry %u bad or repeated", (void *)n, sl.f.slot[i], i);
		seen |= 1u << (sl.f.slot[i] & 7);
		if (i > 0 && sl.f.slot[i - 1] && sl.f.key[i - 1] >= sl.f.key[i])
			violation(s, "node4 %p: keys not ascending at entry %u", (void *)n, i);
	}
}

/* check_n16b -- (internal) WOART NODE16: valid keys distinct */
static void
check_n16b(struct check_state *s, const struct art_node16b *n)
{
	for (unsigned i = 0; i < 16; i++)
		for (unsigned j = i + 1; j < 16; j++)
			if ((n->bitmap >> i & 1) && (n->bitmap >> j & 1) && n->key[i] == n->key[j])
				violation(s, "node16 %p: key %u in entries %u and %u", (void *)n, n->key[i], i, j);
}

/* check_sorted -- (internal) ART+CoW NODE4/NODE16: count within capacity, keys ascending */
static void
check_sorted(struct check_state *s, const struct art_node *n, const uint8_t *keys,
	     unsigned count, unsigned cap)
{
	if (count > cap) {
		violation(s, "node %p: count %u over capacity %u", (const void *)n, count, cap);
		count = cap;
	}
	for (unsigned i = 1; i < count; i++)
		if (keys[i - 1] >= keys[i])
			violation(s, "node %p: keys not ascending at entry %u", (const void *)n, i);
}

/* check_n48 -- (internal) NODE48: index entries in range and distinct */
static void
check_n48(struct check_state *s, const struct art_node48 *n)
{
	uint64_t seen = 0;
	for (unsigned b = 0; b < 256; b++) {
		unsigned i = n->index[b];
		if (!i)
			continue;
		if (i > 48 || (seen >> (i - 1) & 1))
			violation(s, "node48 %p: index[%u] = %u bad or repeated", (void *)n, b, i);
		else
			seen |= 1ull << (i - 1);
	}
}

/* check_layout -- (internal) the dispatcher over the per-type bookkeeping checks */
static void
check_layout(struct check_state *s, const struct art_node *n)
{
	switch (n->type) {
	case ART_N4_SLOT:
		check_n4s(s, (const struct art_node4s *)n);
		break;
	case ART_N16_BITMAP:
		check_n16b(s, (const struct art_node16b *)n);
		break;
	case ART_N4_SORTED: {
		const struct art_node4c *c = (const struct art_node4c *)n;
		check_sorted(s, n, c->key, c->count, 4);
		break;
	}
	case ART_N16_SORTED: {
		const struct art_node16c *c = (const struct art_node16c *)n;
		check_sorted(s, n, c->key, c->count, 16);
		break;
	}
	case ART_N48:
		check_n48(s, (const struct art_node48 *)n);
		break;
	case ART_N256:
		break;   /* a NULL pointer is the only bookkeeping */
	default:
		abort();   /* check_node rejects unknown types first */
	}
}

/* check_leaf -- (internal) a leaf reached with the first DEPTH key bytes fixed by PATH */
static void
check_leaf(struct check_state *s, const struct art_leaf *l, unsigned depth)
{
	if (!allocated(l, sizeof(*l))) {
		violation(s, "leaf %p: not an allocated object", (const void *)l);
		return;
	}
	if (memcmp(l->key, s->path, depth) != 0)
		violation(s, "leaf %p: key disagrees with its path in the first %u bytes",
			  (const void *)l, depth);
	if (!l->val || !allocated(l->val, sizeof(*l->val)))
		violation(s, "leaf %p: value pointer %p is not an allocated object",
			  (const void *)l, (void *)l->val);
	if (s->have_last && memcmp(s->last, l->key, ART_KEY_LEN) >= 0)
		violation(s, "leaf %p: key not above the previous leaf's", (const void *)l);
	memcpy(s->last, l->key, ART_KEY_LEN);
	s->have_last = 1;
	struct art_node **ref = art_find_leaf(s->t, l->key, 0);
	if (!ref || ART_LEAF(*ref) != l)
		violation(s, "leaf %p: lookup of its key does not find it", (const void *)l);
}

/* check_node -- (internal) node P reached at DEPTH; ROOT: it is the root node */
static void
check_node(struct check_state *s, struct art_node *p, unsigned depth, int root)
{
	if (ART_IS_LEAF(p)) {
		check_leaf(s, ART_LEAF(p), depth);
		return;
	}
	if (!allocated(p, sizeof(struct art_node)) || !type_used(s->t, p->type) ||
	    !allocated(p, art_node_size(p->type))) {
		violation(s, "node %p at depth %u: not an allocated node of this tree", (void *)p, depth);
		return;
	}
	union art_hdr h = { .raw = p->hdr.raw };
	unsigned plen = h.f.plen;
	if (h.f.depth != depth)
		violation(s, "node %p: header depth %u, reached at depth %u", (void *)p, h.f.depth, depth);
	if (root && plen)
		violation(s, "root node %p: prefix length %u", (void *)p, plen);
	if (plen > ART_MAX_PREFIX || depth + plen >= ART_KEY_LEN) {
		violation(s, "node %p: prefix length %u at depth %u", (void *)p, plen, depth);
		return;
	}
	for (unsigned i = plen; i < ART_MAX_PREFIX; i++)
		if (h.f.prefix[i])
			violation(s, "node %p: prefix byte %u past the prefix length is set", (void *)p, i);
	check_layout(s, p);

	struct art_entries e;
	art_children(p, &e);
	unsigned cap = art_node_capacity(p->type), min = root ? 0 : art_node_min(p->type);
	if (e.n < min || e.n > cap)
		violation(s, "node %p (type %u): %u children, bounds %u..%u", (void *)p, p->type,
			  e.n, min, cap);
	memcpy(s->path + depth, h.f.prefix, plen);
	unsigned d = depth + plen;
	for (unsigned i = 0; i < e.n; i++) {
		if (!e.child[i]) {
			violation(s, "node %p: valid entry for byte %u has no child", (void *)p, e.key[i]);
			continue;
		}
		s->path[d] = e.key[i];
		check_node(s, e.child[i], d + 1, 0);
	}
}

/* art_check -- report every broken invariant; returns how many */
size_t
art_check(void *tp, cc_violation_fn fn, void *ctx)
{
	struct art_tree *t = tp;
	struct check_state s = { .t = t, .fn = fn, .ctx = ctx };
	struct art_node *root = t->root->root;
	if (!root || ART_IS_LEAF(root))
		violation(&s, "root area: root %p is not a node", (void *)root);
	else
		check_node(&s, root, 0, 1);
	return s.count;
}
