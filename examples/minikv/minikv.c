/*
 * minikv.c -- a persistent sorted singly linked list (see minikv.h)
 *
 * Ordering rule: a node is filled and made durable before the single 8-byte
 * store that links it; an update is one 8-byte store of the value; a delete
 * unlinks with one 8-byte store, makes it durable, then frees the node.  So
 * recovery has nothing to repair.  What a crash can leave behind is a node
 * allocated and not linked yet (insert), or unlinked and not freed yet
 * (delete): garbage the list never reaches again.
 */
#include <immintrin.h>   /* _mm_clwb, _mm_sfence; pulls in mm_malloc.h, which declares posix_memalign */
#include <stdlib.h>

#include "minikv.h"

#define CACHELINE 64
/* MINIKV_FLUSH -- write back every cache line of [p, p + n) */
#define MINIKV_FLUSH(p, n)                                                      \
	do {                                                                    \
		for (uintptr_t l_ = (uintptr_t)(p) & ~(uintptr_t)(CACHELINE - 1); \
		     l_ < (uintptr_t)(p) + (n); l_ += CACHELINE)                  \
			_mm_clwb((void *)l_);                                   \
	} while (0)
/* MINIKV_PERSIST -- flush, then fence: durable once it returns */
#define MINIKV_PERSIST(p, n)                                                    \
	do {                                                                    \
		MINIKV_FLUSH(p, n);                                             \
		_mm_sfence();                                                   \
	} while (0)

/* find -- the link pointing at the first node with a key >= KEY */
static struct minikv_node **find(struct minikv_node **root, uint64_t key)
{
	struct minikv_node **link = root;
	while (*link && (*link)->key < key)
		link = &(*link)->next;
	return link;
}

int minikv_insert(struct minikv_node **root, uint64_t key, uint64_t value)
{
	struct minikv_node **link = find(root, key);
	if (*link && (*link)->key == key)
		return MINIKV_EXISTS;
	void *mem;
	if (posix_memalign(&mem, CACHELINE, sizeof(struct minikv_node)))
		return MINIKV_NOMEM;
	struct minikv_node *n = mem;
	n->key = key;
	n->value = value;
	n->next = *link;
	MINIKV_PERSIST(n, sizeof(*n));
	*link = n;
	MINIKV_PERSIST(link, sizeof(*link));
	return MINIKV_OK;
}

int minikv_update(struct minikv_node **root, uint64_t key, uint64_t value)
{
	struct minikv_node *n = *find(root, key);
	if (!n || n->key != key)
		return MINIKV_NOTFOUND;
	n->value = value;
#ifndef MINIKV_BUG_UPDATE_NO_FLUSH
	MINIKV_PERSIST(&n->value, sizeof(n->value));
#endif
	return MINIKV_OK;
}

int minikv_delete(struct minikv_node **root, uint64_t key)
{
	struct minikv_node **link = find(root, key);
	struct minikv_node *n = *link;
	if (!n || n->key != key)
		return MINIKV_NOTFOUND;
	*link = n->next;
	MINIKV_PERSIST(link, sizeof(*link));
#ifndef MINIKV_BUG_DELETE_NO_FREE
	free(n);
#endif
	return MINIKV_OK;
}

int minikv_get(struct minikv_node *const *root, uint64_t key, uint64_t *value)
{
	struct minikv_node *n = *find((struct minikv_node **)root, key);
	if (!n || n->key != key)
		return MINIKV_NOTFOUND;
	*value = n->value;
	return MINIKV_OK;
}
