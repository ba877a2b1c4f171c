/* The root carries out its decisions: each occasion (a failure, a node
 * lost, a generation done or stopped, the delay over, a root that took
 * over) asks decide.c for a verdict and applies it here, the one place
 * that acts on one. Above decide.c, gen.c and spares.c; below the inputs
 * (gen_report.c, gen_input.c, gen_request.c), which call it. */
#include "decide.h"
#include "gen_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"

static uint64_t now(struct pm_gen *g)
{
	return g->cf.ops->now_ms(g->cf.ctx);
}

/* Stop every rank, to start the next generation after the delay decided. */
void pm_gen_root_restart(struct pm_gen *g, unsigned delay_ms)
{
	g->delay_ms = delay_ms;
	g->fail_t0 = now(g);
	pm_gen_stop(g, g->gen);
}

/* Before the step's end goes down: a lost node's tasks never end, and
 * Slurm keeps srun waiting for them (lost_at_end says so, and what ends
 * the wait). */
static void lost_at_end(struct pm_gen *g)
{
	if (g->nlost && g->cf.ops->lost_at_end)
		g->cf.ops->lost_at_end(g->cf.ctx, g->lost_first, g->nlost, g->lost_silent);
}

static void give_up(struct pm_gen *g, const struct pm_verdict *v)
{
	char esc[PM_WIRE_TEXT_MAX * 2];
	struct pm_msg m;

	pm_json_escape(v->text, esc, sizeof(esc));
	pm_gen_event(g, "give_up", "\"gen\":%u,\"exit_code\":%d,\"message\":\"%s\"", g->gen,
		     v->code, esc);
	pm_msg_init(&m, PM_MSG_ABORT);
	m.gen = g->gen;
	m.status = v->code;
	m.rank = v->rank;
	m.node = v->node;
	m.count = v->blame ? PM_FLAG_BLAME : 0;
	pm_msg_set_text(&m, v->text);
	lost_at_end(g);
	pm_gen_end(g, &m);
}

static void finish(struct pm_gen *g, const struct pm_verdict *v)
{
	struct pm_msg m;

	pm_gen_event(g, "finish", "\"gen\":%u", g->gen);
	pm_gen_say(g, "%s", v->tell);
	pm_msg_init(&m, PM_MSG_FINISH);
	m.gen = g->gen;
	lost_at_end(g);
	pm_gen_end(g, &m);
}

/* A spare takes the lost node's slot (or a spare in reserve is gone): said
 * down the tree, and every rank starts the next generation together. */
static void replace(struct pm_gen *g, const struct pm_verdict *v)
{
	struct pm_msg m;

	pm_gen_repl_msg(&v->repl, &m);
	g->cf.ops->send_down(g->cf.ctx, &m);
	if (v->avoid_set && g->cf.ops->avoid)
		g->cf.ops->avoid(g->cf.ctx, v->avoid, v->avoid_why);
	if (v->repl.slot >= 0)
		pm_gen_event(g, "node_replaced", "%s", v->replaced);
	pm_gen_tell(g, "%s", v->tell);
	if (v->leave[0]) {
		pm_gen_leave(g, v->leave);
		return;
	}
	if (v->repl.slot < 0)
		return;
	g->delay_ms = v->delay_ms;
	if (g->phase == PM_PHASE_RUNNING) {
		g->fail_t0 = now(g);
		pm_gen_stop(g, g->gen);
	}
	/* Stopping already: the lost node's report is no longer awaited.
	 * Before launch or in the delay: the next START has the new slots. */
}

/* The verdict's event, the node_lost op, the slot table's change; then
 * the decision. WAIT is the caller's (its hang record). */
static void apply(struct pm_gen *g, const struct pm_verdict *v)
{
	if (v->event)
		pm_gen_event(g, v->event, "%s", v->fields);
	if (v->lost >= 0 && v->lost != g->lost_alive && !g->nlost++)
		g->lost_first = v->lost;
	if (v->lost >= 0 && g->cf.ops->node_lost)
		g->cf.ops->node_lost(g->cf.ctx, v->lost);
	if (v->repl_set)
		pm_gen_apply_repl(g, &v->repl);
	switch (v->kind) {
	case PM_VERDICT_RESTART:
		if (v->tell[0])
			pm_gen_tell(g, "%s", v->tell);
		pm_gen_root_restart(g, v->delay_ms);
		break;
	case PM_VERDICT_REPLACE:
		replace(g, v);
		break;
	case PM_VERDICT_FINISH:
		finish(g, v);
		break;
	case PM_VERDICT_GIVE_UP:
		if (v->avoid_set && g->cf.ops->avoid)
			g->cf.ops->avoid(g->cf.ctx, v->avoid, v->avoid_why);
		give_up(g, v);
		break;
	case PM_VERDICT_NONE:
	case PM_VERDICT_WAIT:
		break;
	}
}

void pm_gen_root_launch(struct pm_gen *g)
{
	pm_gen_event(g, "launch", "\"gen\":0,\"nodes\":%d,\"ranks\":%d,\"spares\":%d",
		     g->cf.nnodes, pm_gen_world(g), g->cf.spares);
	if (g->cf.sweep && g->cf.ops->sweep_launch) { /* its slots wait for trials: no START */
		g->phase = PM_PHASE_RUNNING;
		g->cf.ops->sweep_launch(g->cf.ctx);
		return;
	}
	pm_gen_start(g, 0);
}

/* A hung rank: remembered, the oldest heartbeat first. */
static void hang_note(struct pm_gen *g, const struct pm_msg *m)
{
	struct pm_hang *h = &g->hang;
	uint64_t beat = strtoull(m->text, NULL, 10);
	int follower = m->rank;

	if (h->rank < 0 || beat < h->beat) {
		if (h->rank >= 0) {
			follower = h->rank;
			h->next_beat = h->beat;
		}
		h->rank = m->rank;
		h->node = m->node;
		h->beat = beat;
		if (follower == m->rank)
			return;
	} else if (!h->next_beat || beat < h->next_beat) {
		h->next_beat = beat;
	}
	if (h->followers < PM_HANG_LIST)
		h->follower[h->followers] = follower;
	h->followers++;
}

/* A hang: every rank stops, stacks first; the decision waits for STOPPED. */
static void hang_wait(struct pm_gen *g, const struct pm_msg *m, uint64_t t)
{
	uint64_t at = pm_decide_hung_at(m, t);

	if (!g->hang.pending) {
		g->hang = (struct pm_hang){ .pending = true, .rank = -1, .gen = g->gen };
		g->fail_t0 = at;
		g->stop_flags = PM_FLAG_HUNG; /* every rank's stack first */
		pm_gen_stop(g, g->gen);
	}
	if (at < g->fail_t0)
		g->fail_t0 = at;
	hang_note(g, m);
}

void pm_gen_root_fail(struct pm_gen *g, const struct pm_msg *m)
{
	struct pm_verdict v;
	uint64_t t;

	if (pm_gen_terminal(g))
		return;
	if (g->cf.sweep && g->phase == PM_PHASE_RUNNING && g->cf.ops->sweep_fail) {
		g->cf.ops->sweep_fail(g->cf.ctx, m);
		return;
	}
	t = now(g);
	pm_decide_fail(g, m, t, &v);
	apply(g, &v);
	if (v.kind == PM_VERDICT_WAIT)
		hang_wait(g, m, t);
}

/* With spares: a spare takes the node's slot, or the step ends. */
static void root_replace(struct pm_gen *g, int node, const char *why)
{
	struct pm_verdict v;

	pm_decide_replace(g, node, why, &v);
	apply(g, &v);
}

void pm_gen_root_lost(struct pm_gen *g, int node, const char *why)
{
	struct pm_verdict v;

	if (pm_gen_terminal(g))
		return;
	if (!why)
		why = "its procmgrd or slurmstepd went away";
	g->lost_alive = strncmp(why, PM_GEN_HEALTH_LOST, strlen(PM_GEN_HEALTH_LOST)) ? -1 : node;
	/* Only a closed connection or a node's own word says its processes
	 * ended; a timeout is what a cut network gives too (a root cut off
	 * with a few nodes must not end the step the other side goes on). */
	if (g->lost_alive < 0 && !strstr(why, "went away"))
		g->lost_silent = true;
	if (g->cf.sweep && pm_gen_sweep_lost(g, node, why))
		return; /* its trials are requeued on the other nodes */
	if (g->cf.sweep && pm_gen_spares(g) && g->cf.ops->sweep_takeover) {
		/* The old root, said again by a child: the sweep took over
		 * (sweep_takeover.c); no spare replaces it, nothing restarts. */
		pm_gen_exclude(g, node);
		return;
	}
	if (pm_gen_spares(g)) {
		/* A root that took over decides once most of the step is here. */
		if (!g->electing)
			root_replace(g, node, why);
		return;
	}
	pm_decide_lost(g, node, why, &v);
	apply(g, &v);
}

void pm_gen_root_done(struct pm_gen *g)
{
	struct pm_verdict v;

	pm_decide_done(g, &v);
	apply(g, &v);
}

/* After a hang, blamed and decided now that every stack is in. false if
 * the step ended. */
static bool hang_decided(struct pm_gen *g)
{
	struct pm_hang *h = &g->hang;
	struct pm_verdict v;
	struct pm_stack_verdict sv;
	uint64_t last = 0;
	int onode = h->node;
	bool asked = false;

	h->pending = false;
	if (g->cf.ops->hang_outlier) {
		g->cf.ops->hang_outlier(g->cf.ctx, &onode, &sv, &last);
		asked = pm_decide_hang_ask(g);
	}
	/* The stacks' time is not procmgr's restart: said apart. */
	h->stacks_ms = last > g->fail_t0 ? last - g->fail_t0 : 0;
	pm_decide_hang(g, asked ? &sv : NULL, onode, &v);
	h->blamed = v.blamed;
	h->blamed_by = v.blamed_by;
	h->blamed_node = v.blamed_node;
	pm_gen_event(g, v.event, "%s", v.fields);
	if (v.kind == PM_VERDICT_RESTART) {
		pm_gen_tell(g, "%s", v.tell);
		g->delay_ms = v.delay_ms; /* stopping already */
		return true;
	}
	give_up(g, &v);
	return false;
}

void pm_gen_root_stopped(struct pm_gen *g)
{
	if (g->hang.pending && !hang_decided(g))
		return;
	pm_gen_event(g, "stopped", "\"gen\":%u,\"stop_ms\":%llu,\"delay_ms\":%u", g->gen,
		     (unsigned long long)(now(g) - g->stop_t0), g->delay_ms);
	g->phase = PM_PHASE_DELAY;
	if (g->delay_ms)
		g->cf.ops->arm_timer(g->cf.ctx, g->delay_ms);
	else
		pm_gen_root_next(g);
}

void pm_gen_root_next(struct pm_gen *g)
{
	g->restarts++;
	pm_gen_event(g, "start", "\"gen\":%u,\"restart\":%d,\"since_failure_ms\":%llu",
		     g->gen + 1, g->restarts, (unsigned long long)(now(g) - g->fail_t0));
	pm_gen_say(g, "procmgr: starting generation %u on %d nodes", g->gen + 1, g->cf.nnodes);
	/* From DELAY: pm_gen_start takes any phase that is not terminal. */
	pm_gen_start(g, g->gen + 1);
}

/* This node took the root's place: once most of the step is below it, the
 * old root is lost like any node (its slot goes to a spare), and what was
 * running stops so that every rank starts again together. */
void pm_gen_root_act(struct pm_gen *g)
{
	bool said = false;
	int i;

	if (!g->electing || !pm_gen_majority(g))
		return;
	g->electing = false;
	/* The election's deadline ends here, but the stop's must go on: a
	 * node lost with the old root never reports, and only this deadline
	 * declares it lost (pm_gen_missing) so that a generation can start. */
	if (g->phase == PM_PHASE_STOPPING)
		pm_gen_arm_stop(g, PM_STOP_OWN, g->cf.stop_bound_ms ? g->cf.stop_bound_ms : 10000);
	else
		pm_gen_arm_stop(g, PM_STOP_NONE, 0);
	pm_gen_event(g, "root_moved", "\"gen\":%u,\"root\":\"%s\",\"reason\":\"%s\"", g->gen,
		     pm_gen_node_name(g, g->cf.node), g->elect_why);
	g->fail_t0 = now(g);
	if (g->cf.sweep && g->cf.ops->sweep_takeover) {
		/* The sweep's queue moves here; a node lost is its case. */
		g->cf.ops->sweep_takeover(g->cf.ctx);
		return;
	}
	for (i = 0; i < g->nrepl; i++)
		said |= g->repl[i].lost == 0;
	if (!said)
		root_replace(g, 0, g->elect_why);
	else if (g->cf.ops->node_lost)
		/* Decided by the old root, told here only as a slot's change:
		 * what depends on node 0 here (srun on it, jobend.c) learns of
		 * its loss now, as from a verdict (apply). */
		g->cf.ops->node_lost(g->cf.ctx, 0);
	/* Nodes lost while no root was deciding still hold their slots. */
	for (i = 0; i < g->nexcluded && !pm_gen_terminal(g); i++)
		if (g->xlist[i] != 0 && pm_gen_slot(g, g->xlist[i]) >= 0)
			root_replace(g, g->xlist[i], "lost while the root moved");
	if (!said || pm_gen_terminal(g))
		return;
	/* The old root handed over itself: its slot has a spare already. */
	if (g->phase == PM_PHASE_RUNNING)
		pm_gen_stop(g, g->gen);
}
