/*
 * followup_memo.c -- a check's follow-up text parsed once per crash point, not once per state
 * (see followup_memo.h)
 *
 * Every state of a crash point runs the same follow-up (the continuation aimed at that crash), and
 * parsing its fifty-odd lines was a tenth of a continuation check's CPU (bench/README.md, issue
 * 51).  The reused check process puts its private memory back after every check, so a copy
 * kept there would be forgotten: the memo is a shared mapping made before the runner starts,
 * which the snapshot leaves alone (it copies private mappings only) and forked checks inherit.
 * It is read-only except while being filled, so a stray write of the structure under test
 * faults (a crash of that check) instead of changing the follow-up of later states; and it is
 * marked valid only once filled, so a check that dies while filling it leaves it empty.
 */
#include "crashcheck_own.h" /* first: this file is crashcheck's own code (rt_fault.c) */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include "followup_memo.h"

#define MEMO_BYTES ((size_t)256 << 10)   /* a continuation of 100 keys needs about 40 KiB */

struct memo {
	int valid;
	const struct cc_adapter *a;   /* parsed for this adapter */
	size_t tlen;                  /* the text's length; the text follows the ops */
	size_t n;                     /* ops */
	unsigned nthreads;
	struct cc_op ops[];
};

static struct memo *memo;   /* NULL: no memo (driver check, run) */

/* cc_followup_memo_init -- make the memo; without it every text is parsed */
void cc_followup_memo_init(void)
{
	void *p = mmap(NULL, MEMO_BYTES, PROT_READ, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	memo = p == MAP_FAILED ? NULL : p;
}

/* fill -- copy the parsed H and TEXT (TLEN bytes) into the memo when they fit (internal) */
static void fill(const struct cc_adapter *a, const struct cc_history *h, const char *text, size_t tlen)
{
	size_t ops = h->n * sizeof(struct cc_op);
	if (sizeof(struct memo) + ops + tlen > MEMO_BYTES)
		return;
	if (mprotect(memo, MEMO_BYTES, PROT_READ | PROT_WRITE))
		return;
	memo->valid = 0;
	memo->a = a;
	memo->tlen = tlen;
	memo->n = h->n;
	memo->nthreads = h->nthreads;
	memcpy(memo->ops, h->ops, ops);
	memcpy((char *)memo->ops + ops, text, tlen);
	memo->valid = 1;
	mprotect(memo, MEMO_BYTES, PROT_READ);
}

/* cc_followup_parse -- TEXT parsed for adapter A into H */
int cc_followup_parse(const char *text, const struct cc_adapter *a, struct cc_history *h,
		      int *borrowed, char *err, size_t errlen)
{
	*borrowed = 0;
	size_t tlen = memo ? strlen(text) : 0;
	if (memo && memo->valid && memo->a == a && memo->tlen == tlen &&
	    !memcmp((const char *)memo->ops + memo->n * sizeof(struct cc_op), text, tlen)) {
		h->ops = memo->ops;   /* read only: cc_run_op takes a const op */
		h->n = memo->n;
		h->nthreads = memo->nthreads;
		*borrowed = 1;
		return 0;
	}
	if (cc_history_parse_for(text, a, h, err, errlen))
		return -1;
	if (memo)
		fill(a, h, text, tlen);
	return 0;
}
