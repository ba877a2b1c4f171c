/* The root's decisions: the restart policy is asked once per failure or
 * success, and what it said (restart with a delay, finish, give up) is kept
 * until the next generation starts. Every decision is an event. */
#include "gen_int.h"

#include <stdarg.h>
#include <stdio.h>

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
	char f[PM_WIRE_TEXT_MAX * 2];
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

static void give_up(struct pm_gen *g, int code, int rank, int node, const char *text)
{
	char esc[PM_WIRE_TEXT_MAX];
	struct pm_msg m;

	pm_json_escape(text, esc, sizeof(esc));
	event(g, "give_up", "\"gen\":%u,\"exit_code\":%d,\"message\":\"%s\"", g->gen, code, esc);
	pm_msg_init(&m, PM_MSG_ABORT);
	m.gen = g->gen;
	m.status = code;
	m.rank = rank;
	m.node = node;
	pm_msg_set_text(&m, text);
	pm_gen_end(g, &m);
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
		pm_gen_say(g, "procmgr: generation %u: node %s failed a health check (%s); "
			      "restarting all %d ranks", g->gen, node, m->text, g->cf.ntasks);
		restart(g, delay);
		return;
	}
	snprintf(text, sizeof(text), "procmgr: node %s failed a health check %s: %.900s; "
		 "ending the step (%s)", node, when, m->text, lbl);
	give_up(g, 1, -1, m->node, text);
}

void pm_gen_root_fail(struct pm_gen *g, const struct pm_msg *m)
{
	char how[128], lbl[64], text[1024];
	const char *node = pm_gen_node_name(g, m->node);
	bool hung = m->count & PM_FLAG_HUNG;
	bool lost = m->count & PM_FLAG_LOST;
	bool late = g->phase != PM_PHASE_RUNNING || m->gen != g->gen;
	unsigned delay = 0;
	enum pm_decision d;

	if (m->count & PM_FLAG_HEALTH) {
		root_health(g, m);
		return;
	}
	if (lost)
		snprintf(how, sizeof(how), "lost its supervisor (the task was killed)");
	else
		pm_status_describe(m->status, hung, how, sizeof(how));
	event(g, "rank_failed", "\"gen\":%u,\"rank\":%d,\"node\":\"%s\",\"status\":\"%s\"%s%s%s",
	      m->gen, m->rank, node, how, hung ? ",\"hung\":true" : "",
	      m->count & PM_FLAG_EXEC ? ",\"cannot_run\":true" : "",
	      late ? ",\"ignored\":true" : "");
	if (late)
		return; /* this generation is already being stopped */

	label(g, lbl, sizeof(lbl));
	if (m->count & PM_FLAG_EXEC) {
		/* Not found, not executable: every restart would end the same. */
		snprintf(text, sizeof(text), "procmgr: rank %d on %s cannot run its command (%s) "
			 "in generation %u; not restarting: it would fail the same way (%s)",
			 m->rank, node, how, m->gen, lbl);
		give_up(g, pm_status_exit_code(m->status), m->rank, m->node, text);
		return;
	}
	d = lost ? PM_DECIDE_ABORT : pm_policy_decide(&g->cf.policy, g->restarts, true, &delay);
	if (d == PM_DECIDE_RESTART) {
		pm_gen_say(g, "procmgr: generation %u: rank %d on %s %s; restarting all %d ranks "
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
	give_up(g, hung || lost ? 1 : pm_status_exit_code(m->status), m->rank, m->node, text);
}

void pm_gen_root_lost(struct pm_gen *g, int node)
{
	char text[512];

	snprintf(text, sizeof(text), "procmgr: lost node %s (its procmgrd or slurmstepd "
		 "went away); ending the step", pm_gen_node_name(g, node));
	give_up(g, 1, -1, node, text);
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
	event(g, "stopped", "\"gen\":%u,\"stop_ms\":%llu,\"delay_ms\":%u", g->gen,
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
	event(g, "start", "\"gen\":%u,\"restart\":%d,\"since_failure_ms\":%llu", g->gen + 1,
	      g->restarts, (unsigned long long)(now(g) - g->fail_t0));
	pm_gen_say(g, "procmgr: starting generation %u on %d nodes", g->gen + 1, g->cf.nnodes);
	/* From DELAY: pm_gen_start takes any phase that is not terminal. */
	pm_gen_start(g, g->gen + 1);
}
