/*
 * rt_regions.c -- registered PM regions, pool files, and their initial images
 *
 * A region is a range the program declared persistent.  Only events inside
 * a region are logged.  The hooks first test the hull of all regions
 * (cc_pm_lo, cc_pm_span: one subtraction and compare), then, only when more
 * than one region exists, the regions themselves.
 *
 * A region registered while a post-crash image is being recovered starts from
 * that image's bytes (rt_supply.c).
 *
 * When a region is registered while tracing, its contents at that moment are
 * written next to the trace as TRACE.regionN (a sparse file: only non-zero
 * pages are written), so the crash simulator can rebuild any later image from
 * that snapshot plus the logged stores.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_internal.h"

#define CC_MAX_REGIONS 16
#define CC_PAGE 4096

uintptr_t cc_pm_lo;
uintptr_t cc_pm_span;
uintptr_t cc_r0_base;
uintptr_t cc_r0_span;

static struct { uintptr_t base; size_t size; } regions[CC_MAX_REGIONS];
unsigned cc_nregions;
#define nregions cc_nregions

/* cc_in_pm_slow -- non-zero if ADDR lies inside one of several regions */
int cc_in_pm_slow(uintptr_t addr)
{
	for (unsigned i = 0; i < nregions; i++)
		if (addr - regions[i].base < regions[i].size)
			return 1;
	return 0;
}

/* page_is_zero -- non-zero if the N bytes at P are all zero (internal) */
static int page_is_zero(const unsigned char *p, size_t n)
{
	const uint64_t *w = (const uint64_t *)p;
	for (size_t i = 0; i < n / 8; i++)
		if (w[i])
			return 0;
	for (size_t i = n & ~(size_t)7; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/* cc_write_sparse -- write [base, base+size) into the open file FD (NAME in errors) as a sparse
 * file: sized first, only its non-zero pages written; -1 with the reason set (internal) */
int cc_write_sparse(int fd, const char *name, const unsigned char *base, size_t size)
{
	if (ftruncate(fd, (off_t)size) != 0) {
		cc_set_error("cannot size %s: %s", name, strerror(errno));
		return -1;
	}
	for (size_t off = 0; off < size; off += CC_PAGE) {
		size_t n = size - off < CC_PAGE ? size - off : CC_PAGE;
		if (page_is_zero(base + off, n))
			continue;
		if (pwrite(fd, base + off, n, (off_t)off) != (ssize_t)n) {
			cc_set_error("cannot write %s: %s", name, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* write_image -- snapshot [base, base+size) into PATH as a sparse file (internal) */
static int write_image(const char *path, const unsigned char *base, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		cc_set_error("cannot create region image %s: %s", path, strerror(errno));
		return -1;
	}
	char name[4200];
	snprintf(name, sizeof(name), "region image %s", path);
	int r = cc_write_sparse(fd, name, base, size);
	close(fd);
	return r;
}

/* update_hull -- recompute the fast filter from the regions (internal) */
static void update_hull(void)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (unsigned i = 0; i < nregions; i++) {
		if (regions[i].base < lo)
			lo = regions[i].base;
		if (regions[i].base + regions[i].size > hi)
			hi = regions[i].base + regions[i].size;
	}
	cc_pm_lo = lo;
	/* The filter only opens while tracing: untraced runs pay one compare per access. */
	__atomic_store_n(&cc_pm_span, cc_trace_enabled() && nregions ? hi - lo : 0, __ATOMIC_RELEASE);
}

/* register_region -- declare [addr, addr+len) persistent (internal) */
static int register_region(void *addr, size_t len)
{
	return cc_register_region(addr, len, NULL);
}

/* cc_register_region -- declare [addr, addr+len) persistent; the trace starts it from the bytes
 * INITIAL (NULL: its bytes now), e.g. a pool file's bytes before libpmemobj opened it */
int cc_register_region(void *addr, size_t len, const void *initial)
{
	uintptr_t base = (uintptr_t)addr;
	if (len == 0) {
		cc_set_error("cannot register an empty PM region");
		return -1;
	}
	if (nregions == CC_MAX_REGIONS) {
		cc_set_error("too many PM regions (at most %d)", CC_MAX_REGIONS);
		return -1;
	}
	for (unsigned i = 0; i < nregions; i++) {
		/* the same range again (a program registering the mapping pmem_map_file returned,
		 * which the runtime traces already): nothing to do */
		if (base == regions[i].base && len == regions[i].size)
			return 0;
		if (base < regions[i].base + regions[i].size && regions[i].base < base + len) {
			cc_set_error("PM region %#" PRIxPTR "+%zu overlaps registered region %#" PRIxPTR "+%zu",
				     base, len, regions[i].base, regions[i].size);
			return -1;
		}
	}
	unsigned index = nregions;
	/* a check (or a traced recovery) of a post-crash image: the region starts from its image */
	size_t image_size = 0;
	const void *image_bytes = cc_supply_take(cc_supply_next(), &image_size);
	if (image_bytes) {
		if (image_size != len) {
			cc_set_error("PM region %u is %zu bytes in this run but %zu in the post-crash image "
				     "(recovery must make its regions as the traced run did)",
				     cc_supply_next(), len, image_size);
			return -1;
		}
		memcpy(addr, image_bytes, len);
		initial = NULL;
	}
	cc_supply_counted();
	if (cc_trace_enabled()) {
		char image[4200];
		snprintf(image, sizeof(image), "%s.region%u", cc_trace_path(), index);
		if (write_image(image, initial ? initial : addr, len) != 0)
			return -1;
		const char *name = strrchr(image, '/');
		cc_trace_set_pool(base, len);
		cc_emit_region(index, base, len, name ? name + 1 : image);
	}
	regions[index].base = base;
	regions[index].size = len;
	if (index == 0 && cc_trace_enabled() && len >= 8 && len < (UINT64_C(1) << CC_STORE8_OFF_BITS)) {
		cc_r0_base = base;
		cc_r0_span = len - 7;
	}
	nregions++;
	update_hull();
	return 0;
}

/* cc_regions_restart -- every region's bytes now as its image, logged again in order (the trace
 * starts over: rt_trace.c's cc_trace_from_here) */
int cc_regions_restart(void)
{
	for (unsigned i = 0; i < nregions; i++) {
		char image[4200];
		snprintf(image, sizeof(image), "%s.region%u", cc_trace_path(), i);
		if (write_image(image, (const unsigned char *)regions[i].base, regions[i].size) != 0)
			return -1;
		const char *name = strrchr(image, '/');
		cc_emit_region(i, regions[i].base, regions[i].size, name ? name + 1 : image);
	}
	return 0;
}

/* crashcheck_register_pm -- declare [addr, addr+len) persistent */
int crashcheck_register_pm(void *addr, size_t len)
{
	if (register_region(addr, len) != 0)
		return -1;
	cc_vg_region(addr, len); /* under pmemcheck: a PM mapping, named in its log */
	return 0;
}

/* pool_address -- ADDR, or $CRASHCHECK_POOL_ADDR, or the default (internal) */
static uintptr_t pool_address(uintptr_t addr)
{
	if (addr)
		return addr;
	const char *env = getenv("CRASHCHECK_POOL_ADDR");
	if (env && *env) {
		char *end;
		unsigned long long v = strtoull(env, &end, 0);
		if (*end == '\0' && v)
			return (uintptr_t)v;
	}
	return CRASHCHECK_DEFAULT_POOL_ADDR;
}

/* crashcheck_pool_open -- map a pool file at a fixed address and register it */
void *crashcheck_pool_open(const char *path, size_t size, uintptr_t addr, int flags)
{
	addr = pool_address(addr);
	if (size == 0 || size % CC_PAGE) {
		cc_set_error("pool size %zu is not a positive multiple of %d", size, CC_PAGE);
		return NULL;
	}
	int oflags = O_RDWR | O_CLOEXEC;
	if (flags & CRASHCHECK_POOL_CREATE)
		oflags |= O_CREAT | O_TRUNC;
	int fd = open(path, oflags, 0644);
	if (fd < 0) {
		cc_set_error("cannot open pool file %s: %s", path, strerror(errno));
		return NULL;
	}
	struct stat st;
	if (flags & CRASHCHECK_POOL_CREATE) {
		if (ftruncate(fd, (off_t)size) != 0) {
			cc_set_error("cannot size pool file %s to %zu bytes: %s", path, size, strerror(errno));
			close(fd);
			return NULL;
		}
	} else if (fstat(fd, &st) != 0 || (size_t)st.st_size < size) {
		cc_set_error("pool file %s has %lld bytes, smaller than the %zu expected",
			     path, (long long)st.st_size, size);
		close(fd);
		return NULL;
	}
	void *p = mmap((void *)addr, size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	int err = errno;
	if (p == (void *)addr)
		cc_vg_register_file(fd, p, size); /* under pmemcheck: the pool is its PM file */
	close(fd);
	if (p == MAP_FAILED || p != (void *)addr) {
		if (p != MAP_FAILED)
			munmap(p, size); /* a kernel without MAP_FIXED_NOREPLACE placed it elsewhere */
		if (p != MAP_FAILED || err == EEXIST)
			cc_set_error("cannot map pool %s at %#" PRIxPTR ": address range already mapped "
				     "(choose another with CRASHCHECK_POOL_ADDR)", path, addr);
		else
			cc_set_error("cannot map pool %s at %#" PRIxPTR ": %s", path, addr, strerror(err));
		return NULL;
	}
	if (register_region(p, size) != 0) {
		munmap(p, size);
		return NULL;
	}
	cc_readlog_mapped(path, p, size);   /* a program-mode command logging its reads */
	return p;
}

/* crashcheck_pool_close -- unmap a pool (it stays registered: its address is reserved) */
void crashcheck_pool_close(void *pool, size_t size)
{
	munmap(pool, size);
}
