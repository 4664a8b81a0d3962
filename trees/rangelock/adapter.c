/*
 * adapter.c -- the range lock (rangelock.h) behind the adapter API (cc_tree.h)
 *
 * Not a map: the model is "range_lock" (specs/range_lock.py), driven through
 * the generic entry point with the operations `trylock S E` and
 * `release S E` (decimal u64, S <= E), results `ok` / `fail`.  The lock
 * lives in DRAM (no_pm): create/open ignore the pool, recover has nothing
 * to repair, so crash exploration does not apply; `dump_items` gives each
 * held range as two u64 cells [S, E].
 */
#include <stdio.h>
#include <string.h>
#include "cc_tree.h"
#include "rangelock.h"

#define RL_DRIVER_SEED 0x5eed003ull  /* fixed, so a history draws the same levels every run */

enum { OP_TRYLOCK, OP_RELEASE };

static const struct cc_op_decl rl_ops[] = {
	[OP_TRYLOCK] = {"trylock", "uu"},
	[OP_RELEASE] = {"release", "uu"},
	{NULL, NULL},
};

/* a_create -- a fresh, empty lock; the pool is ignored (no PM) */
static void *a_create(void *pool, size_t size)
{
	(void)pool;
	(void)size;
	struct rangelock *rl = rl_create(RL_DRIVER_SEED);
	if (!rl)
		fprintf(stderr, "rangelock: out of memory\n");
	return rl;
}

/* a_recover -- nothing survives in DRAM, nothing to repair */
static int a_recover(void *t)
{
	(void)t;
	return 0;
}

/* a_op -- trylock S E / release S E -> ok | fail */
static int a_op(void *t, const struct cc_generic_op *op, char *out, size_t outlen)
{
	uint64_t s = op->args[0].u, e = op->args[1].u;
	if (s > e) {
		fprintf(stderr, "rangelock: %s %llu %llu: the start is above the end\n", op->name,
			(unsigned long long)s, (unsigned long long)e);
		return CC_ERROR;
	}
	int r;
	switch (op->index) {
	case OP_TRYLOCK:
		r = rl_trylock(t, s, e);
		if (r < 0) {
			fprintf(stderr, "rangelock: out of memory\n");
			return CC_ERROR;
		}
		break;
	case OP_RELEASE:
		r = rl_release(t, s, e);
		break;
	default:
		return CC_ERROR;
	}
	snprintf(out, outlen, "%s", r ? "ok" : "fail");
	return CC_OK;
}

struct items {
	cc_item_fn fn;
	void *ctx;
};

/* put_range -- one held range as the cells [S, E] (internal) */
static int put_range(void *ctx, uint64_t start, uint64_t end)
{
	struct items *it = ctx;
	struct cc_arg cells[2] = {{.kind = CC_ARG_U64, .u = start}, {.kind = CC_ARG_U64, .u = end}};
	return it->fn(it->ctx, cells, 2);
}

/* a_dump_items -- every held range, in increasing start */
static void a_dump_items(void *t, cc_item_fn fn, void *ctx)
{
	struct items it = {fn, ctx};
	rl_foreach(t, put_range, &it);
}

/* a_check -- the skip list's invariants (rl_check) */
static size_t a_check(void *t, cc_violation_fn fn, void *ctx)
{
	return rl_check(t, fn, ctx);
}

static void a_close(void *t)
{
	rl_destroy(t);
}

const struct cc_adapter cc_adapter = {
	.name = "rangelock",
	.model = "range_lock",
	.no_pm = 1,
	.ops = rl_ops,
	.create = a_create,
	.open = a_create,
	.recover = a_recover,
	.op = a_op,
	.dump_items = a_dump_items,
	.check = a_check,
	.close = a_close,
	.threads = 1,      /* lock-free: safe from several threads */
};
