/*
 * epalloc.c -- EPallocator: chunks of 56 slots chained from the meta object
 *              (HART, IPDPS 2019: section III-A.4/5, Algorithms 2 and 6; hart.h)
 *
 * Ordering rules
 * --------------
 * Every header change is one 8-byte store of the whole header (bitmap,
 * next-free index and full indicator), persisted before the caller goes on.
 * A slot belongs to the structure only once its bit is set; EPMalloc hands
 * out a free slot without touching PM, and the DRAM "reserved" mask keeps it
 * from being handed out twice until the caller sets its bit.
 *
 *   - chunk allocation (Algorithm 2 lines 8-11): meta.alog = chain + 1 is
 *     persisted first, then pm_alloc (whose zeroes are durable), the chunk's
 *     header is persisted with PNext = head, then head = chunk, then alog = 0.  pm_alloc persists its
 *     allocation record before it returns, so a crash before the head store
 *     leaves an allocated chunk nobody links; recovery frees every such orphan
 *     while alog says an allocation was in flight.  (The paper leaves this
 *     window open; without the flag the recycle log would be the only way to
 *     tell a chunk being freed from one being born.)
 *   - chunk recycling (Algorithm 6): PCurrent, then (not the head) PPrev,
 *     then the unlinking store, then pm_free, then the log is cleared
 *     (PCurrent first, so a stale PPrev is never read).
 *
 * All functions here take t->ep_lock themselves unless named *_locked.
 * Seeded bugs (trees/hart/bugs.json) are #ifdef BUG_HART_* at their spots.
 */
#include <stdio.h>
#include <stdlib.h>
#include "hart_internal.h"

/* idx_cmp -- order of the chunk index (internal) */
static int idx_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct ep_info *)a)->c;
	uintptr_t y = (uintptr_t)((const struct ep_info *)b)->c;
	return (x > y) - (x < y);
}

/* idx_room -- room for one more index entry; -1 if out of memory (internal) */
static int idx_room(struct hart *t)
{
	if (t->nidx == t->capidx) {
		size_t cap = t->capidx ? 2 * t->capidx : 64;
		struct ep_info *p = realloc(t->idx, cap * sizeof(*p));
		if (!p)
			return -1;
		t->idx = p, t->capidx = cap;
	}
	return 0;
}

/* idx_add -- enter chunk C of CHAIN into the index, kept sorted (internal) */
static int idx_add(struct hart *t, struct ep_chunk *c, int chain)
{
	if (idx_room(t))
		return -1;
	size_t i = t->nidx;
	while (i > 0 && (uintptr_t)t->idx[i - 1].c > (uintptr_t)c) {
		t->idx[i] = t->idx[i - 1];
		i--;
	}
	t->idx[i] = (struct ep_info){.c = c, .chain = chain, .reserved = 0};
	t->nidx++;
	return 0;
}

/* idx_remove -- drop chunk C from the index (internal) */
static void idx_remove(struct hart *t, struct ep_chunk *c)
{
	unsigned slot;
	struct ep_info *e = ep_find(t, c->slots, &slot);
	if (!e)
		return;
	size_t i = (size_t)(e - t->idx);
	memmove(&t->idx[i], &t->idx[i + 1], (t->nidx - i - 1) * sizeof(*e));
	t->nidx--;
}

/* ep_index_build -- rebuild the chunk index from the chains; -1 if a chain is corrupt */
int ep_index_build(struct hart *t)
{
	t->nidx = 0;
	for (int ch = 0; ch < CH_N; ch++) {
		size_t steps = 0;
		for (struct ep_chunk *c = t->meta->head[ch]; c; c = c->next) {
			if (!pm_contains(c) || pm_object_size(c) < chunk_bytes(ch) || ++steps > (1u << 26)) {
				fprintf(stderr, "hart: chain %d holds %p, which is no chunk\n", ch, (void *)c);
				return -1;
			}
			if (idx_room(t))
				return -1;
			t->idx[t->nidx++] = (struct ep_info){.c = c, .chain = ch};
		}
	}
	qsort(t->idx, t->nidx, sizeof(*t->idx), idx_cmp);
	for (size_t i = 1; i < t->nidx; i++)
		if (t->idx[i].c == t->idx[i - 1].c) {
			fprintf(stderr, "hart: chunk %p is chained twice\n", (void *)t->idx[i].c);
			return -1;
		}
	return 0;
}

/*
 * ep_find -- MemChunkOf: the index entry of the chunk whose slot P is, and
 * the slot number in *SLOT; NULL if P is no slot of a chained chunk
 */
struct ep_info *ep_find(struct hart *t, const void *p, unsigned *slot)
{
	size_t lo = 0, hi = t->nidx;
	while (lo < hi) {       /* first entry above P */
		size_t mid = (lo + hi) / 2;
		if ((uintptr_t)t->idx[mid].c <= (uintptr_t)p)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	struct ep_info *e = &t->idx[lo - 1];
	uintptr_t off = (uintptr_t)p - (uintptr_t)e->c->slots;
	size_t sz = slot_size[e->chain];
	if ((uintptr_t)p < (uintptr_t)e->c->slots || off % sz || off / sz >= HART_SLOTS)
		return NULL;
	*slot = (unsigned)(off / sz);
	return e;
}

/* ep_bit -- 1 if OBJ is a slot of a chained chunk and its bit is set */
int ep_bit(struct hart *t, const void *obj)
{
	unsigned s;
	struct ep_info *e = ep_find(t, obj, &s);
	return e && (load8(&e->c->hdr) >> s & 1);
}

static void repair_leaf_locked(struct hart *t, struct hart_leaf *l);
static void recycle_locked(struct hart *t, struct ep_chunk *c);

/* set_bit_locked -- set or reset OBJ's bit and persist the header (internal) */
static void set_bit_locked(struct hart *t, void *obj, int set)
{
	unsigned s;
	struct ep_info *e = ep_find(t, obj, &s);
	if (!e)
		return;
	uint64_t bm = hdr_bitmap(load8(&e->c->hdr));
	bm = set ? bm | UINT64_C(1) << s : bm & ~(UINT64_C(1) << s);
	store8(&e->c->hdr, hdr_make(bm));
	persistent(&e->c->hdr, 8);
	e->reserved &= ~(UINT64_C(1) << s);
}

/* ep_set_bit -- "Set (Reset) and persistent() the corresponding bit" */
void ep_set_bit(struct hart *t, void *obj, int set)
{
	pthread_mutex_lock(&t->ep_lock);
	set_bit_locked(t, obj, set);
	pthread_mutex_unlock(&t->ep_lock);
}

#ifdef BUG_HART_BIT_PERSIST_UNLOCKED
/* ep_set_bit_unpersisted -- BUG_HART_BIT_PERSIST_UNLOCKED: set OBJ's bit without persisting the
 * header; ep_persist_bit persists it later */
void ep_set_bit_unpersisted(struct hart *t, void *obj)
{
	unsigned s;
	pthread_mutex_lock(&t->ep_lock);
	struct ep_info *e = ep_find(t, obj, &s);
	if (e) {
		store8(&e->c->hdr, hdr_make(hdr_bitmap(load8(&e->c->hdr)) | UINT64_C(1) << s));
		e->reserved &= ~(UINT64_C(1) << s);
	}
	pthread_mutex_unlock(&t->ep_lock);
}

/* ep_persist_bit -- flush and fence the header holding OBJ's bit */
void ep_persist_bit(struct hart *t, void *obj)
{
	unsigned s;
	pthread_mutex_lock(&t->ep_lock);
	struct ep_info *e = ep_find(t, obj, &s);
	pthread_mutex_unlock(&t->ep_lock);
	if (e)
		persistent(&e->c->hdr, 8);
}
#endif

/*
 * ep_unreserve -- give back a slot EPMalloc handed out whose bit was never
 * set (an insert that ran out of space): a leaf's value is released first
 * (Algorithm 2's repair), and the chunk is recycled if it is left empty, so
 * a failed operation leaves no empty chunk chained either
 */
void ep_unreserve(struct hart *t, void *obj)
{
	unsigned s;
	pthread_mutex_lock(&t->ep_lock);
	struct ep_info *e = ep_find(t, obj, &s);
	if (e) {
		struct ep_chunk *c = e->c;
		if (e->chain == CH_LEAF)
			repair_leaf_locked(t, obj);
		e = ep_find(t, obj, &s); /* the repair may have recycled a chunk */
		e->reserved &= ~(UINT64_C(1) << s);
		recycle_locked(t, c);
	}
	pthread_mutex_unlock(&t->ep_lock);
}

/* ep_chain_of -- the chain holding C (its predecessor in *PREV, NULL at the head), or -1 */
int ep_chain_of(struct hart *t, const struct ep_chunk *c, struct ep_chunk **prev)
{
	for (int ch = 0; ch < CH_N; ch++) {
		struct ep_chunk *p = NULL;
		size_t steps = 0;
		for (struct ep_chunk *x = t->meta->head[ch]; x && pm_contains(x) && steps < (1u << 26);
		     p = x, x = x->next, steps++)
			if (x == c) {
				*prev = p;
				return ch;
			}
	}
	return -1;
}

/* recycle_locked -- Algorithm 6, EPRecycle (internal) */
static void recycle_locked(struct hart *t, struct ep_chunk *c)
{
	unsigned s;
	struct ep_info *e = ep_find(t, c->slots, &s);
	/* lines 1-2: a used object, or a slot a writer is filling */
	if (!e || hdr_bitmap(load8(&c->hdr)) || e->reserved)
		return;
	struct hart_meta *m = t->meta;
	int ch = e->chain;
#ifndef BUG_HART_RECYCLE_NO_LOG
	store8(&m->pcurrent, (uintptr_t)c);                     /* line 4 */
	persistent(&m->pcurrent, 8);
#else
	/* BUG_HART_RECYCLE_NO_LOG: no recycle log; a crash between the unlinking
	 * store and pm_free leaves a chunk no chain holds and no log names */
#endif
	if (m->head[ch] == c) {                                 /* lines 5-6 */
		store8(&m->head[ch], (uintptr_t)c->next);
		persistent(&m->head[ch], 8);
	} else {
		struct ep_chunk *pre = m->head[ch];              /* line 8 */
		while (pre && pre->next != c)
			pre = pre->next;
		if (!pre)
			abort(); /* the index said C is chained */
#ifndef BUG_HART_RECYCLE_NO_LOG
		store8(&m->pprev, (uintptr_t)pre);               /* line 9 */
		persistent(&m->pprev, 8);
#endif
		store8(&pre->next, (uintptr_t)c->next);          /* line 10 */
		persistent(&pre->next, 8);
	}
	/* lines 11-12 (the paper indents them under "else"; the head's chunk must
	 * be freed and the log reclaimed too) */
	idx_remove(t, c);
	pm_free(c);
#ifndef BUG_HART_RECYCLE_NO_LOG
	store8(&m->pcurrent, 0);
	store8(&m->pprev, 0);
	persistent(&m->pprev, 16);
#endif
}

/* ep_recycle -- EPRecycle(C): unlink and free C if no slot of it is used */
void ep_recycle(struct hart *t, struct ep_chunk *c)
{
	pthread_mutex_lock(&t->ep_lock);
	recycle_locked(t, c);
	pthread_mutex_unlock(&t->ep_lock);
}

/*
 * repair_leaf_locked -- Algorithm 2 lines 12-16 on free leaf L: a value whose
 * bit is set but whose leaf bit is not (an insert that crashed between its
 * lines 14 and 18, or a delete between its lines 11 and 12) is released.
 * The pointer is then cleared, so no free leaf keeps a stale pointer to a
 * value slot that may be reused (internal)
 */
static void repair_leaf_locked(struct hart *t, struct hart_leaf *l)
{
	uint64_t pv = load8(&l->pval);
	if (!pv)
		return;
	void *v = pval_addr(pv);
	unsigned s;
	struct ep_info *e = ep_find(t, v, &s);
	if (e && e->chain != CH_LEAF && (load8(&e->c->hdr) >> s & 1)) {
#ifndef BUG_HART_NO_REPAIR
		set_bit_locked(t, v, 0);                /* line 14 */
		recycle_locked(t, e->c);                /* line 15 */
#else
		/* BUG_HART_NO_REPAIR: the value bit is left set; once the pointer
		 * below is gone nothing names the value again */
#endif
	}
	store8(&l->pval, 0);                            /* line 16 */
	persistent(&l->pval, 8);
}

/* ep_repair_leaf -- Algorithm 2 lines 12-16 on free leaf L (recovery runs it on every free leaf) */
void ep_repair_leaf(struct hart *t, struct hart_leaf *l)
{
	pthread_mutex_lock(&t->ep_lock);
	repair_leaf_locked(t, l);
	pthread_mutex_unlock(&t->ep_lock);
}

/* chunk_new_locked -- Algorithm 2 lines 9-10: a zeroed chunk at the head of CHAIN (internal) */
static struct ep_chunk *chunk_new_locked(struct hart *t, int chain)
{
	struct hart_meta *m = t->meta;
	store8(&m->alog, (uint64_t)chain + 1);
	persistent(&m->alog, 8);
	struct ep_chunk *c = pm_alloc(chunk_bytes(chain));
	if (c) {
		c->hdr = hdr_make(0);
		c->next = m->head[chain];
#ifndef BUG_HART_CHAIN_HEAD_FIRST
		/* the header (PNext to the old head): recovery reads free slots'
		 * value pointers too, but pm_alloc's zeroes are durable already */
		persistent(c, sizeof *c);
#endif
		if (idx_add(t, c, chain)) {
			pm_free(c);
			c = NULL;
		} else {
			store8(&m->head[chain], (uintptr_t)c);
			persistent(&m->head[chain], 8);
#ifdef BUG_HART_CHAIN_HEAD_FIRST
			/* seeded bug: the new chunk (its PNext to the old head) is made
			 * durable only after the head names it */
			persistent(c, sizeof *c);
#endif
		}
	}
	store8(&m->alog, 0);
	persistent(&m->alog, 8);
	return c;
}

/* ep_malloc -- Algorithm 2, EPMalloc: a free slot of CHAIN, reserved; NULL if the pool is full */
void *ep_malloc(struct hart *t, int chain)
{
	void *obj = NULL;
	pthread_mutex_lock(&t->ep_lock);
	struct ep_info *e = NULL;
	unsigned s = 0;
	for (struct ep_chunk *c = t->meta->head[chain]; c; c = c->next) {       /* lines 1-7 */
		uint64_t h = load8(&c->hdr);
		if (hdr_full(h))
			continue;
		unsigned dummy;
		e = ep_find(t, c->slots, &dummy);
		uint64_t freem = ~(hdr_bitmap(h) | e->reserved) & HART_ALL;
		if (freem) {
			s = (unsigned)__builtin_ctzll(freem);
			break;
		}
		e = NULL;
	}
	if (!e) {                                                               /* lines 8-11 */
		struct ep_chunk *c = chunk_new_locked(t, chain);
		unsigned dummy;
		if (!c || !(e = ep_find(t, c->slots, &dummy)))
			goto out;
		s = 0;
	}
	e->reserved |= UINT64_C(1) << s;
	obj = e->c->slots + s * slot_size[chain];
	if (chain == CH_LEAF)                                                   /* lines 12-16 */
		repair_leaf_locked(t, obj);
out:
	pthread_mutex_unlock(&t->ep_lock);
	return obj;
}

/*
 * ep_free_leaf -- Algorithm 5 lines 10-14 for unlinked leaf L: reset the
 * leaf bit, reset the value bit, clear the value pointer, recycle both
 * chunks.  One critical section, so the value slot cannot be handed out
 * again while the free leaf still names it.
 */
void ep_free_leaf(struct hart *t, struct hart_leaf *l)
{
	pthread_mutex_lock(&t->ep_lock);
	void *v = pval_addr(load8(&l->pval));                   /* line 10 */
	set_bit_locked(t, l, 0);                                /* line 11 */
	set_bit_locked(t, v, 0);                                /* line 12 */
	store8(&l->pval, 0);
	persistent(&l->pval, 8);
	unsigned s;
	struct ep_info *e = ep_find(t, v, &s);
	if (e)
		recycle_locked(t, e->c);                        /* line 13 */
	if ((e = ep_find(t, l, &s)))
		recycle_locked(t, e->c);                        /* line 14 */
	pthread_mutex_unlock(&t->ep_lock);
}
