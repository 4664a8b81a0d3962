/*
 * hart_mt.c -- multi-threaded functional test of HART (not part of the driver)
 *
 * Usage: hart_mt POOL THREADS OPS SEED
 *
 * THREADS writers run OPS random inserts, updates, deletes and lookups each,
 * while one reader thread looks keys up and scans.  Every writer owns the
 * keys whose third byte is its number, so its private model is exact, but
 * all writers share the same few hash keys (first two bytes), so writers
 * contend on one ART's lock as well as running in parallel on others.
 * At the end the dump must equal the union of the models, hart_check must
 * report nothing and no allocated object may be unreachable; then the DRAM
 * side is dropped, rebuilt by hart_recover, and checked again.
 * Exit status 0 on success; the first failure is printed on stderr.
 *
 * Built by tests/trees/test_hart_functional.py with the trees/hart sources,
 * trees/common/pm_alloc.c and the crashcheck runtime.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crashcheck.h"
#include "pm_alloc.h"
#include "../hart.h"

#define NKEYS 512       /* keys per writer */
#define MAXT 16

struct mkey {
	uint8_t key[HART_KEY_MAX], val[HART_VAL_MAX];
	size_t klen, vlen;
	int present;
};

struct writer {
	pthread_t th;
	int id;
	unsigned long ops;
	unsigned seed;
	struct mkey keys[NKEYS];
	int failed;
};

static struct hart *tree;
static volatile int done;
static int nthreads;
static struct writer w[MAXT];

/* make_key -- writer ID's key number I: 2-byte hash key from a small set, ID, then I (internal) */
static void make_key(struct mkey *k, int id, int i)
{
	k->key[0] = (uint8_t)('a' + i % 3);
	k->key[1] = (uint8_t)(i % 2);
	k->key[2] = (uint8_t)id;
	k->key[3] = (uint8_t)(i >> 8);
	k->key[4] = (uint8_t)i;
	size_t extra = (size_t)(i * 7 % 20);     /* 5..24 bytes, shared prefixes */
	for (size_t j = 0; j < extra; j++)
		k->key[5 + j] = (uint8_t)(j * 3);
	k->klen = 5 + extra;
}

/* fail -- record the first failure of writer W (internal) */
static void fail(struct writer *wr, const char *what, int i)
{
	if (!wr->failed)
		fprintf(stderr, "hart_mt: writer %d, key %d: %s\n", wr->id, i, what);
	wr->failed = 1;
}

/* writer_main -- random operations on the writer's own keys (internal) */
static void *writer_main(void *arg)
{
	struct writer *wr = arg;
	for (unsigned long n = 0; n < wr->ops && !wr->failed; n++) {
		int i = (int)(rand_r(&wr->seed) % NKEYS);
		struct mkey *k = &wr->keys[i];
		uint8_t val[HART_VAL_MAX];
		size_t vlen = 1 + rand_r(&wr->seed) % HART_VAL_MAX;
		for (size_t j = 0; j < vlen; j++)
			val[j] = (uint8_t)rand_r(&wr->seed);
		int op = (int)(rand_r(&wr->seed) % 4), st;
		switch (op) {
		case 0:
			st = hart_insert(tree, k->key, k->klen, val, vlen);
			if (st != (k->present ? CC_EXISTS : CC_OK))
				fail(wr, "insert result", i);
			if (!k->present) {
				memcpy(k->val, val, vlen);
				k->vlen = vlen;
				k->present = 1;
			}
			break;
		case 1:
			st = hart_update(tree, k->key, k->klen, val, vlen);
			if (st != (k->present ? CC_OK : CC_NOTFOUND))
				fail(wr, "update result", i);
			if (k->present) {
				memcpy(k->val, val, vlen);
				k->vlen = vlen;
			}
			break;
		case 2:
			st = hart_delete(tree, k->key, k->klen);
			if (st != (k->present ? CC_OK : CC_NOTFOUND))
				fail(wr, "delete result", i);
			k->present = 0;
			break;
		default: {
			uint8_t got[HART_VAL_MAX];
			size_t glen;
			st = hart_lookup(tree, k->key, k->klen, got, &glen);
			if (st != (k->present ? CC_OK : CC_NOTFOUND) ||
			    (k->present && (glen != k->vlen || memcmp(got, k->val, glen))))
				fail(wr, "lookup result", i);
		}
		}
	}
	return NULL;
}

/* count_fn -- count scanned pairs (internal) */
static int count_fn(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	(void)key, (void)klen, (void)val, (void)vlen;
	++*(size_t *)ctx;
	return 0;
}

/* reader_main -- lookups and scans racing the writers (internal) */
static void *reader_main(void *arg)
{
	unsigned seed = *(unsigned *)arg;
	while (!done) {
		struct mkey k;
		make_key(&k, (int)(rand_r(&seed) % nthreads), (int)(rand_r(&seed) % NKEYS));
		uint8_t got[HART_VAL_MAX];
		size_t glen, n = 0;
		hart_lookup(tree, k.key, k.klen, got, &glen);
		if (rand_r(&seed) % 64 == 0)
			hart_scan(tree, k.key, k.klen, 20, count_fn, &n);
	}
	return NULL;
}

struct cmp_ctx {
	size_t n, bad;
};

/* find_model -- the model entry of KEY, NULL if none (internal) */
static struct mkey *find_model(const uint8_t *key, size_t klen)
{
	if (klen < 3 || key[2] >= nthreads)
		return NULL;
	struct writer *wr = &w[key[2]];
	for (int i = 0; i < NKEYS; i++)
		if (wr->keys[i].klen == klen && !memcmp(wr->keys[i].key, key, klen))
			return &wr->keys[i];
	return NULL;
}

/* dump_fn -- every dumped pair must be a present model pair (internal) */
static int dump_fn(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	struct cmp_ctx *c = ctx;
	struct mkey *k = find_model(key, klen);
	c->n++;
	if (!k || !k->present || k->vlen != vlen || memcmp(k->val, val, vlen))
		c->bad++;
	return 0;
}

static void violation(void *ctx, const char *text)
{
	(void)ctx;
	fprintf(stderr, "hart_mt: violation: %s\n", text);
}

struct objv {
	uintptr_t a[1 << 20];
	size_t n;
};
static struct objv alloc_v, reach_v;

static void obj_fn(void *ctx, const void *obj, size_t size)
{
	struct objv *v = ctx;
	(void)size;
	if (v->n < sizeof(v->a) / sizeof(v->a[0]))
		v->a[v->n++] = (uintptr_t)obj;
}

static int u_cmp(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return (x > y) - (x < y);
}

/* verify -- dump equals the models, no violations, no unreachable object (internal) */
static int verify(const char *when)
{
	size_t want = 0;
	for (int t = 0; t < nthreads; t++)
		for (int i = 0; i < NKEYS; i++)
			want += w[t].keys[i].present;
	struct cmp_ctx c = {0};
	hart_dump(tree, dump_fn, &c);
	int bad = 0;
	if (c.bad || c.n != want) {
		fprintf(stderr, "hart_mt: %s: dump has %zu pairs (%zu wrong), models hold %zu\n",
			when, c.n, c.bad, want);
		bad = 1;
	}
	if (hart_check(tree, violation, NULL))
		bad = 1;
	alloc_v.n = reach_v.n = 0;
	hart_allocated(tree, obj_fn, &alloc_v);
	hart_reachable(tree, obj_fn, &reach_v);
	qsort(reach_v.a, reach_v.n, sizeof(uintptr_t), u_cmp);
	for (size_t i = 0; i < alloc_v.n; i++)
		if (!bsearch(&alloc_v.a[i], reach_v.a, reach_v.n, sizeof(uintptr_t), u_cmp)) {
			fprintf(stderr, "hart_mt: %s: object %#lx allocated but unreachable\n",
				when, (unsigned long)alloc_v.a[i]);
			bad = 1;
		}
	return bad;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: hart_mt POOL THREADS OPS SEED\n");
		return 2;
	}
	nthreads = atoi(argv[2]);
	unsigned long ops = strtoul(argv[3], NULL, 10);
	unsigned seed = (unsigned)strtoul(argv[4], NULL, 10);
	if (nthreads < 1 || nthreads > MAXT)
		return 2;
	size_t size = 256u << 20;
	void *pool = crashcheck_pool_open(argv[1], size, 0, CRASHCHECK_POOL_CREATE);
	if (!pool || pm_pool_format(pool, size) || !(tree = hart_create())) {
		fprintf(stderr, "hart_mt: cannot set up the pool: %s\n", crashcheck_last_error());
		return 2;
	}
	for (int t = 0; t < nthreads; t++) {
		w[t].id = t;
		w[t].ops = ops;
		w[t].seed = seed * 7919 + (unsigned)t;
		for (int i = 0; i < NKEYS; i++)
			make_key(&w[t].keys[i], t, i);
		pthread_create(&w[t].th, NULL, writer_main, &w[t]);
	}
	pthread_t rd;
	pthread_create(&rd, NULL, reader_main, &seed);
	int failed = 0;
	for (int t = 0; t < nthreads; t++) {
		pthread_join(w[t].th, NULL);
		failed |= w[t].failed;
	}
	done = 1;
	pthread_join(rd, NULL);
	if (failed || verify("after the run"))
		return 1;
	hart_close(tree);
	if (!(tree = hart_open()) || hart_recover(tree) || verify("after recovery"))
		return 1;
	hart_close(tree);
	printf("ok\n");
	return 0;
}
