/*
 * heart.h -- Heart, the lock-free persistent ART for eADR machines (section II of
 *            L. Nie et al., "Heart: A Scalable, High-performance ART for Persistent
 *            Memory", ICCD 2023)
 *
 * Keys are byte strings of 1..HEART_KEY_MAX (24) bytes, values 1..16 bytes.
 * Every object (internal nodes and leaves) lives in PM; the tree is built for
 * eADR (caches inside the persistence domain), so it issues no flushes: a
 * store is durable once it leaves the store buffer, and the order of its
 * stores (program order, made explicit with atomics) is what keeps it
 * consistent.  Run under x86-ADR it loses durable writes, by design.
 *
 * Concurrency: lock-free.  Insert, update and delete commit by one CAS on a
 * child context; lookups take no lock; node growth and shrinkage are
 * Perceivable Transformations (heart_internal.h).  Any number of threads may
 * call every function below except create/open/recover/check/close, which
 * need a quiescent tree.  Return values are enum cc_status.
 */
#ifndef HEART_H
#define HEART_H

#include <stddef.h>
#include <stdint.h>
#include "cc_tree.h"

#define HEART_KEY_MAX 24
#define HEART_VAL_MAX 16

struct heart;

/* heart_create -- a new empty Heart in the formatted pool (NULL on failure) */
struct heart *heart_create(void);
/* heart_open -- attach to the Heart of the formatted pool, repairing nothing (NULL if none) */
struct heart *heart_open(void);
/* heart_close -- reclaim every retired object, release the DRAM state */
void heart_close(struct heart *t);

/*
 * heart_recover -- no log: clears the versions an interrupted transformation
 * left odd (unfreezes), unlinks internal nodes left without children, then
 * frees every allocated object that the root does not reach, and resets the
 * DRAM state (epochs, allocator lock).  Idempotent.  Returns 0, or -1 if the
 * image holds no Heart (reason on stderr).
 */
int heart_recover(struct heart *t);

/* heart_insert -- CC_OK, CC_EXISTS (nothing changed), CC_NOSPACE or CC_ERROR (bad length) */
int heart_insert(struct heart *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen);
/* heart_update -- CC_OK, CC_NOTFOUND, CC_NOSPACE or CC_ERROR */
int heart_update(struct heart *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen);
/* heart_delete -- CC_OK or CC_NOTFOUND */
int heart_delete(struct heart *t, const uint8_t *key, size_t klen);
/* heart_lookup -- CC_OK (value copied to VAL, length to *VLEN) or CC_NOTFOUND */
int heart_lookup(struct heart *t, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen);
/* heart_scan -- up to COUNT pairs with key >= KEY in key order (not atomic); returns pairs passed */
size_t heart_scan(struct heart *t, const uint8_t *key, size_t klen, size_t count, cc_kv_fn fn, void *ctx);
/* heart_dump -- every pair in key order */
void heart_dump(struct heart *t, cc_kv_fn fn, void *ctx);

/* heart_check -- every broken invariant of a quiescent tree, through FN; returns how many (reads only) */
size_t heart_check(struct heart *t, cc_violation_fn fn, void *ctx);
/* heart_reachable -- every node and leaf reachable from the root */
void heart_reachable(struct heart *t, cc_obj_fn fn, void *ctx);
/* heart_allocated -- every object the pool's allocator marks in use */
void heart_allocated(struct heart *t, cc_obj_fn fn, void *ctx);

#endif /* HEART_H */
