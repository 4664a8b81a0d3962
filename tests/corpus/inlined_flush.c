/* crashcheck-corpus
 * construct: a flush and fence inside an inlined helper: the site is the helper's line, inlined at the caller's line and function
 * => store/plain off=0x0 size=8 data={le(1,8)} line=@st
 * => flush/clwb off=0x0 size=64 line=@hflush func=persist_line inl=@call1 ifunc=main
 * => fence/sfence line=@hfence func=persist_line inl=@call1 ifunc=main
 * => store/plain off=0x80 size=8 data={le(2,8)} line=@ust func=update
 * => flush/clwb off=0x80 size=64 line=@hflush func=persist_line inl=@call2 ifunc=update
 * => fence/sfence line=@hfence func=persist_line inl=@call2 ifunc=update
 */
#include <immintrin.h>

#include "corpus.h"

__attribute__((always_inline)) static inline void persist_line(void *p)
{
	_mm_clwb(p);   /* @hflush */
	_mm_sfence();  /* @hfence */
}

__attribute__((noinline)) static void update(uint64_t *p, uint64_t v)
{
	*p = v;           /* @ust */
	persist_line(p);  /* @call2 */
}

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	*(uint64_t *)pm = 1;     /* @st */
	persist_line(pm);        /* @call1 */
	update((uint64_t *)(pm + 0x80), opaque(2));
	return 0;
}
