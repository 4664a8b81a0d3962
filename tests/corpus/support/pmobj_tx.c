/*
 * pmobj_tx.c -- libpmemobj under the pass (tests/unit/test_pmemobj_pass.py): a pool pmemobj_create maps
 * becomes region 0, the library's own stores reach the trace at their call's site, and a
 * transaction's added and allocated ranges are flushed at its commit while a store into a range
 * it never added is not.
 *
 * Usage: pmobj_tx POOL create   -- create, then the transactions below (op 0..2)
 *        pmobj_tx POOL open     -- open the pool again and change the added word (op 0)
 * Prints "pool ADDR" and the offsets of the root's words, for the test to find them.
 */
#include <libpmemobj.h>
#include <stdio.h>
#include <string.h>

#include <crashcheck.h>

struct root {
	uint64_t added;        /* changed inside a transaction that added it */
	uint64_t pad[7];
	uint64_t not_added;    /* changed inside a transaction that never added it (a bug) */
	uint64_t pad2[7];
	PMEMoid obj;           /* a transaction's allocation */
};

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int create = !strcmp(argv[2], "create");
	PMEMobjpool *pop = create ? pmemobj_create(argv[1], "pmobj_tx", PMEMOBJ_MIN_POOL, 0600) /* @create */
				  : pmemobj_open(argv[1], "pmobj_tx");                       /* @open */
	if (!pop) {
		fprintf(stderr, "pmobj_tx: %s\n", pmemobj_errormsg());
		return 1;
	}
	struct root *r = pmemobj_direct(pmemobj_root(pop, sizeof(struct root)));   /* @root */
	printf("pool %p added %#lx not_added %#lx\n", (void *)pop, (unsigned long)((char *)&r->added - (char *)pop),
	       (unsigned long)((char *)&r->not_added - (char *)pop));
	fflush(stdout);
	if (!create) {
		crashcheck_op_begin(0);
		TX_BEGIN(pop) {
			pmemobj_tx_add_range_direct(&r->added, 8);                 /* @reopen_add */
			r->added = 99;                                             /* @reopen_store */
		} TX_END
		crashcheck_op_end(0);
		pmemobj_close(pop);
		return 0;
	}
	crashcheck_op_begin(0);
	TX_BEGIN(pop) {
		pmemobj_tx_add_range_direct(&r->added, 8);                         /* @add */
		r->added = 7;                                                      /* @store_added */
		r->not_added = 8;                                                  /* @store_not_added */
	} TX_END                                                                   /* @commit */
	crashcheck_op_end(0);

	crashcheck_op_begin(1);
	TX_BEGIN(pop) {
		PMEMoid o = pmemobj_tx_alloc(64, 1);                               /* @alloc */
		*(uint64_t *)pmemobj_direct(o) = 0xabcd;                           /* @store_obj */
		pmemobj_tx_add_range_direct(&r->obj, sizeof(r->obj));              /* @add_obj */
		r->obj = o;                                                        /* @store_link */
	} TX_END
	crashcheck_op_end(1);

	crashcheck_op_begin(2);
	TX_BEGIN(pop) {
		pmemobj_tx_add_range_direct(&r->added, 8);                         /* @add_abort */
		r->added = 1000;                                                   /* @store_abort */
		pmemobj_tx_abort(ECANCELED);                                       /* @abort */
	} TX_END
	crashcheck_op_end(2);
	pmemobj_close(pop);
	return 0;
}
