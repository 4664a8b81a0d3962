/*
 * pmpair.c -- two threads append to one persistent log on libpmem: crashcheck's example of a bug
 * that needs both a crash and an interleaving (`crashcheck run --schedules N`,
 * examples/pmpair/README.md).  Our own code, written for crashcheck.
 *
 *   pmpair append POOL N   create POOL; two threads append N records each
 *   pmpair check POOL      exit 0 when every record the count publishes is whole; else say why, exit 1
 *
 * Each append reserves a slot with an atomic counter in DRAM, writes and persists its record
 * there, then publishes it by raising the count in PM to slot + 1.  Correctly, a thread waits
 * until the count reaches its slot, so the count never covers a record that is not yet durable.
 *
 * Seeded bug (-DPMPAIR_BUG): the count is raised to slot + 1 at once (a compare-and-swap to the
 * larger value).  Run one thread after the other it is harmless; but when thread 1 reserves slot 0
 * and thread 2 reserves slot 1, writes, persists and publishes first, the count covers slot 0 before
 * thread 1 wrote it, and a crash then leaves a count over a missing record.
 */
#include <libpmem.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/valgrind.h>

#define PMC_EMIT_LOG (VG_USERREQ_TOOL_BASE('P', 'C') + 30)
#define MARK(text) VALGRIND_DO_CLIENT_REQUEST_STMT(PMC_EMIT_LOG, (text), 0, 0, 0, 0)

#define POOL_SIZE (16 * 1024)
#define MAGIC 0x52494150ull               /* "PAIR" */
#define THREADS 2

struct record {
	uint64_t key, value, sum, pad;
};

struct header {
	uint64_t magic;
	_Atomic uint64_t count;
	uint64_t pad[6];
};

#define CAP ((POOL_SIZE - sizeof(struct header)) / sizeof(struct record))

static struct header *h;
static struct record *r;
static _Atomic uint64_t next_slot;        /* DRAM: slots handed out */
static unsigned long per_thread;

static uint64_t checksum(uint64_t key, uint64_t value)
{
	return (key * 0x9E3779B97F4A7C15ull) ^ value ^ 0xC0FFEEull;
}

static void publish(uint64_t slot)
{
#ifdef PMPAIR_BUG
	uint64_t c = atomic_load(&h->count);
	while (c < slot + 1 && !atomic_compare_exchange_weak(&h->count, &c, slot + 1))
		;                                  /* BUG: covers lower slots not yet durable */
#else
	while (atomic_load(&h->count) != slot)
		;                                  /* wait for the slots below ours */
	atomic_store(&h->count, slot + 1);
#endif
	pmem_persist(&h->count, sizeof(h->count));
}

static void *worker(void *arg)
{
	uint64_t id = (uintptr_t)arg;
	for (unsigned long i = 0; i < per_thread; i++) {
		MARK("append.BEGIN");
		uint64_t slot = atomic_fetch_add(&next_slot, 1);
		r[slot].key = slot + 1;
		r[slot].value = id * 1000 + i;
		r[slot].sum = checksum(r[slot].key, r[slot].value);
		pmem_persist(&r[slot], sizeof(r[slot]));
		publish(slot);
		MARK("append.END");
	}
	return NULL;
}

static int append(const char *path, unsigned long n)
{
	size_t mapped;
	int is_pmem;
	char *pool = pmem_map_file(path, POOL_SIZE, PMEM_FILE_CREATE, 0644, &mapped, &is_pmem);
	if (!pool) {
		perror(path);
		return 2;
	}
	h = (struct header *)pool;
	r = (struct record *)(pool + sizeof(struct header));
	atomic_store(&h->count, 0);
	pmem_persist(&h->count, sizeof(h->count));
	h->magic = MAGIC;
	pmem_persist(&h->magic, sizeof(h->magic));
	per_thread = n * THREADS > CAP ? CAP / THREADS : n;
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	pmem_unmap(pool, mapped);
	return 0;
}

static int check(const char *path)
{
	static char pool[POOL_SIZE];
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return 2;
	}
	size_t got = fread(pool, 1, sizeof(pool), f);
	fclose(f);
	if (got != sizeof(pool)) {
		fprintf(stderr, "%s: %zu bytes, not a pool of %d\n", path, got, POOL_SIZE);
		return 1;
	}
	struct header *ph = (struct header *)pool;
	struct record *pr = (struct record *)(pool + sizeof(struct header));
	uint64_t count = atomic_load(&ph->count);
	if (ph->magic == 0 && count == 0)
		return 0;                         /* a crash before the pool was made: empty */
	if (ph->magic != MAGIC) {
		fprintf(stderr, "bad magic %#llx\n", (unsigned long long)ph->magic);
		return 1;
	}
	if (count > CAP) {
		fprintf(stderr, "count %llu is past the capacity %zu\n", (unsigned long long)count, CAP);
		return 1;
	}
	for (uint64_t i = 0; i < count; i++) {
		if (pr[i].key != i + 1 || pr[i].sum != checksum(pr[i].key, pr[i].value)) {
			fprintf(stderr, "record %llu of %llu is not whole (key %llu)\n", (unsigned long long)i,
				(unsigned long long)count, (unsigned long long)pr[i].key);
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "append") == 0)
		return append(argv[2], strtoul(argv[3], NULL, 0));
	if (argc == 3 && strcmp(argv[1], "check") == 0)
		return check(argv[2]);
	fprintf(stderr, "usage: %s append POOL N | check POOL\n", argv[0]);
	return 2;
}
