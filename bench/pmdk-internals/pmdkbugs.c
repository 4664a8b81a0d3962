/*
 * pmdkbugs.c -- small libpmemobj programs of our own that use the API the way PMDK's published
 * crash-consistency bugs describe, each with a checker that knows what a committed transaction
 * promised (bench/pmdk-internals/run; docs/tracing.md "libpmemobj")
 *
 *   pmdkbugs create POOL              a fresh pool (run untraced, as `crashcheck run --setup`)
 *   pmdkbugs zalloc POOL N            N transactions, each zallocs a 304-byte object (and one of
 *                                     300 KiB: a huge chunk split) and records it in the root
 *                                     (pmem/pmdk#4945)
 *   pmdkbugs xfree-setup POOL         objects side by side, the first one freed (untraced, so
 *                                     the next open's allocation takes its place)
 *   pmdkbugs xfree POOL               in one transaction: an object allocated right before an
 *                                     existing one is freed again after the existing one was
 *                                     added and changed (pmem/pmdk#5613)
 *   pmdkbugs xfree POOL keep          the same without the free (the control: nothing to find)
 *   pmdkbugs check POOL               exit 0 when the pool is consistent with what committed
 *
 * The xfree scenario uses an allocation class without object headers, so that objects of one
 * run are adjacent and a range added on the second merges with the first's allocated range.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpmemobj.h>

#define LAYOUT "pmdkbugs"
#define SMALL 304
#define HUGE_SIZE (300u << 10)
#define MAXOBJ 64
#define TYPE_SMALL 100
#define TYPE_HUGE 101
#define TYPE_SLOT 102
#define SLOT 64
#define NSLOTS 8

struct root {
	uint64_t nsmall;                /* committed zalloc transactions */
	PMEMoid small[MAXOBJ];          /* their objects: zeroed, allocated */
	PMEMoid huge[MAXOBJ];
	uint64_t xfree_done;            /* the xfree transaction committed */
	uint64_t changed;               /* index of the slot object the xfree transaction changed */
	PMEMoid slot[NSLOTS];           /* objects of the header-less class */
};

static int fail(const char *what)
{
	fprintf(stderr, "pmdkbugs: error: %s: %s\n", what, pmemobj_errormsg());
	return 1;
}

static PMEMobjpool *open_pool(const char *path)
{
	PMEMobjpool *pop = pmemobj_open(path, LAYOUT);
	if (pop == NULL)
		fprintf(stderr, "pmdkbugs: error: cannot open %s: %s\n", path, pmemobj_errormsg());
	return pop;
}

static struct root *root_of(PMEMobjpool *pop)
{
	return pmemobj_direct(pmemobj_root(pop, sizeof(struct root)));
}

/* zalloc: the reporter's pattern, a zalloc in a transaction, recorded so the check can tell */
static int run_zalloc(PMEMobjpool *pop, int n)
{
	struct root *r = root_of(pop);
	for (int i = 0; i < n && i < MAXOBJ; i++) {
		int bad = 0;
		TX_BEGIN(pop) {
			pmemobj_tx_add_range_direct(r, sizeof(*r));
			r->small[i] = pmemobj_tx_zalloc(SMALL, TYPE_SMALL);
			r->huge[i] = pmemobj_tx_zalloc(HUGE_SIZE, TYPE_HUGE);
			r->nsmall = (uint64_t)i + 1;
		} TX_ONABORT {
			bad = 1;
		} TX_END
		if (bad)
			return fail("zalloc transaction aborted");
	}
	return 0;
}

/* headerless_class -- an allocation class of SLOT-byte units without headers (its id) */
static int headerless_class(PMEMobjpool *pop, unsigned *id)
{
	struct pobj_alloc_class_desc d;
	memset(&d, 0, sizeof(d));
	d.unit_size = SLOT;
	d.alignment = 0;
	d.units_per_block = 1024;
	d.header_type = POBJ_HEADER_NONE;
	if (pmemobj_ctl_set(pop, "heap.alloc_class.new.desc", &d) != 0)
		return fail("cannot register a header-less allocation class");
	*id = d.class_id;
	return 0;
}

static int setup_xfree(PMEMobjpool *pop)
{
	struct root *r = root_of(pop);
	unsigned id;
	if (headerless_class(pop, &id) != 0)
		return 1;
	/* objects side by side in one run (atomic allocations), then the first one freed */
	for (int i = 0; i < NSLOTS; i++) {
		if (pmemobj_xalloc(pop, &r->slot[i], SLOT, TYPE_SLOT, POBJ_CLASS_ID(id), NULL, NULL))
			return fail("cannot allocate");
		pmemobj_memset_persist(pop, pmemobj_direct(r->slot[i]), 'a', SLOT);
	}
	pmemobj_free(&r->slot[0]);
	return 0;
}

static int run_xfree(PMEMobjpool *pop, int free_it)
{
	struct root *r = root_of(pop);
	unsigned id;
	int bad = 0;
	if (headerless_class(pop, &id) != 0)
		return 1;
	/* the transaction of #5613: allocate (into the free place), add and change the object
	 * right after the new one (its range merges with the allocated range), free the new one */
	TX_BEGIN(pop) {
		PMEMoid fresh = pmemobj_tx_xalloc(SLOT, TYPE_SLOT, POBJ_CLASS_ID(id));
		int next = -1;
		for (int i = 1; i < NSLOTS; i++)
			if (r->slot[i].off == fresh.off + SLOT)
				next = i;
		if (next < 0) {
			fprintf(stderr, "pmdkbugs: error: no object right after the new one\n");
			pmemobj_tx_abort(EINVAL);
		}
		pmemobj_tx_add_range(r->slot[next], 0, SLOT);
		memset(pmemobj_direct(r->slot[next]), 'b', SLOT);
		if (free_it)
			pmemobj_tx_free(fresh);
		pmemobj_tx_add_range_direct(&r->xfree_done, 2 * sizeof(uint64_t));
		r->changed = (uint64_t)next;
		r->xfree_done = 1;
	} TX_ONABORT {
		bad = 1;
	} TX_END
	if (bad)
		return fail("xfree transaction aborted");
	return 0;
}

/* allocated -- whether OID is an allocated object of TYPE (found by the object iterator) */
static int allocated(PMEMobjpool *pop, PMEMoid oid, uint64_t type)
{
	PMEMoid o;
	POBJ_FOREACH(pop, o) {
		if (o.off == oid.off)
			return pmemobj_type_num(o) == type;
	}
	return 0;
}

static int all_bytes(const void *p, int c, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i] != c)
			return 0;
	return 1;
}

static int check(const char *path)
{
	int ok = pmemobj_check(path, LAYOUT);
	if (ok != 1) {
		fprintf(stderr, "pmdkbugs: error: pmemobj_check says the pool is %s\n",
			ok == 0 ? "inconsistent" : "unreadable");
		return 1;
	}
	PMEMobjpool *pop = open_pool(path);
	if (pop == NULL)
		return 1;
	struct root *r = root_of(pop);
	int bad = 0;
	for (uint64_t i = 0; i < r->nsmall && i < MAXOBJ && !bad; i++) {
		if (!allocated(pop, r->small[i], TYPE_SMALL) || !allocated(pop, r->huge[i], TYPE_HUGE)) {
			fprintf(stderr, "pmdkbugs: error: committed object %llu is not allocated\n",
				(unsigned long long)i);
			bad = 1;
		} else if (!all_bytes(pmemobj_direct(r->small[i]), 0, SMALL)) {
			fprintf(stderr, "pmdkbugs: error: zalloc'd object %llu is not zero\n",
				(unsigned long long)i);
			bad = 1;
		}
	}
	if (!bad && r->xfree_done) {
		uint64_t k = r->changed;
		if (k >= NSLOTS || OID_IS_NULL(r->slot[k]) ||
		    !all_bytes(pmemobj_direct(r->slot[k]), 'b', SLOT)) {
			fprintf(stderr, "pmdkbugs: error: the committed change of object %llu is lost\n",
				(unsigned long long)k);
			bad = 1;
		}
	}
	pmemobj_close(pop);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: pmdkbugs create|zalloc|xfree-setup|xfree|check POOL [N]\n");
		return 2;
	}
	const char *cmd = argv[1], *path = argv[2];
	if (strcmp(cmd, "check") == 0)
		return check(path);
	if (strcmp(cmd, "create") == 0) {
		PMEMobjpool *pop = pmemobj_create(path, LAYOUT, 16u << 20, 0644);
		if (pop == NULL)
			return fail("cannot create the pool");
		root_of(pop);
		pmemobj_close(pop);
		return 0;
	}
	PMEMobjpool *pop = open_pool(path);
	if (pop == NULL)
		return 1;
	int rc;
	if (strcmp(cmd, "zalloc") == 0)
		rc = run_zalloc(pop, argc > 3 ? atoi(argv[3]) : 1);
	else if (strcmp(cmd, "xfree-setup") == 0)
		rc = setup_xfree(pop);
	else if (strcmp(cmd, "xfree") == 0)
		rc = run_xfree(pop, !(argc > 3 && strcmp(argv[3], "keep") == 0));
	else {
		fprintf(stderr, "pmdkbugs: unknown command %s\n", cmd);
		rc = 2;
	}
	pmemobj_close(pop);
	return rc;
}
