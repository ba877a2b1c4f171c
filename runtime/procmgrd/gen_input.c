/* The generation machine's inputs: this node's checks, its rank
 * supervisors, its children and parent in the tree, its timers, and a
 * parent or root that changed (spares). Each input moves the machine and
 * ends in pm_gen_progress (gen_report.c). The top layer: it calls the
 * reports, the root's gen_apply.c and the primitives below. */
#include "gen_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tree.h"

/* ---- inputs ---- */

void pm_gen_local_ready(struct pm_gen *g)
{
	g->local_ready = true;
	pm_gen_progress(g);
}

void pm_gen_health_failed(struct pm_gen *g, const char *why)
{
	pm_gen_fail_health(g, why);
	pm_gen_progress(g);
}

void pm_gen_checks_done(struct pm_gen *g, const char *why)
{
	if (g->checks != PM_CHECKS_RUNNING)
		return;
	g->checks = PM_CHECKS_DONE;
	if (why)
		pm_gen_fail_health(g, why);
	pm_gen_progress(g);
}

int pm_gen_rank_hello(struct pm_gen *g, int lrank, int grank)
{
	struct pm_gen_rank *r;

	if (lrank < 0 || lrank >= g->cf.ntasks_local || g->ranks[lrank].st != PM_RANK_ABSENT)
		return -1;
	r = &g->ranks[lrank];
	r->grank = pm_gen_spares(g) ? (pm_gen_slot(g, g->cf.node) < 0 ? -1 :
			pm_gen_slot(g, g->cf.node) * g->cf.ntasks_local + lrank) : grank;
	r->st = PM_RANK_IDLE;
	pm_gen_said_hello(g, lrank);
	if (pm_gen_terminal(g)) {
		g->cf.ops->send_rank(g->cf.ctx, lrank, &g->end_msg);
	} else if (g->phase == PM_PHASE_RUNNING && !g->cf.sweep) {
		/* A sweep's slots get their trials from sweep_node.c. */
		pm_gen_start_rank(g, lrank);
	}
	return 0;
}

static void rank_exit(struct pm_gen *g, int lrank, const struct pm_msg *m)
{
	struct pm_gen_rank *r = &g->ranks[lrank];
	struct pm_msg out;

	if (m->gen != g->gen || r->st != PM_RANK_RUNNING)
		return;
	/* Its end answers a STOP too: a supervisor that judged its rank hung,
	 * or whose rank ended as the STOP came, says EXIT, not STOPPED. */
	r->stop_pending = false;
	if (m->status == 0 && !(m->count & PM_FLAG_HUNG)) {
		r->st = PM_RANK_DONE;
		return;
	}
	r->st = PM_RANK_FAILED;
	out = *m;
	out.type = PM_MSG_FAIL;
	out.rank = r->grank;
	out.node = g->cf.node;
	pm_gen_fail(g, &out);
}

int pm_gen_rank_msg(struct pm_gen *g, int lrank, const struct pm_msg *m)
{
	struct pm_gen_rank *r;

	if (lrank < 0 || lrank >= g->cf.ntasks_local)
		return -1;
	r = &g->ranks[lrank];
	switch (m->type) {
	case PM_MSG_RANK_EXIT:
		if (m->count & PM_FLAG_CANCEL) {
			char why[128];
			const char *sig = m->status > 0 ? sigabbrev_np(m->status) : NULL;
			snprintf(why, sizeof(why), "rank %d got SIG%s from Slurm", r->grank,
				 sig ? sig : "TERM");
			pm_gen_cancel(g, why);
			return 0;
		}
		rank_exit(g, lrank, m);
		break;
	case PM_MSG_RANK_RUN:
		if (m->gen != g->gen || r->st == PM_RANK_ABSENT || r->st == PM_RANK_GONE)
			return 0;
		if (m->count & PM_FLAG_BEAT)
			r->beat_seen = true;
		else
			r->run_seen = true;
		break;
	case PM_MSG_RANK_STOPPED:
		if (m->gen != g->gen)
			return 0;
		r->stop_pending = false;
		if (r->st == PM_RANK_RUNNING)
			r->st = PM_RANK_IDLE;
		break;
	default:
		return -1;
	}
	pm_gen_progress(g);
	return 0;
}

void pm_gen_rank_gone(struct pm_gen *g, int lrank, const char *why)
{
	struct pm_gen_rank *r;
	struct pm_msg m;

	if (lrank < 0 || lrank >= g->cf.ntasks_local || !pm_gen_rank_connected(&g->ranks[lrank]))
		return;
	r = &g->ranks[lrank];
	r->st = PM_RANK_GONE;
	r->stop_pending = false;
	if (!pm_gen_terminal(g) && pm_gen_spares(g)) {
		char text[PM_REPL_WHY];
		/* A rank that cannot be run here again: the node is lost. */
		snprintf(text, sizeof(text), "the supervisor of its local rank %d went away%s%.100s",
			 lrank, why ? ": " : "", why ? why : "");
		pm_gen_log(g, "%s", text);
		pm_gen_lost(g, g->cf.node, text);
	} else if (!pm_gen_terminal(g)) {
		pm_gen_log(g, "supervisor of rank %d disconnected%s%s", r->grank,
			   why ? ": " : "", why ? why : "");
		pm_msg_init(&m, PM_MSG_FAIL);
		m.gen = g->gen;
		m.rank = r->grank;
		m.node = g->cf.node;
		m.count = PM_FLAG_LOST;
		if (why)
			pm_msg_set_text(&m, why);
		pm_gen_fail(g, &m);
	}
	pm_gen_progress(g);
}

void pm_gen_child_joined(struct pm_gen *g, int node)
{
	struct pm_msg m;

	/* It may have missed what happened before it joined. */
	for (int i = 0; i < g->nrepl; i++) {
		pm_gen_repl_msg(&g->repl[i], &m);
		g->cf.ops->send_child(g->cf.ctx, node, &m);
	}
	{
		int i = pm_gen_kid_index(g, node);
		if (i >= 0)
			g->kids[i].up = true;
		pm_gen_root_act(g);
	}
	if (pm_gen_terminal(g)) {
		g->cf.ops->send_child(g->cf.ctx, node, &g->end_msg);
		return;
	}
	if (g->phase == PM_PHASE_STOPPING) {
		pm_msg_init(&m, PM_MSG_STOP);
	} else if ((g->gen > 0 || pm_gen_spares(g)) && g->phase == PM_PHASE_RUNNING) {
		pm_msg_init(&m, PM_MSG_START);
		m.count = (uint32_t)g->restarts;
	} else {
		return;
	}
	m.gen = g->gen;
	g->cf.ops->send_child(g->cf.ctx, node, &m);
}

int pm_gen_child_msg(struct pm_gen *g, int node, const struct pm_msg *m)
{
	int idx = pm_gen_kid_index(g, node);
	struct pm_gen_child *k = idx >= 0 && !pm_gen_excluded(g, node) ? &g->kids[idx] : NULL;

	/* Only a joined child speaks (tree_link.c): it is up. */
	if (k)
		k->up = true;

	switch (m->type) {
	case PM_MSG_FAIL:
		pm_gen_fail(g, m);
		break;
	case PM_MSG_READY:
		if (g->phase == PM_PHASE_STARTING && k)
			k->ready = m->count;
		break;
	case PM_MSG_DONE:
		if (m->gen == g->gen && g->phase == PM_PHASE_RUNNING && k)
			k->done = m->count;
		break;
	case PM_MSG_RUNNING:
		if (m->gen == g->gen && g->phase == PM_PHASE_RUNNING && k)
			k->running[m->status ? 1 : 0] = m->count;
		break;
	case PM_MSG_STOPPED:
		if (m->gen == g->gen && g->phase == PM_PHASE_STOPPING && k) {
			k->stopped = m->count;
			k->stopped_rep = true;
		}
		break;
	case PM_MSG_LOST:
		if (!pm_gen_terminal(g))
			pm_gen_lost(g, m->node, m->text_len ? m->text : NULL);
		break;
	default:
		return -1;
	}
	pm_gen_progress(g);
	return 0;
}

void pm_gen_child_lost(struct pm_gen *g, int node, const char *why)
{
	int idx = pm_gen_kid_index(g, node);

	/* What it reported goes with it. */
	if (idx >= 0) {
		struct pm_gen_child *k = &g->kids[idx];
		k->up = false;
		k->ready = k->done = k->stopped = 0;
	}
	if (pm_gen_terminal(g) || pm_gen_excluded(g, node))
		return;
	pm_gen_log(g, "lost child node %s%s%s", pm_gen_node_name(g, node), why ? ": " : "",
		   why ? why : "");
	pm_gen_lost(g, node, why);
	pm_gen_progress(g);
}

int pm_gen_parent_msg(struct pm_gen *g, const struct pm_msg *m)
{
	switch (m->type) {
	case PM_MSG_STOP:
		g->stop_flags = m->count & PM_FLAG_HUNG;
		pm_gen_stop(g, m->gen);
		break;
	case PM_MSG_START:
		g->restarts = (int)m->count;
		pm_gen_start(g, m->gen);
		break;
	case PM_MSG_REPLACE: {
		struct pm_repl r;
		if (!pm_gen_spares(g))
			return -1;
		pm_gen_repl_from_msg(m, &r);
		pm_gen_apply_repl(g, &r);
		g->cf.ops->send_down(g->cf.ctx, m);
		if (r.lost == g->cf.node) {
			char why[PM_REPL_WHY + 64];
			snprintf(why, sizeof(why), "procmgr: this node is out of the step (%s)",
				 r.why);
			pm_gen_leave(g, why);
		}
		break;
	}
	case PM_MSG_FINISH:
	case PM_MSG_ABORT:
		pm_gen_end(g, m);
		break;
	default:
		return -1;
	}
	pm_gen_progress(g);
	return 0;
}

void pm_gen_cancel(struct pm_gen *g, const char *why)
{
	if (pm_gen_terminal(g))
		return;
	pm_gen_log(g, "cancelled: %s", why);
	pm_gen_fail_node(g, PM_FLAG_CANCEL, why);
	pm_gen_progress(g);
}

static unsigned levels_below(const struct pm_gen *g)
{
	int d = pm_tree_depth(g->cf.node, g->cf.fanout);
	int h = pm_tree_depth(g->cf.nnodes - 1, g->cf.fanout);

	return h > d ? (unsigned)(h - d) : 0;
}

/* The stop took too long. First this node's own ranks: a supervisor that
 * has not ended its command within the bound makes the node lost. Then
 * the children that have not reported their subtree stopped. */
void pm_gen_stop_timer(struct pm_gen *g)
{
	char why[256];
	int i;

	if (g->stop_stage == PM_STOP_ELECTION) {
		g->stop_stage = PM_STOP_NONE;
		if (g->electing)
			pm_gen_leave(g, "procmgr: lost the root and could not reach most of the "
					"step; this node ends its part");
		return;
	}
	if (g->phase != PM_PHASE_STOPPING || g->stop_stage == PM_STOP_NONE)
		return;
	if (g->stop_stage == PM_STOP_OWN) {
		for (i = 0; i < g->cf.ntasks_local; i++)
			if (g->ranks[i].stop_pending) {
				snprintf(why, sizeof(why), "rank %d did not stop within %.1f s",
					 g->ranks[i].grank, g->cf.stop_bound_ms / 1000.0);
				pm_gen_log(g, "%s", why);
				pm_gen_lost(g, g->cf.node, why);
				pm_gen_progress(g);
				return;
			}
		if (g->cf.stop_margin_ms && levels_below(g)) {
			pm_gen_arm_stop(g, PM_STOP_CHILDREN, g->cf.stop_margin_ms * levels_below(g));
			return;
		}
	}
	for (i = 0; i < g->nkids && !pm_gen_terminal(g); i++)
		if (!pm_gen_excluded(g, g->kids[i].node) && !g->kids[i].stopped_rep) {
			int node = g->kids[i].node;
			snprintf(why, sizeof(why), "its ranks did not report stopped within %.1f s "
				 "of the stop", (g->cf.stop_bound_ms +
						 g->cf.stop_margin_ms * levels_below(g)) / 1000.0);
			pm_gen_log(g, "child node %s: %s", pm_gen_node_name(g, node), why);
			pm_gen_lost(g, node, why);
		}
	if (pm_gen_spares(g) && !pm_gen_terminal(g)) {
		int miss[64], n = pm_gen_missing(g, miss, 64);
		for (i = 0; i < n && !pm_gen_terminal(g); i++) {
			snprintf(why, sizeof(why), "it did not come back to the tree within %.1f s "
				 "of the stop", (g->cf.stop_bound_ms +
						 g->cf.stop_margin_ms * levels_below(g)) / 1000.0);
			pm_gen_lost(g, miss[i], why);
		}
	}
	g->stop_stage = PM_STOP_NONE;
	pm_gen_progress(g);
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

void pm_gen_timer(struct pm_gen *g)
{
	if (g->phase == PM_PHASE_DELAY)
		pm_gen_root_next(g);
	pm_gen_progress(g);
}

/* Our reports of this phase went to a parent that is gone. */
static void report_again(struct pm_gen *g)
{
	if (g->phase == PM_PHASE_STARTING)
		g->ready_sent = false;
	else if (g->phase == PM_PHASE_RUNNING)
		g->done_sent = false;
	else if (g->phase == PM_PHASE_STOPPING)
		g->stopped_sent = false;
}

void pm_gen_parent_changed(struct pm_gen *g)
{
	report_again(g);
	pm_gen_progress(g);
}

void pm_gen_take_root(struct pm_gen *g, const char *why)
{
	if (pm_gen_terminal(g) || g->root)
		return;
	pm_gen_log(g, "taking the root's place: %s", why);
	g->root = true;
	g->electing = true;
	snprintf(g->elect_why, sizeof(g->elect_why), "%s", why);
	pm_gen_exclude(g, 0);
	report_again(g);
	if (g->cf.ops->became_root)
		g->cf.ops->became_root(g->cf.ctx);
	/* Whoever the root will be, it restarts every rank: ours stop now (on
	 * the side cut off, they must not run on alone). */
	if (g->phase == PM_PHASE_RUNNING && !(g->cf.sweep && g->cf.ops->sweep_takeover))
		pm_gen_stop(g, g->gen); /* a sweep's new root stops old trials itself */
	/* Most of the step must come to us within a stop's bound, or this
	 * side is the one cut off. */
	pm_gen_arm_stop(g, PM_STOP_ELECTION, g->cf.stop_bound_ms ? g->cf.stop_bound_ms : 10000);
	pm_gen_root_act(g);
	pm_gen_progress(g);
}
