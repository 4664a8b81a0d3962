/* crashcheck-corpus
 * construct: inline-asm flushes with register operands: clflush (%0), clflushopt, clwb, a displacement
 * cpu: clflushopt clwb
 * => flush/clflush off=0x40 size=64 line=@clflush
 * => flush/clflushopt off=0x80 size=64 line=@clflushopt
 * => flush/clwb off=0xc0 size=64 line=@clwb
 * => flush/clwb off=0x100 size=64 line=@disp
 * => flush/clwb off=0x140 size=64 line=@reg
 */
#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	__asm__ __volatile__("clflush (%0)" :: "r"(pm + 0x40) : "memory");     /* @clflush */
	__asm__ __volatile__("clflushopt (%0)" :: "r"(pm + 0x90) : "memory");  /* @clflushopt */
	__asm__ __volatile__("clwb (%0)" :: "r"(pm + 0xc8) : "memory");        /* @clwb */
	__asm__ __volatile__("clwb 64(%0)" :: "r"(pm + 0xc0) : "memory");      /* @disp */
	__asm__ __volatile__("clwb (%%rdi)" :: "D"(pm + 0x140) : "memory");    /* @reg */
	return 0;
}
