/* crashcheck-corpus
 * construct: locked inline asm (lock; xaddq, lock incl, xchg with memory): a locked fence + the store
 * => store/plain off=0x0 size=8 data={le(10,8)} line=@init
 * => fence/locked line=@xadd
 * => store/asm off=0x0 size=8 data={le(15,8)} line=@xadd
 * => fence/locked line=@inc
 * => store/asm off=0x8 size=4 data={le(1,4)} line=@inc
 * => fence/locked line=@xchg
 * => store/asm off=0x10 size=8 data={le(0x99,8)} line=@xchg
 */
#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	uint64_t *w = (uint64_t *)pm;
	*w = 10;                                                                          /* @init */
	uint64_t v = 5;
	__asm__ __volatile__("lock; xaddq %0, %1" : "+r"(v), "+m"(*w) :: "memory");      /* @xadd */
	__asm__ __volatile__("lock incl %0" : "+m"(*(uint32_t *)(pm + 8)) :: "memory");  /* @inc */
	uint64_t x = 0x99;
	__asm__ __volatile__("xchgq %0, %1" : "+r"(x), "+m"(*(uint64_t *)(pm + 16)) :: "memory"); /* @xchg */
	return v == 10 && x == 0 ? 0 : 1;
}
