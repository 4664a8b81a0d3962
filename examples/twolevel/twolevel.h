/*
 * twolevel.h -- a small persistent two-level hash table written for crashcheck's
 * own tests of capacity points only a combination reaches (issue 50): 8-byte
 * keys and values, 32 buckets on each level, 8 slots in a top bucket and 16 in
 * the bottom bucket under it
 *
 * A key goes to its top bucket while that has a free slot, else to the bottom
 * bucket under it.  A delete that frees a top slot while the bottom bucket under
 * it holds keys moves one of them up (a promotion: the hot level is refilled
 * from the cold one).  So entries move between the levels only when a top bucket
 * has been full (nine keys of one bucket) and is not any more: sequential inserts
 * never move anything, and plain fuzz histories (at most 48 keys over 32
 * buckets) almost never fill a bucket.  Every slot is committed by one 8-byte
 * store of its `used` word after its key and value are durable.  The seeded bug
 * (bugs.json) breaks the promotion's order.
 */
#ifndef TWOLEVEL_H
#define TWOLEVEL_H

#include <stddef.h>
#include <stdint.h>
#include "cc_tree.h"

struct twolevel;

struct twolevel *twolevel_create(void);
struct twolevel *twolevel_open(void);
int twolevel_insert(struct twolevel *t, uint64_t key, uint64_t val);
int twolevel_update(struct twolevel *t, uint64_t key, uint64_t val);
int twolevel_delete(struct twolevel *t, uint64_t key);
int twolevel_recover(struct twolevel *t);
int twolevel_lookup(struct twolevel *t, uint64_t key, uint64_t *val);
void twolevel_dump(struct twolevel *t, cc_kv_fn fn, void *ctx);
size_t twolevel_check(struct twolevel *t, cc_violation_fn fn, void *ctx);
void twolevel_reachable(struct twolevel *t, cc_obj_fn fn, void *ctx);

#endif /* TWOLEVEL_H */
