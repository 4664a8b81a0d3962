/*
 * minikv.h -- a small persistent ordered key-value list (examples/minikv)
 *
 * Written the way PM code is often found: nodes come from posix_memalign,
 * freed with free, and persistence is the file's own pair of macros around
 * clwb and sfence.  The whole structure hangs off one 8-byte root slot the
 * caller keeps in persistent memory.  docs/walkthrough.md brings it under
 * crashcheck without editing it.
 */
#ifndef MINIKV_H
#define MINIKV_H

#include <stdint.h>

enum { MINIKV_OK = 0, MINIKV_EXISTS = 1, MINIKV_NOTFOUND = 2, MINIKV_NOMEM = 3 };

struct minikv_node {
	uint64_t key;
	uint64_t value;
	struct minikv_node *next;
};

/* minikv_insert -- add KEY -> VALUE below *ROOT (the list's persistent head slot) */
int minikv_insert(struct minikv_node **root, uint64_t key, uint64_t value);
/* minikv_update -- replace KEY's value */
int minikv_update(struct minikv_node **root, uint64_t key, uint64_t value);
/* minikv_delete -- remove KEY */
int minikv_delete(struct minikv_node **root, uint64_t key);
/* minikv_get -- KEY's value into *VALUE */
int minikv_get(struct minikv_node *const *root, uint64_t key, uint64_t *value);

#endif /* MINIKV_H */
