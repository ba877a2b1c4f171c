/* The slow-node detector's I/O (the rules: common/slowsum.h, common/slow.h).
 *
 * Every node: its supervisors' PM_MSG_RANK_STEP (a heartbeat's new step)
 * and its children's PM_MSG_SLOW summaries go into one pm_slownode; every
 * interval (--procmgr-slow), on a wall-clock grid common to all nodes
 * (pm_slow_phase_delay), it sends one summary up; the root judges half an
 * interval later. The root feeds its
 * own and its children's summaries to pm_slowroot and, at each interval
 * while the generation runs, acts on the changes of verdict: the `slow` and
 * `slow_cleared` events (metrics count them), a line on srun's stderr,
 * PM_MSG_SLOW down so that the node's status says SLOW, and with
 * --procmgr-evict-slow and a free spare, the node treated as lost at the
 * next step boundary (common/slowsum.h, pm_slowevict). */
#include "step.h"
#include "gen_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/slowsum.h"
#include "common/text.h"
#include "io/sys.h"

struct pm_slowlink {
	struct pm_slownode node;
	uint32_t gen;            /* of the steps in node */
	struct pm_watch tick_w;
	bool root_ok;            /* the root's detector is set up */
	struct pm_slowroot root;
	uint32_t root_gen;
	bool *active;
	uint32_t expected;       /* the root: nodes that run ranks */
	char state[64];          /* this node's verdict for status, "" none */
	uint64_t root_step;      /* the root's own ranks' last step + 1, 0: none */
	struct pm_slowevict evict; /* a slow node waiting for the step boundary */
	char evict_why[PM_REPL_WHY];
	struct pm_watch judge_w;   /* the root's judgement, half an interval after */
	struct pm_watch due_w;     /* at once, out of the rank message's handler */
	long due;                  /* the node due, -1 none */
};

static void emit_up(void *arg, const char *text)
{
	struct pm_step *s = arg;
	struct pm_msg m;
	char err[160];

	if (s->gen.root) {
		/* The root's own ranks: only steps of the running generation. */
		if (s->slow->root_ok && s->slow->gen == s->gen.gen &&
		    pm_slowroot_add(&s->slow->root, text, s->slow->expected, err, sizeof(err)))
			pm_log(s, "%s", err);
		return;
	}
	pm_msg_init(&m, PM_MSG_SLOW);
	m.gen = s->slow->gen;
	m.node = s->node;
	pm_msg_set_text(&m, text);
	pm_step_ops.send_up(s, &m);
}

/* The nodes that run ranks now: a step is complete with all of them. */
static uint32_t active_nodes(struct pm_step *s)
{
	struct pm_slowlink *l = s->slow;
	uint32_t n = 0;

	for (int i = 0; i < s->nnodes; i++) {
		l->active[i] = !pm_gen_excluded(&s->gen, i) &&
			       (!pm_gen_spares(&s->gen) || pm_gen_slot(&s->gen, i) >= 0);
		n += l->active[i];
	}
	return n;
}

static void tell_down(struct pm_step *s, const struct pm_slow_verdict *v, const char *state)
{
	struct pm_msg m;

	pm_msg_init(&m, PM_MSG_SLOW);
	m.gen = s->gen.gen;
	m.node = (int32_t)v->node;
	m.status = v->change == PM_SLOW_FLAGGED;
	pm_msg_set_text(&m, state);
	pm_step_ops.send_down(s, &m);
	if ((int)v->node == s->node)
		snprintf(s->slow->state, sizeof(s->slow->state), "%s", m.status ? state : "");
}

/* The eviction decided at a verdict, now that the ranks are between steps:
 * if it still can be (the generation runs, a spare is free, the node still
 * runs ranks). */
static void evict_now(struct pm_step *s, long node)
{
	struct pm_gen *g = &s->gen;
	struct pm_slowlink *l = s->slow;

	if (node < 0 || pm_gen_excluded(g, (int)node))
		return; /* lost meanwhile: replaced as a lost node is */
	if (g->phase != PM_PHASE_RUNNING || pm_gen_terminal(g))
		return; /* the generation ended: its next starts without verdicts */
	if (pm_gen_free_spare(g) < 0) {
		pm_gen_tell(g, "procmgr: slow node %s was not replaced: no free spare any more",
			    pm_gen_node_name(g, (int)node));
		return;
	}
	pm_slowroot_reset_node(&l->root, (uint32_t)node);
	pm_gen_lost(g, (int)node, l->evict_why);
	pm_gen_progress(g);
}

static void verdict(struct pm_step *s, const struct pm_slow_verdict *v)
{
	struct pm_gen *g = &s->gen;
	const char *name = pm_gen_node_name(g, (int)v->node);
	const char *ev = v->kind == PM_SLOW_COMPUTE ? "compute" : "phase";
	char fields[512], line[512], state[64], esc[128];
	bool flagged = v->change == PM_SLOW_FLAGGED;
	bool evict = false;

	if (v->kind == PM_SLOW_COMPUTE)
		snprintf(line, sizeof(line), "its ranks' compute time per step %.2fx the job's median "
			 "(evidence: compute time reported by the ranks; slow in %u of %u intervals)",
			 v->ratio, v->slow, v->of);
	else
		snprintf(line, sizeof(line), "last to reach %.0f%% of the steps (evidence: heartbeat "
			 "phase, weaker than compute time; in %u of %u intervals)",
			 v->ratio * 100, v->slow, v->of);
	snprintf(state, sizeof(state), "%s:%.2f", ev, v->ratio);
	pm_json_escape(name, esc, sizeof(esc));
	snprintf(fields, sizeof(fields),
		 "\"gen\":%u,\"node\":\"%s\",\"evidence\":\"%s\",\"ratio\":%.3f,"
		 "\"intervals\":%u,\"of\":%u", g->gen, esc, ev, v->ratio, v->slow, v->of);
	evict = flagged && s->opts.evict_slow && pm_gen_spares(g) && pm_gen_free_spare(g) >= 0 &&
		(int)v->node != s->node && g->phase == PM_PHASE_RUNNING;
	if (evict)
		strncat(fields, ",\"evicted\":true", sizeof(fields) - strlen(fields) - 1);
	pm_step_ops.event(s, flagged ? "slow" : "slow_cleared", fields);
	tell_down(s, v, state);
	if (!flagged) {
		pm_gen_tell(g, "procmgr: node %s is no longer slow: %s", name, line);
		return;
	}
	/* One eviction at a time: a second slow node waits for the next
	 * verdict (the first's may take the last spare). */
	if (evict && pm_slowevict_arm(&s->slow->evict, v->node, s->slow->root_step) < 0)
		evict = false;
	pm_gen_tell(g, "procmgr: node %s is slow: %s%s", name, line,
		    evict ? "; replacing it with a spare at the next step boundary" :
		    s->opts.evict_slow ? "; no spare to replace it now, only reported" : "");
	if (evict)
		snprintf(s->slow->evict_why, sizeof(s->slow->evict_why), "slow: %s %.2f%s", ev,
			 v->kind == PM_SLOW_COMPUTE ? v->ratio : v->ratio * 100,
			 v->kind == PM_SLOW_COMPUTE ? "x the median" : "% of steps last");
}

static void root_tick(struct pm_step *s)
{
	struct pm_slowlink *l = s->slow;
	struct pm_slow_verdict v[16];
	size_t nv;

	if (!l->root_ok)
		return;
	if (l->root_gen != s->gen.gen) {
		/* Steps of another generation do not compare. */
		l->root_gen = s->gen.gen;
		pm_slowroot_reset(&l->root);
	}
	if (s->gen.phase != PM_PHASE_RUNNING || pm_gen_terminal(&s->gen)) {
		pm_slowevict_cancel(&l->evict);
		return;
	}
	/* No step boundary seen since the verdict: evicted now (slowsum.h). */
	evict_now(s, pm_slowevict_tick(&l->evict));
	nv = pm_slowroot_tick(&l->root, l->active, v, sizeof(v) / sizeof(v[0]));
	if (s->opts.verbose) {
		/* Each interval's samples in procmgrd's log: what a threshold is
		 * chosen from (bench/README.md, Slow nodes). */
		char line[1024];
		size_t off = 0;
		line[0] = '\0';
		for (int i = 0; i < s->nnodes && off < sizeof(line) - 64; i++) {
			const struct pm_slow_sample *x = &l->root.samples[i];
			off += (size_t)snprintf(line + off, sizeof(line) - off, " %s=%s:%.3f/%u",
						s->names[i],
						x->kind == PM_SLOW_COMPUTE ? "c" :
						x->kind == PM_SLOW_PHASE ? "p" : "-",
						x->kind == PM_SLOW_COMPUTE ? x->compute_ms :
						x->steps ? (double)x->last / x->steps : 0, x->steps);
		}
		pm_log(s, "slow interval %llu:%s", (unsigned long long)l->root.intervals, line);
	}
	for (size_t k = 0; k < nv && !pm_gen_terminal(&s->gen); k++)
		verdict(s, &v[k]);
}

/* The root's interval changes generation: steps of another do not compare,
 * a pending eviction is for a generation that is gone. */
static void root_gen_check(struct pm_step *s)
{
	struct pm_slowlink *l = s->slow;

	l->expected = active_nodes(s);
	if (l->root_gen != s->gen.gen) {
		l->root_gen = s->gen.gen;
		pm_slowroot_reset(&l->root);
		pm_slowevict_cancel(&l->evict);
		l->root_step = 0;
	}
}

/* The interval's end on the wall-clock grid: every node's summary up. */
static void on_tick(struct pm_loop *lp, struct pm_watch *w, uint32_t ev)
{
	struct pm_step *s = w->arg;
	struct pm_slowlink *l = s->slow;
	(void)lp;
	(void)ev;

	pm_timer_ack(w->fd);
	if (s->gen.root && l->root_ok)
		root_gen_check(s);
	pm_slownode_flush(&l->node, PM_WIRE_TEXT_MAX + 1, emit_up, s);
}

/* Half an interval later: the root judges the interval whose summaries
 * have come up by now. */
static void on_judge(struct pm_loop *lp, struct pm_watch *w, uint32_t ev)
{
	struct pm_step *s = w->arg;
	(void)lp;
	(void)ev;

	pm_timer_ack(w->fd);
	if (!s->gen.root || !s->slow->root_ok)
		return;
	root_gen_check(s);
	root_tick(s);
}

static void on_due(struct pm_loop *lp, struct pm_watch *w, uint32_t ev)
{
	struct pm_step *s = w->arg;
	long node = s->slow->due;
	(void)lp;
	(void)ev;

	pm_timer_ack(w->fd);
	s->slow->due = -1;
	evict_now(s, node);
}

int pm_slowlink_init(struct pm_step *s)
{
	unsigned interval = pm_opts_slow_interval(&s->opts);
	struct pm_slowlink *l;
	struct pm_slow_cfg cfg;
	char err[160];
	uint64_t now;

	if (!interval)
		return 0;
	l = calloc(1, sizeof(*l));
	if (!l || pm_slownode_init(&l->node, (uint32_t)s->node, (unsigned)s->ntasks_local)) {
		free(l);
		return -1;
	}
	l->active = calloc((size_t)s->nnodes, sizeof(*l->active));
	if (!l->active) {
		pm_slownode_free(&l->node);
		free(l);
		return -1;
	}
	s->slow = l;
	pm_slow_cfg_default(&cfg);
	cfg.threshold = s->opts.slow_threshold_pct / 100.0;
	/* Every node may become the root (spares): each can judge. */
	if (pm_slowroot_init(&l->root, &cfg, (uint32_t)s->nnodes, err, sizeof(err)))
		pm_log(s, "slow-node detection is off: %s", err);
	else
		l->root_ok = true;
	l->due = -1;
	l->tick_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_tick, .arg = s };
	l->judge_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_judge, .arg = s };
	l->due_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_due, .arg = s };
	now = (uint64_t)(pm_wall_s() * 1000);
	if (l->tick_w.fd < 0 || pm_loop_add(s->loop, &l->tick_w, EPOLLIN) ||
	    pm_timer_set(l->tick_w.fd, pm_slow_phase_delay(now, interval, 0), interval) ||
	    l->judge_w.fd < 0 || pm_loop_add(s->loop, &l->judge_w, EPOLLIN) ||
	    pm_timer_set(l->judge_w.fd, pm_slow_phase_delay(now, interval, interval / 2), interval) ||
	    l->due_w.fd < 0 || pm_loop_add(s->loop, &l->due_w, EPOLLIN))
		return -1;
	return 0;
}

void pm_slowlink_free(struct pm_step *s)
{
	struct pm_slowlink *l = s->slow;

	if (!l)
		return;
	if (l->tick_w.fd >= 0) {
		pm_loop_del(s->loop, &l->tick_w);
		close(l->tick_w.fd);
	}
	if (l->judge_w.fd > 0) {
		pm_loop_del(s->loop, &l->judge_w);
		close(l->judge_w.fd);
	}
	if (l->due_w.fd > 0) {
		pm_loop_del(s->loop, &l->due_w);
		close(l->due_w.fd);
	}
	pm_slownode_free(&l->node);
	if (l->root_ok)
		pm_slowroot_free(&l->root);
	free(l->active);
	free(l);
	s->slow = NULL;
}

void pm_slowlink_rank(struct pm_step *s, int lrank, const struct pm_msg *m)
{
	struct pm_slowlink *l = s->slow;
	uint64_t step, at;
	double compute;

	if (!l || pm_rank_step_parse(m->text, &step, &at, &compute))
		return;
	if (m->gen != l->gen) {
		l->gen = m->gen;
		pm_slownode_reset(&l->node);
	}
	pm_slownode_beat(&l->node, (unsigned)lrank, step, at, compute);
	if (s->gen.root && l->root_ok && m->gen == s->gen.gen) {
		/* The root's own rank between steps: a pending eviction's moment. */
		if (step + 1 > l->root_step)
			l->root_step = step + 1;
		long node = pm_slowevict_step(&l->evict, step + 1);
		/* Not from within the rank connection's handler: the eviction
		 * stops this node's ranks too. */
		if (node >= 0 && pm_timer_set(l->due_w.fd, 1, 0) == 0)
			l->due = node;
		else
			evict_now(s, node);
	}
}


int pm_slowlink_child(struct pm_step *s, const struct pm_msg *m)
{
	struct pm_slowlink *l = s->slow;
	char err[160];

	if (m->type != PM_MSG_SLOW)
		return 0;
	if (!l)
		return 1;
	if (s->gen.root) {
		if (!l->root_ok || m->gen != s->gen.gen)
			return 1;
		if (l->root_gen != s->gen.gen) {
			l->root_gen = s->gen.gen;
			pm_slowroot_reset(&l->root);
		}
		l->expected = active_nodes(s);
		if (pm_slowroot_add(&l->root, m->text, l->expected, err, sizeof(err)))
			pm_log(s, "node %d: %s", m->node, err);
		return 1;
	}
	if (m->gen != l->gen) {
		/* Not this node's generation (yet): passed up as it is. */
		pm_step_ops.send_up(s, m);
		return 1;
	}
	if (pm_slownode_merge(&l->node, m->text, err, sizeof(err)))
		pm_log(s, "node %d: %s", m->node, err);
	return 1;
}

int pm_slowlink_parent(struct pm_step *s, const struct pm_msg *m)
{
	if (m->type != PM_MSG_SLOW)
		return 0;
	pm_step_ops.send_down(s, m);
	if (s->slow && m->node == s->node)
		snprintf(s->slow->state, sizeof(s->slow->state), "%.63s", m->status ? m->text : "");
	return 1;
}

const char *pm_slowlink_state(struct pm_step *s)
{
	return s->slow && s->slow->state[0] ? s->slow->state : NULL;
}
