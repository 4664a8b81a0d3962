/* crashcheck-corpus
 * construct: libpmemobj's persistence calls (the pool first): pmemobj_persist/xpersist, flush/xflush, drain, memcpy_persist, memset_persist, and memcpy/memmove/memset with PMEMOBJ_F_MEM_* flags, on a pool pmemobj_create mapped (region 1)
 * ldflags: -lpmemobj
 * => store/plain region=1 off=0x700000 size=8 data={le(0x1122334455667788,8)} line=@st
 * => flush/clwb region=1 off=0x700000 size=64 line=@persist
 * => fence/sfence line=@persist
 * => flush/clwb region=1 off=0x700000 size=64 line=@xpersist
 * => fence/sfence line=@xpersist
 * => flush/clwb region=1 off=0x700040 size=64 line=@flush
 * => flush/clwb region=1 off=0x700080 size=64 line=@flush
 * => flush/clwb region=1 off=0x7000c0 size=64 line=@xflush
 * => fence/sfence line=@drain
 * => store/libpmem region=1 off=0x700100 size=32 data={bytes(range(32)).hex()} line=@cpy_p
 * => flush/clwb region=1 off=0x700100 size=64 line=@cpy_p
 * => fence/sfence line=@cpy_p
 * => store/libpmem region=1 off=0x700170 size=24 data={rep('5a',24)} line=@set_p
 * => flush/clwb region=1 off=0x700140 size=64 line=@set_p
 * => flush/clwb region=1 off=0x700180 size=64 line=@set_p
 * => fence/sfence line=@set_p
 * => store/libpmem region=1 off=0x700200 size=4 data=00010203 line=@cpy_0
 * => flush/clwb region=1 off=0x700200 size=64 line=@cpy_0
 * => fence/sfence line=@cpy_0
 * => store/libpmem region=1 off=0x700240 size=4 data=00010203 line=@cpy_nodrain
 * => flush/clwb region=1 off=0x700240 size=64 line=@cpy_nodrain
 * => store/libpmem region=1 off=0x700280 size=4 data=00010203 line=@cpy_noflush
 * => store/libpmem region=1 off=0x7002c0 size=5 data={rep('11',5)} line=@set_flags
 * => flush/clwb region=1 off=0x7002c0 size=64 line=@set_flags
 * => fence/sfence line=@set_flags
 * => store/libpmem region=1 off=0x700302 size=4 data=00010203 line=@mov_flags
 * => flush/clwb region=1 off=0x700300 size=64 line=@mov_flags
 */
#include <libpmemobj.h>
#include <string.h>

#include "corpus.h"

#define OFF 0x700000   /* inside the pool's heap, which a fresh pool leaves unused */

int main(int argc, char **argv)
{
	corpus_pool(argc, argv);                                           /* region 0 */
	char path[4096];
	snprintf(path, sizeof(path), "%s.obj", argc > 1 ? argv[1] : "corpus.pool");
	remove(path);
	PMEMobjpool *pop = pmemobj_create(path, "corpus", PMEMOBJ_MIN_POOL, 0600);   /* region 1 */
	if (pop == NULL) {
		fprintf(stderr, "corpus: pmemobj_create %s: %s\n", path, pmemobj_errormsg());
		return 3;
	}
	char *pm = (char *)pop + opaque(OFF);
	unsigned char src[32];
	for (int i = 0; i < 32; i++)
		src[i] = (unsigned char)i;
	*(volatile uint64_t *)pm = 0x1122334455667788ull;                 /* @st */
	pmemobj_persist(pop, pm, 8);                                      /* @persist */
	pmemobj_xpersist(pop, pm, 8, PMEMOBJ_F_RELAXED);                  /* @xpersist */
	pmemobj_flush(pop, pm + 0x70, 0x20);                              /* @flush */
	pmemobj_xflush(pop, pm + 0xc0, 8, PMEMOBJ_F_RELAXED);             /* @xflush */
	pmemobj_drain(pop);                                               /* @drain */
	pmemobj_memcpy_persist(pop, pm + 0x100, src, 32);                 /* @cpy_p */
	pmemobj_memset_persist(pop, pm + 0x170, 0x5a, 24);                /* @set_p */
	pmemobj_memcpy(pop, pm + 0x200, src, 4, 0);                       /* @cpy_0 */
	pmemobj_memcpy(pop, pm + 0x240, src, 4, PMEMOBJ_F_MEM_NODRAIN);   /* @cpy_nodrain */
	pmemobj_memcpy(pop, pm + 0x280, src, 4, PMEMOBJ_F_MEM_NOFLUSH);   /* @cpy_noflush */
	pmemobj_memset(pop, pm + 0x2c0, 0x11, 5, PMEMOBJ_F_MEM_NONTEMPORAL); /* @set_flags */
	pmemobj_memmove(pop, pm + 0x302, src, 4, PMEMOBJ_F_MEM_NODRAIN | PMEMOBJ_F_MEM_WB); /* @mov_flags */
	return 0;
}
