#include "tree.h"

int pm_tree_parent(int node, int k)
{
	return node <= 0 ? -1 : (node - 1) / k;
}

int pm_tree_children(int node, int k, int n, int *first)
{
	long f = (long)node * k + 1;
	long last = f + k - 1;

	*first = (int)f;
	if (f >= n)
		return 0;
	if (last >= n)
		last = n - 1;
	return (int)(last - f + 1);
}

int pm_tree_subtree_size(int node, int k, int n)
{
	/* Level by level: the subtree's nodes at each depth are contiguous. */
	long lo = node, hi = node, total = 0;

	while (lo < n) {
		total += (hi < n ? hi : n - 1) - lo + 1;
		lo = lo * k + 1;
		hi = hi * k + k;
	}
	return (int)total;
}

int pm_tree_depth(int node, int k)
{
	int d = 0;
	while (node > 0) {
		node = (node - 1) / k;
		d++;
	}
	return d;
}
