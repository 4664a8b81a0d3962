/*
 * adapter.c -- pmobj_hash behind the tree adapter API (trees/common/cc_tree.h)
 *
 * The structure maps its pool file itself (create_file/open_file: pmemobj_create/pmemobj_open,
 * whose own transaction recovery runs when a post-crash image is opened); `crashcheck fuzz
 * pmobj_hash` traces it with the pass (the runtime shadows libpmemobj's pool) or, with
 * `--tracer pmemcheck`, under Valgrind. No allocated/reachable enumerations: objects
 * live in libpmemobj's heap, which rolls back an interrupted transaction's allocations itself.
 */
#include <stdlib.h>
#include <string.h>

#include "cc_tree.h"
#include "pmobj_hash.h"

static const int status[] = {CC_OK, CC_NOTFOUND, CC_ERROR, CC_NOSPACE};

static void *a_create_file(const char *path, size_t size) { return ph_create(path, size); }
static void *a_open_file(const char *path, size_t size) { (void)size; return ph_open(path); }
static int a_recover(void *t) { return t == NULL; }   /* libpmemobj's recovery ran in open */
static void a_close(void *t) { ph_close(t); }

static int a_insert(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	if (klen != 8 || vlen != PH_VALUE)
		return CC_ERROR;
	int r = ph_insert(t, cc_key_u64(key), val);
	return r == 1 ? CC_EXISTS : status[r];
}

static int a_update(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	if (klen != 8 || vlen != PH_VALUE)
		return CC_ERROR;
	return status[ph_update(t, cc_key_u64(key), val)];
}

static int a_remove(void *t, const uint8_t *key, size_t klen)
{
	return klen == 8 ? status[ph_delete(t, cc_key_u64(key))] : CC_ERROR;
}

static int a_lookup(void *t, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen)
{
	if (klen != 8)
		return CC_ERROR;
	*vlen = PH_VALUE;
	return status[ph_lookup(t, cc_key_u64(key), val)];
}

/* dump: every pair, collected and given in key order */
struct pair {
	uint64_t key;
	uint8_t val[PH_VALUE];
};
struct pairs {
	struct pair *v;
	size_t n, cap;
};

static int collect(void *ctx, uint64_t key, const uint8_t *val)
{
	struct pairs *p = ctx;
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		struct pair *v = realloc(p->v, cap * sizeof(*v));
		if (!v)
			return 1;
		p->v = v, p->cap = cap;
	}
	p->v[p->n].key = key;
	memcpy(p->v[p->n].val, val, PH_VALUE);
	p->n++;
	return 0;
}

static int by_key(const void *a, const void *b)
{
	uint64_t x = ((const struct pair *)a)->key, y = ((const struct pair *)b)->key;
	return x < y ? -1 : x > y;
}

static void a_dump(void *t, cc_kv_fn fn, void *ctx)
{
	struct pairs p = {0};
	ph_each(t, collect, &p);
	qsort(p.v, p.n, sizeof(*p.v), by_key);
	uint8_t k[8];
	for (size_t i = 0; i < p.n; i++) {
		cc_u64_key(p.v[i].key, k);
		if (fn(ctx, k, 8, p.v[i].val, PH_VALUE))
			break;
	}
	free(p.v);
}

static size_t a_check(void *t, cc_violation_fn fn, void *ctx) { return ph_check(t, fn, ctx); }

const struct cc_adapter cc_adapter = {
	.name = "pmobj_hash",
	.key_kind = CC_KEYS_U64,
	.value_size = PH_VALUE,
	.recover = a_recover,
	.insert = a_insert,
	.update = a_update,
	.remove = a_remove,
	.lookup = a_lookup,
	.dump = a_dump,
	.check = a_check,
	.close = a_close,
	.create_file = a_create_file,
	.open_file = a_open_file,
};
