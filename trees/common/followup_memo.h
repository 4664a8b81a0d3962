/*
 * followup_memo.h -- the follow-up text of a check parsed once for all the states that run it
 *
 * `driver serve` makes the memo before the runner starts; the check then gets the parsed
 * operations of a text equal to the last one parsed without parsing it again.  Without the memo
 * (driver check) every text is parsed.
 */
#ifndef CC_FOLLOWUP_MEMO_H
#define CC_FOLLOWUP_MEMO_H

#include <stddef.h>
#include "cc_tree.h"
#include "history.h"

/* cc_followup_memo_init -- make the memo (a shared mapping: it outlives every check) */
void cc_followup_memo_init(void);

/*
 * cc_followup_parse -- TEXT (NUL-terminated) parsed for adapter A into H, as
 * cc_history_parse_for does (0, or -1 with the reason in ERR).  *BORROWED is
 * set when H's operations are the memo's: read only, and not to be freed.
 */
int cc_followup_parse(const char *text, const struct cc_adapter *a, struct cc_history *h,
		      int *borrowed, char *err, size_t errlen);

#endif /* CC_FOLLOWUP_MEMO_H */
