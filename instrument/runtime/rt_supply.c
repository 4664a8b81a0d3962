/*
 * rt_supply.c -- post-crash images of the PM regions past the pool, handed to the structure
 * when its recovery registers those regions again
 *
 * A post-crash image holds every region the traced run registered, in registration order
 * (crashsim/layout.py): region 0 is the pool, which the driver maps itself; the others are
 * regions the structure made: memory it registered with crashcheck_register_pm, a file it
 * mapped with pmem_map_file, a second libpmemobj pool.  Recovery makes them again the way the
 * program always does, so the driver hands their images to crashcheck_supply_regions() and
 * starts counting (crashcheck_supply_begin) before it calls recovery; the K-th new region
 * registered from then on (counting from FIRST) is region K of the image and starts from it:
 *
 *   - memory registered with crashcheck_register_pm gets the image copied into it;
 *   - pmem_map_file and pmemobj_create / pmemobj_open map a temporary copy of the image
 *     instead of the file named (rt_pmemobj.c): that file holds the traced run's last state,
 *     not the crash's, and a check must never write the user's files.
 *
 * Matching by order, not by name, is what lets a recovery that opens "POOL.log" next to a pool
 * the checker put elsewhere find its log.  A region whose size differs from its image's is
 * refused (registration fails, saying so): recovery of a different layout than the traced run's
 * cannot be judged.  Copying an image reads it: in a lazy check the copy is one read of all
 * its lines (__cc_check_load), so the crash state is decided there for the whole region.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_internal.h"

#define MAX_SUPPLY 16

static const void *images[MAX_SUPPLY];   /* index: region number; [0] unused */
static size_t sizes[MAX_SUPPLY];
static unsigned nimages;                 /* regions 1 .. nimages-1 have images */
static unsigned next_region = UINT_MAX;  /* the region the next registration is; UINT_MAX: none */
static unsigned taken;                   /* bit K: region K's image was handed out */

/* crashcheck_supply_regions -- the images of regions 1..N (IMAGES[i], SIZES[i] for region i+1) */
int crashcheck_supply_regions(const void *const *imgs, const size_t *szs, unsigned n)
{
	if (n + 1 > MAX_SUPPLY) {
		cc_set_error("too many PM regions to supply (at most %d)", MAX_SUPPLY - 1);
		return -1;
	}
	for (unsigned i = 0; i < n; i++) {
		images[i + 1] = imgs[i];
		sizes[i + 1] = szs[i];
	}
	nimages = n ? n + 1 : 0;
	return 0;
}

/* crashcheck_supply_begin -- the next new region registered is region FIRST */
void crashcheck_supply_begin(unsigned first)
{
	if (!nimages)
		return;       /* nothing to hand out: registrations stay uncounted (and cost nothing) */
	next_region = first;
	taken = 0;
}

/* cc_supply_next -- the region number the next registration gets (UINT_MAX: not counting) */
unsigned cc_supply_next(void)
{
	return next_region;
}

/* cc_supply_counted -- a new region was registered */
void cc_supply_counted(void)
{
	if (next_region != UINT_MAX)
		next_region++;
}

/* cc_supply_take -- region K's image and size, once (NULL: none, or handed out already) */
const void *cc_supply_take(unsigned k, size_t *size)
{
	if (k == 0 || k >= nimages || k >= MAX_SUPPLY || (taken & (1u << k)) || !images[k])
		return NULL;
	taken |= 1u << k;
	*size = sizes[k];
	__cc_check_load(images[k], sizes[k]);
	return images[k];
}

/* cc_supply_file -- if the next registration has an image, write it to a fresh temporary file
 * (sparse) named in PATH (LEN bytes) and return 1; 0 when there is none; -1 on failure (the
 * reason in crashcheck_last_error).  The caller maps PATH, then unlinks it. */
int cc_supply_file(char *path, size_t len)
{
	size_t size;
	const void *img = cc_supply_take(next_region, &size);
	if (!img)
		return 0;
	snprintf(path, len, "%s/cc-region-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	int fd = mkstemp(path);
	if (fd < 0) {
		cc_set_error("cannot make a file for region %u's image: %s", next_region, strerror(errno));
		return -1;
	}
	char name[96];
	snprintf(name, sizeof(name), "region %u's image", next_region);
	int bad = cc_write_sparse(fd, name, img, size) != 0;
	close(fd);
	if (bad) {
		unlink(path);
		return -1;
	}
	return 1;
}
