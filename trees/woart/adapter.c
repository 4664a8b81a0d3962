/*
 * adapter.c -- WOART's cc_adapter: the shared ART engine with WOART's policy
 */
#include "cc_tree.h"
#include "woart.h"

/* woart_create -- format POOL and build an empty WOART */
static void *
woart_create(void *pool, size_t size)
{
	return art_create(pool, size, &woart_ops);
}

/* woart_open -- attach to a pool holding a WOART */
static void *
woart_open(void *pool, size_t size)
{
	return art_open(pool, size, &woart_ops);
}

const struct cc_adapter cc_adapter = {
	.name = "woart",
	.key_kind = CC_KEYS_U64,
	.value_size = ART_VAL_LEN,
	.create = woart_create,
	.open = woart_open,
	.recover = art_recover,
	.insert = art_insert,
	.update = art_update,
	.remove = art_delete,
	.lookup = art_lookup,
	.scan = art_scan,
	.dump = art_dump,
	.check = art_check,
	.reachable = art_reachable,
	.allocated = art_allocated,
	.close = art_close,
};
