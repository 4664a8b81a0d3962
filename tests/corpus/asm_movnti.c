/* crashcheck-corpus
 * construct: movnti in inline asm (64- and 32-bit): non-temporal stores of the register's width
 * => ntstore/asm off=0x40 size=8 data={le(0x0102030405060708,8)} line=@q
 * => ntstore/asm off=0x48 size=4 data={le(0xbeef,4)} line=@l
 * => ntstore/asm off=0x50 size=8 data={le(0x77,8)} line=@reg
 * => fence/sfence line=@fence
 */
#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	uint64_t q = opaque(0x0102030405060708ULL);
	uint32_t l = (uint32_t)opaque(0xbeef);
	__asm__ __volatile__("movnti %1, %0" : "=m"(*(uint64_t *)(pm + 0x40)) : "r"(q));  /* @q */
	__asm__ __volatile__("movnti %1, %0" : "=m"(*(uint32_t *)(pm + 0x48)) : "r"(l));  /* @l */
	__asm__ __volatile__("movntiq %%rax, (%%rdi)" :: "a"(opaque(0x77)), "D"(pm + 0x50) : "memory"); /* @reg */
	__asm__ __volatile__("sfence" ::: "memory");                                       /* @fence */
	return 0;
}
