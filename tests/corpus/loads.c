/* crashcheck-corpus
 * construct: load instrumentation (crashcheck-cc --crashcheck-loads): PM loads are logged, DRAM loads are not; the header says so
 * cflags: --crashcheck-loads
 * => store/plain off=0x8 size=8 data={le(5,8)} line=@st
 * => load off=0x8 size=8 line=@ld8
 * => load off=0x10 size=4 line=@ld4
 * => load off=0x3 size=1 line=@ld1
 */
#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	volatile uint64_t *q = (volatile uint64_t *)(pm + 8);
	volatile uint64_t dram = opaque(1);
	*q = 5;                                            /* @st */
	uint64_t a = *q;                                   /* @ld8 */
	uint32_t b = *(volatile uint32_t *)(pm + 0x10);    /* @ld4 */
	uint8_t c = *(volatile uint8_t *)(pm + 3);         /* @ld1 */
	uint64_t d = dram;
	return a == 5 && b == 0 && c == 0 && d == 1 ? 0 : 1;
}
