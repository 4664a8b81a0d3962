/*
 * pm_free.h -- the adapter's free and realloc under `crashcheck build --pm-malloc`
 *
 * pm_malloc.h sends the structure's own allocations to the pool; the
 * adapter's stay the C library's.  But an adapter often releases what the
 * structure handed out (a scan's result array, a value copy the caller
 * owns), and the C library's free of a pool object aborts the driver
 * ("free(): invalid pointer").  So the adapter gets this header instead of
 * pm_malloc.h: its free and realloc look at the address, and a pool object
 * goes back to the pool while anything else goes to the C library.  Its
 * malloc and calloc are left alone (the adapter's own buffers stay DRAM).
 * C++ delete needs nothing here: pm_malloc.c replaces operator delete for
 * the whole program.
 */
#ifndef CC_PM_FREE_H
#define CC_PM_FREE_H

#include <stddef.h>
#include <stdlib.h>
#if __has_include(<mm_malloc.h>)
#include <mm_malloc.h>
#endif
#ifdef __cplusplus
#include <cstdlib>
#endif
#include "crashcheck.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cc_pm_free -- pm_free for a pool object, the C library's free for anything else */
void cc_pm_free(void *p);
/* cc_pm_realloc_kept -- realloc that keeps P where it is: the pool's for a pool object, else the C library's */
void *cc_pm_realloc_kept(void *p, size_t n, crashcheck_site_t site);

#ifdef __cplusplus
}
namespace std {
using ::cc_pm_free;
using ::cc_pm_realloc_kept;
}
#endif

#define free(p) cc_pm_free(p)
#define realloc(p, n) cc_pm_realloc_kept((p), (n), crashcheck_here())
#define _mm_free(p) cc_pm_free(p)

#endif /* CC_PM_FREE_H */
