/*
 * runner.c -- the checker runner: many post-crash states per process
 *
 * Protocol
 *   Requests arrive on the input fd as a 16-byte head (u32 kind, u32 body
 *   length, u64 id) and a body; every request gets exactly one JSON line on
 *   the output fd, in order, so the client may pipeline.  The runner first
 *   says hello ({"runner": 1, ...}).  docs/runner-protocol.md is the full
 *   statement; keep the two in step.
 *
 * The base image
 *   The pool is a private anonymous mapping at the fixed pool address, owned
 *   by the runner.  BASE loads an image file into it (only the file's data
 *   extents and non-zero pages are touched, so a sparse 64 MiB pool with a
 *   small structure in it stays a few pages); PATCH writes into it.  The
 *   base is the image of the guaranteed state at one crash point.
 *
 * One state
 *   The runner validates the state's writes, then forks.  The child applies
 *   the writes to its copy-on-write view of the pool (the parent's base is
 *   never touched, and only the pages written are copied), points fds 0-2
 *   away from the protocol (stdout and stderr both go to a capture file),
 *   installs its limits and calls CHECK, which writes one JSON object to a
 *   second capture file.  Both capture files are memfds reused for every
 *   state (rewound before each fork; the child's file offset tells how much
 *   it wrote), so the parent never has to drain a pipe while it waits, and
 *   output size is bounded by RLIMIT_FSIZE.  The fatal-signal handlers, the
 *   alternate stack and RLIMIT_CORE = 0 are set once in the parent and
 *   inherited, to keep per-state system calls few.
 *
 * Limits and how a child ends
 *   The parent waits (sigtimedwait on SIGCHLD, blocked while serving) with
 *   the wall-clock timeout and SIGKILLs the child's process group when it
 *   runs out ("timeout"); a child that stops itself (SIGSTOP) is hung at
 *   once ("timeout" with the stop signal).  After every state the group is
 *   SIGKILLed anyway, so nothing a check forked outlives it ("stray" says
 *   something was left).  A child that kills the runner cannot be stopped
 *   from doing so; it dies with it (PR_SET_PDEATHSIG) and the client starts
 *   a new runner.  RLIMIT_CPU (SIGXCPU) also counts as "timeout".  RLIMIT_AS is the runner's mapped size at fork time plus
 *   mem_bytes.  When memory runs out, malloc returns NULL and the check then
 *   dies in whatever way it handles that (SIGSEGV on the NULL, abort, exit);
 *   to tell that apart from an ordinary crash, the child's fatal-signal
 *   handler and exit path probe the address space (an mmap of
 *   min(mem_bytes / 8, 8 MiB)) and note in a shared page when it is nearly
 *   full: an abnormal end with a nearly full address space is "oom".  The
 *   handler runs on an alternate stack, so stack overflow is reported as the
 *   SIGSEGV it is.  Core dumps are switched off.
 *
 * Results and deduplication
 *   The child's output is validated as JSON and compacted onto one line; an
 *   invalid output becomes "result": null plus the raw text in "output".
 *   The answer minus its state id is hashed (128 bits); an answer equal to an
 *   earlier one is sent as {"state": N, "dup_of": M} only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

enum req_kind {
	REQ_BASE = 1,   /* body: path of an image file */
	REQ_PATCH = 2,  /* body: writes, applied to the base */
	REQ_STATE = 3,  /* body: u32 followup length, followup, writes */
	REQ_RESET = 4,  /* forget earlier results (no more dup_of to them) */
	REQ_QUIT = 5,
};

#define REQ_HEAD 16
#define WRITE_HEAD 12                    /* u64 offset, u32 length */
#define MAX_BODY ((size_t)1 << 31)
#define FSIZE_LIMIT ((rlim_t)256 << 20)  /* bytes a child may write to its capture files */
#define STDERR_TAIL_BYTES 2048
#define STDERR_TAIL_LINES 20
#define OUTPUT_SHOW_BYTES 4096           /* raw text kept from an invalid result */
#define ALTSTACK_SIZE (64 * 1024)
#define JSON_MAX_DEPTH 512
#define SENDQ_FLUSH (64 * 1024)          /* write held answers once this many bytes wait */

/* A growable byte buffer (answers, request bodies, captured output). */
struct buf {
	char *p;
	size_t len, cap;
};

/* One remembered answer: its 128-bit hash and the first state that gave it. */
struct seen {
	uint64_t a, b, id;
	int used;
};

struct runner {
	int in_fd, out_fd;
	uint8_t *pool;
	size_t size, map_size;
	cc_check_fn check;
	void *ctx;
	struct cc_runner_limits lim;
	int res_fd, err_fd, null_fd;
	void *altstack;
	size_t vm_bytes;       /* runner's address space size, for RLIMIT_AS */
	int vm_stale;
	struct buf inb, ans, sendq, body, out, err;
	size_t inpos;               /* bytes of inb already consumed */
	struct seen *seen;
	size_t seen_cap, seen_len;
};

/* State the child's signal handlers need (a child runs one check). */
struct shared_page {
	volatile int oom;
};
static struct shared_page *shared;
static size_t probe_bytes;

/* now_ms -- monotonic milliseconds (internal) */
static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* buf_reserve -- make room for N more bytes; -1 when out of memory (internal) */
static int buf_reserve(struct buf *b, size_t n, int *vm_stale)
{
	if (b->len + n <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + n)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (p == NULL)
		return -1;
	b->p = p;
	b->cap = cap;
	if (vm_stale)
		*vm_stale = 1;
	return 0;
}

/* buf_add -- append N bytes (internal) */
static int buf_add(struct runner *r, struct buf *b, const void *data, size_t n)
{
	if (n == 0)
		return 0;   /* B may have no storage yet */
	if (buf_reserve(b, n, &r->vm_stale) < 0)
		return -1;
	memcpy(b->p + b->len, data, n);
	b->len += n;
	return 0;
}

/* buf_str -- append a C string (internal) */
static int buf_str(struct runner *r, struct buf *b, const char *s)
{
	return buf_add(r, b, s, strlen(s));
}

/* buf_fmt -- append printf-formatted text (internal) */
static int buf_fmt(struct runner *r, struct buf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -1;
	return buf_add(r, b, tmp, (size_t)n);
}

/*
 * utf8_len -- length of the valid UTF-8 sequence at S (at most N bytes), or
 * 0 if the bytes there are not valid UTF-8 (internal)
 */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	unsigned min;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	unsigned cp = c & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/*
 * buf_json_str -- append DATA as a JSON string; bytes that are not valid
 * UTF-8 become U+FFFD, so the answer line always parses (internal)
 */
static int buf_json_str(struct runner *r, struct buf *b, const char *data, size_t n)
{
	const unsigned char *s = (const unsigned char *)data;
	if (buf_add(r, b, "\"", 1) < 0)
		return -1;
	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		int rc = 0;
		if (c == '"' || c == '\\') {
			char esc[2] = { '\\', (char)c };
			rc = buf_add(r, b, esc, 2);
			i++;
		} else if (c == '\n') {
			rc = buf_add(r, b, "\\n", 2);
			i++;
		} else if (c == '\t') {
			rc = buf_add(r, b, "\\t", 2);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			rc = buf_fmt(r, b, "\\u%04x", c);
			i++;
		} else if (c < 0x80) {
			rc = buf_add(r, b, s + i, 1);
			i++;
		} else {
			size_t len = utf8_len(s + i, n - i);
			if (len == 0) {
				rc = buf_add(r, b, "\\ufffd", 6);
				i++;
			} else {
				rc = buf_add(r, b, s + i, len);
				i += len;
			}
		}
		if (rc < 0)
			return -1;
	}
	return buf_add(r, b, "\"", 1);
}

/*
 * JSON validation and compaction.  struct jscan walks the child's output;
 * every function returns 0 on a valid value (appended to OUT without
 * insignificant whitespace) or -1.
 */
struct jscan {
	const unsigned char *s;
	size_t n, i;
	struct runner *r;
	struct buf *out;
};

static int json_value(struct jscan *j, int depth);

/* json_ws -- skip insignificant whitespace (internal) */
static void json_ws(struct jscan *j)
{
	while (j->i < j->n && (j->s[j->i] == ' ' || j->s[j->i] == '\t' ||
			       j->s[j->i] == '\n' || j->s[j->i] == '\r'))
		j->i++;
}

/* json_emit -- copy input bytes [from, j->i) to the output (internal) */
static int json_emit(struct jscan *j, size_t from)
{
	return buf_add(j->r, j->out, j->s + from, j->i - from);
}

/* json_string -- a string, escapes and UTF-8 checked (internal) */
static int json_string(struct jscan *j)
{
	size_t from = j->i;
	j->i++; /* opening quote */
	while (j->i < j->n) {
		unsigned c = j->s[j->i];
		if (c == '"') {
			j->i++;
			return json_emit(j, from);
		}
		if (c < 0x20)
			return -1;
		if (c == '\\') {
			if (j->i + 1 >= j->n)
				return -1;
			unsigned e = j->s[j->i + 1];
			if (e == 'u') {
				if (j->i + 6 > j->n)
					return -1;
				for (size_t k = 2; k < 6; k++) {
					unsigned h = j->s[j->i + k];
					if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') ||
					      (h >= 'A' && h <= 'F')))
						return -1;
				}
				j->i += 6;
			} else if (strchr("\"\\/bfnrt", (int)e) && e != 0) {
				j->i += 2;
			} else {
				return -1;
			}
		} else if (c < 0x80) {
			j->i++;
		} else {
			size_t len = utf8_len(j->s + j->i, j->n - j->i);
			if (len == 0)
				return -1;
			j->i += len;
		}
	}
	return -1;
}

/* json_digits -- one or more decimal digits (internal) */
static int json_digits(struct jscan *j)
{
	size_t from = j->i;
	while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9')
		j->i++;
	return j->i > from ? 0 : -1;
}

/* json_number -- a number in JSON's grammar (internal) */
static int json_number(struct jscan *j)
{
	size_t from = j->i;
	if (j->s[j->i] == '-')
		j->i++;
	if (j->i < j->n && j->s[j->i] == '0')
		j->i++;
	else if (json_digits(j) < 0)
		return -1;
	if (j->i < j->n && j->s[j->i] == '.') {
		j->i++;
		if (json_digits(j) < 0)
			return -1;
	}
	if (j->i < j->n && (j->s[j->i] == 'e' || j->s[j->i] == 'E')) {
		j->i++;
		if (j->i < j->n && (j->s[j->i] == '+' || j->s[j->i] == '-'))
			j->i++;
		if (json_digits(j) < 0)
			return -1;
	}
	return json_emit(j, from);
}

/* json_word -- true, false or null (internal) */
static int json_word(struct jscan *j, const char *w)
{
	size_t len = strlen(w);
	if (j->n - j->i < len || memcmp(j->s + j->i, w, len) != 0)
		return -1;
	j->i += len;
	return buf_add(j->r, j->out, w, len);
}

/* json_members -- the inside of an object or array, up to CLOSE (internal) */
static int json_members(struct jscan *j, int depth, int object, char close)
{
	char c = object ? '{' : '[';
	if (buf_add(j->r, j->out, &c, 1) < 0)
		return -1;
	j->i++;
	json_ws(j);
	if (j->i < j->n && j->s[j->i] == (unsigned char)close) {
		j->i++;
		return buf_add(j->r, j->out, &close, 1);
	}
	for (;;) {
		json_ws(j);
		if (object) {
			if (j->i >= j->n || j->s[j->i] != '"' || json_string(j) < 0)
				return -1;
			json_ws(j);
			if (j->i >= j->n || j->s[j->i] != ':' || buf_add(j->r, j->out, ":", 1) < 0)
				return -1;
			j->i++;
		}
		if (json_value(j, depth + 1) < 0)
			return -1;
		json_ws(j);
		if (j->i >= j->n)
			return -1;
		if (j->s[j->i] == ',') {
			j->i++;
			if (buf_add(j->r, j->out, ",", 1) < 0)
				return -1;
			continue;
		}
		if (j->s[j->i] != (unsigned char)close)
			return -1;
		j->i++;
		return buf_add(j->r, j->out, &close, 1);
	}
}

/* json_value -- any JSON value (internal) */
static int json_value(struct jscan *j, int depth)
{
	if (depth > JSON_MAX_DEPTH)
		return -1;
	json_ws(j);
	if (j->i >= j->n)
		return -1;
	switch (j->s[j->i]) {
	case '{':
		return json_members(j, depth, 1, '}');
	case '[':
		return json_members(j, depth, 0, ']');
	case '"':
		return json_string(j);
	case 't':
		return json_word(j, "true");
	case 'f':
		return json_word(j, "false");
	case 'n':
		return json_word(j, "null");
	default:
		if (j->s[j->i] == '-' || (j->s[j->i] >= '0' && j->s[j->i] <= '9'))
			return json_number(j);
		return -1;
	}
}

/*
 * json_compact -- append DATA to OUT as one compact line if it is exactly
 * one JSON object (surrounding whitespace allowed); else leave OUT as it was
 * and return -1 (internal)
 */
static int json_compact(struct runner *r, struct buf *out, const char *data, size_t n)
{
	size_t keep = out->len;
	struct jscan j = { (const unsigned char *)data, n, 0, r, out };
	json_ws(&j);
	if (j.i >= n || j.s[j.i] != '{' || json_value(&j, 0) < 0)
		goto bad;
	json_ws(&j);
	if (j.i != n)
		goto bad;
	return 0;
bad:
	out->len = keep;
	return -1;
}

/* mix64 -- a bijective 64-bit mixer (MurmurHash3's finaliser) (internal) */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/*
 * hash128 -- two independent 64-bit lanes over DATA; identical answers
 * are deduplicated on both, so a false match needs a 128-bit collision
 * (internal)
 */
static void hash128(const void *data, size_t n, uint64_t *a, uint64_t *b)
{
	const unsigned char *s = data;
	uint64_t ha = 0x9e3779b97f4a7c15ULL ^ n, hb = 0xc2b2ae3d27d4eb4fULL + n;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, s + i, 8);
		ha = mix64(ha ^ w) + 0x165667b19e3779f9ULL;
		hb = mix64(hb + w * 0x27d4eb2f165667c5ULL) ^ (hb >> 29);
	}
	uint64_t w = 0;
	memcpy(&w, s + i, n - i);
	ha = mix64(ha ^ w ^ 0x85ebca6b);
	hb = mix64(hb + (w | (uint64_t)(n - i) << 56));
	*a = mix64(ha ^ (hb << 1));
	*b = mix64(hb ^ 0x94d049bb133111ebULL);
}

/*
 * seen_lookup -- the first state whose answer hashed to (A, B), or remember
 * ID as that state; returns 1 and sets *FIRST on a repeat (internal)
 */
static int seen_lookup(struct runner *r, uint64_t a, uint64_t b, uint64_t id, uint64_t *first)
{
	if (r->seen_len * 2 >= r->seen_cap) {
		size_t cap = r->seen_cap ? r->seen_cap * 2 : 1024;
		struct seen *t = calloc(cap, sizeof(*t));
		if (t == NULL)
			return 0; /* no room to remember: answer in full, which is always correct */
		for (size_t i = 0; i < r->seen_cap; i++) {
			if (!r->seen[i].used)
				continue;
			size_t k = r->seen[i].a & (cap - 1);
			while (t[k].used)
				k = (k + 1) & (cap - 1);
			t[k] = r->seen[i];
		}
		free(r->seen);
		r->seen = t;
		r->seen_cap = cap;
		r->vm_stale = 1;
	}
	size_t k = a & (r->seen_cap - 1);
	while (r->seen[k].used) {
		if (r->seen[k].a == a && r->seen[k].b == b) {
			*first = r->seen[k].id;
			return 1;
		}
		k = (k + 1) & (r->seen_cap - 1);
	}
	r->seen[k] = (struct seen){ a, b, id, 1 };
	r->seen_len++;
	return 0;
}

/* write_full -- write all N bytes (internal) */
static int write_full(int fd, const void *p, size_t n)
{
	size_t put = 0;
	while (put < n) {
		ssize_t k = write(fd, (const char *)p + put, n - put);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		put += (size_t)k;
	}
	return 0;
}

/* flush_answers -- write every held answer (internal) */
static int flush_answers(struct runner *r)
{
	if (r->sendq.len == 0)
		return 0;
	int rc = write_full(r->out_fd, r->sendq.p, r->sendq.len);
	r->sendq.len = 0;
	if (rc < 0)
		fprintf(stderr, "crashcheck runner: cannot write answers: %s\n", strerror(errno));
	return rc;
}

/*
 * send_answer -- queue the answer buffer as one line.  Answers are held
 * while more requests are already buffered (see next_request), so a client
 * that sends a batch wakes up once per batch, not once per state (internal)
 */
static int send_answer(struct runner *r)
{
	if (buf_add(r, &r->ans, "\n", 1) < 0 || buf_add(r, &r->sendq, r->ans.p, r->ans.len) < 0)
		return -1;
	r->ans.len = 0;
	if (r->sendq.len >= SENDQ_FLUSH)
		return flush_answers(r);
	return 0;
}

/* send_ack -- {"ack": WHAT, "id": ID} (internal) */
static int send_ack(struct runner *r, const char *what, uint64_t id)
{
	r->ans.len = 0;
	if (buf_fmt(r, &r->ans, "{\"ack\":\"%s\",\"id\":%llu}", what, (unsigned long long)id) < 0)
		return -1;
	return send_answer(r);
}

/* send_error -- {"error": MSG, "id": ID}; also on stderr (internal) */
static int send_error(struct runner *r, uint64_t id, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "crashcheck runner: %s\n", msg);
	r->ans.len = 0;
	if (buf_str(r, &r->ans, "{\"error\":") < 0 ||
	    buf_json_str(r, &r->ans, msg, strlen(msg)) < 0 ||
	    buf_fmt(r, &r->ans, ",\"id\":%llu}", (unsigned long long)id) < 0)
		return -1;
	return send_answer(r);
}

/*
 * check_writes -- validate a list of writes against the pool; returns NULL
 * or a description of the first bad one (internal)
 */
static const char *check_writes(const struct runner *r, const uint8_t *w, size_t n)
{
	size_t pos = 0;
	while (pos < n) {
		if (n - pos < WRITE_HEAD)
			return "a write record is cut short";
		uint64_t off;
		uint32_t len;
		memcpy(&off, w + pos, 8);
		memcpy(&len, w + pos + 8, 4);
		pos += WRITE_HEAD;
		if (len > n - pos)
			return "a write's data is cut short";
		if (off > r->size || len > r->size - off)
			return "a write falls outside the pool";
		pos += len;
	}
	return NULL;
}

/* apply_writes -- copy validated writes into the pool (internal) */
static void apply_writes(uint8_t *pool, const uint8_t *w, size_t n)
{
	size_t pos = 0;
	while (pos < n) {
		uint64_t off;
		uint32_t len;
		memcpy(&off, w + pos, 8);
		memcpy(&len, w + pos + 8, 4);
		memcpy(pool + off, w + pos + WRITE_HEAD, len);
		pos += WRITE_HEAD + len;
	}
}

/* is_zero -- non-zero if N bytes at P are all zero (internal) */
static int is_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/*
 * copy_range -- copy [FROM, TO) of the image file into the pool, skipping
 * all-zero pages so they stay unpopulated (internal)
 */
static int copy_range(struct runner *r, int fd, off_t from, off_t to)
{
	static uint8_t page[1 << 16];
	while (from < to) {
		size_t want = (size_t)(to - from) < sizeof(page) ? (size_t)(to - from) : sizeof(page);
		ssize_t got = pread(fd, page, want, from);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		for (ssize_t k = 0; k < got; k += 4096) {
			size_t len = (size_t)(got - k) < 4096 ? (size_t)(got - k) : 4096;
			if (!is_zero(page + k, len))
				memcpy(r->pool + from + k, page + k, len);
		}
		from += got;
	}
	return 0;
}

/* load_base -- make the pool a copy of the image file PATH (internal) */
static int load_base(struct runner *r, const char *path, char *why, size_t whylen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, whylen, "cannot open base image %s: %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || (size_t)st.st_size > r->size) {
		snprintf(why, whylen, "base image %s has %lld bytes, the pool %zu", path,
			 (long long)st.st_size, r->size);
		close(fd);
		return -1;
	}
	/* A private anonymous mapping reads as zeros again after MADV_DONTNEED. */
	madvise(r->pool, r->map_size, MADV_DONTNEED);
	off_t pos = 0;
	int rc = 0;
	while (pos < st.st_size) {
		off_t data = lseek(fd, pos, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break;
		if (data < 0) {
			/* No SEEK_DATA here: copy the rest, zero pages still skipped. */
			rc = copy_range(r, fd, pos, st.st_size);
			break;
		}
		off_t hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0)
			hole = st.st_size;
		if ((rc = copy_range(r, fd, data, hole)) < 0)
			break;
		pos = hole;
	}
	if (rc < 0)
		snprintf(why, whylen, "cannot read base image %s: %s", path, strerror(errno));
	close(fd);
	return rc;
}

/* vm_size -- the process's address-space size in bytes, 0 if unknown (internal) */
static size_t vm_size(void)
{
	char text[128];
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	return (size_t)strtoull(text, NULL, 10) * (size_t)sysconf(_SC_PAGESIZE);
}

/* probe_oom -- note in the shared page if the address space is nearly full (internal) */
static void probe_oom(void)
{
	if (shared == NULL || probe_bytes == 0)
		return;
	void *p = mmap(NULL, probe_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		shared->oom = 1;
	else
		munmap(p, probe_bytes);
}

/* child_fatal -- a check died of a fatal signal: probe, then die of it (internal) */
static void child_fatal(int sig)
{
	probe_oom();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* child_exit -- a check called exit(): probe (internal) */
static void child_exit(void)
{
	probe_oom();
}

static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE, SIGSYS, SIGTRAP };
#define NFATAL (sizeof(fatal_signals) / sizeof(fatal_signals[0]))

/* What install_child_handlers replaced, for restore_handlers. */
struct saved_state {
	struct sigaction fatal[NFATAL];
	stack_t altstack;
	struct rlimit core;
};

/*
 * install_child_handlers -- give the process the fatal-signal handlers,
 * alternate stack and core limit every child needs.  Done once in the
 * parent (fork copies them) instead of eight system calls per child; the
 * parent's own behaviour on a fatal signal stays the same (the handler
 * re-raises it).  Undone by restore_handlers (internal)
 */
static void install_child_handlers(struct runner *r, struct saved_state *old)
{
	stack_t ss = { .ss_sp = r->altstack, .ss_size = ALTSTACK_SIZE, .ss_flags = 0 };
	sigaltstack(&ss, &old->altstack);
	for (size_t i = 0; i < NFATAL; i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = child_fatal;
		sa.sa_flags = SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		sigaction(fatal_signals[i], &sa, &old->fatal[i]);
	}
	getrlimit(RLIMIT_CORE, &old->core);
	struct rlimit none = { 0, old->core.rlim_max };
	setrlimit(RLIMIT_CORE, &none);
}

/* restore_handlers -- undo install_child_handlers (internal) */
static void restore_handlers(const struct saved_state *old)
{
	for (size_t i = 0; i < NFATAL; i++)
		sigaction(fatal_signals[i], &old->fatal[i], NULL);
	sigaltstack(&old->altstack, NULL);
	setrlimit(RLIMIT_CORE, &old->core);
}

/* child_main -- the forked child: apply the state, limit, run CHECK (internal) */
static void child_main(struct runner *r, const uint8_t *writes, size_t wlen, const char *followup)
{
	setpgid(0, 0);   /* its own group: the parent kills whatever it forked too */
	/* A check that kills the runner (kill(getppid(), SIGKILL)) cannot be
	 * prevented; the client notices, reports the state in flight and starts
	 * a new runner.  This child must then not live on as an orphan. */
	pid_t parent = getppid();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(126);
	apply_writes(r->pool, writes, wlen);

	/* Keep the protocol fds out of reach: stray prints land in the capture. */
	dup2(r->null_fd, 0);
	dup2(r->err_fd, 1);
	dup2(r->err_fd, 2);
	if (r->in_fd > 2)
		close(r->in_fd);
	if (r->out_fd > 2)
		close(r->out_fd);

	/* Handlers, the alternate stack and RLIMIT_CORE come from the parent
	 * (install_child_handlers); only what differs from it is set here. */
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	signal(SIGPIPE, SIG_DFL);

	struct rlimit rl;
	rl.rlim_cur = rl.rlim_max = FSIZE_LIMIT;
	setrlimit(RLIMIT_FSIZE, &rl);
	if (r->lim.cpu_seconds) {
		rl.rlim_cur = r->lim.cpu_seconds;
		rl.rlim_max = (rlim_t)r->lim.cpu_seconds + 1;
		setrlimit(RLIMIT_CPU, &rl);
	}
	if (r->lim.mem_bytes && r->vm_bytes) {
		rl.rlim_cur = rl.rlim_max = r->vm_bytes + r->lim.mem_bytes;
		setrlimit(RLIMIT_AS, &rl);
		atexit(child_exit);
	}

	FILE *out = fdopen(r->res_fd, "w");
	if (out == NULL)
		_exit(125);
	int rc = r->check(r->ctx, followup, out);
	if (fflush(out) != 0)
		rc = rc ? rc : 124;
	fflush(stdout);
	fflush(stderr);
	if (rc != 0)
		probe_oom();
	_exit(rc == 0 ? 0 : (rc & 0xff) ? (rc & 0xff) : 1);
}

/*
 * read_capture -- what the child wrote to capture file FD (as far as its
 * offset), or its last TAIL bytes if TAIL is non-zero, into B (internal)
 */
static int read_capture(struct runner *r, int fd, struct buf *b, size_t tail)
{
	b->len = 0;
	off_t end = lseek(fd, 0, SEEK_CUR);
	if (end < 0)
		return -1;
	size_t size = (size_t)end;
	size_t from = tail && size > tail ? size - tail : 0;
	if (buf_reserve(b, size - from + 1, &r->vm_stale) < 0)
		return -1;
	while (b->len < size - from) {
		ssize_t k = pread(fd, b->p + b->len, size - from - b->len, (off_t)(from + b->len));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		b->len += (size_t)k;
	}
	return 0;
}

/* stderr_tail -- offset in ERR where its last STDERR_TAIL_LINES lines start (internal) */
static size_t stderr_tail(const struct buf *err)
{
	size_t end = err->len, lines = 0, i = end;
	if (end && err->p[end - 1] == '\n')
		i--;
	while (i > 0) {
		if (err->p[i - 1] == '\n' && ++lines == STDERR_TAIL_LINES)
			return i;
		i--;
	}
	return 0;
}

/*
 * wait_child -- reap PID within the timeout; kills it if time runs out.
 * SIGCHLD is blocked while the runner serves, so sigtimedwait() sleeps
 * until a child ends or the deadline passes: two system calls per state in
 * the common case.  A SIGCHLD left over from an earlier child only costs
 * one more round of the loop (internal)
 */
static int wait_child(struct runner *r, pid_t pid, int *status, struct rusage *ru, int *timed_out)
{
	int stop_sig = 0;
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	*timed_out = 0;
	int64_t deadline = r->lim.timeout_ms ? now_ms() + r->lim.timeout_ms : 0;
	for (;;) {
		struct timespec ts, *tp = NULL;
		if (deadline) {
			int64_t left = deadline - now_ms();
			if (left < 0)
				left = 0;
			ts.tv_sec = left / 1000;
			ts.tv_nsec = (left % 1000) * 1000000;
			tp = &ts;
		}
		int expired = sigtimedwait(&chld, NULL, tp) < 0 && errno == EAGAIN;
		pid_t w = wait4(pid, status, WNOHANG | WUNTRACED, ru);
		if (w == pid && WIFSTOPPED(*status)) {
			/* Nobody will send it SIGCONT: a stopped check is hung now,
			 * not when the timeout (which may be off) runs out. */
			stop_sig = WSTOPSIG(*status);
			break;
		}
		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -1;
		if (expired && deadline && now_ms() >= deadline)
			break;
	}
	*timed_out = stop_sig ? stop_sig : SIGKILL;
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);   /* in case it had not reached setpgid yet */
	for (;;) {
		pid_t w = wait4(pid, status, 0, ru);
		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -1;
	}
}

/* run_state -- fork, check one state, answer (internal) */
static int run_state(struct runner *r, uint64_t id, const uint8_t *body, size_t n)
{
	if (n < 4)
		return send_error(r, id, "state %llu: body shorter than its followup length",
				  (unsigned long long)id);
	uint32_t flen;
	memcpy(&flen, body, 4);
	if (flen > n - 4)
		return send_error(r, id, "state %llu: followup runs past the body", (unsigned long long)id);
	const uint8_t *writes = body + 4 + flen;
	size_t wlen = n - 4 - flen;
	const char *bad = check_writes(r, writes, wlen);
	if (bad)
		return send_error(r, id, "state %llu: %s", (unsigned long long)id, bad);
	r->body.len = 0;
	if (buf_add(r, &r->body, body + 4, flen) < 0 || buf_add(r, &r->body, "", 1) < 0)
		return send_error(r, id, "out of memory");

	if (r->vm_stale && r->lim.mem_bytes) {
		r->vm_bytes = vm_size();
		r->vm_stale = 0;
	}
	/* Rewind the capture files; the child's writes move the shared offsets,
	 * which then tell how much it wrote (stale bytes beyond are ignored). */
	if (lseek(r->res_fd, 0, SEEK_SET) < 0 || lseek(r->err_fd, 0, SEEK_SET) < 0)
		return send_error(r, id, "cannot rewind the capture files: %s", strerror(errno));
	shared->oom = 0;
	fflush(NULL);

	pid_t pid = fork();
	if (pid < 0)
		return send_error(r, id, "fork failed: %s", strerror(errno));
	if (pid == 0)
		child_main(r, writes, wlen, r->body.p);

	int status = 0, timed_out = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	if (wait_child(r, pid, &status, &ru, &timed_out) < 0)
		return send_error(r, id, "cannot wait for the check: %s", strerror(errno));
	/* Whatever the check forked dies with it, after every state (not only on
	 * a timeout): a lingering grandchild could otherwise write into the
	 * capture files of later states.  kill() succeeding means something was
	 * left running: the answer says so ("stray"). */
	int stray = !timed_out && kill(-pid, SIGKILL) == 0;

	const char *what;
	int sig = -1, code = -1;
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
		     ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
	if (timed_out) {
		what = "timeout";
		sig = timed_out;   /* SIGKILL, or the signal that stopped it */
	} else if (WIFSIGNALED(status)) {
		sig = WTERMSIG(status);
		int cpu_out = r->lim.cpu_seconds && (sig == SIGXCPU ||
			      (sig == SIGKILL && cpu >= (double)r->lim.cpu_seconds));
		what = cpu_out ? "timeout" : shared->oom ? "oom" : "signal";
	} else {
		code = WEXITSTATUS(status);
		what = code == 0 ? "ok" : shared->oom ? "oom" : "exit";
	}

	/* The answer body: everything but the state id, which dedup ignores. */
	struct buf *a = &r->ans;
	a->len = 0;
	int rc = buf_fmt(r, a, "\"status\":\"%s\",\"signal\":", what);
	rc |= sig >= 0 ? buf_fmt(r, a, "%d", sig) : buf_str(r, a, "null");
	rc |= buf_str(r, a, ",\"exit\":");
	rc |= code >= 0 ? buf_fmt(r, a, "%d", code) : buf_str(r, a, "null");
	rc |= buf_str(r, a, ",\"result\":");
	rc |= read_capture(r, r->res_fd, &r->out, 0);
	if (rc == 0 && json_compact(r, a, r->out.p, r->out.len) < 0) {
		rc |= buf_str(r, a, "null,\"output\":");
		size_t show = r->out.len < OUTPUT_SHOW_BYTES ? r->out.len : OUTPUT_SHOW_BYTES;
		rc |= buf_json_str(r, a, r->out.p, show);
	}
	rc |= read_capture(r, r->err_fd, &r->err, STDERR_TAIL_BYTES);
	rc |= buf_str(r, a, ",\"stderr\":");
	size_t from = rc == 0 ? stderr_tail(&r->err) : 0;
	rc |= buf_json_str(r, a, r->err.p + from, r->err.len - from);
	if (stray)
		rc |= buf_str(r, a, ",\"stray\":true");
	if (rc != 0)
		return send_error(r, id, "out of memory building the answer of state %llu",
				  (unsigned long long)id);

	uint64_t ha, hb, first;
	hash128(a->p, a->len, &ha, &hb);
	if (seen_lookup(r, ha, hb, id, &first)) {
		a->len = 0;
		if (buf_fmt(r, a, "{\"state\":%llu,\"dup_of\":%llu}", (unsigned long long)id,
			    (unsigned long long)first) < 0)
			return -1;
		return send_answer(r);
	}
	/* Wrap the body: {"state": id, <body>, "dup_of": null}. */
	char head[48];
	int hl = snprintf(head, sizeof(head), "{\"state\":%llu,", (unsigned long long)id);
	if (buf_reserve(a, (size_t)hl + 16, &r->vm_stale) < 0)
		return -1;
	memmove(a->p + hl, a->p, a->len);
	memcpy(a->p, head, (size_t)hl);
	a->len += (size_t)hl;
	if (buf_str(r, a, ",\"dup_of\":null}") < 0)
		return -1;
	return send_answer(r);
}

/*
 * fill_input -- make at least N unconsumed bytes available in the input
 * buffer.  Requests are read in large chunks (one read(2) usually brings a
 * whole batch); held answers are written first, since the read may block.
 * Returns 0, 1 on a clean end of input (nothing buffered), -1 (internal)
 */
static int fill_input(struct runner *r, size_t n)
{
	struct buf *b = &r->inb;
	if (b->len - r->inpos >= n)
		return 0;
	if (r->inpos) {  /* drop consumed bytes */
		memmove(b->p, b->p + r->inpos, b->len - r->inpos);
		b->len -= r->inpos;
		r->inpos = 0;
	}
	if (flush_answers(r) < 0)
		return -1;
	while (b->len < n) {
		size_t want = n - b->len > (1 << 16) ? n - b->len : (1 << 16);
		if (buf_reserve(b, want, &r->vm_stale) < 0) {
			fprintf(stderr, "crashcheck runner: out of memory reading a request of %zu bytes\n", n);
			return -1;
		}
		ssize_t k = read(r->in_fd, b->p + b->len, b->cap - b->len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			fprintf(stderr, "crashcheck runner: cannot read requests: %s\n", strerror(errno));
			return -1;
		}
		if (k == 0) {
			if (b->len == 0)
				return 1;
			fprintf(stderr, "crashcheck runner: input ended inside a request\n");
			return -1;
		}
		b->len += (size_t)k;
	}
	return 0;
}

/* serve_loop -- read and answer requests until quit or EOF (internal) */
static int serve_loop(struct runner *r)
{
	for (;;) {
		int got = fill_input(r, REQ_HEAD);
		if (got != 0)
			return got == 1 ? 0 : -1;
		uint32_t kind, len;
		uint64_t id;
		const uint8_t *head = (const uint8_t *)r->inb.p + r->inpos;
		memcpy(&kind, head, 4);
		memcpy(&len, head + 4, 4);
		memcpy(&id, head + 8, 8);
		if (len > MAX_BODY) {
			send_error(r, id, "request body of %u bytes is too large", len);
			return -1;
		}
		if (fill_input(r, REQ_HEAD + (size_t)len) != 0)
			return -1;
		uint8_t *body = (uint8_t *)r->inb.p + r->inpos + REQ_HEAD;
		r->inpos += REQ_HEAD + (size_t)len;
		int rc;
		char why[600];
		const char *bad;
		switch (kind) {
		case REQ_BASE:
			r->body.len = 0;
			if (memchr(body, '\0', len))
				rc = send_error(r, id, "base image path contains a NUL byte");
			else if (buf_add(r, &r->body, body, len) < 0 || buf_add(r, &r->body, "", 1) < 0)
				rc = send_error(r, id, "out of memory");
			else if (load_base(r, r->body.p, why, sizeof(why)) < 0)
				rc = send_error(r, id, "%s", why);
			else
				rc = send_ack(r, "base", id);
			break;
		case REQ_PATCH:
			if ((bad = check_writes(r, body, len)) != NULL) {
				rc = send_error(r, id, "patch %llu: %s", (unsigned long long)id, bad);
			} else {
				apply_writes(r->pool, body, len);
				rc = send_ack(r, "patch", id);
			}
			break;
		case REQ_STATE:
			rc = run_state(r, id, body, len);
			break;
		case REQ_RESET:
			if (r->seen)
				memset(r->seen, 0, r->seen_cap * sizeof(*r->seen));
			r->seen_len = 0;
			rc = send_ack(r, "reset", id);
			break;
		case REQ_QUIT:
			send_ack(r, "quit", id);
			flush_answers(r);
			return 0;
		default:
			send_error(r, id, "unknown request kind %u (protocol out of step)", kind);
			flush_answers(r);
			return -1;
		}
		if (rc < 0)
			return -1;
	}
}

/* hello -- the first line: who we are and where the pool is (internal) */
static int hello(struct runner *r)
{
	r->ans.len = 0;
	if (buf_fmt(r, &r->ans, "{\"runner\":1,\"pool\":\"0x%llx\",\"size\":%zu,\"pid\":%d,",
		    (unsigned long long)(uintptr_t)r->pool, r->size, (int)getpid()) < 0 ||
	    buf_fmt(r, &r->ans, "\"limits\":{\"timeout_ms\":%u,\"mem_bytes\":%zu,\"cpu_seconds\":%u}}",
		    r->lim.timeout_ms, r->lim.mem_bytes, r->lim.cpu_seconds) < 0)
		return -1;
	return send_answer(r);
}

/* open_capture -- a memfd (or unlinked temp file) for a child's output (internal) */
static int open_capture(const char *name)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	if (fd >= 0)
		return fd;
	FILE *f = tmpfile();
	return f ? dup(fileno(f)) : -1;
}

/*
 * cc_runner_serve -- serve check requests from IN_FD, answering on OUT_FD
 */
int cc_runner_serve(int in_fd, int out_fd, void *pool_addr, size_t pool_size,
		    cc_check_fn check, void *ctx, const struct cc_runner_limits *lim)
{
	static const struct cc_runner_limits defaults = CC_RUNNER_DEFAULT_LIMITS;
	struct runner r;
	memset(&r, 0, sizeof(r));
	r.in_fd = in_fd;
	r.out_fd = out_fd;
	r.check = check;
	r.ctx = ctx;
	r.lim = lim ? *lim : defaults;
	r.size = pool_size;
	r.res_fd = r.err_fd = r.null_fd = -1;
	r.vm_stale = 1;
	int ret = -1;

	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	r.map_size = (pool_size + page - 1) / page * page;
	struct sigaction old_chld, old_pipe, sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;   /* reaping needs SIGCHLD not ignored */
	sigaction(SIGCHLD, &sa, &old_chld);
	sa.sa_handler = SIG_IGN;   /* a vanished client is an EPIPE, not a death */
	sigaction(SIGPIPE, &sa, &old_pipe);
	sigset_t chld, old_mask;  /* wait_child collects SIGCHLD with sigtimedwait */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old_mask);
	fflush(NULL);

	if (check == NULL || pool_size == 0 || (uintptr_t)pool_addr % page) {
		send_error(&r, 0, "bad arguments: check %s, pool 0x%llx of %zu bytes (must be page-aligned and non-empty)",
			   check ? "set" : "NULL", (unsigned long long)(uintptr_t)pool_addr, pool_size);
		goto out;
	}
	void *p = mmap(pool_addr, r.map_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED || p != pool_addr) {
		int e = p == MAP_FAILED ? errno : EEXIST;
		if (p != MAP_FAILED)
			munmap(p, r.map_size);   /* an old kernel took the address as a hint */
		send_error(&r, 0, "cannot map the pool at 0x%llx (%zu bytes): %s%s",
			   (unsigned long long)(uintptr_t)pool_addr, pool_size, strerror(e),
			   e == EEXIST ? " - the address range is already mapped in this process; "
					 "leave it unmapped (the runner maps it) or choose another with "
					 "CRASHCHECK_POOL_ADDR" : "");
		goto out;
	}
	r.pool = pool_addr;

	shared = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	r.altstack = malloc(ALTSTACK_SIZE);
	r.res_fd = open_capture("cc-result");
	r.err_fd = open_capture("cc-stderr");
	r.null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (shared == MAP_FAILED || r.altstack == NULL || r.res_fd < 0 || r.err_fd < 0 || r.null_fd < 0) {
		if (shared == MAP_FAILED)
			shared = NULL;
		send_error(&r, 0, "cannot set up the runner: %s", strerror(errno));
		goto out;
	}
	probe_bytes = r.lim.mem_bytes / 8 < ((size_t)8 << 20) ? r.lim.mem_bytes / 8 : (size_t)8 << 20;
	if (probe_bytes < page)
		probe_bytes = page;

	struct saved_state saved;
	install_child_handlers(&r, &saved);
	if (hello(&r) == 0)
		ret = serve_loop(&r);
	restore_handlers(&saved);
out:
	flush_answers(&r);
	if (r.pool)
		munmap(r.pool, r.map_size);
	if (shared) {
		munmap(shared, page);
		shared = NULL;
	}
	if (r.res_fd >= 0)
		close(r.res_fd);
	if (r.err_fd >= 0)
		close(r.err_fd);
	if (r.null_fd >= 0)
		close(r.null_fd);
	free(r.altstack);
	free(r.inb.p);
	free(r.ans.p);
	free(r.sendq.p);
	free(r.body.p);
	free(r.out.p);
	free(r.err.p);
	free(r.seen);
	/* Drop a SIGCHLD still pending from our children before unblocking it. */
	struct timespec zero = { 0, 0 };
	while (sigtimedwait(&chld, NULL, &zero) > 0)
		;
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	sigaction(SIGCHLD, &old_chld, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	return ret;
}
