/* crashcheck-corpus
 * construct: a fill wider than 32 KiB is logged as consecutive store events of at most 32 KiB
 * => store/memset off=0x100 size=32768 data={rep('cd',32768)} line=@big
 * => store/memset off=0x8100 size=32768 data={rep('cd',32768)} line=@big
 * => store/memset off=0x10100 size=4464 data={rep('cd',4464)} line=@big
 * => store/memcpy off=0x20000 size=32768 data={rep('cd',32768)} line=@exact
 */
#include <string.h>

#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	memset(pm + 0x100, 0xcd, opaque(70000));          /* @big */
	memcpy(pm + 0x20000, pm + 0x100, opaque(32768));  /* @exact */
	return 0;
}
