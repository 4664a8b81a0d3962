/*
 * check.h -- recover a pool image and judge it: the driver's check JSON
 *
 * Shared by `driver check` and the fork server (`driver serve`), so both
 * print exactly the same line for the same image.
 */
#ifndef CC_CHECK_H
#define CC_CHECK_H

#include <stddef.h>
#include <stdio.h>
#include "cc_tree.h"

/*
 * cc_check_image -- attach to the image at POOL (SIZE bytes), open and
 * recover it with adapter A, then write ONE line of JSON to OUT:
 *   {"recovered": bool, "recover_status": int, "dump": [[key hex, value hex], ...],
 *    "violations": [text, ...], "allocated": [[offset, size], ...],
 *    "unreachable": [[offset, size], ...], "followup": [result line, ...]}
 * plus "error": text when the image could not be opened or FOLLOWUP (a
 * history text, may be NULL or empty) does not parse.  Returns 0.
 */
int cc_check_image(const struct cc_adapter *a, void *pool, size_t size,
		   const char *followup, FILE *out);

#endif /* CC_CHECK_H */
