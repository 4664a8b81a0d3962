/*
 * hart.h -- HART, the hash-assisted adaptive radix tree for PM (section III of
 *           W. Pan, T. Xie, X. Song, "HART: A Concurrent Hash-Assisted Radix Tree
 *           for DRAM-PM Hybrid Memory Systems", IPDPS 2019)
 *
 * Keys are byte strings of 1..HART_KEY_MAX (24) bytes, values 1..16 bytes.
 * The first HART_KH bytes of a key (the hash key, compile-time: -DHART_KH=N)
 * select one ART through a DRAM hash table; the rest is the ART key.  Hash
 * table and inner ART nodes live in DRAM; leaves and values live in PM, in
 * chunks of 56 managed by the EPallocator (hart_internal.h), and recovery
 * rebuilds the DRAM side from the leaf chunks (Algorithm 7).
 *
 * Keys shorter than HART_KH: the hash key is the key padded with zero bytes
 * to HART_KH bytes PLUS its true length (0..HART_KH), so "a" and "a\0" fall
 * into different ARTs and a short key's ART key is empty.
 *
 * Concurrency: one pthread rwlock per ART (readers share, writers to
 * different ARTs run in parallel); the EPallocator (chunk headers, chains,
 * recycle log, pm_alloc/pm_free) sits behind one mutex; each writer takes its
 * own update-log slot.  Return values are enum cc_status.
 */
#ifndef HART_H
#define HART_H

#include <stddef.h>
#include <stdint.h>
#include "cc_tree.h"

#define HART_KEY_MAX 24
#define HART_VAL_MAX 16

struct hart;

/* hart_create -- a new empty HART in the formatted pool (NULL on failure) */
struct hart *hart_create(void);
/* hart_open -- attach to the HART of the formatted pool, repairing nothing (NULL if none) */
struct hart *hart_open(void);
/* hart_close -- release every DRAM structure (the pool stays as it is) */
void hart_close(struct hart *t);

/*
 * hart_recover -- Algorithm 7 plus the log recovery of Algorithms 3 and 6:
 * finishes or rolls back the recycle and update in flight, reclaims a chunk
 * whose allocation was in flight, repairs free leaves (Algorithm 2 lines
 * 12-16) and rebuilds the hash table and ARTs from the set leaf bits.
 * Idempotent: a crash inside it and a second run give the same result.
 * Returns 0, or -1 if the image is beyond repair (reason on stderr).
 */
int hart_recover(struct hart *t);

/* hart_insert -- CC_OK, CC_EXISTS (nothing changed), CC_NOSPACE or CC_ERROR (bad length) */
int hart_insert(struct hart *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen);
/* hart_update -- CC_OK, CC_NOTFOUND, CC_NOSPACE or CC_ERROR */
int hart_update(struct hart *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen);
/* hart_delete -- CC_OK or CC_NOTFOUND */
int hart_delete(struct hart *t, const uint8_t *key, size_t klen);
/* hart_lookup -- CC_OK (value copied to VAL, length to *VLEN) or CC_NOTFOUND */
int hart_lookup(struct hart *t, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen);
/* hart_scan -- up to COUNT pairs with key >= KEY in key order; returns pairs passed to FN */
size_t hart_scan(struct hart *t, const uint8_t *key, size_t klen, size_t count, cc_kv_fn fn, void *ctx);
/* hart_dump -- every pair in key order */
void hart_dump(struct hart *t, cc_kv_fn fn, void *ctx);

/* hart_check -- report broken invariants (see hart_check.c); returns how many */
size_t hart_check(struct hart *t, cc_violation_fn fn, void *ctx);
/* hart_reachable -- the meta object, every chained chunk, every valid leaf and its value slot */
void hart_reachable(struct hart *t, cc_obj_fn fn, void *ctx);
/* hart_allocated -- every pm_alloc object plus every chunk slot whose bit is set */
void hart_allocated(struct hart *t, cc_obj_fn fn, void *ctx);

#endif /* HART_H */
