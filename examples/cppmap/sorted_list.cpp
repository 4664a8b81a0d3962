// sorted_list.cpp -- the persistent sorted linked list (see sorted_list.hpp)
#include "sorted_list.hpp"

#include <cstdio>
#include <new>

#include "persist.h"
#include "pm_alloc.h"

namespace cppmap {

namespace {

// publish -- one failure-atomic 8-byte store of a link, made durable
void publish(Node **link, Node *node)
{
	*link = node;
	persistent(link, sizeof(*link));
}

}  // namespace

SortedList *SortedList::create()
{
	auto **root = static_cast<Head **>(pm_root());
	void *mem = pm_alloc(sizeof(Head));
	if (!mem)
		return nullptr;
	Head *head = new (mem) Head{nullptr};
	persistent(head, sizeof(*head));
	*root = head;
	persistent(root, sizeof(*root));
	return new SortedList(head);
}

SortedList *SortedList::open()
{
	auto **root = static_cast<Head **>(pm_root());
	if (!*root || !pm_contains(*root))
		return nullptr;
	return new SortedList(*root);
}

Node **SortedList::find(std::uint64_t key) const
{
	Node **link = &head_->first;
	while (*link && (*link)->key < key)
		link = &(*link)->next;
	return link;
}

Status SortedList::insert(std::uint64_t key, std::uint64_t value)
{
	Node **link = find(key);
	if (*link && (*link)->key == key)
		return Status::exists;
	void *mem = pm_alloc(sizeof(Node));
	if (!mem)
		return Status::nospace;
	Node *node = new (mem) Node{key, value, *link};
	persistent(node, sizeof(*node));
	publish(link, node);
	return Status::ok;
}

Status SortedList::update(std::uint64_t key, std::uint64_t value)
{
	Node *node = *find(key);
	if (!node || node->key != key)
		return Status::notfound;
	node->value = value;
	persistent(&node->value, sizeof(node->value));
	return Status::ok;
}

Status SortedList::remove(std::uint64_t key)
{
	Node **link = find(key);
	Node *node = *link;
	if (!node || node->key != key)
		return Status::notfound;
	publish(link, node->next);
	pm_free(node);
	return Status::ok;
}

bool SortedList::lookup(std::uint64_t key, std::uint64_t *value) const
{
	Node *node = *find(key);
	if (!node || node->key != key)
		return false;
	*value = node->value;
	return true;
}

void SortedList::scan(std::uint64_t from, const std::function<bool(const Node &)> &fn) const
{
	for (Node *n = *find(from); n; n = n->next)
		if (fn(*n))
			return;
}

void SortedList::nodes(const std::function<void(const void *, std::size_t)> &fn) const
{
	fn(head_, sizeof(Head));
	for (Node *n = head_->first; n; n = n->next)
		fn(n, sizeof(Node));
}

std::size_t SortedList::check(const std::function<void(const char *)> &fn) const
{
	std::size_t bad = 0;
	for (Node *n = head_->first; n && n->next; n = n->next) {
		if (n->key >= n->next->key) {
			char msg[96];
			std::snprintf(msg, sizeof(msg), "key %llu is followed by %llu",
				      static_cast<unsigned long long>(n->key),
				      static_cast<unsigned long long>(n->next->key));
			fn(msg);
			bad++;
		}
	}
	return bad;
}

}  // namespace cppmap
