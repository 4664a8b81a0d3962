/* crashcheck-corpus
 * construct: a small helper inlined at two call sites, whose two stores -O2 merges into one with a location of line 0 in the caller: the site takes the nearest located line (never line 0)
 * O0 => store/plain off=0x0 size=8 data={le(7,8)} line=@st func=put
 * O2 => store/plain off=0x0 size=8 data={le(7,8)} line=@cond func=pick
 */
#include "corpus.h"

static inline void put(uint64_t *p, uint64_t v)
{
	*p = v;   /* @st */
}

__attribute__((noinline)) static void pick(uint64_t *p, int c, uint64_t v)
{
	if (c)    /* @cond */
		put(p, v * 3);
	else
		put(p, v + 1);
}

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	pick((uint64_t *)pm, (int)opaque(0), opaque(6));
	return 0;
}
