/*
 * smallbt.c -- the smallbt B+tree (see smallbt.h): copy-on-write leaves under
 * at most one inner node, the root split, recovery
 *
 * Seeded bug (bugs.json):
 *   BUG_SMALLBT_ROOT_PUBLISH_FIRST  the root split stores the new inner node
 *                                   into the root before persisting it
 */
#include <stdio.h>
#include <string.h>
#include "smallbt.h"
#include "persist.h"
#include "pm_alloc.h"

#define LEAF_SLOTS 60           /* pairs a leaf holds: the 61st key splits it */
#define FANOUT 64               /* children of the inner node: 64 leaves, at least 1920 keys */
#define LEAF 1                  /* a node's kind word; 0 is no node (never persisted) */
#define INNER 2

struct leaf {
	uint64_t kind;
	uint64_t n;
	uint64_t keys[LEAF_SLOTS];
	uint64_t vals[LEAF_SLOTS];
};

struct inner {
	uint64_t kind;
	uint64_t n;
	uint64_t lows[FANOUT];          /* lows[0] is 0: child i holds keys in [lows[i], lows[i+1]) */
	struct leaf *kids[FANOUT];
};

/* the pool's root area (PM_ROOT_SIZE bytes): one pointer, to a leaf or an inner node */
struct root {
	void *node;
};

struct smallbt {
	struct root *r;
};

static struct smallbt handle;

static uint64_t kind_of(const void *node) { return *(const uint64_t *)node; }

/* publish -- commit NODE (persisted) by one store of the pointer at SLOT */
static void publish(void **slot, void *node)
{
	*slot = node;
	persistent(slot, sizeof(*slot));
}

/* new_leaf -- a persisted leaf of the N pairs KEYS, VALS (in key order) */
static struct leaf *new_leaf(const uint64_t *keys, const uint64_t *vals, uint64_t n)
{
	struct leaf *l = pm_alloc(sizeof(*l));
	if (!l)
		return NULL;
	l->kind = LEAF;
	l->n = n;
	memcpy(l->keys, keys, n * sizeof(keys[0]));
	memcpy(l->vals, vals, n * sizeof(vals[0]));
	persistent(l, sizeof(*l));
	return l;
}

struct smallbt *smallbt_create(void)
{
	struct root *r = pm_root();
	struct leaf *l = new_leaf(NULL, NULL, 0);
	if (!l) {
		fprintf(stderr, "smallbt: pool too small\n");
		return NULL;
	}
	publish(&r->node, l);
	handle.r = r;
	return &handle;
}

struct smallbt *smallbt_open(void)
{
	handle.r = pm_root();
	return handle.r->node ? &handle : NULL;
}

int smallbt_recover(struct smallbt *t)
{
	/* every change is one pointer store; an object replaced but not yet freed leaks */
	return t->r->node ? 0 : -1;
}

/* child -- the index of the child of IN that holds KEY */
static uint64_t child(const struct inner *in, uint64_t key)
{
	uint64_t i = 0;
	while (i + 1 < in->n && in->lows[i + 1] <= key)
		i++;
	return i;
}

/* leaf_for -- the leaf holding KEY, and the slot whose pointer leads to it */
static struct leaf *leaf_for(struct smallbt *t, uint64_t key, void ***slot, struct inner **parent, uint64_t *at)
{
	void *node = t->r->node;
	*slot = &t->r->node;
	*parent = NULL;
	if (kind_of(node) == INNER) {
		struct inner *in = node;
		*at = child(in, key);
		*parent = in;
		*slot = (void **)&in->kids[*at];
		return in->kids[*at];
	}
	return node;
}

/* find -- the slot of KEY in L, or where it would go (FOUND says which) */
static uint64_t find(const struct leaf *l, uint64_t key, int *found)
{
	uint64_t i = 0;
	while (i < l->n && l->keys[i] < key)
		i++;
	*found = i < l->n && l->keys[i] == key;
	return i;
}

int smallbt_lookup(struct smallbt *t, uint64_t key, uint64_t *val)
{
	void **slot;
	struct inner *p;
	uint64_t at;
	struct leaf *l = leaf_for(t, key, &slot, &p, &at);
	int found;
	uint64_t i = find(l, key, &found);
	if (!found)
		return CC_NOTFOUND;
	*val = l->vals[i];
	return CC_OK;
}

/* new_inner -- a persisted inner node: IN's children (none if IN is NULL) with child AT
 * replaced by the N leaves KIDS whose lows are LOWS */
static struct inner *new_inner(const struct inner *in, uint64_t at, struct leaf **kids, const uint64_t *lows,
			       uint64_t n, int persist)
{
	uint64_t have = in ? in->n : 1;
	if (have - 1 + n > FANOUT)
		return NULL;
	struct inner *out = pm_alloc(sizeof(*out));
	if (!out)
		return NULL;
	out->kind = INNER;
	uint64_t m = 0;
	for (uint64_t i = 0; i < have; i++) {
		if (i != at) {
			out->lows[m] = in->lows[i];
			out->kids[m++] = in->kids[i];
			continue;
		}
		for (uint64_t j = 0; j < n; j++) {
			out->lows[m] = lows[j];
			out->kids[m++] = kids[j];
		}
	}
	out->lows[0] = 0;
	out->n = m;
	if (persist)
		persistent(out, sizeof(*out));
	return out;
}

/* split -- L, with KEY, VAL at slot I, is full: two new leaves under the inner node P (made when L
 * is the root: the root split) */
static int split(struct smallbt *t, struct leaf *l, struct inner *p, uint64_t at, uint64_t i,
		 uint64_t key, uint64_t val)
{
	uint64_t keys[LEAF_SLOTS + 1], vals[LEAF_SLOTS + 1];
	memcpy(keys, l->keys, i * sizeof(keys[0]));
	memcpy(vals, l->vals, i * sizeof(vals[0]));
	keys[i] = key;
	vals[i] = val;
	memcpy(keys + i + 1, l->keys + i, (l->n - i) * sizeof(keys[0]));
	memcpy(vals + i + 1, l->vals + i, (l->n - i) * sizeof(vals[0]));
	uint64_t n = l->n + 1, half = n / 2;
	struct leaf *kids[2] = {new_leaf(keys, vals, half), new_leaf(keys + half, vals + half, n - half)};
	if (!kids[0] || !kids[1])
		return CC_NOSPACE;
	uint64_t lows[2] = {p ? p->lows[at] : 0, keys[half]};
	if (!p) {
		/* the root split: the tree grows from one leaf to an inner node over two */
#ifdef BUG_SMALLBT_ROOT_PUBLISH_FIRST
		struct inner *in = new_inner(NULL, 0, kids, lows, 2, 0);
		if (!in)
			return CC_NOSPACE;
		publish(&t->r->node, in);
		persistent(in, sizeof(*in));
#else
		struct inner *in = new_inner(NULL, 0, kids, lows, 2, 1);
		if (!in)
			return CC_NOSPACE;
		publish(&t->r->node, in);
#endif
		pm_free(l);
		return CC_OK;
	}
	struct inner *in = new_inner(p, at, kids, lows, 2, 1);
	if (!in)
		return CC_NOSPACE;
	publish(&t->r->node, in);
	pm_free(p);
	pm_free(l);
	return CC_OK;
}

int smallbt_insert(struct smallbt *t, uint64_t key, uint64_t val)
{
	void **slot;
	struct inner *p;
	uint64_t at = 0;
	struct leaf *l = leaf_for(t, key, &slot, &p, &at);
	int found;
	uint64_t i = find(l, key, &found);
	if (found)
		return CC_EXISTS;
	if (l->n == LEAF_SLOTS)
		return split(t, l, p, at, i, key, val);
	uint64_t keys[LEAF_SLOTS], vals[LEAF_SLOTS];
	memcpy(keys, l->keys, i * sizeof(keys[0]));
	memcpy(vals, l->vals, i * sizeof(vals[0]));
	keys[i] = key;
	vals[i] = val;
	memcpy(keys + i + 1, l->keys + i, (l->n - i) * sizeof(keys[0]));
	memcpy(vals + i + 1, l->vals + i, (l->n - i) * sizeof(vals[0]));
	struct leaf *n = new_leaf(keys, vals, l->n + 1);
	if (!n)
		return CC_NOSPACE;
	publish(slot, n);
	pm_free(l);
	return CC_OK;
}

int smallbt_update(struct smallbt *t, uint64_t key, uint64_t val)
{
	void **slot;
	struct inner *p;
	uint64_t at;
	struct leaf *l = leaf_for(t, key, &slot, &p, &at);
	int found;
	uint64_t i = find(l, key, &found);
	if (!found)
		return CC_NOTFOUND;
	l->vals[i] = val;               /* one 8-byte store: atomic */
	persistent(&l->vals[i], sizeof(l->vals[i]));
	return CC_OK;
}

int smallbt_delete(struct smallbt *t, uint64_t key)
{
	void **slot;
	struct inner *p;
	uint64_t at = 0;
	struct leaf *l = leaf_for(t, key, &slot, &p, &at);
	int found;
	uint64_t i = find(l, key, &found);
	if (!found)
		return CC_NOTFOUND;
	if (p && l->n == 1) {
		/* the leaf empties: out of the inner node, and a lone child left becomes the root */
		if (p->n == 2) {
			publish(&t->r->node, p->kids[1 - at]);
		} else {
			struct inner *in = new_inner(p, at, NULL, NULL, 0, 1);
			if (!in)
				return CC_NOSPACE;
			publish(&t->r->node, in);
		}
		pm_free(p);
		pm_free(l);
		return CC_OK;
	}
	uint64_t keys[LEAF_SLOTS], vals[LEAF_SLOTS];
	memcpy(keys, l->keys, i * sizeof(keys[0]));
	memcpy(vals, l->vals, i * sizeof(vals[0]));
	memcpy(keys + i, l->keys + i + 1, (l->n - i - 1) * sizeof(keys[0]));
	memcpy(vals + i, l->vals + i + 1, (l->n - i - 1) * sizeof(vals[0]));
	struct leaf *n = new_leaf(keys, vals, l->n - 1);
	if (!n)
		return CC_NOSPACE;
	publish(slot, n);
	pm_free(l);
	return CC_OK;
}

/* leaves -- call FN on every leaf in key order (at most FANOUT) */
static void leaves(struct smallbt *t, void (*fn)(struct leaf *, void *), void *ctx)
{
	void *node = t->r->node;
	if (kind_of(node) == INNER) {
		struct inner *in = node;
		for (uint64_t i = 0; i < in->n && i < FANOUT; i++)
			fn(in->kids[i], ctx);
	} else if (kind_of(node) == LEAF) {
		fn(node, ctx);
	}
}

struct dumping {
	cc_kv_fn fn;
	void *ctx;
	int stop;
};

static void dump_leaf(struct leaf *l, void *arg)
{
	struct dumping *d = arg;
	for (uint64_t i = 0; i < l->n && i < LEAF_SLOTS && !d->stop; i++) {
		uint8_t k[8];
		cc_u64_key(l->keys[i], k);
		d->stop = d->fn(d->ctx, k, 8, (const uint8_t *)&l->vals[i], 8);
	}
}

void smallbt_dump(struct smallbt *t, cc_kv_fn fn, void *ctx)
{
	struct dumping d = {fn, ctx, 0};
	leaves(t, dump_leaf, &d);
}

size_t smallbt_check(struct smallbt *t, cc_violation_fn fn, void *ctx)
{
	size_t bad = 0;
	void *node = t->r->node;
	if (!node || !pm_contains(node)) {
		CC_VIOLATION(fn, ctx, "the root is not a node in the pool");
		return 1;
	}
	uint64_t kind = kind_of(node);
	if (kind != LEAF && kind != INNER) {
		CC_VIOLATIONF(fn, ctx, "the root node's kind is %lu", (unsigned long)kind);
		return 1;
	}
	struct inner *in = kind == INNER ? node : NULL;
	uint64_t nkids = in ? in->n : 1;
	if (in && (in->n < 2 || in->n > FANOUT)) {
		CC_VIOLATIONF(fn, ctx, "the inner node has %lu children", (unsigned long)in->n);
		return 1;
	}
	for (uint64_t c = 0; c < nkids; c++) {
		struct leaf *l = in ? in->kids[c] : node;
		if (!l || !pm_contains(l) || l->kind != LEAF || l->n > LEAF_SLOTS) {
			CC_VIOLATIONF(fn, ctx, "child %lu is not a leaf", (unsigned long)c);
			bad++;
			continue;
		}
		uint64_t lo = in ? in->lows[c] : 0;
		for (uint64_t i = 0; i < l->n; i++) {
			if (l->keys[i] < lo || (in && c + 1 < nkids && l->keys[i] >= in->lows[c + 1])
			    || (i && l->keys[i] <= l->keys[i - 1])) {
				CC_VIOLATIONF(fn, ctx, "leaf %lu: key %lu out of order or range",
					      (unsigned long)c, (unsigned long)l->keys[i]);
				bad++;
			}
		}
	}
	return bad;
}

struct reaching {
	cc_obj_fn fn;
	void *ctx;
};

static void reach_leaf(struct leaf *l, void *arg)
{
	struct reaching *r = arg;
	r->fn(r->ctx, l, sizeof(*l));
}

void smallbt_reachable(struct smallbt *t, cc_obj_fn fn, void *ctx)
{
	void *node = t->r->node;
	if (kind_of(node) == INNER)
		fn(ctx, node, sizeof(struct inner));
	struct reaching r = {fn, ctx};
	leaves(t, reach_leaf, &r);
}
