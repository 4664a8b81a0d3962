/*
 * art_nodes.c -- the nodes shared by WOART and ART+CoW (see art_nodes.h)
 *
 * Owns the node types' sizes and bounds, node building, leaves and value
 * objects, headers and their repair (Algorithm 2), the read side (find a
 * child, list children in key order) and the in-place updates of NODE48
 * (Algorithm 5) and NODE256.  The tree-level operations are in art_tree.c,
 * the invariants in art_check.c, the per-tree write policies in woart.c and
 * artcow.c.  Each tree naming trees/art_engine in its shared.txt compiles
 * this file into its drivers, with its own flags (a seeded bug's -D too).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "art_nodes.h"
#include "persist.h"
#include "pm_alloc.h"

/* art_node_size -- bytes of a node of TYPE, 0 for an invalid type */
size_t
art_node_size(unsigned type)
{
	switch (type) {
	case ART_N4_SLOT: return sizeof(struct art_node4s);
	case ART_N16_BITMAP: return sizeof(struct art_node16b);
	case ART_N4_SORTED: return sizeof(struct art_node4c);
	case ART_N16_SORTED: return sizeof(struct art_node16c);
	case ART_N48: return sizeof(struct art_node48);
	case ART_N256: return sizeof(struct art_node256);
	default: return 0;
	}
}

/* art_node_capacity -- most children a node of TYPE holds */
unsigned
art_node_capacity(unsigned type)
{
	switch (type) {
	case ART_N4_SLOT: case ART_N4_SORTED: return 4;
	case ART_N16_BITMAP: case ART_N16_SORTED: return 16;
	case ART_N48: return 48;
	case ART_N256: return 256;
	default: abort();
	}
}

/*
 * art_node_min -- fewest children a non-root node of TYPE holds.
 *
 * A node grows when full and shrinks when a delete leaves it below this
 * bound; the gap between the two (libart's hysteresis: NODE256 shrinks at 37,
 * not at 48) keeps an insert/delete pair at a boundary from copying a node
 * back and forth.  NODE4's bound is 2 because path compression removes a
 * node with one child.
 */
unsigned
art_node_min(unsigned type)
{
	switch (type) {
	case ART_N4_SLOT: case ART_N4_SORTED: return 2;
	case ART_N16_BITMAP: case ART_N16_SORTED: return 4;
	case ART_N48: return 13;
	case ART_N256: return 38;
	default: abort();
	}
}

/* art_type_for -- the node type a tree uses for COUNT children */
unsigned
art_type_for(const struct art_ops *ops, unsigned count)
{
	if (count <= 4)
		return ops->n4;
	if (count <= 16)
		return ops->n16;
	if (count <= 48)
		return ART_N48;
	return ART_N256;
}

/*
 * art_node_alloc -- a node of TYPE, durably zeroed (pm_alloc), its header not yet persistent.
 *
 * noinline: the allocation site the leak report names is this function, so
 * expect.json can mark its by-design leaks.
 */
__attribute__((noinline)) struct art_node *
art_node_alloc(unsigned type)
{
	struct art_node *n = pm_alloc(art_node_size(type));
	if (n)
		n->type = (uint8_t)type;
	return n;
}

/* art_persist2 -- persist two ranges with one fence pair (the thesis' "clflush a; clflush b") */
void
art_persist2(const void *a, size_t alen, const void *b, size_t blen)
{
#if CC_FLUSH == CC_FLUSH_CLFLUSH
	cc_mfence();
#endif
	cc_flush(a, alen);
	cc_flush(b, blen);
#if CC_FLUSH == CC_FLUSH_CLFLUSH
	cc_mfence();
#else
	cc_sfence();
#endif
}

/* fill_n4s -- (internal) entries into a WOART NODE4: sorted keys, child i in slot i */
static void
fill_n4s(struct art_node4s *n, const struct art_entries *e)
{
	union art_slots s = { .raw = 0 };
	for (unsigned i = 0; i < e->n; i++) {
		s.f.key[i] = e->key[i];
		s.f.slot[i] = (uint8_t)(i + 1);
		n->child[i] = e->child[i];
	}
	n->slots.raw = s.raw;
}

/* fill_n16b -- (internal) entries into a WOART NODE16, packed from index 0 */
static void
fill_n16b(struct art_node16b *n, const struct art_entries *e)
{
	for (unsigned i = 0; i < e->n; i++) {
		n->key[i] = e->key[i];
		n->child[i] = e->child[i];
	}
	n->bitmap = (uint16_t)((1u << e->n) - 1);
}

/* fill_n4c -- (internal) entries into an ART+CoW NODE4 */
static void
fill_n4c(struct art_node4c *n, const struct art_entries *e)
{
	for (unsigned i = 0; i < e->n; i++) {
		n->key[i] = e->key[i];
		n->child[i] = e->child[i];
	}
	n->count = (uint8_t)e->n;
}

/* fill_n16c -- (internal) entries into an ART+CoW NODE16 */
static void
fill_n16c(struct art_node16c *n, const struct art_entries *e)
{
	for (unsigned i = 0; i < e->n; i++) {
		n->key[i] = e->key[i];
		n->child[i] = e->child[i];
	}
	n->count = (uint8_t)e->n;
}

/* fill_n48 -- (internal) entries into a NODE48, slot i for the i-th key */
static void
fill_n48(struct art_node48 *n, const struct art_entries *e)
{
	for (unsigned i = 0; i < e->n; i++) {
		n->child[i] = e->child[i];
		n->index[e->key[i]] = (uint8_t)(i + 1);
	}
}

/* fill_n256 -- (internal) entries into a NODE256 */
static void
fill_n256(struct art_node256 *n, const struct art_entries *e)
{
	for (unsigned i = 0; i < e->n; i++)
		n->child[e->key[i]] = e->child[i];
}

/*
 * art_node_build -- a new node of TYPE holding header HDR and the entries E
 * (key order), fully written but NOT persistent: the caller persists it
 * before publishing it.  NULL when the pool is exhausted.
 */
struct art_node *
art_node_build(unsigned type, union art_hdr hdr, const struct art_entries *e)
{
	if (e->n > art_node_capacity(type))
		abort();
	struct art_node *n = art_node_alloc(type);
	if (!n)
		return NULL;
	n->hdr.raw = hdr.raw;
	switch (type) {
	case ART_N4_SLOT: fill_n4s((struct art_node4s *)n, e); break;
	case ART_N16_BITMAP: fill_n16b((struct art_node16b *)n, e); break;
	case ART_N4_SORTED: fill_n4c((struct art_node4c *)n, e); break;
	case ART_N16_SORTED: fill_n16c((struct art_node16c *)n, e); break;
	case ART_N48: fill_n48((struct art_node48 *)n, e); break;
	case ART_N256: fill_n256((struct art_node256 *)n, e); break;
	default: abort();
	}
	return n;
}

/*
 * art_value_alloc -- a value object holding VAL, not yet persistent
 * (noinline: the allocation site leak reports name, see expect.json).
 */
__attribute__((noinline)) struct art_value *
art_value_alloc(const uint8_t *val)
{
	struct art_value *v = pm_alloc(sizeof(*v));
	if (v)
		memcpy(v->bytes, val, ART_VAL_LEN);
	return v;
}

/* art_value_new -- a persistent value object holding VAL */
struct art_value *
art_value_new(const uint8_t *val)
{
	struct art_value *v = art_value_alloc(val);
	if (!v)
		return NULL;
#ifndef BUG_ART_NO_VALUE_FLUSH
	persistent(v, sizeof(*v));
#else
	/* BUG_ART_NO_VALUE_FLUSH: the value object is never flushed, so the leaf
	 * (or the update's pointer swing) can reach PM before the value does. */
#endif
	return v;
}

/*
 * art_leaf_new -- a persistent leaf for KEY with a new value object VAL,
 * returned tagged (noinline: a leak site).  NULL when the pool is full.
 */
__attribute__((noinline)) struct art_node *
art_leaf_new(const uint8_t *key, const uint8_t *val)
{
	struct art_value *v = art_value_new(val);
	if (!v)
		return NULL;
	struct art_leaf *l = pm_alloc(sizeof(*l));
	if (!l) {
		pm_free(v);
		return NULL;
	}
	memcpy(l->key, key, ART_KEY_LEN);
	l->val = v;
	persistent(l, sizeof(*l));
	return ART_TAG_LEAF(l);
}

/* art_leaf_free -- free an unlinked leaf and its value object */
void
art_leaf_free(struct art_node *tagged)
{
	struct art_leaf *l = ART_LEAF(tagged);
	pm_free(l->val);
	pm_free(l);
}

/* art_hdr_make -- header for a node at DEPTH whose prefix is BYTES[0..PLEN) */
union art_hdr
art_hdr_make(unsigned depth, unsigned plen, const uint8_t *bytes)
{
	union art_hdr h = { .raw = 0 };
	if (plen > ART_MAX_PREFIX)
		abort();
	h.f.depth = (uint8_t)depth;
	h.f.plen = (uint8_t)plen;
	if (plen)
		memcpy(h.f.prefix, bytes, plen);
	return h;
}

/* art_prefix_mismatch -- first prefix byte of N that differs from KEY at DEPTH, or plen */
unsigned
art_prefix_mismatch(const struct art_node *n, const uint8_t *key, unsigned depth)
{
	unsigned plen = n->hdr.f.plen;
	unsigned i;
	for (i = 0; i < plen && depth + i < ART_KEY_LEN; i++)
		if (n->hdr.f.prefix[i] != key[depth + i])
			return i;
	return i;
}

/* --- read side: one dispatcher per question, per-type helpers behind it --- */

/* find_n4s -- (internal) slot of byte B in a WOART NODE4 */
static struct art_node **
find_n4s(struct art_node4s *n, uint8_t b)
{
	union art_slots s = { .raw = n->slots.raw };  /* one load: a consistent snapshot */
	for (unsigned i = 0; i < 4 && s.f.slot[i]; i++)
		if (s.f.key[i] == b && s.f.slot[i] <= 4)
			return &n->child[s.f.slot[i] - 1];
	return NULL;
}

/* find_n16b -- (internal) slot of byte B in a WOART NODE16 */
static struct art_node **
find_n16b(struct art_node16b *n, uint8_t b)
{
	uint16_t bm = n->bitmap;
	for (unsigned i = 0; i < 16; i++)
		if ((bm >> i & 1) && n->key[i] == b)
			return &n->child[i];
	return NULL;
}

/* find_sorted -- (internal) slot of byte B among COUNT sorted keys */
static struct art_node **
find_sorted(uint8_t *keys, struct art_node **child, unsigned count, unsigned cap, uint8_t b)
{
	if (count > cap)
		count = cap;
	for (unsigned i = 0; i < count; i++)
		if (keys[i] == b)
			return &child[i];
	return NULL;
}

/* art_find_child -- the slot holding N's child at byte B, NULL if none */
struct art_node **
art_find_child(struct art_node *n, uint8_t b)
{
	struct art_node **ref;
	switch (n->type) {
	case ART_N4_SLOT:
		ref = find_n4s((struct art_node4s *)n, b);
		break;
	case ART_N16_BITMAP:
		ref = find_n16b((struct art_node16b *)n, b);
		break;
	case ART_N4_SORTED: {
		struct art_node4c *c = (struct art_node4c *)n;
		ref = find_sorted(c->key, c->child, c->count, 4, b);
		break;
	}
	case ART_N16_SORTED: {
		struct art_node16c *c = (struct art_node16c *)n;
		ref = find_sorted(c->key, c->child, c->count, 16, b);
		break;
	}
	case ART_N48: {
		struct art_node48 *c = (struct art_node48 *)n;
		unsigned i = c->index[b];
		ref = (i >= 1 && i <= 48) ? &c->child[i - 1] : NULL;
		break;
	}
	case ART_N256:
		ref = &((struct art_node256 *)n)->child[b];
		break;
	default:
		abort();
	}
	return (ref && *ref) ? ref : NULL;
}

/* art_entries_insert -- put (B, CHILD) into the key-ordered list E */
void
art_entries_insert(struct art_entries *e, uint8_t b, struct art_node *child)
{
	unsigned i = e->n;
	while (i > 0 && e->key[i - 1] > b) {
		e->key[i] = e->key[i - 1];
		e->child[i] = e->child[i - 1];
		i--;
	}
	e->key[i] = b;
	e->child[i] = child;
	e->n++;
}

/* art_entries_remove -- drop byte B from the key-ordered list E */
void
art_entries_remove(struct art_entries *e, uint8_t b)
{
	unsigned i, j = 0;
	for (i = 0; i < e->n; i++) {
		if (e->key[i] == b)
			continue;
		e->key[j] = e->key[i];
		e->child[j] = e->child[i];
		j++;
	}
	e->n = j;
}

/* children_n4s -- (internal) a WOART NODE4's valid entries (already sorted) */
static void
children_n4s(const struct art_node4s *n, struct art_entries *e)
{
	union art_slots s = { .raw = n->slots.raw };
	for (unsigned i = 0; i < 4 && s.f.slot[i]; i++)
		if (s.f.slot[i] <= 4)
			art_entries_insert(e, s.f.key[i], n->child[s.f.slot[i] - 1]);
}

/* children_n16b -- (internal) a WOART NODE16's valid entries, sorted here */
static void
children_n16b(const struct art_node16b *n, struct art_entries *e)
{
	uint16_t bm = n->bitmap;
	for (unsigned i = 0; i < 16; i++)
		if (bm >> i & 1)
			art_entries_insert(e, n->key[i], n->child[i]);
}

/* children_sorted -- (internal) the first COUNT entries of a sorted node */
static void
children_sorted(const uint8_t *keys, struct art_node *const *child, unsigned count,
		unsigned cap, struct art_entries *e)
{
	if (count > cap)
		count = cap;
	for (unsigned i = 0; i < count; i++)
		art_entries_insert(e, keys[i], child[i]);
}

/* children_n48 -- (internal) a NODE48's entries in byte order */
static void
children_n48(const struct art_node48 *n, struct art_entries *e)
{
	for (unsigned b = 0; b < 256; b++) {
		unsigned i = n->index[b];
		if (i >= 1 && i <= 48)
			art_entries_insert(e, (uint8_t)b, n->child[i - 1]);
	}
}

/* children_n256 -- (internal) a NODE256's non-NULL children in byte order */
static void
children_n256(const struct art_node256 *n, struct art_entries *e)
{
	for (unsigned b = 0; b < 256; b++)
		if (n->child[b])
			art_entries_insert(e, (uint8_t)b, n->child[b]);
}

/*
 * art_children -- N's valid entries in key order.  An entry the node marks
 * valid is listed even if its pointer is NULL (walkers skip it, the
 * invariant check reports it).
 */
void
art_children(const struct art_node *n, struct art_entries *e)
{
	e->n = 0;
	switch (n->type) {
	case ART_N4_SLOT:
		children_n4s((const struct art_node4s *)n, e);
		break;
	case ART_N16_BITMAP:
		children_n16b((const struct art_node16b *)n, e);
		break;
	case ART_N4_SORTED: {
		const struct art_node4c *c = (const struct art_node4c *)n;
		children_sorted(c->key, c->child, c->count, 4, e);
		break;
	}
	case ART_N16_SORTED: {
		const struct art_node16c *c = (const struct art_node16c *)n;
		children_sorted(c->key, c->child, c->count, 16, e);
		break;
	}
	case ART_N48:
		children_n48((const struct art_node48 *)n, e);
		break;
	case ART_N256:
		children_n256((const struct art_node256 *)n, e);
		break;
	default:
		abort();
	}
}

/* art_count -- number of valid entries of N */
unsigned
art_count(const struct art_node *n)
{
	struct art_entries e;
	art_children(n, &e);
	return e.n;
}

/* art_min_leaf -- the leftmost leaf below child pointer P (NULL if none) */
struct art_leaf *
art_min_leaf(struct art_node *p)
{
	struct art_entries e;
	/* ART_KEY_LEN + 1 levels at most: depth grows by >= 1 per level */
	for (unsigned level = 0; p && level <= ART_KEY_LEN; level++) {
		if (ART_IS_LEAF(p))
			return ART_LEAF(p);
		art_children(p, &e);
		struct art_node *next = NULL;
		for (unsigned i = 0; i < e.n && !next; i++)
			next = e.child[i];
		p = next;
	}
	return NULL;
}

/* --- in-place updates of NODE48 and NODE256 (both trees) --- */

/*
 * art_n48_add -- Algorithm 5: write the child into a free pointer slot,
 * persist it, then commit with the one-byte index store.  The free slot is
 * found from index[] (not from a NULL pointer) so a slot written before a
 * crash but never committed is reused instead of lost.
 */
void
art_n48_add(struct art_node48 *n, uint8_t b, struct art_node *child)
{
	uint64_t used = 0;
	for (unsigned k = 0; k < 256; k++)
		if (n->index[k] >= 1 && n->index[k] <= 48)
			used |= 1ull << (n->index[k] - 1);
	unsigned i = 0;
	while (i < 48 && (used >> i & 1))
		i++;
	if (i == 48)
		abort();   /* callers grow a full node first */
	n->child[i] = child;
	persistent(&n->child[i], sizeof(n->child[i]));
	n->index[b] = (uint8_t)(i + 1);
	persistent(&n->index[b], 1);
}

/* art_n48_remove -- unlink byte B with one index store (the pointer slot becomes free) */
void
art_n48_remove(struct art_node48 *n, uint8_t b)
{
	n->index[b] = 0;
	persistent(&n->index[b], 1);
}

/* art_n256_add -- publish CHILD at byte B with one pointer store */
void
art_n256_add(struct art_node256 *n, uint8_t b, struct art_node *child)
{
	n->child[b] = child;
	persistent(&n->child[b], sizeof(n->child[b]));
}

/* art_n256_remove -- unlink byte B with one pointer store */
void
art_n256_remove(struct art_node256 *n, uint8_t b)
{
	n->child[b] = NULL;
	persistent(&n->child[b], sizeof(n->child[b]));
}

/*
 * art_replace -- swing the 8-byte slot REF from OLD (persisted earlier) to
 * the fully persisted NU, persist the swing, then free OLD.  The one commit
 * point of every copy-and-exchange (grow, shrink, CoW).
 */
int
art_replace(struct art_node **ref, struct art_node *old, struct art_node *nu)
{
	*ref = nu;
	persistent(ref, sizeof(*ref));
	if (old)
		pm_free(old);
	return CC_OK;
}

/* --- header repair (Algorithm 2) --- */

/*
 * art_repair_header -- rebuild N's header for DEPTH from its keys.
 *
 * Algorithm 2 selects "two different arbitrary leaves".  Two leaves under
 * the SAME child share more than N's prefix, so the recomputed prefix would
 * be too long; the leaves must come from two different children.  We take
 * the leftmost leaf of the first and of the last child: all keys below N
 * agree up to N's branching byte and these two differ there, so their
 * common prefix from DEPTH is exactly N's prefix.  Returns 0, or -1 if N
 * has fewer than two children or the prefix does not fit (beyond repair).
 */
int
art_repair_header(struct art_node *n, unsigned depth)
{
#ifdef BUG_ART_SKIP_REPAIR
	/* BUG_ART_SKIP_REPAIR: recovery and traversals accept the header as found. */
	(void)n; (void)depth;
	return 0;
#else
	struct art_entries e;
	art_children(n, &e);
	struct art_node *first = NULL, *last = NULL;
	for (unsigned i = 0; i < e.n; i++) {
		if (!e.child[i])
			continue;
		if (!first)
			first = e.child[i];
		last = e.child[i];
	}
	if (!first || first == last)
		return -1;
	struct art_leaf *l1 = art_min_leaf(first);
#ifdef BUG_ART_REPAIR_SAME_CHILD
	/* BUG_ART_REPAIR_SAME_CHILD: the paper-literal "two arbitrary leaves"
	 * taken without care: both come from the first child (here: the same
	 * leaf), the common prefix is the whole key and the repair gives up. */
	struct art_leaf *l2 = art_min_leaf(first);
	(void)last;
#else
	struct art_leaf *l2 = art_min_leaf(last);
#endif
	if (!l1 || !l2)
		return -1;
	unsigned b = depth;
	while (b < ART_KEY_LEN && l1->key[b] == l2->key[b])
		b++;
	unsigned plen = b - depth;
	if (b >= ART_KEY_LEN || plen > ART_MAX_PREFIX)
		return -1;
	union art_hdr h = art_hdr_make(depth, plen, &l1->key[depth]);
	n->hdr.raw = h.raw;            /* Algorithm 2 line 9: one 8-byte store */
	persistent(&n->hdr, sizeof(n->hdr));
	return 0;
#endif
}

/*
 * art_visit -- make N's header trustworthy before a traversal reads it.
 * In WOART a header whose depth differs from the depth at which the
 * traversal reached N was written by a split or merge whose parent-pointer
 * swing never became persistent; repair it now (lazy, as in the thesis).
 * Returns 0, or -1 if the header is beyond repair.
 */
int
art_visit(const struct art_tree *t, struct art_node *n, unsigned depth)
{
	if (!t->ops->repair || n->hdr.f.depth == depth)
		return 0;
	return art_repair_header(n, depth);
}
