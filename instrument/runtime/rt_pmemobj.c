/*
 * rt_pmemobj.c -- libpmemobj under the pass: its pools as traced regions, its own stores, and
 * what its transactions flush (and libpmem's pmem_map_file pools as regions)
 *
 * The pass sends calls to the libpmemobj functions below to these wrappers (same arguments plus
 * the call's site), and puts __cc_lib_return(site) after every other pmemobj_* call that may
 * write a pool (instrument/pass/CrashcheckPass.cpp).  Redirecting the program's calls, rather
 * than interposing on the library's symbols, gives every call its source site and never sees
 * the library's calls to itself.  While not tracing every wrapper only calls the library.
 *
 * Pools.  pmemobj_create / pmemobj_open pick the address themselves; the wrapper registers the
 * mapping they return (the pool struct is the start of a single-file pool's mapping, as long as
 * the file) as a region, with a shadow (rt_shadow.c).  A created pool starts the trace as
 * created (crash points inside creation are not explored); an opened one starts from the file's
 * bytes before the open, and what the open wrote (libpmemobj's recovery) is logged as its
 * stores.  A pool set (a text file naming parts) or a pool that cannot be registered is left
 * untraced, with one line on stderr.
 *
 * libpmem's pmem_map_file maps a pool too: its mapping becomes a region (without a shadow:
 * libpmem writes into it only through the copy and fill calls the pass models).
 *
 * The library's stores.  After each call that may write, the shadow is compared with the pool
 * and the difference logged as `library` stores at the call's site, durable at once (the
 * library persists its metadata before it returns), then a fence.
 *
 * Transactions.  The program's own stores inside a transaction are logged by the pass, but the
 * flushes libpmemobj makes of them at commit happen inside the library: so every range the
 * transaction added (pmemobj_tx_add_range*, without POBJ_XADD_NO_FLUSH) or allocated
 * (pmemobj_tx_*alloc, *dup, without POBJ_XALLOC_NO_FLUSH) is flushed, line by line, then
 * fenced, when the transaction commits (its stage goes from WORK to ONCOMMIT in
 * pmemobj_tx_commit / process / end), before the library's own commit stores (the undo log's
 * invalidation) are logged: the order libpmemobj itself keeps.  A store into a range that was
 * never added stays unflushed, as it does on real hardware.  Nested transactions: the ranges are
 * flushed at the first commit of any level (a nested commit flushes earlier than libpmemobj
 * does, never later).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <wchar.h>

#include "rt_internal.h"

/* libpmemobj's ABI (libpmemobj/base.h, tx_base.h), declared here so the runtime builds and
 * links without it: the references are weak, and only a program that calls libpmemobj (and so
 * links it) reaches the wrappers. */
typedef struct { uint64_t pool_uuid_lo, off; } cc_oid_t;
typedef struct cc_objpool cc_objpool;
#define WEAK __attribute__((weak))
WEAK cc_objpool *pmemobj_create(const char *path, const char *layout, size_t poolsize, mode_t mode);
WEAK cc_objpool *pmemobj_open(const char *path, const char *layout);
WEAK void pmemobj_close(cc_objpool *pop);
WEAK void *pmemobj_direct(cc_oid_t oid);
WEAK size_t pmemobj_alloc_usable_size(cc_oid_t oid);
WEAK int pmemobj_tx_stage(void);
WEAK int pmemobj_tx_add_range(cc_oid_t oid, uint64_t off, size_t size);
WEAK int pmemobj_tx_add_range_direct(const void *ptr, size_t size);
WEAK int pmemobj_tx_xadd_range(cc_oid_t oid, uint64_t off, size_t size, uint64_t flags);
WEAK int pmemobj_tx_xadd_range_direct(const void *ptr, size_t size, uint64_t flags);
WEAK cc_oid_t pmemobj_tx_alloc(size_t size, uint64_t type_num);
WEAK cc_oid_t pmemobj_tx_zalloc(size_t size, uint64_t type_num);
WEAK cc_oid_t pmemobj_tx_xalloc(size_t size, uint64_t type_num, uint64_t flags);
WEAK cc_oid_t pmemobj_tx_realloc(cc_oid_t oid, size_t size, uint64_t type_num);
WEAK cc_oid_t pmemobj_tx_zrealloc(cc_oid_t oid, size_t size, uint64_t type_num);
WEAK cc_oid_t pmemobj_tx_strdup(const char *s, uint64_t type_num);
WEAK cc_oid_t pmemobj_tx_xstrdup(const char *s, uint64_t type_num, uint64_t flags);
WEAK cc_oid_t pmemobj_tx_wcsdup(const wchar_t *s, uint64_t type_num);
WEAK cc_oid_t pmemobj_tx_xwcsdup(const wchar_t *s, uint64_t type_num, uint64_t flags);
WEAK void pmemobj_tx_commit(void);
WEAK void pmemobj_tx_process(void);
WEAK int pmemobj_tx_end(void);
WEAK void *pmem_map_file(const char *path, size_t len, int flags, mode_t mode, size_t *mapped_lenp,
			 int *is_pmemp);

/* Tells a driver (trees/common/driver.c `info`) that its libpmemobj pools are traced. */
const int __cc_pmemobj_pools = 1;

enum { TX_STAGE_NONE = 0, TX_STAGE_WORK = 1, TX_STAGE_ONCOMMIT = 2 };
#define POBJ_FLAG_NO_FLUSH (1ull << 1)       /* POBJ_XADD_NO_FLUSH, POBJ_XALLOC_NO_FLUSH */
#define POOLSET_SIG "PMEMPOOLSET"

/* The current transaction's ranges to flush at commit. */
static struct range { uintptr_t addr; size_t len; } *ranges;
static size_t nranges, cap_ranges;

/* traced -- whether the wrappers have anything to do (internal) */
static int traced(void)
{
	return cc_trace_enabled();
}

/* __cc_lib_return -- after a pmemobj_* call at SITE that may have written a pool */
void __cc_lib_return(crashcheck_site_t site)
{
	if (cc_shadow_span)
		cc_shadow_sync(cc_hook_site(site));
}

/* add_range -- flush [addr, addr+len) when the transaction commits (internal) */
static void add_range(const void *addr, size_t len)
{
	if (!traced() || addr == NULL || len == 0)
		return;
	if (nranges == cap_ranges) {
		size_t cap = cap_ranges ? 2 * cap_ranges : 64;
		struct range *r = realloc(ranges, cap * sizeof(*r));
		if (r == NULL) {
			fprintf(stderr, "crashcheck: out of memory for a transaction's ranges\n");
			exit(2);
		}
		ranges = r, cap_ranges = cap;
	}
	ranges[nranges].addr = (uintptr_t)addr;
	ranges[nranges].len = len;
	nranges++;
}

/* flush_ranges -- the commit's flushes of every added range, then its fence (internal) */
static void flush_ranges(uint32_t site)
{
	if (nranges == 0)
		return;
	for (size_t i = 0; i < nranges; i++) {
		uintptr_t p = ranges[i].addr & ~(uintptr_t)(CC_LINE_SIZE - 1);
		for (; p < ranges[i].addr + ranges[i].len; p += CC_LINE_SIZE)
			if (cc_in_pm(p, 1))
				cc_emit(CC_EV_FLUSH, CC_FLUSH_CLWB, site, p, CC_LINE_SIZE, NULL, 0);
	}
	cc_emit(CC_EV_FENCE, CC_FENCE_SFENCE, site, 0, 0, NULL, 0);
	nranges = 0;
}

/* tx_after -- after a call that may end a transaction's work stage (internal) */
static void tx_after(int before, crashcheck_site_t site)
{
	if (!traced())
		return;
	int after = pmemobj_tx_stage();
	if (before == TX_STAGE_WORK && after == TX_STAGE_ONCOMMIT)
		flush_ranges(cc_hook_site(site));
	else if (after == TX_STAGE_NONE)
		nranges = 0;                  /* aborted or ended: nothing more to flush */
	__cc_lib_return(site);
}

/* read_file -- PATH's first SIZE bytes, or NULL (internal) */
static unsigned char *read_file(const char *path, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	unsigned char *buf = calloc(1, size ? size : 1);
	size_t got = 0;
	while (buf && got < size) {
		ssize_t n = pread(fd, buf + got, size - got, (off_t)got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	return buf;
}

/* pool_size -- the size of the single-file pool PATH, 0 (with a line on stderr) if it is not
 * one crashcheck can trace (internal) */
static size_t pool_size(const char *path)
{
	struct stat st;
	char sig[sizeof(POOLSET_SIG) - 1];
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
		fprintf(stderr, "crashcheck: libpmemobj pool %s is not a regular file: not traced\n", path);
		return 0;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? pread(fd, sig, sizeof(sig), 0) : -1;
	if (fd >= 0)
		close(fd);
	if (n == (ssize_t)sizeof(sig) && memcmp(sig, POOLSET_SIG, sizeof(sig)) == 0) {
		fprintf(stderr, "crashcheck: libpmemobj pool %s is a pool set: not traced "
			"(only single-file pools are)\n", path);
		return 0;
	}
	return (size_t)st.st_size;
}

/* track_pool -- make POP's mapping of SIZE bytes a traced region starting from INITIAL (NULL: as
 * it is now) with a shadow, then log what differs from INITIAL at SITE (internal) */
static void track_pool(cc_objpool *pop, size_t size, const void *initial, crashcheck_site_t site)
{
	if (cc_register_region(pop, size, initial) != 0 || cc_shadow_add(pop, size, initial) != 0) {
		fprintf(stderr, "crashcheck: libpmemobj pool at %p not traced: %s\n", (void *)pop,
			crashcheck_last_error());
		return;
	}
	cc_shadow_sync(cc_hook_site(site));
}

/* note_pool -- count POP (the pool in PATH) as a region of a recovery that is given images of
 * its regions (rt_supply.c) while not tracing: quietly, unless it is no single-file pool
 * (internal) */
static void note_pool(cc_objpool *pop, const char *path)
{
	struct stat st;
	if (cc_supply_next() == UINT_MAX || stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
		return;
	if (cc_register_region(pop, (size_t)st.st_size, NULL) != 0)
		fprintf(stderr, "crashcheck: libpmemobj pool %s: %s\n", path, crashcheck_last_error());
}

/* supplied_image -- the temporary copy of the post-crash image of the region the next pool
 * is, in IMAGE: 1; 0 when there is none; -1 (a line on stderr) when it cannot be made
 * (internal) */
static int supplied_image(char *image, size_t len)
{
	int r = cc_supply_file(image, len);
	if (r < 0) {
		fprintf(stderr, "crashcheck: %s\n", crashcheck_last_error());
		errno = EIO;
	}
	return r;
}

/* open_pool -- pmemobj_open of PATH, traced from the file's bytes before the open (internal) */
static cc_objpool *open_pool(const char *path, const char *layout, crashcheck_site_t site)
{
	if (!traced()) {
		cc_objpool *pop = pmemobj_open(path, layout);
		if (pop)
			note_pool(pop, path);
		return pop;
	}
	size_t size = pool_size(path);
	unsigned char *before = size ? read_file(path, size) : NULL;
	cc_objpool *pop = pmemobj_open(path, layout);
	if (pop && before)
		track_pool(pop, size, before, site);
	free(before);
	return pop;
}

/* open_supplied -- open the temporary copy IMAGE of a region's post-crash image (internal) */
static cc_objpool *open_supplied(char *image, const char *layout, crashcheck_site_t site)
{
	cc_objpool *pop = open_pool(image, layout, site);
	unlink(image);
	return pop;
}

/* In a recovery given post-crash images (rt_supply.c), a pool that is one of them is opened
 * from a copy of its image, whether the program creates or opens it. */
cc_objpool *__cc_wrap_pmemobj_create(const char *path, const char *layout, size_t poolsize,
				     mode_t mode, crashcheck_site_t site)
{
	char image[64];
	int supplied = supplied_image(image, sizeof(image));
	if (supplied)
		return supplied > 0 ? open_supplied(image, layout, site) : NULL;
	cc_readlog_opaque(path);
	cc_objpool *pop = pmemobj_create(path, layout, poolsize, mode);
	size_t size;
	if (pop && !traced())
		note_pool(pop, path);
	else if (pop && (size = pool_size(path)) != 0)
		track_pool(pop, size, NULL, site);
	return pop;
}

cc_objpool *__cc_wrap_pmemobj_open(const char *path, const char *layout, crashcheck_site_t site)
{
	cc_readlog_opaque(path);   /* a command logging its reads: libpmemobj's are not seen */
	char image[64];
	int supplied = supplied_image(image, sizeof(image));
	if (supplied)
		return supplied > 0 ? open_supplied(image, layout, site) : NULL;
	return open_pool(path, layout, site);
}

void __cc_wrap_pmemobj_close(cc_objpool *pop, crashcheck_site_t site)
{
	if (traced()) {
		__cc_lib_return(site);        /* whatever was not logged yet */
		cc_shadow_drop(pop);          /* the mapping goes away; it stays a region (its address) */
	}
	pmemobj_close(pop);
}

/* __cc_wrap_pmem_map_file -- libpmem maps a file: trace the mapping as a region (in a recovery
 * given post-crash images, a copy of its region's image instead of the file) */
void *__cc_wrap_pmem_map_file(const char *path, size_t len, int flags, mode_t mode, size_t *mapped_lenp,
			      int *is_pmemp, crashcheck_site_t site)
{
	(void)site;
	size_t mapped = 0;
	char image[64];
	int supplied = supplied_image(image, sizeof(image));
	if (supplied < 0)
		return NULL;
	void *p = supplied ? pmem_map_file(image, 0, 0, 0, &mapped, is_pmemp)
			   : pmem_map_file(path, len, flags, mode, &mapped, is_pmemp);
	if (supplied)
		unlink(image);
	else if (p)
		cc_readlog_mapped(path, p, mapped);   /* a program-mode command logging its reads */
	if (mapped_lenp)
		*mapped_lenp = mapped;
	if (p && (traced() || cc_supply_next() != UINT_MAX) && cc_register_region(p, mapped, NULL) != 0)
		fprintf(stderr, "crashcheck: libpmem mapping of %s at %p not traced: %s\n", path, p,
			crashcheck_last_error());
	return p;
}

/* The ranges a transaction adds: flushed at its commit. */
int __cc_wrap_pmemobj_tx_add_range(cc_oid_t oid, uint64_t off, size_t size, crashcheck_site_t site)
{
	int r = pmemobj_tx_add_range(oid, off, size);
	if (r == 0 && traced())
		add_range((char *)pmemobj_direct(oid) + off, size);
	__cc_lib_return(site);
	return r;
}

int __cc_wrap_pmemobj_tx_add_range_direct(const void *ptr, size_t size, crashcheck_site_t site)
{
	int r = pmemobj_tx_add_range_direct(ptr, size);
	if (r == 0)
		add_range(ptr, size);
	__cc_lib_return(site);
	return r;
}

int __cc_wrap_pmemobj_tx_xadd_range(cc_oid_t oid, uint64_t off, size_t size, uint64_t flags,
				    crashcheck_site_t site)
{
	int r = pmemobj_tx_xadd_range(oid, off, size, flags);
	if (r == 0 && !(flags & POBJ_FLAG_NO_FLUSH) && traced())
		add_range((char *)pmemobj_direct(oid) + off, size);
	__cc_lib_return(site);
	return r;
}

int __cc_wrap_pmemobj_tx_xadd_range_direct(const void *ptr, size_t size, uint64_t flags,
					   crashcheck_site_t site)
{
	int r = pmemobj_tx_xadd_range_direct(ptr, size, flags);
	if (r == 0 && !(flags & POBJ_FLAG_NO_FLUSH))
		add_range(ptr, size);
	__cc_lib_return(site);
	return r;
}

/* allocated -- a transaction allocated OID (flushed at commit unless FLAGS say not) (internal) */
static cc_oid_t allocated(cc_oid_t oid, uint64_t flags, crashcheck_site_t site)
{
	if (oid.off != 0 && !(flags & POBJ_FLAG_NO_FLUSH) && traced())
		add_range(pmemobj_direct(oid), pmemobj_alloc_usable_size(oid));
	__cc_lib_return(site);
	return oid;
}

cc_oid_t __cc_wrap_pmemobj_tx_alloc(size_t size, uint64_t type, crashcheck_site_t site)
{
	return allocated(pmemobj_tx_alloc(size, type), 0, site);
}

cc_oid_t __cc_wrap_pmemobj_tx_zalloc(size_t size, uint64_t type, crashcheck_site_t site)
{
	return allocated(pmemobj_tx_zalloc(size, type), 0, site);
}

cc_oid_t __cc_wrap_pmemobj_tx_xalloc(size_t size, uint64_t type, uint64_t flags, crashcheck_site_t site)
{
	return allocated(pmemobj_tx_xalloc(size, type, flags), flags, site);
}

cc_oid_t __cc_wrap_pmemobj_tx_realloc(cc_oid_t oid, size_t size, uint64_t type, crashcheck_site_t site)
{
	return allocated(pmemobj_tx_realloc(oid, size, type), 0, site);
}

cc_oid_t __cc_wrap_pmemobj_tx_zrealloc(cc_oid_t oid, size_t size, uint64_t type, crashcheck_site_t site)
{
	return allocated(pmemobj_tx_zrealloc(oid, size, type), 0, site);
}

cc_oid_t __cc_wrap_pmemobj_tx_strdup(const char *s, uint64_t type, crashcheck_site_t site)
{
	return allocated(pmemobj_tx_strdup(s, type), 0, site);
}

cc_oid_t __cc_wrap_pmemobj_tx_xstrdup(const char *s, uint64_t type, uint64_t flags, crashcheck_site_t site)
{
	return allocated(pmemobj_tx_xstrdup(s, type, flags), flags, site);
}

cc_oid_t __cc_wrap_pmemobj_tx_wcsdup(const wchar_t *s, uint64_t type, crashcheck_site_t site)
{
	return allocated(pmemobj_tx_wcsdup(s, type), 0, site);
}

cc_oid_t __cc_wrap_pmemobj_tx_xwcsdup(const wchar_t *s, uint64_t type, uint64_t flags, crashcheck_site_t site)
{
	return allocated(pmemobj_tx_xwcsdup(s, type, flags), flags, site);
}

/* The calls that may commit: the work stage's end flushes the ranges. */
void __cc_wrap_pmemobj_tx_commit(crashcheck_site_t site)
{
	int before = traced() ? pmemobj_tx_stage() : -1;
	pmemobj_tx_commit();
	tx_after(before, site);
}

void __cc_wrap_pmemobj_tx_process(crashcheck_site_t site)
{
	int before = traced() ? pmemobj_tx_stage() : -1;
	pmemobj_tx_process();
	tx_after(before, site);
}

int __cc_wrap_pmemobj_tx_end(crashcheck_site_t site)
{
	int before = traced() ? pmemobj_tx_stage() : -1;
	int r = pmemobj_tx_end();
	tx_after(before, site);
	return r;
}
