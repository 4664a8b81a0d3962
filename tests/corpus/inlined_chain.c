/* crashcheck-corpus
 * construct: a store two inline levels deep (put inlined into mid, inlined into main): the site is put's line, inlined at main's call (the outermost in the same file), and its inline chain names both calls (test_inlined_chain_names_every_call)
 * => store/plain off=0x10 size=8 data={le(9,8)} line=@st func=put inl=@call2 ifunc=main
 * => flush/clwb off=0x0 size=64 line=@fl
 * => fence/sfence line=@fe
 */
#include <immintrin.h>

#include "corpus.h"

__attribute__((always_inline)) static inline void put(uint64_t *p, uint64_t v)
{
	*p = v;   /* @st */
}

__attribute__((always_inline)) static inline void mid(uint64_t *p, uint64_t v)
{
	put(p + 2, v);   /* @call1 */
}

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	mid((uint64_t *)pm, 9);   /* @call2 */
	_mm_clwb(pm);             /* @fl */
	_mm_sfence();             /* @fe */
	return 0;
}
