// adapter.cpp -- bucketmap.hpp behind the tree adapter API (trees/common/cc_tree.h).
//
// The only file written for crashcheck.  No hook header and no operator new of its own: built
// with `crashcheck build bucketmap bucketmap.hpp --adapter adapter.cpp --pm-malloc`, the
// header's `new` and `delete` go to the pool, while this file's own allocations (the Map
// handle, the vector that sorts the dump) stay in DRAM.  cc_tree.h comes first: its
// extern "C" gives the `cc_adapter` table C linkage, which the driver looks up.
#include "cc_tree.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "pm_alloc.h"
#include "bucketmap.hpp"

namespace {

using bucketmap::Map;

Map *map(void *t) { return static_cast<Map *>(t); }

// The map's root slot is the first word of the pool's root area (zero in a fresh pool).
void *a_open(void *, size_t) { return new Map(static_cast<std::atomic<bucketmap::Table *> *>(pm_root())); }
void *a_create(void *pool, size_t size) { return a_open(pool, size); }

// Nothing to repair: every change is one 8-byte store.
int a_recover(void *) { return 0; }

int a_insert(void *t, const std::uint8_t *key, size_t, const std::uint8_t *val, size_t)
{
	std::uint64_t v;
	std::memcpy(&v, val, 8);
	return map(t)->insert(cc_key_u64(key), v) ? CC_OK : CC_EXISTS;
}

int a_update(void *t, const std::uint8_t *key, size_t, const std::uint8_t *val, size_t)
{
	std::uint64_t v;
	std::memcpy(&v, val, 8);
	return map(t)->update(cc_key_u64(key), v) ? CC_OK : CC_NOTFOUND;
}

int a_remove(void *t, const std::uint8_t *key, size_t)
{
	return map(t)->remove(cc_key_u64(key)) ? CC_OK : CC_NOTFOUND;
}

int a_lookup(void *t, const std::uint8_t *key, size_t, std::uint8_t *val, size_t *vlen)
{
	std::uint64_t v;
	if (!map(t)->lookup(cc_key_u64(key), &v))
		return CC_NOTFOUND;
	std::memcpy(val, &v, 8);
	*vlen = 8;
	return CC_OK;
}

// The driver wants key order; the map keeps it per bucket only.
void a_dump(void *t, cc_kv_fn fn, void *ctx)
{
	std::vector<std::pair<std::uint64_t, std::uint64_t>> all;
	map(t)->each([&](const bucketmap::Node &n) {
		all.emplace_back(n.key, n.value.load());
		return false;
	});
	std::sort(all.begin(), all.end());
	for (auto &[k, v] : all) {
		std::uint8_t kb[8];
		cc_u64_key(k, kb);
		fn(ctx, kb, 8, reinterpret_cast<const std::uint8_t *>(&v), 8);
	}
}

size_t a_check(void *t, cc_violation_fn fn, void *ctx)
{
	size_t broken = map(t)->check(cc_violations{fn, ctx});   // each named by its line in bucketmap.hpp
	// a pointer outside the pool survives no restart (a build without --pm-malloc, too)
	map(t)->each([&](const bucketmap::Node &n) {
		if (!pm_contains(&n))
			broken++, CC_VIOLATION(fn, ctx, "a node outside the pool");
		return false;
	});
	return broken;
}

void a_reachable(void *t, cc_obj_fn fn, void *ctx)
{
	const bucketmap::Table *tab = map(t)->table();
	fn(ctx, tab, sizeof *tab);
	if (tab->policy)
		fn(ctx, tab->policy, sizeof(bucketmap::MixPolicy));
	map(t)->each([&](const bucketmap::Node &n) {
		fn(ctx, &n, sizeof n);
		return false;
	});
}

void a_allocated(void *, cc_obj_fn fn, void *ctx) { pm_allocated(fn, ctx); }
void a_close(void *t) { delete map(t); }

}  // namespace

const struct cc_adapter cc_adapter = {
	.name = "bucketmap",
	.key_kind = CC_KEYS_U64,
	.value_size = 8,
	.create = a_create,
	.open = a_open,
	.recover = a_recover,
	.insert = a_insert,
	.update = a_update,
	.remove = a_remove,
	.lookup = a_lookup,
	.dump = a_dump,
	.check = a_check,
	.reachable = a_reachable,
	.allocated = a_allocated,
	.close = a_close,
};
