/* The generation machine's reports up the tree: one rule for READY, DONE,
 * STOPPED and RUNNING (a subtree reports once, when its own part and every
 * node below are in), and failures and lost nodes on their way to the
 * root, which decides (gen_apply.c). Called by the inputs (gen_input.c). */
#include "gen_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reports up: one rule for READY, DONE and STOPPED ---- */

/* Whether this node may report its whole subtree for phase: it has not yet,
 * its own part is there, and every node below reported. */
static bool subtree_complete(struct pm_gen *g, enum pm_phase phase, bool *sent,
			     bool local, uint32_t below)
{
	if (g->phase != phase || *sent || !local || 1 + (int)below < pm_gen_expected(g))
		return false;
	*sent = true;
	return true;
}

static bool rank_done(const struct pm_gen_rank *r)
{
	return r->st == PM_RANK_DONE;
}

static bool rank_run(const struct pm_gen_rank *r)
{
	return r->run_seen;
}

static bool rank_beat(const struct pm_gen_rank *r)
{
	return r->beat_seen;
}

static bool rank_still(const struct pm_gen_rank *r)
{
	return !r->stop_pending;
}

static bool all_ranks(const struct pm_gen *g, bool (*pred)(const struct pm_gen_rank *))
{
	int i;

	/* A spare not in use runs nothing: nothing to wait for. */
	if (pm_gen_spares(g) && pm_gen_slot(g, g->cf.node) < 0 && pred != rank_still)
		return true;

	for (i = 0; i < g->cf.ntasks_local; i++)
		if (!pred(&g->ranks[i]))
			return false;
	return true;
}

static void report_status(struct pm_gen *g, enum pm_msg_type type, int status)
{
	struct pm_msg m;

	pm_msg_init(&m, type);
	m.gen = g->gen;
	m.status = status;
	m.count = (uint32_t)pm_gen_expected(g);
	g->cf.ops->send_up(g->cf.ctx, &m);
}

static void report(struct pm_gen *g, enum pm_msg_type type)
{
	report_status(g, type, 0);
}

/* Every rank runs, then every rank has heartbeaten: the end of a restart
 * as a user counts it. Reported like READY, before DONE. */
static bool report_running(struct pm_gen *g)
{
	bool any = false;
	int b;

	for (b = 0; b < 2; b++)
		if (subtree_complete(g, PM_PHASE_RUNNING, &g->running_sent[b],
				     all_ranks(g, b ? rank_beat : rank_run),
				     pm_gen_running_below(g, b))) {
			if (pm_gen_is_root(g))
				pm_gen_root_running(g, b);
			else
				report_status(g, PM_MSG_RUNNING, b);
			any = true;
		}
	return any;
}

/* Once no rank runs here, the node is checked before the next generation;
 * false while that is not over. */
static bool checked(struct pm_gen *g)
{
	char why[1024];
	int rc;

	if (g->checks == PM_CHECKS_DONE)
		return true;
	if (g->checks == PM_CHECKS_RUNNING)
		return false;
	why[0] = '\0';
	rc = g->cf.ops->run_checks(g->cf.ctx, why, sizeof(why));
	if (rc == 0) {
		g->checks = PM_CHECKS_RUNNING;
		return false;
	}
	g->checks = PM_CHECKS_DONE;
	if (rc < 0)
		pm_gen_fail_health(g, why[0] ? why : "health checks could not run");
	return true;
}

/* Called after every input: whatever the input, the subtree's reports go
 * up (or the root decides) exactly when they are complete. */
void pm_gen_progress(struct pm_gen *g)
{
	bool again = true;

	while (again) {
		again = false;
		if (subtree_complete(g, PM_PHASE_STARTING, &g->ready_sent, g->local_ready,
				     pm_gen_below(g, PM_PHASE_STARTING))) {
			if (pm_gen_is_root(g))
				pm_gen_root_launch(g);
			else
				report(g, PM_MSG_READY);
			again = true;
		}
		if (report_running(g))
			again = true;
		if (subtree_complete(g, PM_PHASE_RUNNING, &g->done_sent, all_ranks(g, rank_done),
				     pm_gen_below(g, PM_PHASE_RUNNING))) {
			if (pm_gen_is_root(g))
				pm_gen_root_done(g);
			else
				report(g, PM_MSG_DONE);
			again = true;
		}
		if (g->phase == PM_PHASE_STOPPING && !g->stopped_sent &&
		    all_ranks(g, rank_still) && checked(g) &&
		    subtree_complete(g, PM_PHASE_STOPPING, &g->stopped_sent, true,
				     pm_gen_below(g, PM_PHASE_STOPPING))) {
			if (pm_gen_is_root(g))
				pm_gen_root_stopped(g);
			else
				report(g, PM_MSG_STOPPED);
			again = true;
		}
	}
}

/* A failure anywhere goes to the root, which alone decides. */
void pm_gen_fail(struct pm_gen *g, const struct pm_msg *m)
{
	if (pm_gen_is_root(g))
		pm_gen_root_fail(g, m);
	else
		g->cf.ops->send_up(g->cf.ctx, m);
}

/* A failure of this node as a whole (no rank): flag says what, why how. */
void pm_gen_fail_node(struct pm_gen *g, uint32_t flag, const char *why)
{
	struct pm_msg m;

	pm_msg_init(&m, PM_MSG_FAIL);
	m.gen = g->gen;
	m.node = g->cf.node;
	m.count = flag;
	pm_msg_set_text(&m, why);
	pm_gen_fail(g, &m);
}

void pm_gen_fail_health(struct pm_gen *g, const char *why)
{
	char text[PM_REPL_WHY];

	pm_gen_log(g, "health check failed: %s", why);
	if (pm_gen_spares(g)) {
		/* Not this node's ranks to restart in place: a spare takes them. */
		snprintf(text, sizeof(text), PM_GEN_HEALTH_LOST "%s", why);
		pm_gen_lost(g, g->cf.node, text);
		return;
	}
	pm_gen_fail_node(g, PM_FLAG_HEALTH, why);
}

/* A node is lost (its procmgrd gone or silent, its ranks not stopping):
 * the root ends the step, others pass it up with why. */
void pm_gen_lost(struct pm_gen *g, int node, const char *why)
{
	struct pm_msg m;

	/* Out of the counts here at once: the root's word follows. */
	if (node != g->cf.node)
		pm_gen_exclude(g, node);
	if (!pm_gen_is_root(g)) {
		pm_msg_init(&m, PM_MSG_LOST);
		m.node = node;
		if (why)
			pm_msg_set_text(&m, why);
		g->cf.ops->send_up(g->cf.ctx, &m);
		return;
	}
	pm_gen_root_lost(g, node, why);
}
