/* crashcheck-corpus
 * construct: a file libpmem's pmem_map_file maps becomes a traced region (region 1): its stores and libpmem's persist of them carry region 1; registering the same mapping again is allowed and changes nothing
 * ldflags: -lpmem
 * => store/plain region=1 off=0x40 size=8 data={le(0x77,8)} line=@st
 * => flush/clwb region=1 off=0x40 size=64 line=@persist
 * => fence/sfence line=@persist
 * => store/plain region=1 off=0x88 size=8 data={le(0x78,8)} line=@st2
 */
#include <libpmem.h>

#include "corpus.h"

int main(int argc, char **argv)
{
	corpus_pool(argc, argv);                                           /* region 0 */
	char path[4096];
	snprintf(path, sizeof(path), "%s.pmem", argc > 1 ? argv[1] : "corpus.pool");
	size_t mapped;
	int is_pmem;
	char *pm = pmem_map_file(path, 4 * 4096, PMEM_FILE_CREATE, 0600, &mapped, &is_pmem);
	if (pm == NULL || mapped != 4 * 4096) {
		perror("corpus: pmem_map_file");
		return 3;
	}
	*(volatile uint64_t *)(pm + opaque(0x40)) = 0x77;                  /* @st */
	pmem_persist(pm + 0x40, 8);                                        /* @persist */
	if (crashcheck_register_pm(pm, mapped) != 0) {                     /* already traced: a no-op */
		fprintf(stderr, "corpus: %s\n", crashcheck_last_error());
		return 4;
	}
	*(volatile uint64_t *)(pm + opaque(0x88)) = 0x78;                  /* @st2 */
	return 0;
}
