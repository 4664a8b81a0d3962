/*
 * pm_alloc.c -- the pool layout and the persistent allocator of the built-in trees
 *
 * Layout
 * ------
 *     offset 0      pool header (64 bytes; magic written last by format)
 *     offset 64     root area (PM_ROOT_SIZE bytes)
 *     offset 128    chunk table: one 8-byte descriptor per heap chunk
 *     heap_off      heap: NCHUNKS chunks of PM_CHUNK bytes (chunk-aligned)
 *
 * Chunks
 * ------
 * A descriptor says what its chunk holds:
 *     0                        free
 *     SMALL | slot_size << 32  slots of one size class; the first
 *                              PM_CHUNK_HDR bytes of the chunk are the
 *                              allocation bitmap (bit i = slot i in use)
 *     LARGE | n << 8 | size << 32   head of a run of n chunks holding one
 *                              object of SIZE bytes at the chunk start
 *     CONT | head << 8         a chunk inside a large run
 * Size classes: 16..56 in steps of 8 (8-aligned), 64..4096 in steps of 64
 * (64-aligned: slots start on a line); larger objects get chunk runs.
 *
 * Persistence
 * -----------
 * Every state change is one 8-byte store persisted before the call returns:
 * allocating a slot sets its bitmap word, freeing clears it.  A fresh chunk
 * gets its bitmap zeroed and persisted before its descriptor is written, so
 * a crash leaves either a free chunk or an empty one of that class.  A
 * large run writes its CONT descriptors before the head (the head commits);
 * free clears the head first.  CONT descriptors without a valid head are
 * ignored.  So the image alone says which objects are allocated
 * (pm_allocated), and the DRAM state (which chunks have room) is rebuilt
 * from it by pm_pool_attach.
 *
 * Determinism
 * -----------
 * The lowest free slot of the lowest-numbered non-full chunk of the class is
 * taken; new chunks are the lowest free ones.  The choice depends only on
 * the image, so a history replays to the same addresses.  Objects are
 * zeroed, flushed and fenced before they are handed out (as PMDK's zalloc):
 * the zeroes are durable, so neither stale bytes of a freed object nor a
 * zeroing store the caller never flushed appear after a crash.
 */
#include "crashcheck_own.h" /* first: this file is crashcheck's own code (rt_fault.c) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pm_alloc.h"
#include "persist.h"

#define PM_MAGIC 0x31304c4f4f504343ULL /* "CCPOOL01" */
#define PM_VERSION 1
#define PM_CHUNK ((size_t)64 << 10)
#define PM_CHUNK_HDR 1024      /* bitmap area at the start of a small chunk */
#define PM_TABLE_OFF 128

#define KIND_FREE 0
#define KIND_SMALL 1
#define KIND_LARGE 2
#define KIND_CONT 3

#define MAX_SMALL 4096
#define NCLASSES (6 + MAX_SMALL / 64)   /* 16..56 by 8, 64..4096 by 64 */

struct pm_pool_hdr {
	uint64_t magic;
	uint64_t version;
	uint64_t size;        /* pool bytes as formatted */
	uint64_t chunk_size;
	uint64_t nchunks;     /* heap chunks */
	uint64_t heap_off;
	uint64_t reserved[2];
};

/* DRAM view of the pool: rebuilt by attach, never persisted */
static struct {
	char *base;
	size_t size;
	char *heap;
	uint64_t *table;
	size_t nchunks;
	uint8_t *kind;        /* per chunk: KIND_* as DRAM sees it */
	uint32_t *nfree;      /* per small chunk: free slots */
	uint16_t *hint;       /* per small chunk: lowest bitmap word that may have room */
	uint64_t *nonfull[NCLASSES]; /* per class: bitmap over chunks with room */
	size_t free_hint;     /* lowest chunk that may be free */
	void *mem;            /* one allocation holding all the arrays above */
} A;

/* class_size -- slot size of class C (internal) */
static size_t class_size(unsigned c)
{
	return c < 6 ? 16 + 8 * (size_t)c : 64 * (size_t)(c - 5);
}

/* size_class -- the class serving N bytes, N <= MAX_SMALL (internal) */
static unsigned size_class(size_t n)
{
	if (n <= 16)
		return 0;
	if (n < 64)
		return (unsigned)((n + 7) / 8 - 2);
	return (unsigned)(5 + (n + 63) / 64);
}

/* class_of_slot -- the class with slot size S, or -1 if none (internal) */
static int class_of_slot(size_t s)
{
	if (s == 0 || s > MAX_SMALL)
		return -1;
	unsigned c = size_class(s);
	return class_size(c) == s ? (int)c : -1;
}

/* nslots -- slots in a small chunk of slot size S (internal) */
static size_t nslots(size_t s)
{
	return (PM_CHUNK - PM_CHUNK_HDR) / s;
}

static char *chunk_addr(size_t i) { return A.heap + i * PM_CHUNK; }
static uint64_t *chunk_bitmap(size_t i) { return (uint64_t *)chunk_addr(i); }

/* layout -- heap offset and chunk count for a pool of SIZE bytes (internal) */
static void layout(size_t size, size_t *heap_off, size_t *nchunks)
{
	size_t upper = size / PM_CHUNK;
	size_t off = (PM_TABLE_OFF + 8 * upper + PM_CHUNK - 1) / PM_CHUNK * PM_CHUNK;
	*heap_off = off;
	*nchunks = size > off ? (size - off) / PM_CHUNK : 0;
}

/* store8 -- one 8-byte store the compiler may neither split nor merge (internal) */
static inline void store8(uint64_t *p, uint64_t v)
{
	*(volatile uint64_t *)p = v;
}

/* bit helpers over DRAM chunk bitmaps (internal) */
static void nf_set(unsigned c, size_t i) { A.nonfull[c][i / 64] |= 1ULL << (i % 64); }
static void nf_clear(unsigned c, size_t i) { A.nonfull[c][i / 64] &= ~(1ULL << (i % 64)); }

/* dram_release -- drop the DRAM view (internal) */
static void dram_release(void)
{
	free(A.mem);
	memset(&A, 0, sizeof(A));
}

/*
 * dram_init -- allocate an empty DRAM view for the pool at BASE (internal).
 * One zeroed allocation for all of it: every checked state attaches its
 * image anew, and 73 allocations (a bitmap per class) were a few percent
 * of a small check
 */
static int dram_init(char *base, size_t size, size_t heap_off, size_t nchunks)
{
	dram_release();
	A.base = base;
	A.size = size;
	A.heap = base + heap_off;
	A.table = (uint64_t *)(base + PM_TABLE_OFF);
	A.nchunks = nchunks;
	size_t words = (nchunks + 63) / 64, nf = nchunks * sizeof(*A.nfree), hint = nchunks * sizeof(*A.hint);
	size_t kind = (nchunks + 7) / 8 * 8, bytes = NCLASSES * words * 8 + nf + hint + kind;
	char *m = A.mem = calloc(1, bytes ? bytes : 1);
	if (!m) {
		fprintf(stderr, "pm_alloc: out of DRAM for %zu chunks\n", nchunks);
		dram_release();
		return -1;
	}
	/* widest first: each array stays aligned for its type */
	for (unsigned c = 0; c < NCLASSES; c++, m += words * 8)
		A.nonfull[c] = (uint64_t *)m;
	A.nfree = (uint32_t *)m;
	A.hint = (uint16_t *)(m + nf);
	A.kind = (uint8_t *)(m + nf + hint);
	return 0;
}

/* valid_bits -- mask of the slot bits of bitmap word W for NS slots (internal) */
static uint64_t valid_bits(size_t w, size_t ns)
{
	size_t lo = w * 64;
	if (lo + 64 <= ns)
		return ~0ULL;
	return lo >= ns ? 0 : (1ULL << (ns - lo)) - 1;
}

/* pm_pool_format -- lay out a fresh zero-filled pool and persist its header */
int pm_pool_format(void *pool, size_t size)
{
	struct pm_pool_hdr *h = pool;
	size_t heap_off, nchunks;
	layout(size, &heap_off, &nchunks);
	if (nchunks == 0) {
		fprintf(stderr, "pool too small: %zu bytes (need at least %zu)\n",
			size, heap_off + PM_CHUNK);
		return -1;
	}
	/* idempotent within a process: an adapter may format what the driver formatted */
	if (A.base == pool && h->magic == PM_MAGIC && h->size == size)
		return 0;
	h->version = PM_VERSION;
	h->size = size;
	h->chunk_size = PM_CHUNK;
	h->nchunks = nchunks;
	h->heap_off = heap_off;
	persistent(h, sizeof(*h));
	/* the magic commits the format: without it the image holds no pool */
	store8(&h->magic, PM_MAGIC);
	persistent(&h->magic, 8);
	return dram_init(pool, size, heap_off, nchunks);
}

/* pm_pool_attach -- adopt an existing pool image and rebuild the DRAM view */
int pm_pool_attach(void *pool, size_t size)
{
	const struct pm_pool_hdr *h = pool;
	size_t heap_off, nchunks;
	if (size < sizeof(*h) || h->magic != PM_MAGIC) {
		fprintf(stderr, "pool holds no formatted pool (bad magic)\n");
		return -1;
	}
	layout(h->size, &heap_off, &nchunks);
	if (h->version != PM_VERSION || h->size > size || h->chunk_size != PM_CHUNK ||
	    h->heap_off != heap_off || h->nchunks != nchunks) {
		fprintf(stderr, "pool header is corrupt or from another version "
			"(size %llu, mapped %zu)\n", (unsigned long long)h->size, size);
		return -1;
	}
	if (dram_init(pool, h->size, heap_off, nchunks))
		return -1;
	A.free_hint = nchunks;
	for (size_t i = 0; i < nchunks; i++) {
		uint64_t d = A.table[i];
		unsigned kind = d & 0xff;
		if (kind == KIND_SMALL) {
			int c = class_of_slot(d >> 32);
			if (c < 0)
				goto free_chunk; /* not a descriptor format writes: treat as free */
			size_t ns = nslots(d >> 32), used = 0;
			const uint64_t *bm = chunk_bitmap(i);
			for (size_t w = 0; w < (ns + 63) / 64; w++)
				used += __builtin_popcountll(bm[w] & valid_bits(w, ns));
			A.kind[i] = KIND_SMALL;
			A.nfree[i] = (uint32_t)(ns - used);
			if (A.nfree[i])
				nf_set((unsigned)c, i);
			continue;
		}
		if (kind == KIND_LARGE) {
			size_t n = (d >> 8) & 0xffffff;
			if (n == 0 || i + n > nchunks)
				goto free_chunk;
			A.kind[i] = KIND_LARGE;
			for (size_t j = 1; j < n; j++)
				A.kind[i + j] = KIND_CONT;
			i += n - 1;
			continue;
		}
free_chunk:
		/* free, or a CONT left by an interrupted large allocation or free */
		A.kind[i] = KIND_FREE;
		if (i < A.free_hint)
			A.free_hint = i;
	}
	return 0;
}

/* pm_root -- the root area at its fixed place */
void *pm_root(void)
{
	return A.base ? A.base + sizeof(struct pm_pool_hdr) : NULL;
}

/* new_chunk -- the lowest free chunk, or SIZE_MAX (internal) */
static size_t find_free_chunks(size_t n)
{
	size_t run = 0;
	for (size_t i = A.free_hint; i < A.nchunks; i++) {
		run = A.kind[i] == KIND_FREE ? run + 1 : 0;
		if (run == n)
			return i + 1 - n;
	}
	return SIZE_MAX;
}

/* advance_free_hint -- move the free hint past used chunks (internal) */
static void advance_free_hint(void)
{
	while (A.free_hint < A.nchunks && A.kind[A.free_hint] != KIND_FREE)
		A.free_hint++;
}

/* small_chunk -- the lowest chunk of class C with a free slot, made if needed (internal) */
static size_t small_chunk(unsigned c)
{
	size_t words = (A.nchunks + 63) / 64;
	for (size_t w = 0; w < words; w++)
		if (A.nonfull[c][w])
			return w * 64 + (size_t)__builtin_ctzll(A.nonfull[c][w]);
	size_t i = find_free_chunks(1);
	if (i == SIZE_MAX)
		return i;
	size_t s = class_size(c), ns = nslots(s);
	uint64_t *bm = chunk_bitmap(i);
	/* the bitmap first: a crash before the descriptor leaves a free chunk */
	for (size_t w = 0; w < (ns + 63) / 64; w++)
		store8(&bm[w], 0);
	persistent(bm, (ns + 63) / 64 * 8);
	store8(&A.table[i], KIND_SMALL | (uint64_t)s << 32);
	persistent(&A.table[i], 8);
	A.kind[i] = KIND_SMALL;
	A.nfree[i] = (uint32_t)ns;
	A.hint[i] = 0;
	nf_set(c, i);
	advance_free_hint();
	return i;
}

/* alloc_small -- take the lowest free slot of class C (internal) */
static void *alloc_small(unsigned c)
{
	size_t i = small_chunk(c);
	if (i == SIZE_MAX)
		return NULL;
	size_t s = class_size(c), ns = nslots(s);
	uint64_t *bm = chunk_bitmap(i);
	for (size_t w = A.hint[i]; w < (ns + 63) / 64; w++) {
		uint64_t room = ~bm[w] & valid_bits(w, ns);
		if (!room)
			continue;
		unsigned b = (unsigned)__builtin_ctzll(room);
		store8(&bm[w], bm[w] | 1ULL << b);
		persistent(&bm[w], 8);
		A.hint[i] = (uint16_t)w;
		if (--A.nfree[i] == 0)
			nf_clear(c, i);
		return chunk_addr(i) + PM_CHUNK_HDR + (w * 64 + b) * s;
	}
	fprintf(stderr, "pm_alloc: chunk %zu counted free slots it does not have\n", i);
	abort();
}

/* alloc_large -- a run of chunks for N bytes (internal) */
static void *alloc_large(size_t n, size_t *objsize)
{
	size_t k = (n + PM_CHUNK - 1) / PM_CHUNK;
	if (n >= (1ULL << 32) || k >= (1ULL << 24))
		return NULL;
	size_t i = find_free_chunks(k);
	if (i == SIZE_MAX)
		return NULL;
	for (size_t j = 1; j < k; j++)
		store8(&A.table[i + j], KIND_CONT | (uint64_t)i << 8);
	if (k > 1)
		persistent(&A.table[i + 1], (k - 1) * 8);
	/* the head commits the run */
	store8(&A.table[i], KIND_LARGE | (uint64_t)k << 8 | (uint64_t)n << 32);
	persistent(&A.table[i], 8);
	A.kind[i] = KIND_LARGE;
	for (size_t j = 1; j < k; j++)
		A.kind[i + j] = KIND_CONT;
	advance_free_hint();
	*objsize = n;
	return chunk_addr(i);
}

/* pm_alloc_at -- allocate N zeroed bytes and persist the allocation record */
void *pm_alloc_at(size_t n, crashcheck_site_t site)
{
	if (!A.base)
		return NULL;
	size_t objsize;
	char *p;
	if (n <= MAX_SMALL) {
		unsigned c = size_class(n);
		objsize = class_size(c);
		p = alloc_small(c);
	} else {
		p = alloc_large(n, &objsize);
	}
	if (!p)
		return NULL;
	/* zeroed durably, as PMDK's pmemobj_zalloc is: no stale bytes of a freed
	 * object survive a crash, and the zeroing is never a store the caller
	 * lost (a crash before the fence loses only the allocator's zeroes,
	 * flushed already, of an object not yet handed out) */
	memset(p, 0, objsize);
	cc_flush(p, objsize);
#if CC_FLUSH == CC_FLUSH_CLFLUSH
	cc_mfence();
#else
	cc_sfence();
#endif
	crashcheck_alloc_at(p, objsize, site);
	return p;
}

/* pm_free -- release an object and persist the record; aborts on a bad pointer */
void pm_free(void *p)
{
	if (!p)
		return;
	if (!pm_contains(p))
		goto bad;
	size_t i = (size_t)((char *)p - A.heap) / PM_CHUNK;
	char *chunk = chunk_addr(i);
	if (A.kind[i] == KIND_SMALL) {
		size_t s = A.table[i] >> 32, ns = nslots(s);
		size_t off = (size_t)((char *)p - chunk);
		if (off < PM_CHUNK_HDR || (off - PM_CHUNK_HDR) % s)
			goto bad;
		size_t slot = (off - PM_CHUNK_HDR) / s;
		uint64_t *bm = chunk_bitmap(i);
		uint64_t bit = 1ULL << (slot % 64);
		if (slot >= ns || !(bm[slot / 64] & bit))
			goto bad;
		crashcheck_free(p);
		store8(&bm[slot / 64], bm[slot / 64] & ~bit);
		persistent(&bm[slot / 64], 8);
		A.nfree[i]++;
		nf_set((unsigned)class_of_slot(s), i);
		if (slot / 64 < A.hint[i])
			A.hint[i] = (uint16_t)(slot / 64);
		return;
	}
	if (A.kind[i] == KIND_LARGE && (char *)p == chunk) {
		size_t k = (A.table[i] >> 8) & 0xffffff;
		crashcheck_free(p);
		/* the head first: once it is gone the run is free whatever CONTs say */
		store8(&A.table[i], 0);
		persistent(&A.table[i], 8);
		for (size_t j = 0; j < k; j++) {
			if (j)
				store8(&A.table[i + j], 0);
			A.kind[i + j] = KIND_FREE;
		}
		if (k > 1)
			persistent(&A.table[i + 1], (k - 1) * 8);
		if (i < A.free_hint)
			A.free_hint = i;
		return;
	}
bad:
	fprintf(stderr, "pm_free: %p is not an allocated object\n", p);
	abort();
}

/* pm_allocated -- every object the image's metadata marks in use (reads PM only) */
void pm_allocated(cc_obj_fn fn, void *ctx)
{
	if (!A.base)
		return;
	for (size_t i = 0; i < A.nchunks; i++) {
		uint64_t d = A.table[i];
		unsigned kind = d & 0xff;
		if (kind == KIND_SMALL && class_of_slot(d >> 32) >= 0) {
			size_t s = d >> 32, ns = nslots(s);
			const uint64_t *bm = chunk_bitmap(i);
			for (size_t w = 0; w < (ns + 63) / 64; w++) {
				uint64_t used = bm[w] & valid_bits(w, ns);
				while (used) {
					unsigned b = (unsigned)__builtin_ctzll(used);
					used &= used - 1;
					fn(ctx, chunk_addr(i) + PM_CHUNK_HDR + (w * 64 + b) * s, s);
				}
			}
		} else if (kind == KIND_LARGE) {
			size_t k = (d >> 8) & 0xffffff;
			if (k == 0 || i + k > A.nchunks)
				continue;
			fn(ctx, chunk_addr(i), d >> 32);
			i += k - 1;
		}
	}
}

/* pm_object_size -- size of the allocated object starting at P per the image, 0 if none */
size_t pm_object_size(const void *p)
{
	if (!pm_contains(p))
		return 0;
	size_t i = (size_t)((const char *)p - A.heap) / PM_CHUNK;
	const char *chunk = chunk_addr(i);
	uint64_t d = A.table[i];
	unsigned kind = d & 0xff;
	if (kind == KIND_SMALL && class_of_slot(d >> 32) >= 0) {
		size_t s = d >> 32, off = (size_t)((const char *)p - chunk);
		if (off < PM_CHUNK_HDR)
			return 0;
		/* one division, not two: a check asks this of every object it reaches */
		size_t slot = (off - PM_CHUNK_HDR) / s;
		if (slot * s != off - PM_CHUNK_HDR || slot >= nslots(s))
			return 0;
		return (chunk_bitmap(i)[slot / 64] >> (slot % 64)) & 1 ? s : 0;
	}
	if (kind == KIND_LARGE && (const char *)p == chunk) {
		size_t k = (d >> 8) & 0xffffff;
		return k && i + k <= A.nchunks ? d >> 32 : 0;
	}
	return 0;
}

/* pm_contains -- non-zero if P lies inside the heap */
int pm_contains(const void *p)
{
	const char *c = p;
	return A.base && c >= A.heap && c < A.heap + A.nchunks * PM_CHUNK;
}
