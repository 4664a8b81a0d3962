// sorted_list.hpp -- a persistent sorted linked list, in C++ (examples/cppmap)
//
// Shows that a C++ structure goes under test like a C one: `crashcheck build
// cppmap examples/cppmap/sorted_list.cpp --adapter examples/cppmap/adapter.cpp`
// compiles both with crashcheck-c++ and links the driver with the C++ compiler.
//
// Crash consistency without logging: a node is written and persisted before
// one failure-atomic 8-byte store links it; an update replaces the 8-byte
// value in place; a delete unlinks with one 8-byte store and then frees the
// node.  A crash between allocating and linking, or between unlinking and
// freeing, leaves a node allocated and unreachable: the expected leak of
// expect.json.
#ifndef CPPMAP_SORTED_LIST_HPP
#define CPPMAP_SORTED_LIST_HPP

#include <cstddef>
#include <cstdint>
#include <functional>

namespace cppmap {

enum class Status { ok, exists, notfound, nospace };

struct Node {
	std::uint64_t key;
	std::uint64_t value;
	Node *next;
};

class SortedList {
public:
	// Create a fresh list in the pool's root, or attach to the one there (nullptr on failure).
	static SortedList *create();
	static SortedList *open();

	Status insert(std::uint64_t key, std::uint64_t value);
	Status update(std::uint64_t key, std::uint64_t value);
	Status remove(std::uint64_t key);
	bool lookup(std::uint64_t key, std::uint64_t *value) const;
	// Every pair with key >= FROM in key order until FN returns true.
	void scan(std::uint64_t from, const std::function<bool(const Node &)> &fn) const;
	// Every node (for the adapter's `reachable`).
	void nodes(const std::function<void(const void *, std::size_t)> &fn) const;
	// Broken invariants (keys not strictly increasing), reported through FN; returns how many.
	std::size_t check(const std::function<void(const char *)> &fn) const;

private:
	struct Head {
		Node *first;
	};
	explicit SortedList(Head *head) : head_(head) {}
	Node **find(std::uint64_t key) const;
	Head *head_;
};

}  // namespace cppmap

#endif  // CPPMAP_SORTED_LIST_HPP
