/* crashcheck-corpus
 * construct: 16-byte (__m128i) and 32-byte (__m256i, -mavx) vector stores
 * cflags: -mavx
 * cpu: avx
 * => store/plain off=0x10 size=16 data=000102030405060708090a0b0c0d0e0f line=@v16
 * => store/plain off=0x40 size=32 data=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f line=@v32
 * => store/plain off=0x83 size=16 data=000102030405060708090a0b0c0d0e0f line=@v16u
 */
#include <immintrin.h>

#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	__m128i x = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
	__m256i y = _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
				     16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
	_mm_store_si128((__m128i *)(pm + 0x10), x);     /* @v16 */
	BARRIER();
	_mm256_store_si256((__m256i *)(pm + 0x40), y);  /* @v32 */
	BARRIER();
	_mm_storeu_si128((__m128i *)(pm + 0x83), x);    /* @v16u */
	return 0;
}
