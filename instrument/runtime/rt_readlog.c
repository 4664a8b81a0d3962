/*
 * rt_readlog.c -- the read log of a program-mode command (`crashcheck run --strategy lazy`)
 *
 * A checker or recovery command built with crashcheck-cc is an ordinary process, not a runner
 * child, so lazy exploration cannot branch inside it (crashsim/runner/lazy.c).  Instead the
 * command tells what it read: run with CRASHCHECK_READ_LOG=PATH and CRASHCHECK_READ_IMAGES
 * (the image files, one per line), it logs, in order, every access of its mapping of an image
 * file that touches a byte no earlier access of the process touched: loads (the pass's check
 * loads, __cc_check_load) and stores (the store hooks, CC_LAZY_STORE).  The harness replays the
 * log against a crash point's undetermined lines (harness/check/program_lazy.py): the same
 * branching lazy.c does online, done after the run, since a deterministic command that reads
 * the same bytes in the same order does the same thing.
 *
 * A mapping is an image's when pmem_map_file or crashcheck_pool_open maps one of the image
 * files (same device and inode).  libpmemobj reads its pools inside the precompiled library,
 * where no load is seen: a pmemobj_open / create of an image marks the log opaque, and the
 * harness does not trust it.  So does a forked child touching the mapping (its accesses are
 * not in this log) and a log that ran out of room.
 *
 * The log is PATH.PID (one per process: a command that runs several instrumented programs
 * leaves several, and the harness trusts only one that mapped the images), written through a
 * shared mapping, so a command that crashes, hangs or is killed still leaves what it read up to
 * then.  Its layout (little-endian) is struct rl_header, then `count` records of struct rl_rec.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_internal.h"

#define RL_MAGIC 0x4c52434bu           /* "KCRL" */
#define RL_VERSION 1
#define RL_MAX_IMAGES 16
#define RL_MAX_MAPS 16
#define RL_CAP ((uint64_t)1 << 20)     /* records (16 MiB of file at most, sparse) */
#define RL_STORE 0x80000000u           /* rl_rec.what: a store (else a load); low byte: image */

enum {
	RL_CHECK_LOADS = 1,   /* the program's modules were compiled with check loads */
	RL_OPAQUE = 2,        /* libpmemobj opened an image: its reads are not seen */
	RL_TRUNCATED = 4,     /* more records than RL_CAP: the rest were not logged */
	RL_FORKED = 8,        /* a forked child touched an image mapping */
};

struct rl_header {
	uint32_t magic, version, flags, mapped;  /* mapped: bit K, image K was mapped */
	uint64_t count, cap;
};

struct rl_rec {
	uint32_t what, len;
	uint64_t off;
};

extern const int __cc_module_check_loads __attribute__((weak));

static struct rl_header *hdr;          /* NULL: not logging */
static struct rl_rec *recs;
static struct { dev_t dev; ino_t ino; } images[RL_MAX_IMAGES];
static unsigned nimages;
static struct { uintptr_t base; size_t size; unsigned image; uint8_t *seen; } maps[RL_MAX_MAPS];
static unsigned nmaps;
static uintptr_t lo = UINTPTR_MAX, hi;
static int forked;

/* note -- an access of N bytes at offset OFF of map M (a store if STORE): log it if it touches
 * a byte not touched before (internal) */
static void note(unsigned m, uint64_t off, uint64_t n, int store)
{
	uint8_t *seen = maps[m].seen;
	int fresh = 0;
	for (uint64_t i = off; i < off + n; i++) {
		if (!(seen[i >> 3] & (1u << (i & 7)))) {
			seen[i >> 3] |= (uint8_t)(1u << (i & 7));
			fresh = 1;
		}
	}
	if (!fresh)
		return;
	if (forked) {
		__atomic_or_fetch(&hdr->flags, RL_FORKED, __ATOMIC_RELAXED);
		return;
	}
	uint64_t k = __atomic_fetch_add(&hdr->count, 1, __ATOMIC_RELAXED);
	if (k >= RL_CAP) {
		__atomic_or_fetch(&hdr->flags, RL_TRUNCATED, __ATOMIC_RELAXED);
		return;
	}
	recs[k].off = off;
	recs[k].len = (uint32_t)(n > UINT32_MAX ? UINT32_MAX : n);
	recs[k].what = (store ? RL_STORE : 0) | maps[m].image;
}

/* access -- SIZE bytes at ADDR (CC_LAZY_CSTRING: a string up to its NUL) (internal) */
static void access_(uintptr_t addr, uint64_t size, int store)
{
	if (addr < lo || addr >= hi)
		return;
	for (unsigned m = 0; m < nmaps; m++) {
		uintptr_t b = maps[m].base;
		if (addr - b >= maps[m].size)
			continue;
		uint64_t off = addr - b, room = maps[m].size - off;
		if (size == CC_LAZY_CSTRING) {
			const char *s = (const char *)addr;
			size = strnlen(s, room) + 1;
		}
		note(m, off, size < room ? size : room, store);
		return;
	}
}

static void on_load(uintptr_t addr, uint64_t size) { access_(addr, size, 0); }
static void on_store(uintptr_t addr, uint64_t size) { access_(addr, size, 1); }

/* image_of -- the index of the image file PATH is, or -1 (internal) */
static int image_of(const char *path)
{
	struct stat st;
	if (hdr == NULL || path == NULL || stat(path, &st) != 0)
		return -1;
	for (unsigned i = 0; i < nimages; i++)
		if (images[i].dev == st.st_dev && images[i].ino == st.st_ino)
			return (int)i;
	return -1;
}

/* cc_readlog_mapped -- PATH was mapped at [ADDR, ADDR+LEN): log accesses if it is an image */
void cc_readlog_mapped(const char *path, void *addr, size_t len)
{
	int image = image_of(path);
	if (image < 0 || addr == NULL || len == 0)
		return;
	if (nmaps == RL_MAX_MAPS) {
		hdr->flags |= RL_OPAQUE;      /* a mapping it cannot follow: trust nothing */
		return;
	}
	uint8_t *seen = calloc((len + 7) / 8, 1);
	if (seen == NULL) {
		hdr->flags |= RL_OPAQUE;
		return;
	}
	uintptr_t base = (uintptr_t)addr;
	maps[nmaps].base = base;
	maps[nmaps].size = len;
	maps[nmaps].image = (unsigned)image;
	maps[nmaps].seen = seen;
	nmaps++;
	if (base < lo)
		lo = base;
	if (base + len > hi)
		hi = base + len;
	hdr->mapped |= 1u << image;
	cc_lazy_install(on_load, on_store);
}

/* cc_readlog_opaque -- libpmemobj opened PATH: if it is an image, its reads are not seen */
void cc_readlog_opaque(const char *path)
{
	if (image_of(path) >= 0)
		hdr->flags |= RL_OPAQUE;
}

/* in_child -- a forked child's accesses are not this log's (internal) */
static void in_child(void)
{
	forked = 1;
}

/* readlog_start -- open $CRASHCHECK_READ_LOG.PID before main (internal) */
__attribute__((constructor(103)))
static void readlog_start(void)
{
	const char *path = getenv("CRASHCHECK_READ_LOG");
	const char *list = getenv("CRASHCHECK_READ_IMAGES");
	if (path == NULL || *path == '\0' || list == NULL)
		return;
	char name[4200];
	snprintf(name, sizeof(name), "%s.%ld", path, (long)getpid());
	int fd = open(name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;               /* no log: the harness takes the reads as not seen */
	size_t size = sizeof(struct rl_header) + RL_CAP * sizeof(struct rl_rec);
	void *p = ftruncate(fd, (off_t)size) == 0
		? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
	close(fd);
	if (p == MAP_FAILED)
		return;
	hdr = p;
	recs = (struct rl_rec *)(hdr + 1);
	for (const char *s = list; *s && nimages < RL_MAX_IMAGES;) {
		const char *e = strchr(s, '\n');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		char file[4096];
		struct stat st;
		if (n && n < sizeof(file)) {
			memcpy(file, s, n);
			file[n] = '\0';
			if (stat(file, &st) == 0) {
				images[nimages].dev = st.st_dev;
				images[nimages].ino = st.st_ino;
			}
		}
		nimages++;            /* (one that cannot be stated keeps its place: it matches nothing) */
		s += n + (e != NULL);
	}
	hdr->version = RL_VERSION;
	hdr->flags = &__cc_module_check_loads != NULL ? RL_CHECK_LOADS : 0;
	hdr->cap = RL_CAP;
	__atomic_store_n(&hdr->magic, RL_MAGIC, __ATOMIC_RELEASE);
	pthread_atfork(NULL, NULL, in_child);
}
