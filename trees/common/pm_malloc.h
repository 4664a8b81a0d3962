/*
 * pm_malloc.h -- point existing malloc/free code at the pool without editing it
 *
 * `crashcheck build --pm-malloc` force-includes this header (clang -include)
 * into the structure's own sources (not the adapter, not trees/common), so
 * every call of malloc, calloc, realloc, free, posix_memalign,
 * aligned_alloc, _mm_malloc and _mm_free there goes to the pool allocator
 * (pm_alloc.h).  Each allocation records the site of the call in the
 * structure's source (crashcheck_here() is expanded at the call), so a leak
 * names the line that called malloc, and the objects are in the pool's
 * allocation record, so pm_allocated (the adapter's `allocated`) sees them
 * for leak checks.
 *
 * The calls are macros: a call spelled `malloc(...)` is redirected; taking
 * malloc's address (`f = malloc`) is not.  <stdlib.h> and <mm_malloc.h> are
 * included first, before the macros exist, because mm_malloc.h declares
 * posix_memalign itself (a macro of that name would break the declaration);
 * their include guards keep later includes from seeing the macros.
 * Pool objects come back zeroed; memory freed that is not a pool object
 * (allocated before the pool existed) goes to the C library's free.  In
 * C++, std::malloc and friends are redirected too.  C++ new, memalign, valloc
 * and pvalloc (and the calls of header-only code compiled in the adapter) are
 * redirected by the pass instead (CRASHCHECK_PASS_PM_MALLOC, docs/trees.md).
 */
#ifndef CC_PM_MALLOC_H
#define CC_PM_MALLOC_H

#include <stddef.h>
#include <stdlib.h>
#if __has_include(<mm_malloc.h>)
#include <mm_malloc.h>
#endif
#ifdef __cplusplus
#include <cstdlib>
#include <new>
#endif
#include "crashcheck.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cc_pm_malloc_at -- N bytes from the pool, recorded with SITE; the C library's before a pool exists */
void *cc_pm_malloc_at(size_t n, crashcheck_site_t site);
/* cc_pm_calloc_at -- K * N zeroed bytes (NULL on overflow) */
void *cc_pm_calloc_at(size_t k, size_t n, crashcheck_site_t site);
/* cc_pm_realloc_at -- a new object of N bytes holding P's bytes; P freed */
void *cc_pm_realloc_at(void *p, size_t n, crashcheck_site_t site);
/* cc_pm_aligned_at -- N bytes aligned to ALIGN (a power of two up to 64 KiB), else NULL */
void *cc_pm_aligned_at(size_t align, size_t n, crashcheck_site_t site);
/* cc_pm_posix_memalign_at -- posix_memalign: 0, EINVAL or ENOMEM */
int cc_pm_posix_memalign_at(void **out, size_t align, size_t n, crashcheck_site_t site);
/* cc_pm_free -- pm_free for a pool object, the C library's free for anything else */
void cc_pm_free(void *p);
/* cc_pm_realloc_kept -- the adapter's realloc (pm_free.h): P stays in the pool or in the C library's heap */
void *cc_pm_realloc_kept(void *p, size_t n, crashcheck_site_t site);

#ifdef __cplusplus
}
namespace std {
using ::cc_pm_malloc_at;
using ::cc_pm_calloc_at;
using ::cc_pm_realloc_at;
using ::cc_pm_aligned_at;
using ::cc_pm_posix_memalign_at;
using ::cc_pm_free;
}
#endif

#define malloc(n) cc_pm_malloc_at((n), crashcheck_here())
#define calloc(k, n) cc_pm_calloc_at((k), (n), crashcheck_here())
#define realloc(p, n) cc_pm_realloc_at((p), (n), crashcheck_here())
#define free(p) cc_pm_free(p)
#define posix_memalign(out, align, n) cc_pm_posix_memalign_at((out), (align), (n), crashcheck_here())
#define aligned_alloc(align, n) cc_pm_aligned_at((align), (n), crashcheck_here())
#define _mm_malloc(n, align) cc_pm_aligned_at((align), (n), crashcheck_here())
#define _mm_free(p) cc_pm_free(p)

#endif /* CC_PM_MALLOC_H */
