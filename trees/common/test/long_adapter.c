/*
 * long_adapter.c -- a deliberately broken map adapter for the driver's own tests
 *
 * Holds no data; dump reports one pair with a 30-byte key (longer than
 * CC_KEY_MAX) and one with a 20-byte value (longer than CC_VAL_MAX), and
 * lookup of any key returns a 20-byte value.  The driver must report each
 * as a violation or error naming the key, never cut it
 * (tests/trees/test_rangelock_functional.py builds and runs it).
 */
#include <string.h>
#include "cc_tree.h"

static uint8_t root;

static void *a_create(void *pool, size_t size) { (void)pool; (void)size; return &root; }
static int a_recover(void *t) { (void)t; return 0; }
static int a_insert(void *t, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{ (void)t; (void)k; (void)kl; (void)v; (void)vl; return CC_OK; }
static int a_remove(void *t, const uint8_t *k, size_t kl) { (void)t; (void)k; (void)kl; return CC_NOTFOUND; }

static int a_lookup(void *t, const uint8_t *k, size_t kl, uint8_t *val, size_t *vlen)
{
	(void)t; (void)k; (void)kl;
	memset(val, 0xab, 20);   /* the driver's guard buffer takes it; the length gives it away */
	*vlen = 20;
	return CC_OK;
}

static size_t a_scan(void *t, const uint8_t *k, size_t kl, size_t n, cc_kv_fn fn, void *ctx)
{ (void)t; (void)k; (void)kl; (void)n; (void)fn; (void)ctx; return 0; }

static void a_dump(void *t, cc_kv_fn fn, void *ctx)
{
	(void)t;
	uint8_t key[30], val[20];
	memset(key, 0x11, sizeof(key));
	memset(val, 0x22, sizeof(val));
	fn(ctx, key, sizeof(key), val, 8);
	key[0] = 0x33;
	fn(ctx, key, 8, val, sizeof(val));
}

static size_t a_check(void *t, cc_violation_fn fn, void *ctx) { (void)t; (void)fn; (void)ctx; return 0; }
static void a_reachable(void *t, cc_obj_fn fn, void *ctx) { (void)t; (void)fn; (void)ctx; }

const struct cc_adapter cc_adapter = {
	.name = "longkv",
	.key_kind = CC_KEYS_BYTES,
	.value_size = 8,
	.create = a_create,
	.open = a_create,
	.recover = a_recover,
	.insert = a_insert,
	.update = a_insert,
	.remove = a_remove,
	.lookup = a_lookup,
	.scan = a_scan,
	.dump = a_dump,
	.check = a_check,
	.reachable = a_reachable,
};
