/* crashcheck-corpus
 * construct: flushes and fences inside a persist helper that is not inlined: named at the line that called the helper, in the caller's function
 * => store/plain off=0x0 size=8 data={le(1,8)} line=@st
 * => flush/clwb off=0x0 size=64 line=@call1 func=main
 * => fence/sfence line=@call1 func=main
 * => store/plain off=0x80 size=8 data={le(2,8)} line=@ust func=update
 * => flush/clwb off=0x80 size=64 line=@call2 func=update
 * => fence/sfence line=@call2 func=update
 */
#include <immintrin.h>
#include <stddef.h>

#include "corpus.h"

/* a helper the compiler keeps as a function of its own, as one in another file is */
__attribute__((noinline)) static void pflush(void *p, size_t len)
{
	for (size_t off = 0; off < len; off += 64)
		_mm_clwb((char *)p + off);
	_mm_sfence();
}

__attribute__((noinline)) static void update(uint64_t *p, uint64_t v)
{
	*p = v;           /* @ust */
	pflush(p, 8);     /* @call2 */
}

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	*(uint64_t *)pm = 1;     /* @st */
	pflush(pm, 8);           /* @call1 */
	update((uint64_t *)(pm + 0x80), opaque(2));
	return 0;
}
