/* crashcheck-corpus
 * construct: libpmem copies and fills: _persist (store + flushes + drain), _nodrain (no drain), and pmem_memcpy/memset/memmove with flags
 * ldflags: -lpmem
 * => store/libpmem off=0x70 size=32 data={bytes(range(32)).hex()} line=@cpy_p
 * => flush/clwb off=0x40 size=64 line=@cpy_p
 * => flush/clwb off=0x80 size=64 line=@cpy_p
 * => fence/sfence line=@cpy_p
 * => store/libpmem off=0x100 size=8 data={rep('5a',8)} line=@set_p
 * => flush/clwb off=0x100 size=64 line=@set_p
 * => fence/sfence line=@set_p
 * => store/libpmem off=0x72 size=16 data={bytes(range(16)).hex()} line=@mov_p
 * => flush/clwb off=0x40 size=64 line=@mov_p
 * => flush/clwb off=0x80 size=64 line=@mov_p
 * => fence/sfence line=@mov_p
 * => store/libpmem off=0x140 size=4 data=00010203 line=@cpy_n
 * => flush/clwb off=0x140 size=64 line=@cpy_n
 * => store/libpmem off=0x180 size=3 data=eeeeee line=@set_n
 * => flush/clwb off=0x180 size=64 line=@set_n
 * => store/libpmem off=0x1c0 size=2 data=0001 line=@mov_n
 * => flush/clwb off=0x1c0 size=64 line=@mov_n
 * => store/libpmem off=0x200 size=4 data=00010203 line=@cpy_0
 * => flush/clwb off=0x200 size=64 line=@cpy_0
 * => fence/sfence line=@cpy_0
 * => store/libpmem off=0x240 size=4 data=00010203 line=@cpy_nodrain
 * => flush/clwb off=0x240 size=64 line=@cpy_nodrain
 * => store/libpmem off=0x280 size=4 data=00010203 line=@cpy_noflush
 * => store/libpmem off=0x2c0 size=5 data={rep('11',5)} line=@set_flags
 * => flush/clwb off=0x2c0 size=64 line=@set_flags
 * => fence/sfence line=@set_flags
 * => store/libpmem off=0x300 size=4 data=00010203 line=@mov_flags
 * => flush/clwb off=0x300 size=64 line=@mov_flags
 */
#include <libpmem.h>

#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	unsigned char src[32];
	for (int i = 0; i < 32; i++)
		src[i] = (unsigned char)i;
	pmem_memcpy_persist(pm + 0x70, src, 32);                          /* @cpy_p */
	pmem_memset_persist(pm + 0x100, 0x5a, 8);                         /* @set_p */
	pmem_memmove_persist(pm + 0x72, pm + 0x70, 16);                   /* @mov_p */
	pmem_memcpy_nodrain(pm + 0x140, src, 4);                          /* @cpy_n */
	pmem_memset_nodrain(pm + 0x180, 0xee, 3);                         /* @set_n */
	pmem_memmove_nodrain(pm + 0x1c0, src, 2);                         /* @mov_n */
	pmem_memcpy(pm + 0x200, src, 4, 0);                               /* @cpy_0 */
	pmem_memcpy(pm + 0x240, src, 4, PMEM_F_MEM_NODRAIN);              /* @cpy_nodrain */
	pmem_memcpy(pm + 0x280, src, 4, PMEM_F_MEM_NOFLUSH);              /* @cpy_noflush */
	pmem_memset(pm + 0x2c0, 0x11, 5, PMEM_F_MEM_NONTEMPORAL);         /* @set_flags */
	pmem_memmove(pm + 0x300, src, 4, PMEM_F_MEM_NODRAIN | PMEM_F_MEM_WB); /* @mov_flags */
	return 0;
}
