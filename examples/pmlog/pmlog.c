/*
 * pmlog.c -- a persistent append-only log on libpmem, with its own checker: crashcheck's example of
 * program mode (`crashcheck run`, examples/pmlog/README.md).  Our own code, written for crashcheck.
 *
 *   pmlog append POOL N [SEED]   create POOL and append N records (values drawn from SEED)
 *   pmlog check POOL             exit 0 when POOL is consistent; else say why and exit 1
 *   pmlog recover POOL           repair POOL after a crash: publish only the whole records
 *
 * Layout: a header (magic, count) in the first cache line, then 32-byte records (key, value,
 * checksum, pad).  The count says how many records are published; every published record must
 * carry its checksum.  An append writes the record and persists it, then bumps the count and
 * persists that: a crash anywhere leaves a log whose published records are whole.
 *
 * Seeded ordering bug (-DPMLOG_BUG): the count is bumped and persisted before the record is, so a
 * crash between the two publishes a record that never reached PM.
 *
 * Operations are marked the way pmreorder users mark them: `append.BEGIN` / `append.END` through
 * pmemcheck's EMIT_LOG client request (valgrind.h's macro; the request number is pmemcheck's
 * VG_USERREQ__PMC_EMIT_LOG, spelled out so that pmemcheck.h is not needed).  crashcheck-cc's pass
 * and Valgrind's pmemcheck both read them; natively they cost one inline check.
 */
#include <libpmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/valgrind.h>

#define PMC_EMIT_LOG (VG_USERREQ_TOOL_BASE('P', 'C') + 30)
#define MARK(text) VALGRIND_DO_CLIENT_REQUEST_STMT(PMC_EMIT_LOG, (text), 0, 0, 0, 0)

#define POOL_SIZE (16 * 1024)
#define MAGIC 0x474f4c4d50ull           /* "PMLOG" */

struct record {
	uint64_t key, value, sum, pad;
};

struct header {
	uint64_t magic;
	uint64_t count;
	uint64_t pad[6];                  /* the records start on the next cache line */
};

#define CAP ((POOL_SIZE - sizeof(struct header)) / sizeof(struct record))

static uint64_t checksum(uint64_t key, uint64_t value)
{
	return (key * 0x9E3779B97F4A7C15ull) ^ value ^ 0xC0FFEEull;
}

static int append(const char *path, unsigned long n, unsigned long seed)
{
	size_t mapped;
	int is_pmem;
	char *pool = pmem_map_file(path, POOL_SIZE, PMEM_FILE_CREATE, 0644, &mapped, &is_pmem);
	if (!pool) {
		perror(path);
		return 2;
	}
	struct header *h = (struct header *)pool;
	struct record *r = (struct record *)(pool + sizeof(struct header));
	MARK("create.BEGIN");
	h->count = 0;
	pmem_persist(&h->count, sizeof(h->count));
	h->magic = MAGIC;
	pmem_persist(&h->magic, sizeof(h->magic));
	MARK("create.END");
	if (n > CAP)
		n = CAP;
	uint64_t x = seed * 2654435761u + 1;
	for (unsigned long i = 0; i < n; i++) {
		MARK("append.BEGIN");
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		struct record *rec = &r[h->count];
		rec->key = i + 1;
		rec->value = x >> 16;
		rec->sum = checksum(rec->key, rec->value);
#ifdef PMLOG_BUG
		h->count++;                                /* BUG: published before the record persists */
		pmem_persist(&h->count, sizeof(h->count));
		pmem_persist(rec, sizeof(*rec));
#else
		pmem_persist(rec, sizeof(*rec));
		h->count++;
		pmem_persist(&h->count, sizeof(h->count));
#endif
		MARK("append.END");
	}
	pmem_unmap(pool, mapped);
	return 0;
}

/* map_pool -- the pool file PATH mapped whole (its length in *MAPPED), or NULL having said why */
static char *map_pool(const char *path, size_t *mapped)
{
	int is_pmem;
	char *pool = pmem_map_file(path, 0, 0, 0, mapped, &is_pmem);
	if (!pool)
		perror(path);
	return pool;
}

/* recover -- the count is cut back to the records that are whole (what a careful open path would
 * do); with it even the seeded bug leaves a consistent log, at the price of appends it loses */
static int recover(const char *path)
{
	size_t mapped;
	char *pool = map_pool(path, &mapped);
	if (!pool)
		return 2;
	struct header *h = (struct header *)pool;
	struct record *r = (struct record *)(pool + sizeof(struct header));
	if (h->magic == MAGIC) {
		uint64_t n = 0;
		while (n < h->count && n < CAP && r[n].key == n + 1 && r[n].sum == checksum(r[n].key, r[n].value))
			n++;
		if (n != h->count) {
			h->count = n;
			pmem_persist(&h->count, sizeof(h->count));
		}
	}
	pmem_unmap(pool, mapped);
	return 0;
}

/* check_pool -- 0 when the mapped POOL is consistent; else say why and 1 */
static int check_pool(const char *pool)
{
	const struct header *h = (const struct header *)pool;
	const struct record *r = (const struct record *)(pool + sizeof(struct header));
	if (h->magic == 0 && h->count == 0)
		return 0;                         /* a crash before the pool was made: empty */
	if (h->magic != MAGIC) {
		fprintf(stderr, "bad magic %#llx\n", (unsigned long long)h->magic);
		return 1;
	}
	if (h->count > CAP) {
		fprintf(stderr, "count %llu is past the capacity %zu\n", (unsigned long long)h->count, CAP);
		return 1;
	}
	for (uint64_t i = 0; i < h->count; i++) {
		if (r[i].key != i + 1 || r[i].sum != checksum(r[i].key, r[i].value)) {
			fprintf(stderr, "record %llu of %llu is not whole (key %llu, checksum %#llx)\n",
				(unsigned long long)i, (unsigned long long)h->count,
				(unsigned long long)r[i].key, (unsigned long long)r[i].sum);
			return 1;
		}
	}
	return 0;
}

/* check -- mapped, not read into a buffer: built with crashcheck-cc, the checker then tells
 * crashcheck what it reads of the image (`crashcheck run --strategy lazy`) */
static int check(const char *path)
{
	size_t mapped;
	char *pool = map_pool(path, &mapped);
	if (!pool)
		return 2;
	int r = 1;
	if (mapped != POOL_SIZE)
		fprintf(stderr, "%s: %zu bytes, not a pool of %d\n", path, mapped, POOL_SIZE);
	else
		r = check_pool(pool);
	pmem_unmap(pool, mapped);
	return r;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "append") == 0)
		return append(argv[2], strtoul(argv[3], NULL, 0), argc > 4 ? strtoul(argv[4], NULL, 0) : 0);
	if (argc == 3 && strcmp(argv[1], "check") == 0)
		return check(argv[2]);
	if (argc == 3 && strcmp(argv[1], "recover") == 0)
		return recover(argv[2]);
	fprintf(stderr, "usage: %s append POOL N [SEED] | check POOL | recover POOL\n", argv[0]);
	return 2;
}
