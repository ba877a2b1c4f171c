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
	return g->root;
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

/* The local rank that speaks for this node: the lowest global rank alive
 * (not avoid), else any live supervisor (a spare's). -1: none. */
static int pm_gen_printer_lrank_avoid(const struct pm_gen *g, int avoid)
{
	int i, best = -1;

	for (i = 0; i < g->cf.ntasks_local; i++) {
		const struct pm_gen_rank *r = &g->ranks[i];
		if (!connected(r) || (avoid >= 0 && r->grank == avoid))
			continue;
		if (best < 0 || (r->grank >= 0 && (g->ranks[best].grank < 0 ||
						   r->grank < g->ranks[best].grank)))
			best = i;
	}
	return best;
}

int pm_gen_printer(const struct pm_gen *g, int avoid)
{
	int i = pm_gen_printer_lrank_avoid(g, avoid);

	return i < 0 ? -1 : g->ranks[i].grank;
}

/* A rank can fail before the printer's supervisor has connected (the
 * ranks start as their supervisors come): what the root said meanwhile
 * waits for it, in order, up to PM_SAID_MAX bytes. */
static void keep_said(struct pm_gen *g, const char *text)
{
	size_t n = strlen(text) + 1;

	if (g->said_len + n > PM_SAID_MAX) {
		g->said_lost++;
		return;
	}
	if (!g->said && !(g->said = malloc(PM_SAID_MAX))) {
		g->said_lost++;
		return;
	}
	memcpy(g->said + g->said_len, text, n);
	g->said_len += n;
}

static void flush_said(struct pm_gen *g, int lrank)
{
	struct pm_msg m;
	size_t off;

	for (off = 0; off < g->said_len; off += strlen(g->said + off) + 1) {
		pm_msg_init(&m, PM_MSG_PRINT);
		pm_msg_set_text(&m, g->said + off);
		g->cf.ops->send_rank(g->cf.ctx, lrank, &m);
	}
	if (g->said_lost) {
		pm_gen_log(g, "%u lines for rank 0's stderr were not kept: its supervisor "
			   "came late", g->said_lost);
		g->said_lost = 0;
	}
	free(g->said);
	g->said = NULL;
	g->said_len = 0;
}

static void say(struct pm_gen *g, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
static void say(struct pm_gen *g, const char *fmt, va_list ap)
{
	struct pm_msg m;
	char buf[1024];
	int i, printer = pm_gen_spares(g) ? pm_gen_printer_lrank_avoid(g, -1) : -1;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	pm_msg_init(&m, PM_MSG_PRINT);
	pm_msg_set_text(&m, buf);
	/* Rank 0's supervisor on node 0; with spares, whichever live rank the
	 * root has (rank 0 may have moved, or the root is a spare). */
	for (i = 0; i < g->cf.ntasks_local; i++)
		if (connected(&g->ranks[i]) &&
		    (pm_gen_spares(g) ? i == printer : g->ranks[i].grank == 0)) {
			g->cf.ops->send_rank(g->cf.ctx, i, &m);
			return;
		}
	keep_said(g, m.text);
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

void arm_stop_off(struct pm_gen *g)
{
	arm_stop(g, 0, 0);
}

void pm_gen_arm_stop(struct pm_gen *g, int stage, unsigned ms)
{
	arm_stop(g, stage, ms);
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
	g->stopped_sent = false;
	for (i = 0; i < g->nkids; i++) {
		g->kids[i].stopped = 0;
		g->kids[i].stopped_rep = false;
	}
	arm_stop(g, 1, g->cf.stop_bound_ms +
			       (g->stop_flags & PM_FLAG_HUNG ? g->cf.stack_ms : 0));
	pm_msg_init(&m, PM_MSG_STOP);
	m.gen = gen;
	m.count = g->stop_flags;
	g->stop_flags = 0;
	g->cf.ops->send_down(g->cf.ctx, &m);
	for (i = 0; i < g->cf.ntasks_local; i++) {
		struct pm_gen_rank *r = &g->ranks[i];
		if (r->st == PM_RANK_RUNNING) {
			r->stop_pending = true;
			g->cf.ops->send_rank(g->cf.ctx, i, &m);
		}
	}
}

/* START to one local rank. With spares it says who the rank is now (its
 * node's slot may be new); a node without a slot starts nothing. */
static void start_rank(struct pm_gen *g, int i)
{
	struct pm_gen_rank *r = &g->ranks[i];
	struct pm_msg m;
	int slot = pm_gen_slot(g, g->cf.node);

	pm_msg_init(&m, PM_MSG_START);
	m.gen = g->gen;
	if (pm_gen_spares(g)) {
		if (slot < 0)
			return;
		r->grank = slot * g->cf.ntasks_local + i;
		m.rank = r->grank;
		m.node = slot;
		pm_msg_set_text(&m, pm_gen_node_name(g, g->slot_node[0]));
	}
	r->st = PM_RANK_RUNNING;
	r->stop_pending = false;
	g->cf.ops->send_rank(g->cf.ctx, i, &m);
}

void pm_gen_start(struct pm_gen *g, uint32_t gen)
{
	struct pm_msg m;
	int i;

	/* Said again to a node that came to a new parent: already running. */
	if (pm_gen_terminal(g) || (g->phase == PM_PHASE_RUNNING && gen == g->gen))
		return;
	g->gen = gen;
	g->phase = PM_PHASE_RUNNING;
	arm_stop(g, 0, 0);
	for (i = 0; i < g->nkids; i++)
		g->kids[i].done = 0;
	g->done_sent = false;
	for (i = 0; i < g->nkids; i++)
		g->kids[i].running[0] = g->kids[i].running[1] = 0;
	g->running_sent[0] = g->running_sent[1] = false;
	g->start_t0 = g->cf.ops->now_ms(g->cf.ctx);
	pm_msg_init(&m, PM_MSG_START);
	m.gen = gen;
	m.count = (uint32_t)g->restarts;
	g->cf.ops->send_down(g->cf.ctx, &m);
	for (i = 0; i < g->cf.ntasks_local; i++) {
		g->ranks[i].run_seen = g->ranks[i].beat_seen = false;
		if (connected(&g->ranks[i]))
			start_rank(g, i);
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

void pm_gen_leave(struct pm_gen *g, const char *why)
{
	struct pm_msg m;

	pm_gen_log(g, "%s", why);
	if (pm_gen_terminal(g))
		return;
	g->phase = PM_PHASE_ABORTED;
	arm_stop(g, 0, 0);
	/* Its ranks end without failing the job: the spare runs them now. */
	pm_msg_init(&m, PM_MSG_ABORT);
	m.gen = g->gen;
	m.status = 0;
	m.rank = -2; /* nobody prints: the root said it */
	g->end_msg = m;
	send_ranks(g, &m);
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
	char text[PM_REPL_WHY];

	pm_gen_log(g, "health check failed: %s", why);
	if (pm_gen_spares(g)) {
		/* Not this node's ranks to restart in place: a spare takes them. */
		snprintf(text, sizeof(text), "failed a health check: %s", why);
		pm_gen_lost(g, g->cf.node, text);
		return;
	}
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

	if (lrank < 0 || lrank >= g->cf.ntasks_local || g->ranks[lrank].st != PM_RANK_ABSENT)
		return -1;
	r = &g->ranks[lrank];
	r->grank = pm_gen_spares(g) ? (pm_gen_slot(g, g->cf.node) < 0 ? -1 :
			pm_gen_slot(g, g->cf.node) * g->cf.ntasks_local + lrank) : grank;
	r->st = PM_RANK_IDLE;
	if (g->said_len && (pm_gen_spares(g) ? pm_gen_printer_lrank_avoid(g, -1) == lrank
					     : r->grank == 0))
		flush_said(g, lrank);
	if (pm_gen_terminal(g)) {
		g->cf.ops->send_rank(g->cf.ctx, lrank, &g->end_msg);
	} else if (g->phase == PM_PHASE_RUNNING && !g->cf.sweep) {
		/* A sweep's slots get their trials from sweep_node.c. */
		start_rank(g, lrank);
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

	if (g->stop_stage == 3) {
		g->stop_stage = 0;
		if (g->electing)
			pm_gen_leave(g, "procmgr: lost the root and could not reach most of the "
					"step; this node ends its part");
		return;
	}
	if (g->phase != PM_PHASE_STOPPING || !g->stop_stage)
		return;
	if (g->stop_stage == 1) {
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
			arm_stop(g, 2, g->cf.stop_margin_ms * levels_below(g));
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
	g->stop_stage = 0;
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
	if (g->phase == PM_PHASE_RUNNING)
		pm_gen_stop(g, g->gen);
	/* Most of the step must come to us within a stop's bound, or this
	 * side is the one cut off. */
	arm_stop(g, 3, g->cf.stop_bound_ms ? g->cf.stop_bound_ms : 10000);
	pm_gen_root_act(g);
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
	g->subtree = pm_tree_subtree_size(cf->node, cf->fanout, cf->nnodes);
	g->root = cf->node == 0;
	if (pm_gen_spares_init(g)) {
		pm_gen_free(g);
		return -1;
	}
	g->phase = PM_PHASE_STARTING;
	pm_msg_init(&g->end_msg, PM_MSG_ABORT);
	return 0;
}

void pm_gen_free(struct pm_gen *g)
{
	free(g->ranks);
	g->ranks = NULL;
	free(g->said);
	g->said = NULL;
	g->said_len = 0;
	pm_gen_spares_free(g);
}
