// adapter.cpp -- cppmap's SortedList behind the tree adapter API, in C++
//
// cc_tree.h is C with extern "C" guards: including it first gives the
// `cc_adapter` table below C linkage, which the driver (C) looks up.  The
// table's members are named in declaration order (C++20 designated
// initializers).
#include "cc_tree.h"

#include <cstring>

#include "pm_alloc.h"
#include "sorted_list.hpp"

using cppmap::SortedList;
using cppmap::Status;

namespace {

std::uint64_t key_of(const std::uint8_t *k)
{
	std::uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | k[i];
	return v;
}

void key_bytes(std::uint64_t v, std::uint8_t *k)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		k[i] = static_cast<std::uint8_t>(v);
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

SortedList *list(void *t) { return static_cast<SortedList *>(t); }

void *a_create(void *, size_t) { return SortedList::create(); }

// a crash before the head was published leaves none: start a fresh list
void *a_open(void *, size_t)
{
	SortedList *l = SortedList::open();
	return l ? l : SortedList::create();
}

int a_recover(void *t) { return t == nullptr; }

int a_insert(void *t, const std::uint8_t *key, size_t klen, const std::uint8_t *val, size_t vlen)
{
	std::uint64_t v;
	if (klen != 8 || vlen != 8)
		return CC_ERROR;
	std::memcpy(&v, val, 8);
	return status(list(t)->insert(key_of(key), v));
}

int a_update(void *t, const std::uint8_t *key, size_t klen, const std::uint8_t *val, size_t vlen)
{
	std::uint64_t v;
	if (klen != 8 || vlen != 8)
		return CC_ERROR;
	std::memcpy(&v, val, 8);
	return status(list(t)->update(key_of(key), v));
}

int a_remove(void *t, const std::uint8_t *key, size_t klen)
{
	return klen == 8 ? status(list(t)->remove(key_of(key))) : CC_ERROR;
}

int a_lookup(void *t, const std::uint8_t *key, size_t klen, std::uint8_t *val, size_t *vlen)
{
	std::uint64_t v;
	if (klen != 8 || !list(t)->lookup(key_of(key), &v))
		return CC_NOTFOUND;
	std::memcpy(val, &v, 8);
	*vlen = 8;
	return CC_OK;
}

size_t a_scan(void *t, const std::uint8_t *key, size_t klen, size_t count, cc_kv_fn fn, void *ctx)
{
	size_t seen = 0;
	if (!count)
		return 0;
	list(t)->scan(klen == 8 ? key_of(key) : 0, [&](const cppmap::Node &n) {
		std::uint8_t k[8];
		key_bytes(n.key, k);
		seen++;
		return fn(ctx, k, 8, reinterpret_cast<const std::uint8_t *>(&n.value), 8) != 0 || seen == count;
	});
	return seen;
}

void a_dump(void *t, cc_kv_fn fn, void *ctx)
{
	std::uint8_t zero[8] = {};
	a_scan(t, zero, 8, static_cast<size_t>(-1), fn, ctx);
}

size_t a_check(void *t, cc_violation_fn fn, void *ctx)
{
	return list(t)->check([&](const char *text) { fn(ctx, text); });
}

void a_reachable(void *t, cc_obj_fn fn, void *ctx)
{
	list(t)->nodes([&](const void *obj, std::size_t size) { fn(ctx, obj, size); });
}

void a_allocated(void *, cc_obj_fn fn, void *ctx) { pm_allocated(fn, ctx); }

void a_close(void *t) { delete list(t); }

}  // namespace

const struct cc_adapter cc_adapter = {
	.name = "cppmap",
	.key_kind = CC_KEYS_U64,
	.value_size = 8,
	.create = a_create,
	.open = a_open,
	.recover = a_recover,
	.insert = a_insert,
	.update = a_update,
	.remove = a_remove,
	.lookup = a_lookup,
	.scan = a_scan,
	.dump = a_dump,
	.check = a_check,
	.reachable = a_reachable,
	.allocated = a_allocated,
	.close = a_close,
};
