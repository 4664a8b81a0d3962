/*
 * answer.c -- the checker runner's answers: every line it writes
 *
 * Results and deduplication
 *   The child's output is validated as JSON and compacted onto one line; an
 *   invalid output becomes "result": null plus the raw text in "output".
 *   The answer minus its state id is hashed (128 bits); an answer equal to an
 *   earlier one is sent as {"state": N, "dup_of": M} only.
 *
 * Sending
 *   Answers (and acks and errors) are queued, and written before the runner
 *   reads more requests (the read may block) or once SENDQ_FLUSH bytes wait,
 *   so a client that sends a batch wakes up once per batch.  Every string that goes out
 *   is valid JSON and valid UTF-8, whatever the check printed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner_internal.h"

#define STDERR_TAIL_BYTES 2048
#define STDERR_TAIL_LINES 20
#define OUTPUT_SHOW_BYTES 4096           /* raw text kept from an invalid result */
#define JSON_MAX_DEPTH 512
#define SENDQ_FLUSH (64 * 1024)          /* write held answers once this many bytes wait */
#define RAW_TAG 0x5241575241575241ULL    /* sets raw-output keys apart from answer-body keys */

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
	if (ccr_buf_add(r, b, "\"", 1) < 0)
		return -1;
	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		int rc = 0;
		if (c == '"' || c == '\\') {
			char esc[2] = { '\\', (char)c };
			rc = ccr_buf_add(r, b, esc, 2);
			i++;
		} else if (c == '\n') {
			rc = ccr_buf_add(r, b, "\\n", 2);
			i++;
		} else if (c == '\t') {
			rc = ccr_buf_add(r, b, "\\t", 2);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			rc = ccr_buf_fmt(r, b, "\\u%04x", c);
			i++;
		} else if (c < 0x80) {
			rc = ccr_buf_add(r, b, s + i, 1);
			i++;
		} else {
			size_t len = utf8_len(s + i, n - i);
			if (len == 0) {
				rc = ccr_buf_add(r, b, "\\ufffd", 6);
				i++;
			} else {
				rc = ccr_buf_add(r, b, s + i, len);
				i += len;
			}
		}
		if (rc < 0)
			return -1;
	}
	return ccr_buf_add(r, b, "\"", 1);
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
	return ccr_buf_add(j->r, j->out, j->s + from, j->i - from);
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
	return ccr_buf_add(j->r, j->out, w, len);
}

/* json_members -- the inside of an object or array, up to CLOSE (internal) */
static int json_members(struct jscan *j, int depth, int object, char close)
{
	char c = object ? '{' : '[';
	if (ccr_buf_add(j->r, j->out, &c, 1) < 0)
		return -1;
	j->i++;
	json_ws(j);
	if (j->i < j->n && j->s[j->i] == (unsigned char)close) {
		j->i++;
		return ccr_buf_add(j->r, j->out, &close, 1);
	}
	for (;;) {
		json_ws(j);
		if (object) {
			if (j->i >= j->n || j->s[j->i] != '"' || json_string(j) < 0)
				return -1;
			json_ws(j);
			if (j->i >= j->n || j->s[j->i] != ':' || ccr_buf_add(j->r, j->out, ":", 1) < 0)
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
			if (ccr_buf_add(j->r, j->out, ",", 1) < 0)
				return -1;
			continue;
		}
		if (j->s[j->i] != (unsigned char)close)
			return -1;
		j->i++;
		return ccr_buf_add(j->r, j->out, &close, 1);
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

/* mum -- the 128-bit product of A and B, folded to 64 bits (internal) */
static uint64_t mum(uint64_t a, uint64_t b)
{
	unsigned __int128 r = (unsigned __int128)a * b;
	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/*
 * hash128 -- two independent 64-bit lanes over DATA; identical answers
 * are deduplicated on both, so a false match needs a 128-bit collision.
 * Every answer's output is hashed (a few KiB for a tree's dump), so the
 * bulk goes 32 bytes a step through four independent chains, two per lane,
 * each a folded 128-bit multiply of two words (about 0.2 cycles a byte; a
 * mixer per word and lane cost 1.5); the keys' bytes are all 0x80 or more,
 * so a word of text never cancels its key.  The tail and the end are mixed
 * word by word (internal)
 */
static void hash128(const void *data, size_t n, uint64_t *a, uint64_t *b)
{
	const unsigned char *s = data;
	uint64_t a0 = 0x9e3779b97f4a7c15ULL ^ n, a1 = 0xa0761d6478bd642fULL;
	uint64_t b0 = 0xc2b2ae3d27d4eb4fULL + n, b1 = 0xe7037ed1a0b428dbULL;
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		uint64_t w[4];
		memcpy(w, s + i, 32);
		a0 = mum(w[0] ^ 0xa0f6b5d3c8e9f7b1ULL, w[1] ^ a0);
		a1 = mum(w[2] ^ 0xe1c3a5b7d9f28b9dULL, w[3] ^ a1);
		b0 = mum(w[0] ^ 0xd7b9f1e3c5a78fa3ULL, w[2] ^ b0);
		b1 = mum(w[1] ^ 0xb3d5f7e9c1a38dc5ULL, w[3] ^ b1);
	}
	uint64_t ha = mix64(a0 ^ mix64(a1)), hb = mix64(b0 + mix64(b1));
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

/* seen_find -- the first state whose key is (A, B), if any (internal) */
static int seen_find(const struct runner *r, uint64_t a, uint64_t b, uint64_t *first)
{
	if (r->seen_cap == 0)
		return 0;
	size_t k = a & (r->seen_cap - 1);
	while (r->seen[k].used) {
		if (r->seen[k].a == a && r->seen[k].b == b) {
			*first = r->seen[k].id;
			return 1;
		}
		k = (k + 1) & (r->seen_cap - 1);
	}
	return 0;
}

/* ccr_answers_forget -- forget earlier answers: no more dup_of to them */
void ccr_answers_forget(struct runner *r)
{
	if (r->seen)
		memset(r->seen, 0, r->seen_cap * sizeof(*r->seen));
	r->seen_len = 0;
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

/* ccr_flush_answers -- write every held answer */
int ccr_flush_answers(struct runner *r)
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
 * ccr_send_answer -- queue the answer buffer as one line.  Answers are held
 * while more requests are already buffered (see fill_input in serve.c), so a
 * client that sends a batch wakes up once per batch, not once per state
 */
int ccr_send_answer(struct runner *r)
{
	if (ccr_buf_add(r, &r->ans, "\n", 1) < 0 || ccr_buf_add(r, &r->sendq, r->ans.p, r->ans.len) < 0)
		return -1;
	r->ans.len = 0;
	if (r->sendq.len >= SENDQ_FLUSH)
		return ccr_flush_answers(r);
	return 0;
}

/* ccr_send_ack -- {"ack": WHAT, "id": ID} */
int ccr_send_ack(struct runner *r, const char *what, uint64_t id)
{
	r->ans.len = 0;
	if (ccr_buf_fmt(r, &r->ans, "{\"ack\":\"%s\",\"id\":%llu}", what, (unsigned long long)id) < 0)
		return -1;
	return ccr_send_answer(r);
}

/* ccr_send_error -- {"error": MSG, "id": ID}; also on stderr */
int ccr_send_error(struct runner *r, uint64_t id, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "crashcheck runner: %s\n", msg);
	r->ans.len = 0;
	if (ccr_buf_str(r, &r->ans, "{\"error\":") < 0 ||
	    buf_json_str(r, &r->ans, msg, strlen(msg)) < 0 ||
	    ccr_buf_fmt(r, &r->ans, ",\"id\":%llu}", (unsigned long long)id) < 0)
		return -1;
	return ccr_send_answer(r);
}

/*
 * pread_into -- fill B up to LEN bytes (B's room reserved) from FD, B's
 * byte i being the file's byte FROM + i; stops short at end of file or on
 * an error (internal)
 */
static void pread_into(int fd, struct buf *b, size_t len, size_t from)
{
	while (b->len < len) {
		ssize_t k = pread(fd, b->p + b->len, len - b->len, (off_t)(from + b->len));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		b->len += (size_t)k;
	}
}

/*
 * read_capture -- bytes [FROM, TO) of capture file FD (TO -1: as far as
 * its offset, where a forked check left it), or their last TAIL bytes if
 * TAIL is non-zero, into B (internal)
 */
static int read_capture(struct runner *r, int fd, struct buf *b, int64_t from, int64_t to, size_t tail)
{
	b->len = 0;
	if (to < 0 && (to = lseek(fd, 0, SEEK_CUR)) < 0)
		return -1;
	size_t size = to > from ? (size_t)(to - from) : 0;
	size_t skip = tail && size > tail ? size - tail : 0;
	if (ccr_buf_reserve(b, size - skip + 1, &r->vm_stale) < 0)
		return -1;
	pread_into(fd, b, size - skip, (size_t)from + skip);
	return 0;
}

/*
 * read_output -- the result the worker wrote: bytes [FROM, TO) of the
 * result file, those below CCR_OUT_MAP in the shared mapping, the rest in
 * the file; into B (internal)
 */
static int read_output(struct runner *r, struct buf *b, size_t from, size_t to)
{
	size_t size = to > from ? to - from : 0;
	size_t head = from >= CCR_OUT_MAP ? 0 : (to < CCR_OUT_MAP ? to : CCR_OUT_MAP) - from;
	b->len = 0;
	if (ccr_buf_reserve(b, size + 1, &r->vm_stale) < 0)
		return -1;
	memcpy(b->p, r->out_map + from, head);
	b->len = head;
	pread_into(r->res_fd, b, size, from);
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

/* send_dup -- {"state": ID, "dup_of": FIRST} (internal) */
static int send_dup(struct runner *r, uint64_t id, uint64_t first)
{
	r->ans.len = 0;
	if (ccr_buf_fmt(r, &r->ans, "{\"state\":%llu,\"dup_of\":%llu}", (unsigned long long)id,
			(unsigned long long)first) < 0)
		return -1;
	return ccr_send_answer(r);
}

/*
 * ccr_answer_state -- answer state ID, whose check ended as END: how it
 * ended, its result (or raw output), the tail of its stderr; or only
 * dup_of when an earlier state got the same answer
 */
int ccr_answer_state(struct runner *r, uint64_t id, const struct ccr_end *end)
{
	/* What the answer is made of, hashed before it is made: the same check
	 * output as an earlier state's gives the same answer, so it is sent as a
	 * dup_of that state's without validating and compacting the output again
	 * (most crash states of a correct structure recover alike).  Lazy answers
	 * also carry their exploration log: they take the long way. */
	uint64_t ra = 0, rb = 0, first;
	int raw = !ccr_lazy_active();
	/* A check that ran out of time under the shorter limit of a LIMIT
	 * request says so (the client tells such a hang from one that took the
	 * whole limit); one that ran out of the full limit counts towards it. */
	unsigned limit_ms = 0;
	if (!strcmp(end->status, "timeout") && (end->sig == SIGKILL || end->sig == SIGXCPU)) {
		if (r->limit_after && r->limit_hung >= r->limit_after)
			limit_ms = r->lim.timeout_ms;
		else if (r->limit_after && ++r->limit_hung == r->limit_after)
			r->lim.timeout_ms = r->limit_short;
	}
	int rc = end->out_to >= 0 && r->out_map ?
		 read_output(r, &r->out, (size_t)end->out_from, (size_t)end->out_to) :
		 read_capture(r, r->res_fd, &r->out, end->out_from, end->out_to, 0);
	rc |= read_capture(r, r->err_fd, &r->err, end->err_from, end->err_to, STDERR_TAIL_BYTES);
	if (rc == 0 && raw) {
		char head[96];
		int hl = snprintf(head, sizeof(head), "raw|%s|%d|%d|%d|%zu|%u|", end->status, end->sig, end->code,
				  end->stray, r->out.len, limit_ms);
		struct buf *h = &r->ans;
		h->len = 0;
		if (ccr_buf_add(r, h, head, (size_t)hl) < 0 || ccr_buf_add(r, h, r->out.p, r->out.len) < 0 ||
		    ccr_buf_add(r, h, r->err.p, r->err.len) < 0)
			return ccr_send_error(r, id, "out of memory building the answer of state %llu",
					      (unsigned long long)id);
		hash128(h->p, h->len, &ra, &rb);
		ra ^= RAW_TAG;   /* never equal to an answer body's key */
		if (seen_find(r, ra, rb, &first))
			return send_dup(r, id, first);
	}
	/* The answer body: everything but the state id, which dedup ignores. */
	struct buf *a = &r->ans;
	a->len = 0;
	rc |= ccr_buf_fmt(r, a, "\"status\":\"%s\",\"signal\":", end->status);
	rc |= end->sig >= 0 ? ccr_buf_fmt(r, a, "%d", end->sig) : ccr_buf_str(r, a, "null");
	rc |= ccr_buf_str(r, a, ",\"exit\":");
	rc |= end->code >= 0 ? ccr_buf_fmt(r, a, "%d", end->code) : ccr_buf_str(r, a, "null");
	rc |= ccr_buf_str(r, a, ",\"result\":");
	if (rc == 0 && json_compact(r, a, r->out.p, r->out.len) < 0) {
		rc |= ccr_buf_str(r, a, "null,\"output\":");
		size_t show = r->out.len < OUTPUT_SHOW_BYTES ? r->out.len : OUTPUT_SHOW_BYTES;
		rc |= buf_json_str(r, a, r->out.p, show);
	}
	rc |= ccr_buf_str(r, a, ",\"stderr\":");
	size_t from = rc == 0 ? stderr_tail(&r->err) : 0;
	rc |= buf_json_str(r, a, r->err.p + from, r->err.len - from);
	if (end->stray)
		rc |= ccr_buf_str(r, a, ",\"stray\":true");
	if (limit_ms)
		rc |= ccr_buf_fmt(r, a, ",\"limit_ms\":%u", limit_ms);
	if (rc == 0 && ccr_lazy_active())
		rc |= ccr_lazy_answer(r, a);
	if (rc != 0)
		return ccr_send_error(r, id, "out of memory building the answer of state %llu",
				      (unsigned long long)id);

	uint64_t ha, hb, ignore;
	hash128(a->p, a->len, &ha, &hb);
	int dup = seen_lookup(r, ha, hb, id, &first);
	if (raw)   /* this output's answer from now on: the first state that gave it */
		seen_lookup(r, ra, rb, dup ? first : id, &ignore);
	if (dup)
		return send_dup(r, id, first);
	/* Wrap the body: {"state": id, <body>, "dup_of": null}. */
	char head[48];
	int hl = snprintf(head, sizeof(head), "{\"state\":%llu,", (unsigned long long)id);
	if (ccr_buf_reserve(a, (size_t)hl + 16, &r->vm_stale) < 0)
		return -1;
	memmove(a->p + hl, a->p, a->len);
	memcpy(a->p, head, (size_t)hl);
	a->len += (size_t)hl;
	if (ccr_buf_str(r, a, ",\"dup_of\":null}") < 0)
		return -1;
	return ccr_send_answer(r);
}
