// bucketmap.hpp -- a persistent hash map, header-only C++, written as PM code is written without
// any testing tool in mind (crashcheck's example of a C++ structure brought in as it is).
//
// A fixed table of buckets, each a chain of nodes in increasing key order.  The table and the
// nodes come from `new` and go back with `delete`; under `crashcheck build --pm-malloc` those
// calls land in the pool.  Every change is committed by one 8-byte std::atomic store, written
// back with clwb and fenced with sfence:
//   insert  fill the node, persist it, then link it (release store of the predecessor's link)
//   update  one store of the value
//   remove  unlink (store of the predecessor's link), persist, then delete the node
// Which bucket a key goes to is a policy object with a virtual method; it lives in the DRAM
// handle (Map), rebuilt by every process.  Seeded mistakes, one per -D switch (bugs.json):
//   BUCKETMAP_BUG_POLICY_IN_PM       the policy is allocated with the table and kept in it
//   BUCKETMAP_BUG_LINK_FIRST         insert links the node before persisting its contents
//   BUCKETMAP_BUG_UPDATE_NO_PERSIST  update stores the new value and never writes it back
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <immintrin.h>

namespace bucketmap {

constexpr std::size_t BUCKETS = 8;
constexpr std::uint64_t MAGIC = 0x70616d74656b6362ULL;   // "bcketmap", written last by create

// Write the lines of [p, p+n) back to PM, then fence.
inline void persist(const void *p, std::size_t n)
{
	auto line = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t(63);
	auto end = reinterpret_cast<std::uintptr_t>(p) + n;
	for (; line < end; line += 64)
		_mm_clwb(reinterpret_cast<void *>(line));
	_mm_sfence();
}

// Where a key goes.  An interface, so that a user can bring their own mixing.
struct Policy {
	virtual ~Policy() = default;
	virtual std::size_t bucket(std::uint64_t key) const = 0;
};

struct MixPolicy : Policy {
	std::size_t bucket(std::uint64_t key) const override
	{
		key ^= key >> 33;
		key *= 0xff51afd7ed558ccdULL;
		key ^= key >> 33;
		return static_cast<std::size_t>(key % BUCKETS);
	}
};

struct Node {
	std::uint64_t key;
	std::atomic<std::uint64_t> value;
	std::atomic<Node *> next;
};

// The persistent part, reached from one 8-byte root slot the caller keeps in PM.
struct Table {
	std::atomic<Node *> heads[BUCKETS];
	Policy *policy;                 // only BUCKETMAP_BUG_POLICY_IN_PM sets it
	std::atomic<std::uint64_t> magic;
};

class Map {
public:
	// ROOT: an 8-byte slot in PM, zero until the first Map on it made the table.
	explicit Map(std::atomic<Table *> *root) : root_(root), policy_(&mix_)
	{
		table_ = root_->load(std::memory_order_acquire);
		if (table_ == nullptr || table_->magic.load() != MAGIC) {
			table_ = new Table{};
#ifdef BUCKETMAP_BUG_POLICY_IN_PM
			table_->policy = new MixPolicy();        // @policy-new
#endif
			table_->magic.store(MAGIC, std::memory_order_relaxed);
			persist(table_, sizeof *table_);
			root_->store(table_, std::memory_order_release);
			persist(root_, sizeof *root_);
		}
#ifdef BUCKETMAP_BUG_POLICY_IN_PM
		policy_ = table_->policy;                        // the previous process's object
#endif
	}

	bool lookup(std::uint64_t key, std::uint64_t *value) const
	{
		for (Node *n = head(key).load(std::memory_order_acquire); n; n = n->next.load(std::memory_order_acquire))
			if (n->key >= key) {
				if (n->key != key)
					return false;
				*value = n->value.load(std::memory_order_relaxed);
				return true;
			}
		return false;
	}

	bool insert(std::uint64_t key, std::uint64_t value)
	{
		std::atomic<Node *> *link = find(key);
		Node *next = link->load(std::memory_order_relaxed);
		if (next && next->key == key)
			return false;
		Node *n = new Node{key, {value}, {next}};                       // @insert-new
#ifdef BUCKETMAP_BUG_LINK_FIRST
		link->store(n, std::memory_order_release);                       // @link-first
		persist(link, sizeof *link);
		persist(n, sizeof *n);
#else
		persist(n, sizeof *n);
		link->store(n, std::memory_order_release);                       // @link
		persist(link, sizeof *link);
#endif
		return true;
	}

	bool update(std::uint64_t key, std::uint64_t value)
	{
		Node *n = find(key)->load(std::memory_order_relaxed);
		if (!n || n->key != key)
			return false;
		n->value.store(value, std::memory_order_relaxed);                // @update
#ifndef BUCKETMAP_BUG_UPDATE_NO_PERSIST
		persist(&n->value, sizeof n->value);
#endif
		return true;
	}

	bool remove(std::uint64_t key)
	{
		std::atomic<Node *> *link = find(key);
		Node *n = link->load(std::memory_order_relaxed);
		if (!n || n->key != key)
			return false;
		link->store(n->next.load(std::memory_order_relaxed), std::memory_order_release);   // @unlink
		persist(link, sizeof *link);
		delete n;
		return true;
	}

	// Every pair, bucket by bucket (not in key order across buckets), until FN returns true.
	template <class Fn> void each(Fn fn) const
	{
		for (auto &h : table_->heads)
			for (Node *n = h.load(std::memory_order_acquire); n; n = n->next.load(std::memory_order_acquire))
				if (fn(*n))
					return;
	}

	// Nodes in the bucket their key hashes to, in increasing key order; calls BAD with each
	// broken rule.  Returns how many there were.
	template <class Bad> std::size_t check(Bad bad) const
	{
		std::size_t broken = 0;
		for (std::size_t b = 0; b < BUCKETS; b++) {
			const Node *prev = nullptr;
			for (Node *n = table_->heads[b].load(); n; prev = n, n = n->next.load()) {
				if (policy_->bucket(n->key) != b)
					broken++, bad("a node in the wrong bucket");
				if (prev && prev->key >= n->key)
					broken++, bad("a bucket not in increasing key order");
			}
		}
		return broken;
	}

	const Table *table() const { return table_; }

private:
	std::atomic<Node *> &head(std::uint64_t key) const { return table_->heads[policy_->bucket(key)]; }

	// The link that points at the first node with a key >= KEY in KEY's bucket.
	std::atomic<Node *> *find(std::uint64_t key) const
	{
		std::atomic<Node *> *link = &head(key);
		for (Node *n = link->load(std::memory_order_acquire); n && n->key < key; n = link->load(std::memory_order_acquire))
			link = &n->next;
		return link;
	}

	std::atomic<Table *> *root_;
	Table *table_ = nullptr;
	MixPolicy mix_;                  // the policy: DRAM, part of this handle
	const Policy *policy_;
};

}  // namespace bucketmap
