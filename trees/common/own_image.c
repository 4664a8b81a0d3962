/*
 * own_image.c -- hands a structure that maps its pool file itself (cc_tree.h
 * open_file: libpmemobj's pmemobj_open) the checked image without copying it.
 *
 * The check process already holds the image: the pool mapping at the pool
 * address, a private copy-on-write mapping of the runner's base image with
 * the state's writes in it, put back after every check (crashsim/runner,
 * worker.h).  Writing it out to a file for every state and having the
 * structure map that file cost a file of pool size per state (written, then
 * faulted in page by page through a shared mapping, synced, closed and
 * freed).  Instead the structure is given an empty file of the pool's size, and while
 * it is open every mapping of that file is answered with the pool mapping
 * itself (mmap below); unmapping and syncing it are no-ops.  So the
 * structure's recovery reads and writes the very image the runner wrote, in
 * the memory the check process puts back, at no cost but its own.
 *
 * The driver defines mmap, munmap and msync, which makes them the ones
 * libpmemobj and every other library calls; outside a redirect (and for any
 * other file) they are the system calls glibc's would make.
 * CRASHCHECK_OWN_POOL_COPY=1 restores the old way (a file per state), for
 * comparison (bench/crashsim_throughput --own-pool-copy).
 */
#define _GNU_SOURCE
#include "crashcheck_own.h" /* first: this file is crashcheck's own code (rt_fault.c) */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "own_image.h"

/* The redirect in force: the file's identity and the image it stands for.  A global of the check
 * process, so the reused check process puts it back (to inactive) after every check. */
static struct {
	int on;
	dev_t dev;
	ino_t ino;
	char *pool;
	size_t size;
} redirect;

int cc_own_image_copy(void)
{
	const char *e = getenv("CRASHCHECK_OWN_POOL_COPY");
	return e && *e && strcmp(e, "0") != 0;
}

int cc_own_image_begin(void *pool, size_t size, char *path, size_t pathlen, char *err, size_t errlen)
{
	snprintf(path, pathlen, "%s/cc-image-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	int fd = mkstemp(path);
	if (fd < 0) {
		snprintf(err, errlen, "cannot make a file for the image: %s", strerror(errno));
		return -1;
	}
	struct stat st;
	/* the file only has to look like the pool (its size); its bytes are never mapped */
	if (ftruncate(fd, (off_t)size) != 0 || fstat(fd, &st) != 0) {
		snprintf(err, errlen, "cannot make a file for the image: %s", strerror(errno));
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	/* the structure is left open after the check (cc_check_image): what it allocated must be
	 * on the heap, not in mappings of their own, which the reused check process could not put
	 * back without retiring (a new process for the next state); malloc's settings are the
	 * check process's, put back after the check */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	redirect.dev = st.st_dev;
	redirect.ino = st.st_ino;
	redirect.pool = pool;
	redirect.size = size;
	redirect.on = 1;
	return 0;
}

int cc_own_image_active(void)
{
	return redirect.on;
}

/* is_image -- FD is the image's file (internal) */
static int is_image(int fd)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == redirect.dev && st.st_ino == redirect.ino;
}

/* in_pool -- [ADDR, ADDR+LEN) lies in the image (internal) */
static int in_pool(const void *addr, size_t len)
{
	const char *a = addr;
	return redirect.on && a >= redirect.pool && len <= redirect.size &&
	       (size_t)(a - redirect.pool) <= redirect.size - len;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (redirect.on && !(flags & MAP_ANONYMOUS) && is_image(fd)) {
		/* a shared mapping of the file at no fixed place: the image itself.  Any other (fixed at
		 * another address, past the end) cannot be the pool: refused rather than given the file's
		 * empty bytes */
		if (off < 0 || (size_t)off > redirect.size || len > redirect.size - (size_t)off ||
		    ((flags & MAP_FIXED) && addr != redirect.pool + off)) {
			errno = EINVAL;
			return MAP_FAILED;
		}
		return redirect.pool + off;
	}
	long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	return r == -1 ? MAP_FAILED : (void *)r;
}

int munmap(void *addr, size_t len)
{
	if (in_pool(addr, len))
		return 0;   /* the pool mapping stays: the check process puts it back */
	return (int)syscall(SYS_munmap, addr, len);
}

int msync(void *addr, size_t len, int flags)
{
	if (in_pool(addr, len))
		return 0;   /* a private mapping: there is no file to write back to */
	return (int)syscall(SYS_msync, addr, len, flags);
}
