/*
 * pmbank.c -- accounts in a libpmemobj pool, money moved between them in transactions, and a
 * checker: crashcheck's libpmemobj example of program mode (`crashcheck run`,
 * examples/pmbank/README.md).  Our own code, written for crashcheck.
 *
 *   pmbank run POOL N [SEED]   create POOL (16 accounts of 1000) and make N transfers
 *   pmbank check POOL          open POOL (libpmemobj rolls back an unfinished transaction), exit 0
 *                              when the money adds up and no balance is negative; else say why, 1
 *
 * A transfer snapshots both balances (pmemobj_tx_add_range_direct) and changes them inside one
 * transaction, so a crash anywhere leaves either both changes or neither.
 *
 * Seeded bug (-DPMBANK_BUG): the destination is changed without being added to the transaction.
 * libpmemobj neither rolls it back after a crash inside the transaction nor flushes it at commit,
 * so a crash can leave the money counted twice, or lost.
 */
#include <libpmemobj.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/valgrind.h>

#define PMC_EMIT_LOG (VG_USERREQ_TOOL_BASE('P', 'C') + 30)
#define MARK(text) VALGRIND_DO_CLIENT_REQUEST_STMT(PMC_EMIT_LOG, (text), 0, 0, 0, 0)

#define LAYOUT "pmbank"
#define ACCOUNTS 16
#define START 1000

struct bank {
	uint64_t made;                    /* 1 once the accounts were opened */
	int64_t balance[ACCOUNTS];
};

static int run(const char *path, unsigned long n, unsigned long seed)
{
	PMEMobjpool *pop = pmemobj_create(path, LAYOUT, PMEMOBJ_MIN_POOL, 0644);
	if (!pop) {
		fprintf(stderr, "%s: %s\n", path, pmemobj_errormsg());
		return 2;
	}
	struct bank *b = pmemobj_direct(pmemobj_root(pop, sizeof(struct bank)));
	MARK("open.BEGIN");
	TX_BEGIN(pop) {
		pmemobj_tx_add_range_direct(b, sizeof(*b));
		for (int i = 0; i < ACCOUNTS; i++)
			b->balance[i] = START;
		b->made = 1;
	} TX_END
	MARK("open.END");
	uint64_t x = seed * 2654435761u + 7;
	for (unsigned long t = 0; t < n; t++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		int from = (int)((x >> 20) % ACCOUNTS), to = (int)((x >> 40) % ACCOUNTS);
		int64_t amount = (int64_t)((x >> 8) % 100) + 1;
		if (from == to || b->balance[from] < amount)
			continue;
		MARK("transfer.BEGIN");
		TX_BEGIN(pop) {
			pmemobj_tx_add_range_direct(&b->balance[from], sizeof(int64_t));
#ifndef PMBANK_BUG
			pmemobj_tx_add_range_direct(&b->balance[to], sizeof(int64_t));
#endif
			b->balance[from] -= amount;
			b->balance[to] += amount;         /* with PMBANK_BUG: never added, never flushed */
		} TX_END
		MARK("transfer.END");
	}
	pmemobj_close(pop);
	return 0;
}

static int check(const char *path)
{
	PMEMobjpool *pop = pmemobj_open(path, LAYOUT);
	if (!pop) {
		/* a crash inside pmemobj_create leaves no pool: nothing was promised yet */
		fprintf(stderr, "%s: no pool (%s)\n", path, pmemobj_errormsg());
		return 0;
	}
	struct bank *b = pmemobj_direct(pmemobj_root(pop, sizeof(struct bank)));
	int bad = 0;
	if (b->made) {
		int64_t total = 0;
		for (int i = 0; i < ACCOUNTS; i++) {
			if (b->balance[i] < 0) {
				fprintf(stderr, "account %d has %lld\n", i, (long long)b->balance[i]);
				bad = 1;
			}
			total += b->balance[i];
		}
		if (total != (int64_t)ACCOUNTS * START) {
			fprintf(stderr, "the accounts hold %lld, not %lld\n", (long long)total,
				(long long)ACCOUNTS * START);
			bad = 1;
		}
	}
	pmemobj_close(pop);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "run") == 0)
		return run(argv[2], strtoul(argv[3], NULL, 0), argc > 4 ? strtoul(argv[4], NULL, 0) : 0);
	if (argc == 3 && strcmp(argv[1], "check") == 0)
		return check(argv[2]);
	fprintf(stderr, "usage: %s run POOL N [SEED] | check POOL\n", argv[0]);
	return 2;
}
