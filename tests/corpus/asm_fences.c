/* crashcheck-corpus
 * construct: inline-asm fences: sfence, mfence, several instructions in one asm; an empty asm is no fence
 * => store/plain off=0x0 size=8 data={le(1,8)} line=@st
 * => fence/sfence line=@sfence
 * => fence/mfence line=@mfence
 * => flush/clflush off=0x0 size=64 line=@both
 * => fence/mfence line=@both
 * => fence/sfence line=@nl
 */
#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	*(uint64_t *)pm = 1;                                                   /* @st */
	__asm__ __volatile__("sfence" ::: "memory");                           /* @sfence */
	__asm__ __volatile__("" ::: "memory");
	__asm__ __volatile__("mfence" ::: "memory");                           /* @mfence */
	__asm__ __volatile__("clflush (%0); mfence" :: "r"(pm) : "memory");   /* @both */
	__asm__ __volatile__("lfence\n\tsfence" ::: "memory");                 /* @nl */
	return 0;
}
