/*
 * leafdir.h -- a small persistent map written for crashcheck's own tests of the
 * oracle after recovery (issue 33): 8-byte keys and values in a list of 4-slot
 * leaves, found through a persistent directory
 *
 * A leaf holds keys of one block of 4096 (as a radix tree's last level does);
 * readers find it through the directory, from which they walk the list
 * forward, writers by walking the list from its head.  A leaf's slots are live by a bitmap (the commit word of a slot) and filled in
 * order up to `nused`, a count recovery repairs; an update writes a new slot
 * and moves the bitmap in two stores, so a key may briefly have two live
 * copies, which lookups and the dump tolerate (the first copy in slot order
 * counts) and delete cleans.  A full leaf is replaced (copy on write) by one
 * or two new leaves holding its pairs and the new one, committed by the one
 * store that links them into the list; the directory (two copies and a
 * selector) is rebuilt from the list by recovery.  Seeded bugs (bugs.json)
 * break exactly one of those rules each.
 */
#ifndef LEAFDIR_H
#define LEAFDIR_H

#include <stddef.h>
#include <stdint.h>
#include "cc_tree.h"

struct leafdir;

struct leafdir *leafdir_create(void);
struct leafdir *leafdir_open(void);
int leafdir_recover(struct leafdir *t);
int leafdir_insert(struct leafdir *t, uint64_t key, uint64_t val);
int leafdir_update(struct leafdir *t, uint64_t key, uint64_t val);
int leafdir_delete(struct leafdir *t, uint64_t key);
int leafdir_lookup(struct leafdir *t, uint64_t key, uint64_t *val);
void leafdir_dump(struct leafdir *t, cc_kv_fn fn, void *ctx);
size_t leafdir_check(struct leafdir *t, cc_violation_fn fn, void *ctx);
void leafdir_reachable(struct leafdir *t, cc_obj_fn fn, void *ctx);

#endif /* LEAFDIR_H */
