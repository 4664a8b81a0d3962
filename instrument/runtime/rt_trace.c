/*
 * rt_trace.c -- the trace file: header, site table, chunked event buffer
 *
 * Design
 *   Events are appended to the current buffer of a small ring of
 *   pre-faulted, reused 1 MiB buffers; each starts with a reserved chunk
 *   header.  A full buffer is handed to a writer thread, which writes it
 *   with one write(2) as a complete chunk while the program fills the next
 *   one (the copy into the page cache costs as much as the logging itself,
 *   so doing it on another core halves the slowdown).  The thread starts at
 *   the first full buffer, so short traces never create it.  A process that
 *   dies leaves every chunk handed over so far readable (a fatal signal
 *   also writes the buffer in progress), and the reader can tell a cut
 *   trace from a complete one by the `end` event.  The header and site
 *   table go out before the first chunk, because the pool (whose base and
 *   size the header carries) is usually registered after the program starts.
 *
 * Ordering
 *   A single-threaded program appends without locking.  Before a second
 *   thread is created, rt_threads.c switches every append to a spinlock, so
 *   the global event order is the order in which logging calls happened.
 *   The ring's mutex and conditions are libc's own (CC_REAL): the
 *   scheduler's interposed versions are for the program's locks only.
 *
 * Starting again at an operation ($CRASHCHECK_TRACE_FROM=N)
 *   A history's load phase is set-up whose crash states are never checked:
 *   at operation N's op_begin (cc_trace_from_here) everything logged so far
 *   is dropped, the file starts over and every region's bytes as they are
 *   now become its image, so the trace is that of the checked operations
 *   from the load's end, as if the load had all reached PM (single-threaded
 *   runs only: Python never asks it of a threaded one).  The load's live
 *   objects (rt_from.c) and an op_end of operation N-1 follow the regions:
 *   leaks name their allocating sites, crash points count the operations
 *   done from it.
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
#include <time.h>
#include <unistd.h>

#include "rt_internal.h"

#define CC_TRACE_VERSION 4
#define CC_HEADER_SIZE 64
#define CC_CHUNK_HDR 16
#define CC_CHUNK_MAGIC 0x56454343u
/* Stores wider than this are logged as several events: the size field has 16 bits. */
#define CC_MAX_PAYLOAD (32u * 1024)

/* Defined (weak) by every module the pass compiled with load instrumentation. */
extern const int __cc_module_loads __attribute__((weak));

static int trace_fd = -1;
static char trace_path[4096];
/* CC_BUF_SIZE: big enough that write(2) costs little per event, small enough to pre-fault. */
#define NSLOTS 4
unsigned char *cc_buf;
size_t cc_buf_len = CC_CHUNK_HDR;   /* bytes used, chunk header included */
uint32_t cc_buf_events;
#define buf cc_buf
#define buf_len cc_buf_len
#define buf_events cc_buf_events
static int header_written;

/* The ring: slot (handed % NSLOTS) is being filled; handed - written slots wait for the writer. */
static unsigned char *slots[NSLOTS];
static size_t slot_len[NSLOTS];
static unsigned handed, written;
static pthread_mutex_t ring_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ring_ready = PTHREAD_COND_INITIALIZER, ring_free = PTHREAD_COND_INITIALIZER;
static pthread_t writer;
static int writer_state; /* 0 not started, 1 running, -1 could not start: write inline */
static int writer_stop;
static uintptr_t pool_base;
static size_t pool_size;
uint64_t cc_trace_from = UINT64_MAX;   /* CRASHCHECK_TRACE_FROM: the operation the trace starts at */

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

/* put_strn -- append the N bytes at S as a u16-length-prefixed string to OUT (internal) */
static size_t put_strn(unsigned char *out, const char *s, size_t n)
{
	if (n > 0xffff)
		n = 0xffff;
	uint16_t n16 = (uint16_t)n;
	memcpy(out, &n16, 2);
	if (n)
		memcpy(out + 2, s, n);
	return 2 + n;
}

/* put_str -- append the string S (NULL: empty) to OUT (internal) */
static size_t put_str(unsigned char *out, const char *s)
{
	return put_strn(out, s, s ? strlen(s) : 0);
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
	u32 = (&__cc_module_loads != NULL && cc_trace_loads) ? 1u : 0u; memcpy(hdr + 36, &u32, 4);
	u32 = (uint32_t)getpid(); memcpy(hdr + 40, &u32, 4);
	u32 = (uint32_t)nsites; memcpy(hdr + 44, &u32, 4);
	write_all(trace_fd, hdr, sizeof(hdr));

	/* Site records are small; batch them through a stack buffer. */
	static unsigned char rec[5 * 4 + 6 * (2 + 0xffff)];
	unsigned char out[64 * 1024];
	size_t used = 0;
	for (size_t i = 0; i < nsites; i++) {
		size_t n = 0;
		memcpy(rec + n, &s[i].line, 4); n += 4;
		memcpy(rec + n, &s[i].col, 4); n += 4;
		memcpy(rec + n, &s[i].inl_line, 4); n += 4;
		memcpy(rec + n, &s[i].inl_col, 4); n += 4;
		uint32_t flags = (uint32_t)s[i].flags;
		memcpy(rec + n, &flags, 4); n += 4;
		n += put_str(rec + n, s[i].file);
		n += put_str(rec + n, s[i].func);
		n += put_str(rec + n, s[i].inl_file);
		n += put_str(rec + n, s[i].inl_func);
		/* the pass keeps the inline chain in the chain string, after a \x1e (SiteTable.h):
		 * written as two fields, the helper chain and the inline chain (version 4) */
		const char *chain = s[i].chain ? s[i].chain : "";
		const char *cut = strchr(chain, '\x1e');
		n += put_strn(rec + n, chain, cut ? (size_t)(cut - chain) : strlen(chain));
		n += put_str(rec + n, cut ? cut + 1 : "");
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

/* writer_main -- write handed-over chunks in order (internal; the writer thread) */
static void *writer_main(void *arg)
{
	(void)arg;
	CC_REAL(mutex_lock)(&ring_mu);
	for (;;) {
		while (written == handed && !writer_stop)
			CC_REAL(cond_wait)(&ring_ready, &ring_mu);
		if (written == handed)
			break;
		unsigned i = written % NSLOTS;
		CC_REAL(mutex_unlock)(&ring_mu);
		write_all(trace_fd, slots[i], slot_len[i]);
		CC_REAL(mutex_lock)(&ring_mu);
		__atomic_store_n(&written, written + 1, __ATOMIC_RELEASE);
		CC_REAL(cond_broadcast)(&ring_free);
	}
	CC_REAL(mutex_unlock)(&ring_mu);
	return NULL;
}

/* drain -- wait until the writer has written every handed-over chunk (internal) */
static void drain(void)
{
	CC_REAL(mutex_lock)(&ring_mu);
	while (written != handed)
		CC_REAL(cond_wait)(&ring_free, &ring_mu);
	CC_REAL(mutex_unlock)(&ring_mu);
}

/* seal_chunk -- fill the current buffer's reserved chunk header (internal) */
static void seal_chunk(void)
{
	uint32_t magic = CC_CHUNK_MAGIC;
	uint64_t payload = buf_len - CC_CHUNK_HDR;
	memcpy(buf, &magic, 4);
	memcpy(buf + 4, &buf_events, 4);
	memcpy(buf + 8, &payload, 8);
}

/* flush_buffer -- hand the buffered events over as one chunk (internal; caller holds the lock) */
static void flush_buffer(void)
{
	if (trace_fd < 0)
		return;
	if (!header_written)
		write_header();
	if (buf_events == 0)
		return;
	seal_chunk();
	if (writer_state == 0)
		writer_state = cc_real_pthread_create(&writer, NULL, writer_main, NULL) == 0 ? 1 : -1;
	if (writer_state < 0) {
		write_all(trace_fd, buf, buf_len);
	} else {
		CC_REAL(mutex_lock)(&ring_mu);
		slot_len[handed % NSLOTS] = buf_len;
		handed++;
		CC_REAL(cond_signal)(&ring_ready);
		while (handed - written >= NSLOTS)
			CC_REAL(cond_wait)(&ring_free, &ring_mu);
		CC_REAL(mutex_unlock)(&ring_mu);
		buf = slots[handed % NSLOTS];
	}
	buf_len = CC_CHUNK_HDR;
	buf_events = 0;
}

/*
 * append -- one event into the buffer (internal; caller holds the lock).
 * SIZE is the event's size field; LEN bytes of PAYLOAD follow, zero-padded
 * to 8 (docs/trace-format.md says which kinds carry one).
 */
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
	uint64_t w1 = (addr & CC_ADDR_MASK) | ((uint64_t)(size & 0xffff) << 48);
	memcpy(p, &w0, 8);
	memcpy(p + 8, &w1, 8);
	if (len) {
		memcpy(p + CC_EV_HEAD, payload, len);
		if (plen != len)
			memset(p + CC_EV_HEAD + len, 0, plen - len);
	}
	buf_len += need;
	buf_events++;
}

/*
 * cc_trace_make_room -- hand the full buffer to the writer so the inline
 * hot path can go on (single-threaded logging only); 1 if it can
 */
int cc_trace_make_room(void)
{
	if (trace_fd < 0 || cc_mt_mode)
		return 0;
	flush_buffer();
	return 1;
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
	if (__builtin_expect(cc_cs_dirty, 0) && kind <= CC_EV_FENCE)
		cc_cs_sync();   /* a store, flush or fence: the call stack that made it first */
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
	cc_emit(CC_EV_REGION, (uint8_t)index, CC_NO_SITE, base, (uint32_t)(16 + nlen), payload,
		(uint32_t)(16 + nlen));
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
	if (writer_state > 0)
		drain();
	if (locked)
		cc_unlock();
}

/* cc_trace_from_here -- drop what was logged and start the trace over from the regions' bytes now
 * (at operation cc_trace_from's op_begin; single-threaded) */
void cc_trace_from_here(void)
{
	if (trace_fd < 0)
		return;
	/* every chunk handed over so far is written: none can land after the truncation */
	if (writer_state > 0)
		drain();
	buf_len = CC_CHUNK_HDR;
	buf_events = 0;
	if (ftruncate(trace_fd, 0) != 0 || lseek(trace_fd, 0, SEEK_SET) != 0) {
		fprintf(stderr, "crashcheck: cannot start the trace %s over: %s\n", trace_path, strerror(errno));
		exit(2);
	}
	header_written = 0;
	if (cc_regions_restart() != 0) {
		fprintf(stderr, "crashcheck: %s\n", crashcheck_last_error());
		exit(2);
	}
	cc_from_log_live();      /* the load's objects, with their allocating sites (rt_from.c) */
	/* the load's last operation ended here: crash points count the operations done from it */
	if (cc_trace_from > 0)
		cc_emit(CC_EV_OP_END, 0, CC_NO_SITE, cc_trace_from - 1, 0, NULL, 0);
}

/* trace_finish -- the end marker and the last chunk, at exit (internal) */
static void trace_finish(void)
{
	if (trace_fd < 0)
		return;
	cc_emit(CC_EV_END, 0, CC_NO_SITE, 0, 0, NULL, 0);
	crashcheck_trace_flush();
	if (writer_state > 0) {
		CC_REAL(mutex_lock)(&ring_mu);
		writer_stop = 1;
		CC_REAL(cond_signal)(&ring_ready);
		CC_REAL(mutex_unlock)(&ring_mu);
		CC_REAL(join)(writer, NULL);
		writer_state = 0;
	}
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
		/* Chunks must stay in order: give the writer up to ~2 s to finish its queue. */
		for (int i = 0; i < 2000 && __atomic_load_n(&written, __ATOMIC_ACQUIRE) != handed; i++) {
			struct timespec ms = { 0, 1000000 };
			CC_REAL(nanosleep)(&ms, NULL);
		}
		if (!header_written)
			write_header();
		if (buf_events) {
			seal_chunk();
			write_all(trace_fd, buf, buf_len);
		}
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
	/* The writer thread does not exist here; nothing of the parent's is written. */
	writer_state = -1;
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
	const char *from = getenv("CRASHCHECK_TRACE_FROM");
	if (from != NULL && *from != '\0')
		cc_trace_from = strtoull(from, NULL, 10);
	const char *loads = getenv("CRASHCHECK_TRACE_LOADS");
	if (loads != NULL && strcmp(loads, "0") == 0)
		cc_trace_loads = 0;
	else if (loads != NULL && strcmp(loads, "threads") == 0)
		cc_trace_loads = CC_LOADS_WITH_THREADS;
	/* before anything here can fault: a crash in crashcheck's own code is told apart (rt_fault.c) */
	crashcheck_fault_guard();
	if (strlen(path) >= sizeof(trace_path) - 32) {
		fprintf(stderr, "crashcheck: CRASHCHECK_TRACE path too long\n");
		exit(2);
	}
	/* Pre-fault the reused buffers once, so appends never take a page fault. */
	for (int i = 0; i < NSLOTS; i++) {
		slots[i] = malloc(CC_BUF_SIZE);
		if (slots[i] == NULL) {
			fprintf(stderr, "crashcheck: cannot allocate the trace buffers\n");
			exit(2);
		}
		memset(slots[i], 0, CC_BUF_SIZE);
	}
	buf = slots[0];
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
		sa.sa_flags = SA_ONSTACK;   /* on rt_fault.c's stack: a stack overflow still flushes */
		sigemptyset(&sa.sa_mask);
		sigaction(fatal_signals[i], &sa, &old_actions[i]);
	}
	pthread_atfork(NULL, NULL, in_child);
	atexit(trace_finish);
}
