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
#include <stdio.h>
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

/* cc_pm_realloc_kept -- the adapter's realloc (pm_free.h): a pool object stays in the pool,
 * anything else (NULL included) is the C library's */
void *cc_pm_realloc_kept(void *p, size_t n, crashcheck_site_t site)
{
	if (p && pm_contains(p))
		return cc_pm_realloc_at(p, n, site);
	return realloc(p, n);
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

/* The calls below are what `--pm-malloc` makes of the structure's valloc, pvalloc and C++
 * new/new[] (the pass rewrites the call, instrument/pass/CrashcheckPass.cpp).  They are C and never throw: a pool too full for a `new` ends the driver with one
 * line naming the allocation's site (a bad_alloc would not tell where the pool ran out). */

#define PAGE ((size_t)4096)

/* cc_pm_valloc_at -- N bytes on a page boundary */
void *cc_pm_valloc_at(size_t n, crashcheck_site_t site)
{
	return cc_pm_aligned_at(PAGE, n, site);
}

/* cc_pm_pvalloc_at -- N bytes rounded up to whole pages, on a page boundary */
void *cc_pm_pvalloc_at(size_t n, crashcheck_site_t site)
{
	if (n > SIZE_MAX - PAGE)
		return NULL;
	return cc_pm_aligned_at(PAGE, n ? (n + PAGE - 1) & ~(PAGE - 1) : PAGE, site);
}

/* the head of a site record as the pass lays it out (struct crashcheck_site, rt_internal.h) */
struct site_head {
	const char *file, *func, *inl_file, *inl_func;
	uint32_t line;
};

/* new_failed -- the one line a full pool ends a `new` with (internal) */
static void new_failed(size_t n, crashcheck_site_t site)
{
	const struct site_head *h = (const struct site_head *)site;
	fprintf(stderr, "crashcheck: operator new of %zu bytes at %s:%u: the pool is full (give the "
		"driver a larger pool: --size)\n", n, h && h->file ? h->file : "?", h ? h->line : 0);
	abort();
}

/* cc_pm_new_nothrow_at -- operator new(n, std::nothrow): NULL when the pool is full */
void *cc_pm_new_nothrow_at(size_t n, crashcheck_site_t site)
{
	return cc_pm_malloc_at(n, site);
}

/* cc_pm_new_at -- operator new(n) and new[](n) */
void *cc_pm_new_at(size_t n, crashcheck_site_t site)
{
	void *p = cc_pm_malloc_at(n, site);
	if (!p)
		new_failed(n, site);
	return p;
}

/* cc_pm_new_aligned_nothrow_at -- operator new(n, std::align_val_t, std::nothrow) */
void *cc_pm_new_aligned_nothrow_at(size_t n, size_t align, crashcheck_site_t site)
{
	return cc_pm_aligned_at(align, n, site);
}

/* cc_pm_new_aligned_at -- operator new(n, std::align_val_t) and its new[] */
void *cc_pm_new_aligned_at(size_t n, size_t align, crashcheck_site_t site)
{
	void *p = cc_pm_aligned_at(align, n, site);
	if (!p)
		new_failed(n, site);
	return p;
}

/* The program's operator delete, every form (these mangled names replace the C++ library's, as
 * a program may; a C driver never calls them).  The default ones give the memory to free();
 * these give a pool object back to the pool first, so an object the structure took with `new`
 * may be deleted anywhere: in the adapter, or in the standard library's compiled code (a
 * std::string's buffer).  Memory that is not the pool's goes to free() as before.
 *
 * Each is weak: an adapter written before crashcheck replaced operator delete defines its own
 * operator new and delete into the pool (the documented way then), and the link takes the user's
 * forms and keeps these only for the forms the user left out, instead of failing on a name
 * defined twice (tests/fixtures/old_adapters). */
#define REPLACEABLE __attribute__((weak))
REPLACEABLE void _ZdlPv(void *p) { cc_pm_free(p); }
REPLACEABLE void _ZdaPv(void *p) { cc_pm_free(p); }
REPLACEABLE void _ZdlPvm(void *p, size_t n) { (void)n; cc_pm_free(p); }
REPLACEABLE void _ZdaPvm(void *p, size_t n) { (void)n; cc_pm_free(p); }
REPLACEABLE void _ZdlPvSt11align_val_t(void *p, size_t a) { (void)a; cc_pm_free(p); }
REPLACEABLE void _ZdaPvSt11align_val_t(void *p, size_t a) { (void)a; cc_pm_free(p); }
REPLACEABLE void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t a) { (void)n; (void)a; cc_pm_free(p); }
REPLACEABLE void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t a) { (void)n; (void)a; cc_pm_free(p); }
REPLACEABLE void _ZdlPvRKSt9nothrow_t(void *p, const void *t) { (void)t; cc_pm_free(p); }
REPLACEABLE void _ZdaPvRKSt9nothrow_t(void *p, const void *t) { (void)t; cc_pm_free(p); }
REPLACEABLE void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *t) { (void)a; (void)t; cc_pm_free(p); }
REPLACEABLE void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *t) { (void)a; (void)t; cc_pm_free(p); }
