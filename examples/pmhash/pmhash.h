/*
 * pmhash.h -- a persistent chained hash table: the example of a user's own structure
 *
 * Not one of the built-in trees: it shows how any PM structure is put under
 * crashcheck (README, "Your own structure").  64 buckets in the pool's root
 * area's bucket array; each node {key, value, next} is allocated with
 * pm_alloc.  Insert persists the node, then links it at the head of its
 * bucket with one 8-byte store (the commit); delete unlinks with one 8-byte
 * store before freeing; update writes the value with one 8-byte store.
 *
 * Deliberate bug: build with -DPMHASH_BUG_LINK_FIRST and insert links the
 * node before persisting its contents, so a crash can publish a node whose
 * key and value never reached PM.
 */
#ifndef PMHASH_H
#define PMHASH_H

#include <stddef.h>
#include <stdint.h>
#include "cc_tree.h"

struct pmhash;

struct pmhash *pmhash_create(void);
struct pmhash *pmhash_open(void);
int pmhash_insert(struct pmhash *h, uint64_t key, uint64_t value);
int pmhash_update(struct pmhash *h, uint64_t key, uint64_t value);
int pmhash_delete(struct pmhash *h, uint64_t key);
int pmhash_lookup(struct pmhash *h, uint64_t key, uint64_t *value);
/* pmhash_items -- every pair, sorted by key; *N gets the count (caller frees) */
uint64_t (*pmhash_items(struct pmhash *h, size_t *n))[2];
size_t pmhash_check(struct pmhash *h, cc_violation_fn fn, void *ctx);
void pmhash_reachable(struct pmhash *h, cc_obj_fn fn, void *ctx);
void pmhash_close(struct pmhash *h);

#endif
