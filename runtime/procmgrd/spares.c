/* Hot spares, every node's side: the slot table (which node runs which
 * ranks), the nodes lost for good and the replacements, and where a node
 * whose parent is lost goes. Pure, like the rest of the machine; below
 * gen.c, above gen_kids.c (the nodes below that report to us). The root's
 * decisions on a lost node are in decide.c, applied in gen_apply.c.
 *
 * The tree stays the one the node ids make; a lost node is spliced out: its
 * children go to its nearest live ancestor, and when the root itself is
 * lost, to the lowest of the root's children that is alive, which becomes
 * the root. Every edge goes to a lower id, so no cycle can form. */
#include "gen_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tree.h"

bool pm_gen_spares(const struct pm_gen *g)
{
	return g->cf.spares > 0;
}

int pm_gen_world(const struct pm_gen *g)
{
	return pm_gen_spares(g) ? g->nactive * g->cf.ntasks_local : g->cf.ntasks;
}

bool pm_gen_excluded(const struct pm_gen *g, int node)
{
	return g->excluded && node >= 0 && node < g->cf.nnodes && g->excluded[node];
}

int pm_gen_slot(const struct pm_gen *g, int node)
{
	if (!pm_gen_spares(g))
		return node;
	return node >= 0 && node < g->cf.nnodes ? g->node_slot[node] : -1;
}

int pm_gen_spares_init(struct pm_gen *g)
{
	int i, n = g->cf.nnodes;

	if (!pm_gen_spares(g)) {
		/* A sweep goes on without a lost node (gen_sweep.c): out for good. */
		if (g->cf.sweep)
			g->excluded = calloc((size_t)n, sizeof(bool));
		return g->cf.sweep && !g->excluded ? -1 : 0;
	}
	if (g->cf.spares >= n)
		return -1;
	g->nactive = n - g->cf.spares;
	g->slot_node = calloc((size_t)g->nactive, sizeof(int));
	g->node_slot = calloc((size_t)n, sizeof(int));
	g->excluded = calloc((size_t)n, sizeof(bool));
	/* The lists of the lost grow as nodes are lost (a few, by the spares'
	 * count): at 100,000 nodes a list sized to the step would cost every
	 * procmgrd megabytes. The per-node tables are 5 bytes a node. */
	if (!g->slot_node || !g->node_slot || !g->excluded)
		return -1;
	for (i = 0; i < n; i++)
		g->node_slot[i] = i < g->nactive ? i : -1;
	for (i = 0; i < g->nactive; i++)
		g->slot_node[i] = i;
	return 0;
}

void pm_gen_spares_free(struct pm_gen *g)
{
	free(g->slot_node);
	free(g->node_slot);
	free(g->excluded);
	free(g->xlist);
	free(g->repl);
	g->slot_node = g->node_slot = NULL;
	g->excluded = NULL;
	g->xlist = NULL;
	g->repl = NULL;
}

/* A node lost for good: not counted, not waited for, never taken back. */
void pm_gen_exclude(struct pm_gen *g, int node)
{
	if (!g->excluded || node < 0 || node >= g->cf.nnodes || g->excluded[node])
		return;
	if (g->nexcluded == g->xcap) {
		int cap = g->xcap ? g->xcap * 2 : 8;
		int *x = realloc(g->xlist, (size_t)cap * sizeof(*x));
		if (!x)
			return; /* not counted out: the stop deadline finds it */
		g->xlist = x;
		g->xcap = cap;
	}
	g->excluded[node] = true;
	g->xlist[g->nexcluded++] = node;
	pm_gen_kid_forget(g, node);
}

void pm_gen_apply_repl(struct pm_gen *g, const struct pm_repl *r)
{
	int i;

	for (i = 0; i < g->nrepl; i++)
		if (g->repl[i].lost == r->lost)
			return; /* said again to a node that came late */
	if (g->nrepl == g->repl_cap) {
		int cap = g->repl_cap ? g->repl_cap * 2 : 4;
		struct pm_repl *x = realloc(g->repl, (size_t)cap * sizeof(*x));
		if (!x)
			return;
		g->repl = x;
		g->repl_cap = cap;
	}
	g->repl[g->nrepl++] = *r;
	pm_gen_exclude(g, r->lost);
	if (r->lost >= 0 && r->lost < g->cf.nnodes)
		g->node_slot[r->lost] = -1;
	if (r->slot >= 0 && r->slot < g->nactive && r->spare >= 0 && r->spare < g->cf.nnodes) {
		g->slot_node[r->slot] = r->spare;
		g->node_slot[r->spare] = r->slot;
	}
}

void pm_gen_repl_msg(const struct pm_repl *r, struct pm_msg *m)
{
	pm_msg_init(m, PM_MSG_REPLACE);
	m->node = r->lost;
	m->rank = r->slot;
	m->status = r->spare;
	pm_msg_set_text(m, r->why);
}

void pm_gen_repl_from_msg(const struct pm_msg *m, struct pm_repl *r)
{
	r->lost = m->node;
	r->slot = m->rank;
	r->spare = m->status;
	snprintf(r->why, sizeof(r->why), "%.*s", PM_REPL_WHY - 1, m->text);
}

/* The lowest spare that is neither in use nor lost; -1 if none is left. */
int pm_gen_free_spare(const struct pm_gen *g)
{
	int i;

	for (i = g->nactive; i < g->cf.nnodes; i++)
		if (!g->excluded[i] && g->node_slot[i] < 0)
			return i;
	return -1;
}

int pm_gen_spares_left(const struct pm_gen *g)
{
	return pm_gen_spares_left_but(g, -1, -1);
}

/* The same, a and b not counted: what is left once a replacement that
 * loses a and takes b is applied (decide.c words it before). */
int pm_gen_spares_left_but(const struct pm_gen *g, int a, int b)
{
	int i, n = 0;

	for (i = g->nactive; i < g->cf.nnodes; i++)
		n += !g->excluded[i] && g->node_slot[i] < 0 && i != a && i != b;
	return n;
}

int pm_gen_parent_candidates(const struct pm_gen *g, int *out, int max)
{
	int n = 0, a = g->cf.node, i, k = g->cf.fanout;

	/* Its ancestors, nearest first, then the root's children in order:
	 * the lowest of them alive is the root if node 0 is lost. */
	while ((a = pm_tree_parent(a, k)) >= 0 && n < max)
		if (!pm_gen_excluded(g, a))
			out[n++] = a;
	for (i = 1; i <= k && i < g->cf.node && n < max; i++) {
		int j, dup = 0;
		for (j = 0; j < n; j++)
			dup |= out[j] == i;
		if (!dup && !pm_gen_excluded(g, i))
			out[n++] = i;
	}
	return n;
}
