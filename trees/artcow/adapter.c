/*
 * adapter.c -- ART+CoW's cc_adapter: the shared ART engine with the CoW policy
 */
#include "cc_tree.h"
#include "artcow.h"

/* artcow_create -- format POOL and build an empty ART+CoW */
static void *
artcow_create(void *pool, size_t size)
{
	return art_create(pool, size, &artcow_ops);
}

/* artcow_open -- attach to a pool holding an ART+CoW */
static void *
artcow_open(void *pool, size_t size)
{
	return art_open(pool, size, &artcow_ops);
}

const struct cc_adapter cc_adapter = {
	.name = "artcow",
	.key_kind = CC_KEYS_U64,
	.value_size = ART_VAL_LEN,
	.create = artcow_create,
	.open = artcow_open,
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
