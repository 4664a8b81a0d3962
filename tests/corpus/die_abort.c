/* crashcheck-corpus
 * construct: a program that dies by abort() after logging: the trace is cut but holds every event before the abort
 * exit: SIGABRT
 * complete: no
 * => store/plain off=0x10 size=4 data={le(0xabcd,4)} line=@st
 * => fence/mfence line=@fence
 */
#include <immintrin.h>

#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	*(uint32_t *)(pm + 0x10) = 0xabcd;   /* @st */
	_mm_mfence();                        /* @fence */
	abort();
}
