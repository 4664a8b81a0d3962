/*
 * rt_trace.c -- the trace file: header, site table, chunked event buffer
 *
 * Design
 *   Events are appended to one pre-faulted, reused buffer that starts with a
 *   reserved chunk header.  When the buffer fills (or at exit, or on a fatal
 *   signal) it is written with one write(2) as a complete chunk, so a
 *   process that dies leaves every chunk written so far readable, and the
 *   reader can tell a cut trace from a complete one by the `end` event.
 *   The header and site table go out with the first chunk, because the pool
 *   (whose base and size the header carries) is usually registered after
 *   the program starts.
 *
 * Ordering
 *   A single-threaded program appends without locking.  Before a second
 *   thread is created, rt_threads.c switches every append to a spinlock, so
 *   the global event order is the order in which logging calls happened.
 *
 * Fork
 *   A forked child must not write into its parent's trace: tracing stops in
 *   the child (its buffer is dropped and the fast filter closed).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_internal.h"

#define CC_TRACE_VERSION 1
#define CC_HEADER_SIZE 64
#define CC_CHUNK_HDR 16
#define CC_CHUNK_MAGIC 0x56454343u
#define CC_EV_HEAD 24
/* 1 MiB: big enough that write(2) costs little per event, small enough to pre-fault quickly. */
#define CC_BUF_SIZE (1u << 20)
/* Stores wider than this are logged as several events so one never outgrows the buffer. */
#define CC_MAX_PAYLOAD (CC_BUF_SIZE / 2)

extern const struct crashcheck_site __start_cc_sites[] __attribute__((weak));
extern const struct crashcheck_site __stop_cc_sites[] __attribute__((weak));
/* Defined (weak) by every module the pass compiled with load instrumentation. */
extern const int __cc_module_loads __attribute__((weak));

static int trace_fd = -1;
static char trace_path[4096];
static unsigned char *buf;
static size_t buf_len = CC_CHUNK_HDR;   /* bytes used, chunk header included */
static uint32_t buf_events;
static int header_written;
static uintptr_t pool_base;
static size_t pool_size;

/* cc_trace_enabled -- non-zero while events go to a trace file */
int cc_trace_enabled(void)
{
	return trace_fd >= 0;
}

/* cc_trace_path -- the trace file's path ("" when not tracing) */
const char *cc_trace_path(void)
{
	return trace_path;
}

/* cc_trace_set_pool -- remember the first region for the header (internal) */
void cc_trace_set_pool(uintptr_t base, size_t size)
{
	if (pool_size == 0) {
		pool_base = base;
		pool_size = size;
	}
}

/* cc_site_id -- index of SITE in the linked site table, CC_NO_SITE if none */
uint32_t cc_site_id(crashcheck_site_t site)
{
	if (site == NULL || site < __start_cc_sites || site >= __stop_cc_sites)
		return CC_NO_SITE;
	return (uint32_t)(site - __start_cc_sites);
}

/* write_all -- write(2) until done; gives up silently on error (internal) */
static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n > 0) {
		ssize_t w = write(fd, c, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* put_str -- append a u16-length-prefixed string to OUT (internal) */
static size_t put_str(unsigned char *out, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n > 0xffff)
		n = 0xffff;
	uint16_t n16 = (uint16_t)n;
	memcpy(out, &n16, 2);
	if (n)
		memcpy(out + 2, s, n);
	return 2 + n;
}

/* write_header -- the fixed header and the site table (internal) */
static void write_header(void)
{
	const struct crashcheck_site *s = __start_cc_sites, *e = __stop_cc_sites;
	size_t nsites = (s && e) ? (size_t)(e - s) : 0;
	unsigned char hdr[CC_HEADER_SIZE];
	uint32_t u32;
	uint64_t u64;

	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, "CCTRACE\0", 8);
	u32 = CC_TRACE_VERSION; memcpy(hdr + 8, &u32, 4);
	u32 = CC_HEADER_SIZE; memcpy(hdr + 12, &u32, 4);
	u64 = pool_base; memcpy(hdr + 16, &u64, 8);
	u64 = pool_size; memcpy(hdr + 24, &u64, 8);
	u32 = CC_LINE_SIZE; memcpy(hdr + 32, &u32, 4);
	u32 = (&__cc_module_loads != NULL) ? 1u : 0u; memcpy(hdr + 36, &u32, 4);
	u32 = (uint32_t)getpid(); memcpy(hdr + 40, &u32, 4);
	u32 = (uint32_t)nsites; memcpy(hdr + 44, &u32, 4);
	write_all(trace_fd, hdr, sizeof(hdr));

	/* Site records are small; batch them through a stack buffer. */
	unsigned char rec[4 * 4 + 4 * (2 + 0xffff)];
	unsigned char out[64 * 1024];
	size_t used = 0;
	for (size_t i = 0; i < nsites; i++) {
		size_t n = 0;
		memcpy(rec + n, &s[i].line, 4); n += 4;
		memcpy(rec + n, &s[i].col, 4); n += 4;
		memcpy(rec + n, &s[i].inl_line, 4); n += 4;
		memcpy(rec + n, &s[i].inl_col, 4); n += 4;
		n += put_str(rec + n, s[i].file);
		n += put_str(rec + n, s[i].func);
		n += put_str(rec + n, s[i].inl_file);
		n += put_str(rec + n, s[i].inl_func);
		if (used + n > sizeof(out)) {
			write_all(trace_fd, out, used);
			used = 0;
		}
		if (n > sizeof(out)) {
			write_all(trace_fd, rec, n);
			continue;
		}
		memcpy(out + used, rec, n);
		used += n;
	}
	write_all(trace_fd, out, used);
	header_written = 1;
}

/* flush_buffer -- write the buffered events as one chunk (internal; caller holds the lock) */
static void flush_buffer(void)
{
	if (trace_fd < 0)
		return;
	if (!header_written)
		write_header();
	if (buf_events == 0)
		return;
	uint32_t magic = CC_CHUNK_MAGIC;
	uint64_t payload = buf_len - CC_CHUNK_HDR;
	memcpy(buf, &magic, 4);
	memcpy(buf + 4, &buf_events, 4);
	memcpy(buf + 8, &payload, 8);
	write_all(trace_fd, buf, buf_len);
	buf_len = CC_CHUNK_HDR;
	buf_events = 0;
}

/* append -- one event into the buffer (internal; caller holds the lock) */
static inline void append(uint8_t kind, uint8_t sub, uint32_t site, uint64_t addr,
			  uint32_t size, const void *payload, uint32_t len)
{
	uint32_t plen = (len + 7u) & ~7u;
	size_t need = CC_EV_HEAD + plen;
	if (buf_len + need > CC_BUF_SIZE)
		flush_buffer();
	unsigned char *p = buf + buf_len;
	uint64_t w0 = (uint64_t)kind | ((uint64_t)sub << 8) |
		      ((uint64_t)(uint16_t)cc_tid() << 16) | ((uint64_t)site << 32);
	uint64_t w2 = (uint64_t)size | ((uint64_t)plen << 32);
	memcpy(p, &w0, 8);
	memcpy(p + 8, &addr, 8);
	memcpy(p + 16, &w2, 8);
	if (len) {
		memcpy(p + CC_EV_HEAD, payload, len);
		if (plen != len)
			memset(p + CC_EV_HEAD + len, 0, plen - len);
	}
	buf_len += need;
	buf_events++;
}

/*
 * cc_emit -- log one event.  A payload wider than CC_MAX_PAYLOAD (only stores
 * have one that large) is split into consecutive events of the same kind.
 */
void cc_emit(uint8_t kind, uint8_t sub, uint32_t site, uint64_t addr, uint32_t size,
	     const void *payload, uint32_t plen)
{
	if (trace_fd < 0)
		return;
	int locked = cc_mt_mode;
	if (locked)
		cc_lock();
	while (plen > CC_MAX_PAYLOAD) {
		append(kind, sub, site, addr, CC_MAX_PAYLOAD, payload, CC_MAX_PAYLOAD);
		addr += CC_MAX_PAYLOAD;
		size -= CC_MAX_PAYLOAD;
		payload = (const char *)payload + CC_MAX_PAYLOAD;
		plen -= CC_MAX_PAYLOAD;
	}
	append(kind, sub, site, addr, size, payload, plen);
	if (locked)
		cc_unlock();
}

/* cc_emit_region -- log a region registration with its image file's name */
void cc_emit_region(unsigned index, uintptr_t base, size_t size, const char *image_name)
{
	unsigned char payload[16 + 4096];
	uint64_t sz = size, nlen = strlen(image_name);
	if (nlen > 4096)
		nlen = 4096;
	memcpy(payload, &sz, 8);
	memcpy(payload + 8, &nlen, 8);
	memcpy(payload + 16, image_name, nlen);
	cc_emit(CC_EV_REGION, (uint8_t)index, CC_NO_SITE, base, 0, payload, (uint32_t)(16 + nlen));
}

/* crashcheck_trace_flush -- write buffered events now */
void crashcheck_trace_flush(void)
{
	if (trace_fd < 0)
		return;
	int locked = cc_mt_mode;
	if (locked)
		cc_lock();
	flush_buffer();
	if (locked)
		cc_unlock();
}

/* trace_finish -- the end marker and the last chunk, at exit (internal) */
static void trace_finish(void)
{
	if (trace_fd < 0)
		return;
	cc_emit(CC_EV_END, 0, CC_NO_SITE, 0, 0, NULL, 0);
	crashcheck_trace_flush();
	close(trace_fd);
	trace_fd = -1;
	cc_pm_span = 0;
}

static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE, SIGTERM, SIGINT, SIGQUIT };
static struct sigaction old_actions[sizeof(fatal_signals) / sizeof(fatal_signals[0])];

/*
 * on_fatal -- flush what was logged, then die as the program would have.
 * Events are committed to the buffer only when complete (buf_len moves
 * last), so the chunk written here never holds half an event.  No end
 * marker: the reader reports the trace as cut where the program died.
 */
static void on_fatal(int sig)
{
	if (trace_fd >= 0) {
		flush_buffer();
		trace_fd = -1;
	}
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
		if (fatal_signals[i] == sig)
			sigaction(sig, &old_actions[i], NULL);
	raise(sig);
}

/* in_child -- a forked child stops tracing (internal) */
static void in_child(void)
{
	trace_fd = -1;
	cc_pm_span = 0;
	buf_len = CC_CHUNK_HDR;
	buf_events = 0;
}

/* trace_start -- open $CRASHCHECK_TRACE before main (internal) */
__attribute__((constructor(101)))
static void trace_start(void)
{
	const char *path = getenv("CRASHCHECK_TRACE");
	if (path == NULL || *path == '\0')
		return;
	if (strlen(path) >= sizeof(trace_path) - 32) {
		fprintf(stderr, "crashcheck: CRASHCHECK_TRACE path too long\n");
		exit(2);
	}
	/* Pre-fault the reused buffer once, so appends never take a page fault. */
	buf = malloc(CC_BUF_SIZE);
	if (buf == NULL) {
		fprintf(stderr, "crashcheck: cannot allocate the trace buffer\n");
		exit(2);
	}
	memset(buf, 0, CC_BUF_SIZE);
	trace_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (trace_fd < 0) {
		fprintf(stderr, "crashcheck: cannot create trace file %s: %s\n", path, strerror(errno));
		exit(2);
	}
	strcpy(trace_path, path);
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_fatal;
		sigemptyset(&sa.sa_mask);
		sigaction(fatal_signals[i], &sa, &old_actions[i]);
	}
	pthread_atfork(NULL, NULL, in_child);
	atexit(trace_finish);
}
