/* crashcheck-corpus
 * construct: a program that dies by SIGSEGV after logging: the trace is cut but holds every event before the crash
 * exit: SIGSEGV
 * complete: no
 * => op_begin index=1 line=@begin
 * => store/plain off=0x0 size=8 data={le(0xdead,8)} line=@st
 * => flush/clflush off=0x0 size=64 line=@flush
 */
#include <immintrin.h>

#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	crashcheck_op_begin(1);              /* @begin */
	*(uint64_t *)pm = 0xdead;            /* @st */
	_mm_clflush(pm);                     /* @flush */
	*(volatile uint64_t *)opaque(8) = 1; /* SIGSEGV */
	*(uint64_t *)(pm + 8) = 1;
	return 0;
}
