/* crashcheck-corpus
 * construct: std::atomic stores and an RMW (libstdc++ always inlines them from bits/atomic_base.h) are named by the line that called them, the library frames in the chain
 * => store/atomic off=0x0 size=8 data={le(1,8)} line=@relaxed
 * => store/atomic off=0x8 size=8 data={le(2,8)} line=@release
 * => fence/locked line=@seqcst
 * => store/atomic off=0x10 size=8 data={le(3,8)} line=@seqcst
 * => fence/locked line=@add
 * => store/rmw off=0x18 size=4 data={le(4,4)} line=@add
 */
#include <atomic>
#include <cstdint>

#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	auto *a = reinterpret_cast<std::atomic<std::uint64_t> *>(pm);
	auto *c = reinterpret_cast<std::atomic<std::uint32_t> *>(pm + 24);
	a[0].store(1, std::memory_order_relaxed);     /* @relaxed */
	a[1].store(2, std::memory_order_release);     /* @release */
	a[2].store(3);                                 /* @seqcst */
	c->fetch_add(4);                               /* @add */
	return 0;
}
