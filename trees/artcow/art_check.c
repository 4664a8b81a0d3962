/*
 * art_check.c -- ART+CoW's copy of the shared invariant checker (see art_nodes.c here)
 */
#include "../woart/art_check.c"
