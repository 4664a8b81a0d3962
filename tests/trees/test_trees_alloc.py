"""The persistent allocator (trees/common/pm_alloc.c) through a small C program built here:
classes and alignment, zeroing, large runs, reuse, exhaustion, and the allocation state read back
from the image alone after a re-attach (which is what leak checks after a crash rely on)."""
from __future__ import annotations

import subprocess

from treeutil import CLANG, ROOT

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pm_alloc.h"

#define SIZE (4u << 20)
#define CHECK(c) do { if (!(c)) { printf("FAIL line %d: %s\n", __LINE__, #c); exit(1); } } while (0)

static size_t count, bytes;
static void tally(void *ctx, const void *obj, size_t size) { (void)ctx, (void)obj; count++; bytes += size; }

int main(int argc, char **argv)
{
	char *pool = crashcheck_pool_open(argv[1], SIZE, 0, CRASHCHECK_POOL_CREATE);
	CHECK(pool);
	CHECK(pm_pool_attach(pool, SIZE) == -1);           /* no magic yet */
	CHECK(pm_pool_format(pool, SIZE) == 0);
	CHECK(pm_root() == pool + 64);
	size_t sizes[] = {1, 8, 16, 17, 56, 57, 64, 65, 136, 4096};
	void *p[10];
	for (int i = 0; i < 10; i++) {
		p[i] = pm_alloc(sizes[i]);
		CHECK(p[i] && pm_contains(p[i]));
		CHECK((uintptr_t)p[i] % (sizes[i] >= 64 ? 64 : 8) == 0);
		CHECK(pm_object_size(p[i]) >= sizes[i]);
		memset(p[i], 0xab, sizes[i]);
	}
	CHECK(pm_object_size((char *)p[8] + 8) == 0);        /* not an object start */
	CHECK(!pm_contains(pool) && !pm_contains(pool + SIZE));
	void *big = pm_alloc(200000);                       /* a run of chunks */
	CHECK(big && pm_object_size(big) == 200000 && (uintptr_t)big % 65536 == 0);
	count = bytes = 0;
	pm_allocated(tally, NULL);
	CHECK(count == 11);
	/* free and reuse: the lowest free slot comes back, zeroed */
	void *again_addr = p[7];
	pm_free(p[7]);
	CHECK(pm_object_size(again_addr) == 0);
	void *q = pm_alloc(100);           /* same class (128) as the 65 bytes freed */
	CHECK(q == again_addr);
	for (int i = 0; i < 128; i++)
		CHECK(((unsigned char *)q)[i] == 0);
	pm_free(big);
	void *big2 = pm_alloc(100000);
	CHECK(big2 == big);                                 /* the freed run is reused */
	/* the image alone: a fresh attach sees the same objects */
	count = bytes = 0;
	pm_allocated(tally, NULL);
	size_t c1 = count, b1 = bytes;
	CHECK(pm_pool_attach(pool, SIZE) == 0);
	count = bytes = 0;
	pm_allocated(tally, NULL);
	CHECK(count == c1 && bytes == b1);
	void *r = pm_alloc(16);                             /* same choice after attach */
	CHECK(r && pm_object_size(r) == 16);
	/* exhaustion: NULL, not a crash; then frees make room again */
	void *all[100000];
	size_t n = 0;
	while (n < 100000 && (all[n] = pm_alloc(4096)))
		n++;
	CHECK(n > 100 && n < 100000);
	CHECK(pm_alloc(4096) == NULL && pm_alloc(1 << 20) == NULL);
	pm_free(all[n - 1]);
	CHECK(pm_alloc(4090) == all[n - 1]);         /* rounds up to the 4096 class */
	printf("ok %zu\n", n);
	return 0;
}
"""


def test_allocator(trees_built, tmp_path):
    src = tmp_path / "alloc_test.c"
    src.write_text(PROGRAM)
    exe = tmp_path / "alloc_test"
    build = subprocess.run([CLANG, "-O1", "-g", "-Wall", "-I", str(ROOT / "trees/common"),
                            "-I", str(ROOT / "instrument/include"), str(src), str(ROOT / "trees/common/pm_alloc.c"),
                            str(ROOT / "build/libcrashcheck_rt.a"), "-lpthread", "-ldl", "-o", str(exe)],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    res = subprocess.run([str(exe), str(tmp_path / "pool")], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.startswith("ok"), res.stdout + res.stderr
