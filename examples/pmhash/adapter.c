/*
 * adapter.c -- pmhash behind the tree adapter API (trees/common/cc_tree.h)
 *
 * This file is all crashcheck needs from a user's structure: the table of
 * operations, recovery, dump, invariants and the object enumerations.
 */
#include <stdlib.h>
#include <string.h>

#include "cc_tree.h"
#include "pm_alloc.h"
#include "pmhash.h"

static void *a_create(void *pool, size_t size) { (void)pool, (void)size; return pmhash_create(); }
/* A crash before the bucket array was published leaves no table: make a fresh one. */
static void *a_open(void *pool, size_t size)
{
	(void)pool, (void)size;
	struct pmhash *h = pmhash_open();
	return h ? h : pmhash_create();
}

/* Nothing to repair: every change is published by one 8-byte store. */
static int a_recover(void *t) { return t == NULL; }

static int a_insert(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	uint64_t v;
	if (klen != 8 || vlen != 8)
		return CC_ERROR;
	memcpy(&v, val, 8);
	return pmhash_insert(t, cc_key_u64(key), v);
}

static int a_update(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	uint64_t v;
	if (klen != 8 || vlen != 8)
		return CC_ERROR;
	memcpy(&v, val, 8);
	return pmhash_update(t, cc_key_u64(key), v);
}

static int a_remove(void *t, const uint8_t *key, size_t klen)
{
	return klen == 8 ? pmhash_delete(t, cc_key_u64(key)) : CC_ERROR;
}

static int a_lookup(void *t, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen)
{
	uint64_t v;
	if (klen != 8)
		return CC_ERROR;
	int st = pmhash_lookup(t, cc_key_u64(key), &v);
	memcpy(val, &v, 8);
	*vlen = st == CC_OK ? 8 : 0;
	return st;
}

static size_t a_scan(void *t, const uint8_t *key, size_t klen, size_t count, cc_kv_fn fn, void *ctx)
{
	size_t n, seen = 0;
	uint8_t k[8];
	uint64_t (*items)[2] = pmhash_items(t, &n);
	uint64_t from = klen == 8 ? cc_key_u64(key) : 0;
	for (size_t i = 0; i < n && seen < count; i++) {
		if (items[i][0] < from)
			continue;
		cc_u64_key(items[i][0], k);
		seen++;
		if (fn(ctx, k, 8, (const uint8_t *)&items[i][1], 8))
			break;
	}
	free(items);
	return seen;
}

static void a_dump(void *t, cc_kv_fn fn, void *ctx)
{
	uint8_t zero[8] = {0};
	a_scan(t, zero, 8, (size_t)-1, fn, ctx);
}

static size_t a_check(void *t, cc_violation_fn fn, void *ctx) { return pmhash_check(t, fn, ctx); }
static void a_reachable(void *t, cc_obj_fn fn, void *ctx) { pmhash_reachable(t, fn, ctx); }
static void a_allocated(void *t, cc_obj_fn fn, void *ctx) { (void)t; pm_allocated(fn, ctx); }
static void a_close(void *t) { pmhash_close(t); }

const struct cc_adapter cc_adapter = {
	.name = "pmhash",
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
