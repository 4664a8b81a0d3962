/*
 * rangelock.h -- the lock-free skip-list range lock of chapters 3-4 of
 *                T.-D. Nguyen, "Concurrent Range Locking", bachelor's thesis,
 *                TU Munich, 2024
 *
 * A set of held, pairwise disjoint, inclusive ranges [start, end] of
 * uint64_t kept in a lock-free skip list (Herlihy & Shavit's
 * LockFreeSkipList with range comparisons): rl_trylock inserts a range if
 * no held range overlaps it, rl_release removes exactly that range.  Both
 * are lock-free and linearizable; any thread may release any held range.
 *
 * The structure lives in DRAM and is not persistent.  Nodes are never
 * freed while the lock exists (rl_destroy frees them all): no operation
 * can touch freed memory, at the price of memory that grows with the
 * number of successful rl_trylock calls.
 */
#ifndef RANGELOCK_H
#define RANGELOCK_H

#include <stddef.h>
#include <stdint.h>

#define RL_MAX_LEVEL 9   /* levels 0..9: the height of 10 the thesis measures best (section 5.3.2) */

struct rangelock;

/* rl_create -- an empty lock; SEED seeds every thread's level generator. NULL if out of memory. */
struct rangelock *rl_create(uint64_t seed);

/* rl_destroy -- free the lock and every node it ever linked (no operation may be running) */
void rl_destroy(struct rangelock *rl);

/*
 * rl_trylock -- hold [START, END] (START <= END) if no held range overlaps
 * it.  Returns 1 (now held), 0 (some held range overlaps; nothing changed)
 * or -1 (START > END, or out of memory).
 */
int rl_trylock(struct rangelock *rl, uint64_t start, uint64_t end);

/*
 * rl_release -- release exactly [START, END].  Returns 1 (it was held and
 * is now free) or 0 (it is not held: nothing changed).
 */
int rl_release(struct rangelock *rl, uint64_t start, uint64_t end);

/* rl_foreach -- FN for every held range in increasing start; quiescent callers only. Stops on non-zero. */
void rl_foreach(struct rangelock *rl, int (*fn)(void *ctx, uint64_t start, uint64_t end), void *ctx);

/*
 * rl_check -- FN once per broken invariant (quiescent callers only):
 * every level is sorted by start from head to tail, the bottom level holds
 * no marked node and its ranges are disjoint, every node at a level above
 * 0 is linked at level 0.  Returns how many.
 */
size_t rl_check(struct rangelock *rl, void (*fn)(void *ctx, const char *text), void *ctx);

#endif /* RANGELOCK_H */
