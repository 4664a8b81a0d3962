/*
 * pm_alloc.h -- the pool layout and the persistent allocator of the built-in trees
 *
 * A pool is [pool header | root area | allocator metadata | heap].  The
 * allocation state lives in the pool and is persisted by every pm_alloc and
 * pm_free, so the crash simulator sees it: an object allocated but not yet
 * linked when power fails is still marked allocated in the image, which is
 * how leaks become observable.  Every allocation is announced to crashcheck
 * with its caller's source site (crashcheck_alloc_at), so a leak report names
 * the line that allocated the object.
 *
 * Nothing here is special to the built-in trees: a user's structure may use
 * it, or bring its own allocator and implement cc_adapter.allocated.
 */
#ifndef CC_PM_ALLOC_H
#define CC_PM_ALLOC_H

#include <stddef.h>
#include <stdint.h>
#include "crashcheck.h"
#include "cc_tree.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PM_ROOT_SIZE 64  /* bytes of root area at a fixed place in the pool */

/*
 * pm_pool_format -- lay out a fresh zero-filled pool of SIZE bytes at POOL
 * and persist its header and allocator metadata.  Returns 0, or -1 if SIZE
 * is too small (reason on stderr).
 */
int pm_pool_format(void *pool, size_t size);

/*
 * pm_pool_attach -- adopt an existing pool image at POOL (checks the header).
 * Returns 0, or -1 if the image holds no formatted pool.
 */
int pm_pool_attach(void *pool, size_t size);

/* pm_root -- the PM_ROOT_SIZE-byte root area, zero after format. */
void *pm_root(void);

/*
 * pm_alloc_at -- allocate N zeroed bytes (aligned to 8; to 64 for N >= 64)
 * and persist the allocation record.  The zeroes are durable before it
 * returns (flushed and fenced, as PMDK's pmemobj_zalloc): the caller
 * persists only what it writes into the object.  SITE names the
 * caller (use the pm_alloc macro).  NULL when the pool is exhausted.
 */
void *pm_alloc_at(size_t n, crashcheck_site_t site);
#define pm_alloc(n) pm_alloc_at((n), crashcheck_here())

/* pm_free -- release an object returned by pm_alloc and persist the record. */
void pm_free(void *p);

/* pm_allocated -- every object the image's metadata marks in use. */
void pm_allocated(cc_obj_fn fn, void *ctx);

/* pm_object_size -- size of the allocated object starting at P, 0 if none. */
size_t pm_object_size(const void *p);

/* pm_contains -- non-zero if P lies inside the pool's heap. */
int pm_contains(const void *p);

#ifdef __cplusplus
}
#endif

#endif /* CC_PM_ALLOC_H */
