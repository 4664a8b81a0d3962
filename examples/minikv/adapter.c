/*
 * adapter.c -- minikv behind the tree adapter API (trees/common/cc_tree.h)
 *
 * The only file written for crashcheck (docs/walkthrough.md).  minikv.c is
 * built with `crashcheck build --pm-malloc`, so its posix_memalign and free
 * use the pool; the list's head slot is the pool's root area.  minikv has
 * no scan: .scan stays NULL, and the fuzzer never asks for one.
 */
#include <string.h>

#include "cc_tree.h"
#include "minikv.h"
#include "pm_alloc.h"

/* head -- the list's persistent head slot: the first 8 bytes of the pool's root area */
static struct minikv_node **head(void) { return pm_root(); }

static int status(int st)
{
	switch (st) {
	case MINIKV_OK: return CC_OK;
	case MINIKV_EXISTS: return CC_EXISTS;
	case MINIKV_NOTFOUND: return CC_NOTFOUND;
	case MINIKV_NOMEM: return CC_NOSPACE;
	default: return CC_ERROR;
	}
}

/* the pool is formatted (zero root: an empty list) or attached by the driver */
static void *a_create(void *pool, size_t size) { (void)size; return pool; }
static void *a_open(void *pool, size_t size) { (void)size; return pool; }
/* nothing to repair: every change is published by one 8-byte store */
static int a_recover(void *t) { (void)t; return 0; }

static int a_insert(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	uint64_t v;
	(void)t, (void)klen, (void)vlen;        /* u64 keys, 8-byte values: the driver checked */
	memcpy(&v, val, 8);
	return status(minikv_insert(head(), cc_key_u64(key), v));
}

static int a_update(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	uint64_t v;
	(void)t, (void)klen, (void)vlen;
	memcpy(&v, val, 8);
	return status(minikv_update(head(), cc_key_u64(key), v));
}

static int a_remove(void *t, const uint8_t *key, size_t klen)
{
	(void)t, (void)klen;
	return status(minikv_delete(head(), cc_key_u64(key)));
}

static int a_lookup(void *t, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen)
{
	uint64_t v;
	(void)t, (void)klen;
	int st = minikv_get(head(), cc_key_u64(key), &v);
	if (st == MINIKV_OK) {
		memcpy(val, &v, 8);
		*vlen = 8;
	}
	return status(st);
}

static void a_dump(void *t, cc_kv_fn fn, void *ctx)
{
	(void)t;
	uint8_t k[8];
	for (struct minikv_node *n = *head(); n; n = n->next) {
		cc_u64_key(n->key, k);
		if (fn(ctx, k, 8, (const uint8_t *)&n->value, 8))
			break;
	}
}

/* every node must lie in the pool (a pointer to anywhere else survives no restart) */
static size_t a_check(void *t, cc_violation_fn fn, void *ctx)
{
	(void)t;
	size_t bad = 0;
	for (struct minikv_node *n = *head(); n; n = n->next)
		if (!pm_contains(n)) {
			CC_VIOLATION(fn, ctx, "a node outside the pool: was minikv.c built with --pm-malloc?");
			return bad + 1;
		}
	return bad;
}

static void a_reachable(void *t, cc_obj_fn fn, void *ctx)
{
	(void)t;
	for (struct minikv_node *n = *head(); n; n = n->next)
		fn(ctx, n, sizeof(*n));
}

static void a_allocated(void *t, cc_obj_fn fn, void *ctx) { (void)t; pm_allocated(fn, ctx); }

const struct cc_adapter cc_adapter = {
	.name = "minikv",
	.key_kind = CC_KEYS_U64,
	.value_size = 8,
	.create = a_create,
	.open = a_open,
	.recover = a_recover,
	.insert = a_insert,
	.update = a_update,
	.remove = a_remove,
	.lookup = a_lookup,
	/* .scan: minikv has none (optional, docs/trees.md) */
	.dump = a_dump,
	.check = a_check,
	.reachable = a_reachable,
	.allocated = a_allocated,
};
