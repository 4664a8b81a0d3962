/*
 * wort.c -- WORT operations: insert, update, delete, lookup, scan, dump
 *
 * Failure atomicity (WORT thesis, sections 3.2 and 3.4; cited in wort.h)
 * ----------------------------------------------------------------------
 * Every change is prepared in objects nobody points to yet, persisted, and
 * published by ONE 8-byte store that is persisted last:
 *   - insert into an empty slot: value, leaf; then the slot.
 *   - insert beside a leaf: value, leaf, a new node holding both leaves;
 *     then the slot that held the old leaf.
 *   - insert splitting a compressed path (Algorithm 1): value, leaf, a new
 *     parent taking the common part of the prefix; the old node's header
 *     loses that part in one 8-byte store; then the parent's slot.  A crash
 *     before the slot store leaves the old node with a header whose depth
 *     is too large for its place: recovery and every traversal detect the
 *     mismatch and rebuild the header (Algorithm 2, wort_repair).
 *   - update: a new value object, then the leaf's value pointer; the old
 *     value is freed after.
 *   - delete: the leaf's slot is cleared; if that would leave the parent
 *     with one child, the remaining child takes the parent's place instead
 *     (its header first absorbs the parent's prefix, in one store, which is
 *     harmless while the parent still points to it: the depth mismatch is
 *     repaired like a split's), so no single-child node is ever durable.
 * Objects are freed only after the store that unlinks them is durable; a
 * crash in between leaks them (known by design, trees/wort/expect.json).
 *
 * Seeded bugs (trees/wort/bugs.json) are #ifdef BUG_WORT_* at their spots.
 */
#include <stdio.h>
#include "wort_internal.h"

/* value_new -- a value object holding VAL, not yet persisted (internal) */
static uint8_t *value_new(const uint8_t val[8])
{
	uint8_t *v = pm_alloc(8);
	if (v)
		memcpy(v, val, 8);
	return v;
}

/* leaf_new -- a leaf for KEY pointing at VALUE, not yet persisted (internal) */
static struct wort_leaf *leaf_new(const uint8_t key[8], uint8_t *value)
{
	struct wort_leaf *l = pm_alloc(sizeof(*l));
	if (l) {
		memcpy(l->key, key, 8);
		l->value = value;
	}
	return l;
}

/* node_new -- an inner node with header HDR and no children yet (internal) */
static struct wort_node *node_new(uint64_t hdr)
{
	struct wort_node *n = pm_alloc(sizeof(*n));
	if (n)
		n->hdr = hdr;
	return n;
}

/* make_leaf -- value and leaf for an insert, or NULL when the pool is full (internal) */
static struct wort_leaf *make_leaf(const uint8_t key[8], const uint8_t val[8])
{
	uint8_t *v = value_new(val);
	struct wort_leaf *l = v ? leaf_new(key, v) : NULL;
	if (v && !l)
		pm_free(v);
	return l;
}

/* drop_leaf -- free an unpublished leaf and its value (internal) */
static void drop_leaf(struct wort_leaf *l)
{
	pm_free(l->value);
	pm_free(l);
}

/* link -- publish REF in SLOT: the commit store of every insert (internal) */
static void link(uintptr_t *slot, uintptr_t ref)
{
	store8(slot, ref);
#ifdef BUG_WORT_NO_FLUSH_LINK
	/* BUG: the commit store is never flushed; the insert returns while
	 * its link may still be only in the cache */
	cc_mfence();
#else
	persistent(slot, 8);
#endif
}

/* unlink -- the one store of a delete: clear SLOT or put REF in it (internal) */
static void unlink_slot(uintptr_t *slot, uintptr_t ref)
{
	store8(slot, ref);
#ifdef BUG_WORT_DELETE_NO_FLUSH
	/* BUG: the unlinking store is not flushed, but the objects it unlinks
	 * are freed (durably) right after */
	cc_mfence();
#else
	persistent(slot, 8);
#endif
}

/* hdr_sane -- H can describe a node at DEPTH of an 8-byte key tree (internal) */
static int hdr_sane(uint64_t h, unsigned depth)
{
	return hdr_depth(h) == depth && depth + hdr_plen(h) < WORT_NIBBLES;
}

/* node_header -- N's header, first repaired if its depth is not DEPTH (lazy Algorithm 2) */
static uint64_t node_header(struct wort_node *n, unsigned depth)
{
	uint64_t h = load8(&n->hdr);
	if (hdr_depth(h) != depth)
		h = wort_repair(n, depth);
	return h;
}

/* node_prefix -- all HDR_PLEN(H) prefix nibbles of N into OUT (internal) */
static void node_prefix(struct wort_node *n, uint64_t h, uint8_t out[WORT_NIBBLES])
{
	unsigned plen = hdr_plen(h);
	for (unsigned i = 0; i < plen && i < WORT_PREFIX_CAP; i++)
		out[i] = (uint8_t)hdr_nibble(h, i);
	if (plen > WORT_PREFIX_CAP) {
		/* the hybrid scheme: nibbles past the header come from any leaf below */
		struct wort_leaf *l = wort_min_leaf((uintptr_t)n);
		for (unsigned i = WORT_PREFIX_CAP; i < plen; i++)
			out[i] = l ? (uint8_t)key_nibble(l->key, hdr_depth(h) + i) : 0;
	}
}

/* corrupt -- say why an operation cannot go on (internal) */
static int corrupt(struct wort_node *n, unsigned depth)
{
	fprintf(stderr, "wort: node %p at depth %u has an unusable header %#llx\n",
		(void *)n, depth, (unsigned long long)load8(&n->hdr));
	return CC_ERROR;
}

/* bad_pointer -- say that a traversal met a pointer it cannot follow (internal) */
static int bad_pointer(uintptr_t ref, unsigned depth)
{
	fprintf(stderr, "wort: pointer %#lx at depth %u is outside the heap\n", (unsigned long)ref, depth);
	return CC_ERROR;
}

/* persist_leaf_and -- persist a new value and leaf plus OBJ (LEN bytes, may be NULL) (internal) */
static void persist_leaf_and(struct wort_leaf *l, const void *obj, size_t len)
{
	persist_begin();
	cc_flush(l->value, 8);
	cc_flush(l, sizeof(*l));
	if (obj)
		cc_flush(obj, len);
	persist_end();
}

/* split_leaf -- KEY meets leaf OLD at DEPTH: a node holding both replaces OLD in SLOT (internal) */
static int split_leaf(uintptr_t *slot, unsigned depth, struct wort_leaf *old,
		      const uint8_t key[8], const uint8_t val[8])
{
	unsigned m = depth;
	while (m < WORT_NIBBLES && key_nibble(old->key, m) == key_nibble(key, m))
		m++;
	if (m == WORT_NIBBLES)
		return CC_EXISTS;
	struct wort_leaf *l = make_leaf(key, val);
	if (!l)
		return CC_NOSPACE;
	struct wort_node *n = node_new(hdr_make(depth, m - depth, key));
	if (!n) {
		drop_leaf(l);
		return CC_NOSPACE;
	}
	n->child[key_nibble(old->key, m)] = LEAF_REF(old);
	n->child[key_nibble(key, m)] = LEAF_REF(l);
	persist_leaf_and(l, n, sizeof(*n));
	link(slot, (uintptr_t)n);
	return CC_OK;
}

/* write_split_header -- the old node's new header after a split: one 8-byte store (internal) */
static void write_split_header(struct wort_node *n, uint64_t h)
{
#ifdef BUG_WORT_SPLIT_HDR_TWO_STORES
	/* BUG: the header is written in two stores, prefix length and prefix
	 * first (keeping the old depth), the depth byte second.  A crash between
	 * them leaves a header whose depth still matches the node's place, so
	 * nobody repairs it, but whose prefix is the shortened one. */
	store8(&n->hdr, (h & ~(uint64_t)0xff) | (load8(&n->hdr) & 0xff));
	__asm__ volatile("" ::: "memory");
	*(volatile uint8_t *)&n->hdr = (uint8_t)hdr_depth(h);
#else
	store8(&n->hdr, h);
#endif
}

/* split_prefix -- Algorithm 1: KEY leaves N's compressed path after K of its PLEN nibbles (internal) */
static int split_prefix(uintptr_t *slot, struct wort_node *n, unsigned depth,
			const uint8_t prefix[WORT_NIBBLES], unsigned plen, unsigned k,
			const uint8_t key[8], const uint8_t val[8])
{
	struct wort_leaf *l = make_leaf(key, val);
	if (!l)
		return CC_NOSPACE;
	/* the new parent keeps the K common nibbles (KEY has them too) */
	struct wort_node *p = node_new(hdr_make(depth, k, key));
	if (!p) {
		drop_leaf(l);
		return CC_NOSPACE;
	}
	p->child[prefix[k]] = (uintptr_t)n;
	p->child[key_nibble(key, depth + k)] = LEAF_REF(l);
	/* N keeps the nibbles after the one the parent now branches on */
	unsigned nd = depth + k + 1, np = plen - k - 1;
	uint64_t h = nd | (uint64_t)np << 8;
	for (unsigned i = 0; i < np && i < WORT_PREFIX_CAP; i++)
		h |= (uint64_t)prefix[k + 1 + i] << (16 + 4 * i);
	write_split_header(n, h);
	/* lines 8-12: leaf, new parent and N's header durable before the parent's slot */
	persist_begin();
	cc_flush(l->value, 8);
	cc_flush(l, sizeof(*l));
	cc_flush(p, sizeof(*p));
	cc_flush(&n->hdr, 8);
	persist_end();
	link(slot, (uintptr_t)p);
	return CC_OK;
}

/* wort_insert -- add KEY with VAL unless present */
int wort_insert(struct wort *t, const uint8_t key[8], const uint8_t val[8])
{
	uintptr_t *slot = t->root;
	unsigned depth = 0;
	for (;;) {
		uintptr_t ref = load8(slot);
		if (!ref) {
			struct wort_leaf *l = make_leaf(key, val);
			if (!l)
				return CC_NOSPACE;
			persist_leaf_and(l, NULL, 0);
			link(slot, LEAF_REF(l));
			return CC_OK;
		}
		if (!wort_in_heap(AS_LEAF(ref)))
			return bad_pointer(ref, depth);
		if (IS_LEAF(ref)) {
			struct wort_leaf *old = AS_LEAF(ref);
			if (!memcmp(old->key, key, 8))
				return CC_EXISTS;
			return split_leaf(slot, depth, old, key, val);
		}
		struct wort_node *n = AS_NODE(ref);
		uint64_t h = node_header(n, depth);
		if (!hdr_sane(h, depth))
			return corrupt(n, depth);
		uint8_t prefix[WORT_NIBBLES];
		node_prefix(n, h, prefix);
		unsigned plen = hdr_plen(h), k = 0;
		while (k < plen && prefix[k] == key_nibble(key, depth + k))
			k++;
		if (k < plen)
			return split_prefix(slot, n, depth, prefix, plen, k, key, val);
		depth += plen;
		slot = &n->child[key_nibble(key, depth)];
		depth++;
	}
}

/* find_leaf -- the leaf of KEY or NULL; optimistic on long prefixes, exact at the leaf (internal) */
static struct wort_leaf *find_leaf(struct wort *t, const uint8_t key[8])
{
	uintptr_t ref = load8(t->root);
	unsigned depth = 0;
	while (ref) {
		if (!wort_in_heap(AS_LEAF(ref))) {
			bad_pointer(ref, depth);
			return NULL;
		}
		if (IS_LEAF(ref)) {
			struct wort_leaf *l = AS_LEAF(ref);
			return memcmp(l->key, key, 8) ? NULL : l;
		}
		struct wort_node *n = AS_NODE(ref);
		uint64_t h = node_header(n, depth);
		if (!hdr_sane(h, depth))
			return NULL;
		unsigned plen = hdr_plen(h);
		for (unsigned i = 0; i < plen && i < WORT_PREFIX_CAP; i++)
			if (hdr_nibble(h, i) != key_nibble(key, depth + i))
				return NULL;
		depth += plen;
		ref = load8(&n->child[key_nibble(key, depth)]);
		depth++;
	}
	return NULL;
}

/* wort_lookup -- copy KEY's value to VAL */
int wort_lookup(struct wort *t, const uint8_t key[8], uint8_t val[8])
{
	struct wort_leaf *l = find_leaf(t, key);
	if (!l)
		return CC_NOTFOUND;
	if (!wort_in_heap(l->value)) {
		fprintf(stderr, "wort: leaf %p has value pointer %p outside the heap\n",
			(void *)l, (void *)l->value);
		return CC_ERROR;
	}
	memcpy(val, l->value, 8);
	return CC_OK;
}

/* wort_update -- replace KEY's value out of place */
int wort_update(struct wort *t, const uint8_t key[8], const uint8_t val[8])
{
	struct wort_leaf *l = find_leaf(t, key);
	if (!l)
		return CC_NOTFOUND;
	uint8_t *old = l->value;
#ifdef BUG_WORT_SWING_BEFORE_VALUE
	/* BUG: the commit store (the leaf's value pointer) is written and
	 * persisted before the value it publishes */
	uint8_t *v = pm_alloc(8);
	if (!v)
		return CC_NOSPACE;
	store8(&l->value, (uint64_t)(uintptr_t)v);
	persistent(&l->value, 8);
	memcpy(v, val, 8);
	persistent(v, 8);
#else
	uint8_t *v = value_new(val);
	if (!v)
		return CC_NOSPACE;
#ifdef BUG_WORT_UPDATE_NO_FENCE
	/* BUG: the value is flushed but not fenced before the pointer swing,
	 * so the swing may reach PM first */
	cc_flush(v, 8);
#else
	persistent(v, 8);
#endif
	store8(&l->value, (uint64_t)(uintptr_t)v);
	persistent(&l->value, 8);
#endif
#ifdef BUG_WORT_LEAK_OLD_VALUE
	/* BUG: the old value object is never freed */
	(void)old;
#else
	if (wort_in_heap(old))
		pm_free(old);
#endif
	return CC_OK;
}

/* wort_delete -- remove KEY with one atomic pointer store (see the top of the file) */
int wort_delete(struct wort *t, const uint8_t key[8])
{
	uintptr_t *slot = t->root, *pslot = NULL;
	struct wort_node *p = NULL;
	unsigned depth = 0, pdepth = 0;
	for (;;) {
		uintptr_t ref = load8(slot);
		if (!ref)
			return CC_NOTFOUND;
		if (!wort_in_heap(AS_LEAF(ref)))
			return bad_pointer(ref, depth);
		if (IS_LEAF(ref)) {
			if (memcmp(AS_LEAF(ref)->key, key, 8))
				return CC_NOTFOUND;
			break;
		}
		struct wort_node *n = AS_NODE(ref);
		uint64_t h = node_header(n, depth);
		if (!hdr_sane(h, depth))
			return CC_NOTFOUND;
		unsigned plen = hdr_plen(h);
		for (unsigned i = 0; i < plen && i < WORT_PREFIX_CAP; i++)
			if (hdr_nibble(h, i) != key_nibble(key, depth + i))
				return CC_NOTFOUND;
		pslot = slot, p = n, pdepth = depth;
		depth += plen;
		slot = &n->child[key_nibble(key, depth)];
		depth++;
	}
	struct wort_leaf *l = AS_LEAF(load8(slot));
	unsigned others = 0, last = 0;
	for (unsigned c = 0; p && c < WORT_FANOUT; c++)
		if (&p->child[c] != slot && load8(&p->child[c]))
			others++, last = c;
	if (!p || others != 1) {
		unlink_slot(slot, 0);
	} else {
		/* P would keep one child C: C takes P's place in P's slot */
		uintptr_t c = load8(&p->child[last]);
		if (!IS_LEAF(c)) {
			struct wort_node *cn = AS_NODE(c);
			uint64_t ch = load8(&cn->hdr);
			/* C branches where it did; depth + prefix length stays right
			 * even if C's depth is a stale one awaiting repair */
			unsigned idx = hdr_depth(ch) + hdr_plen(ch);
			struct wort_leaf *any = wort_min_leaf(c);
			if (idx <= pdepth || idx >= WORT_NIBBLES || !any)
				return corrupt(cn, depth);
			store8(&cn->hdr, hdr_make(pdepth, idx - pdepth, any->key));
			persistent(&cn->hdr, 8);
		}
		unlink_slot(pslot, c);
		pm_free(p);
	}
	if (wort_in_heap(l->value))
		pm_free(l->value);
	pm_free(l);
	return CC_OK;
}

struct scan {
	const uint8_t *key;  /* lower bound, NULL for all */
	size_t left;
	size_t seen;
	cc_kv_fn fn;
	void *ctx;
	int stop;
};

/* scan_emit -- report leaf L (internal) */
static void scan_emit(struct scan *s, struct wort_leaf *l)
{
	int valid = wort_in_heap(l->value);
	s->seen++;
	if (s->fn(s->ctx, l->key, 8, valid ? l->value : l->key, valid ? 8 : 0) || --s->left == 0)
		s->stop = 1;
}

/* scan_all -- every leaf below REF in order, touching no header (internal) */
static void scan_all(struct scan *s, uintptr_t ref, unsigned level)
{
	if (!ref || s->stop || level > WORT_NIBBLES || !wort_in_heap(AS_LEAF(ref)))
		return;
	if (IS_LEAF(ref)) {
		scan_emit(s, AS_LEAF(ref));
		return;
	}
	struct wort_node *n = AS_NODE(ref);
	for (unsigned c = 0; c < WORT_FANOUT && !s->stop; c++)
		scan_all(s, load8(&n->child[c]), level + 1);
}

/* scan_from -- leaves below REF (at DEPTH) with key >= s->key, in order (internal) */
static void scan_from(struct scan *s, uintptr_t ref, unsigned depth)
{
	if (!ref || s->stop || !wort_in_heap(AS_LEAF(ref)))
		return;
	if (IS_LEAF(ref)) {
		if (memcmp(AS_LEAF(ref)->key, s->key, 8) >= 0)
			scan_emit(s, AS_LEAF(ref));
		return;
	}
	struct wort_node *n = AS_NODE(ref);
	uint64_t h = node_header(n, depth);
	if (!hdr_sane(h, depth))
		return;
	uint8_t prefix[WORT_NIBBLES];
	node_prefix(n, h, prefix);
	unsigned plen = hdr_plen(h);
	for (unsigned i = 0; i < plen; i++) {
		unsigned kn = key_nibble(s->key, depth + i);
		if (prefix[i] > kn) {
			scan_all(s, ref, 0);  /* every key below is larger */
			return;
		}
		if (prefix[i] < kn)
			return;               /* every key below is smaller */
	}
	unsigned q = depth + plen, kq = key_nibble(s->key, q);
	for (unsigned c = kq; c < WORT_FANOUT && !s->stop; c++) {
		uintptr_t child = load8(&n->child[c]);
		if (c == kq)
			scan_from(s, child, q + 1);
		else
			scan_all(s, child, 0);
	}
}

/* wort_scan -- up to COUNT pairs from KEY on */
size_t wort_scan(struct wort *t, const uint8_t key[8], size_t count, cc_kv_fn fn, void *ctx)
{
	struct scan s = {.key = key, .left = count, .fn = fn, .ctx = ctx};
	if (count)
		scan_from(&s, load8(t->root), 0);
	return s.seen;
}

/* wort_dump -- every pair in order; reads no header, so it never repairs */
void wort_dump(struct wort *t, cc_kv_fn fn, void *ctx)
{
	struct scan s = {.left = SIZE_MAX, .fn = fn, .ctx = ctx};
	scan_all(&s, load8(t->root), 0);
}
