/*
 * adapter.c -- Heart behind the tree adapter API (cc_tree.h): byte keys of
 * 1..24 bytes, values of 1..16 bytes (value_min 1, value_size 16, as HART:
 * fuzzing draws 8- and 16-byte values; an update swaps in a new leaf, so a
 * 16-byte value never tears)
 *
 * Heart is built for eADR: fuzz it with --model eadr.  Under x86-ADR it
 * loses durable writes, since it issues no flushes.
 * The driver formats or attaches the pool (pm_alloc.h) before create/open.
 */
#include "cc_tree.h"
#include "heart.h"

static void *a_create(void *pool, size_t size) { (void)pool, (void)size; return heart_create(); }
static void *a_open(void *pool, size_t size) { (void)pool, (void)size; return heart_open(); }
static int a_recover(void *t) { return heart_recover(t); }

static int a_insert(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	return heart_insert(t, key, klen, val, vlen);
}

static int a_update(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	return heart_update(t, key, klen, val, vlen);
}

static int a_remove(void *t, const uint8_t *key, size_t klen) { return heart_delete(t, key, klen); }

static int a_lookup(void *t, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen)
{
	return heart_lookup(t, key, klen, val, vlen);
}

static size_t a_scan(void *t, const uint8_t *key, size_t klen, size_t count, cc_kv_fn fn, void *ctx)
{
	return heart_scan(t, key, klen, count, fn, ctx);
}

static void a_dump(void *t, cc_kv_fn fn, void *ctx) { heart_dump(t, fn, ctx); }
static size_t a_check(void *t, cc_violation_fn fn, void *ctx) { return heart_check(t, fn, ctx); }
static void a_reachable(void *t, cc_obj_fn fn, void *ctx) { heart_reachable(t, fn, ctx); }
static void a_allocated(void *t, cc_obj_fn fn, void *ctx) { heart_allocated(t, fn, ctx); }
static void a_close(void *t) { heart_close(t); }

const struct cc_adapter cc_adapter = {
	.name = "heart",
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
	.threads = 1,      /* lock-free: safe from several threads */
};
