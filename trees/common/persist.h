/*
 * persist.h -- persist primitives as the seed papers use them
 *
 * The thesis (WORT/WOART/ART+CoW) writes persistent(addr, len) as
 *
 *     mfence; clflush every cache line of [addr, addr+len); mfence
 *
 * and that is the default here.  Build with -DCC_FLUSH=CC_FLUSH_CLFLUSHOPT or
 * -DCC_FLUSH=CC_FLUSH_CLWB to flush with clflushopt / clwb instead; those
 * weakly ordered flushes are closed by an sfence (and opened by nothing: the
 * leading mfence only exists to order clflush against earlier stores).
 *
 * The instructions are the real ones: the crashcheck pass logs them, and
 * natively built drivers execute them (harmless on DRAM-backed files) --
 * except in a check process of the checker runner (cc_persist_skip).
 */
#ifndef CC_PERSIST_H
#define CC_PERSIST_H

#include <stddef.h>
#include <stdint.h>
#include <immintrin.h>

#define CC_FLUSH_CLFLUSH 1
#define CC_FLUSH_CLFLUSHOPT 2
#define CC_FLUSH_CLWB 3
#ifndef CC_FLUSH
#define CC_FLUSH CC_FLUSH_CLFLUSH
#endif

#define CC_LINE 64

/*
 * cc_persist_skip -- set by a check process of the checker runner (driver.c
 * serve_check): there the image is the process's private copy, which no
 * power failure will read, so flushes and fences change nothing but the time
 * (a clflush evicts the line the next operation reads again; with the fences
 * they were most of the CPU of a check's continuation, bench/README.md
 * "issue 51").  The stores are the same, so is every answer.  Never set
 * while a trace is written.  A weak definition: a program that includes
 * this header without driver.c links too.  A global, so the pass logs no
 * load of it.
 */
__attribute__((weak)) int cc_persist_skip;

/* cc_mfence -- full fence (orders clflush) */
static inline void cc_mfence(void)
{
	if (!cc_persist_skip)
		_mm_mfence();
}

/* cc_sfence -- store fence (orders clflushopt / clwb) */
static inline void cc_sfence(void)
{
	if (!cc_persist_skip)
		_mm_sfence();
}

/* cc_flush_line -- write back the cache line holding P, by the configured flavour */
__attribute__((target("clflushopt,clwb")))
static inline void cc_flush_line(const void *p)
{
	if (cc_persist_skip)
		return;
#if CC_FLUSH == CC_FLUSH_CLWB
	_mm_clwb((void *)p);
#elif CC_FLUSH == CC_FLUSH_CLFLUSHOPT
	_mm_clflushopt((void *)p);
#else
	_mm_clflush(p);
#endif
}

/* cc_flush -- write back every line of [addr, addr+len), no fence */
static inline void cc_flush(const void *addr, size_t len)
{
	if (cc_persist_skip)
		return;
	uintptr_t p = (uintptr_t)addr & ~(uintptr_t)(CC_LINE - 1);
	uintptr_t end = (uintptr_t)addr + len;
	for (; p < end; p += CC_LINE)
		cc_flush_line((const void *)p);
}

/* persistent -- make [addr, addr+len) durable: fence, flush each line, fence */
static inline void persistent(const void *addr, size_t len)
{
	if (cc_persist_skip)
		return;
#if CC_FLUSH == CC_FLUSH_CLFLUSH
	cc_mfence();
	cc_flush(addr, len);
	cc_mfence();
#else
	cc_flush(addr, len);
	cc_sfence();
#endif
}

#endif /* CC_PERSIST_H */
