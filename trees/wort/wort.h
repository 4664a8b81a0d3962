/*
 * wort.h -- WORT, the write-optimal radix tree for PM (sections 3.2-3.4 of
 *           S. Lee, "Write-Optimal Radix Tree: A Deterministic Indexing Structure
 *           for Persistent Memory Storage Systems", master's thesis, UNIST, 2018)
 *
 * 8-byte keys (big-endian u64), 4-bit partial keys, 16 children per node,
 * path compression with an 8-byte header {depth, prefix length, prefix}
 * written by one atomic store.  Values are 8 bytes kept in their own PM
 * value objects; an update writes a new one and swings the leaf's pointer.
 * Every operation is failure-atomic without logging: it prepares new objects,
 * persists them, and publishes them with one 8-byte pointer store.
 *
 * The tree lives in a pool laid out by pm_alloc.h; its root pointer is the
 * first word of the pool's root area.  Return values are enum cc_status.
 */
#ifndef WORT_H
#define WORT_H

#include <stddef.h>
#include <stdint.h>
#include "cc_tree.h"

struct wort;

/* wort_create -- a new empty tree in the formatted pool (NULL if out of DRAM) */
struct wort *wort_create(void);
/* wort_open -- attach to the tree of the formatted pool, repairing nothing */
struct wort *wort_open(void);
/* wort_close -- release the DRAM handle */
void wort_close(struct wort *t);

/*
 * wort_recover -- crash recovery: walks the tree and repairs every node
 * header whose depth disagrees with the node's place (Algorithm 2; the
 * paper repairs lazily, we repair eagerly here and lazily in traversals).
 * Returns 0, or -1 if the root pointer does not point into the heap.
 */
int wort_recover(struct wort *t);

/* wort_insert -- CC_OK, CC_EXISTS (nothing changed) or CC_NOSPACE */
int wort_insert(struct wort *t, const uint8_t key[8], const uint8_t val[8]);
/* wort_update -- CC_OK, CC_NOTFOUND or CC_NOSPACE */
int wort_update(struct wort *t, const uint8_t key[8], const uint8_t val[8]);
/* wort_delete -- CC_OK or CC_NOTFOUND */
int wort_delete(struct wort *t, const uint8_t key[8]);
/* wort_lookup -- CC_OK (value copied to VAL) or CC_NOTFOUND */
int wort_lookup(struct wort *t, const uint8_t key[8], uint8_t val[8]);
/* wort_scan -- up to COUNT pairs with key >= KEY in order; returns how many */
size_t wort_scan(struct wort *t, const uint8_t key[8], size_t count, cc_kv_fn fn, void *ctx);

/* wort_dump -- every pair in key order; reads only (no repair) */
void wort_dump(struct wort *t, cc_kv_fn fn, void *ctx);
/* wort_check -- report every broken invariant; returns how many; reads only */
size_t wort_check(struct wort *t, cc_violation_fn fn, void *ctx);
/* wort_reachable -- every node, leaf and value object reachable from the root */
void wort_reachable(struct wort *t, cc_obj_fn fn, void *ctx);

#endif /* WORT_H */
