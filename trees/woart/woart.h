/*
 * woart.h -- WOART, the Write Optimal Adaptive Radix Tree (section 3.5 of
 *            S. Lee, "Write-Optimal Radix Tree", master's thesis, UNIST, 2018)
 *
 * WOART is the shared ART engine (trees/art_engine/art_nodes.h) with this
 * write policy: NODE4 commits with one 8-byte store of its partial keys +
 * slot array (Algorithm 3), NODE16 with its 16-bit bitmap (Algorithm 4),
 * NODE48 with its child index byte (Algorithm 5), NODE256 with the pointer
 * itself; a full or underfull node is replaced by copy and parent-pointer
 * swing; path compression keeps the node depth in the 8-byte header,
 * changes a header with one store and repairs a header left stale by a
 * crash (Algorithm 2).
 */
#ifndef WOART_H
#define WOART_H

#include "art_nodes.h"

extern const struct art_ops woart_ops;

#endif /* WOART_H */
