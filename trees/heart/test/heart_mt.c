/*
 * heart_mt.c -- multi-threaded functional and stress test of Heart (not part of the driver)
 *
 * Usage: heart_mt POOL THREADS OPS SEED
 *
 * Three phases, THREADS threads each:
 *  1. owned keys: every thread runs OPS random inserts, updates, deletes
 *     and lookups on its own 512 keys; the keys of all threads share their
 *     first two bytes' nodes, so threads insert into, grow and shrink the
 *     same nodes at once (disjoint keys, overlapping nodes).  Meanwhile
 *     every thread also updates 64 stable keys (present from the start,
 *     first value byte = the key's number), and one reader thread looks
 *     them up: each lookup must find the key with a value of its own.
 *  2. shared keys: every thread inserts the same 256 keys in the same
 *     order, racing for the same slots; exactly one insert per key may
 *     succeed.
 *  3. shared keys: every thread deletes them; exactly one delete per key
 *     may succeed.
 * At the end the dump must equal the threads' models plus the stable keys,
 * heart_check must report nothing, and once retired objects are drained
 * every allocated object must be reachable; then recovery runs and all of
 * it is checked again.  Exit status 0 and "ok" on success; the first
 * failure is printed on stderr (exit 1).
 *
 * Built by tests/trees/test_heart_functional.py with the trees/heart sources (not the
 * adapter), trees/common/pm_alloc.c and the crashcheck runtime; with
 * -DBUG_HEART_... it shows the seeded bugs that need threads.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crashcheck.h"
#include "pm_alloc.h"
#include "../heart.h"

#define NKEYS 512     /* owned keys per thread */
#define NSTABLE 64
#define NSHARED 256
#define MAXT 16

struct mkey {
	uint8_t key[HEART_KEY_MAX], val[HEART_VAL_MAX];
	size_t klen, vlen;
	int present;
};

struct worker {
	pthread_t th;
	int id;
	unsigned long ops;
	unsigned seed;
	struct mkey keys[NKEYS];
	int failed;
};

static struct heart *tree;
static volatile int done;
static int nthreads;
static struct worker w[MAXT];
static pthread_barrier_t bar;
static int shared_ins[NSHARED], shared_del[NSHARED];
static volatile int failed_any;

/* make_key -- thread ID's key I: 'a'..'c', a byte shared by all threads, ID, I (internal) */
static void make_key(struct mkey *k, int id, int i)
{
	k->key[0] = (uint8_t)('a' + i % 3);
	k->key[1] = (uint8_t)((i / 3) * 5 + id);   /* threads meet in the nodes below k[0] and k[0..1] */
	k->key[2] = (uint8_t)id;
	k->key[3] = (uint8_t)(i >> 8);
	k->key[4] = (uint8_t)i;
	size_t extra = (size_t)(i * 7 % 20);
	for (size_t j = 0; j < extra; j++)
		k->key[5 + j] = (uint8_t)(j * 3);
	k->klen = 5 + extra;
}

static void stable_key(uint8_t *k, int i) { k[0] = 'S'; k[1] = (uint8_t)i; k[2] = 0x80 | (uint8_t)i; }
static void shared_key(uint8_t *k, int i) { k[0] = 'T'; k[1] = (uint8_t)(i * 13); }

/* fail -- record the first failure (internal) */
static void fail(struct worker *wr, const char *what, int i)
{
	if (!wr->failed)
		fprintf(stderr, "heart_mt: thread %d, key %d: %s\n", wr->id, i, what);
	wr->failed = 1;
	failed_any = 1;
}

/* owned -- phase 1: random operations on the thread's own keys, updates of stable keys (internal) */
static void owned(struct worker *wr)
{
	for (unsigned long n = 0; n < wr->ops && !wr->failed; n++) {
		int i = (int)(rand_r(&wr->seed) % NKEYS);
		struct mkey *k = &wr->keys[i];
		uint8_t val[HEART_VAL_MAX], got[HEART_VAL_MAX];
		size_t vlen = 1 + rand_r(&wr->seed) % HEART_VAL_MAX, glen;
		for (size_t j = 0; j < vlen; j++)
			val[j] = (uint8_t)rand_r(&wr->seed);
		int r = rand_r(&wr->seed) % 10, st;
		if (r < 4) {
			st = heart_insert(tree, k->key, k->klen, val, vlen);
			if (st != (k->present ? CC_EXISTS : CC_OK))
				fail(wr, "insert", i);
			if (!k->present) {
				memcpy(k->val, val, vlen);
				k->vlen = vlen;
				k->present = 1;
			}
		} else if (r < 6) {
			st = heart_update(tree, k->key, k->klen, val, vlen);
			if (st != (k->present ? CC_OK : CC_NOTFOUND))
				fail(wr, "update", i);
			if (k->present) {
				memcpy(k->val, val, vlen);
				k->vlen = vlen;
			}
		} else if (r < 8) {
			st = heart_delete(tree, k->key, k->klen);
			if (st != (k->present ? CC_OK : CC_NOTFOUND))
				fail(wr, "delete", i);
			k->present = 0;
		} else if (r < 9) {
			st = heart_lookup(tree, k->key, k->klen, got, &glen);
			if (st != (k->present ? CC_OK : CC_NOTFOUND) ||
			    (k->present && (glen != k->vlen || memcmp(got, k->val, glen))))
				fail(wr, "lookup", i);
		} else {
			uint8_t sk[3];
			int s = (int)(rand_r(&wr->seed) % NSTABLE);
			stable_key(sk, s);
			memset(val, s, HEART_VAL_MAX);
			val[1] = (uint8_t)wr->id;
			if (heart_update(tree, sk, 3, val, HEART_VAL_MAX) != CC_OK)
				fail(wr, "update of a stable key", s);
		}
	}
}

/* worker_main -- the three phases (internal) */
static void *worker_main(void *arg)
{
	struct worker *wr = arg;
	owned(wr);
	pthread_barrier_wait(&bar);
	uint8_t v[8] = {0}, k[2];
	unsigned off = (unsigned)wr->id * 37;
	for (int n = 0; n < NSHARED; n++) {
		int i = n;   /* every thread in the same order: they race for the same slots */
		shared_key(k, i);
		v[0] = (uint8_t)wr->id;
		int st = heart_insert(tree, k, 2, v, 8);
		if (st == CC_OK)
			__atomic_fetch_add(&shared_ins[i], 1, __ATOMIC_SEQ_CST);
		else if (st != CC_EXISTS)
			fail(wr, "shared insert", i);
	}
	pthread_barrier_wait(&bar);
	for (int n = 0; n < NSHARED; n++) {
		int i = (int)((NSHARED - n + off) % NSHARED);
		shared_key(k, i);
		int st = heart_delete(tree, k, 2);
		if (st == CC_OK)
			__atomic_fetch_add(&shared_del[i], 1, __ATOMIC_SEQ_CST);
		else if (st != CC_NOTFOUND)
			fail(wr, "shared delete", i);
	}
	return NULL;
}

/* reader_main -- stable keys must always be found, with a value of their own (internal) */
static void *reader_main(void *arg)
{
	unsigned seed = *(unsigned *)arg;
	unsigned long n = 0;
	while (!done && !failed_any) {
		int s = (int)(rand_r(&seed) % NSTABLE);
		uint8_t sk[3], got[HEART_VAL_MAX];
		size_t glen = 0;
		stable_key(sk, s);
		int st = heart_lookup(tree, sk, 3, got, &glen);
		if (st != CC_OK || glen != HEART_VAL_MAX || got[0] != s) {
			fprintf(stderr, "heart_mt: reader, stable key %d: %s (after %lu lookups)\n", s,
				st != CC_OK ? "not found" : "a value of another key", n);
			failed_any = 1;
		}
		n++;
	}
	return NULL;
}

struct cmp_ctx {
	size_t n, bad;
};

/* find_model -- the model entry of KEY, NULL if none (internal) */
static struct mkey *find_model(const uint8_t *key, size_t klen)
{
	if (klen < 5 || key[0] < 'a' || key[0] > 'c' || key[2] >= nthreads)
		return NULL;
	struct worker *wr = &w[key[2]];
	for (int i = 0; i < NKEYS; i++)
		if (wr->keys[i].klen == klen && !memcmp(wr->keys[i].key, key, klen))
			return &wr->keys[i];
	return NULL;
}

/* dump_fn -- every dumped pair must be a present model pair or a stable key (internal) */
static int dump_fn(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	struct cmp_ctx *c = ctx;
	c->n++;
	if (klen == 3 && key[0] == 'S') {
		if (vlen != HEART_VAL_MAX || val[0] != key[1])
			c->bad++;
		return 0;
	}
	struct mkey *k = find_model(key, klen);
	if (!k || !k->present || k->vlen != vlen || memcmp(k->val, val, vlen))
		c->bad++;
	return 0;
}

static void violation(void *ctx, const char *text)
{
	(void)ctx;
	fprintf(stderr, "heart_mt: violation: %s\n", text);
}

struct objv {
	uintptr_t a[1 << 18];
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

/* verify -- dump, invariants, and (when LEAKS) no allocated object unreachable (internal) */
static int verify(const char *when, int leaks)
{
	size_t want = NSTABLE;
	for (int t = 0; t < nthreads; t++)
		for (int i = 0; i < NKEYS; i++)
			want += w[t].keys[i].present;
	struct cmp_ctx c = {0};
	heart_dump(tree, dump_fn, &c);
	int bad = 0;
	if (c.bad || c.n != want) {
		fprintf(stderr, "heart_mt: %s: dump has %zu pairs (%zu wrong), models hold %zu\n",
			when, c.n, c.bad, want);
		bad = 1;
	}
	if (heart_check(tree, violation, NULL))
		bad = 1;
	if (!leaks)
		return bad;
	alloc_v.n = reach_v.n = 0;
	heart_allocated(tree, obj_fn, &alloc_v);
	heart_reachable(tree, obj_fn, &reach_v);
	qsort(reach_v.a, reach_v.n, sizeof(uintptr_t), u_cmp);
	for (size_t i = 0; i < alloc_v.n; i++)
		if (!bsearch(&alloc_v.a[i], reach_v.a, reach_v.n, sizeof(uintptr_t), u_cmp)) {
			fprintf(stderr, "heart_mt: %s: object %#lx allocated but unreachable\n",
				when, (unsigned long)alloc_v.a[i]);
			bad = 1;
			break;
		}
	return bad;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: heart_mt POOL THREADS OPS SEED\n");
		return 2;
	}
	nthreads = atoi(argv[2]);
	unsigned long ops = strtoul(argv[3], NULL, 10);
	unsigned seed = (unsigned)strtoul(argv[4], NULL, 10);
	if (nthreads < 1 || nthreads > MAXT)
		return 2;
	size_t size = 256u << 20;
	void *pool = crashcheck_pool_open(argv[1], size, 0, CRASHCHECK_POOL_CREATE);
	if (!pool || pm_pool_format(pool, size) || !(tree = heart_create())) {
		fprintf(stderr, "heart_mt: cannot set up the pool: %s\n", crashcheck_last_error());
		return 2;
	}
	for (int s = 0; s < NSTABLE; s++) {
		uint8_t sk[3], v[HEART_VAL_MAX];
		stable_key(sk, s);
		memset(v, s, sizeof(v));
		heart_insert(tree, sk, 3, v, sizeof(v));
	}
	pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
	for (int t = 0; t < nthreads; t++) {
		w[t].id = t;
		w[t].ops = ops;
		w[t].seed = seed * 7919 + (unsigned)t;
		for (int i = 0; i < NKEYS; i++)
			make_key(&w[t].keys[i], t, i);
		pthread_create(&w[t].th, NULL, worker_main, &w[t]);
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
	failed |= failed_any;
	for (int i = 0; i < NSHARED; i++)
		if (shared_ins[i] != 1 || shared_del[i] != 1) {
			fprintf(stderr, "heart_mt: shared key %d: %d inserts and %d deletes succeeded, 1 each expected\n",
				i, shared_ins[i], shared_del[i]);
			failed = 1;
			break;
		}
	if (failed || verify("after the run", 0))
		return 1;
	heart_close(tree);                 /* drains every retired object */
	if (!(tree = heart_open()) || verify("after draining", 1))
		return 1;
	if (heart_recover(tree) || verify("after recovery", 1))
		return 1;
	heart_close(tree);
	printf("ok\n");
	return 0;
}
