/* crashcheck-corpus
 * construct: fences: sfence, mfence and seq_cst fences appear; acquire/release/acq_rel and signal fences do not
 * => store/plain off=0x0 size=8 data={le(1,8)} line=@st
 * => fence/sfence line=@sfence
 * => fence/mfence line=@mfence
 * => fence/seq_cst line=@seqcst
 * => store/plain off=0x10 size=8 data={le(3,8)} line=@mid
 * => fence/seq_cst line=@sync
 * => store/plain off=0x8 size=8 data={le(2,8)} line=@st2
 */
#include <immintrin.h>
#include <stdatomic.h>

#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	*(uint64_t *)pm = 1;                          /* @st */
	_mm_sfence();                                 /* @sfence */
	atomic_thread_fence(memory_order_release);
	atomic_thread_fence(memory_order_acquire);
	atomic_thread_fence(memory_order_acq_rel);
	_mm_mfence();                                 /* @mfence */
	atomic_signal_fence(memory_order_seq_cst);
	atomic_thread_fence(memory_order_seq_cst);    /* @seqcst */
	*(uint64_t *)(pm + 16) = 3;                   /* @mid */
	__sync_synchronize();                         /* @sync */
	__asm__ __volatile__("" ::: "memory");
	*(uint64_t *)(pm + 8) = 2;                    /* @st2 */
	return 0;
}
