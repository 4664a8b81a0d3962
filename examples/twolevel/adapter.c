/*
 * adapter.c -- twolevel behind the tree adapter API (cc_tree.h): 8-byte keys and values
 *
 * The driver formats or attaches the pool (pm_alloc.h) before create/open.
 * twolevel has no scan (the dump sorts every pair), and its recovery drops the
 * bottom copy of a key a crash left on both levels.
 */
#include <string.h>
#include "cc_tree.h"
#include "twolevel.h"

static void *a_create(void *pool, size_t size) { (void)pool, (void)size; return twolevel_create(); }
static void *a_open(void *pool, size_t size) { (void)pool, (void)size; return twolevel_open(); }
static int a_recover(void *t) { return twolevel_recover(t); }

static uint64_t value(const uint8_t *val)
{
	uint64_t v;
	memcpy(&v, val, 8);
	return v;
}

static int a_insert(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	return klen == 8 && vlen == 8 ? twolevel_insert(t, cc_key_u64(key), value(val)) : CC_ERROR;
}

static int a_update(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	return klen == 8 && vlen == 8 ? twolevel_update(t, cc_key_u64(key), value(val)) : CC_ERROR;
}

static int a_remove(void *t, const uint8_t *key, size_t klen)
{
	return klen == 8 ? twolevel_delete(t, cc_key_u64(key)) : CC_ERROR;
}

static int a_lookup(void *t, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen)
{
	uint64_t v;
	if (klen != 8)
		return CC_ERROR;
	int st = twolevel_lookup(t, cc_key_u64(key), &v);
	if (st == CC_OK) {
		memcpy(val, &v, 8);
		*vlen = 8;
	}
	return st;
}

static void a_dump(void *t, cc_kv_fn fn, void *ctx) { twolevel_dump(t, fn, ctx); }
static size_t a_check(void *t, cc_violation_fn fn, void *ctx) { return twolevel_check(t, fn, ctx); }
static void a_reachable(void *t, cc_obj_fn fn, void *ctx) { twolevel_reachable(t, fn, ctx); }

const struct cc_adapter cc_adapter = {
	.name = "twolevel",
	.key_kind = CC_KEYS_U64,
	.value_size = 8,
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
};
