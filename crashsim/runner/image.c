/*
 * image.c -- the checker runner's pool image and the writes into it
 *
 * The base image
 *   The pool is a private mapping of a memfd (the base file) at the fixed
 *   pool address, owned by the runner.  BASE loads an image file into the
 *   memfd (only the file's data extents and non-zero pages are written, so a
 *   sparse 64 MiB pool with a small structure in it stays a few pages); PATCH
 *   writes into it.  The base is the image of the guaranteed state at one
 *   crash point.  Nobody writes the pool through the runner's own mapping:
 *   writes go to the memfd, so every private mapping of it (the runner's, a
 *   forked check's, the worker's) sees the base wherever it has not written
 *   itself, and MADV_DONTNEED on such a mapping drops what a check wrote and
 *   leaves exactly the base (worker_snapshot.c restores the pool that way).  Without
 *   memfd_create the pool is anonymous memory written in place, as before,
 *   and the worker is off.
 *
 * Writes
 *   A PATCH body, and a state's writes, are a list of records (u64 offset,
 *   u32 length, data).  Every list is validated against the pool before any
 *   of it is applied; a state's writes are applied in the forked child only,
 *   to its copy-on-write view (child.c), so the base is never touched.
 *
 * This file never forks and never answers: it says why something failed,
 * and the caller answers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner_internal.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define WRITE_HEAD 12                    /* u64 offset, u32 length */

/*
 * ccr_pool_map -- map the pool at ADDR (R->map_size bytes, private, zero),
 * refusing an address range that is already mapped; -1 and the reason in
 * WHY on failure
 */
int ccr_pool_map(struct runner *r, void *addr, char *why, size_t whylen)
{
	r->pool_fd = memfd_create("cc-pool", MFD_CLOEXEC);
	if (r->pool_fd >= 0 && ftruncate(r->pool_fd, (off_t)r->map_size) < 0) {
		close(r->pool_fd);
		r->pool_fd = -1;
	}
	int anon = r->pool_fd < 0 ? MAP_ANONYMOUS : 0;
	void *p = mmap(addr, r->map_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | anon | MAP_NORESERVE | MAP_FIXED_NOREPLACE, r->pool_fd, 0);
	if (p == MAP_FAILED || p != addr) {
		int e = p == MAP_FAILED ? errno : EEXIST;
		if (p != MAP_FAILED)
			munmap(p, r->map_size);   /* an old kernel took the address as a hint */
		snprintf(why, whylen, "cannot map the pool at 0x%llx (%zu bytes): %s%s",
			 (unsigned long long)(uintptr_t)addr, r->size, strerror(e),
			 e == EEXIST ? " - the address range is already mapped in this process; "
				       "leave it unmapped (the runner maps it) or choose another with "
				       "CRASHCHECK_POOL_ADDR" : "");
		return -1;
	}
	r->pool = addr;
	return 0;
}

/* ccr_pool_unmap -- unmap the pool, if mapped, and close its memfd */
void ccr_pool_unmap(struct runner *r)
{
	if (r->pool)
		munmap(r->pool, r->map_size);
	if (r->pool_fd >= 0)
		close(r->pool_fd);
	r->pool_fd = -1;
}

/* pool_write -- N bytes at pool offset OFF: into the memfd, or in place
 * when the pool is anonymous; -1 on a write error (internal) */
static int pool_write(struct runner *r, uint64_t off, const void *data, size_t n)
{
	r->base_gen++;
	if (off + n > r->pool_hi)
		r->pool_hi = off + n;
	if (r->pool_fd < 0) {
		memcpy(r->pool + off, data, n);
		return 0;
	}
	size_t put = 0;
	while (put < n) {
		ssize_t k = pwrite(r->pool_fd, (const char *)data + put, n - put, (off_t)(off + put));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		put += (size_t)k;
	}
	return 0;
}

/* write_head -- a write record's pool offset and data length (internal) */
static void write_head(const uint8_t *rec, uint64_t *off, uint32_t *len)
{
	memcpy(off, rec, 8);
	memcpy(len, rec + 8, 4);
}

/* ccr_patch_base -- apply validated writes to the base; -1 on a write error */
int ccr_patch_base(struct runner *r, const uint8_t *w, size_t n)
{
	size_t pos = 0;
	while (pos < n) {
		uint64_t off;
		uint32_t len;
		write_head(w + pos, &off, &len);
		if (pool_write(r, off, w + pos + WRITE_HEAD, len) < 0)
			return -1;
		pos += WRITE_HEAD + len;
	}
	return 0;
}

/*
 * ccr_check_writes -- validate a list of writes against the pool; returns
 * NULL or a description of the first bad one
 */
const char *ccr_check_writes(const struct runner *r, const uint8_t *w, size_t n)
{
	size_t pos = 0;
	while (pos < n) {
		if (n - pos < WRITE_HEAD)
			return "a write record is cut short";
		uint64_t off;
		uint32_t len;
		write_head(w + pos, &off, &len);
		pos += WRITE_HEAD;
		if (len > n - pos)
			return "a write's data is cut short";
		if (off > r->size || len > r->size - off)
			return "a write falls outside the pool";
		pos += len;
	}
	return NULL;
}

/* ccr_apply_writes -- copy validated writes into the pool */
void ccr_apply_writes(uint8_t *pool, const uint8_t *w, size_t n)
{
	size_t pos = 0;
	while (pos < n) {
		uint64_t off;
		uint32_t len;
		write_head(w + pos, &off, &len);
		memcpy(pool + off, w + pos + WRITE_HEAD, len);
		pos += WRITE_HEAD + len;
	}
}

/* is_zero -- non-zero if N bytes at P are all zero (internal) */
static int is_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/*
 * copy_range -- copy [FROM, TO) of the image file into the pool, skipping
 * all-zero pages so they stay unpopulated (internal)
 */
static int copy_range(struct runner *r, int fd, off_t from, off_t to)
{
	static uint8_t page[1 << 16];
	while (from < to) {
		size_t want = (size_t)(to - from) < sizeof(page) ? (size_t)(to - from) : sizeof(page);
		ssize_t got = pread(fd, page, want, from);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		for (ssize_t k = 0; k < got; k += 4096) {
			size_t len = (size_t)(got - k) < 4096 ? (size_t)(got - k) : 4096;
			if (!is_zero(page + k, len) && pool_write(r, (uint64_t)(from + k), page + k, len) < 0)
				return -1;
		}
		from += got;
	}
	return 0;
}

/* ccr_load_base -- make the pool a copy of the image file PATH; -1 and WHY on failure */
int ccr_load_base(struct runner *r, const char *path, char *why, size_t whylen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, whylen, "cannot open base image %s: %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || (size_t)st.st_size > r->size) {
		snprintf(why, whylen, "base image %s has %lld bytes, the pool %zu", path,
			 (long long)st.st_size, r->size);
		close(fd);
		return -1;
	}
	/* An emptied memfd (truncated to 0 and back) reads as zeros, as does a
	 * private anonymous mapping after MADV_DONTNEED. */
	r->base_gen++;
	r->pool_hi = 0;
	if (r->pool_fd >= 0) {
		if (ftruncate(r->pool_fd, 0) < 0 || ftruncate(r->pool_fd, (off_t)r->map_size) < 0) {
			snprintf(why, whylen, "cannot empty the pool: %s", strerror(errno));
			close(fd);
			return -1;
		}
	} else {
		madvise(r->pool, r->map_size, MADV_DONTNEED);
	}
	off_t pos = 0;
	int rc = 0;
	while (pos < st.st_size) {
		off_t data = lseek(fd, pos, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break;
		if (data < 0) {
			/* No SEEK_DATA here: copy the rest, zero pages still skipped. */
			rc = copy_range(r, fd, pos, st.st_size);
			break;
		}
		off_t hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0)
			hole = st.st_size;
		if ((rc = copy_range(r, fd, data, hole)) < 0)
			break;
		pos = hole;
	}
	if (rc < 0)
		snprintf(why, whylen, "cannot read base image %s: %s", path, strerror(errno));
	close(fd);
	return rc;
}
