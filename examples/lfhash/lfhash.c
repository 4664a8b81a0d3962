/*
 * lfhash.c -- a lock-free hash map in persistent memory (examples/lfhash)
 *
 * Written for crashcheck's tests of persistency races (README "Concurrent checking"). Every
 * change is published by one CAS of an 8-byte word with its low bit set (LFH_DIRTY: stored, not
 * yet durable), then flushed, then the bit cleared. A reader that meets a dirty word makes it
 * durable itself (flush, fence) before it acts on it ("help"), so nothing a reader returned can
 * be lost by a crash: the link-and-persist discipline. Three kinds of word: a directory entry
 * (a segment published by the first insert into it, with that insert's slot already filled: a
 * radix child), a slot's record pointer (an insert or update publishes a new record; a delete
 * clears it), and a slot's key (claimed once by CAS and persisted before any record of the slot
 * is published, by whichever thread uses it). Records are never reused, so nothing is freed.
 *
 * Seeded bugs (bugs.json), each an operation that answers from a dirty word without helping
 * (a lookup's value or "not found", an insert's "exists", an update's or delete's "not found",
 * or an update or delete that goes on into a segment):
 *   BUG_LFH_GET_NO_HELP    a record pointer still dirty (an insert or update that has not
 *                          flushed yet) is taken as present
 *   BUG_LFH_CLEAR_NO_HELP  a pointer a delete cleared and has not flushed yet is taken as absent
 *   BUG_LFH_DIR_NO_HELP    a directory entry still dirty (a segment the first insert into it
 *                          published and has not flushed yet) is followed
 */
#include "lfhash.h"

#include "persist.h"

#define LFH_DIRTY 1ull

static uint64_t next_rec;     /* DRAM: the next free record, taken by atomic add; recovery sets it */

static uint64_t load(uint64_t *w) { return __atomic_load_n(w, __ATOMIC_ACQUIRE); }

static int cas(uint64_t *w, uint64_t *expect, uint64_t want)
{
	return __atomic_compare_exchange_n(w, expect, want, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* help -- the clean value of *W, made durable first if it is dirty */
static uint64_t help(uint64_t *w)
{
	uint64_t v = load(w);
	if (v & LFH_DIRTY) {
		persistent(w, sizeof(*w));
		if (cas(w, &v, v & ~LFH_DIRTY))
			cc_flush(w, sizeof(*w));
	}
	return v & ~LFH_DIRTY;
}

/* publish -- CAS *W from OLD to NEW (dirty), make it durable, clear the mark; 0 if *W was not OLD */
static int publish(uint64_t *w, uint64_t old, uint64_t new)
{
	/* (its own CAS, not cas(): a site of its own, apart from the clean-up's below) */
	if (!__atomic_compare_exchange_n(w, &old, new | LFH_DIRTY, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return 0;
	persistent(w, sizeof(*w));
	uint64_t dirty = new | LFH_DIRTY;
	if (cas(w, &dirty, new))
		cc_flush(w, sizeof(*w));   /* the clean word reaches PM at the next fence: no line left pending */
	return 1;
}

static unsigned first_slot(uint64_t key) { return (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 59); }

/* slot_of -- KEY's slot in SEG; with CLAIM a free one is claimed for it; NULL if none */
static struct lfh_slot *slot_of(struct lfh_seg *seg, uint64_t key, int claim)
{
	for (unsigned n = 0, i = first_slot(key); n < LFH_SLOTS; n++, i = (i + 1) % LFH_SLOTS) {
		struct lfh_slot *s = &seg->slot[i];
		uint64_t k = load(&s->key);
		if (k == 0 && claim) {
			if (!cas(&s->key, &k, key) && k != key)
				continue;          /* another key took it */
			k = key;
		}
		if (k == key) {
			persistent(&s->key, sizeof(s->key));   /* a record is never published under a lost key */
			return s;
		}
		if (k == 0)
			return 0;
	}
	return 0;
}

static struct lfh_rec *new_rec(struct lfhash *h, uint64_t key, uint64_t value)
{
	uint64_t i = __atomic_fetch_add(&next_rec, 1, __ATOMIC_RELAXED);
	if (i >= LFH_RECS)
		return 0;
	struct lfh_rec *r = &h->recs[i];
	r->key = key;
	r->value = value;
	persistent(r, sizeof(*r));
	return r;
}

/* seen -- the clean value of *W as an operation answers from it (present or absent; DIR: a
 * directory entry): helped first, except where a seeded bug takes a dirty word as it is */
static uint64_t seen(uint64_t *w, int dir)
{
	uint64_t v = load(w);
	int skip = 0;
	if (v & LFH_DIRTY) {
#ifdef BUG_LFH_DIR_NO_HELP
		skip |= dir;
#endif
#ifdef BUG_LFH_GET_NO_HELP
		skip |= !dir && v != LFH_DIRTY;
#endif
#ifdef BUG_LFH_CLEAR_NO_HELP
		skip |= !dir && v == LFH_DIRTY;
#endif
	}
	(void)dir;
	return skip ? v & ~LFH_DIRTY : help(w);
}

int lfh_insert(struct lfhash *h, uint64_t key, uint64_t value)
{
	unsigned d = (unsigned)(key % LFH_SEGS);
	struct lfh_seg *seg = &h->seg[d];
	struct lfh_slot *s = 0;
	if (!help(&h->dir[d])) {
		/* the first insert into the segment: fill its slot, then publish the segment */
		s = slot_of(seg, key, 1);
		if (!s)
			return LFH_FULL;
		int done = 0;
		if (!help(&s->rec)) {
			struct lfh_rec *r = new_rec(h, key, value);
			if (!r)
				return LFH_FULL;
			done = publish(&s->rec, 0, (uint64_t)r);
		}
		publish(&h->dir[d], 0, (uint64_t)seg);
		help(&h->dir[d]);
		if (done)
			return LFH_OK;
	}
	if (!s)
		s = slot_of(seg, key, 1);
	if (!s)
		return LFH_FULL;
	for (;;) {
		if (seen(&s->rec, 0) || help(&s->rec))
			return LFH_EXISTS;
		struct lfh_rec *r = new_rec(h, key, value);
		if (!r)
			return LFH_FULL;
		if (publish(&s->rec, 0, (uint64_t)r))
			return LFH_OK;
	}
}

int lfh_update(struct lfhash *h, uint64_t key, uint64_t value)
{
	unsigned d = (unsigned)(key % LFH_SEGS);
	struct lfh_slot *s = seen(&h->dir[d], 1) ? slot_of(&h->seg[d], key, 0) : 0;
	if (!s)
		return LFH_NOTFOUND;
	for (;;) {
		uint64_t cur = seen(&s->rec, 0) ? help(&s->rec) : 0;
		if (!cur)
			return LFH_NOTFOUND;
		struct lfh_rec *r = new_rec(h, key, value);
		if (!r)
			return LFH_FULL;
		if (publish(&s->rec, cur, (uint64_t)r))
			return LFH_OK;
	}
}

int lfh_delete(struct lfhash *h, uint64_t key)
{
	unsigned d = (unsigned)(key % LFH_SEGS);
	struct lfh_slot *s = seen(&h->dir[d], 1) ? slot_of(&h->seg[d], key, 0) : 0;
	if (!s)
		return LFH_NOTFOUND;
	for (;;) {
		uint64_t cur = seen(&s->rec, 0) ? help(&s->rec) : 0;
		if (!cur)
			return LFH_NOTFOUND;
		if (publish(&s->rec, cur, 0))
			return LFH_OK;
	}
}

int lfh_get(struct lfhash *h, uint64_t key, uint64_t *value)
{
	unsigned d = (unsigned)(key % LFH_SEGS);
	if (!seen(&h->dir[d], 1))
		return LFH_NOTFOUND;
	struct lfh_slot *s = 0;
	for (unsigned n = 0, i = first_slot(key); n < LFH_SLOTS && !s; n++, i = (i + 1) % LFH_SLOTS) {
		uint64_t k = load(&h->seg[d].slot[i].key);
		if (k == key)
			s = &h->seg[d].slot[i];
		else if (k == 0)
			break;
	}
	if (!s)
		return LFH_NOTFOUND;
	uint64_t cur = seen(&s->rec, 0);
	if (!cur)
		return LFH_NOTFOUND;
	*value = ((struct lfh_rec *)cur)->value;
	return LFH_OK;
}

void lfh_recover(struct lfhash *h)
{
	uint64_t top = 0;
	for (unsigned d = 0; d < LFH_SEGS; d++) {
		if (!help(&h->dir[d])) {
			/* never published: what a first insert had filled there is undone */
			for (unsigned i = 0; i < LFH_SLOTS; i++)
				h->seg[d].slot[i] = (struct lfh_slot){ 0, 0 };
			persistent(&h->seg[d], sizeof(h->seg[d]));
			continue;
		}
		for (unsigned i = 0; i < LFH_SLOTS; i++) {
			uint64_t r = help(&h->seg[d].slot[i].rec);
			if (r) {
				uint64_t idx = (uint64_t)((struct lfh_rec *)r - h->recs) + 1;
				if (idx > top)
					top = idx;
			}
		}
	}
	next_rec = top;
}

void lfh_each(struct lfhash *h, void (*fn)(void *ctx, uint64_t key, uint64_t value), void *ctx)
{
	for (unsigned d = 0; d < LFH_SEGS; d++) {
		if (!(load(&h->dir[d]) & ~LFH_DIRTY))
			continue;
		for (unsigned i = 0; i < LFH_SLOTS; i++) {
			struct lfh_slot *s = &h->seg[d].slot[i];
			uint64_t r = load(&s->rec) & ~LFH_DIRTY;
			if (s->key && r)
				fn(ctx, s->key, ((struct lfh_rec *)r)->value);
		}
	}
}
