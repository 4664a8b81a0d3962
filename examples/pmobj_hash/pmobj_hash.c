/*
 * pmobj_hash.c -- a persistent hash map on libpmemobj: a root object holding NBUCKETS chain heads;
 * insert and delete run in transactions (libpmemobj's undo log makes the allocation, the entry's
 * contents and the new chain head one atomic change); update has a non-transactional fast path
 * for a value whose change fits in one 8-byte word, which an aligned 8-byte store makes
 * failure-atomic by itself, and a transaction otherwise.
 *
 * Seeded bug (bugs.json): PMOBJ_BUG_FAST_TWO_WORDS takes the fast path for any update, so a
 * value whose two halves both change is written with two stores outside any transaction and a
 * crash between them leaves half of each value.  PMOBJ_BUG_INSERT_NO_ADD changes the chain head
 * inside insert's transaction without adding it to the transaction: libpmemobj neither logs nor
 * flushes it, so a crash after the insert returned may lose the new entry.
 */
#include <libpmemobj.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc_tree.h"
#include "pmobj_hash.h"

#define LAYOUT "crashcheck-pmobj-hash"
#define NBUCKETS 64
#define MAX_CHAIN 100000       /* longer than any pool can hold: a cycle */

struct entry {
	uint64_t key;
	uint64_t val[PH_VALUE / 8];
	PMEMoid next;
};

struct root {
	PMEMoid bucket[NBUCKETS];
};

struct pmobj_hash {           /* DRAM handle */
	PMEMobjpool *pop;
	struct root *root;
};

static unsigned bucket_of(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (unsigned)(key % NBUCKETS);
}

static struct entry *E(PMEMoid oid) { return pmemobj_direct(oid); }

static struct pmobj_hash *handle(PMEMobjpool *pop)
{
	struct pmobj_hash *h = malloc(sizeof(*h));
	if (!h) {
		pmemobj_close(pop);
		return NULL;
	}
	h->pop = pop;
	h->root = pmemobj_direct(pmemobj_root(pop, sizeof(struct root)));
	if (!h->root) {
		fprintf(stderr, "pmobj_hash: no root object: %s\n", pmemobj_errormsg());
		pmemobj_close(pop);
		free(h);
		return NULL;
	}
	return h;
}

struct pmobj_hash *ph_create(const char *path, size_t size)
{
	PMEMobjpool *pop = pmemobj_create(path, LAYOUT, size, 0600);
	if (!pop) {
		fprintf(stderr, "pmobj_hash: pmemobj_create %s: %s\n", path, pmemobj_errormsg());
		return NULL;
	}
	return handle(pop);
}

struct pmobj_hash *ph_open(const char *path)
{
	PMEMobjpool *pop = pmemobj_open(path, LAYOUT);
	if (!pop) {
		fprintf(stderr, "pmobj_hash: pmemobj_open %s: %s\n", path, pmemobj_errormsg());
		return NULL;
	}
	return handle(pop);
}

void ph_close(struct pmobj_hash *h)
{
	pmemobj_close(h->pop);
	free(h);
}

/* find -- the link (a chain head or an entry's next) that points at KEY's entry, or NULL */
static PMEMoid *find(struct pmobj_hash *h, uint64_t key)
{
	PMEMoid *link = &h->root->bucket[bucket_of(key)];
	for (int n = 0; !OID_IS_NULL(*link) && n < MAX_CHAIN; n++) {
		if (E(*link)->key == key)
			return link;
		link = &E(*link)->next;
	}
	return NULL;
}

int ph_insert(struct pmobj_hash *h, uint64_t key, const uint8_t *val)
{
	if (find(h, key))
		return 1;
	PMEMoid *head = &h->root->bucket[bucket_of(key)];
	int full = 0;
	TX_BEGIN(h->pop) {
		PMEMoid oid = pmemobj_tx_alloc(sizeof(struct entry), 1);
		struct entry *e = E(oid);
		e->key = key;
		memcpy(e->val, val, PH_VALUE);
		e->next = *head;
#ifndef PMOBJ_BUG_INSERT_NO_ADD
		pmemobj_tx_add_range_direct(head, sizeof(*head));
#endif
		*head = oid;
	} TX_ONABORT {
		full = 1;
	} TX_END
	return full ? 3 : 0;
}

int ph_update(struct pmobj_hash *h, uint64_t key, const uint8_t *val)
{
	PMEMoid *link = find(h, key);
	if (!link)
		return 1;
	struct entry *e = E(*link);
	uint64_t v[PH_VALUE / 8];
	memcpy(v, val, PH_VALUE);
	int changed = 0;
	for (int i = 0; i < PH_VALUE / 8; i++)
		changed += e->val[i] != v[i];
#ifndef PMOBJ_BUG_FAST_TWO_WORDS
	if (changed <= 1) {
#else
	if (1) {      /* PMOBJ_BUG_FAST_TWO_WORDS: the fast path for any change */
#endif
		/* fast path: each changed word by one aligned 8-byte store, persisted */
		for (int i = 0; i < PH_VALUE / 8; i++)
			if (e->val[i] != v[i]) {
				e->val[i] = v[i];
				pmemobj_persist(h->pop, &e->val[i], 8);
			}
		return 0;
	}
	int failed = 0;
	TX_BEGIN(h->pop) {
		pmemobj_tx_add_range_direct(e->val, PH_VALUE);
		memcpy(e->val, v, PH_VALUE);
	} TX_ONABORT {
		failed = 1;
	} TX_END
	return failed ? 3 : 0;
}

int ph_delete(struct pmobj_hash *h, uint64_t key)
{
	PMEMoid *link = find(h, key);
	if (!link)
		return 1;
	int failed = 0;
	TX_BEGIN(h->pop) {
		PMEMoid victim = *link;
		pmemobj_tx_add_range_direct(link, sizeof(*link));
		*link = E(victim)->next;
		pmemobj_tx_free(victim);
	} TX_ONABORT {
		failed = 1;
	} TX_END
	return failed ? 3 : 0;
}

int ph_lookup(struct pmobj_hash *h, uint64_t key, uint8_t *val)
{
	PMEMoid *link = find(h, key);
	if (!link)
		return 1;
	memcpy(val, E(*link)->val, PH_VALUE);
	return 0;
}

void ph_each(struct pmobj_hash *h, int (*fn)(void *ctx, uint64_t key, const uint8_t *val), void *ctx)
{
	for (int b = 0; b < NBUCKETS; b++) {
		PMEMoid oid = h->root->bucket[b];
		for (int n = 0; !OID_IS_NULL(oid) && n < MAX_CHAIN; n++) {
			if (fn(ctx, E(oid)->key, (const uint8_t *)E(oid)->val))
				return;
			oid = E(oid)->next;
		}
	}
}

size_t ph_check(struct pmobj_hash *h, void (*fn)(void *ctx, const char *text), void *ctx)
{
	size_t broken = 0;
	for (int b = 0; b < NBUCKETS; b++) {
		PMEMoid oid = h->root->bucket[b];
		int n = 0;
		for (; !OID_IS_NULL(oid) && n < MAX_CHAIN; n++) {
			if (pmemobj_pool_by_oid(oid) != h->pop) {
				CC_VIOLATIONF(fn, ctx, "bucket %d: entry %d points outside the pool", b, n);
				broken++;
				break;
			}
			if (bucket_of(E(oid)->key) != (unsigned)b) {
				CC_VIOLATIONF(fn, ctx, "bucket %d holds key %llu of bucket %u", b,
					      (unsigned long long)E(oid)->key, bucket_of(E(oid)->key));
				broken++;
			}
			oid = E(oid)->next;
		}
		if (n == MAX_CHAIN) {
			CC_VIOLATIONF(fn, ctx, "bucket %d: its chain does not end (a cycle)", b);
			broken++;
		}
	}
	return broken;
}
