// cowmap.hpp -- a small header-only persistent map in C++ that copies a version on every change
// (examples/cowmap; issue 50)
//
// The map is one sorted array of pairs, a version, in the pool; the pool's root points at it.
// Every insert and delete builds a new version (the old pairs with the change), persists it and
// commits it by one 8-byte store of the root pointer, then frees the old one; an update writes
// the 8-byte value in place.  A version has room for 12 pairs, then 28, 60, 124 and 252: the
// insert that finds a version full copies into the next size (the capacity points at 12, 28,
// 60 and 124 keys), and a delete that leaves a version at most a quarter full copies into the
// size below.  Plain fuzz histories hold at most 48 keys, so the growth into 124 pairs (the
// 61st key) is reached only through its capacity point.  A crash between building a version
// and committing it, or between committing and freeing the old one, leaves one version
// allocated and unreachable: the expected leak of expect.json.
//
// Seeded bug (bugs.json): COWMAP_BIG_PUBLISH_FIRST commits a version of 124 pairs or more
// before persisting it (as if a big copy were durable on its own).
#ifndef COWMAP_HPP
#define COWMAP_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "persist.h"
#include "pm_alloc.h"

namespace cowmap {

enum class Status { ok, exists, notfound, nospace };

struct Pair {
	std::uint64_t key;
	std::uint64_t value;
};

struct Version {
	std::uint64_t cap;              // pairs it has room for: 12, 28, 60, 124 or 252
	std::uint64_t n;                // pairs it holds, sorted by key
	Pair pairs[];
};

constexpr std::uint64_t SMALLEST = 12;
constexpr std::uint64_t LARGEST = 252;
constexpr std::uint64_t BIG = 124;      // (the seeded bug's versions)

inline std::uint64_t grown(std::uint64_t cap) { return 2 * cap + 4; }
inline std::uint64_t shrunk(std::uint64_t cap) { return (cap - 4) / 2; }

class Map {
public:
	// create -- a fresh map in the pool's root (nullptr if the pool is too small)
	static Map *create()
	{
		static Map m;
		m.root_ = static_cast<Version **>(pm_root());
		Version *v = make_version(SMALLEST);
		if (!v)
			return nullptr;
		persistent(v, bytes(v));
		*m.root_ = v;
		persistent(m.root_, sizeof(*m.root_));
		return &m;
	}

	// open -- the map in the pool's root (nullptr if none was committed)
	static Map *open()
	{
		static Map m;
		m.root_ = static_cast<Version **>(pm_root());
		return *m.root_ ? &m : nullptr;
	}

	Status insert(std::uint64_t key, std::uint64_t value)
	{
		Version *old = *root_;
		std::uint64_t at = find(old, key);
		if (at < old->n && old->pairs[at].key == key)
			return Status::exists;
		std::uint64_t cap = old->n < old->cap ? old->cap : grown(old->cap);
		if (cap > LARGEST)
			return Status::nospace;
		Version *v = make_version(cap);
		if (!v)
			return Status::nospace;
		std::memcpy(v->pairs, old->pairs, at * sizeof(Pair));
		v->pairs[at] = Pair{key, value};
		std::memcpy(v->pairs + at + 1, old->pairs + at, (old->n - at) * sizeof(Pair));
		v->n = old->n + 1;
		commit(v, old);
		return Status::ok;
	}

	Status update(std::uint64_t key, std::uint64_t value)
	{
		Version *v = *root_;
		std::uint64_t at = find(v, key);
		if (at == v->n || v->pairs[at].key != key)
			return Status::notfound;
		v->pairs[at].value = value;             // one 8-byte store: failure-atomic
		persistent(&v->pairs[at].value, sizeof(value));
		return Status::ok;
	}

	Status remove(std::uint64_t key)
	{
		Version *old = *root_;
		std::uint64_t at = find(old, key);
		if (at == old->n || old->pairs[at].key != key)
			return Status::notfound;
		std::uint64_t cap = old->cap > SMALLEST && 4 * (old->n - 1) <= old->cap ? shrunk(old->cap) : old->cap;
		Version *v = make_version(cap);
		if (!v)
			return Status::nospace;
		std::memcpy(v->pairs, old->pairs, at * sizeof(Pair));
		std::memcpy(v->pairs + at, old->pairs + at + 1, (old->n - at - 1) * sizeof(Pair));
		v->n = old->n - 1;
		commit(v, old);
		return Status::ok;
	}

	bool lookup(std::uint64_t key, std::uint64_t *value) const
	{
		const Version *v = *root_;
		std::uint64_t at = find(v, key);
		if (at == v->n || v->pairs[at].key != key)
			return false;
		*value = v->pairs[at].value;
		return true;
	}

	// each -- FN(pair) for every pair with key >= FROM, in key order, until it returns true
	template <typename Fn> void each(std::uint64_t from, Fn fn) const
	{
		const Version *v = *root_;
		for (std::uint64_t i = find(v, from); i < v->n; i++)
			if (fn(v->pairs[i]))
				return;
	}

	// check -- FN(text) per broken invariant; how many
	template <typename Fn> std::size_t check(Fn fn) const
	{
		const Version *v = *root_;
		std::size_t bad = 0;
		if (!pm_contains(v)) {
			fn("the root is not a version in the pool");
			return 1;
		}
		bool known = false;
		for (std::uint64_t c = SMALLEST; c <= LARGEST; c = grown(c))
			known |= v->cap == c;
		if (!known || v->n > v->cap) {
			fn("the version's capacity or count is not one the map makes");
			return 1;
		}
		for (std::uint64_t i = 1; i < v->n; i++)
			if (v->pairs[i - 1].key >= v->pairs[i].key) {
				fn("the version's pairs are out of key order");
				bad++;
				break;
			}
		return bad;
	}

	const Version *version() const { return *root_; }
	static std::size_t bytes(const Version *v) { return sizeof(Version) + v->cap * sizeof(Pair); }

private:
	Version **root_ = nullptr;

	// make_version -- a new, empty version with room for CAP pairs (not yet persisted)
	static Version *make_version(std::uint64_t cap)
	{
		auto *v = static_cast<Version *>(pm_alloc(sizeof(Version) + cap * sizeof(Pair)));
		if (!v)
			return nullptr;
		v->cap = cap;
		v->n = 0;
		return v;
	}

	// commit -- persist V, swing the root to it, free OLD
	void commit(Version *v, Version *old)
	{
		// (the whole object: pm_alloc zeroed it without flushing)
		std::size_t used = bytes(v);
#ifdef BUG_COWMAP_BIG_PUBLISH_FIRST
		if (v->cap >= BIG) {
			*root_ = v;                     // BUG: committed before the copy is durable
			persistent(root_, sizeof(*root_));
			persistent(v, used);
			pm_free(old);
			return;
		}
#endif
		persistent(v, used);
		*root_ = v;
		persistent(root_, sizeof(*root_));
		pm_free(old);
	}

	// find -- the index of the first pair of V with key >= KEY
	static std::uint64_t find(const Version *v, std::uint64_t key)
	{
		std::uint64_t lo = 0, hi = v->n;
		while (lo < hi) {
			std::uint64_t mid = (lo + hi) / 2;
			if (v->pairs[mid].key < key)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo;
	}
};

}  // namespace cowmap

#endif  // COWMAP_HPP
