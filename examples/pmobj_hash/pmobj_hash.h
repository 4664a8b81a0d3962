/*
 * pmobj_hash.h -- a small persistent hash map on libpmemobj (PMDK), an example of a structure
 * the Clang pass cannot see into: its transactions' undo log, allocator and flushes live in a
 * precompiled library.  The runtime traces them from a shadow of the pool (docs/pmemcheck.md
 * "libpmemobj under the pass"); `crashcheck fuzz --tracer pmemcheck` traces them under Valgrind.
 */
#ifndef PMOBJ_HASH_H
#define PMOBJ_HASH_H

#include <stddef.h>
#include <stdint.h>

#define PH_VALUE 16          /* bytes per value */

struct pmobj_hash;

struct pmobj_hash *ph_create(const char *path, size_t size);
struct pmobj_hash *ph_open(const char *path);   /* libpmemobj's transaction recovery runs here */
void ph_close(struct pmobj_hash *h);

/* 0 done, 1 key present (insert) / absent (update, delete, lookup), 3 pool full */
int ph_insert(struct pmobj_hash *h, uint64_t key, const uint8_t *val);
int ph_update(struct pmobj_hash *h, uint64_t key, const uint8_t *val);
int ph_delete(struct pmobj_hash *h, uint64_t key);
int ph_lookup(struct pmobj_hash *h, uint64_t key, uint8_t *val);

/* every pair, in no particular order; FN returns non-zero to stop */
void ph_each(struct pmobj_hash *h, int (*fn)(void *ctx, uint64_t key, const uint8_t *val), void *ctx);
/* the invariants: FN once per broken rule; returns how many */
size_t ph_check(struct pmobj_hash *h, void (*fn)(void *ctx, const char *text), void *ctx);

#endif
