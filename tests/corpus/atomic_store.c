/* crashcheck-corpus
 * construct: atomic stores: relaxed and release are plain stores, seq_cst is an xchg (locked fence + store)
 * => store/atomic off=0x0 size=8 data={le(1,8)} line=@relaxed
 * => store/atomic off=0x8 size=8 data={le(2,8)} line=@release
 * => fence/locked line=@seqcst
 * => store/atomic off=0x10 size=8 data={le(3,8)} line=@seqcst
 * => store/atomic off=0x18 size=4 data={le(4,4)} line=@rel32
 * => fence/locked line=@sc16
 * => store/atomic off=0x1c size=2 data={le(5,2)} line=@sc16
 */
#include <stdatomic.h>

#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	atomic_store_explicit((_Atomic uint64_t *)pm, 1, memory_order_relaxed);           /* @relaxed */
	atomic_store_explicit((_Atomic uint64_t *)(pm + 8), 2, memory_order_release);     /* @release */
	atomic_store_explicit((_Atomic uint64_t *)(pm + 16), 3, memory_order_seq_cst);    /* @seqcst */
	__atomic_store_n((uint32_t *)(pm + 24), 4, __ATOMIC_RELEASE);                      /* @rel32 */
	__atomic_store_n((uint16_t *)(pm + 28), 5, __ATOMIC_SEQ_CST);                      /* @sc16 */
	return 0;
}
