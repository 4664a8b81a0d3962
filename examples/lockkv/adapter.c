/*
 * adapter.c -- lockkv behind the tree adapter API (trees/common/cc_tree.h)
 *
 * The table is one pool object whose address is the first word of the pool's root area, made at
 * create. No scan (optional). The dump lists the keys in order, as the driver requires. The
 * operations lock (lockkv.c), so `.threads` says it may be called from several threads.
 */
#include <string.h>

#include "cc_tree.h"
#include "persist.h"
#include "pm_alloc.h"
#include "lockkv.h"

static struct lockkv **root(void) { return pm_root(); }

static int status(int st)
{
	switch (st) {
	case LOCKKV_OK: return CC_OK;
	case LOCKKV_EXISTS: return CC_EXISTS;
	case LOCKKV_NOTFOUND: return CC_NOTFOUND;
	case LOCKKV_FULL: return CC_NOSPACE;
	default: return CC_ERROR;
	}
}

static void *a_create(void *pool, size_t size)
{
	(void)size;
	struct lockkv *t = pm_alloc(sizeof(*t));
	if (!t)
		return 0;
	persistent(t, sizeof(*t));
	*root() = t;
	persistent(root(), sizeof(*root()));
	return pool;
}

static void *a_open(void *pool, size_t size) { (void)size; return *root() ? pool : 0; }
static int a_recover(void *t) { (void)t; return 0; }

static int a_insert(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	uint64_t v;
	(void)t, (void)klen, (void)vlen;
	memcpy(&v, val, 8);
	return status(lockkv_insert(*root(), cc_key_u64(key), v));
}

static int a_update(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	uint64_t v;
	(void)t, (void)klen, (void)vlen;
	memcpy(&v, val, 8);
	return status(lockkv_update(*root(), cc_key_u64(key), v));
}

static int a_remove(void *t, const uint8_t *key, size_t klen)
{
	(void)t, (void)klen;
	return status(lockkv_delete(*root(), cc_key_u64(key)));
}

static int a_lookup(void *t, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen)
{
	uint64_t v;
	(void)t, (void)klen;
	int st = lockkv_get(*root(), cc_key_u64(key), &v);
	if (st == LOCKKV_OK) {
		memcpy(val, &v, 8);
		*vlen = 8;
	}
	return status(st);
}

/* the full slots in key order: the smallest key above the last one listed, each time */
static void a_dump(void *t, cc_kv_fn fn, void *ctx)
{
	(void)t;
	struct lockkv *s = *root();
	uint64_t last = 0;
	for (;;) {
		struct lockkv_slot *next = 0;
		for (int i = 0; i < LOCKKV_SLOTS; i++)
			if (s->slot[i].key > last && (!next || s->slot[i].key < next->key))
				next = &s->slot[i];
		if (!next)
			return;
		uint8_t k[8];
		cc_u64_key(next->key, k);
		if (fn(ctx, k, 8, (const uint8_t *)&next->value, 8))
			return;
		last = next->key;
	}
}

/* no key twice */
static size_t a_check(void *t, cc_violation_fn fn, void *ctx)
{
	(void)t;
	struct lockkv *s = *root();
	for (int i = 0; i < LOCKKV_SLOTS; i++)
		for (int j = i + 1; j < LOCKKV_SLOTS; j++)
			if (s->slot[i].key && s->slot[i].key == s->slot[j].key) {
				CC_VIOLATION(fn, ctx, "a key in two slots");
				return 1;
			}
	return 0;
}

static void a_reachable(void *t, cc_obj_fn fn, void *ctx) { (void)t; fn(ctx, *root(), sizeof(struct lockkv)); }
static void a_allocated(void *t, cc_obj_fn fn, void *ctx) { (void)t; pm_allocated(fn, ctx); }

const struct cc_adapter cc_adapter = {
	.name = "lockkv",
	.key_kind = CC_KEYS_U64,
	.value_size = 8,
	.threads = 1,      /* one mutex: safe from several threads */
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
