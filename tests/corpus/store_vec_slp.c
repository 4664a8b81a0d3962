/* crashcheck-corpus
 * construct: adjacent 8-byte stores that SLP merges into one 16-byte (and, with AVX, 32-byte) store at -O2
 * cflags: -mavx
 * cpu: avx
 * O0 => store/plain off=0x0 size=8 data={le(0x11,8)} line=@pa func=copy_pair
 * O0 => store/plain off=0x8 size=8 data={le(0x22,8)} line=@pb func=copy_pair
 * O2 => store/plain off=0x0 size=16 data={le(0x11,8)}{le(0x22,8)} line=@pa func=copy_pair
 * O0 => store/plain off=0x40 size=8 data={le(1,8)} line=@qa func=copy_quad
 * O0 => store/plain off=0x48 size=8 data={le(2,8)} line=@qb func=copy_quad
 * O0 => store/plain off=0x50 size=8 data={le(3,8)} line=@qc func=copy_quad
 * O0 => store/plain off=0x58 size=8 data={le(4,8)} line=@qd func=copy_quad
 * O2 => store/plain off=0x40 size=32 data={le(1,8)}{le(2,8)}{le(3,8)}{le(4,8)} line=@qa func=copy_quad
 */
#include "corpus.h"

struct pair { uint64_t a, b; };
struct quad { uint64_t a, b, c, d; };

__attribute__((noinline)) static void copy_pair(struct pair *d, const struct pair *s)
{
	d->a = s->a; /* @pa */
	d->b = s->b; /* @pb */
}

__attribute__((noinline)) static void copy_quad(struct quad *d, const struct quad *s)
{
	d->a = s->a; /* @qa */
	d->b = s->b; /* @qb */
	d->c = s->c; /* @qc */
	d->d = s->d; /* @qd */
}

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	struct pair p = { opaque(0x11), opaque(0x22) };
	struct quad q = { opaque(1), opaque(2), opaque(3), opaque(4) };
	copy_pair((struct pair *)pm, &p);
	copy_quad((struct quad *)(pm + 0x40), &q);
	return 0;
}
