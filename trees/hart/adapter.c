/*
 * adapter.c -- HART behind the tree adapter API (cc_tree.h): byte keys of
 * 1..24 bytes, values of 1..16 bytes (value_min 1, value_size 16: fuzzing
 * draws 8- and 16-byte values, so both value chains are used, updates move
 * values between them, and 16-byte values span two 8-byte failure-atomic
 * units and can tear)
 *
 * The driver formats or attaches the pool (pm_alloc.h) before create/open.
 */
#include "cc_tree.h"
#include "hart.h"

static void *a_create(void *pool, size_t size) { (void)pool, (void)size; return hart_create(); }
static void *a_open(void *pool, size_t size) { (void)pool, (void)size; return hart_open(); }
static int a_recover(void *t) { return hart_recover(t); }

static int a_insert(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	return hart_insert(t, key, klen, val, vlen);
}

static int a_update(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	return hart_update(t, key, klen, val, vlen);
}

static int a_remove(void *t, const uint8_t *key, size_t klen) { return hart_delete(t, key, klen); }

static int a_lookup(void *t, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen)
{
	return hart_lookup(t, key, klen, val, vlen);
}

static size_t a_scan(void *t, const uint8_t *key, size_t klen, size_t count, cc_kv_fn fn, void *ctx)
{
	return hart_scan(t, key, klen, count, fn, ctx);
}

static void a_dump(void *t, cc_kv_fn fn, void *ctx) { hart_dump(t, fn, ctx); }
static size_t a_check(void *t, cc_violation_fn fn, void *ctx) { return hart_check(t, fn, ctx); }
static void a_reachable(void *t, cc_obj_fn fn, void *ctx) { hart_reachable(t, fn, ctx); }
static void a_allocated(void *t, cc_obj_fn fn, void *ctx) { hart_allocated(t, fn, ctx); }
static void a_close(void *t) { hart_close(t); }

const struct cc_adapter cc_adapter = {
	.name = "hart",
	.key_kind = CC_KEYS_BYTES,
	.value_size = 16,
	.value_min = 1,
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
	.threads = 1,      /* per-ART rwlocks: safe from several threads */
};
