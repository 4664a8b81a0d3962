/* crashcheck-corpus
 * construct: zero stores the optimizer merges into a memset, and a memset it shrinks around a store
 * O0 => store/plain off=0x40 size=8 data={le(0,8)} line=@z func=zero_node
 * O0 => store/plain off=0x48 size=8 data={le(0,8)} line=@z func=zero_node
 * O0 => store/plain off=0x50 size=8 data={le(0,8)} line=@z func=zero_node
 * O0 => store/plain off=0x58 size=8 data={le(0,8)} line=@z func=zero_node
 * O2 => store/memset off=0x40 size=32 data={rep('00',32)} line=@z func=zero_node
 * O0 => store/memset off=0x80 size=32 data={rep('00',32)} line=@ms func=init_node
 * O2 => store/memset off=0x88 size=24 data={rep('00',24)} line=@ms func=init_node
 * => store/plain off=0x80 size=8 data={le(42,8)} line=@k func=init_node
 */
#include <string.h>

#include "corpus.h"

struct node { uint64_t k, v, l, r; };

__attribute__((noinline)) static void zero_node(struct node *n)
{
	n->k = 0; n->v = 0; n->l = 0; n->r = 0; /* @z */
}

__attribute__((noinline)) static void init_node(struct node *n, uint64_t k)
{
	memset(n, 0, sizeof *n); /* @ms */
	n->k = k;                /* @k */
}

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	zero_node((struct node *)(pm + 0x40));
	init_node((struct node *)(pm + 0x80), opaque(42));
	return 0;
}
