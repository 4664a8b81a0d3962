/*
 * adapter.c -- WORT behind the tree adapter API (cc_tree.h): 8-byte keys and values
 *
 * The driver formats or attaches the pool (pm_alloc.h) before create/open.
 */
#include "cc_tree.h"
#include "pm_alloc.h"
#include "wort.h"

static void *a_create(void *pool, size_t size) { (void)pool, (void)size; return wort_create(); }
static void *a_open(void *pool, size_t size) { (void)pool, (void)size; return wort_open(); }
static int a_recover(void *t) { return wort_recover(t); }

static int a_insert(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	return klen == 8 && vlen == 8 ? wort_insert(t, key, val) : CC_ERROR;
}

static int a_update(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	return klen == 8 && vlen == 8 ? wort_update(t, key, val) : CC_ERROR;
}

static int a_remove(void *t, const uint8_t *key, size_t klen)
{
	return klen == 8 ? wort_delete(t, key) : CC_ERROR;
}

static int a_lookup(void *t, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen)
{
	if (klen != 8)
		return CC_ERROR;
	int st = wort_lookup(t, key, val);
	*vlen = st == CC_OK ? 8 : 0;
	return st;
}

static size_t a_scan(void *t, const uint8_t *key, size_t klen, size_t count, cc_kv_fn fn, void *ctx)
{
	return klen == 8 ? wort_scan(t, key, count, fn, ctx) : 0;
}

static void a_dump(void *t, cc_kv_fn fn, void *ctx) { wort_dump(t, fn, ctx); }
static size_t a_check(void *t, cc_violation_fn fn, void *ctx) { return wort_check(t, fn, ctx); }
static void a_reachable(void *t, cc_obj_fn fn, void *ctx) { wort_reachable(t, fn, ctx); }
static void a_allocated(void *t, cc_obj_fn fn, void *ctx) { (void)t; pm_allocated(fn, ctx); }
static void a_close(void *t) { wort_close(t); }

const struct cc_adapter cc_adapter = {
	.name = "wort",
	.key_kind = CC_KEYS_U64,
	.value_size = 8,
	.create = a_create,
	.open = a_open,
	.recover = a_recover,
	.insert = a_insert,
	.update = a_update,
	.remove = a_remove,
	.lookup = a_lookup,
	.scan = a_scan,
	.dump = a_dump,
	.check = a_check,
	.reachable = a_reachable,
	.allocated = a_allocated,
	.close = a_close,
};
