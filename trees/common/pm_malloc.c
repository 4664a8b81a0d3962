/*
 * pm_malloc.c -- the pool behind malloc and friends (see pm_malloc.h)
 *
 * Compiled into every driver; used only by sources built with
 * `crashcheck build --pm-malloc`, which force-includes pm_malloc.h.  This
 * file itself never sees those macros, so malloc and free here are the C
 * library's.
 */
#include "crashcheck_own.h" /* first: this file is crashcheck's own code (rt_fault.c) */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pm_alloc.h"
#include "pm_malloc.h"

/* pm_malloc.h's macros must not rename this file's own calls */
#undef malloc
#undef calloc
#undef realloc
#undef free
#undef posix_memalign
#undef aligned_alloc

/* no pool yet (a static constructor): plain memory, never a leak candidate */
#define NO_POOL() (pm_root() == NULL)

/* CHUNK_ALIGN -- pm_alloc's large objects start on a 64 KiB chunk (pm_alloc.c) */
#define CHUNK_ALIGN ((size_t)64 << 10)
#define MAX_SMALL 4096

/* cc_pm_malloc_at -- N bytes from the pool */
void *cc_pm_malloc_at(size_t n, crashcheck_site_t site)
{
	if (NO_POOL())
		return malloc(n);
	return pm_alloc_at(n ? n : 1, site);
}

/* cc_pm_calloc_at -- K * N zeroed bytes (pool objects come back zeroed) */
void *cc_pm_calloc_at(size_t k, size_t n, crashcheck_site_t site)
{
	if (n && k > SIZE_MAX / n)
		return NULL;
	if (NO_POOL())
		return calloc(k, n);
	return pm_alloc_at(k * n ? k * n : 1, site);
}

/* cc_pm_realloc_at -- a new object holding the old one's bytes, the old one freed */
void *cc_pm_realloc_at(void *p, size_t n, crashcheck_site_t site)
{
	if (p && !pm_contains(p))
		return realloc(p, n);
	if (!p)
		return cc_pm_malloc_at(n, site);
	if (!n) {
		pm_free(p);
		return NULL;
	}
	void *q = pm_alloc_at(n, site);
	if (!q)
		return NULL;
	size_t old = pm_object_size(p);
	memcpy(q, p, old < n ? old : n);
	pm_free(p);
	return q;
}

/* cc_pm_aligned_at -- N bytes aligned to ALIGN: slots of 64 bytes and more are 64-aligned,
 * objects above MAX_SMALL start a chunk */
void *cc_pm_aligned_at(size_t align, size_t n, crashcheck_site_t site)
{
	if (!align || (align & (align - 1)) || align > CHUNK_ALIGN)
		return NULL;
	if (NO_POOL()) {
		void *q = NULL;
		return posix_memalign(&q, align < sizeof(void *) ? sizeof(void *) : align, n) ? NULL : q;
	}
	if (align <= 8)
		return pm_alloc_at(n ? n : 1, site);
	if (align <= 64)
		return pm_alloc_at(n < 64 ? 64 : n, site);
	return pm_alloc_at(n <= MAX_SMALL ? MAX_SMALL + 1 : n, site);
}

/* cc_pm_posix_memalign_at -- posix_memalign over the pool */
int cc_pm_posix_memalign_at(void **out, size_t align, size_t n, crashcheck_site_t site)
{
	if (!align || (align & (align - 1)) || align % sizeof(void *) || align > CHUNK_ALIGN)
		return EINVAL;
	void *p = cc_pm_aligned_at(align, n, site);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

/* cc_pm_free -- release a pool object (persisting the record) or C-library memory */
void cc_pm_free(void *p)
{
	if (p && pm_contains(p))
		pm_free(p);
	else
		free(p);
}
