// adapter.cpp -- cowmap's Map behind the tree adapter API, in C++ (examples/cowmap)
//
// cc_tree.h is C with extern "C" guards: including it first gives the `cc_adapter` table below
// C linkage, which the driver (C) looks up.
#include "cc_tree.h"

#include <cstring>

#include "cowmap.hpp"

using cowmap::Map;
using cowmap::Status;

namespace {

std::uint64_t key_of(const std::uint8_t *k)
{
	std::uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | k[i];
	return v;
}

int status(Status st)
{
	switch (st) {
	case Status::ok: return CC_OK;
	case Status::exists: return CC_EXISTS;
	case Status::notfound: return CC_NOTFOUND;
	case Status::nospace: return CC_NOSPACE;
	}
	return CC_ERROR;
}

Map *map(void *t) { return static_cast<Map *>(t); }

void *a_create(void *, size_t) { return Map::create(); }
void *a_open(void *, size_t) { return Map::open(); }
int a_recover(void *t) { return t == nullptr; }

int a_insert(void *t, const std::uint8_t *key, size_t klen, const std::uint8_t *val, size_t vlen)
{
	std::uint64_t v;
	if (klen != 8 || vlen != 8)
		return CC_ERROR;
	std::memcpy(&v, val, 8);
	return status(map(t)->insert(key_of(key), v));
}

int a_update(void *t, const std::uint8_t *key, size_t klen, const std::uint8_t *val, size_t vlen)
{
	std::uint64_t v;
	if (klen != 8 || vlen != 8)
		return CC_ERROR;
	std::memcpy(&v, val, 8);
	return status(map(t)->update(key_of(key), v));
}

int a_remove(void *t, const std::uint8_t *key, size_t klen)
{
	return klen == 8 ? status(map(t)->remove(key_of(key))) : CC_ERROR;
}

int a_lookup(void *t, const std::uint8_t *key, size_t klen, std::uint8_t *val, size_t *vlen)
{
	std::uint64_t v;
	if (klen != 8 || !map(t)->lookup(key_of(key), &v))
		return CC_NOTFOUND;
	std::memcpy(val, &v, 8);
	*vlen = 8;
	return CC_OK;
}

void a_dump(void *t, cc_kv_fn fn, void *ctx)
{
	map(t)->each(0, [&](const cowmap::Pair &p) {
		std::uint8_t k[8];
		std::uint64_t v = p.key;
		for (int i = 7; i >= 0; i--, v >>= 8)
			k[i] = static_cast<std::uint8_t>(v);
		return fn(ctx, k, 8, reinterpret_cast<const std::uint8_t *>(&p.value), 8) != 0;
	});
}

size_t a_check(void *t, cc_violation_fn fn, void *ctx)
{
	return map(t)->check(cc_violations{fn, ctx});   // each named by its line in cowmap.hpp
}

void a_reachable(void *t, cc_obj_fn fn, void *ctx)
{
	const cowmap::Version *v = map(t)->version();
	fn(ctx, v, Map::bytes(v));
}

}  // namespace

const struct cc_adapter cc_adapter = {
	.name = "cowmap",
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
};
