/* crashcheck-corpus
 * construct: memcpy, memmove and memset with run-time lengths (LLVM memory intrinsics)
 * => store/memset off=0x100 size=100 data={rep('ab',100)} line=@set
 * => store/memcpy off=0x200 size=37 data={bytes(range(37)).hex()} line=@cpy
 * => store/memmove off=0x202 size=30 data={bytes(range(30)).hex()} line=@mov
 * => store/memset off=0x300 size=8 data={rep('00',8)} line=@small
 */
#include <string.h>

#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	unsigned char src[64];
	for (int i = 0; i < 64; i++)
		src[i] = (unsigned char)i;
	memset(pm + 0x100, 0xab, opaque(100));  /* @set */
	memcpy(pm + 0x200, src, opaque(37));    /* @cpy */
	memmove(pm + 0x202, pm + 0x200, opaque(30)); /* @mov */
	memset(pm + 0x300, 0, opaque(8));        /* @small */
	memset(pm + 0x400, 0x55, opaque(0));     /* nothing: zero length */
	return 0;
}
