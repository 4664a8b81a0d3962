/*
 * adapter.c -- seqleaf behind the tree adapter API (trees/common/cc_tree.h)
 *
 * The leaf is one pool object whose address is the first word of the pool's root area, made at
 * create. No scan (optional). The dump lists the entries, already in key order. Writers lock and
 * readers validate (seqleaf.c), so `.threads` says it may be called from several threads.
 */
#include <string.h>

#include "cc_tree.h"
#include "persist.h"
#include "pm_alloc.h"
#include "seqleaf.h"

static struct seqleaf **root(void) { return pm_root(); }

static int status(int st)
{
	switch (st) {
	case SL_OK: return CC_OK;
	case SL_EXISTS: return CC_EXISTS;
	case SL_NOTFOUND: return CC_NOTFOUND;
	case SL_FULL: return CC_NOSPACE;
	default: return CC_ERROR;
	}
}

static void *a_create(void *pool, size_t size)
{
	(void)size;
	struct seqleaf *l = pm_alloc(sizeof(*l));
	if (!l)
		return 0;
	persistent(l, sizeof(*l));
	*root() = l;
	persistent(root(), sizeof(*root()));
	return pool;
}

static void *a_open(void *pool, size_t size) { (void)size; return *root() ? pool : 0; }
static int a_recover(void *t) { (void)t; sl_recover(*root()); return 0; }

static uint64_t value_of(const uint8_t *val)
{
	uint64_t v;
	memcpy(&v, val, 8);
	return v;
}

static int a_insert(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	(void)t, (void)klen, (void)vlen;
	return status(sl_insert(*root(), cc_key_u64(key), value_of(val)));
}

static int a_update(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	(void)t, (void)klen, (void)vlen;
	return status(sl_update(*root(), cc_key_u64(key), value_of(val)));
}

static int a_remove(void *t, const uint8_t *key, size_t klen)
{
	(void)t, (void)klen;
	return status(sl_delete(*root(), cc_key_u64(key)));
}

static int a_lookup(void *t, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen)
{
	uint64_t v;
	(void)t, (void)klen;
	int st = sl_get(*root(), cc_key_u64(key), &v);
	if (st == SL_OK) {
		memcpy(val, &v, 8);
		*vlen = 8;
	}
	return status(st);
}

static void a_dump(void *t, cc_kv_fn fn, void *ctx)
{
	(void)t;
	struct seqleaf *l = *root();
	for (uint64_t i = 0; i < l->n && i < SL_SLOTS; i++) {
		uint8_t k[8];
		cc_u64_key(l->e[i].key, k);
		if (fn(ctx, k, 8, (const uint8_t *)&l->e[i].value, 8))
			return;
	}
}

/* keys strictly ascending, none 0, the count within the leaf, no change left under way */
static size_t a_check(void *t, cc_violation_fn fn, void *ctx)
{
	(void)t;
	struct seqleaf *l = *root();
	if (l->n > SL_SLOTS) {
		fn(ctx, "the count is larger than the leaf");
		return 1;
	}
	for (uint64_t i = 0; i < l->n; i++)
		if (l->e[i].key == 0 || (i && l->e[i - 1].key >= l->e[i].key)) {
			fn(ctx, "the keys are not strictly ascending");
			return 1;
		}
	return 0;
}

static void a_reachable(void *t, cc_obj_fn fn, void *ctx) { (void)t; fn(ctx, *root(), sizeof(struct seqleaf)); }
static void a_allocated(void *t, cc_obj_fn fn, void *ctx) { (void)t; pm_allocated(fn, ctx); }

const struct cc_adapter cc_adapter = {
	.name = "seqleaf",
	.key_kind = CC_KEYS_U64,
	.value_size = 8,
	.threads = 1,      /* writers lock, readers validate: safe from several threads */
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
