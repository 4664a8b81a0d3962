/*
 * pmhash.c -- a persistent chained hash table (see pmhash.h)
 *
 * Crash consistency without logging: every change is published by one
 * failure-atomic 8-byte store (a bucket head or a next pointer), after the
 * data it publishes is durable.  Recovery has nothing to repair; the only
 * crash effect it tolerates is a node allocated but not yet linked (a leak
 * the allocator's record makes visible).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pm_alloc.h"
#include "persist.h"
#include "pmhash.h"

#define NBUCKETS 64

struct node {
	uint64_t key;
	uint64_t value;
	struct node *next;
};

struct table {
	struct node *bucket[NBUCKETS];
};

struct pmhash {
	struct table *t;
};

/* bucket_of -- a multiplicative hash of KEY into the bucket array (internal) */
static unsigned bucket_of(uint64_t key)
{
	return (unsigned)((key * 0x9e3779b97f4a7c15ULL) >> 58);
}

/* pmhash_create -- allocate the bucket array and record it in the root */
struct pmhash *pmhash_create(void)
{
	struct table **root = pm_root();
	struct table *t = pm_alloc(sizeof(*t));
	if (t == NULL)
		return NULL;
	persistent(t, sizeof(*t));
	*root = t;
	persistent(root, sizeof(*root));
	struct pmhash *h = malloc(sizeof(*h));
	h->t = t;
	return h;
}

/* pmhash_open -- attach to the table recorded in the root */
struct pmhash *pmhash_open(void)
{
	struct table **root = pm_root();
	if (*root == NULL || !pm_contains(*root))
		return NULL;
	struct pmhash *h = malloc(sizeof(*h));
	h->t = *root;
	return h;
}

/* find -- the link that points at KEY's node, or at the end of its chain (internal) */
static struct node **find(struct pmhash *h, uint64_t key)
{
	struct node **link = &h->t->bucket[bucket_of(key)];
	while (*link && (*link)->key != key)
		link = &(*link)->next;
	return link;
}

/* pmhash_insert -- add KEY; CC_EXISTS if present */
int pmhash_insert(struct pmhash *h, uint64_t key, uint64_t value)
{
	struct node **link = find(h, key);
	if (*link)
		return CC_EXISTS;
	struct node *n = pm_alloc(sizeof(*n));
	if (n == NULL)
		return CC_NOSPACE;
	struct node **head = &h->t->bucket[bucket_of(key)];
	n->next = *head;
#ifdef PMHASH_BUG_LINK_FIRST
	/* BUG: the node is published before its key and value are durable. */
	*head = n;
	persistent(head, sizeof(*head));
	n->key = key;
	n->value = value;
	persistent(n, sizeof(*n));
#else
	n->key = key;
	n->value = value;
	persistent(n, sizeof(*n));
	*head = n;                      /* the commit: one 8-byte store */
	persistent(head, sizeof(*head));
#endif
	return CC_OK;
}

/* pmhash_update -- replace KEY's value with one atomic 8-byte store */
int pmhash_update(struct pmhash *h, uint64_t key, uint64_t value)
{
	struct node *n = *find(h, key);
	if (n == NULL)
		return CC_NOTFOUND;
	n->value = value;
	persistent(&n->value, sizeof(n->value));
	return CC_OK;
}

/* pmhash_delete -- unlink KEY's node (the commit), then free it */
int pmhash_delete(struct pmhash *h, uint64_t key)
{
	struct node **link = find(h, key);
	struct node *n = *link;
	if (n == NULL)
		return CC_NOTFOUND;
	*link = n->next;
	persistent(link, sizeof(*link));
	pm_free(n);
	return CC_OK;
}

/* pmhash_lookup -- KEY's value */
int pmhash_lookup(struct pmhash *h, uint64_t key, uint64_t *value)
{
	struct node *n = *find(h, key);
	if (n == NULL)
		return CC_NOTFOUND;
	*value = n->value;
	return CC_OK;
}

static int by_key(const void *a, const void *b)
{
	uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];
	return x < y ? -1 : x > y;
}

/* pmhash_items -- every pair, sorted by key (a hash table has no order of its own) */
uint64_t (*pmhash_items(struct pmhash *h, size_t *np))[2]
{
	size_t n = 0, cap = 64;
	uint64_t (*items)[2] = malloc(cap * sizeof(*items));
	for (unsigned b = 0; b < NBUCKETS; b++) {
		size_t steps = 0;
		for (struct node *x = h->t->bucket[b]; x && pm_contains(x) && steps < (1u << 20); x = x->next, steps++) {
			if (n == cap)
				items = realloc(items, (cap *= 2) * sizeof(*items));
			items[n][0] = x->key;
			items[n][1] = x->value;
			n++;
		}
	}
	qsort(items, n, sizeof(*items), by_key);
	*np = n;
	return items;
}

/* pmhash_check -- nodes inside the heap, in the right bucket, no cycles, no duplicate keys */
size_t pmhash_check(struct pmhash *h, cc_violation_fn fn, void *ctx)
{
	size_t bad = 0;
	for (unsigned b = 0; b < NBUCKETS; b++) {
		size_t steps = 0;
		for (struct node *x = h->t->bucket[b]; x; x = x->next) {
			if (!pm_contains(x) || pm_object_size(x) == 0) {
				CC_VIOLATIONF(fn, ctx, "bucket %u: pointer %p is not an allocated object", b, (void *)x), bad++;
				break;
			}
			if (bucket_of(x->key) != b) {
				CC_VIOLATIONF(fn, ctx, "bucket %u: key %llu belongs in bucket %u", b,
					      (unsigned long long)x->key, bucket_of(x->key)), bad++;
			}
			for (struct node *y = x->next; y && pm_contains(y); y = y->next)
				if (y->key == x->key) {
					CC_VIOLATIONF(fn, ctx, "bucket %u: key %llu appears twice", b,
						      (unsigned long long)x->key), bad++;
					break;
				}
			if (++steps > (1u << 20)) {
				CC_VIOLATIONF(fn, ctx, "bucket %u: chain does not end (cycle)", b), bad++;
				break;
			}
		}
	}
	return bad;
}

/* pmhash_reachable -- the bucket array and every linked node */
void pmhash_reachable(struct pmhash *h, cc_obj_fn fn, void *ctx)
{
	fn(ctx, h->t, sizeof(*h->t));
	for (unsigned b = 0; b < NBUCKETS; b++) {
		size_t steps = 0;
		for (struct node *x = h->t->bucket[b]; x && pm_contains(x) && steps < (1u << 20); x = x->next, steps++)
			fn(ctx, x, sizeof(*x));
	}
}

void pmhash_close(struct pmhash *h)
{
	free(h);
}
