/*
 * pmdkmaps.c -- our driver and checker for PMDK's example maps (src/examples/libpmemobj: btree,
 * rbtree, hashmap_atomic, hashmap_tx, ctree, skiplist), compiled with their sources from a PMDK
 * tree (bench/pmdk-internals/run-maps)
 *
 *   pmdkmaps TYPE create POOL      a pool whose root holds a new empty map (run untraced)
 *   pmdkmaps TYPE insert POOL N    inserts keys 1..N, each with a new value object holding 16 * key
 *   pmdkmaps TYPE check POOL N     exit 0 when the keys are 1..k for some k <= N (each insert is
 *                                  atomic, and they happen in order) with their values, and the
 *                                  map's count (where it keeps one) says k
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpmemobj.h>

#include "map.h"
#include "map_btree.h"
#include "map_ctree.h"
#include "map_hashmap_atomic.h"
#include "map_hashmap_tx.h"
#include "map_rbtree.h"
#include "map_skiplist.h"

#define LAYOUT "pmdkmaps"
#define MAXKEYS 4096

struct root {
	TOID(struct map) map;
};

static const struct {
	const char *name;
	const struct map_ops *ops;
} TYPES[] = {
	{"btree", MAP_BTREE}, {"rbtree", MAP_RBTREE}, {"hashmap_atomic", MAP_HASHMAP_ATOMIC},
	{"hashmap_tx", MAP_HASHMAP_TX}, {"ctree", MAP_CTREE}, {"skiplist", MAP_SKIPLIST},
};

struct seen {
	uint64_t n, max, bad;
	unsigned char key[MAXKEYS + 1];
};

static int construct_obj(PMEMobjpool *pop, void *ptr, void *arg)
{
	*(uint64_t *)ptr = 16 * *(uint64_t *)arg;
	pmemobj_persist(pop, ptr, sizeof(uint64_t));
	return 0;
}

/* insert -- key K with a new value object (allocated first: a crash in between leaks it, which
 * the check allows; the hashmaps have no insert_new) */
static int insert(PMEMobjpool *pop, struct map_ctx *ctx, TOID(struct map) map, uint64_t k)
{
	PMEMoid value;
	if (pmemobj_alloc(pop, &value, sizeof(uint64_t), 1, construct_obj, &k) != 0)
		return -1;
	return map_insert(ctx, map, k, value);
}

static int visit(uint64_t key, PMEMoid value, void *arg)
{
	struct seen *s = arg;
	const uint64_t *v = pmemobj_direct(value);
	if (key == 0 || key > s->max || s->key[key] || v == NULL || *v != 16 * key)
		s->bad = key ? key : UINT64_MAX;
	else
		s->key[key] = 1;
	s->n++;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: pmdkmaps TYPE create|insert|check POOL [N]\n");
		return 2;
	}
	const struct map_ops *ops = NULL;
	for (size_t i = 0; i < sizeof(TYPES) / sizeof(TYPES[0]); i++)
		if (strcmp(argv[1], TYPES[i].name) == 0)
			ops = TYPES[i].ops;
	if (ops == NULL) {
		fprintf(stderr, "pmdkmaps: unknown map %s\n", argv[1]);
		return 2;
	}
	const char *cmd = argv[2], *path = argv[3];
	uint64_t n = argc > 4 ? strtoull(argv[4], NULL, 10) : 0;
	if (n > MAXKEYS)
		n = MAXKEYS;
	PMEMobjpool *pop = strcmp(cmd, "create") == 0
		? pmemobj_create(path, LAYOUT, 16u << 20, 0644) : pmemobj_open(path, LAYOUT);
	if (pop == NULL) {
		fprintf(stderr, "pmdkmaps: error: cannot open %s: %s\n", path, pmemobj_errormsg());
		return 1;
	}
	struct root *root = pmemobj_direct(pmemobj_root(pop, sizeof(struct root)));
	struct map_ctx *ctx = map_ctx_init(ops, pop);
	int rc = 0;
	if (strcmp(cmd, "create") == 0) {
		if (map_create(ctx, &root->map, NULL) != 0) {
			fprintf(stderr, "pmdkmaps: error: map_create failed\n");
			rc = 1;
		}
	} else if (strcmp(cmd, "insert") == 0) {
		map_init(ctx, root->map);
		for (uint64_t k = 1; k <= n && rc == 0; k++)
			if (insert(pop, ctx, root->map, k) != 0) {
				fprintf(stderr, "pmdkmaps: error: insert %llu failed\n", (unsigned long long)k);
				rc = 1;
			}
	} else if (strcmp(cmd, "check") == 0) {
		static struct seen s;
		s.max = n;
		if (TOID_IS_NULL(root->map) || map_check(ctx, root->map) != 0) {
			fprintf(stderr, "pmdkmaps: error: no valid map in the root\n");
			rc = 1;
		} else {
			map_init(ctx, root->map);
			map_foreach(ctx, root->map, visit, &s);
			uint64_t k = 0;
			while (k < n && s.key[k + 1])
				k++;
			if (s.bad) {
				fprintf(stderr, "pmdkmaps: error: key %llu unexpected or with a wrong value\n",
					(unsigned long long)s.bad);
				rc = 1;
			} else if (s.n != k) {
				fprintf(stderr, "pmdkmaps: error: keys are not 1..k: %llu keys, 1..%llu present\n",
					(unsigned long long)s.n, (unsigned long long)k);
				rc = 1;
			} else if (ops->count && map_count(ctx, root->map) != k) {
				fprintf(stderr, "pmdkmaps: error: count mismatch: map says %zu, %llu keys found\n",
					map_count(ctx, root->map), (unsigned long long)k);
				rc = 1;
			}
		}
	} else {
		fprintf(stderr, "pmdkmaps: unknown command %s\n", cmd);
		rc = 2;
	}
	map_ctx_free(ctx);
	pmemobj_close(pop);
	return rc;
}
