/* crashcheck-corpus
 * construct: operation markers and labels: crashcheck_op_begin/op_end carry the index, crashcheck_mark the label
 * => op_begin index=7 line=@begin
 * => mark size=5 data={b'hello'.hex()} line=@mark
 * => store/plain off=0x0 size=8 data={le(7,8)} line=@st
 * => op_end index=7 line=@end
 * => op_begin index=0xffffffffffff line=@big
 * => mark line=@empty
 * => op_end index=0xffffffffffff line=@bigend
 */
#include "corpus.h"

/* The largest index the format holds: the event's address field has 48 bits. */
#define BIG ((1ull << 48) - 1)

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	crashcheck_op_begin(7);          /* @begin */
	crashcheck_mark("hello");        /* @mark */
	*(uint64_t *)pm = 7;             /* @st */
	crashcheck_op_end(7);            /* @end */
	crashcheck_op_begin(BIG);        /* @big */
	crashcheck_mark("");             /* @empty */
	crashcheck_op_end(BIG);          /* @bigend */
	return 0;
}
