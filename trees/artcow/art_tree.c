/*
 * art_tree.c -- ART+CoW's copy of the shared tree operations (see art_nodes.c here)
 */
#include "../woart/art_tree.c"
