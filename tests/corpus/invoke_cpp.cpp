/* crashcheck-corpus
 * construct: C++ with a destructor in scope: libpmem and crashcheck API calls are `invoke`s; they are logged (and compile)
 * ldflags: -lpmem
 * => store/plain off=0x0 size=1 data=01 line=@st
 * => flush/clwb off=0x0 size=64 line=@persist
 * => fence/sfence line=@persist
 * => op_begin index=1 line=@begin
 * => alloc off=0x40 size=16 line=@alloc
 * => mark size=1 data=78 line=@mark
 * => store/memcpy off=0x80 size=5 data=6162636465 line=@cpy
 */
#include <libpmem.h>

#include <cstring>
#include <string>

#include "corpus.h"

struct Guard {
	std::string s;
	~Guard() { std::fputs(s.c_str(), stderr); }
};

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	Guard g{std::string(argv[0]) + "\n"};
	pm[0] = 1;                                /* @st */
	pmem_persist(pm, 8);                      /* @persist */
	crashcheck_op_begin(1);                   /* @begin */
	crashcheck_alloc(pm + 0x40, 16);          /* @alloc */
	crashcheck_mark("x");                     /* @mark */
	std::memcpy(pm + 0x80, "abcde", opaque(5)); /* @cpy */
	return 0;
}
