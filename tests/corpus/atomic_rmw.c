/* crashcheck-corpus
 * construct: atomic read-modify-writes: a locked fence, then the value they left
 * => store/plain off=0x0 size=8 data={le(40,8)} line=@init
 * => fence/locked line=@add
 * => store/rmw off=0x0 size=8 data={le(42,8)} line=@add
 * => fence/locked line=@xchg
 * => store/rmw off=0x8 size=8 data={le(0x77,8)} line=@xchg
 * => fence/locked line=@or32
 * => store/rmw off=0x10 size=4 data={le(0xf0,4)} line=@or32
 * => fence/locked line=@sync
 * => store/rmw off=0x0 size=8 data={le(43,8)} line=@sync
 */
#include <stdatomic.h>

#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	*(uint64_t *)pm = 40;                                                       /* @init */
	atomic_fetch_add((_Atomic uint64_t *)pm, 2);                                /* @add */
	uint64_t old = atomic_exchange((_Atomic uint64_t *)(pm + 8), opaque(0x77)); /* @xchg */
	__atomic_fetch_or((uint32_t *)(pm + 16), 0xf0, __ATOMIC_RELAXED);           /* @or32 */
	__sync_fetch_and_add((uint64_t *)pm, 1);                                    /* @sync */
	return (int)old;
}
