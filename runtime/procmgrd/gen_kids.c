/* The nodes below this one and what they reported: the children counting
 * every node's reports rest on (pm_gen_progress in gen_report.c). The
 * bottom of the generation machine: it reads the state and calls nothing
 * of the machine's (the lost nodes' table is spares.c's, read here as
 * state, so that spares.c may forget a lost child here without a circle). */
#include "gen_int.h"

#include <stdlib.h>

#include "common/tree.h"

static bool with_spares(const struct pm_gen *g)
{
	return g->cf.spares > 0;
}

static bool lost(const struct pm_gen *g, int node)
{
	return g->excluded && node >= 0 && node < g->cf.nnodes && g->excluded[node];
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

int pm_gen_kids_init(struct pm_gen *g)
{
	int i;

	for (i = 0; i < g->nchildren; i++)
		if (add_kid(g, g->child_first + i) < 0)
			return -1;
	return 0;
}

void pm_gen_kids_free(struct pm_gen *g)
{
	free(g->kids);
	g->kids = NULL;
	g->nkids = g->kids_cap = 0;
}

/* A child lost for good: what it reported is not counted. */
void pm_gen_kid_forget(struct pm_gen *g, int node)
{
	int i = pm_gen_kid_index(g, node);

	if (i < 0)
		return;
	g->kids[i].up = false;
	g->kids[i].ready = g->kids[i].done = g->kids[i].stopped = 0;
	g->kids[i].running[0] = g->kids[i].running[1] = 0;
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

	if (!with_spares(g))
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

int pm_gen_adopt(struct pm_gen *g, int node)
{
	int i;

	if (!with_spares(g) || node <= g->cf.node || node >= g->cf.nnodes || lost(g, node))
		return -1;
	i = pm_gen_kid_index(g, node);
	if (i >= 0)
		return g->kids[i].up ? -1 : i;
	return add_kid(g, node);
}

/* Nodes that should report to us directly and have not come: the tree's
 * children and, for a lost one, its children in turn. */
static void missing_from(struct pm_gen *g, int node, int *out, int *n, int max)
{
	int first, c, i, nc = pm_tree_children(node, g->cf.fanout, g->cf.nnodes, &first);

	for (c = first; c < first + nc && *n < max; c++) {
		if (c == g->cf.node)
			continue;
		if (lost(g, c)) {
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
