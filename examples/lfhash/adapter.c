/*
 * adapter.c -- lfhash behind the tree adapter API (trees/common/cc_tree.h)
 *
 * The map is one pool object (directory, segments, records) whose address is the first word of
 * the pool's root area, made at create. No scan (optional). The dump lists the keys in order, as
 * the driver requires. Lock-free (lfhash.c), so `.threads` says it may be called from several
 * threads; recovery clears the dirty marks a crash left.
 */
#include <stdlib.h>
#include <string.h>

#include "cc_tree.h"
#include "persist.h"
#include "pm_alloc.h"
#include "lfhash.h"

static struct lfhash **root(void) { return pm_root(); }

static int status(int st)
{
	switch (st) {
	case LFH_OK: return CC_OK;
	case LFH_EXISTS: return CC_EXISTS;
	case LFH_NOTFOUND: return CC_NOTFOUND;
	case LFH_FULL: return CC_NOSPACE;
	default: return CC_ERROR;
	}
}

static void *a_create(void *pool, size_t size)
{
	(void)size;
	struct lfhash *h = pm_alloc(sizeof(*h));
	if (!h)
		return 0;
	persistent(h, sizeof(*h));
	*root() = h;
	persistent(root(), sizeof(*root()));
	lfh_recover(h);
	return pool;
}

static void *a_open(void *pool, size_t size) { (void)size; return *root() ? pool : 0; }
static int a_recover(void *t) { (void)t; lfh_recover(*root()); return 0; }

static uint64_t value_of(const uint8_t *val)
{
	uint64_t v;
	memcpy(&v, val, 8);
	return v;
}

static int a_insert(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	(void)t, (void)klen, (void)vlen;
	return status(lfh_insert(*root(), cc_key_u64(key), value_of(val)));
}

static int a_update(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	(void)t, (void)klen, (void)vlen;
	return status(lfh_update(*root(), cc_key_u64(key), value_of(val)));
}

static int a_remove(void *t, const uint8_t *key, size_t klen)
{
	(void)t, (void)klen;
	return status(lfh_delete(*root(), cc_key_u64(key)));
}

static int a_lookup(void *t, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen)
{
	uint64_t v;
	(void)t, (void)klen;
	int st = lfh_get(*root(), cc_key_u64(key), &v);
	if (st == LFH_OK) {
		memcpy(val, &v, 8);
		*vlen = 8;
	}
	return status(st);
}

struct pairs {
	uint64_t key[4 * 32], value[4 * 32];
	int n;
};

static void collect(void *ctx, uint64_t key, uint64_t value)
{
	struct pairs *p = ctx;
	if (p->n < 4 * 32) {
		p->key[p->n] = key;
		p->value[p->n++] = value;
	}
}

/* the present keys in key order (insertion sort of at most 128) */
static void a_dump(void *t, cc_kv_fn fn, void *ctx)
{
	(void)t;
	static struct pairs p;
	p.n = 0;
	lfh_each(*root(), collect, &p);
	for (int i = 1; i < p.n; i++)
		for (int j = i; j > 0 && p.key[j - 1] > p.key[j]; j--) {
			uint64_t k = p.key[j], v = p.value[j];
			p.key[j] = p.key[j - 1], p.value[j] = p.value[j - 1];
			p.key[j - 1] = k, p.value[j - 1] = v;
		}
	for (int i = 0; i < p.n; i++) {
		uint8_t k[8];
		cc_u64_key(p.key[i], k);
		if (fn(ctx, k, 8, (const uint8_t *)&p.value[i], 8))
			return;
	}
}

/* no key twice */
static size_t a_check(void *t, cc_violation_fn fn, void *ctx)
{
	(void)t;
	static struct pairs p;
	p.n = 0;
	lfh_each(*root(), collect, &p);
	for (int i = 0; i < p.n; i++)
		for (int j = i + 1; j < p.n; j++)
			if (p.key[i] == p.key[j]) {
				fn(ctx, "a key in two slots");
				return 1;
			}
	return 0;
}

static void a_reachable(void *t, cc_obj_fn fn, void *ctx) { (void)t; fn(ctx, *root(), sizeof(struct lfhash)); }
static void a_allocated(void *t, cc_obj_fn fn, void *ctx) { (void)t; pm_allocated(fn, ctx); }

const struct cc_adapter cc_adapter = {
	.name = "lfhash",
	.key_kind = CC_KEYS_U64,
	.value_size = 8,
	.threads = 1,      /* lock-free: safe from several threads */
	.create = a_create,
	.open = a_open,
	.recover = a_recover,
	.insert = a_insert,
	.update = a_update,
	.remove = a_remove,
	.lookup = a_lookup,
	.dump = a_dump,
	.check = a_check,
	.reachable = a_reachable,
	.allocated = a_allocated,
};
