/*
 * driver.c -- the driver program of a structure under test (one binary per tree)
 *
 *     driver run --pool FILE [--size BYTES] [--create] [--region IMAGE]... [--dump] [--check]
 *                [--results FILE] [HISTORY|-]
 *     driver check --pool IMAGE [--size BYTES] [--region IMAGE]... [--followup FILE]
 *     driver serve [--size BYTES] [--region OFFSET:SIZE]... [--timeout-ms N] [--mem-mb N]
 *     driver info
 *
 * A history with `thread N` sections (history.h) runs its load phase, then
 * one pthread per section (cc_run_threads): only for an adapter that sets
 * `threads`, else a usage error.
 * It knows the structure only through `cc_adapter` (cc_tree.h) and the pool
 * only through pm_alloc.h, so a user's structure gets the same driver by
 * linking its own adapter.  docs/trees.md describes the commands, the
 * history format and the check JSON.  User errors print one line on stderr
 * and exit 2.
 *
 * Regions past the pool: `--region` gives recovery the post-crash image of
 * each further PM region the structure registers (rt_supply.c), as a file
 * (run, check) or as a part of the runner's mapping (serve).
 *
 * Results on their own channel: with `--results FILE`, `run` writes its
 * result lines there (after a first line "!ready" once the pool is set up,
 * and a last line "!end N" once all N operations ran and the structure was
 * closed), never to stdout.  The structure under test
 * may print anything on stdout and stderr; a supervisor keeps that apart
 * and never parses it as a result.
 * A fault (SIGSEGV, SIGABRT ...) inside an operation adds a line
 * `!fault T I SIG` there first (fault.h): which operation on which thread.
 */
#include "crashcheck_own.h" /* first: this file is crashcheck's own code (rt_fault.c) */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cc_tree.h"
#include "check.h"
#include "crashcheck.h"
#include "fault.h"
#include "followup_memo.h"
#include "history.h"
#include "ops.h"
#include "persist.h" /* cc_persist_skip */
#include "pm_alloc.h"

#if __has_include("runner.h")
#include "runner.h"
#define HAVE_RUNNER 1
#endif

#define DEFAULT_POOL_SIZE ((size_t)64 << 20)

static const char *prog = "driver";

/* usage_error -- one line on stderr, exit 2 (internal) */
__attribute__((noreturn, format(printf, 1, 2)))
static void usage_error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* parse_size -- BYTES with an optional k/m/g suffix (internal) */
static size_t parse_size(const char *opt, const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s || errno || *s == '-')
		usage_error("%s: bad size '%s' (bytes, optionally with k, m or g)", opt, s);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end)
		usage_error("%s: bad size '%s' (bytes, optionally with k, m or g)", opt, s);
	return (size_t)v;
}

/* read_text -- a whole file ("-" = stdin) as a NUL-terminated string (internal) */
static char *read_text(const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	if (!f)
		usage_error("cannot open %s: %s", path, strerror(errno));
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (!buf)
			usage_error("out of memory reading %s", path);
		n += fread(buf + n, 1, cap - n - 1, f);
		if (n < cap - 1)
			break;
		cap *= 2;
		buf = realloc(buf, cap);
	}
	if (ferror(f))
		usage_error("cannot read %s: %s", path, strerror(errno));
	if (f != stdin)
		fclose(f);
	buf[n] = '\0';
	return buf;
}

/* parse_history -- a history file parsed for this adapter, or exit 2 (internal) */
static void parse_history(const char *path, struct cc_history *h)
{
	char *text = read_text(path);
	char err[256];
	if (cc_history_parse_for(text, &cc_adapter, h, err, sizeof(err)))
		usage_error("%s: %s", strcmp(path, "-") ? path : "<stdin>", err);
	free(text);
}

/* file_size_of -- size of the existing WHAT file PATH, or exit 2 saying which file (internal) */
static size_t file_size_of(const char *what, const char *path)
{
	struct stat st;
	if (stat(path, &st))
		usage_error("cannot open %s %s: %s", what, path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		usage_error("%s %s is not a regular file", what, path);
	return (size_t)st.st_size;
}

/* file_size -- size of an existing pool file, or exit 2 (internal) */
static size_t file_size(const char *path)
{
	return file_size_of("pool", path);
}

/* pool_address -- where pools are mapped: $CRASHCHECK_POOL_ADDR or the default (internal) */
static uintptr_t pool_address(void)
{
	const char *env = getenv("CRASHCHECK_POOL_ADDR");
	if (env && *env) {
		char *end;
		unsigned long long v = strtoull(env, &end, 0);
		if (*end || !v)
			usage_error("CRASHCHECK_POOL_ADDR='%s' is not an address", env);
		return (uintptr_t)v;
	}
	return CRASHCHECK_DEFAULT_POOL_ADDR;
}

/* map_private -- map SIZE bytes of FD (or anonymous memory if FD < 0) privately
 * at the pool address, so checks never change the image file (internal) */
static void *map_private(int fd, size_t size)
{
	uintptr_t addr = pool_address();
	int flags = MAP_PRIVATE | MAP_FIXED_NOREPLACE | (fd < 0 ? MAP_ANONYMOUS : 0);
	void *p = mmap((void *)addr, size, PROT_READ | PROT_WRITE, flags, fd, 0);
	if (p == MAP_FAILED || p != (void *)addr)
		usage_error("cannot map the pool at %#lx: %s (choose another with CRASHCHECK_POOL_ADDR)",
			    (unsigned long)addr, p == MAP_FAILED ? strerror(errno) : "address taken");
	if (crashcheck_register_pm(p, size))
		usage_error("cannot register the pool: %s", crashcheck_last_error());
	return p;
}

/* The post-crash images of the regions past the pool: region K+1 is extra[K] (`--region`). */
#define MAX_EXTRA 15
static const void *extra_image[MAX_EXTRA];
static size_t extra_size[MAX_EXTRA];
static size_t extra_off[MAX_EXTRA];          /* serve: where each lies in the runner's mapping */
static unsigned nextra;

/* add_region_file -- `--region IMAGE` of run and check: the next region's image, mapped
 * privately (never written) (internal) */
static void add_region_file(const char *path)
{
	if (nextra == MAX_EXTRA)
		usage_error("--region: at most %d regions past the pool", MAX_EXTRA);
	size_t size = file_size_of("region image", path);
	if (size == 0)
		usage_error("--region: image %s is empty", path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	void *p = fd < 0 ? MAP_FAILED : mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		usage_error("--region: cannot map image %s: %s", path, strerror(errno));
	close(fd);
	extra_image[nextra] = p;
	extra_size[nextra++] = size;
}

/* add_region_span -- `--region OFFSET:SIZE` of serve: the next region's image lies at OFFSET
 * in the runner's mapping, past the pool (crashsim/layout.py) (internal) */
static void add_region_span(const char *arg, size_t pool_size)
{
	if (nextra == MAX_EXTRA)
		usage_error("--region: at most %d regions past the pool", MAX_EXTRA);
	const char *colon = strchr(arg, ':');
	char off_text[32];
	if (!colon || (size_t)(colon - arg) >= sizeof(off_text))
		usage_error("--region: '%s' is not OFFSET:SIZE", arg);
	memcpy(off_text, arg, (size_t)(colon - arg));
	off_text[colon - arg] = '\0';
	size_t off = parse_size("--region", off_text), size = parse_size("--region", colon + 1);
	size_t prev_end = nextra ? extra_off[nextra - 1] + extra_size[nextra - 1] : pool_size;
	if (size == 0 || off < prev_end || off + size < off)
		usage_error("--region: '%s' is empty or overlaps the pool or the region before it", arg);
	extra_off[nextra] = off;
	extra_size[nextra++] = size;
}

/* supply_regions -- hand the regions past the pool to the runtime (internal) */
static void supply_regions(void)
{
	if (nextra && crashcheck_supply_regions(extra_image, extra_size, nextra))
		usage_error("%s", crashcheck_last_error());
}

/* run_ops -- H's operations on T, threaded when H has thread sections (internal) */
static void run_ops(void *t, const struct cc_history *h, FILE *out, int check)
{
	if (!h->nthreads)
		cc_run_history(&cc_adapter, t, h, out, check);
	else if (cc_run_threads(&cc_adapter, t, h, out, check))
		exit(2);
}

/* run_no_pm -- `run` of a structure that declares no PM: no pool, a fresh structure; results
 * to OUT, with the `!ready` / `!end` lines when they go to a --results file (internal) */
static int run_no_pm(struct cc_history *h, int dump, int check, FILE *out, const char *results)
{
	void *t = cc_adapter.create(NULL, 0);
	if (!t)
		usage_error("%s: create failed", cc_adapter.name);
	static char outbuf[1 << 16];
	setvbuf(out, outbuf, _IOFBF, sizeof(outbuf));
	if (results) {
		fputs("!ready\n", out);
		fflush(out);
	}
	run_ops(t, h, out, check);
	if (dump)
		cc_print_dump(&cc_adapter, t, out);
	fflush(out);
	if (cc_adapter.close)
		cc_adapter.close(t);
	if (results) {
		fprintf(out, "!end %zu\n", h->n);
		if (fclose(out))
			usage_error("cannot write %s: %s", results, strerror(errno));
	}
	cc_history_free(h);
	return 0;
}

static int run_ready(void *t, struct cc_history *hp, FILE *out, const char *results, int dump, int check);

/* cmd_run -- run a history on a new or existing pool (internal) */
static int cmd_run(int argc, char **argv)
{
	const char *pool_path = NULL, *hist = "-", *results = NULL;
	size_t size = 0;
	int create = 0, dump = 0, check = 0, have_hist = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--pool") && i + 1 < argc)
			pool_path = argv[++i];
		else if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = parse_size("--size", argv[++i]);
		else if (!strcmp(argv[i], "--create"))
			create = 1;
		else if (!strcmp(argv[i], "--dump"))
			dump = 1;
		else if (!strcmp(argv[i], "--check"))
			check = 1;
		else if (!strcmp(argv[i], "--results") && i + 1 < argc)
			results = argv[++i];
		else if (!strcmp(argv[i], "--region") && i + 1 < argc)
			add_region_file(argv[++i]);
		else if ((argv[i][0] != '-' || !strcmp(argv[i], "-")) && !have_hist)
			hist = argv[i], have_hist = 1;
		else
			usage_error("run: unexpected argument '%s' (usage: run --pool FILE [--size BYTES] "
				    "[--create] [--region IMAGE]... [--dump] [--check] [--results FILE] "
				    "[HISTORY|-])", argv[i]);
	}
	if (!pool_path && !cc_adapter.no_pm)
		usage_error("run: --pool FILE is required");
	if (nextra && create)
		usage_error("run: --region gives recovery its regions' images; it does not go with --create");
	supply_regions();
	struct cc_history h;
	parse_history(hist, &h);
	if (h.nthreads && !cc_adapter.threads)
		usage_error("%s: %s is not thread-safe: a history with thread sections needs a structure "
			    "whose adapter sets .threads", strcmp(hist, "-") ? hist : "<stdin>", cc_adapter.name);
	FILE *out = stdout;
	if (results && !(out = fopen(results, "w")))
		usage_error("cannot create %s: %s", results, strerror(errno));
	if (results)
		/* a fault inside an operation names it and its thread (`!fault`, fault.h); set before
		 * the structure is created, so a handler of its own replaces this one */
		cc_fault_watch(fileno(out));
	if (cc_adapter.no_pm)
		return run_no_pm(&h, dump, check, out, results);
	if (!size)
		size = create ? DEFAULT_POOL_SIZE : file_size(pool_path);
	else if (!create && file_size(pool_path) < size)
		usage_error("pool %s is smaller than --size %zu", pool_path, size);
	void *t;
	if (cc_own_pool(&cc_adapter)) {
		/* the structure maps its pool file itself (cc_tree.h create_file/open_file) */
		crashcheck_supply_begin(0);
		if (create) {
			unlink(pool_path);
			if (!(t = cc_adapter.create_file(pool_path, size)))
				usage_error("%s: create failed on pool %s", cc_adapter.name, pool_path);
		} else if (!(t = cc_adapter.open_file(pool_path, size))) {
			usage_error("%s: cannot open pool %s", cc_adapter.name, pool_path);
		} else if (cc_adapter.recover(t)) {
			fprintf(stderr, "%s: recovery of %s failed\n", prog, pool_path);
			return 1;
		}
		return run_ready(t, &h, out, results, dump, check);
	}
	void *pool = crashcheck_pool_open(pool_path, size, 0, create ? CRASHCHECK_POOL_CREATE : 0);
	if (!pool)
		usage_error("%s", crashcheck_last_error());
	crashcheck_supply_begin(1);
	if (create) {
		if (pm_pool_format(pool, size))
			exit(2); /* pm_pool_format said why, on one line */
		if (!(t = cc_adapter.create(pool, size)))
			usage_error("%s: create failed on pool %s", cc_adapter.name, pool_path);
	} else {
		if (pm_pool_attach(pool, size))
			usage_error("pool %s holds no formatted pool (use --create for a new one)", pool_path);
		if (!(t = cc_adapter.open(pool, size)))
			usage_error("%s: cannot open pool %s", cc_adapter.name, pool_path);
		int st = cc_adapter.recover(t);
		if (st) {
			fprintf(stderr, "%s: recovery of %s failed with status %d\n", prog, pool_path, st);
			return 1;
		}
	}
	return run_ready(t, &h, out, results, dump, check);
}

/* run_ready -- the history H on the structure T, set up and (if need be) recovered: results to
 * OUT, with the `!ready` / `!end` lines when they go to a --results file (internal) */
static int run_ready(void *t, struct cc_history *hp, FILE *out, const char *results, int dump, int check)
{
	struct cc_history h = *hp;
	static char outbuf[1 << 16];
	setvbuf(out, outbuf, _IOFBF, sizeof(outbuf));
	if (results) {
		/* set-up (format and create, or recovery) is over: what dies from here on
		 * dies in an operation */
		fputs("!ready\n", out);
		fflush(out);
	}
	run_ops(t, &h, out, check);
	if (dump)
		cc_print_dump(&cc_adapter, t, out);
	fflush(out);
	if (cc_adapter.close)
		cc_adapter.close(t);
	crashcheck_trace_flush();
	if (results) {
		/* the run reached its end: an exit(0) inside an operation never gets here */
		fprintf(out, "!end %zu\n", h.n);
		if (fclose(out))
			usage_error("cannot write %s: %s", results, strerror(errno));
	}
	cc_history_free(&h);
	return 0;
}

/* cmd_check -- recover an image (privately mapped) and print the check JSON (internal) */
static int cmd_check(int argc, char **argv)
{
	const char *pool_path = NULL, *followup = NULL;
	size_t size = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--pool") && i + 1 < argc)
			pool_path = argv[++i];
		else if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = parse_size("--size", argv[++i]);
		else if (!strcmp(argv[i], "--followup") && i + 1 < argc)
			followup = argv[++i];
		else if (!strcmp(argv[i], "--region") && i + 1 < argc)
			add_region_file(argv[++i]);
		else
			usage_error("check: unexpected argument '%s' (usage: check --pool IMAGE "
				    "[--size BYTES] [--region IMAGE]... [--followup FILE])", argv[i]);
	}
	if (!pool_path && !cc_adapter.no_pm)
		usage_error("check: --pool IMAGE is required");
	char *text = NULL;
	if (followup) {
		struct cc_history h;
		parse_history(followup, &h); /* user errors before any mapping */
		cc_history_free(&h);
		text = read_text(followup);
	}
	if (cc_adapter.no_pm) {
		/* nothing survives a crash in DRAM: the check sees a fresh structure */
		cc_check_image(&cc_adapter, NULL, 0, text, stdout);
		free(text);
		return 0;
	}
	size_t have = file_size(pool_path);
	if (!size)
		size = have;
	if (have < size)
		usage_error("image %s has %zu bytes, --size says %zu", pool_path, have, size);
	if (size == 0)
		usage_error("image %s is empty", pool_path);
	int fd = open(pool_path, O_RDONLY);
	if (fd < 0)
		usage_error("cannot open image %s: %s", pool_path, strerror(errno));
	void *pool = map_private(fd, size);
	close(fd);
	supply_regions();
	cc_check_image(&cc_adapter, pool, size, text, stdout);
	free(text);
	return 0;
}

#ifdef HAVE_RUNNER
/* serve_check -- the runner's CHECK: the image is in place at the pool address (internal) */
static int serve_check(void *ctx, const char *followup, FILE *out)
{
	size_t size = *(size_t *)ctx;
	return cc_check_image(&cc_adapter, (void *)pool_address(), size, followup, out);
}
#endif

/* cmd_serve -- the fork server of the checker runner (internal) */
static int cmd_serve(int argc, char **argv)
{
	size_t size = DEFAULT_POOL_SIZE;
#ifdef HAVE_RUNNER
	struct cc_runner_limits lim = CC_RUNNER_DEFAULT_LIMITS;
#endif
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--size") && i + 1 < argc) {
			if (nextra)
				usage_error("serve: --size goes before --region");
			size = parse_size("--size", argv[++i]);
		} else if (!strcmp(argv[i], "--region") && i + 1 < argc) {
			add_region_span(argv[++i], size);
		} else if (!strcmp(argv[i], "--timeout-ms") && i + 1 < argc) {
			size_t ms = parse_size("--timeout-ms", argv[++i]);
#ifdef HAVE_RUNNER
			lim.timeout_ms = (unsigned)ms;
#endif
			(void)ms;
		} else if (!strcmp(argv[i], "--mem-mb") && i + 1 < argc) {
			size_t mb = parse_size("--mem-mb", argv[++i]);
#ifdef HAVE_RUNNER
			lim.mem_bytes = mb << 20;
#endif
			(void)mb;
		} else {
			usage_error("serve: unexpected argument '%s' (usage: serve [--size BYTES] "
				    "[--region OFFSET:SIZE]... [--timeout-ms N] [--mem-mb N])", argv[i]);
		}
	}
	if (size == 0)
		usage_error("serve: --size must be positive");
#ifdef HAVE_RUNNER
	/* the runner maps the pool itself (private, fixed) and forks one child per state; the
	 * regions past the pool follow it in the same mapping */
	static size_t pool_size;
	pool_size = size;
	char *base = (char *)pool_address();
	size_t mapped = size;
	for (unsigned k = 0; k < nextra; k++) {
		extra_image[k] = base + extra_off[k];
		mapped = (extra_off[k] + extra_size[k] + 4095) & ~(size_t)4095;
	}
	supply_regions();
	/* no flush or fence of a check's private image makes anything durable (persist.h): the
	 * check processes start from this one's memory, the flag set */
	cc_persist_skip = getenv("CRASHCHECK_TRACE") == NULL;
	/* the states of a crash point run one follow-up text: parsed once (followup_memo.h) */
	cc_followup_memo_init();
	return cc_runner_serve(0, 1, base, mapped, serve_check, &pool_size, &lim) ? 1 : 0;
#else
	usage_error("serve: this driver was built without the checker runner (crashsim/runner/runner.h)");
#endif
}

/* Defined by the runtime's rt_pmemobj.c, which is linked in only when the pass sent a call of
 * this program to libpmemobj's (or libpmem's pmem_map_file) pool functions through it: the pass
 * then traces such a pool. */
extern const int __cc_pmemobj_pools __attribute__((weak));
/* Defined by the runtime's rt_pmdk.c, linked in when libpmemobj built with the pass maps a pool
 * through it (`crashcheck build --pmdk`): the pass traces that pool and the library's stores. */
extern const int __cc_pmdk_pools __attribute__((weak));

/* cmd_info -- the structure's name and key/value shape as JSON (internal) */
static int cmd_info(int argc, char **argv)
{
	(void)argv;
	if (argc)
		usage_error("info takes no arguments");
	printf("{\"name\": \"%s\", \"key_kind\": \"%s\", \"value_size\": %zu, \"value_min\": %zu, "
	       "\"model\": \"%s\", \"threads\": %s, \"own_pool\": %s",
	       cc_adapter.name, cc_adapter.key_kind == CC_KEYS_U64 ? "u64" : "bytes", cc_adapter.value_size,
	       cc_value_min(&cc_adapter), cc_model(&cc_adapter),
	       cc_adapter.threads ? "true" : "false", cc_own_pool(&cc_adapter) ? "true" : "false");
	printf(", \"pass_traces_pool\": %s",
	       cc_own_pool(&cc_adapter) && (&__cc_pmemobj_pools || &__cc_pmdk_pools) ? "true" : "false");
	if (cc_own_pool(&cc_adapter) && &__cc_pmdk_pools)
		/* the library's pool creation would be traced: the harness makes the pool once,
		 * untraced, and each history opens a copy (harness/check/base_pool.py) */
		printf(", \"pmdk_library\": true");
	if (cc_adapter.persistency)
		printf(", \"persistency\": \"%s\"", cc_adapter.persistency);
	if (cc_is_map(&cc_adapter)) {
		/* the map operations it has: update, delete and scan are optional (NULL) */
		static const enum cc_op_kind kinds[] = {OP_INSERT, OP_UPDATE, OP_DELETE, OP_LOOKUP, OP_SCAN};
		static const char *const names[] = {"insert", "update", "delete", "lookup", "scan"};
		printf(", \"map_ops\": [");
		for (int i = 0, n = 0; i < 5; i++)
			if (!cc_missing_verb(&cc_adapter, kinds[i]))
				printf("%s\"%s\"", n++ ? ", " : "", names[i]);
		printf("]");
	} else {
		/* the operation table: names and argument kinds ("u" u64, "b" bytes) */
		printf(", \"pm\": %s, \"ops\": [", cc_adapter.no_pm ? "false" : "true");
		for (int i = 0; cc_adapter.ops && cc_adapter.ops[i].name; i++)
			printf("%s{\"name\": \"%s\", \"args\": \"%s\"}", i ? ", " : "",
			       cc_adapter.ops[i].name, cc_adapter.ops[i].args);
		printf("]");
	}
	printf("}\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct { const char *name; int (*fn)(int, char **); } cmds[] = {
		{"run", cmd_run}, {"check", cmd_check}, {"serve", cmd_serve}, {"info", cmd_info},
	};
	/* a fault in crashcheck's own code is told apart from the structure's (rt_fault.c) */
	crashcheck_fault_guard();
	prog = cc_adapter.name;
	if (argc < 2)
		usage_error("usage: %s run|check|serve|info ... (see docs/trees.md)", argv[0]);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 2, argv + 2);
	usage_error("unknown command '%s' (run, check, serve, info)", argv[1]);
}
