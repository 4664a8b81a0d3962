/* crashcheck-corpus
 * construct: inline-asm flushes with memory operands ("+m", "m")
 * cpu: clflushopt clwb
 * => flush/clflush off=0x40 size=64 line=@clflush
 * => flush/clflushopt off=0x80 size=64 line=@clflushopt
 * => flush/clwb off=0xc0 size=64 line=@clwb
 * => flush/clwb off=0x100 size=64 line=@in
 */
#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	__asm__ __volatile__("clflush %0" : "+m"(*(volatile char *)(pm + 0x40)));    /* @clflush */
	__asm__ __volatile__("clflushopt %0" : "+m"(*(volatile char *)(pm + 0x88))); /* @clflushopt */
	__asm__ __volatile__("clwb %0" : "+m"(*(volatile char *)(pm + 0xc0)));       /* @clwb */
	__asm__ __volatile__("clwb %0" :: "m"(*(const char *)(pm + 0x13f)));        /* @in */
	return 0;
}
