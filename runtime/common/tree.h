/* The k-ary control tree over a step's nodes: node 0 is the root, node i's
 * parent is (i-1)/k. Pure arithmetic, O(1) per question. */
#ifndef PM_TREE_H
#define PM_TREE_H

/* -1 for the root. */
int pm_tree_parent(int node, int k);
/* First child and number of children of node in a tree of n nodes. */
int pm_tree_children(int node, int k, int n, int *first);
/* Nodes in the subtree rooted at node, node included. */
int pm_tree_subtree_size(int node, int k, int n);
/* Hops from node to the root. */
int pm_tree_depth(int node, int k);

#endif
