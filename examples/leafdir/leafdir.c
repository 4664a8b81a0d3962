/*
 * leafdir.c -- the leafdir map (see leafdir.h): leaves, directory, recovery
 *
 * Seeded bugs (bugs.json), each one rule broken, each a pattern the check after
 * recovery has to look for on purpose (issue 33):
 *   BUG_LEAFDIR_DIR_FIRST     a full leaf's replacement is published in the
 *                             directory before it is linked into the list, and
 *                             recovery trusts the directory: lookups (through
 *                             the directory) and the dump (the list) disagree
 *   BUG_LEAFDIR_NUSED_STALE   recovery leaves a leaf's fill count as it was: a
 *                             slot made live just before the crash is filled
 *                             again by the next insert into that leaf
 *   BUG_LEAFDIR_DELETE_FIRST  delete clears only the first live copy of the
 *                             key, so the second copy a crashed update left
 *                             comes back
 */
#include <stdio.h>
#include <string.h>
#include "leafdir.h"
#include "persist.h"
#include "pm_alloc.h"

#define SLOTS 4
#define DIR_MAX 256
#define WALK_MAX (1u << 16)     /* a longer list is a cycle (check) */
#define BLOCK_BITS 12           /* a leaf holds keys of one block of 4096 (a radix tree's last level) */
#define BLOCK(k) ((k) >> BLOCK_BITS)

struct leaf {
	uint64_t bitmap;        /* bit i: slot i is live (a slot's commit word) */
	uint64_t nused;         /* slots 0..nused-1 were filled since the leaf was made */
	struct leaf *next;
	uint64_t low;           /* the smallest key the leaf may hold */
	uint64_t keys[SLOTS];
	uint64_t vals[SLOTS];
};

struct dent {
	uint64_t low;
	struct leaf *leaf;
};

struct dir {
	uint64_t n;
	struct dent e[DIR_MAX];
};

/* the pool's root area (PM_ROOT_SIZE bytes) */
struct root {
	struct leaf *head;
	struct dir *dir[2];
	uint64_t sel;           /* dir[sel & 1] is the directory in use */
};

struct leafdir {
	struct root *r;
};

static struct leafdir handle;

static struct dir *active(struct leafdir *t) { return t->r->dir[t->r->sel & 1]; }
static struct dir *spare(struct leafdir *t) { return t->r->dir[(t->r->sel & 1) ^ 1]; }

/* flip -- make the spare directory, filled and persisted, the one in use */
static void flip(struct leafdir *t)
{
	t->r->sel ^= 1;
	persistent(&t->r->sel, sizeof(t->r->sel));
}

struct leafdir *leafdir_create(void)
{
	struct root *r = pm_root();
	struct leaf *l = pm_alloc(sizeof(*l));
	struct dir *d0 = pm_alloc(sizeof(*d0)), *d1 = pm_alloc(sizeof(*d1));
	if (!l || !d0 || !d1) {
		fprintf(stderr, "leafdir: pool too small\n");
		return NULL;
	}
	persistent(l, sizeof(*l));
	d0->n = 1;
	d0->e[0].leaf = l;
	/* whole: its count and first entry (pm_alloc's zeroes are durable already) */
	persistent(d0, sizeof(*d0));
	persistent(d1, sizeof(*d1));
	r->head = l;
	r->dir[0] = d0;
	r->dir[1] = d1;
	r->sel = 0;
	persistent(r, sizeof(*r));
	handle.r = r;
	return &handle;
}

struct leafdir *leafdir_open(void)
{
	handle.r = pm_root();
	return handle.r->head ? &handle : NULL;
}

/* list_route -- the leaf the list gives for KEY (writers: they change the list): the last leaf whose
 * low is not above it */
static struct leaf *list_route(struct leafdir *t, uint64_t key)
{
	struct leaf *l = t->r->head;
	while (l->next && l->next->low <= key)
		l = l->next;
	return l;
}

/* route -- the leaf readers find KEY in: from the directory's last entry whose low is not above
 * it, along the list */
static struct leaf *route(struct leafdir *t, uint64_t key)
{
	struct dir *d = active(t);
	size_t lo = 0, hi = d->n;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (d->e[mid].low <= key)
			lo = mid;
		else
			hi = mid;
	}
	/* the directory is a hint: a leaf linked after its last rebuild is reached along the list */
	struct leaf *l = d->e[lo].leaf;
	while (l->next && l->next->low <= key)
		l = l->next;
	return l;
}

/* first_copy -- the first live slot of L holding KEY, or -1 */
static int first_copy(const struct leaf *l, uint64_t key)
{
	for (int i = 0; i < SLOTS; i++)
		if ((l->bitmap >> i & 1) && l->keys[i] == key)
			return i;
	return -1;
}

/* copies -- the bitmap bits of every live slot of L holding KEY */
static uint64_t copies(const struct leaf *l, uint64_t key)
{
	uint64_t m = 0;
	for (int i = 0; i < SLOTS; i++)
		if ((l->bitmap >> i & 1) && l->keys[i] == key)
			m |= 1ull << i;
	return m;
}

/* live_pairs -- L's pairs (the first copy of each key), in key order; returns how many */
static int live_pairs(const struct leaf *l, uint64_t *keys, uint64_t *vals)
{
	int n = 0;
	for (int i = 0; i < SLOTS; i++) {
		if (!(l->bitmap >> i & 1) || first_copy(l, l->keys[i]) != i)
			continue;
		int j = n++;
		for (; j > 0 && keys[j - 1] > l->keys[i]; j--) {
			keys[j] = keys[j - 1];
			vals[j] = vals[j - 1];
		}
		keys[j] = l->keys[i];
		vals[j] = l->vals[i];
	}
	return n;
}

int leafdir_lookup(struct leafdir *t, uint64_t key, uint64_t *val)
{
	struct leaf *l = route(t, key);
	int i = first_copy(l, key);
	if (i < 0)
		return CC_NOTFOUND;
	*val = l->vals[i];
	return CC_OK;
}

/* fill_at -- write KEY, VAL into L's slot S and persist them (not yet live); S */
static int fill_at(struct leaf *l, int s, uint64_t key, uint64_t val)
{
	l->keys[s] = key;
	l->vals[s] = val;
	persistent(&l->keys[s], sizeof(l->keys[s]));
	persistent(&l->vals[s], sizeof(l->vals[s]));
	return s;
}

/* fill_slot -- write KEY, VAL into L's next unused slot (inserts fill a leaf in order up to
 * its count; a deleted slot is reclaimed when the leaf is replaced) */
static int fill_slot(struct leaf *l, uint64_t key, uint64_t val)
{
	return fill_at(l, (int)l->nused, key, val);
}

/* set_bitmap / set_nused -- one persisted store each */
static void set_bitmap(struct leaf *l, uint64_t bits)
{
	l->bitmap = bits;
	persistent(&l->bitmap, sizeof(l->bitmap));
}

static void set_nused(struct leaf *l, uint64_t n)
{
	l->nused = n;
	persistent(&l->nused, sizeof(l->nused));
}

/* new_leaf -- a persisted leaf holding the N pairs KEYS, VALS (in key order) */
static struct leaf *new_leaf(uint64_t low, struct leaf *next, const uint64_t *keys, const uint64_t *vals, int n)
{
	struct leaf *l = pm_alloc(sizeof(*l));
	if (!l)
		return NULL;
	for (int i = 0; i < n; i++) {
		l->keys[i] = keys[i];
		l->vals[i] = vals[i];
	}
	l->bitmap = (1ull << n) - 1;
	l->nused = (uint64_t)n;
	l->next = next;
	l->low = low;
	persistent(l, sizeof(*l));
	return l;
}

/* new_block -- KEY, VAL in a new leaf of KEY's block, which has none yet, linked after L */
static int new_block(struct leafdir *t, struct leaf *l, uint64_t key, uint64_t val)
{
	struct dir *d = active(t), *d2 = spare(t);
	if (d->n + 1 > DIR_MAX)
		return CC_NOSPACE;
	struct leaf *n = new_leaf(key & ~((1ull << BLOCK_BITS) - 1), l->next, &key, &val, 1);
	if (!n)
		return CC_NOSPACE;
	size_t m = 0, i = 0;
	for (; i < d->n && d->e[i].low < n->low; i++)
		d2->e[m++] = d->e[i];
	d2->e[m].low = n->low;
	d2->e[m++].leaf = n;
	for (; i < d->n; i++)
		d2->e[m++] = d->e[i];
	d2->n = m;
	persistent(d2, sizeof(d2->n) + m * sizeof(d2->e[0]));
	l->next = n;
	persistent(&l->next, sizeof(l->next));
	flip(t);
	return CC_OK;
}

/* replace_full -- replace the full leaf L by one or two new leaves holding its pairs and KEY, VAL */
static int replace_full(struct leafdir *t, struct leaf *l, uint64_t key, uint64_t val)
{
	uint64_t keys[SLOTS + 1], vals[SLOTS + 1];
	int n = live_pairs(l, keys, vals), j = n;
	for (; j > 0 && keys[j - 1] > key; j--) {
		keys[j] = keys[j - 1];
		vals[j] = vals[j - 1];
	}
	keys[j] = key;
	vals[j] = val;
	n++;
	struct dir *d = active(t), *d2 = spare(t);
	if (d->n + 1 > DIR_MAX)
		return CC_NOSPACE;
	struct leaf *b = NULL, *a;
	if (n > SLOTS - 1) {      /* two leaves, so each has room left */
		int half = (n + 1) / 2;
		if (!(b = new_leaf(keys[half], l->next, keys + half, vals + half, n - half)))
			return CC_NOSPACE;
		a = new_leaf(l->low, b, keys, vals, half);
	} else {
		a = new_leaf(l->low, l->next, keys, vals, n);
	}
	if (!a)
		return CC_NOSPACE;
	size_t m = 0;
	for (size_t i = 0; i < d->n; i++) {
		if (d->e[i].leaf != l) {
			d2->e[m++] = d->e[i];
			continue;
		}
		d2->e[m].low = l->low;
		d2->e[m++].leaf = a;
		if (b) {
			d2->e[m].low = b->low;
			d2->e[m++].leaf = b;
		}
	}
	d2->n = m;
	persistent(d2, sizeof(d2->n) + m * sizeof(d2->e[0]));
	struct leaf **link = &t->r->head;
	while (*link && *link != l)
		link = &(*link)->next;
	if (!*link) {
		fprintf(stderr, "leafdir: leaf at %p is not in the list\n", (void *)l);
		return CC_ERROR;
	}
#ifdef BUG_LEAFDIR_DIR_FIRST
	flip(t);
	*link = a;
	persistent(link, sizeof(*link));
#else
	/* the list is the truth: link first, the directory (rebuilt by recovery) after */
	*link = a;
	persistent(link, sizeof(*link));
	flip(t);
#endif
	pm_free(l);
	return CC_OK;
}

int leafdir_insert(struct leafdir *t, uint64_t key, uint64_t val)
{
	struct leaf *l = list_route(t, key);
	if (BLOCK(l->low) != BLOCK(key))
		return new_block(t, l, key, val);
	if (first_copy(l, key) >= 0)
		return CC_EXISTS;
	if (l->nused == SLOTS)
		return replace_full(t, l, key, val);
	int s = fill_slot(l, key, val);
	set_bitmap(l, l->bitmap | 1ull << s);
	set_nused(l, (uint64_t)s + 1);
	return CC_OK;
}

int leafdir_update(struct leafdir *t, uint64_t key, uint64_t val)
{
	struct leaf *l = list_route(t, key);
	int i = first_copy(l, key);
	if (i < 0)
		return CC_NOTFOUND;
	int s = 0;              /* the first slot not live (a deleted one too) */
	while (s < SLOTS && (l->bitmap >> s & 1))
		s++;
	if (s == SLOTS) {
		l->vals[i] = val;       /* no slot left: in place, one 8-byte store */
		persistent(&l->vals[i], sizeof(l->vals[i]));
		return CC_OK;
	}
	/* a new slot, made live before the old copies are cleared: between the two stores the
	 * key has two live copies, and the first in slot order is the one read */
	fill_at(l, s, key, val);
	set_bitmap(l, l->bitmap | 1ull << s);
	set_bitmap(l, l->bitmap & ~(copies(l, key) & ~(1ull << s)));
	if (l->nused < (uint64_t)s + 1)
		set_nused(l, (uint64_t)s + 1);
	return CC_OK;
}

int leafdir_delete(struct leafdir *t, uint64_t key)
{
	struct leaf *l = list_route(t, key);
#ifdef BUG_LEAFDIR_DELETE_FIRST
	int i = first_copy(l, key);
	uint64_t m = i < 0 ? 0 : 1ull << i;
#else
	uint64_t m = copies(l, key);    /* every copy: a crashed update may have left two */
#endif
	if (!m)
		return CC_NOTFOUND;
	set_bitmap(l, l->bitmap & ~m);
	return CC_OK;
}

int leafdir_recover(struct leafdir *t)
{
	struct root *r = t->r;
	unsigned n = 0;
	for (struct leaf *l = r->head; l; l = l->next) {
		if (++n > DIR_MAX) {
			fprintf(stderr, "leafdir: more leaves than the directory holds\n");
			return -1;
		}
#ifndef BUG_LEAFDIR_NUSED_STALE
		/* a slot made live just before the crash, its count not yet raised */
		uint64_t hi = 0;
		for (int i = 0; i < SLOTS; i++)
			if (l->bitmap >> i & 1)
				hi = (uint64_t)i + 1;
		if (l->nused < hi)
			set_nused(l, hi);
#endif
	}
#ifndef BUG_LEAFDIR_DIR_FIRST
	/* the directory from the list, which is the truth */
	struct dir *d2 = spare(t);
	size_t m = 0;
	for (struct leaf *l = r->head; l; l = l->next) {
		d2->e[m].low = l->low;
		d2->e[m++].leaf = l;
	}
	d2->n = m;
	persistent(d2, sizeof(d2->n) + m * sizeof(d2->e[0]));
	flip(t);
#endif
	return 0;
}

void leafdir_dump(struct leafdir *t, cc_kv_fn fn, void *ctx)
{
	uint64_t keys[SLOTS], vals[SLOTS];
	unsigned walked = 0;
	for (struct leaf *l = t->r->head; l && walked++ < WALK_MAX; l = l->next) {
		int n = live_pairs(l, keys, vals);
		for (int i = 0; i < n; i++) {
			uint8_t k[8];
			cc_u64_key(keys[i], k);
			if (fn(ctx, k, 8, (const uint8_t *)&vals[i], 8))
				return;
		}
	}
}

size_t leafdir_check(struct leafdir *t, cc_violation_fn fn, void *ctx)
{
	size_t bad = 0;
	unsigned walked = 0;
	struct leaf *l = t->r->head;
	if (l && l->low != 0) {
		CC_VIOLATION(fn, ctx, "the first leaf's low key is not 0");
		bad++;
	}
	for (; l; l = l->next) {
		if (++walked > WALK_MAX) {
			CC_VIOLATION(fn, ctx, "the leaf list does not end (a cycle)");
			return bad + 1;
		}
		if (!pm_contains(l)) {
			CC_VIOLATION(fn, ctx, "a leaf outside the pool");
			return bad + 1;
		}
		if (l->nused > SLOTS) {
			CC_VIOLATIONF(fn, ctx, "leaf at %p: %lu slots used of %d", (void *)l,
				      (unsigned long)l->nused, SLOTS);
			bad++;
		}
		if (l->next && l->next->low <= l->low) {
			CC_VIOLATIONF(fn, ctx, "leaf at %p: the next leaf's low key is not above its own", (void *)l);
			bad++;
		}
		for (int i = 0; i < SLOTS; i++) {
			if (!(l->bitmap >> i & 1))
				continue;
			uint64_t k = l->keys[i];
			if (k < l->low || (l->next && k >= l->next->low) || BLOCK(k) != BLOCK(l->low)) {
				CC_VIOLATIONF(fn, ctx, "leaf at %p: key %lu outside its range", (void *)l,
					      (unsigned long)k);
				bad++;
			}
		}
	}
	return bad;
}

void leafdir_reachable(struct leafdir *t, cc_obj_fn fn, void *ctx)
{
	unsigned walked = 0;
	for (struct leaf *l = t->r->head; l && walked++ < WALK_MAX; l = l->next)
		fn(ctx, l, sizeof(*l));
	fn(ctx, t->r->dir[0], sizeof(struct dir));
	fn(ctx, t->r->dir[1], sizeof(struct dir));
}
