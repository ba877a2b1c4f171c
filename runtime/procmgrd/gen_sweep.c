/* The end of a sweep step, decided by the root's sweep (sweep_run.c) rather
 * than by the restart policy: FINISH, or ABORT with the sweep's code. */
#include "gen_int.h"

#include <stdio.h>

#include "common/text.h"
#include "common/tree.h"

void pm_gen_sweep_end(struct pm_gen *g, int code, const char *text)
{
	char esc[PM_WIRE_TEXT_MAX * 2], f[sizeof(esc) + 64];
	struct pm_msg m;

	if (pm_gen_terminal(g))
		return;
	pm_json_escape(text ? text : "", esc, sizeof(esc));
	snprintf(f, sizeof(f), code ? "\"gen\":%u,\"exit_code\":%d,\"message\":\"%s\"" :
		 "\"gen\":%u", g->gen, code, esc);
	g->cf.ops->event(g->cf.ctx, code ? "give_up" : "finish", f);
	pm_msg_init(&m, code ? PM_MSG_ABORT : PM_MSG_FINISH);
	m.gen = g->gen;
	m.status = code;
	m.rank = -1;
	m.node = g->cf.node;
	/* srun says "task N: Exited with exit code 1" for every task that
	 * does, one line per node: only task 0, whose supervisor printed the
	 * summary, ends with the sweep's code (the others, blamed for nothing,
	 * end 0), so srun still exits non-zero with one line. A root that took
	 * over (task 0 went with node 0): every task, as before. */
	if (code && g->cf.node == 0) {
		m.rank = 0;
		m.count = PM_FLAG_BLAME;
	}
	if (text)
		pm_msg_set_text(&m, text);
	pm_gen_end(g, &m);
}

/* Once per node: a loss said again (by its parent and by its child, or
 * after its subtree's) is the sweep's to recognise (its op answers 0). */
static void lost_one(struct pm_gen *g, int node, const char *why)
{
	char esc[512], f[sizeof(esc) + 160];

	pm_gen_exclude(g, node);
	if (!g->cf.ops->sweep_node_lost(g->cf.ctx, node, why))
		return;
	pm_json_escape(why, esc, sizeof(esc));
	snprintf(f, sizeof(f), "\"gen\":%u,\"node\":\"%s\",\"reason\":\"%s\",\"sweep\":\"requeue\"",
		 g->gen, pm_gen_node_name(g, node), esc);
	g->cf.ops->event(g->cf.ctx, "node_lost", f);
	if (g->cf.ops->node_lost)
		g->cf.ops->node_lost(g->cf.ctx, node);
}

bool pm_gen_sweep_lost(struct pm_gen *g, int node, const char *why)
{
	char sub[256];
	int d, a;

	if (g->phase != PM_PHASE_RUNNING || !g->cf.ops->sweep_node_lost || node == g->cf.node ||
	    node <= 0 || node >= g->cf.nnodes)
		return false;
	lost_one(g, node, why);
	/* With spares its subtree finds another parent (attach.c). */
	if (pm_gen_spares(g))
		return true;
	/* Its subtree ends its part when it loses its parent (no spares:
	 * nobody adopts it): its trials are as good as gone. */
	snprintf(sub, sizeof(sub), "below lost node %s in the tree", pm_gen_node_name(g, node));
	for (d = node + 1; d < g->cf.nnodes; d++) {
		for (a = d; a > node; a = pm_tree_parent(a, g->cf.fanout))
			;
		if (a == node)
			lost_one(g, d, sub);
	}
	return true;
}
