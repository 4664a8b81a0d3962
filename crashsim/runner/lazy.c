/*
 * lazy.c -- lazy crash-state exploration in the checker child
 *
 * A LAZY request (docs/runner-protocol.md) checks a whole crash point's
 * states, not one: its undetermined cache lines come in groups (the lines a
 * set of pending units writes), each with its legal contents ("variants",
 * one per joint choice of the group's units).  The child starts with every
 * group at variant 0 and runs the check; the pass calls __cc_check_load
 * before every read that may touch PM (rt_lazy.c).  At the first read of a
 * group's bytes that its still-allowed variants disagree on, the child
 * branches: the allowed variants split into classes by the bytes read
 * (variants giving the same bytes are one class), the request's decision
 * list picks the class (class 0 once the list is used up), the group is
 * narrowed to that class and its lines rewritten to the class's first
 * member, so later reads see the choice.  Bytes recovery wrote itself before
 * reading them are its own, never compared nor rewritten.
 *
 * An execution naming the stored body (LAZY_BODY) runs in the reused check
 * process (worker.h) when the body fits the shared copy kept for it: the
 * worker parses the groups from that copy itself (its own tables are put back
 * after every check, as its heap is), so an execution costs a wake-up and a
 * restore instead of a fork.  Other executions fork a child of their own.
 *
 * Branching is by deterministic re-execution, not by forking here: each
 * execution reports how many classes every branch point had, and the client
 * (crashsim/lazy.py) sends the sibling decision lists as new requests.  So a
 * leaf that crashes, hangs or exhausts memory ends like any other state, and
 * one child is one execution with one answer.  The branch log and the
 * allowed sets live in a shared mapping, so they survive the child's death
 * and the parent adds them to the answer ("lazy": ...).
 *
 * The child also logs which bytes of the pool the check read at all (a bit
 * per line and a bit per byte, in shared mappings; "read" and "partial" in
 * the answer): the answer holds for any image that has the same bytes
 * there, which the client uses to answer later crash points without running
 * them (crashsim/lazy.py ReadMemo).  Bytes, not only lines: a check that
 * reads a node's header and not the slot beside it that a crash point
 * leaves pending is still the same check.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runner_internal.h"

/* rt_lazy.c (the runtime, same library): where check loads and stores go. */
typedef void (*cc_lazy_fn)(uintptr_t addr, uint64_t size);
void cc_lazy_install(cc_lazy_fn load, cc_lazy_fn store);
extern const int __cc_module_check_loads __attribute__((weak));

#define LZ_CSTRING UINT64_MAX
#define LZ_MAX_BRANCHES 16384
#define LZ_SHARED_BYTES ((size_t)4 << 20)
#define LZ_MAX_LINE 256
#define LZ_MAX_READ_RUNS 4096     /* more runs of read lines: "read": null (not reused) */
#define LZ_MAX_PARTIAL 4096       /* more lines read in part: "partial": null (taken as whole) */

/* The shared mapping: what the parent reads back after the child ended. */
struct lz_shared {
	uint32_t nbranches;       /* branch points met (may exceed LZ_MAX_BRANCHES) */
	uint32_t diverged;        /* a decision named a class that does not exist */
	uint32_t ncls[LZ_MAX_BRANCHES];
	uint64_t allowed[];       /* per group, a bitmap over its variants */
};
#define LZ_BITMAP_WORDS ((LZ_SHARED_BYTES - sizeof(struct lz_shared)) / 8)

struct lz_group {
	uint32_t nlines, nvar, first;   /* lines[first .. first + nlines) */
	const uint8_t *content;         /* nvar * nlines * line_size bytes */
	size_t bits;                    /* word offset of its bitmap in allowed[] */
	uint32_t nallowed;              /* child-side count of set bits */
};

struct lz_line {
	uint64_t off;       /* pool offset, line-aligned */
	uint32_t group, idx;
	uint64_t owned[LZ_MAX_LINE / 64];   /* child-side: bytes recovery wrote */
};

static struct lz_state {
	int active;
	uint32_t line_size, ngroups, nlines, ndec;
	const uint8_t *dec;               /* u16 decisions, unaligned */
	struct lz_group *groups;
	struct lz_line *lines;
	uint32_t *sorted;                 /* line indices by offset */
	uint32_t *cls, *rep;              /* scratch: class of each variant, representatives */
	size_t groups_cap, lines_cap, scratch_cap;
	struct lz_shared *shared;
	uint8_t *pool;
	uintptr_t lo, hi;                 /* hull of the lines (addresses) */
	/* The read log (ccr_lazy_setup): shared, so a child that dies still
	 * reports it; cleared as an answer reports it, so stale bits (of a
	 * check whose answer was never made) can only make a read set larger. */
	uint64_t *read_bytes;             /* a bit per pool byte the check read */
	uint64_t *read_blocks;            /* a bit per 64-byte block with such a byte */
	size_t pool_size;
} lz;

static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* ccr_lazy_supported -- whether the code under test was compiled with check loads */
int ccr_lazy_supported(void)
{
	return &__cc_module_check_loads != NULL;
}

static int by_off(const void *a, const void *b)
{
	uint64_t x = lz.lines[*(const uint32_t *)a].off, y = lz.lines[*(const uint32_t *)b].off;
	return x < y ? -1 : x > y;
}

static int grew;   /* an array grew: the runner's address-space size changed */

static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
	if (n <= *cap)
		return 0;
	size_t c = *cap ? *cap : 16;
	while (c < n)
		c *= 2;
	void *q = realloc(*p, c * elem);
	if (q == NULL)
		return -1;
	*p = q;
	*cap = c;
	grew = 1;
	return 0;
}

/*
 * The stored body (LAZY_BODY requests): a crash point's groups, sent once and
 * named by every execution of the point (ngroups LZ_STORED), instead of
 * carried by each (on code that leaves lines unflushed, about 150 KB per
 * execution).  tables_stored: lz's tables were last parsed from it, so an
 * execution naming it needs only its decisions set.
 */
#define LZ_STORED UINT32_MAX
static uint8_t *stored;                /* the body: shared_body, or heap_body when it does not fit */
static uint8_t *heap_body;
static size_t stored_len, stored_cap;
static uint32_t stored_ls, stored_ngroups;
static int have_stored, tables_stored;

/* The shared copy of the stored body (ccr_lazy_setup maps it before the
 * reused check process exists, so it is at the same address there): the
 * worker parses it for an execution naming it (ccr_lazy_worker_begin).
 * Its header is written after the body, so the worker never sees a header
 * for a body that is still being copied (the runner copies between batches
 * anyway). */
#define LZ_SHARED_BODY ((size_t)4 << 20)
struct lz_body_head {
	uint64_t len;
	uint32_t ls, ngroups;
};
static struct lz_body_head *shared_head;
static uint8_t *shared_body;
static struct lz_shared *shared_log;   /* the exploration log, mapped by ccr_lazy_setup */
static int from_stored;                /* the request being served names the stored body */

static const char *parse_groups(struct runner *r, const uint8_t *p, size_t n);

static const char *parse_line_size(uint32_t ls)
{
	if (ls == 0 || ls > LZ_MAX_LINE || (ls & (ls - 1)))
		return "lazy spec: line size must be a power of two up to 256";
	return NULL;
}

/*
 * ccr_lazy_parse -- validate a LAZY request's spec and prepare the child's
 * tables (in the parent, before the fork).  NULL, or what is wrong.
 *
 *   spec   := u32 line_size | u32 ngroups | u32 ndec | u16 dec[ndec] | group*
 *   group  := u32 nlines | u32 nvar | u64 offset[nlines] | content
 *   content = nvar * nlines * line_size bytes: variant v's copy of line i at
 *             (v * nlines + i) * line_size
 * ngroups LZ_STORED: no groups follow the decisions; they are the stored
 * body's (ccr_lazy_store), whose line size must be the spec's.
 */
const char *ccr_lazy_parse(struct runner *r, const uint8_t *p, size_t n)
{
	if (shared_log == NULL) {   /* ccr_lazy_setup could not map it: try again */
		void *m = mmap(NULL, LZ_SHARED_BYTES, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED)
			return "cannot map the lazy exploration log";
		shared_log = m;
		r->vm_stale = 1;
	}
	lz.active = 0;
	lz.shared = shared_log;
	from_stored = 0;
	if (n < 12)
		return "lazy spec shorter than its header";
	uint32_t ls = rd32(p), ngroups = rd32(p + 4), ndec = rd32(p + 8);
	const char *bad = parse_line_size(ls);
	if (bad)
		return bad;
	size_t pos = 12;
	if (ndec > (n - pos) / 2)
		return "lazy spec: decisions run past the body";
	if (ngroups == LZ_STORED) {
		if (!have_stored)
			return "lazy spec names the stored body, but none is stored";
		if (ls != stored_ls)
			return "lazy spec: line size differs from the stored body's";
		if (pos + (size_t)ndec * 2 != n)
			return "lazy spec: bytes after the decisions of a spec naming the stored body";
		if (!tables_stored) {
			lz.line_size = stored_ls;
			lz.ngroups = stored_ngroups;
			bad = parse_groups(r, stored, stored_len);
			if (bad)
				return bad;        /* cannot happen: it was parsed when stored */
			tables_stored = 1;
		}
		lz.ndec = ndec;
		lz.dec = p + pos;
		lz.active = 1;
		from_stored = 1;
		return NULL;
	}
	lz.line_size = ls;
	lz.ngroups = ngroups;
	lz.ndec = ndec;
	lz.dec = p + pos;
	pos += (size_t)ndec * 2;
	tables_stored = 0;
	return parse_groups(r, p + pos, n - pos);
}

/*
 * ccr_lazy_store -- keep a LAZY_BODY request's groups (a spec without
 * decisions: u32 line_size | u32 ngroups | group*) for the executions that
 * name them.  NULL, or what is wrong (then no body is stored).
 */
const char *ccr_lazy_store(struct runner *r, const uint8_t *p, size_t n)
{
	have_stored = tables_stored = 0;
	lz.active = 0;
	if (n < 8)
		return "lazy body shorter than its header";
	uint32_t ls = rd32(p), ngroups = rd32(p + 4);
	const char *bad = parse_line_size(ls);
	if (bad)
		return bad;
	if (ngroups == LZ_STORED)
		return "lazy body: too many groups";
	if (shared_head != NULL)
		shared_head->len = 0;     /* no body for the worker until this one is whole */
	if (shared_body != NULL && n - 8 <= LZ_SHARED_BODY) {
		stored = shared_body;
	} else {
		if (n - 8 > stored_cap) {
			/* kept and grown, never shrunk: a new allocation would make the
			 * runner re-measure its address space for the next child */
			if (grow((void **)&heap_body, &stored_cap, n - 8, 1) < 0)
				return "out of memory";
			r->vm_stale = 1;
			grew = 0;
		}
		stored = heap_body;
	}
	memcpy(stored, p + 8, n - 8);
	stored_len = n - 8;
	lz.line_size = ls;
	lz.ngroups = ngroups;
	lz.ndec = 0;
	lz.dec = stored;
	bad = parse_groups(r, stored, stored_len);
	lz.active = 0;        /* a body is not an execution */
	if (bad)
		return bad;
	stored_ls = ls;
	stored_ngroups = ngroups;
	have_stored = tables_stored = 1;
	if (stored == shared_body)
		*shared_head = (struct lz_body_head){ stored_len, ls, ngroups };
	return NULL;
}

/* ccr_lazy_worker_ok -- whether the LAZY request being served can run in the
 * reused check process: it names the stored body, which the worker can read */
int ccr_lazy_worker_ok(void)
{
	return lz.active && from_stored && stored == shared_body && shared_head != NULL &&
	       shared_head->len == stored_len && shared_log != NULL;
}

/* ccr_lazy_decisions -- the decision list of the request being served */
const uint8_t *ccr_lazy_decisions(uint32_t *ndec)
{
	*ndec = lz.ndec;
	return lz.dec;
}

/*
 * ccr_lazy_worker_begin -- in the reused check process, after the state's
 * writes: the tables of the stored body (from its shared copy: the worker's
 * own copy of the runner's may be stale, and is put back after every check),
 * the decision list DEC (NDEC u16, unaligned), then as a forked child
 * begins.  -1 if the shared body is missing or does not parse (it parsed in
 * the runner: out of memory).
 */
int ccr_lazy_worker_begin(const uint8_t *dec, uint32_t ndec)
{
	if (shared_head == NULL || shared_head->len == 0 || shared_log == NULL)
		return -1;
	lz.shared = shared_log;
	lz.line_size = shared_head->ls;
	lz.ngroups = shared_head->ngroups;
	if (parse_groups(NULL, shared_body, shared_head->len) != NULL)
		return -1;
	lz.dec = dec;
	lz.ndec = ndec;
	lz.active = 1;
	ccr_lazy_child_begin();
	return 0;
}

/* grow_scratch -- lz's scratch arrays (sorted lines, class and representative
 * of each variant) for at least NEED entries; -1 when out of memory (internal) */
static int grow_scratch(size_t need)
{
	if (need <= lz.scratch_cap)
		return 0;
	size_t cap = lz.scratch_cap;
	if (grow((void **)&lz.sorted, &cap, need, sizeof(uint32_t)) < 0)
		return -1;
	cap = lz.scratch_cap;
	if (grow((void **)&lz.cls, &cap, need, sizeof(uint32_t)) < 0)
		return -1;
	cap = lz.scratch_cap;
	if (grow((void **)&lz.rep, &cap, need, sizeof(uint32_t)) < 0)
		return -1;
	lz.scratch_cap = cap;
	return 0;
}

/* parse_groups -- lz's tables for lz.ngroups groups at P (N bytes, exactly
 * the groups); lz.line_size set; R NULL in the reused check process (the pool
 * is lz's, set up before it started).  NULL, or what is wrong (internal) */
static const char *parse_groups(struct runner *r, const uint8_t *p, size_t n)
{
	size_t pos = 0;
	if (lz.ngroups > (n - pos) / 8)
		return "lazy spec: more groups than the body can hold";
	if (grow((void **)&lz.groups, &lz.groups_cap, lz.ngroups, sizeof(*lz.groups)) < 0)
		return "out of memory";
	lz.nlines = 0;
	size_t words = 0, maxvar = 1;
	for (uint32_t g = 0; g < lz.ngroups; g++) {
		if (n - pos < 8)
			return "lazy spec: a group runs past the body";
		uint32_t nl = rd32(p + pos), nv = rd32(p + pos + 4);
		pos += 8;
		if (nl == 0 || nv == 0)
			return "lazy spec: a group without lines or variants";
		if (nl > (n - pos) / 8)
			return "lazy spec: line offsets run past the body";
		if (grow((void **)&lz.lines, &lz.lines_cap, (size_t)lz.nlines + nl, sizeof(*lz.lines)) < 0)
			return "out of memory";
		struct lz_group *G = &lz.groups[g];
		G->nlines = nl;
		G->nvar = nv;
		G->first = lz.nlines;
		for (uint32_t i = 0; i < nl; i++) {
			uint64_t off = rd64(p + pos + 8 * (size_t)i);
			if (off % lz.line_size || off >= lz.pool_size || lz.pool_size - off < lz.line_size)
				return "lazy spec: a line offset is unaligned or outside the pool";
			struct lz_line *L = &lz.lines[lz.nlines++];
			L->off = off;
			L->group = g;
			L->idx = i;
		}
		pos += (size_t)nl * 8;
		if ((uint64_t)nv * nl * lz.line_size > n - pos)
			return "lazy spec: variant contents run past the body";
		G->content = p + pos;
		pos += (size_t)nv * nl * lz.line_size;
		G->bits = words;
		words += (nv + 63) / 64;
		if (nv > maxvar)
			maxvar = nv;
	}
	if (pos != n)
		return "lazy spec: bytes left over after the last group";
	if (words > LZ_BITMAP_WORDS)
		return "lazy spec: too many variants for the exploration log";
	/* scratch arrays grow and are kept: a new allocation would make the
	 * runner re-measure its address space (RLIMIT_AS) for the next child */
	if (grow_scratch(lz.nlines > maxvar ? lz.nlines : maxvar) < 0)
		return "out of memory";
	if (grew && r != NULL)
		r->vm_stale = 1;
	grew = 0;
	for (uint32_t i = 0; i < lz.nlines; i++)
		lz.sorted[i] = i;
	qsort(lz.sorted, lz.nlines, sizeof(uint32_t), by_off);
	for (uint32_t i = 1; i < lz.nlines; i++)
		if (lz.lines[lz.sorted[i]].off == lz.lines[lz.sorted[i - 1]].off)
			return "lazy spec: a line belongs to two groups";
	lz.lo = lz.nlines ? (uintptr_t)lz.pool + lz.lines[lz.sorted[0]].off : 0;
	lz.hi = lz.nlines ? (uintptr_t)lz.pool + lz.lines[lz.sorted[lz.nlines - 1]].off + lz.line_size : 0;
	lz.active = 1;
	return NULL;
}

/* find -- the lazy line holding pool address A, or NULL (internal) */
static struct lz_line *find(uintptr_t a)
{
	uint64_t off = (a - (uintptr_t)lz.pool) & ~(uint64_t)(lz.line_size - 1);
	size_t lo = 0, hi = lz.nlines;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		struct lz_line *L = &lz.lines[lz.sorted[mid]];
		if (L->off == off)
			return L;
		if (L->off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int owned(const struct lz_line *L, unsigned b)
{
	return (int)(L->owned[b / 64] >> (b % 64) & 1);
}

static const uint8_t *variant_line(const struct lz_group *G, uint32_t v, uint32_t i)
{
	return G->content + ((size_t)v * G->nlines + i) * lz.line_size;
}

/* materialize -- write the group's first allowed variant into its lines, except
 * the bytes recovery wrote itself (internal) */
static void materialize(struct lz_group *G)
{
	uint64_t *bits = lz.shared->allowed + G->bits;
	uint32_t v = 0;
	while (!(bits[v / 64] >> (v % 64) & 1))
		v++;
	for (uint32_t i = 0; i < G->nlines; i++) {
		struct lz_line *L = &lz.lines[G->first + i];
		uint8_t *dst = lz.pool + L->off;
		const uint8_t *src = variant_line(G, v, i);
		for (unsigned b = 0; b < lz.line_size; b++)
			if (!owned(L, b))
				dst[b] = src[b];
	}
}

/* read_line -- recovery reads bytes [b0, b1) of line L: branch if its group's
 * allowed variants disagree on the ones it did not write itself (internal) */
static void read_line(struct lz_line *L, unsigned b0, unsigned b1)
{
	struct lz_group *G = &lz.groups[L->group];
	if (G->nallowed <= 1)
		return;
	uint64_t *bits = lz.shared->allowed + G->bits;
	uint32_t ncls = 0;
	for (uint32_t v = 0; v < G->nvar; v++) {
		if (!(bits[v / 64] >> (v % 64) & 1))
			continue;
		const uint8_t *x = variant_line(G, v, L->idx);
		uint32_t c = 0;
		for (; c < ncls; c++) {
			const uint8_t *y = variant_line(G, lz.rep[c], L->idx);
			unsigned b = b0;
			for (; b < b1; b++)
				if (x[b] != y[b] && !owned(L, b))
					break;
			if (b == b1)
				break;
		}
		if (c == ncls)
			lz.rep[ncls++] = v;
		lz.cls[v] = c;
	}
	if (ncls <= 1)
		return;
	struct lz_shared *S = lz.shared;
	uint32_t k = S->nbranches++;
	uint32_t pick = 0;
	if (k < lz.ndec) {
		uint16_t d;
		memcpy(&d, lz.dec + 2 * (size_t)k, 2);
		pick = d;
	}
	if (pick >= ncls) {   /* the same decisions met a different branch: not deterministic */
		S->diverged = 1;
		pick = 0;
	}
	if (k < LZ_MAX_BRANCHES)
		S->ncls[k] = ncls;
	uint32_t left = 0;
	for (uint32_t v = 0; v < G->nvar; v++) {
		if (!(bits[v / 64] >> (v % 64) & 1))
			continue;
		if (lz.cls[v] != pick)
			bits[v / 64] &= ~(1ull << (v % 64));
		else
			left++;
	}
	G->nallowed = left;
	materialize(G);
}

/* each_line -- call FN(line, first byte, end byte) for every lazy line that
 * [A, A + SIZE) overlaps (internal) */
static void each_line(uintptr_t a, uint64_t size, void (*fn)(struct lz_line *, unsigned, unsigned))
{
	if (size == 0 || a >= lz.hi || a + size <= lz.lo)
		return;
	uintptr_t from = a < lz.lo ? lz.lo : a, to = a + size > lz.hi ? lz.hi : a + size;
	while (from < to) {
		uintptr_t line = from & ~(uintptr_t)(lz.line_size - 1);
		uintptr_t end = line + lz.line_size < to ? line + lz.line_size : to;
		struct lz_line *L = find(from);
		if (L)
			fn(L, (unsigned)(from - line), (unsigned)(end - line));
		from = end;
	}
}

static void on_load_lines(uintptr_t a, uint64_t size);

/* mark_read -- the check reads SIZE bytes at A: log the pool lines (internal) */
static void mark_read(uintptr_t a, uint64_t size)
{
	uintptr_t pool = (uintptr_t)lz.pool, end = pool + lz.pool_size;
	if (a >= end || a < pool || size == 0)
		return;
	if (size == LZ_CSTRING) {
		const char *nul = memchr((const void *)a, 0, end - a);
		size = nul ? (uint64_t)(nul - (const char *)a) + 1 : end - a;
	} else if (size > end - a) {
		size = end - a;
	}
	if (lz.read_bytes == NULL)
		return;
	uint64_t lo = a - pool, hi = lo + size;
	for (uint64_t b = lo / 64; b <= (hi - 1) / 64; b++) {
		uint64_t from = b * 64 > lo ? 0 : lo % 64, to = (b + 1) * 64 < hi ? 64 : hi - b * 64;
		lz.read_bytes[b] |= (to - from == 64 ? ~0ull : ((1ull << (to - from)) - 1)) << from;
		lz.read_blocks[b / 64] |= 1ull << (b % 64);
	}
}

/* on_load -- the check is about to read SIZE bytes at A (internal) */
static void on_load(uintptr_t a, uint64_t size)
{
	mark_read(a, size);
	on_load_lines(a, size);
}

/* on_load_lines -- branch on the lazy lines [A, A + SIZE) touches (internal) */
static void on_load_lines(uintptr_t a, uint64_t size)
{
	if (size == LZ_CSTRING) {   /* a string: line by line, up to its NUL */
		for (;;) {
			if (a < lz.lo || a >= lz.hi) {
				/* outside the lazy hull: skip ahead to it unless the NUL comes first */
				if (a >= lz.hi)
					return;
				const char *nul = memchr((const void *)a, 0, lz.lo - a);
				if (nul)
					return;
				a = lz.lo;
			}
			uintptr_t end = (a | (lz.line_size - 1)) + 1;
			on_load_lines(a, end - a);
			if (memchr((const void *)a, 0, end - a))
				return;
			a = end;
		}
	}
	each_line(a, size, read_line);
}

/* own_bytes -- bytes [B0, B1) of L are the check's own from now on (internal) */
static void own_bytes(struct lz_line *L, unsigned b0, unsigned b1)
{
	if (lz.groups[L->group].nallowed > 1)
		for (unsigned b = b0; b < b1; b++)
			L->owned[b / 64] |= 1ull << (b % 64);
}

/* on_store -- the check wrote SIZE bytes at A (internal) */
static void on_store(uintptr_t a, uint64_t size)
{
	each_line(a, size, own_bytes);
}

/* ccr_lazy_child_begin -- in the child, after the state's writes: every group
 * at variant 0, all variants allowed, the hooks on */
void ccr_lazy_child_begin(void)
{
	if (!lz.active)
		return;
	struct lz_shared *S = lz.shared;
	S->nbranches = 0;
	S->diverged = 0;
	for (uint32_t g = 0; g < lz.ngroups; g++) {
		struct lz_group *G = &lz.groups[g];
		uint64_t *bits = S->allowed + G->bits;
		size_t w = (G->nvar + 63) / 64;
		memset(bits, 0xff, w * 8);
		if (G->nvar % 64)
			bits[w - 1] = (1ull << (G->nvar % 64)) - 1;
		G->nallowed = G->nvar;
	}
	for (uint32_t i = 0; i < lz.nlines; i++)
		memset(lz.lines[i].owned, 0, sizeof(lz.lines[i].owned));
	for (uint32_t g = 0; g < lz.ngroups; g++)
		materialize(&lz.groups[g]);
	/* on even without lazy lines: the read log is wanted all the same */
	cc_lazy_install(on_load, on_store);
}

/* ccr_lazy_reads_on -- in the reused check process, before the check of a
 * LAZY request without groups (a state checked on its own): log its reads.
 * Its own copy of the tables may be stale (it is restored after every
 * check), so it is told there are no lazy lines. */
void ccr_lazy_reads_on(void)
{
	lz.nlines = 0;
	lz.lo = lz.hi = 0;
	cc_lazy_install(on_load, on_store);
}

/* ccr_lazy_reset_log -- in the runner, before such a check: no branches yet */
void ccr_lazy_reset_log(void)
{
	lz.shared->nbranches = 0;
	lz.shared->diverged = 0;
}

/*
 * share_tables -- the exploration log and the stored body's shared copy,
 * mapped before the reused check process exists so it has them at the same
 * addresses, and lz's tables at a usual size, so the worker's copy rarely
 * grows (a grown heap is put back after each check, a new mapping retires
 * it); what cannot be had now is done without (internal)
 */
static void share_tables(void)
{
	void *log = mmap(NULL, LZ_SHARED_BYTES, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	void *body = mmap(NULL, sizeof(struct lz_body_head) + LZ_SHARED_BODY, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (log != MAP_FAILED)
		shared_log = log;
	if (log != MAP_FAILED && body != MAP_FAILED) {
		shared_head = body;
		shared_body = (uint8_t *)body + sizeof(struct lz_body_head);
	} else if (body != MAP_FAILED) {
		munmap(body, sizeof(struct lz_body_head) + LZ_SHARED_BODY);
	}
	if (grow((void **)&lz.groups, &lz.groups_cap, 256, sizeof(*lz.groups)) == 0 &&
	    grow((void **)&lz.lines, &lz.lines_cap, 4096, sizeof(*lz.lines)) == 0)
		grow_scratch(4096);   /* (out of memory now: they grow when needed) */
	grew = 0;
}

/*
 * ccr_lazy_setup -- map the read log for the runner's pool, before any
 * child or the reused check process exists (they share it); without it
 * answers say "read": null (nothing is reused)
 */
void ccr_lazy_setup(struct runner *r)
{
	/* whole lines of the largest size (LZ_MAX_LINE), so a last line cut by the pool's end is not */
	size_t blocks = (r->size + LZ_MAX_LINE - 1) / LZ_MAX_LINE * (LZ_MAX_LINE / 64), words = (blocks + 63) / 64;
	void *b = mmap(NULL, blocks * 8, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	void *w = mmap(NULL, words * 8, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	lz.pool = r->pool;
	lz.pool_size = r->size;
	if (ccr_lazy_supported())
		share_tables();
	if (b == MAP_FAILED || w == MAP_FAILED) {
		if (b != MAP_FAILED)
			munmap(b, blocks * 8);
		if (w != MAP_FAILED)
			munmap(w, words * 8);
		return;
	}
	lz.read_bytes = b;
	lz.read_blocks = w;
	r->vm_stale = 1;
}

/* ccr_lazy_teardown -- unmap the read log */
void ccr_lazy_teardown(struct runner *r)
{
	size_t blocks = (r->size + LZ_MAX_LINE - 1) / LZ_MAX_LINE * (LZ_MAX_LINE / 64), words = (blocks + 63) / 64;
	if (lz.read_bytes) {
		munmap(lz.read_bytes, blocks * 8);
		munmap(lz.read_blocks, words * 8);
	}
	lz.read_bytes = lz.read_blocks = NULL;
	if (shared_head != NULL)
		munmap(shared_head, sizeof(struct lz_body_head) + LZ_SHARED_BODY);
	if (shared_log != NULL)
		munmap(shared_log, LZ_SHARED_BYTES);
	shared_head = NULL;
	shared_body = NULL;
	shared_log = NULL;
	lz.shared = NULL;
	have_stored = tables_stored = 0;
}

/* ccr_lazy_groups -- the number of groups of the LAZY request being served */
int ccr_lazy_groups(void)
{
	return (int)lz.ngroups;
}

/* ccr_lazy_active -- whether the request being served is a LAZY one */
int ccr_lazy_active(void)
{
	return lz.active;
}

/* ccr_lazy_end -- the request is answered: later STATE requests are eager */
void ccr_lazy_end(void)
{
	lz.active = 0;
}

/* line_read -- how much of line L (of LS bytes) the check read: 0 none, 1
 * some, 2 all (internal) */
static int line_read(size_t l, size_t ls)
{
	size_t at = l * ls;
	if (ls >= 64) {
		uint64_t any = 0, all = ~0ull;
		for (size_t b = at / 64; b < (at + ls) / 64; b++) {
			any |= lz.read_bytes[b];
			all &= lz.read_bytes[b];
		}
		return any ? 1 + (all == ~0ull) : 0;
	}
	uint64_t full = (1ull << ls) - 1, m = lz.read_bytes[at / 64] >> (at % 64) & full;
	return m ? 1 + (m == full) : 0;
}

/* next_read -- the first line at or after *L (of LS bytes) the check read
 * any of, into *L, with line_read's answer; 0 if there is none (internal) */
static int next_read(size_t *l, size_t ls)
{
	size_t nblocks = (lz.pool_size + 63) / 64;
	for (size_t line = *l;;) {
		size_t b = line * ls / 64;
		while (b < nblocks) {   /* the next block with a byte read */
			uint64_t w = lz.read_blocks[b / 64] >> (b % 64);
			if (w) {
				b += (size_t)__builtin_ctzll(w);
				break;
			}
			b = (b / 64 + 1) * 64;
		}
		if (b >= nblocks)
			return 0;
		if (b * 64 / ls > line)
			line = b * 64 / ls;
		for (size_t end = ((b + 1) * 64 + ls - 1) / ls; line < end; line++) {
			int k = line_read(line, ls);
			if (k) {
				*l = line;
				return k;
			}
		}
	}
}

/* read_log -- the lines (of the spec's size) the check read, as
 * ,"read":[[first line, count], ...],"partial":[[line, "hex mask"], ...]
 * (partial: the lines read only in part; bit k of the mask is byte k), each
 * null past its limit; then clears the log (internal) */
static int read_log(struct runner *r, struct buf *a)
{
	size_t ls = lz.line_size, runs = 0, partial = 0, l = 0, prev = SIZE_MAX;
	if (lz.read_bytes == NULL)
		return ccr_buf_str(r, a, ",\"read\":null,\"partial\":null");
	for (int k; (k = next_read(&l, ls)) != 0; prev = l++) {
		runs += prev == SIZE_MAX || l != prev + 1;
		partial += k == 1;
	}
	int rc = ccr_buf_str(r, a, runs > LZ_MAX_READ_RUNS ? ",\"read\":null" : ",\"read\":[");
	size_t from = 0, n = 0;
	const char *sep = "";
	l = 0;
	prev = SIZE_MAX;
	for (int k; runs <= LZ_MAX_READ_RUNS && (k = next_read(&l, ls)) != 0; prev = l++) {
		if (n && l != prev + 1) {
			rc |= ccr_buf_fmt(r, a, "%s[%zu,%zu]", sep, from, n);
			sep = ",";
			n = 0;
		}
		if (n++ == 0)
			from = l;
	}
	if (n)
		rc |= ccr_buf_fmt(r, a, "%s[%zu,%zu]", sep, from, n);
	if (runs <= LZ_MAX_READ_RUNS)
		rc |= ccr_buf_str(r, a, "]");
	rc |= ccr_buf_str(r, a, partial > LZ_MAX_PARTIAL ? ",\"partial\":null" : ",\"partial\":[");
	int first = 1;
	l = 0;
	for (int k; partial <= LZ_MAX_PARTIAL && (k = next_read(&l, ls)) != 0; l++) {
		if (k != 1)
			continue;
		size_t at = l * ls;
		rc |= ccr_buf_fmt(r, a, first ? "[%zu,\"" : ",[%zu,\"", l);
		first = 0;
		if (ls >= 64)
			for (size_t b = (at + ls) / 64; b-- > at / 64;)
				rc |= ccr_buf_fmt(r, a, "%016llx", (unsigned long long)lz.read_bytes[b]);
		else
			rc |= ccr_buf_fmt(r, a, "%llx", (unsigned long long)(lz.read_bytes[at / 64] >> (at % 64) &
									  ((1ull << ls) - 1)));
		rc |= ccr_buf_str(r, a, "\"]");
	}
	if (partial <= LZ_MAX_PARTIAL)
		rc |= ccr_buf_str(r, a, "]");
	/* clear what was read, block by block */
	size_t nblocks = (lz.pool_size + 63) / 64;
	for (size_t w = 0; w < (nblocks + 63) / 64; w++)
		for (uint64_t bits = lz.read_blocks[w]; bits; bits &= bits - 1)
			lz.read_bytes[w * 64 + (size_t)__builtin_ctzll(bits)] = 0;
	memset(lz.read_blocks, 0, (nblocks + 63) / 64 * 8);
	return rc;
}

/*
 * ccr_lazy_answer -- append the exploration log to answer body A:
 *   ,"lazy":{"branches":[n, ...],"allowed":[[group,[v, ...]], ...],
 *            "diverged":0|1,"truncated":0|1,"read":[[line, count], ...]|null,
 *            "partial":[[line, "hex mask"], ...]|null}
 * "allowed" lists only the groups the execution narrowed.
 */
int ccr_lazy_answer(struct runner *r, struct buf *a)
{
	const struct lz_shared *S = lz.shared;
	uint32_t nb = S->nbranches < LZ_MAX_BRANCHES ? S->nbranches : LZ_MAX_BRANCHES;
	int rc = ccr_buf_str(r, a, ",\"lazy\":{\"branches\":[");
	for (uint32_t k = 0; k < nb; k++)
		rc |= ccr_buf_fmt(r, a, k ? ",%u" : "%u", S->ncls[k]);
	rc |= ccr_buf_str(r, a, "],\"allowed\":[");
	int first = 1;
	for (uint32_t g = 0; g < lz.ngroups; g++) {
		const struct lz_group *G = &lz.groups[g];
		const uint64_t *bits = S->allowed + G->bits;
		uint32_t count = 0;
		for (uint32_t v = 0; v < G->nvar; v++)
			count += (uint32_t)(bits[v / 64] >> (v % 64) & 1);
		if (count == G->nvar)
			continue;
		rc |= ccr_buf_fmt(r, a, first ? "[%u,[" : ",[%u,[", g);
		first = 0;
		int f2 = 1;
		for (uint32_t v = 0; v < G->nvar; v++)
			if (bits[v / 64] >> (v % 64) & 1) {
				rc |= ccr_buf_fmt(r, a, f2 ? "%u" : ",%u", v);
				f2 = 0;
			}
		rc |= ccr_buf_str(r, a, "]]");
	}
	rc |= ccr_buf_fmt(r, a, "],\"diverged\":%u,\"truncated\":%u", S->diverged ? 1u : 0u,
			  S->nbranches > LZ_MAX_BRANCHES ? 1u : 0u);
	rc |= read_log(r, a);
	return rc | ccr_buf_str(r, a, "}");
}
