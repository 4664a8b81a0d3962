/* crashcheck-corpus
 * construct: a small helper inlined at two call sites, whose two stores -O2 merges into one with a location of line 0 in the caller: the site takes the nearest located line (never line 0)
 * O0 => store/plain off=0x0 size=8 data={le(7,8)} line=@st func=put
 * O2 llvm<19 => store/plain off=0x0 size=8 data={le(7,8)} line=@cond func=pick
 * O2 llvm>=19 => store/plain off=0x0 size=8 data={le(7,8)} line=@st func=put ifunc=pick
*/
/* Why two -O2 lines: LLVM 19 merges the two inlined stores' locations differently. Clang 14 and
 * 16 give the merged store a line-0 location in pick, so the site takes pick's nearest line (@cond).
 * Clang 19 keeps what both stores share, put's line (@st), inlined into pick at line 0 (no inl=
 * line: the two call sites differ). Both are what the IR says; the pass never invents a line.
 * (17 and 18 are untested: which side of the change they are on is not checked.) */
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
