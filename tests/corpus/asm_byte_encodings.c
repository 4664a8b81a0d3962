/* crashcheck-corpus
 * construct: hand-encoded flushes: .byte 0x66; clflush (clflushopt), .byte 0x66; xsaveopt (clwb), .byte 0x66,0x0f,0xae,0x30 (clwb rax)
 * cpu: clflushopt clwb
 * => flush/clflushopt off=0x40 size=64 line=@opt
 * => flush/clwb off=0x80 size=64 line=@xsaveopt
 * => flush/clwb off=0xc0 size=64 line=@rax
 * => flush/clflushopt off=0x100 size=64 line=@rax_opt
 * => fence/sfence line=@sfence
 */
#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	__asm__ __volatile__(".byte 0x66; clflush %0" : "+m"(*(volatile char *)(pm + 0x40)));  /* @opt */
	__asm__ __volatile__(".byte 0x66; xsaveopt %0" : "+m"(*(volatile char *)(pm + 0x80))); /* @xsaveopt */
	__asm__ __volatile__(".byte 0x66, 0x0f, 0xae, 0x30" :: "a"(pm + 0xc0));               /* @rax */
	__asm__ __volatile__(".byte 0x66, 0x0f, 0xae, 0x38" :: "a"(pm + 0x100));              /* @rax_opt */
	__asm__ __volatile__(".byte 0x0f, 0xae, 0xf8" ::: "memory");                           /* @sfence */
	return 0;
}
