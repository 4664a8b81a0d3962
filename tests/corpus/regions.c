/* crashcheck-corpus
 * construct: a second PM region registered with crashcheck_register_pm: its events carry region 1 and offsets in it; the gap between the regions is not PM
 * => store/plain region=0 off=0x0 size=8 data={le(1,8)} line=@r0
 * => store/plain region=1 off=0x10 size=8 data={le(2,8)} line=@r1
 * => flush/clwb region=1 off=0x0 size=64 line=@f1
 * => fence/sfence line=@fence
 */
#include <immintrin.h>
#include <sys/mman.h>

#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	/* 64 KiB beyond the pool, leaving an unregistered gap between the two. */
	char *gap = pm + CORPUS_POOL_SIZE;
	char *second = mmap(gap, 3 * 65536, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (second != gap)
		return 2;
	char *r1 = second + 65536;
	if (crashcheck_register_pm(r1, 65536) != 0)
		return 3;
	*(uint64_t *)pm = 1;              /* @r0 */
	*(uint64_t *)(second + 8) = 9;    /* the gap: not logged */
	*(uint64_t *)(r1 + 16) = 2;       /* @r1 */
	*(uint64_t *)(r1 + 65536) = 9;    /* just past region 1: not logged */
	_mm_clwb(r1);                     /* @f1 */
	_mm_sfence();                     /* @fence */
	return 0;
}
