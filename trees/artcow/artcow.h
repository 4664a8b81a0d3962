/*
 * artcow.h -- ART+CoW, the adaptive radix tree with copy-on-write (section 3.6 of
 *             S. Lee, "Write-Optimal Radix Tree", master's thesis, UNIST, 2018)
 *
 * ART+CoW is the shared ART engine (trees/art_engine/art_nodes.h) with this
 * write policy: NODE4 and NODE16 are classic sorted nodes that are never
 * changed in place: any change copies the node, persists the copy and
 * swings the parent pointer.  NODE48 is changed in place as in WOART
 * (Algorithm 5), NODE256 as a WORT node.  Path-compression split and merge
 * are copy-on-write too, so headers are never rewritten in place and
 * recovery has nothing to repair.
 */
#ifndef ARTCOW_H
#define ARTCOW_H

#include "art_nodes.h"

extern const struct art_ops artcow_ops;

#endif /* ARTCOW_H */
