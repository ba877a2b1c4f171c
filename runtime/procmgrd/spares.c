/* Hot spares, every node's side: the slot table (which node runs which
 * ranks), the nodes lost for good, the nodes below that report to us, and
 * where a node whose parent is lost goes. Pure, like the rest of the
 * machine. The root's decisions on a lost node are in decide.c.
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

int pm_gen_kid_index(const struct pm_gen *g, int node)
{
	int i;

	for (i = 0; i < g->nkids; i++)
		if (g->kids[i].node == node)
			return i;
	return -1;
}

static int add_kid(struct pm_gen *g, int node)
{
	if (g->nkids == g->kids_cap) {
		int cap = g->kids_cap ? g->kids_cap * 2 : 4;
		struct pm_gen_child *k = realloc(g->kids, (size_t)cap * sizeof(*k));
		if (!k)
			return -1;
		g->kids = k;
		g->kids_cap = cap;
	}
	g->kids[g->nkids] = (struct pm_gen_child){ .node = node };
	return g->nkids++;
}

int pm_gen_spares_init(struct pm_gen *g)
{
	int i, n = g->cf.nnodes;

	for (i = 0; i < g->nchildren; i++)
		if (add_kid(g, g->child_first + i) < 0)
			return -1;
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
	free(g->kids);
	free(g->slot_node);
	free(g->node_slot);
	free(g->excluded);
	free(g->xlist);
	free(g->repl);
	g->kids = NULL;
	g->slot_node = g->node_slot = NULL;
	g->excluded = NULL;
	g->xlist = NULL;
	g->repl = NULL;
}

/* Whether node is in the subtree of a as the tree was made. */
static bool below(const struct pm_gen *g, int a, int node)
{
	while (node > a)
		node = pm_tree_parent(node, g->cf.fanout);
	return node == a;
}

/* The nodes this node's report of a phase must count, itself included:
 * its subtree as made (all of the step for a root that took over) less
 * the nodes lost. */
int pm_gen_expected(const struct pm_gen *g)
{
	int i, n;

	if (!pm_gen_spares(g))
		return g->subtree;
	if (g->root) {
		return g->cf.nnodes - g->nexcluded;
	}
	n = g->subtree;
	for (i = 0; i < g->nexcluded; i++)
		if (below(g, g->cf.node, g->xlist[i]))
			n--;
	return n;
}

uint32_t pm_gen_below(const struct pm_gen *g, enum pm_phase phase)
{
	uint32_t n = 0;
	int i;

	for (i = 0; i < g->nkids; i++) {
		const struct pm_gen_child *k = &g->kids[i];
		if (!k->up)
			continue;
		n += phase == PM_PHASE_STARTING ? k->ready :
		     phase == PM_PHASE_RUNNING ? k->done : k->stopped;
	}
	return n;
}

uint32_t pm_gen_running_below(const struct pm_gen *g, int beat)
{
	uint32_t n = 0;
	int i;

	for (i = 0; i < g->nkids; i++)
		if (g->kids[i].up)
			n += g->kids[i].running[beat ? 1 : 0];
	return n;
}

/* A node lost for good: not counted, not waited for, never taken back. */
void pm_gen_exclude(struct pm_gen *g, int node)
{
	int i;

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
	i = pm_gen_kid_index(g, node);
	if (i >= 0) {
		g->kids[i].up = false;
		g->kids[i].ready = g->kids[i].done = g->kids[i].stopped = 0;
		g->kids[i].running[0] = g->kids[i].running[1] = 0;
	}
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
	int i, n = 0;

	for (i = g->nactive; i < g->cf.nnodes; i++)
		n += !g->excluded[i] && g->node_slot[i] < 0;
	return n;
}

int pm_gen_adopt(struct pm_gen *g, int node)
{
	int i;

	if (!pm_gen_spares(g) || node <= g->cf.node || node >= g->cf.nnodes ||
	    pm_gen_excluded(g, node))
		return -1;
	i = pm_gen_kid_index(g, node);
	if (i >= 0)
		return g->kids[i].up ? -1 : i;
	return add_kid(g, node);
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

/* Nodes that should report to us directly and have not come: the tree's
 * children and, for a lost one, its children in turn. */
static void missing_from(struct pm_gen *g, int node, int *out, int *n, int max)
{
	int first, c, i, nc = pm_tree_children(node, g->cf.fanout, g->cf.nnodes, &first);

	for (c = first; c < first + nc && *n < max; c++) {
		if (c == g->cf.node)
			continue;
		if (pm_gen_excluded(g, c)) {
			missing_from(g, c, out, n, max);
			continue;
		}
		i = pm_gen_kid_index(g, c);
		if (i < 0 || !g->kids[i].up)
			out[(*n)++] = c;
	}
}

int pm_gen_missing(struct pm_gen *g, int *out, int max)
{
	int n = 0;

	missing_from(g, g->cf.node, out, &n, max);
	if (g->root && g->cf.node != 0)
		missing_from(g, 0, out, &n, max);
	return n;
}

/* A child whose procmgrd never joins (it was killed before it could
 * connect, or never started) would leave its parent waiting for its report
 * for ever: once the join deadline passed, it is lost like any node. */
void pm_gen_join_timer(struct pm_gen *g, unsigned after_ms)
{
	char why[128];
	int miss[64], i, n;

	/* A root that took over has the stop's deadline for that. */
	if (pm_gen_terminal(g) || (g->root && g->cf.node != 0))
		return;
	n = pm_gen_missing(g, miss, 64);
	snprintf(why, sizeof(why), "its procmgrd did not join the step within %.1f s",
		 after_ms / 1000.0);
	for (i = 0; i < n && !pm_gen_terminal(g); i++) {
		pm_gen_log(g, "child node %s: %s", pm_gen_node_name(g, miss[i]), why);
		pm_gen_lost(g, miss[i], why);
	}
	pm_gen_progress(g);
}

/* How many nodes are below a root that took over, as the tree was made:
 * enough to act once more than half the step is there. */
static int attached(const struct pm_gen *g)
{
	int i, n = 1;

	for (i = 0; i < g->nkids; i++)
		if (g->kids[i].up)
			n += pm_tree_subtree_size(g->kids[i].node, g->cf.fanout, g->cf.nnodes);
	return n;
}

bool pm_gen_majority(const struct pm_gen *g)
{
	return g->cf.nnodes <= 2 || 2 * attached(g) > g->cf.nnodes;
}
