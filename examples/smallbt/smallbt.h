/*
 * smallbt.h -- a small persistent B+tree written for crashcheck's own tests of
 * capacities crossed without being declared (issue 33, pattern 4): 8-byte keys
 * and values, a root that is one leaf of up to 60 sorted pairs until it fills,
 * then an inner node over leaves
 *
 * Every change is copy on write: an insert or delete writes a new leaf (and, for a
 * split or an emptied leaf, a new inner node), persists it, and commits it by one
 * 8-byte store of the pointer that leads to it (the root's, or an inner node's
 * child slot); the old node is freed after.  A leaf that fills splits in two; a
 * root leaf that fills makes the tree two levels deep (the root split); an inner
 * node left with one child gives the root back to that leaf.  The root split runs
 * first on the 61st key, past the 48 keys a plain fuzz history loads, so only
 * histories shaped to cross that capacity reach it (expect.json declares none on
 * purpose).  The seeded bug (bugs.json) breaks the root split's order.
 */
#ifndef SMALLBT_H
#define SMALLBT_H

#include <stddef.h>
#include <stdint.h>
#include "cc_tree.h"

struct smallbt;

struct smallbt *smallbt_create(void);
struct smallbt *smallbt_open(void);
int smallbt_insert(struct smallbt *t, uint64_t key, uint64_t val);
int smallbt_update(struct smallbt *t, uint64_t key, uint64_t val);
int smallbt_delete(struct smallbt *t, uint64_t key);
int smallbt_recover(struct smallbt *t);
int smallbt_lookup(struct smallbt *t, uint64_t key, uint64_t *val);
void smallbt_dump(struct smallbt *t, cc_kv_fn fn, void *ctx);
size_t smallbt_check(struct smallbt *t, cc_violation_fn fn, void *ctx);
void smallbt_reachable(struct smallbt *t, cc_obj_fn fn, void *ctx);

#endif /* SMALLBT_H */
