/*
 * art_nodes.c -- ART+CoW's copy of the shared ART nodes
 *
 * WOART and ART+CoW share one engine (nodes, tree operations, recovery,
 * invariants), written once in trees/woart/.  The tree build compiles every
 * .c file of a tree's own folder, so this file, art_tree.c and art_check.c
 * pull the shared sources in rather than duplicating them.
 */
#include "../woart/art_nodes.c"
