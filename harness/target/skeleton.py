"""The adapter skeleton `crashcheck init` writes: every callback of trees/common/cc_tree.h, in C or C++.

Owns the text of the skeleton. Set-up that has a right answer for most structures is written out
(create and open hand over the pool's root area, recover repairs nothing, allocated is the pool
allocator's record); everything only the structure's author can write (the operations, dump,
check, reachable) is a stub that stops the run with "fill in ..." on stderr, so a fuzz of the
untouched skeleton fails with that line instead of passing. Never writes files (harness/cli/cmd_init.py).
"""
from __future__ import annotations

LANGS = ("c", "c++")

_HEAD = """\
{c1} {file} -- {name} behind crashcheck's tree adapter (trees/common/cc_tree.h), written by
{c} `crashcheck init {name} --lang {lang}`.  Each function that calls fill_in() stops the run with
{c} "fill in ..." until you replace its body with calls into your structure (docs/trees.md
{c} "A user's structure", docs/walkthrough.md).  Then, from this folder:
{c}   crashcheck build {name} YOUR_SOURCES_AND_HEADERS... --adapter {file} --pm-malloc
{c}   crashcheck fuzz {name} --examples 16
{c} (--pm-malloc sends the structure's malloc/new to the PM pool; leave it out if the structure
{c} allocates with pm_alloc() of pm_alloc.h.)  Keys are 8 bytes, big-endian (cc_key_u64 turns one
{c} into a number); values are 8 bytes.  Seeded bugs go into bugs.json beside this file, findings
{c} known by design into expect.json (docs/trees.md "Bug catalogs").{c2}
"""

_C = """\
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc_tree.h"
#include "pm_alloc.h"
/* #include "your_structure.h" */

/* fill_in -- a part of this adapter not written yet: say which, and stop the run */
static void fill_in(const char *what)
{
	fprintf(stderr, "@NAME@ adapter: fill in %s in %s before fuzzing\\n", what, __FILE__);
	abort();
}

/* create -- the pool is formatted and zeroed: make an empty structure and return its handle.
 * pm_root() is PM_ROOT_SIZE bytes of PM for the structure's root pointer, zero in a fresh pool. */
static void *a_create(void *pool, size_t size)
{
	(void)pool, (void)size;
	return pm_root();
}

/* open -- attach to a pool image (after a crash too) without repairing anything */
static void *a_open(void *pool, size_t size)
{
	(void)pool, (void)size;
	return pm_root();
}

/* recover -- the structure's own crash recovery: 0, or non-zero if the image is beyond repair */
static int a_recover(void *t)
{
	(void)t;
	return 0;
}

/* the operations: CC_OK, CC_EXISTS (insert of a present key), CC_NOTFOUND, CC_NOSPACE.  update
 * and remove are optional: a structure without one sets it to NULL in the table below. */
static int a_insert(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	(void)t, (void)key, (void)klen, (void)val, (void)vlen;
	fill_in("a_insert");
	return CC_ERROR;
}

static int a_update(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	(void)t, (void)key, (void)klen, (void)val, (void)vlen;
	fill_in("a_update (or set .update to NULL)");
	return CC_ERROR;
}

static int a_remove(void *t, const uint8_t *key, size_t klen)
{
	(void)t, (void)key, (void)klen;
	fill_in("a_remove (or set .remove to NULL)");
	return CC_ERROR;
}

/* lookup -- on CC_OK the value into VAL and its length into *VLEN */
static int a_lookup(void *t, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen)
{
	(void)t, (void)key, (void)klen, (void)val, (void)vlen;
	fill_in("a_lookup");
	return CC_NOTFOUND;
}

/* dump -- every pair, in increasing key order: fn(ctx, key, 8, value, 8) each */
static void a_dump(void *t, cc_kv_fn fn, void *ctx)
{
	(void)t, (void)fn, (void)ctx;
	fill_in("a_dump");
}

/* check -- the structure's invariants, after recovery and after every operation: one
 * CC_VIOLATIONF(fn, ctx, "node %p has %d children", ...) per broken rule (it adds the check's
 * file:line, which names the rule); returns how many.  It must not write PM. */
static size_t a_check(void *t, cc_violation_fn fn, void *ctx)
{
	(void)t, (void)fn, (void)ctx;
	fill_in("a_check (return 0 if the structure has no rules to check)");
	return 1;
}

/* reachable -- every PM object the structure reaches from its root: fn(ctx, object, size) each */
static void a_reachable(void *t, cc_obj_fn fn, void *ctx)
{
	(void)t, (void)fn, (void)ctx;
	fill_in("a_reachable");
}

/* allocated -- every PM object in use: the pool allocator's record (with --pm-malloc or pm_alloc) */
static void a_allocated(void *t, cc_obj_fn fn, void *ctx)
{
	(void)t;
	pm_allocated(fn, ctx);
}

const struct cc_adapter cc_adapter = {
	.name = "@NAME@",
	.key_kind = CC_KEYS_U64,
	.value_size = 8,
	.create = a_create,
	.open = a_open,
	.recover = a_recover,
	.insert = a_insert,
	.update = a_update,
	.remove = a_remove,
	.lookup = a_lookup,
	.scan = NULL,          /* optional: up to COUNT pairs with key >= KEY, in key order */
	.dump = a_dump,
	.check = a_check,
	.reachable = a_reachable,
	.allocated = a_allocated,
	/* .persistency = "eadr",    if the structure is built for eADR (no flushes) */
};
"""

_CXX = """\
#include "cc_tree.h"          // first: its extern "C" gives cc_adapter below C linkage

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "pm_alloc.h"
// #include "your_structure.hpp"

namespace {

// fill_in -- a part of this adapter not written yet: say which, and stop the run
[[noreturn]] void fill_in(const char *what)
{
	std::fprintf(stderr, "@NAME@ adapter: fill in %s in %s before fuzzing\\n", what, __FILE__);
	std::abort();
}

// create -- the pool is formatted and zeroed: make an empty structure and return its handle.
// pm_root() is PM_ROOT_SIZE bytes of PM for the structure's root pointer, zero in a fresh pool.
// (This file's own `new` stays in DRAM under --pm-malloc: a handle may live here.)
void *a_create(void *, size_t) { return pm_root(); }

// open -- attach to a pool image (after a crash too) without repairing anything
void *a_open(void *, size_t) { return pm_root(); }

// recover -- the structure's own crash recovery: 0, or non-zero if the image is beyond repair
int a_recover(void *) { return 0; }

// the operations: CC_OK, CC_EXISTS (insert of a present key), CC_NOTFOUND, CC_NOSPACE.  update
// and remove are optional: a structure without one leaves it out of the table below.
int a_insert(void *, const std::uint8_t *, size_t, const std::uint8_t *, size_t) { fill_in("a_insert"); }
int a_update(void *, const std::uint8_t *, size_t, const std::uint8_t *, size_t)
{
	fill_in("a_update (or leave .update out)");
}
int a_remove(void *, const std::uint8_t *, size_t) { fill_in("a_remove (or leave .remove out)"); }

// lookup -- on CC_OK the value into VAL and its length into *VLEN
int a_lookup(void *, const std::uint8_t *, size_t, std::uint8_t *, size_t *) { fill_in("a_lookup"); }

// dump -- every pair, in increasing key order: fn(ctx, key, 8, value, 8) each
void a_dump(void *, cc_kv_fn, void *) { fill_in("a_dump"); }

// check -- the structure's invariants, after recovery and after every operation: one
// CC_VIOLATIONF(fn, ctx, "node %p has %d children", ...) per broken rule (it adds the check's
// file:line, which names the rule; a structure's check taking any callable is handed
// cc_violations{fn, ctx}); returns how many.  It must not write PM.
size_t a_check(void *, cc_violation_fn, void *)
{
	fill_in("a_check (return 0 if the structure has no rules to check)");
}

// reachable -- every PM object the structure reaches from its root: fn(ctx, object, size) each
void a_reachable(void *, cc_obj_fn, void *) { fill_in("a_reachable"); }

// allocated -- every PM object in use: the pool allocator's record (with --pm-malloc or pm_alloc)
void a_allocated(void *, cc_obj_fn fn, void *ctx) { pm_allocated(fn, ctx); }

}  // namespace

// members named in declaration order (C++20 designated initializers); scan is optional
const struct cc_adapter cc_adapter = {
	.name = "@NAME@",
	.key_kind = CC_KEYS_U64,
	.value_size = 8,
	.create = a_create,
	.open = a_open,
	.recover = a_recover,
	.insert = a_insert,
	.update = a_update,
	.remove = a_remove,
	.lookup = a_lookup,
	.dump = a_dump,
	.check = a_check,
	.reachable = a_reachable,
	.allocated = a_allocated,
	// .persistency = "eadr",    if the structure is built for eADR (no flushes)
};
"""


def adapter_file(lang: str) -> str:
    """The skeleton's file name for LANG."""
    return "adapter.c" if lang == "c" else "adapter.cpp"


def adapter_text(name: str, lang: str) -> str:
    """The adapter skeleton of structure NAME in LANG ("c" or "c++")."""
    file = adapter_file(lang)
    if lang == "c":
        head = _HEAD.format(c1="/*", c=" *", c2="\n */", file=file, name=name, lang=lang)
        body = _C
    else:
        head = _HEAD.format(c1="//", c="//", c2="", file=file, name=name, lang=lang)
        body = _CXX
    return head + body.replace("@NAME@", name)


__all__ = ["LANGS", "adapter_file", "adapter_text"]
