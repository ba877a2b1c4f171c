/* The root's decisions: the restart policy is asked once per failure or
 * success, and what it said (restart with a delay, finish, give up) is kept
 * until the next generation starts. Every decision is an event. */
#include "gen_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/blame.h"
#include "common/errinfo.h"
#include "common/stacks.h"
#include "common/text.h"

static void label(const struct pm_gen *g, char *buf, size_t len)
{
	if (g->cf.policy.mode == PM_RESTART_NEVER)
		snprintf(buf, len, "restart=never");
	else
		snprintf(buf, len, "restart=%s:%d", pm_restart_name(g->cf.policy.mode),
			 g->cf.policy.max_restarts);
}

/* "all 8 ranks"; "its one rank", not "all 1 ranks". Until the next call. */
const char *pm_gen_all_ranks(const struct pm_gen *g)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "all %d ranks", pm_gen_world(g));
	return pm_gen_world(g) == 1 ? "its one rank" : buf;
}

static uint64_t now(struct pm_gen *g)
{
	return g->cf.ops->now_ms(g->cf.ctx);
}

/* blame: rank is the one that failed (its exit code is the step's, the
 * others end 0), not only the one who says why. */
static void give_up(struct pm_gen *g, int code, int rank, bool blame, int node,
		    const char *text)
{
	char esc[PM_WIRE_TEXT_MAX * 2];
	struct pm_msg m;

	pm_json_escape(text, esc, sizeof(esc));
	pm_gen_event(g, "give_up", "\"gen\":%u,\"exit_code\":%d,\"message\":\"%s\"", g->gen, code, esc);
	pm_msg_init(&m, PM_MSG_ABORT);
	m.gen = g->gen;
	m.status = code;
	m.rank = rank;
	m.node = node;
	m.count = blame && rank >= 0 ? PM_FLAG_BLAME : 0;
	pm_msg_set_text(&m, text);
	pm_gen_end(g, &m);
}

/* torchrun's "Root Cause (first observed failure)": the failing rank's
 * error after the give-up line, indented, as much as a frame holds. */
static void root_cause(char *text, size_t len, const struct pm_msg *m, const char *node)
{
	const char *d = pm_err_detail(m->text), *e;
	size_t off = strlen(text);

	if (!*d || off + 64 >= len)
		return;
	off += (size_t)snprintf(text + off, len - off, "\nprocmgr: root cause: rank %d on %s:",
				m->rank, node);
	for (; *d && off + 4 < len; d = *e ? e + 1 : e) {
		e = d + strcspn(d, "\n");
		off += (size_t)snprintf(text + off, len - off, "\n  %.*s", (int)(e - d), d);
	}
	if (off >= len)
		text[len - 1] = '\0';
}

/* Who says why on srun's stderr when the rank concerned cannot (its
 * supervisor or its node is gone): the root's own lowest rank, alive
 * since the root is deciding. */
static int printer(const struct pm_gen *g, int avoid)
{
	return pm_gen_printer(g, avoid);
}

/* Stop every rank, to start the next generation after the delay decided. */
void pm_gen_root_restart(struct pm_gen *g, unsigned delay_ms)
{
	g->delay_ms = delay_ms;
	g->fail_t0 = now(g);
	pm_gen_stop(g, g->gen);
}

void pm_gen_root_launch(struct pm_gen *g)
{
	pm_gen_event(g, "launch", "\"gen\":0,\"nodes\":%d,\"ranks\":%d,\"spares\":%d", g->cf.nnodes,
	      pm_gen_world(g), g->cf.spares);
	if (g->cf.sweep && g->cf.ops->sweep_launch) { /* its slots wait for trials: no START */
		g->phase = PM_PHASE_RUNNING;
		g->cf.ops->sweep_launch(g->cf.ctx);
		return;
	}
	pm_gen_start(g, 0);
}

/* A node failed a check: while running, like a rank failure (the checks
 * run again before the restart); before launch or a restart, the end. */
static void root_health(struct pm_gen *g, const struct pm_msg *m)
{
	char esc[PM_WIRE_TEXT_MAX], text[PM_WIRE_TEXT_MAX], lbl[64];
	const char *node = pm_gen_node_name(g, m->node);
	const char *when = g->phase == PM_PHASE_STARTING ? "before launch" :
			   g->phase == PM_PHASE_RUNNING ? "while running" : "before a restart";
	unsigned delay = 0;

	pm_json_escape(m->text, esc, sizeof(esc));
	pm_gen_event(g, "health_failed", "\"gen\":%u,\"node\":\"%s\",\"check\":\"%s\",\"when\":\"%s\"",
	      m->gen, node, esc, when);
	if (pm_gen_terminal(g))
		return;
	label(g, lbl, sizeof(lbl));
	if (g->phase == PM_PHASE_RUNNING &&
	    pm_policy_decide(&g->cf.policy, g->restarts, true, &delay) == PM_DECIDE_RESTART) {
		pm_gen_tell(g, "procmgr: generation %u: node %s failed a health check (%s); "
			      "restarting %s", g->gen, node, m->text, pm_gen_all_ranks(g));
		pm_gen_root_restart(g, delay);
		return;
	}
	snprintf(text, sizeof(text), "procmgr: node %s failed a health check %s: %.900s; "
		 "ending the step (%s)", node, when, m->text, lbl);
	give_up(g, 1, -1, false, m->node, text);
}

/* When a hung rank's supervisor judged it hung, on our clock: its EXIT says
 * how long ago (its stack and its stop came since), after its last beat.
 * An age past any stack bound and grace is not believed. */
#define PM_HUNG_AGE_MAX (15 * 60 * 1000ull)
static uint64_t hung_at(struct pm_gen *g, const struct pm_msg *m)
{
	char *end;
	uint64_t t = now(g), ago;

	strtoull(m->text, &end, 10);
	ago = strtoull(end, NULL, 10);
	return ago <= PM_HUNG_AGE_MAX && ago <= t ? t - ago : t;
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

/* "rank 3 on n2 hung first (...); ranks 0, 1 followed", or the tie's words
 * (common/blame.h). */
static void hang_text(struct pm_gen *g, char *buf, size_t len)
{
	struct pm_hang *h = &g->hang;
	struct pm_blame b = { (enum pm_blame_by)h->blamed_by, h->blamed };

	pm_blame_text(&b, h->rank, pm_gen_node_name(g, h->node),
		      h->blamed_node >= 0 ? pm_gen_node_name(g, h->blamed_node) : "",
		      h->follower, h->followers < PM_HANG_LIST ? h->followers : PM_HANG_LIST,
		      h->followers, h->followers ? h->next_beat - h->beat : 0, buf, len);
}

/* At STOPPED after a hang: now that every hung rank has said so and every
 * stack is in, blame (common/blame.h) and decide. false if the step
 * ended. */
static bool hang_decide(struct pm_gen *g)
{
	char what[768], lbl[64], text[1024], list[256];
	struct pm_hang *h = &g->hang;
	unsigned delay = 0;
	size_t off = 0;
	int i, n = h->followers < PM_HANG_LIST ? h->followers : PM_HANG_LIST;
	int onode = h->node, outlier = -1;
	uint64_t lead = h->followers ? h->next_beat - h->beat : 0;
	struct pm_blame b;

	h->pending = false;
	if (h->followers && lead < PM_BLAME_RESOLUTION_MS && g->cf.ops->hang_outlier)
		outlier = g->cf.ops->hang_outlier(g->cf.ctx, &onode);
	b = pm_blame_hang(h->rank, h->followers, lead, PM_BLAME_RESOLUTION_MS, outlier);
	h->blamed = b.rank;
	h->blamed_by = (int)b.by;
	h->blamed_node = b.by == PM_BLAME_STACK ? onode : b.by == PM_BLAME_HEARTBEAT ? h->node : -1;
	hang_text(g, what, sizeof(what));
	list[0] = '\0';
	for (i = 0; i < n && off < sizeof(list); i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%d", i ? "," : "",
					h->follower[i]);
	pm_gen_event(g, "hang", "\"gen\":%u,\"rank\":%d,\"node\":\"%s\",\"followers\":[%s],"
	      "\"nfollowers\":%d,\"lead_ms\":%llu,\"blame\":\"%s\",\"blamed\":%d,"
	      "\"resolution_ms\":%u", g->gen, h->rank, pm_gen_node_name(g, h->node), list,
	      h->followers, (unsigned long long)lead, pm_blame_name(b.by), b.rank,
	      PM_BLAME_RESOLUTION_MS);
	label(g, lbl, sizeof(lbl));
	if (pm_policy_decide(&g->cf.policy, g->restarts, true, &delay) == PM_DECIDE_RESTART) {
		pm_gen_tell(g, "procmgr: generation %u: %s; restarting %s (restart %d of %d)",
			   g->gen, what, pm_gen_all_ranks(g), g->restarts + 1, g->cf.policy.max_restarts);
		g->delay_ms = delay;
		return true;
	}
	if (g->cf.policy.mode == PM_RESTART_NEVER)
		snprintf(text, sizeof(text), "procmgr: generation %u: %s; not restarting (%s)",
			 g->gen, what, lbl);
	else
		snprintf(text, sizeof(text), "procmgr: generation %u: %s; giving up after %d "
			 "restart%s (%s)", g->gen, what, g->restarts, g->restarts == 1 ? "" : "s",
			 lbl);
	give_up(g, 1, b.rank, b.rank >= 0, h->blamed_node, text);
	return false;
}

static void root_cancel(struct pm_gen *g, const struct pm_msg *m)
{
	char esc[PM_WIRE_TEXT_MAX], text[PM_WIRE_TEXT_MAX];

	pm_json_escape(m->text, esc, sizeof(esc));
	pm_gen_event(g, "cancelled", "\"gen\":%u,\"node\":\"%s\",\"reason\":\"%s\"", g->gen,
	      pm_gen_node_name(g, m->node), esc);
	snprintf(text, sizeof(text), "procmgr: the step was cancelled (%.900s on %s); "
		 "not restarting", m->text, pm_gen_node_name(g, m->node));
	give_up(g, 128 + 15, -1, false, m->node, text);
}

void pm_gen_root_fail(struct pm_gen *g, const struct pm_msg *m)
{
	char how[128 + PM_ERR_SUMMARY_MAX], lbl[64], text[PM_WIRE_TEXT_MAX], beat[128] = "";
	char esc[PM_WIRE_TEXT_MAX * 2], err[sizeof(esc) + 16] = "", sum[PM_ERR_SUMMARY_MAX + 4];
	const char *node = pm_gen_node_name(g, m->node);
	bool hung = m->count & PM_FLAG_HUNG;
	bool lost = m->count & PM_FLAG_LOST;
	bool late = g->phase != PM_PHASE_RUNNING || m->gen != g->gen;
	unsigned delay = 0;
	enum pm_decision d;

	if (pm_gen_terminal(g))
		return;
	if (g->cf.sweep && g->phase == PM_PHASE_RUNNING && g->cf.ops->sweep_fail) {
		g->cf.ops->sweep_fail(g->cf.ctx, m);
		return;
	}
	if (m->count & PM_FLAG_CANCEL) {
		root_cancel(g, m);
		return;
	}
	if (m->count & PM_FLAG_HEALTH) {
		root_health(g, m);
		return;
	}
	if (lost)
		snprintf(how, sizeof(how), "lost its supervisor (%.100s)",
			 m->text_len ? m->text : "the task was killed");
	else
		pm_status_describe(m->status, hung, how, sizeof(how));
	/* The command's own words, from its error file or its stderr. */
	if (!hung && !lost && !(m->count & PM_FLAG_EXEC) && m->text_len) {
		size_t n = strlen(how);
		pm_err_summary(m->text, sum, sizeof(sum));
		snprintf(how + n, sizeof(how) - n, " (%s)", sum);
		pm_json_escape(m->text, esc, sizeof(esc));
		snprintf(err, sizeof(err), ",\"error\":\"%s\"", esc);
	}
	if (hung)
		snprintf(beat, sizeof(beat), ",\"hung\":true,\"last_heartbeat_ms\":%llu,"
			 "\"judged_ms_ago\":%llu", strtoull(m->text, NULL, 10),
			 (unsigned long long)(now(g) - hung_at(g, m)));
	pm_gen_event(g, "rank_failed", "\"gen\":%u,\"rank\":%d,\"node\":\"%s\",\"status\":\"%s\"%s%s%s%s",
	      m->gen, m->rank, node, how, beat, err,
	      m->count & PM_FLAG_EXEC ? ",\"cannot_run\":true" : "",
	      late && !lost && !(hung && g->hang.pending) ? ",\"ignored\":true" : "");
	if (hung && m->gen == g->gen && (g->phase == PM_PHASE_RUNNING || g->hang.pending)) {
		/* Stop everything, then blame the oldest heartbeat (hang_decide). */
		if (!g->hang.pending) {
			g->hang = (struct pm_hang){ .pending = true, .rank = -1 };
			g->fail_t0 = hung_at(g, m);
			g->stop_flags = PM_FLAG_HUNG; /* every rank's stack first */
			pm_gen_stop(g, g->gen);
		}
		if (hung_at(g, m) < g->fail_t0)
			g->fail_t0 = hung_at(g, m);
		hang_note(g, m);
		return;
	}
	/* A lost supervisor cannot be restarted in place, stopping or not. */
	if (late && !lost)
		return; /* this generation is already being stopped */

	label(g, lbl, sizeof(lbl));
	if (m->count & PM_FLAG_EXEC) {
		/* Not found, not executable: every restart would end the same. */
		snprintf(text, sizeof(text), "procmgr: rank %d on %s cannot run its command (%s) "
			 "in generation %u; not restarting: it would fail the same way (%s)",
			 m->rank, node, how, m->gen, lbl);
		give_up(g, pm_status_exit_code(m->status), m->rank, true, m->node, text);
		return;
	}
	d = lost ? PM_DECIDE_ABORT : pm_policy_decide(&g->cf.policy, g->restarts, true, &delay);
	if (d == PM_DECIDE_RESTART) {
		pm_gen_tell(g, "procmgr: generation %u: rank %d on %s %s; restarting %s "
			      "(restart %d of %d)", m->gen, m->rank, node, how, pm_gen_all_ranks(g),
			   g->restarts + 1, g->cf.policy.max_restarts);
		pm_gen_root_restart(g, delay);
		return;
	}
	if (lost || g->cf.policy.mode == PM_RESTART_NEVER)
		snprintf(text, sizeof(text),
			 "procmgr: rank %d on %s %s in generation %u; not restarting (%s)",
			 m->rank, node, how, m->gen, lbl);
	else
		snprintf(text, sizeof(text),
			 "procmgr: rank %d on %s %s in generation %u; giving up after %d "
			 "restart%s (%s)", m->rank, node, how, m->gen, g->restarts,
			 g->restarts == 1 ? "" : "s", lbl);
	if (!lost)
		root_cause(text, sizeof(text), m, node);
	give_up(g, hung || lost ? 1 : pm_status_exit_code(m->status),
		lost ? printer(g, m->rank) : m->rank, !lost, m->node, text);
}

/* "pmnode2 (why), pmnode5 (why)" and "pmnode2,pmnode5": the nodes lost. */
static void lost_lists(struct pm_gen *g, char *named, size_t nlen, char *list, size_t llen)
{
	size_t a = 0, b = 0;
	int i;

	named[0] = list[0] = '\0';
	for (i = 0; i < g->nrepl; i++) {
		const char *name = pm_gen_node_name(g, g->repl[i].lost);
		if (a < nlen)
			a += (size_t)snprintf(named + a, nlen - a, "%s%s (%s)", i ? ", " : "", name,
					      g->repl[i].why);
		if (b < llen)
			b += (size_t)snprintf(list + b, llen - b, "%s%s", i ? "," : "", name);
	}
}

static void tell_avoid(struct pm_gen *g, const char *why)
{
	char named[2048], list[1024];

	lost_lists(g, named, sizeof(named), list, sizeof(list));
	if (g->cf.ops->avoid)
		g->cf.ops->avoid(g->cf.ctx, list, why);
}

static void say_down(struct pm_gen *g, const struct pm_repl *r)
{
	struct pm_msg m;

	pm_gen_repl_msg(r, &m);
	g->cf.ops->send_down(g->cf.ctx, &m);
}

/* "ranks 4-5" of a slot. */
static void slot_ranks(const struct pm_gen *g, int slot, char *buf, size_t len)
{
	int lo = slot * g->cf.ntasks_local, hi = lo + g->cf.ntasks_local - 1;

	if (lo == hi)
		snprintf(buf, len, "rank %d", lo);
	else
		snprintf(buf, len, "ranks %d-%d", lo, hi);
}

/* No spare or no restart left, or most of the step gone: the end, naming
 * every node lost and what the job script should avoid next time. */
static void give_up_lost(struct pm_gen *g, const char *what, const char *lbl)
{
	char named[2048], list[1024], text[PM_WIRE_TEXT_MAX];

	lost_lists(g, named, sizeof(named), list, sizeof(list));
	if (g->cf.ops->avoid)
		g->cf.ops->avoid(g->cf.ctx, list, what);
	snprintf(text, sizeof(text), "procmgr: %s; ending the step (%s). Nodes lost: %.1500s. "
		 "Next time: --exclude=%.1000s", what, lbl, named, list);
	give_up(g, 1, printer(g, -1), false, -1, text);
}

/* With spares: the node is out of the step for good, a spare takes its
 * slot, and every rank starts the next generation together. */
static void root_replace(struct pm_gen *g, int node, const char *why)
{
	struct pm_repl r = { .lost = node, .slot = pm_gen_slot(g, node), .spare = -1 };
	char esc[512], lbl[64], what[1024], ranks[64];
	const char *name = pm_gen_node_name(g, node);
	bool self = node == g->cf.node;
	unsigned delay = 0;
	int i;

	for (i = 0; i < g->nrepl; i++)
		if (g->repl[i].lost == node)
			return; /* said by two of its neighbours */
	snprintf(r.why, sizeof(r.why), "%s", why);
	pm_json_escape(why, esc, sizeof(esc));
	pm_gen_event(g, "node_lost", "\"gen\":%u,\"node\":\"%s\",\"reason\":\"%s\",\"slot\":%d",
	      g->gen, name, esc, r.slot);
	if (g->cf.ops->node_lost)
		g->cf.ops->node_lost(g->cf.ctx, node);
	label(g, lbl, sizeof(lbl));
	if (r.slot < 0) {
		/* A spare in reserve: one fewer, nothing to restart. */
		pm_gen_apply_repl(g, &r);
		say_down(g, &r);
		tell_avoid(g, why);
		pm_gen_tell(g, "procmgr: spare node %s lost (%s); %d spare%s left", name, why,
			   pm_gen_spares_left(g), pm_gen_spares_left(g) == 1 ? "" : "s");
		if (self)
			pm_gen_leave(g, "procmgr: this spare node is out of the step");
		return;
	}
	r.spare = pm_gen_free_spare(g);
	if (r.spare < 0 ||
	    pm_policy_decide(&g->cf.policy, g->restarts, true, &delay) != PM_DECIDE_RESTART) {
		int spare = r.spare;
		r.spare = -1;
		pm_gen_apply_repl(g, &r);
		snprintf(what, sizeof(what), "generation %u: lost node %s (%s); %s", g->gen, name,
			 why, spare < 0 ? "no spare left" : "no restart left");
		give_up_lost(g, what, lbl);
		return;
	}
	if (2 * (g->cf.nnodes - g->nexcluded - (pm_gen_excluded(g, node) ? 0 : 1)) <= g->cf.nnodes &&
	    g->cf.nnodes > 2) {
		pm_gen_apply_repl(g, &r);
		snprintf(what, sizeof(what), "lost node %s (%s), and with it most of the step: "
			 "this side may be the one cut off", name, why);
		give_up_lost(g, what, lbl);
		return;
	}
	pm_gen_apply_repl(g, &r);
	say_down(g, &r);
	tell_avoid(g, why);
	slot_ranks(g, r.slot, ranks, sizeof(ranks));
	pm_gen_event(g, "node_replaced", "\"gen\":%u,\"node\":\"%s\",\"spare\":\"%s\",\"slot\":%d,"
	      "\"replacement\":%d,\"spares_left\":%d", g->gen, name,
	      pm_gen_node_name(g, r.spare), r.slot, g->nrepl, pm_gen_spares_left(g));
	pm_gen_tell(g, "procmgr: generation %u: lost node %s (%s); its %s move to spare %s; "
		      "restarting %s (restart %d of %d, %d spare%s left)", g->gen, name,
		   why, ranks, pm_gen_node_name(g, r.spare), pm_gen_all_ranks(g),
		   g->restarts + 1, g->cf.policy.max_restarts, pm_gen_spares_left(g),
		   pm_gen_spares_left(g) == 1 ? "" : "s");
	if (self) {
		/* The root itself: it hands over, its children choose the next. */
		pm_gen_leave(g, "procmgr: this node (the root) is out of the step");
		return;
	}
	g->delay_ms = delay;
	if (g->phase == PM_PHASE_RUNNING) {
		g->fail_t0 = now(g);
		pm_gen_stop(g, g->gen);
	}
	/* Stopping already: the lost node's report is no longer awaited.
	 * Before launch or in the delay: the next START has the new slots. */
}

void pm_gen_root_lost(struct pm_gen *g, int node, const char *why)
{
	char text[1024], esc[512];

	if (pm_gen_terminal(g))
		return;
	if (!why)
		why = "its procmgrd or slurmstepd went away";
	if (g->cf.sweep && !pm_gen_spares(g) && pm_gen_sweep_lost(g, node, why))
		return; /* its trials are requeued on the other nodes */
	if (pm_gen_spares(g)) {
		/* A root that took over decides once most of the step is here. */
		if (!g->electing)
			root_replace(g, node, why);
		return;
	}
	pm_json_escape(why, esc, sizeof(esc));
	pm_gen_event(g, "node_lost", "\"gen\":%u,\"node\":\"%s\",\"reason\":\"%s\"", g->gen,
	      pm_gen_node_name(g, node), esc);
	if (g->cf.ops->node_lost)
		g->cf.ops->node_lost(g->cf.ctx, node);
	snprintf(text, sizeof(text), "procmgr: lost node %s (%.700s); ending the step",
		 pm_gen_node_name(g, node), why);
	give_up(g, 1, printer(g, -1), false, node, text);
}

void pm_gen_root_done(struct pm_gen *g)
{
	unsigned delay = 0;
	struct pm_msg m;

	pm_gen_event(g, "generation_succeeded", "\"gen\":%u", g->gen);
	if (pm_policy_decide(&g->cf.policy, g->restarts, false, &delay) == PM_DECIDE_RESTART) {
		pm_gen_root_restart(g, delay);
		return;
	}
	pm_gen_event(g, "finish", "\"gen\":%u", g->gen);
	pm_gen_say(g, "procmgr: all %d ranks succeeded in generation %u", pm_gen_world(g), g->gen);
	pm_msg_init(&m, PM_MSG_FINISH);
	m.gen = g->gen;
	pm_gen_end(g, &m);
}

void pm_gen_root_stopped(struct pm_gen *g)
{
	if (g->hang.pending && !hang_decide(g))
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
	pm_gen_event(g, "start", "\"gen\":%u,\"restart\":%d,\"since_failure_ms\":%llu", g->gen + 1,
	      g->restarts, (unsigned long long)(now(g) - g->fail_t0));
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
		pm_gen_arm_stop(g, 1, g->cf.stop_bound_ms ? g->cf.stop_bound_ms : 10000);
	else
		arm_stop_off(g);
	pm_gen_event(g, "root_moved", "\"gen\":%u,\"root\":\"%s\",\"reason\":\"%s\"", g->gen,
	      pm_gen_node_name(g, g->cf.node), g->elect_why);
	g->fail_t0 = now(g);
	for (i = 0; i < g->nrepl; i++)
		said |= g->repl[i].lost == 0;
	if (!said)
		root_replace(g, 0, g->elect_why);
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
