/* crashcheck-corpus
 * construct: crashcheck_alloc/free record their own call's site; crashcheck_here() passes a caller's site to the _at forms; DRAM objects are not logged
 * => alloc off=0x40 size=32 line=@alloc
 * => alloc off=0x100 size=64 line=@via1
 * => alloc off=0x200 size=16 line=@via2
 * => free off=0x100 line=@freevia
 * => free off=0x40 line=@free
 * => alloc off=0x0 size=0x100000 line=@whole
 */
#include "corpus.h"

/* pm_alloc -- an allocator that blames its caller, as crashcheck.h suggests */
#define pm_alloc(at, n) pm_alloc_at((at), (n), crashcheck_here())
#define pm_free(p) pm_free_at((p), crashcheck_here())

__attribute__((noinline)) static void *pm_alloc_at(void *at, size_t n, crashcheck_site_t site)
{
	crashcheck_alloc_at(at, n, site);
	return at;
}

__attribute__((noinline)) static void pm_free_at(void *p, crashcheck_site_t site)
{
	crashcheck_free_at(p, site);
}

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	char dram[64];
	crashcheck_alloc(pm + 0x40, 32);   /* @alloc */
	pm_alloc(pm + 0x100, 64);          /* @via1 */
	pm_alloc(pm + 0x200, 16);          /* @via2 */
	crashcheck_alloc(dram, sizeof dram);
	pm_free(pm + 0x100);               /* @freevia */
	crashcheck_free(dram);
	crashcheck_free(pm + 0x40);        /* @free */
	crashcheck_alloc(pm, CORPUS_POOL_SIZE); /* @whole */
	return 0;
}
