/*
 * hart.c -- HART operations: the hash table, insert, update, delete, search, scan, dump
 *
 * Failure atomicity (HART, IPDPS 2019, Algorithms 1, 3, 4, 5; cited in hart.h)
 * ----------------------------------------------------------------------------
 *   - insert: value written and persisted, the leaf's value pointer, the
 *     value bit, the key, the key length; the leaf bit commits.  A crash
 *     before it leaves a free leaf naming a value whose bit is set, which
 *     EPMalloc's repair (Algorithm 2 lines 12-16) releases; recovery runs
 *     that repair on every free leaf.
 *   - update: out of place under the update log {PLeaf, POldV, PNewV}:
 *     PLeaf, POldV, the new value, PNewV, the new value's bit, the leaf's
 *     value pointer (one 8-byte store: address and length), the old value's
 *     bit; then the log is reclaimed and the old value's chunk recycled.
 *     Recovery resumes at line 7 when PNewV is set and drops the log
 *     otherwise.
 *   - delete: the leaf leaves the DRAM tree, then its bit, its value's bit
 *     and its value pointer are reset (ep_free_leaf) and both chunks recycled.
 *   - search: the DRAM tree finds the leaf, the leaf bit decides.
 * Every persist is persistent() = mfence; clflush; mfence (persist.h).
 *
 * Locks: t->ht_lock guards the hash table; each ART has a rwlock (readers
 * share it, a writer holds it for the whole operation); EPallocator state
 * is behind t->ep_lock (epalloc.c), which also hands out update-log slots.
 * Empty ARTs are not freed (Algorithm 5 lines 15-16): a writer may be
 * waiting on the ART's lock; they go at close and are not rebuilt.
 *
 * Seeded bugs (trees/hart/bugs.json) are #ifdef BUG_HART_* at their spots.
 */
#include <stdio.h>
#include <stdlib.h>
#include "hart_internal.h"

/* ht_hash -- FNV-1a of a hash key and its length (internal) */
static size_t ht_hash(const uint8_t *hk, unsigned hklen)
{
	uint64_t h = 1469598103934665603ULL ^ hklen;
	for (unsigned i = 0; i < HART_KH; i++)
		h = (h ^ hk[i]) * 1099511628211ULL;
	return (size_t)h;
}

/* ht_lookup -- the ART of HK/HKLEN, NULL if none; caller holds ht_lock (internal) */
static struct hart_art *ht_lookup(struct hart *t, const uint8_t *hk, unsigned hklen)
{
	if (!t->nbuckets)
		return NULL;
	for (struct hart_art *a = t->buckets[ht_hash(hk, hklen) % t->nbuckets]; a; a = a->next)
		if (a->hklen == hklen && !memcmp(a->hk, hk, HART_KH))
			return a;
	return NULL;
}

/* ht_grow -- double the buckets; caller holds ht_lock for writing (internal) */
static int ht_grow(struct hart *t)
{
	size_t nb = t->nbuckets ? 2 * t->nbuckets : 64;
	struct hart_art **b = calloc(nb, sizeof(*b));
	if (!b)
		return -1;
	for (size_t i = 0; i < t->nbuckets; i++)
		for (struct hart_art *a = t->buckets[i], *nx; a; a = nx) {
			nx = a->next;
			size_t j = ht_hash(a->hk, a->hklen) % nb;
			a->next = b[j];
			b[j] = a;
		}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = nb;
	return 0;
}

/* ht_find -- HashFind (and with CREATE, NewART + HashInsert): the ART of KEY's hash key */
struct hart_art *ht_find(struct hart *t, const uint8_t *key, size_t klen, int create)
{
	uint8_t hk[HART_KH];
	unsigned hklen = hart_key_split(key, klen, hk);
	pthread_rwlock_rdlock(&t->ht_lock);
	struct hart_art *a = ht_lookup(t, hk, hklen);
	pthread_rwlock_unlock(&t->ht_lock);
	if (a || !create)
		return a;
	pthread_rwlock_wrlock(&t->ht_lock);
	if (!(a = ht_lookup(t, hk, hklen)) && (t->narts < 2 * t->nbuckets || ht_grow(t) == 0) &&
	    (a = calloc(1, sizeof(*a)))) {
		memcpy(a->hk, hk, HART_KH);
		a->hklen = (uint8_t)hklen;
		pthread_rwlock_init(&a->lock, NULL);
		size_t j = ht_hash(hk, hklen) % t->nbuckets;
		a->next = t->buckets[j];
		t->buckets[j] = a;
		t->narts++;
	}
	pthread_rwlock_unlock(&t->ht_lock);
	return a;
}

/* ht_free -- free every ART and the buckets */
void ht_free(struct hart *t)
{
	for (size_t i = 0; i < t->nbuckets; i++)
		for (struct hart_art *a = t->buckets[i], *nx; a; a = nx) {
			nx = a->next;
			art_free(a);
			pthread_rwlock_destroy(&a->lock);
			free(a);
		}
	free(t->buckets);
	t->buckets = NULL;
	t->nbuckets = t->narts = 0;
}

/* hart_new -- a DRAM handle for META (internal) */
static struct hart *hart_new(struct hart_meta *meta)
{
	struct hart *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->meta = meta;
	pthread_mutex_init(&t->ep_lock, NULL);
	pthread_rwlock_init(&t->ht_lock, NULL);
	return t;
}

/* hart_create -- a new empty HART in the formatted pool */
struct hart *hart_create(void)
{
	struct hart_meta *m = pm_alloc(sizeof(*m));
	if (!m) {
		fprintf(stderr, "hart: no room for the meta object\n");
		return NULL;
	}
	m->magic = HART_MAGIC;
	m->kh = HART_KH;
	persistent(m, sizeof(*m));
	uintptr_t *root = pm_root();
	store8(root, (uintptr_t)m);
	persistent(root, 8);
	return hart_new(m);
}

/* hart_open -- attach to the HART of the formatted pool */
struct hart *hart_open(void)
{
	struct hart_meta *m = (struct hart_meta *)(uintptr_t)load8(pm_root());
	if (!pm_contains(m) || pm_object_size(m) < sizeof(*m) || m->magic != HART_MAGIC) {
		fprintf(stderr, "hart: the pool's root names no HART\n");
		return NULL;
	}
	if (m->kh != HART_KH) {
		fprintf(stderr, "hart: the pool was built with HART_KH=%lu, this build has %d\n",
			(unsigned long)m->kh, HART_KH);
		return NULL;
	}
	return hart_new(m);
}

/* hart_close -- release every DRAM structure */
void hart_close(struct hart *t)
{
	if (!t)
		return;
	ht_free(t);
	free(t->idx);
	pthread_mutex_destroy(&t->ep_lock);
	pthread_rwlock_destroy(&t->ht_lock);
	free(t);
}

/* lengths_ok -- keys 1..24 bytes, values 1..16 (VLEN 0: no value) (internal) */
static int lengths_ok(size_t klen, size_t vlen, int want_val)
{
	if (klen < 1 || klen > HART_KEY_MAX || (want_val && (vlen < 1 || vlen > HART_VAL_MAX))) {
		fprintf(stderr, "hart: key of %zu bytes or value of %zu bytes out of range\n", klen, vlen);
		return 0;
	}
	return 1;
}

/* leaf_valid -- the leaf bit of L (Algorithm 4 line 9), read under the allocator lock (internal) */
static int leaf_valid(struct hart *t, const struct hart_leaf *l)
{
	pthread_mutex_lock(&t->ep_lock);
	int r = ep_bit(t, l);
	pthread_mutex_unlock(&t->ep_lock);
	return r;
}

/* write_value -- VAL into slot V of the chain for VLEN, zero-padded, persisted (internal) */
static void write_value(uint8_t *v, const uint8_t *val, size_t vlen, int flush)
{
	size_t sz = slot_size[val_chain(vlen)];
	memcpy(v, val, vlen);
	memset(v + vlen, 0, sz - vlen);
	if (flush)
		persistent(v, sz);
}

/* hart_insert -- Algorithm 1 */
int hart_insert(struct hart *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	if (!lengths_ok(klen, vlen, 1))
		return CC_ERROR;
	struct hart_art *a = ht_find(t, key, klen, 1);                 /* lines 1-5 */
	if (!a)
		return CC_NOSPACE;
	int st = CC_OK;
#if defined(BUG_HART_MT_INSERT_RDLOCK)
	/* BUG_HART_MT_INSERT_RDLOCK: a write path under the read lock; two
	 * inserts of one key both find it absent and both return ok */
	pthread_rwlock_rdlock(&a->lock);
	if (art_search(a, key, klen)) {
#elif defined(BUG_HART_MT_CHECK_UNLOCKED)
	/* BUG_HART_MT_CHECK_UNLOCKED: the existence check before the lock is
	 * taken (check, then act); another insert of the key may get in between */
	int present = art_search(a, key, klen) != NULL;
	pthread_rwlock_wrlock(&a->lock);
	if (present) {
#else
	pthread_rwlock_wrlock(&a->lock);
	if (art_search(a, key, klen)) {                                 /* lines 6-8 */
#endif
		st = CC_EXISTS; /* the adapter API: insert never overwrites */
		goto out;
	}
	struct hart_leaf *l = ep_malloc(t, CH_LEAF);                    /* line 10 */
	if (!l) {
		st = CC_NOSPACE;
		goto out;
	}
	uint8_t *v = ep_malloc(t, val_chain(vlen));                     /* line 11 */
	if (!v) {
		ep_unreserve(t, l);
		st = CC_NOSPACE;
		goto out;
	}
	write_value(v, val, vlen, 1);                                   /* line 12 */
	store8(&l->pval, pval_make(v, vlen));                           /* line 13 */
	persistent(&l->pval, 8);
	ep_set_bit(t, v, 1);                                            /* line 14 */
#ifdef BUG_HART_LEAF_BIT_EARLY
	/* BUG_HART_LEAF_BIT_EARLY: line 18 before lines 15-16; a crash in
	 * between leaves a used leaf holding the slot's old key (or none) */
	ep_set_bit(t, l, 1);
#endif
	memcpy(l->key, key, klen);                                      /* line 15 */
	memset(l->key + klen, 0, HART_KEY_MAX - klen);
	persistent(l->key, HART_KEY_MAX);
	store8(&l->klen, klen);                                         /* line 16 */
	persistent(&l->klen, 8);
	if (art_insert(a, l)) {                                         /* line 17 */
		/* out of DRAM: the leaf stays free and its value is released
		 * now (ep_unreserve repairs it) */
		ep_unreserve(t, l);
		st = CC_NOSPACE;
		goto out;
	}
#if defined(BUG_HART_BIT_PERSIST_UNLOCKED)
	/* BUG_HART_BIT_PERSIST_UNLOCKED: line 18's bit is set, the ART's lock
	 * released, and only then is the bit persisted: a lookup of the key in
	 * between sees a valid leaf and returns its value, which a crash before
	 * the flush takes back (needs two threads: alone, the insert is merely
	 * in flight until the flush) */
	ep_set_bit_unpersisted(t, l);
	pthread_rwlock_unlock(&a->lock);
	ep_persist_bit(t, l);
	return st;
#elif !defined(BUG_HART_LEAF_BIT_EARLY)
	ep_set_bit(t, l, 1);                                            /* line 18 */
#endif
out:
	pthread_rwlock_unlock(&a->lock);
	return st;
}

/* ulog_get -- GetMicroLog(UPDATE): a free update-log slot (internal) */
static struct hart_ulog *ulog_get(struct hart *t)
{
	struct hart_ulog *u = NULL;
	for (;;) {
		pthread_mutex_lock(&t->ep_lock);
		uint32_t freem = ~t->ulog_busy & ((UINT32_C(1) << HART_ULOGS) - 1);
		if (freem) {
			unsigned i = (unsigned)__builtin_ctz(freem);
			t->ulog_busy |= UINT32_C(1) << i;
			u = &t->meta->ulog[i];
		}
		pthread_mutex_unlock(&t->ep_lock);
		if (u)
			return u;
		sched_yield();
	}
}

/* ulog_reclaim -- LogReclaim: PNewV, POldV, PLeaf cleared in that order, one line (internal) */
static void ulog_reclaim(struct hart *t, struct hart_ulog *u)
{
	store8(&u->pnewv, 0);
	store8(&u->poldv, 0);
	store8(&u->pleaf, 0);
	persistent(u, 24);
	pthread_mutex_lock(&t->ep_lock);
	t->ulog_busy &= ~(UINT32_C(1) << (u - t->meta->ulog));
	pthread_mutex_unlock(&t->ep_lock);
}

/* hart_update -- Algorithm 3 */
int hart_update(struct hart *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	if (!lengths_ok(klen, vlen, 1))
		return CC_ERROR;
	struct hart_art *a = ht_find(t, key, klen, 0);
	if (!a)
		return CC_NOTFOUND;
	pthread_rwlock_wrlock(&a->lock);
	int st = CC_OK;
	struct hart_leaf *l = art_search(a, key, klen);
	if (!l) {
		st = CC_NOTFOUND;
		goto out;
	}
#ifdef BUG_HART_UPDATE_IN_PLACE
	/* BUG_HART_UPDATE_IN_PLACE: a value of the old one's length is copied
	 * over it in place, with no log ("it fits"): a 16-byte value is two
	 * 8-byte pieces that persist in any order, so a crash between them
	 * leaves a value torn between the old and the new one */
	if (pval_len(load8(&l->pval)) == vlen) {
		write_value(pval_addr(load8(&l->pval)), val, vlen, 1);
		goto out;
	}
#endif
	struct hart_ulog *u = ulog_get(t);                              /* line 1 */
	uint64_t oldpv = load8(&l->pval);
#ifndef BUG_HART_ULOG_LATE
	store8(&u->pleaf, (uintptr_t)l);                                /* line 2 */
	persistent(&u->pleaf, 8);
	store8(&u->poldv, oldpv);                                       /* line 3 */
	persistent(&u->poldv, 8);
#endif
	uint8_t *nv = ep_malloc(t, val_chain(vlen));                    /* line 4 */
	if (!nv) {
		ulog_reclaim(t, u);
		st = CC_NOSPACE;
		goto out;
	}
	uint64_t newpv = pval_make(nv, vlen);
#if defined(BUG_HART_PNEWV_EARLY)
	/* BUG_HART_PNEWV_EARLY: line 6 before line 5; recovery resumes the
	 * update with a value slot that was never written */
	store8(&u->pnewv, newpv);
	persistent(&u->pnewv, 8);
	write_value(nv, val, vlen, 1);
#elif defined(BUG_HART_VALUE_PTR_NO_FENCE)
	/* BUG_HART_VALUE_PTR_NO_FENCE: the value and PNewV are stored with no
	 * fence between them and persisted together; PNewV's line may reach
	 * PM first */
	write_value(nv, val, vlen, 0);
	store8(&u->pnewv, newpv);
	cc_flush(nv, slot_size[val_chain(vlen)]);
	cc_flush(&u->pnewv, 8);
	cc_mfence();
#else
	write_value(nv, val, vlen, 1);                                  /* line 5 */
	store8(&u->pnewv, newpv);                                       /* line 6 */
	persistent(&u->pnewv, 8);
#endif
	ep_set_bit(t, nv, 1);                                           /* line 7 */
	store8(&l->pval, newpv);                                        /* line 8 */
	persistent(&l->pval, 8);
#ifdef BUG_HART_ULOG_LATE
	/* BUG_HART_ULOG_LATE: the log is written after the pointer it protects;
	 * a crash before it leaves the old value's bit set with nobody naming it */
	store8(&u->pleaf, (uintptr_t)l);
	persistent(&u->pleaf, 8);
	store8(&u->poldv, oldpv);
	persistent(&u->poldv, 8);
	store8(&u->pnewv, newpv);
	persistent(&u->pnewv, 8);
#endif
	void *oldv = pval_addr(oldpv);
	ep_set_bit(t, oldv, 0);                                         /* line 9 */
	/*
	 * Line 11 before line 10: the log is reclaimed before the old chunk is
	 * recycled, so a log replayed by recovery never names a slot of a chunk
	 * that was freed (and possibly reborn for another writer).  A crash in
	 * between leaves an empty chunk chained, which EPMalloc reuses.
	 */
	ulog_reclaim(t, u);                                             /* line 11 */
	unsigned s;
	pthread_mutex_lock(&t->ep_lock);
#ifdef BUG_HART_RECYCLE_NEW_CHUNK
	/* BUG_HART_RECYCLE_NEW_CHUNK: Algorithm 3 line 10 as printed,
	 * EPRecycle(MemChunkOf(L.p_value)) after line 8 pointed L at the new
	 * value: the new value's chunk is never empty, and the old one stays
	 * chained when the update emptied it (an update that changes the
	 * value's size, or one whose new value lands in another chunk).  No
	 * crash is needed to see it: hart_check's "no empty chunk is chained"
	 * fails right after such an update.  (Recovery recycles empty chunks,
	 * so crash states alone would hide it.) */
	struct ep_info *e = ep_find(t, pval_addr(load8(&l->pval)), &s);
#else
	/* line 10: the chunk of the OLD value (the paper's L.p_value is the new one by now) */
	struct ep_info *e = ep_find(t, oldv, &s);
#endif
	struct ep_chunk *c = e ? e->c : NULL;
	pthread_mutex_unlock(&t->ep_lock);
	if (c)
		ep_recycle(t, c);                                       /* line 10 */
out:
	pthread_rwlock_unlock(&a->lock);
	return st;
}

/* hart_delete -- Algorithm 5 */
int hart_delete(struct hart *t, const uint8_t *key, size_t klen)
{
	if (!lengths_ok(klen, 0, 0))
		return CC_NOTFOUND;
	struct hart_art *a = ht_find(t, key, klen, 0);                 /* lines 1-4 */
	if (!a)
		return CC_NOTFOUND;
#ifdef BUG_HART_MT_LOCK_ORDER
	/* BUG_HART_MT_LOCK_ORDER: the allocator lock taken before the ART's
	 * lock, against every other path's order (ART lock, then ep_lock): a
	 * delete holding ep_lock waits for an insert, update or lookup that
	 * holds the ART's lock and waits for ep_lock */
	pthread_mutex_lock(&t->ep_lock);
	pthread_rwlock_wrlock(&a->lock);
	pthread_mutex_unlock(&t->ep_lock);
#else
	pthread_rwlock_wrlock(&a->lock);
#endif
	struct hart_leaf *l = art_delete(a, key, klen);                 /* lines 5-9 */
	if (l)
		ep_free_leaf(t, l);                                     /* lines 10-14 */
	pthread_rwlock_unlock(&a->lock);
	return l ? CC_OK : CC_NOTFOUND;
}

/* hart_lookup -- Algorithm 4 */
int hart_lookup(struct hart *t, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen)
{
	*vlen = 0;
	if (klen < 1 || klen > HART_KEY_MAX)
		return CC_NOTFOUND;
	struct hart_art *a = ht_find(t, key, klen, 0);                 /* lines 1-4 */
	if (!a)
		return CC_NOTFOUND;
	pthread_rwlock_rdlock(&a->lock);
	int st = CC_NOTFOUND;
	struct hart_leaf *l = art_search(a, key, klen);                 /* line 5 */
	if (l && leaf_valid(t, l)) {                                    /* lines 9-10 */
		uint64_t pv = load8(&l->pval);
		size_t n = pval_len(pv);
		if (n > HART_VAL_MAX)
			n = HART_VAL_MAX;
		if (pm_contains(pval_addr(pv))) {
			memcpy(val, pval_addr(pv), n);
			*vlen = n;
			st = CC_OK;
		}
	}
	pthread_rwlock_unlock(&a->lock);
	return st;
}

/* a pair copied out of the tree, for sorting */
struct kv {
	uint8_t key[HART_KEY_MAX], val[HART_VAL_MAX];
	uint8_t klen, vlen;
};

struct kvs {
	struct kv *p;
	size_t n, cap;
	struct hart *t;
};

/* kv_cmp -- byte order, a proper prefix first (internal) */
static int kv_cmp(const void *x, const void *y)
{
	const struct kv *a = x, *b = y;
	size_t n = a->klen < b->klen ? a->klen : b->klen;
	int c = memcmp(a->key, b->key, n);
	return c ? c : (a->klen > b->klen) - (a->klen < b->klen);
}

/* collect_one -- copy leaf L out if its bit is set (internal) */
static void collect_one(void *ctx, struct hart_leaf *l)
{
	struct kvs *s = ctx;
	if (!ep_bit(s->t, l))
		return;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		struct kv *p = realloc(s->p, cap * sizeof(*p));
		if (!p)
			abort();
		s->p = p, s->cap = cap;
	}
	struct kv *k = &s->p[s->n++];
	uint64_t pv = load8(&l->pval);
	k->klen = (uint8_t)(l->klen > HART_KEY_MAX ? HART_KEY_MAX : l->klen);
	memcpy(k->key, l->key, k->klen);
	k->vlen = (uint8_t)(pval_len(pv) > HART_VAL_MAX ? HART_VAL_MAX : pval_len(pv));
	if (pm_contains(pval_addr(pv)))
		memcpy(k->val, pval_addr(pv), k->vlen);
	else
		k->vlen = 0;
}

/* collect -- every valid pair of every ART, sorted (internal) */
static void collect(struct hart *t, struct kvs *s)
{
	*s = (struct kvs){.t = t};
	pthread_rwlock_rdlock(&t->ht_lock);
	for (size_t i = 0; i < t->nbuckets; i++)
		for (struct hart_art *a = t->buckets[i]; a; a = a->next) {
			pthread_rwlock_rdlock(&a->lock);
			pthread_mutex_lock(&t->ep_lock);
			art_each(a, collect_one, s);
			pthread_mutex_unlock(&t->ep_lock);
			pthread_rwlock_unlock(&a->lock);
		}
	pthread_rwlock_unlock(&t->ht_lock);
	qsort(s->p, s->n, sizeof(*s->p), kv_cmp);
}

/* hart_scan -- up to COUNT pairs with key >= KEY (collect and sort) */
size_t hart_scan(struct hart *t, const uint8_t *key, size_t klen, size_t count, cc_kv_fn fn, void *ctx)
{
	struct kvs s;
	collect(t, &s);
	struct kv probe = {.klen = (uint8_t)(klen > HART_KEY_MAX ? HART_KEY_MAX : klen)};
	memcpy(probe.key, key, probe.klen);
	size_t seen = 0;
	for (size_t i = 0; i < s.n && seen < count; i++) {
		if (kv_cmp(&s.p[i], &probe) < 0)
			continue;
		seen++;
		if (fn(ctx, s.p[i].key, s.p[i].klen, s.p[i].val, s.p[i].vlen))
			break;
	}
	free(s.p);
	return seen;
}

/* hart_dump -- every pair in key order */
void hart_dump(struct hart *t, cc_kv_fn fn, void *ctx)
{
	struct kvs s;
	collect(t, &s);
	for (size_t i = 0; i < s.n; i++)
		if (fn(ctx, s.p[i].key, s.p[i].klen, s.p[i].val, s.p[i].vlen))
			break;
	free(s.p);
}
