/* crashcheck-corpus
 * construct: flush intrinsics _mm_clflush, _mm_clflushopt, _mm_clwb (logged with the line's address)
 * cpu: clflushopt clwb
 * => store/plain off=0x48 size=8 data={le(1,8)} line=@st
 * => flush/clflush off=0x40 size=64 line=@clflush
 * => flush/clflushopt off=0x40 size=64 line=@clflushopt
 * => flush/clwb off=0x80 size=64 line=@clwb
 * => flush/clwb off=0xfffc0 size=64 line=@last
 * => fence/sfence line=@fence
 */
#include <immintrin.h>

#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	*(uint64_t *)(pm + 0x48) = 1;        /* @st */
	_mm_clflush(pm + 0x48);              /* @clflush */
	_mm_clflushopt(pm + 0x7f);           /* @clflushopt */
	_mm_clwb(pm + 0x80);                 /* @clwb */
	_mm_clwb(pm + CORPUS_POOL_SIZE - 1); /* @last */
	_mm_sfence();                        /* @fence */
	return 0;
}
