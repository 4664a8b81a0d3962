// code_pointers.cpp -- stores of code addresses into PM, for tests/unit/test_code_pointer_sites.py:
// a constructor's vtable pointer, a function pointer, one read from a constant table of
// functions; beside them a plain pointer and a number, which are not code addresses.
#include <cstdint>
#include <new>

#include "corpus.h"

struct Shape {
	virtual std::uint64_t area() const { return 0; }
	virtual ~Shape() {}
};

struct Square : Shape {
	std::uint64_t side;
	explicit Square(std::uint64_t s) : side(s) {}
	std::uint64_t area() const override { return side * side; }
};

static int twice(int x) { return 2 * x; }
static int thrice(int x) { return 3 * x; }
static int (*const table[2])(int) = {twice, thrice};

struct Slots {
	int (*fn)(int);
	int (*picked)(int);
	std::uint64_t *plain;
	std::uint64_t number;
};

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	Shape *s = new (pm) Square(opaque(3));                    /* @vptr */
	BARRIER();
	auto *slots = reinterpret_cast<Slots *>(pm + 64);
	slots->fn = twice;                                        /* @fn */
	BARRIER();
	slots->picked = table[opaque(1)];                         /* @table */
	BARRIER();
	slots->plain = reinterpret_cast<std::uint64_t *>(pm);     /* @plain */
	BARRIER();
	slots->number = opaque(7);                                /* @number */
	BARRIER();
	return static_cast<int>(s->area() + slots->picked(1)) == 12 ? 0 : 1;
}
