/*
 * open_cost.c -- what one pmemobj_open costs by itself (bench/pmemobj_open/run): CPU time of
 * pmemobj_open and of pmemobj_close of one pool, over N rounds in one process (warm: the
 * library's allocations reuse freed memory), and what one open allocates and faults in.
 *
 * The floor under checking a libpmemobj structure's crash states one pmemobj_open each
 * (trees/common/own_image.c): no copy, no new process, only the library's own work.
 */
#include <libpmemobj.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

static double cpu_s(void)
{
	struct rusage r;
	getrusage(RUSAGE_SELF, &r);
	return r.ru_utime.tv_sec + r.ru_utime.tv_usec * 1e-6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: open_cost POOLFILE SIZE ROUNDS\n");
		return 2;
	}
	const char *path = argv[1];
	size_t size = strtoull(argv[2], NULL, 0);
	int rounds = atoi(argv[3]);
	unlink(path);
	PMEMobjpool *pop = pmemobj_create(path, "open_cost", size, 0600);
	if (!pop) {
		fprintf(stderr, "open_cost: pmemobj_create: %s\n", pmemobj_errormsg());
		return 1;
	}
	pmemobj_close(pop);

	/* one open: what it allocates and faults in (the check process gives all of it back after
	 * every state, so a check pays this every time) */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	struct mallinfo2 m0 = mallinfo2();
	struct rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	if (!(pop = pmemobj_open(path, "open_cost")))
		return 1;
	getrusage(RUSAGE_SELF, &r1);
	struct mallinfo2 m1 = mallinfo2();
	pmemobj_close(pop);

	double open_s = 0, close_s = 0;
	for (int i = 0; i < rounds; i++) {
		double t0 = cpu_s();
		if (!(pop = pmemobj_open(path, "open_cost")))
			return 1;
		double t1 = cpu_s();
		pmemobj_close(pop);
		close_s += cpu_s() - t1;
		open_s += t1 - t0;
	}
	printf("{\"size\": %zu, \"rounds\": %d, \"open_us\": %.0f, \"close_us\": %.0f, "
	       "\"first_open_alloc_bytes\": %zu, \"first_open_minor_faults\": %ld}\n",
	       size, rounds, 1e6 * open_s / rounds, 1e6 * close_s / rounds,
	       m1.uordblks - m0.uordblks, r1.ru_minflt - r0.ru_minflt);
	unlink(path);
	return 0;
}
