/* crashcheck-corpus
 * construct: non-temporal stores (_mm_stream_si64, _mm_stream_si32, __builtin_nontemporal_store)
 * => ntstore/plain off=0x40 size=8 data={le(0x1122334455667788,8)} line=@s64
 * => ntstore/plain off=0x48 size=4 data={le(0xcafe,4)} line=@s32
 * => ntstore/plain off=0x50 size=8 data={le(7,8)} line=@builtin
 * => fence/sfence line=@fence
 */
#include <immintrin.h>

#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	_mm_stream_si64((long long *)(pm + 0x40), 0x1122334455667788LL); /* @s64 */
	_mm_stream_si32((int *)(pm + 0x48), 0xcafe);                     /* @s32 */
	__builtin_nontemporal_store((uint64_t)7, (uint64_t *)(pm + 0x50)); /* @builtin */
	_mm_sfence();                                                    /* @fence */
	return 0;
}
