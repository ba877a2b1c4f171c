/* The root's decisions as verdicts (decide.h): the restart policy is asked
 * once per failure or success, with the words that say why. Pure: reads
 * the machine's state (gen.c, spares.c), calls no action; gen_apply.c
 * carries the verdict out. Tested as tables in tests/unit/test_decide.c. */
#include "decide.h"
#include "gen_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/blame.h"
#include "common/errinfo.h"
#include "common/stacks.h"
#include "common/text.h"

const char *pm_verdict_name(enum pm_verdict_kind k)
{
	static const char *const names[] = { "none", "wait", "restart", "replace", "finish",
					     "give_up" };
	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

static void label(const struct pm_gen *g, char *buf, size_t len)
{
	if (g->cf.policy.mode == PM_RESTART_NEVER)
		snprintf(buf, len, "restart=never");
	else
		snprintf(buf, len, "restart=%s:%d", pm_restart_name(g->cf.policy.mode),
			 g->cf.policy.max_restarts);
}

static void verdict(struct pm_verdict *v, enum pm_verdict_kind kind)
{
	memset(v, 0, sizeof(*v));
	v->kind = kind;
	v->lost = v->rank = v->node = -1;
	v->blamed = v->blamed_node = -1;
}

static void seen(struct pm_verdict *v, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void seen(struct pm_verdict *v, const char *event, const char *fmt, ...)
{
	va_list ap;

	v->event = event;
	va_start(ap, fmt);
	vsnprintf(v->fields, sizeof(v->fields), fmt, ap);
	va_end(ap);
}

/* A line or a text, cut to its buffer like every line said (gen.c's say). */
static void words(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void words(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/* blame: rank is the one that failed (its exit code is the step's, the
 * others end 0), not only the one who says why. The text is set after. */
static void give_up(struct pm_verdict *v, int code, int rank, bool blame, int node)
{
	v->kind = PM_VERDICT_GIVE_UP;
	v->code = code;
	v->rank = rank;
	v->blame = blame && rank >= 0;
	v->node = node;
}

static void restart(struct pm_verdict *v, unsigned delay)
{
	v->kind = PM_VERDICT_RESTART;
	v->delay_ms = delay;
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

/* A node failed a check: while running, like a rank failure (the checks
 * run again before the restart); before launch or a restart, the end. */
static void health(const struct pm_gen *g, const struct pm_msg *m, struct pm_verdict *v)
{
	char esc[PM_WIRE_TEXT_MAX], lbl[64];
	const char *node = pm_gen_node_name(g, m->node);
	const char *when = g->phase == PM_PHASE_STARTING ? "before launch" :
			   g->phase == PM_PHASE_RUNNING ? "while running" : "before a restart";
	unsigned delay = 0;

	pm_json_escape(m->text, esc, sizeof(esc));
	seen(v, "health_failed", "\"gen\":%u,\"node\":\"%s\",\"check\":\"%s\",\"when\":\"%s\"",
	     m->gen, node, esc, when);
	label(g, lbl, sizeof(lbl));
	if (g->phase == PM_PHASE_RUNNING &&
	    pm_policy_decide(&g->cf.policy, g->restarts, true, &delay) == PM_DECIDE_RESTART) {
		restart(v, delay);
		words(v->tell, sizeof(v->tell), "procmgr: generation %u: node %s failed a "
			 "health check (%s); restarting %s", g->gen, node, m->text,
			 pm_gen_all_ranks(g));
		return;
	}
	give_up(v, 1, -1, false, m->node);
	words(v->text, sizeof(v->text), "procmgr: node %s failed a health check %s: %.900s; "
		 "ending the step (%s)", node, when, m->text, lbl);
}

static void cancel(const struct pm_gen *g, const struct pm_msg *m, struct pm_verdict *v)
{
	char esc[PM_WIRE_TEXT_MAX];

	pm_json_escape(m->text, esc, sizeof(esc));
	seen(v, "cancelled", "\"gen\":%u,\"node\":\"%s\",\"reason\":\"%s\"", g->gen,
	     pm_gen_node_name(g, m->node), esc);
	give_up(v, 128 + 15, -1, false, m->node);
	words(v->text, sizeof(v->text), "procmgr: the step was cancelled (%.900s on %s); "
		 "not restarting", m->text, pm_gen_node_name(g, m->node));
}

/* When a hung rank's supervisor judged it hung, on our clock: its EXIT says
 * how long ago (its stack and its stop came since), after its last beat.
 * An age past any stack bound and grace is not believed. */
#define PM_HUNG_AGE_MAX (15 * 60 * 1000ull)
uint64_t pm_decide_hung_at(const struct pm_msg *m, uint64_t t)
{
	char *end;
	uint64_t ago;

	strtoull(m->text, &end, 10);
	ago = strtoull(end, NULL, 10);
	return ago <= PM_HUNG_AGE_MAX && ago <= t ? t - ago : t;
}

/* rank_failed's fields and how the failure reads ("exited with 3 (...)"). */
static void rank_failed(const struct pm_gen *g, const struct pm_msg *m, uint64_t now,
			char *how, size_t hlen, struct pm_verdict *v)
{
	char beat[128] = "", esc[PM_WIRE_TEXT_MAX * 2], err[sizeof(esc) + 16] = "";
	char sum[PM_ERR_SUMMARY_MAX + 4];
	bool hung = m->count & PM_FLAG_HUNG, lost = m->count & PM_FLAG_LOST;
	bool late = g->phase != PM_PHASE_RUNNING || m->gen != g->gen;

	if (lost)
		snprintf(how, hlen, "lost its supervisor (%.100s)",
			 m->text_len ? m->text : "the task was killed");
	else
		pm_status_describe(m->status, hung, how, hlen);
	/* The command's own words, from its error file or its stderr. */
	if (!hung && !lost && !(m->count & PM_FLAG_EXEC) && m->text_len) {
		size_t n = strlen(how);
		pm_err_summary(m->text, sum, sizeof(sum));
		snprintf(how + n, hlen - n, " (%s)", sum);
		pm_json_escape(m->text, esc, sizeof(esc));
		snprintf(err, sizeof(err), ",\"error\":\"%s\"", esc);
	}
	if (hung)
		snprintf(beat, sizeof(beat), ",\"hung\":true,\"last_heartbeat_ms\":%llu,"
			 "\"judged_ms_ago\":%llu", strtoull(m->text, NULL, 10),
			 (unsigned long long)(now - pm_decide_hung_at(m, now)));
	seen(v, "rank_failed", "\"gen\":%u,\"rank\":%d,\"node\":\"%s\",\"status\":\"%s\"%s%s%s%s",
	     m->gen, m->rank, pm_gen_node_name(g, m->node), how, beat, err,
	     m->count & PM_FLAG_EXEC ? ",\"cannot_run\":true" : "",
	     late && !lost && !(hung && g->hang.pending) ? ",\"ignored\":true" : "");
}

void pm_decide_fail(const struct pm_gen *g, const struct pm_msg *m, uint64_t now,
		    struct pm_verdict *v)
{
	char how[128 + PM_ERR_SUMMARY_MAX], lbl[64];
	const char *node = pm_gen_node_name(g, m->node);
	bool hung = m->count & PM_FLAG_HUNG, lost = m->count & PM_FLAG_LOST;
	bool late = g->phase != PM_PHASE_RUNNING || m->gen != g->gen;
	unsigned delay = 0;

	verdict(v, PM_VERDICT_NONE);
	if (pm_gen_terminal(g))
		return;
	if (m->count & PM_FLAG_CANCEL) {
		cancel(g, m, v);
		return;
	}
	if (m->count & PM_FLAG_HEALTH) {
		health(g, m, v);
		return;
	}
	rank_failed(g, m, now, how, sizeof(how), v);
	if (hung && m->gen == g->gen && (g->phase == PM_PHASE_RUNNING || g->hang.pending)) {
		/* Stop everything, then blame the oldest heartbeat (pm_decide_hang). */
		v->kind = PM_VERDICT_WAIT;
		return;
	}
	/* A lost supervisor cannot be restarted in place, stopping or not. */
	if (late && !lost)
		return; /* this generation is already being stopped */
	label(g, lbl, sizeof(lbl));
	if (m->count & PM_FLAG_EXEC) {
		/* Not found, not executable: every restart would end the same. */
		give_up(v, pm_status_exit_code(m->status), m->rank, true, m->node);
		words(v->text, sizeof(v->text), "procmgr: rank %d on %s cannot run its command "
			 "(%s) in generation %u; not restarting: it would fail the same way (%s)",
			 m->rank, node, how, m->gen, lbl);
		return;
	}
	if (!lost &&
	    pm_policy_decide(&g->cf.policy, g->restarts, true, &delay) == PM_DECIDE_RESTART) {
		restart(v, delay);
		words(v->tell, sizeof(v->tell), "procmgr: generation %u: rank %d on %s %s; "
			 "restarting %s (restart %d of %d)", m->gen, m->rank, node, how,
			 pm_gen_all_ranks(g), g->restarts + 1, g->cf.policy.max_restarts);
		return;
	}
	/* The failed rank says why; for a lost supervisor, the printer. */
	give_up(v, hung || lost ? 1 : pm_status_exit_code(m->status),
		lost ? pm_gen_printer(g, m->rank) : m->rank, !lost, m->node);
	if (lost || g->cf.policy.mode == PM_RESTART_NEVER)
		snprintf(v->text, sizeof(v->text),
			 "procmgr: rank %d on %s %s in generation %u; not restarting (%s)",
			 m->rank, node, how, m->gen, lbl);
	else
		snprintf(v->text, sizeof(v->text),
			 "procmgr: rank %d on %s %s in generation %u; giving up after %d "
			 "restart%s (%s)", m->rank, node, how, m->gen, g->restarts,
			 g->restarts == 1 ? "" : "s", lbl);
	if (!lost)
		root_cause(v->text, sizeof(v->text), m, node);
}

/* "rank 3 on n2 hung first (...); ranks 0, 1 followed", or the tie's words
 * (common/blame.h). */
static void hang_text(const struct pm_gen *g, const struct pm_blame *b, int blamed_node,
		      const struct pm_stack_verdict *sv, char *buf, size_t len)
{
	const struct pm_hang *h = &g->hang;
	int follower[PM_HANG_LIST];

	memcpy(follower, h->follower, sizeof(follower));
	pm_blame_text(b, h->rank, pm_gen_node_name(g, h->node),
		      blamed_node >= 0 ? pm_gen_node_name(g, blamed_node) : "",
		      follower, h->followers < PM_HANG_LIST ? h->followers : PM_HANG_LIST,
		      h->followers, h->followers ? h->next_beat - h->beat : 0, sv, buf, len);
}

bool pm_decide_hang_ask(const struct pm_gen *g)
{
	const struct pm_hang *h = &g->hang;

	return h->followers > 0;
}

/* At STOPPED after a hang: now that every hung rank has said so and every
 * stack is in, blame (common/blame.h) and decide. */
void pm_decide_hang(const struct pm_gen *g, const struct pm_stack_verdict *sv, int onode,
		    struct pm_verdict *v)
{
	char what[2048], lbl[64], list[256];
	const struct pm_hang *h = &g->hang;
	unsigned delay = 0;
	size_t off = 0;
	int i, n = h->followers < PM_HANG_LIST ? h->followers : PM_HANG_LIST;
	uint64_t lead = h->followers ? h->next_beat - h->beat : 0;
	struct pm_blame b;

	verdict(v, PM_VERDICT_NONE);
	b = pm_blame_hang(h->rank, h->followers, lead, PM_BLAME_RESOLUTION_MS, sv ? sv->rank : -1);
	v->blamed = b.rank;
	v->blamed_by = (int)b.by;
	v->blamed_node = b.by == PM_BLAME_STACK ? onode : b.by == PM_BLAME_HEARTBEAT ? h->node : -1;
	hang_text(g, &b, v->blamed_node, sv, what, sizeof(what));
	list[0] = '\0';
	for (i = 0; i < n && off < sizeof(list); i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%d", i ? "," : "",
					h->follower[i]);
	seen(v, "hang", "\"gen\":%u,\"rank\":%d,\"node\":\"%s\",\"followers\":[%s],"
	     "\"nfollowers\":%d,\"lead_ms\":%llu,\"blame\":\"%s\",\"blamed\":%d,"
	     "\"resolution_ms\":%u", g->gen, h->rank, pm_gen_node_name(g, h->node), list,
	     h->followers, (unsigned long long)lead, pm_blame_name(b.by), b.rank,
	     PM_BLAME_RESOLUTION_MS);
	label(g, lbl, sizeof(lbl));
	if (pm_policy_decide(&g->cf.policy, g->restarts, true, &delay) == PM_DECIDE_RESTART) {
		restart(v, delay);
		words(v->tell, sizeof(v->tell), "procmgr: generation %u: %s; restarting %s "
			 "(restart %d of %d)", g->gen, what, pm_gen_all_ranks(g),
			 g->restarts + 1, g->cf.policy.max_restarts);
		return;
	}
	give_up(v, 1, b.rank, b.rank >= 0, v->blamed_node);
	if (g->cf.policy.mode == PM_RESTART_NEVER)
		words(v->text, sizeof(v->text), "procmgr: generation %u: %s; not restarting (%s)",
			 g->gen, what, lbl);
	else
		words(v->text, sizeof(v->text), "procmgr: generation %u: %s; giving up after %d "
			 "restart%s (%s)", g->gen, what, g->restarts, g->restarts == 1 ? "" : "s",
			 lbl);
}

void pm_decide_lost(const struct pm_gen *g, int node, const char *why, struct pm_verdict *v)
{
	char esc[512];

	verdict(v, PM_VERDICT_NONE);
	if (pm_gen_terminal(g))
		return;
	pm_json_escape(why, esc, sizeof(esc));
	seen(v, "node_lost", "\"gen\":%u,\"node\":\"%s\",\"reason\":\"%s\"", g->gen,
	     pm_gen_node_name(g, node), esc);
	v->lost = node;
	give_up(v, 1, pm_gen_printer(g, -1), false, node);
	words(v->text, sizeof(v->text), "procmgr: lost node %s (%.700s); ending the step",
		 pm_gen_node_name(g, node), why);
}

void pm_decide_done(const struct pm_gen *g, struct pm_verdict *v)
{
	unsigned delay = 0;

	verdict(v, PM_VERDICT_FINISH);
	seen(v, "generation_succeeded", "\"gen\":%u", g->gen);
	if (pm_policy_decide(&g->cf.policy, g->restarts, false, &delay) == PM_DECIDE_RESTART) {
		restart(v, delay); /* always:N, without a word */
		return;
	}
	words(v->tell, sizeof(v->tell), "procmgr: all %d ranks succeeded in generation %u",
		 pm_gen_world(g), g->gen);
}

/* "pmnode2 (why), pmnode5 (why)" and "pmnode2,pmnode5": the nodes lost,
 * with r, the one being decided, last (as once applied). */
static void lost_lists(const struct pm_gen *g, const struct pm_repl *r, char *named,
		       size_t nlen, char *list, size_t llen)
{
	size_t a = 0, b = 0;
	int i;

	named[0] = list[0] = '\0';
	for (i = 0; i <= g->nrepl; i++) {
		const struct pm_repl *x = i < g->nrepl ? &g->repl[i] : r;
		const char *name = pm_gen_node_name(g, x->lost);
		if (a < nlen)
			a += (size_t)snprintf(named + a, nlen - a, "%s%s (%s)", i ? ", " : "", name,
					      x->why);
		if (b < llen)
			b += (size_t)snprintf(list + b, llen - b, "%s%s", i ? "," : "", name);
	}
}

/* The slot table's change, and the nodes to avoid next time with why. */
static void replacement(const struct pm_gen *g, const struct pm_repl *r, const char *why,
			struct pm_verdict *v)
{
	char named[2048];

	v->repl_set = true;
	v->repl = *r;
	v->avoid_set = true;
	lost_lists(g, r, named, sizeof(named), v->avoid, sizeof(v->avoid));
	snprintf(v->avoid_why, sizeof(v->avoid_why), "%s", why);
}

/* No spare or no restart left, or most of the step gone: the end, naming
 * every node lost and what the job script should avoid next time. */
static void give_up_lost(const struct pm_gen *g, const struct pm_repl *r, const char *what,
			 const char *lbl, struct pm_verdict *v)
{
	char named[2048], list[1024];

	replacement(g, r, what, v);
	lost_lists(g, r, named, sizeof(named), list, sizeof(list));
	give_up(v, 1, pm_gen_printer(g, -1), false, -1);
	words(v->text, sizeof(v->text), "procmgr: %s; ending the step (%s). Nodes lost: "
		 "%.1500s. Next time: --exclude=%.1000s", what, lbl, named, list);
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

/* With spares: the node is out of the step for good, a spare takes its
 * slot, and every rank starts the next generation together. */
void pm_decide_replace(const struct pm_gen *g, int node, const char *why,
		       struct pm_verdict *v)
{
	struct pm_repl r = { .lost = node, .slot = pm_gen_slot(g, node), .spare = -1 };
	char esc[512], lbl[64], what[1024], ranks[64];
	const char *name = pm_gen_node_name(g, node);
	bool self = node == g->cf.node;
	unsigned delay = 0;
	int i, left;

	verdict(v, PM_VERDICT_NONE);
	for (i = 0; i < g->nrepl; i++)
		if (g->repl[i].lost == node)
			return; /* said by two of its neighbours */
	snprintf(r.why, sizeof(r.why), "%s", why);
	pm_json_escape(why, esc, sizeof(esc));
	seen(v, "node_lost", "\"gen\":%u,\"node\":\"%s\",\"reason\":\"%s\",\"slot\":%d",
	     g->gen, name, esc, r.slot);
	v->lost = node;
	label(g, lbl, sizeof(lbl));
	if (r.slot < 0) {
		/* A spare in reserve: one fewer, nothing to restart. */
		v->kind = PM_VERDICT_REPLACE;
		replacement(g, &r, why, v);
		left = pm_gen_spares_left_but(g, node, -1);
		words(v->tell, sizeof(v->tell), "procmgr: spare node %s lost (%s); %d spare%s "
			 "left", name, why, left, left == 1 ? "" : "s");
		if (self)
			words(v->leave, sizeof(v->leave), "procmgr: this spare node is out of "
				 "the step");
		return;
	}
	r.spare = pm_gen_free_spare(g);
	if (r.spare < 0 ||
	    pm_policy_decide(&g->cf.policy, g->restarts, true, &delay) != PM_DECIDE_RESTART) {
		snprintf(what, sizeof(what), "generation %u: lost node %s (%s); %s", g->gen, name,
			 why, r.spare < 0 ? "no spare left" : "no restart left");
		r.spare = -1;
		give_up_lost(g, &r, what, lbl, v);
		return;
	}
	if (2 * (g->cf.nnodes - g->nexcluded - (pm_gen_excluded(g, node) ? 0 : 1)) <= g->cf.nnodes &&
	    g->cf.nnodes > 2) {
		snprintf(what, sizeof(what), "lost node %s (%s), and with it most of the step: "
			 "this side may be the one cut off", name, why);
		give_up_lost(g, &r, what, lbl, v);
		return;
	}
	v->kind = PM_VERDICT_REPLACE;
	v->delay_ms = delay;
	replacement(g, &r, why, v);
	left = pm_gen_spares_left_but(g, node, r.spare);
	slot_ranks(g, r.slot, ranks, sizeof(ranks));
	words(v->replaced, sizeof(v->replaced), "\"gen\":%u,\"node\":\"%s\",\"spare\":\"%s\","
		 "\"slot\":%d,\"replacement\":%d,\"spares_left\":%d", g->gen, name,
		 pm_gen_node_name(g, r.spare), r.slot, g->nrepl + 1, left);
	words(v->tell, sizeof(v->tell), "procmgr: generation %u: lost node %s (%s); its %s "
		 "move to spare %s; restarting %s (restart %d of %d, %d spare%s left)", g->gen,
		 name, why, ranks, pm_gen_node_name(g, r.spare), pm_gen_all_ranks(g),
		 g->restarts + 1, g->cf.policy.max_restarts, left, left == 1 ? "" : "s");
	if (self) /* the root itself: it hands over, its children choose the next */
		words(v->leave, sizeof(v->leave), "procmgr: this node (the root) is out of the "
			 "step");
}
