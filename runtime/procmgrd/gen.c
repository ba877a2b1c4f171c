/* The generation state machine: every node's side. The root's decisions
 * are in decide.c. */
#include "gen_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tree.h"

void pm_gen_log(struct pm_gen *g, const char *fmt, ...)
{
	char buf[PM_WIRE_TEXT_MAX + 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	g->cf.ops->log(g->cf.ctx, buf);
}

const char *pm_gen_node_name(const struct pm_gen *g, int node)
{
	return node >= 0 && node < g->cf.nnodes && g->cf.names ? g->cf.names[node] : "?";
}

const char *pm_phase_name(enum pm_phase p)
{
	static const char *const names[] = { "starting", "running", "stopping", "delay",
					     "finished", "aborted" };
	return (unsigned)p < sizeof(names) / sizeof(names[0]) ? names[p] : "?";
}

bool pm_gen_is_root(const struct pm_gen *g)
{
	return g->cf.node == 0;
}

bool pm_gen_terminal(const struct pm_gen *g)
{
	return g->phase == PM_PHASE_FINISHED || g->phase == PM_PHASE_ABORTED;
}

bool pm_gen_over(const struct pm_gen *g)
{
	int i;

	if (!pm_gen_terminal(g))
		return false;
	/* A supervisor that is late still needs to be told how the step ended. */
	for (i = 0; i < g->cf.ntasks_local; i++)
		if (g->ranks[i].st != PM_RANK_GONE)
			return false;
	return true;
}

static bool connected(const struct pm_gen_rank *r)
{
	return r->st != PM_RANK_ABSENT && r->st != PM_RANK_GONE;
}

static void send_ranks(struct pm_gen *g, const struct pm_msg *m)
{
	int i;

	for (i = 0; i < g->cf.ntasks_local; i++)
		if (connected(&g->ranks[i]))
			g->cf.ops->send_rank(g->cf.ctx, i, m);
}

static void say(struct pm_gen *g, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
static void say(struct pm_gen *g, const char *fmt, va_list ap)
{
	struct pm_msg m;
	char buf[1024];
	int i;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	pm_msg_init(&m, PM_MSG_PRINT);
	pm_msg_set_text(&m, buf);
	for (i = 0; i < g->cf.ntasks_local; i++)
		if (connected(&g->ranks[i]) && g->ranks[i].grank == 0)
			g->cf.ops->send_rank(g->cf.ctx, i, &m);
}

void pm_gen_say(struct pm_gen *g, const char *fmt, ...)
{
	va_list ap;

	if (!g->cf.verbose)
		return;
	va_start(ap, fmt);
	say(g, fmt, ap);
	va_end(ap);
}

void pm_gen_tell(struct pm_gen *g, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(g, fmt, ap);
	va_end(ap);
}

/* ---- what every node does on the root's word ---- */

static void arm_stop(struct pm_gen *g, int stage, unsigned ms)
{
	g->stop_stage = ms ? stage : 0;
	if (g->cf.ops->arm_stop && (ms || stage == 0))
		g->cf.ops->arm_stop(g->cf.ctx, ms);
}

void pm_gen_stop(struct pm_gen *g, uint32_t gen)
{
	struct pm_msg m;
	int i;

	/* A node that joined late may not have seen generation gen start. */
	if (g->phase != PM_PHASE_RUNNING || gen < g->gen)
		return;
	g->gen = gen;
	g->phase = PM_PHASE_STOPPING;
	g->checks = PM_CHECKS_NONE;
	g->stop_t0 = g->cf.ops->now_ms(g->cf.ctx);
	g->stopped_children = 0;
	g->stopped_sent = false;
	for (i = 0; i < g->nchildren; i++)
		g->child_stopped[i] = false;
	arm_stop(g, 1, g->cf.stop_bound_ms);
	pm_msg_init(&m, PM_MSG_STOP);
	m.gen = gen;
	g->cf.ops->send_down(g->cf.ctx, &m);
	for (i = 0; i < g->cf.ntasks_local; i++) {
		struct pm_gen_rank *r = &g->ranks[i];
		if (r->st == PM_RANK_RUNNING) {
			r->stop_pending = true;
			g->cf.ops->send_rank(g->cf.ctx, i, &m);
		}
	}
}

void pm_gen_start(struct pm_gen *g, uint32_t gen)
{
	struct pm_msg m;
	int i;

	if (pm_gen_terminal(g))
		return;
	g->gen = gen;
	g->phase = PM_PHASE_RUNNING;
	arm_stop(g, 0, 0);
	g->done_children = 0;
	g->done_sent = false;
	g->running_children[0] = g->running_children[1] = 0;
	g->running_sent[0] = g->running_sent[1] = false;
	g->start_t0 = g->cf.ops->now_ms(g->cf.ctx);
	pm_msg_init(&m, PM_MSG_START);
	m.gen = gen;
	g->cf.ops->send_down(g->cf.ctx, &m);
	for (i = 0; i < g->cf.ntasks_local; i++) {
		struct pm_gen_rank *r = &g->ranks[i];
		r->run_seen = r->beat_seen = false;
		if (connected(r)) {
			r->st = PM_RANK_RUNNING;
			r->stop_pending = false;
			g->cf.ops->send_rank(g->cf.ctx, i, &m);
		}
	}
}

/* FINISH or ABORT: said once, down the tree and to every local rank, and
 * kept for those that come late. */
void pm_gen_end(struct pm_gen *g, const struct pm_msg *m)
{
	if (pm_gen_terminal(g))
		return;
	g->phase = m->type == PM_MSG_FINISH ? PM_PHASE_FINISHED : PM_PHASE_ABORTED;
	arm_stop(g, 0, 0);
	g->end_msg = *m;
	g->cf.ops->send_down(g->cf.ctx, m);
	send_ranks(g, m);
}

void pm_gen_abort_local(struct pm_gen *g, const char *why)
{
	struct pm_msg m;
	int i;

	pm_gen_log(g, "%s", why);
	if (pm_gen_terminal(g))
		return;
	pm_msg_init(&m, PM_MSG_ABORT);
	m.gen = g->gen;
	m.status = 1;
	pm_msg_set_text(&m, why);
	/* Said by one rank of this node, where the reason is known. */
	for (i = 0; i < g->cf.ntasks_local; i++)
		if (connected(&g->ranks[i]) && (m.rank < 0 || g->ranks[i].grank < m.rank))
			m.rank = g->ranks[i].grank;
	if (pm_gen_is_root(g))
		g->cf.ops->event(g->cf.ctx, "give_up", "\"reason\":\"local\"");
	pm_gen_end(g, &m);
}

/* ---- reports up: one rule for READY, DONE and STOPPED ---- */

/* Whether this node may report its whole subtree for phase: it has not yet,
 * its own part is there, and every node below reported. */
static bool subtree_complete(struct pm_gen *g, enum pm_phase phase, bool *sent,
			     bool local, int below)
{
	if (g->phase != phase || *sent || !local || 1 + below < g->subtree)
		return false;
	*sent = true;
	return true;
}

static bool all_ranks(const struct pm_gen *g, bool (*pred)(const struct pm_gen_rank *))
{
	int i;

	for (i = 0; i < g->cf.ntasks_local; i++)
		if (!pred(&g->ranks[i]))
			return false;
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

static void report_status(struct pm_gen *g, enum pm_msg_type type, int status)
{
	struct pm_msg m;

	pm_msg_init(&m, type);
	m.gen = g->gen;
	m.status = status;
	m.count = (uint32_t)g->subtree;
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
				     g->running_children[b])) {
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
				     g->ready_children)) {
			if (pm_gen_is_root(g))
				pm_gen_root_launch(g);
			else
				report(g, PM_MSG_READY);
			again = true;
		}
		if (report_running(g))
			again = true;
		if (subtree_complete(g, PM_PHASE_RUNNING, &g->done_sent, all_ranks(g, rank_done),
				     g->done_children)) {
			if (pm_gen_is_root(g))
				pm_gen_root_done(g);
			else
				report(g, PM_MSG_DONE);
			again = true;
		}
		if (g->phase == PM_PHASE_STOPPING && !g->stopped_sent &&
		    all_ranks(g, rank_still) && checked(g) &&
		    subtree_complete(g, PM_PHASE_STOPPING, &g->stopped_sent, true,
				     g->stopped_children)) {
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
static void fail_node(struct pm_gen *g, uint32_t flag, const char *why)
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
	pm_gen_log(g, "health check failed: %s", why);
	fail_node(g, PM_FLAG_HEALTH, why);
}

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
	struct pm_msg m;

	if (lrank < 0 || lrank >= g->cf.ntasks_local || g->ranks[lrank].st != PM_RANK_ABSENT)
		return -1;
	r = &g->ranks[lrank];
	r->grank = grank;
	r->st = PM_RANK_IDLE;
	if (pm_gen_terminal(g)) {
		g->cf.ops->send_rank(g->cf.ctx, lrank, &g->end_msg);
	} else if (g->phase == PM_PHASE_RUNNING) {
		pm_msg_init(&m, PM_MSG_START);
		m.gen = g->gen;
		r->st = PM_RANK_RUNNING;
		g->cf.ops->send_rank(g->cf.ctx, lrank, &m);
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

	if (lrank < 0 || lrank >= g->cf.ntasks_local || !connected(&g->ranks[lrank]))
		return;
	r = &g->ranks[lrank];
	r->st = PM_RANK_GONE;
	r->stop_pending = false;
	if (!pm_gen_terminal(g)) {
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
	if (pm_gen_terminal(g)) {
		g->cf.ops->send_child(g->cf.ctx, node, &g->end_msg);
		return;
	}
	if (g->phase == PM_PHASE_STOPPING) {
		pm_msg_init(&m, PM_MSG_STOP);
	} else if (g->gen > 0 && g->phase == PM_PHASE_RUNNING) {
		pm_msg_init(&m, PM_MSG_START);
	} else {
		return;
	}
	m.gen = g->gen;
	g->cf.ops->send_child(g->cf.ctx, node, &m);
}

/* A node is lost (its procmgrd gone or silent, its ranks not stopping):
 * the root ends the step, others pass it up with why. */
static void lost(struct pm_gen *g, int node, const char *why)
{
	struct pm_msg m;

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

int pm_gen_child_msg(struct pm_gen *g, int node, const struct pm_msg *m)
{
	switch (m->type) {
	case PM_MSG_FAIL:
		pm_gen_fail(g, m);
		break;
	case PM_MSG_READY:
		if (g->phase == PM_PHASE_STARTING)
			g->ready_children += (int)m->count;
		break;
	case PM_MSG_DONE:
		if (m->gen == g->gen && g->phase == PM_PHASE_RUNNING)
			g->done_children += (int)m->count;
		break;
	case PM_MSG_RUNNING:
		if (m->gen == g->gen && g->phase == PM_PHASE_RUNNING)
			g->running_children[m->status ? 1 : 0] += (int)m->count;
		break;
	case PM_MSG_STOPPED:
		if (m->gen == g->gen && g->phase == PM_PHASE_STOPPING) {
			int idx = node - g->child_first;
			g->stopped_children += (int)m->count;
			if (idx >= 0 && idx < g->nchildren)
				g->child_stopped[idx] = true;
		}
		break;
	case PM_MSG_LOST:
		if (!pm_gen_terminal(g))
			lost(g, m->node, m->text_len ? m->text : NULL);
		break;
	default:
		return -1;
	}
	pm_gen_progress(g);
	return 0;
}

void pm_gen_child_lost(struct pm_gen *g, int node, const char *why)
{
	if (pm_gen_terminal(g))
		return;
	pm_gen_log(g, "lost child node %s%s%s", pm_gen_node_name(g, node), why ? ": " : "",
		   why ? why : "");
	lost(g, node, why);
	pm_gen_progress(g);
}

int pm_gen_parent_msg(struct pm_gen *g, const struct pm_msg *m)
{
	switch (m->type) {
	case PM_MSG_STOP:
		pm_gen_stop(g, m->gen);
		break;
	case PM_MSG_START:
		pm_gen_start(g, m->gen);
		break;
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
	fail_node(g, PM_FLAG_CANCEL, why);
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

	if (g->phase != PM_PHASE_STOPPING || !g->stop_stage)
		return;
	if (g->stop_stage == 1) {
		for (i = 0; i < g->cf.ntasks_local; i++)
			if (g->ranks[i].stop_pending) {
				snprintf(why, sizeof(why), "rank %d did not stop within %.1f s",
					 g->ranks[i].grank, g->cf.stop_bound_ms / 1000.0);
				pm_gen_log(g, "%s", why);
				lost(g, g->cf.node, why);
				pm_gen_progress(g);
				return;
			}
		if (g->cf.stop_margin_ms && levels_below(g)) {
			arm_stop(g, 2, g->cf.stop_margin_ms * levels_below(g));
			return;
		}
	}
	for (i = 0; i < g->nchildren && !pm_gen_terminal(g); i++)
		if (!g->child_stopped[i]) {
			int node = g->child_first + i;
			snprintf(why, sizeof(why), "its ranks did not report stopped within %.1f s "
				 "of the stop", (g->cf.stop_bound_ms +
						 g->cf.stop_margin_ms * levels_below(g)) / 1000.0);
			pm_gen_log(g, "child node %s: %s", pm_gen_node_name(g, node), why);
			lost(g, node, why);
		}
	g->stop_stage = 0;
	pm_gen_progress(g);
}

void pm_gen_timer(struct pm_gen *g)
{
	if (g->phase == PM_PHASE_DELAY)
		pm_gen_root_next(g);
	pm_gen_progress(g);
}

int pm_gen_init(struct pm_gen *g, const struct pm_gen_config *cf)
{
	memset(g, 0, sizeof(*g));
	g->cf = *cf;
	if (cf->ntasks_local < 0 || cf->nnodes < 1 || cf->node < 0 || cf->node >= cf->nnodes ||
	    cf->fanout < 2)
		return -1;
	g->ranks = calloc((size_t)(cf->ntasks_local ? cf->ntasks_local : 1), sizeof(*g->ranks));
	if (!g->ranks)
		return -1;
	g->nchildren = pm_tree_children(cf->node, cf->fanout, cf->nnodes, &g->child_first);
	g->child_stopped = calloc((size_t)(g->nchildren ? g->nchildren : 1),
				  sizeof(*g->child_stopped));
	if (!g->child_stopped) {
		free(g->ranks);
		return -1;
	}
	g->subtree = pm_tree_subtree_size(cf->node, cf->fanout, cf->nnodes);
	g->phase = PM_PHASE_STARTING;
	pm_msg_init(&g->end_msg, PM_MSG_ABORT);
	return 0;
}

void pm_gen_free(struct pm_gen *g)
{
	free(g->ranks);
	free(g->child_stopped);
	g->ranks = NULL;
	g->child_stopped = NULL;
}
