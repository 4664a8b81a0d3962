/* crashcheck-corpus
 * construct: libpmem pmem_persist, pmem_flush, pmem_drain, pmem_msync: the flushes (one per line) and drains they do
 * ldflags: -lpmem
 * => store/plain off=0x78 size=8 data={le(1,8)} line=@st
 * => flush/clwb off=0x40 size=64 line=@persist
 * => flush/clwb off=0x80 size=64 line=@persist
 * => fence/sfence line=@persist
 * => flush/clwb off=0x100 size=64 line=@flush
 * => fence/sfence line=@drain
 * => flush/clwb off=0x1000 size=64 line=@msync
 * => fence/sfence line=@msync
 * => flush/clwb off=0x200 size=64 line=@flush3
 * => flush/clwb off=0x240 size=64 line=@flush3
 * => flush/clwb off=0x280 size=64 line=@flush3
 */
#include <libpmem.h>

#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	*(uint64_t *)(pm + 0x78) = 1;         /* @st */
	pmem_persist(pm + 0x78, 16);          /* @persist */
	pmem_flush(pm + 0x100, 64);           /* @flush */
	pmem_drain();                         /* @drain */
	if (pmem_msync(pm + 0x1000, 8) != 0)  /* @msync */
		return 1;
	pmem_flush(pm + 0x201, 0x80);         /* @flush3 */
	pmem_flush(pm + 0x300, 0);            /* zero length: nothing */
	return 0;
}
