/* The root's decisions: the restart policy is asked once per failure or
 * success, and what it said (restart with a delay, finish, give up) is kept
 * until the next generation starts. Every decision is an event. */
#include "gen_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errinfo.h"
#include "common/text.h"

static void label(const struct pm_gen *g, char *buf, size_t len)
{
	if (g->cf.policy.mode == PM_RESTART_NEVER)
		snprintf(buf, len, "restart=never");
	else
		snprintf(buf, len, "restart=%s:%d", pm_restart_name(g->cf.policy.mode),
			 g->cf.policy.max_restarts);
}

static void event(struct pm_gen *g, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void event(struct pm_gen *g, const char *name, const char *fmt, ...)
{
	char f[PM_WIRE_TEXT_MAX * 3];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f, sizeof(f), fmt, ap);
	va_end(ap);
	g->cf.ops->event(g->cf.ctx, name, f);
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
	event(g, "give_up", "\"gen\":%u,\"exit_code\":%d,\"message\":\"%s\"", g->gen, code, esc);
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
	int i, best = -1;

	for (i = 0; i < g->cf.ntasks_local; i++) {
		const struct pm_gen_rank *r = &g->ranks[i];
		if (r->st != PM_RANK_ABSENT && r->st != PM_RANK_GONE && r->grank != avoid &&
		    (best < 0 || r->grank < best))
			best = r->grank;
	}
	return best;
}

/* Stop every rank, to start the next generation after the delay decided. */
static void restart(struct pm_gen *g, unsigned delay_ms)
{
	g->delay_ms = delay_ms;
	g->fail_t0 = now(g);
	pm_gen_stop(g, g->gen);
}

void pm_gen_root_launch(struct pm_gen *g)
{
	event(g, "launch", "\"gen\":0,\"nodes\":%d,\"ranks\":%d", g->cf.nnodes, g->cf.ntasks);
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
	event(g, "health_failed", "\"gen\":%u,\"node\":\"%s\",\"check\":\"%s\",\"when\":\"%s\"",
	      m->gen, node, esc, when);
	if (pm_gen_terminal(g))
		return;
	label(g, lbl, sizeof(lbl));
	if (g->phase == PM_PHASE_RUNNING &&
	    pm_policy_decide(&g->cf.policy, g->restarts, true, &delay) == PM_DECIDE_RESTART) {
		pm_gen_tell(g, "procmgr: generation %u: node %s failed a health check (%s); "
			      "restarting all %d ranks", g->gen, node, m->text, g->cf.ntasks);
		restart(g, delay);
		return;
	}
	snprintf(text, sizeof(text), "procmgr: node %s failed a health check %s: %.900s; "
		 "ending the step (%s)", node, when, m->text, lbl);
	give_up(g, 1, -1, false, m->node, text);
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

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* "rank 3 on n2 hung first (its last heartbeat 1.2 s before any other's);
 * ranks 0, 1 followed" */
static void hang_text(struct pm_gen *g, char *buf, size_t len)
{
	struct pm_hang *h = &g->hang;
	int i, n = h->followers < PM_HANG_LIST ? h->followers : PM_HANG_LIST;
	uint64_t lead;
	char ago[32];
	size_t off;

	off = (size_t)snprintf(buf, len, "rank %d on %s hung", h->rank,
			       pm_gen_node_name(g, h->node));
	if (!h->followers)
		return;
	qsort(h->follower, (size_t)n, sizeof(int), cmp_int);
	lead = h->next_beat - h->beat;
	if (lead < 1000)
		snprintf(ago, sizeof(ago), "%llu ms", (unsigned long long)lead);
	else
		snprintf(ago, sizeof(ago), "%.1f s", (double)lead / 1000.0);
	off += (size_t)snprintf(buf + off, off < len ? len - off : 0,
				" first (its last heartbeat %s before any other's); rank%s", ago,
				h->followers > 1 ? "s" : "");
	for (i = 0; i < n; i++)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s %d",
					i ? "," : "", h->follower[i]);
	if (h->followers > n)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, " and %d more",
					h->followers - n);
	snprintf(buf + off, off < len ? len - off : 0, " followed");
}

/* At STOPPED after a hang: now that every hung rank has said so, blame
 * the oldest heartbeat and decide. false if the step ended. */
static bool hang_decide(struct pm_gen *g)
{
	char what[512], lbl[64], text[1024], list[256];
	struct pm_hang *h = &g->hang;
	unsigned delay = 0;
	size_t off = 0;
	int i, n = h->followers < PM_HANG_LIST ? h->followers : PM_HANG_LIST;

	h->pending = false;
	hang_text(g, what, sizeof(what));
	list[0] = '\0';
	for (i = 0; i < n && off < sizeof(list); i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%d", i ? "," : "",
					h->follower[i]);
	event(g, "hang", "\"gen\":%u,\"rank\":%d,\"node\":\"%s\",\"followers\":[%s],"
	      "\"nfollowers\":%d,\"lead_ms\":%llu", g->gen, h->rank,
	      pm_gen_node_name(g, h->node), list, h->followers,
	      (unsigned long long)(h->followers ? h->next_beat - h->beat : 0));
	label(g, lbl, sizeof(lbl));
	if (pm_policy_decide(&g->cf.policy, g->restarts, true, &delay) == PM_DECIDE_RESTART) {
		pm_gen_tell(g, "procmgr: generation %u: %s; restarting all %d ranks (restart %d of %d)",
			   g->gen, what, g->cf.ntasks, g->restarts + 1, g->cf.policy.max_restarts);
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
	give_up(g, 1, h->rank, true, h->node, text);
	return false;
}

static void root_cancel(struct pm_gen *g, const struct pm_msg *m)
{
	char esc[PM_WIRE_TEXT_MAX], text[PM_WIRE_TEXT_MAX];

	pm_json_escape(m->text, esc, sizeof(esc));
	event(g, "cancelled", "\"gen\":%u,\"node\":\"%s\",\"reason\":\"%s\"", g->gen,
	      pm_gen_node_name(g, m->node), esc);
	snprintf(text, sizeof(text), "procmgr: the step was cancelled (%.900s on %s); "
		 "not restarting", m->text, pm_gen_node_name(g, m->node));
	give_up(g, 128 + 15, -1, false, m->node, text);
}

void pm_gen_root_fail(struct pm_gen *g, const struct pm_msg *m)
{
	char how[128 + PM_ERR_SUMMARY_MAX], lbl[64], text[PM_WIRE_TEXT_MAX], beat[80] = "";
	char esc[PM_WIRE_TEXT_MAX * 2], err[sizeof(esc) + 16] = "", sum[PM_ERR_SUMMARY_MAX + 4];
	const char *node = pm_gen_node_name(g, m->node);
	bool hung = m->count & PM_FLAG_HUNG;
	bool lost = m->count & PM_FLAG_LOST;
	bool late = g->phase != PM_PHASE_RUNNING || m->gen != g->gen;
	unsigned delay = 0;
	enum pm_decision d;

	if (pm_gen_terminal(g))
		return;
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
		snprintf(beat, sizeof(beat), ",\"hung\":true,\"last_heartbeat_ms\":%llu",
			 strtoull(m->text, NULL, 10));
	event(g, "rank_failed", "\"gen\":%u,\"rank\":%d,\"node\":\"%s\",\"status\":\"%s\"%s%s%s%s",
	      m->gen, m->rank, node, how, beat, err,
	      m->count & PM_FLAG_EXEC ? ",\"cannot_run\":true" : "",
	      late && !lost && !(hung && g->hang.pending) ? ",\"ignored\":true" : "");
	if (hung && m->gen == g->gen && (g->phase == PM_PHASE_RUNNING || g->hang.pending)) {
		/* Stop everything, then blame the oldest heartbeat (hang_decide). */
		if (!g->hang.pending) {
			g->hang = (struct pm_hang){ .pending = true, .rank = -1 };
			g->fail_t0 = now(g);
			pm_gen_stop(g, g->gen);
		}
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
		pm_gen_tell(g, "procmgr: generation %u: rank %d on %s %s; restarting all %d ranks "
			      "(restart %d of %d)", m->gen, m->rank, node, how, g->cf.ntasks,
			   g->restarts + 1, g->cf.policy.max_restarts);
		restart(g, delay);
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

void pm_gen_root_lost(struct pm_gen *g, int node, const char *why)
{
	char text[1024], esc[512];

	if (pm_gen_terminal(g))
		return;
	if (!why)
		why = "its procmgrd or slurmstepd went away";
	pm_json_escape(why, esc, sizeof(esc));
	event(g, "node_lost", "\"gen\":%u,\"node\":\"%s\",\"reason\":\"%s\"", g->gen,
	      pm_gen_node_name(g, node), esc);
	snprintf(text, sizeof(text), "procmgr: lost node %s (%.700s); ending the step",
		 pm_gen_node_name(g, node), why);
	give_up(g, 1, printer(g, -1), false, node, text);
}

void pm_gen_root_done(struct pm_gen *g)
{
	unsigned delay = 0;
	struct pm_msg m;

	event(g, "generation_succeeded", "\"gen\":%u", g->gen);
	if (pm_policy_decide(&g->cf.policy, g->restarts, false, &delay) == PM_DECIDE_RESTART) {
		restart(g, delay);
		return;
	}
	event(g, "finish", "\"gen\":%u", g->gen);
	pm_gen_say(g, "procmgr: all %d ranks succeeded in generation %u", g->cf.ntasks, g->gen);
	pm_msg_init(&m, PM_MSG_FINISH);
	m.gen = g->gen;
	pm_gen_end(g, &m);
}

void pm_gen_root_stopped(struct pm_gen *g)
{
	if (g->hang.pending && !hang_decide(g))
		return;
	event(g, "stopped", "\"gen\":%u,\"stop_ms\":%llu,\"delay_ms\":%u", g->gen,
	      (unsigned long long)(now(g) - g->stop_t0), g->delay_ms);
	g->phase = PM_PHASE_DELAY;
	if (g->delay_ms)
		g->cf.ops->arm_timer(g->cf.ctx, g->delay_ms);
	else
		pm_gen_root_next(g);
}

void pm_gen_root_running(struct pm_gen *g, bool beat)
{
	unsigned long long t = now(g);

	/* Recovery, for a restarted generation: from the failure to here. */
	if (g->gen > 0)
		event(g, beat ? "heartbeating" : "running",
		      "\"gen\":%u,\"ranks\":%d,\"since_start_ms\":%llu,\"since_failure_ms\":%llu",
		      g->gen, g->cf.ntasks, t - g->start_t0, t - g->fail_t0);
	else
		event(g, beat ? "heartbeating" : "running",
		      "\"gen\":%u,\"ranks\":%d,\"since_start_ms\":%llu", g->gen, g->cf.ntasks,
		      t - g->start_t0);
}

void pm_gen_root_next(struct pm_gen *g)
{
	g->restarts++;
	event(g, "start", "\"gen\":%u,\"restart\":%d,\"since_failure_ms\":%llu", g->gen + 1,
	      g->restarts, (unsigned long long)(now(g) - g->fail_t0));
	pm_gen_say(g, "procmgr: starting generation %u on %d nodes", g->gen + 1, g->cf.nnodes);
	/* From DELAY: pm_gen_start takes any phase that is not terminal. */
	pm_gen_start(g, g->gen + 1);
}
