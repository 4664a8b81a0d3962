/*
 * twolevel.c -- the twolevel hash table (see twolevel.h): two levels of buckets,
 * the promotion of a bottom key into a freed top slot, recovery
 *
 * Seeded bug (bugs.json):
 *   BUG_TWOLEVEL_PROMOTE_CLEAR_FIRST  the promotion frees the key's bottom slot
 *                                     before its top copy is durable
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "twolevel.h"
#include "persist.h"
#include "pm_alloc.h"

#define BUCKETS 32              /* buckets per level */
#define TOP_SLOTS 8             /* a top bucket's slots: the 9th key of a bucket goes below */
#define BOTTOM_SLOTS 16         /* a bottom bucket's: 24 keys of one bucket fit (160 keys make ~11) */
#define MAGIC 0x74776f6c6576656cULL

/* a slot is committed by `used`, stored (8 bytes, one unit) after key and value are durable */
struct slot {
	uint64_t used;
	uint64_t key;
	uint64_t val;
	uint64_t pad;               /* 32 bytes: two slots a line, none across lines */
};

struct table {
	uint64_t magic;
	uint64_t pad[7];
	struct slot top[BUCKETS][TOP_SLOTS];
	struct slot bottom[BUCKETS][BOTTOM_SLOTS];
};

/* the pool's root area: one pointer, to the table */
struct root {
	struct table *table;
};

struct twolevel {
	struct table *tb;
};

static struct twolevel handle;

/* bucket -- KEY's bucket on both levels (its low bits: neighbours spread, keys 32 apart collide) */
static unsigned bucket(uint64_t key)
{
	return (unsigned)(key & (BUCKETS - 1));
}

/* put -- commit KEY, VAL into the free slot S: data durable first, then `used` */
static void put(struct slot *s, uint64_t key, uint64_t val)
{
	s->key = key;
	s->val = val;
	persistent(&s->key, 2 * sizeof(uint64_t));
	s->used = 1;
	persistent(&s->used, sizeof(s->used));
}

/* clear -- free slot S by one durable store */
static void clear(struct slot *s)
{
	s->used = 0;
	persistent(&s->used, sizeof(s->used));
}

/* find -- the slot of KEY on either level, or NULL */
static struct slot *find(struct table *tb, uint64_t key)
{
	unsigned b = bucket(key);
	for (int i = 0; i < TOP_SLOTS; i++)
		if (tb->top[b][i].used && tb->top[b][i].key == key)
			return &tb->top[b][i];
	for (int i = 0; i < BOTTOM_SLOTS; i++)
		if (tb->bottom[b][i].used && tb->bottom[b][i].key == key)
			return &tb->bottom[b][i];
	return NULL;
}

/* free_slot -- a free slot of the N slots at S, or NULL */
static struct slot *free_slot(struct slot *s, int n)
{
	for (int i = 0; i < n; i++)
		if (!s[i].used)
			return &s[i];
	return NULL;
}

struct twolevel *twolevel_create(void)
{
	struct root *r = pm_root();
	struct table *tb = pm_alloc(sizeof(*tb));
	if (!tb) {
		fprintf(stderr, "twolevel: pool too small\n");
		return NULL;
	}
	memset(tb, 0, sizeof(*tb));
	tb->magic = MAGIC;
	persistent(tb, sizeof(*tb));
	r->table = tb;
	persistent(&r->table, sizeof(r->table));
	handle.tb = tb;
	return &handle;
}

struct twolevel *twolevel_open(void)
{
	struct root *r = pm_root();
	handle.tb = r->table;
	return handle.tb ? &handle : NULL;
}

static void promote(struct table *tb, unsigned b, struct slot *to);

int twolevel_recover(struct twolevel *t)
{
	/* a promotion interrupted after its top copy was committed leaves the key on both
	 * levels: the top copy is whole, so the bottom one goes; one interrupted before it
	 * began (the delete's slot freed) leaves a free top slot over bottom keys: finish it */
	struct table *tb = t->tb;
	if (!tb || tb->magic != MAGIC)
		return -1;
	for (unsigned b = 0; b < BUCKETS; b++) {
		for (int i = 0; i < BOTTOM_SLOTS; i++) {
			struct slot *s = &tb->bottom[b][i];
			if (!s->used)
				continue;
			for (int j = 0; j < TOP_SLOTS; j++)
				if (tb->top[b][j].used && tb->top[b][j].key == s->key) {
					clear(s);
					break;
				}
		}
		struct slot *hole;
		while ((hole = free_slot(tb->top[b], TOP_SLOTS)) != NULL) {
			struct slot *below = NULL;
			for (int i = 0; i < BOTTOM_SLOTS && !below; i++)
				if (tb->bottom[b][i].used)
					below = &tb->bottom[b][i];
			if (!below)
				break;
			promote(tb, b, hole);
		}
	}
	return 0;
}

int twolevel_insert(struct twolevel *t, uint64_t key, uint64_t val)
{
	struct table *tb = t->tb;
	if (find(tb, key))
		return CC_EXISTS;
	unsigned b = bucket(key);
	struct slot *s = free_slot(tb->top[b], TOP_SLOTS);
	if (!s)
		s = free_slot(tb->bottom[b], BOTTOM_SLOTS);
	if (!s) {
		fprintf(stderr, "twolevel: bucket %u is full on both levels\n", b);
		return CC_ERROR;
	}
	put(s, key, val);
	return CC_OK;
}

int twolevel_update(struct twolevel *t, uint64_t key, uint64_t val)
{
	struct slot *s = find(t->tb, key);
	if (!s)
		return CC_NOTFOUND;
	s->val = val;                           /* one 8-byte store: failure-atomic */
	persistent(&s->val, sizeof(s->val));
	return CC_OK;
}

/* promote -- move a key of bottom bucket B into the free top slot TO (the top bucket
 * was full, and one of its keys was just deleted) */
static void promote(struct table *tb, unsigned b, struct slot *to)
{
	struct slot *from = NULL;
	for (int i = 0; i < BOTTOM_SLOTS && !from; i++)
		if (tb->bottom[b][i].used)
			from = &tb->bottom[b][i];
	if (!from)
		return;
#ifdef BUG_TWOLEVEL_PROMOTE_CLEAR_FIRST
	uint64_t key = from->key, val = from->val;
	clear(from);                            /* BUG: the key is on no level until put() */
	put(to, key, val);
#else
	put(to, from->key, from->val);          /* on both levels: recovery drops the bottom one */
	clear(from);
#endif
}

int twolevel_delete(struct twolevel *t, uint64_t key)
{
	struct table *tb = t->tb;
	struct slot *s = find(tb, key);
	if (!s)
		return CC_NOTFOUND;
	clear(s);
	unsigned b = bucket(key);
	if (s >= &tb->top[b][0] && s < &tb->top[b][TOP_SLOTS])
		promote(tb, b, s);
	return CC_OK;
}

int twolevel_lookup(struct twolevel *t, uint64_t key, uint64_t *val)
{
	struct slot *s = find(t->tb, key);
	if (!s)
		return CC_NOTFOUND;
	*val = s->val;
	return CC_OK;
}

static int by_key(const void *a, const void *b)
{
	uint64_t x = ((const struct slot *)a)->key, y = ((const struct slot *)b)->key;
	return x < y ? -1 : x > y;
}

void twolevel_dump(struct twolevel *t, cc_kv_fn fn, void *ctx)
{
	static struct slot all[BUCKETS * (TOP_SLOTS + BOTTOM_SLOTS)];
	size_t n = 0;
	struct table *tb = t->tb;
	for (unsigned b = 0; b < BUCKETS; b++) {
		for (int i = 0; i < TOP_SLOTS; i++)
			if (tb->top[b][i].used)
				all[n++] = tb->top[b][i];
		for (int i = 0; i < BOTTOM_SLOTS; i++)
			if (tb->bottom[b][i].used)
				all[n++] = tb->bottom[b][i];
	}
	qsort(all, n, sizeof(all[0]), by_key);
	for (size_t i = 0; i < n; i++) {
		uint8_t k[8];
		for (int j = 0; j < 8; j++)
			k[j] = (uint8_t)(all[i].key >> (56 - 8 * j));
		if (fn(ctx, k, 8, (const uint8_t *)&all[i].val, 8))
			return;
	}
}

size_t twolevel_check(struct twolevel *t, cc_violation_fn fn, void *ctx)
{
	size_t bad = 0;
	struct table *tb = t->tb;
	for (unsigned b = 0; b < BUCKETS; b++) {
		int top = 0, below = 0;
		for (int i = 0; i < TOP_SLOTS; i++)
			top += tb->top[b][i].used != 0;
		for (int i = 0; i < BOTTOM_SLOTS; i++) {
			struct slot *s = &tb->bottom[b][i];
			if (!s->used)
				continue;
			below++;
			if (find(tb, s->key) != s) {
				CC_VIOLATIONF(fn, ctx, "key %llu is on both levels of bucket %u",
					      (unsigned long long)s->key, b);
				bad++;
			}
		}
		/* a bottom key with a free top slot above it: a promotion was lost */
		if (below && top < TOP_SLOTS) {
			CC_VIOLATIONF(fn, ctx, "bucket %u has %d free top slots and %d keys below",
				      b, TOP_SLOTS - top, below);
			bad++;
		}
	}
	return bad;
}

void twolevel_reachable(struct twolevel *t, cc_obj_fn fn, void *ctx)
{
	fn(ctx, t->tb, sizeof(*t->tb));
}
