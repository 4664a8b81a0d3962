/* crashcheck-corpus
 * construct: compare-exchange: success is a locked fence + store, failure the fence only
 * => store/plain off=0x0 size=8 data={le(5,8)} line=@init
 * => fence/locked line=@ok
 * => store/cmpxchg off=0x0 size=8 data={le(6,8)} line=@ok
 * => fence/locked line=@fail
 * => fence/locked line=@ok32
 * => store/cmpxchg off=0x8 size=4 data={le(9,4)} line=@ok32
 */
#include <stdatomic.h>

#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	_Atomic uint64_t *w = (_Atomic uint64_t *)pm;
	*(uint64_t *)pm = 5;                                                   /* @init */
	BARRIER();
	uint64_t want = opaque(5);
	int ok = atomic_compare_exchange_strong(w, &want, opaque(6));          /* @ok */
	want = opaque(5);
	int fail = atomic_compare_exchange_strong(w, &want, opaque(7));        /* @fail */
	int ok32 = __sync_bool_compare_and_swap((uint32_t *)(pm + 8), 0, 9);   /* @ok32 */
	return ok == 1 && fail == 0 && want == 6 && ok32 ? 0 : 1;
}
