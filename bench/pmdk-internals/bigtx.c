/*
 * bigtx.c -- one libpmemobj transaction of many operations (pmem/pmdk#5461: a crash inside
 * pmemobj_tx_commit of a transaction of at least 2052 operations), ours, with a checker that
 * knows what the transaction promised and that the pool still works after recovery
 * (bench/pmdk-internals/run; docs/tracing.md "libpmemobj")
 *
 *   bigtx create POOL N    a fresh pool with an array of N slots, all empty (run untraced)
 *   bigtx run POOL N       one transaction of N operations, each allocating an item, setting
 *                          it, and adding and pointing one slot at it; the commit is marked
 *                          `commit.BEGIN` / `commit.END` (pmreorder's markers) so that
 *                          `crashcheck run -x commit=ReorderFull` checks the crash points of the
 *                          commit only (the rest is a plain transaction, N operations long)
 *   bigtx check POOL N     exit 0 when the pool is consistent: pmemobj_check passes, the slots
 *                          are all empty or all point at allocated items holding their index
 *                          (and the root says which), and a second transaction of N undo
 *                          snapshots, aborted, leaves every slot as it was (the undo log that
 *                          recovery left behind must still hold every snapshot)
 *
 * Each operation adds 128 bytes of its slot (more than libpmemobj's range cache takes, 64), and
 * 64 bytes never added lie between two slots, so that no two added ranges merge and each
 * operation is one undo log entry of its own: the undo log outgrows its first buffer (the lane's)
 * after a few dozen operations.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpmemobj.h>
#include <valgrind/valgrind.h>

/* pmemcheck's EMIT_LOG client request (valgrind.h's macro, pmemcheck's request number): the
 * markers crashcheck-cc's pass passes to the runtime */
#define PMC_EMIT_LOG (VG_USERREQ_TOOL_BASE('P', 'C') + 30)
#define MARK(text) VALGRIND_DO_CLIENT_REQUEST_STMT(PMC_EMIT_LOG, (text), 0, 0, 0, 0)

#define LAYOUT "bigtx"
#define TYPE_ARRAY 200
#define TYPE_ITEM 201
#define MAXN 100000

#define SNAP 128                        /* bytes added per slot: above the range cache's 64 */

struct slot {
	PMEMoid item;                   /* the item of this index, or OID_NULL */
	uint64_t index;
	char pad[SNAP - 24];
	char gap[64];                   /* never added: keeps the slots' ranges apart */
};

struct item {
	uint64_t index;
	uint64_t magic;
};

struct root {
	uint64_t n;
	uint64_t done;                  /* the transaction committed */
	PMEMoid array;                  /* n slots */
};

#define ITEM_MAGIC 0x6269677478ull    /* "bigtx" */

static int fail(const char *what)
{
	fprintf(stderr, "bigtx: error: %s: %s\n", what, pmemobj_errormsg());
	return 1;
}

static struct root *root_of(PMEMobjpool *pop)
{
	return pmemobj_direct(pmemobj_root(pop, sizeof(struct root)));
}

static int create(const char *path, uint64_t n)
{
	PMEMobjpool *pop = pmemobj_create(path, LAYOUT, 64u << 20, 0644);
	if (pop == NULL)
		return fail("cannot create the pool");
	struct root *r = root_of(pop);
	if (pmemobj_zalloc(pop, &r->array, n * sizeof(struct slot), TYPE_ARRAY))
		return fail("cannot allocate the array");
	r->n = n;
	pmemobj_persist(pop, &r->n, sizeof(r->n));
	pmemobj_close(pop);
	return 0;
}

static int run(PMEMobjpool *pop)
{
	struct root *r = root_of(pop);
	struct slot *s = pmemobj_direct(r->array);
	if (pmemobj_tx_begin(pop, NULL, TX_PARAM_NONE) != 0)
		return fail("cannot begin");
	for (uint64_t i = 0; i < r->n; i++) {
		PMEMoid it = pmemobj_tx_alloc(sizeof(struct item), TYPE_ITEM);
		if (OID_IS_NULL(it) || pmemobj_tx_add_range_direct(&s[i], SNAP) != 0) {
			pmemobj_tx_end();
			return fail("operation failed");
		}
		struct item *p = pmemobj_direct(it);
		p->index = i;
		p->magic = ITEM_MAGIC;
		s[i].item = it;
		s[i].index = i;
	}
	if (pmemobj_tx_add_range_direct(&r->done, sizeof(r->done)) != 0) {
		pmemobj_tx_end();
		return fail("cannot add the root");
	}
	r->done = 1;
	MARK("commit.BEGIN");
	pmemobj_tx_commit();
	int rc = pmemobj_tx_end();
	MARK("commit.END");
	return rc == 0 ? 0 : fail("the transaction did not commit");
}

/* allocated -- OID is an allocated item (the object iterator finds it with its type) */
static int allocated(PMEMobjpool *pop, PMEMoid oid)
{
	PMEMoid o;
	POBJ_FOREACH(pop, o) {
		if (o.off == oid.off)
			return pmemobj_type_num(o) == TYPE_ITEM;
	}
	return 0;
}

static int check(const char *path, uint64_t n)
{
	int ok = pmemobj_check(path, LAYOUT);
	if (ok != 1) {
		fprintf(stderr, "bigtx: error: pmemobj_check says the pool is %s\n",
			ok == 0 ? "inconsistent" : "unreadable");
		return 1;
	}
	PMEMobjpool *pop = pmemobj_open(path, LAYOUT);
	if (pop == NULL)
		return fail("cannot open the pool");
	struct root *r = root_of(pop);
	struct slot *s = pmemobj_direct(r->array);
	int bad = r->n != n;
	for (uint64_t i = 0; i < n && !bad; i++) {
		if (r->done) {
			struct item *p = pmemobj_direct(s[i].item);
			if (s[i].index != i || p == NULL || p->index != i || p->magic != ITEM_MAGIC) {
				fprintf(stderr, "bigtx: error: committed slot %llu is wrong\n", (unsigned long long)i);
				bad = 1;
			}
		} else if (!OID_IS_NULL(s[i].item) || s[i].index != 0) {
			fprintf(stderr, "bigtx: error: slot %llu of an uncommitted transaction is set\n",
				(unsigned long long)i);
			bad = 1;
		}
	}
	/* one item looked up by the iterator (the whole walk for all N costs N^2) */
	if (!bad && r->done && !allocated(pop, s[n - 1].item)) {
		fprintf(stderr, "bigtx: error: the last committed item is not allocated\n");
		bad = 1;
	}
	/* the pool must still work: a transaction of n snapshots, aborted, restores them all */
	if (!bad) {
		struct slot *before = malloc(n * sizeof(*before));
		if (before == NULL)
			return fail("out of memory");
		memcpy(before, s, n * sizeof(*before));
		TX_BEGIN(pop) {
			for (uint64_t i = 0; i < n; i++) {
				pmemobj_tx_add_range_direct(&s[i], SNAP);
				memset(&s[i], 0x5a, SNAP);
			}
			pmemobj_tx_abort(ECANCELED);
		} TX_END
		for (uint64_t i = 0; i < n && !bad; i++) {
			if (memcmp(&s[i], &before[i], SNAP) != 0) {
				fprintf(stderr, "bigtx: error: an aborted transaction did not restore slot %llu "
					"after recovery\n", (unsigned long long)i);
				bad = 1;
			}
		}
		free(before);
	}
	pmemobj_close(pop);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: bigtx create|run|check POOL N\n");
		return 2;
	}
	char *end;
	unsigned long long n = strtoull(argv[3], &end, 10);
	if (*end != '\0' || n == 0 || n > MAXN) {
		fprintf(stderr, "bigtx: error: N must be 1..%d\n", MAXN);
		return 2;
	}
	if (strcmp(argv[1], "create") == 0)
		return create(argv[2], n);
	if (strcmp(argv[1], "check") == 0)
		return check(argv[2], n);
	if (strcmp(argv[1], "run") != 0) {
		fprintf(stderr, "bigtx: unknown command %s\n", argv[1]);
		return 2;
	}
	PMEMobjpool *pop = pmemobj_open(argv[2], LAYOUT);
	if (pop == NULL)
		return fail("cannot open the pool");
	int rc = run(pop);
	pmemobj_close(pop);
	return rc;
}
