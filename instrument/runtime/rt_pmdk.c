/*
 * rt_pmdk.c -- libpmem and libpmemobj built with the pass (instrument/build-pmdk): their pools
 * become regions at the library's own mmap
 *
 * Built that way, the libraries' stores, flushes, fences and (in a check) loads are traced like
 * the program's, so none of rt_pmemobj.c's modelling applies (the pass leaves their calls
 * alone).  What remains is knowing which memory is PM.  The pass sends the libraries' mmap
 * calls here; a shared, writable mapping of a regular file from offset 0, longer than a page
 * (a pool's whole mapping, not the header page libpmemobj maps for a moment to read it), is
 * registered as a region the moment it exists, before the library reads or writes it:
 * - tracing, the region starts from the file's bytes as mapped, so a pool's creation and an
 *   open's recovery are traced stores, with crash points between them;
 * - in a program-mode command logging its reads (rt_readlog.c), a mapping of an image is
 *   followed, so libpmemobj's recovery reads are seen and lazy exploration can branch on them.
 *
 * libpmem decides at its first pmem_is_pmem whether to flush with instructions or with msync;
 * a pool file on an ordinary file system would take msync, which no trace can see, so the
 * runtime sets PMEM_IS_PMEM_FORCE=1 (unless the environment says otherwise) when such a
 * library maps a pool, which it does before it asks.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "rt_internal.h"

/* Tells a driver (trees/common/driver.c `info`) that the pool its adapter maps through such a
 * library is traced: this file is linked in only when an instrumented library's mmap calls it. */
const int __cc_pmdk_pools = 1;

/* is_pool_mapping -- whether a mapping of LEN bytes of FD at OFF is a pool's (internal) */
static int is_pool_mapping(size_t len, int prot, int flags, int fd, off_t off)
{
	struct stat st;
	/* 4096: the header page libpmemobj maps alone to read a pool's header */
	if (fd < 0 || off != 0 || !(flags & MAP_SHARED) || !(prot & PROT_WRITE) || len <= 4096)
		return 0;
	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size >= len;
}

/* __cc_wrap_mmap -- the instrumented libraries' mmap at SITE */
void *__cc_wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off,
		     crashcheck_site_t site)
{
	(void)site;
	void *p = mmap(addr, len, prot, flags, fd, off);
	if (p == MAP_FAILED || !is_pool_mapping(len, prot, flags, fd, off))
		return p;
	setenv("PMEM_IS_PMEM_FORCE", "1", 0);
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	cc_readlog_mapped(path, p, len);        /* a program-mode command logging its reads */
	if (cc_trace_enabled() && cc_register_region(p, len, NULL) != 0)
		fprintf(stderr, "crashcheck: PMDK mapping at %p not traced: %s\n", p,
			crashcheck_last_error());
	return p;
}

void *__cc_wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off,
		       crashcheck_site_t site)
{
	return __cc_wrap_mmap(addr, len, prot, flags, fd, off, site);
}
