#include "step.h"

#include "io/auth.h"
#include "common/tree.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static void node_stop(struct pm_step *s, uint32_t gen);
static void node_start(struct pm_step *s, uint32_t gen);
static void node_finish(struct pm_step *s, uint32_t gen);
static void node_abort(struct pm_step *s, const struct pm_msg *m);
static void check_done(struct pm_step *s);
static void check_stopped(struct pm_step *s);
static void root_health(struct pm_step *s, const struct pm_msg *m);
static void report_fail(struct pm_step *s, const struct pm_msg *m);
static void start_next(struct pm_step *s);

void pm_log(struct pm_step *s, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "procmgrd[%s %u.%u]: ", s->names[s->node], s->job, s->stepid);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const char *node_name(struct pm_step *s, int node)
{
	return node >= 0 && node < s->nnodes ? s->names[node] : "?";
}

/* ---- messages up the tree ---- */

static void send_up(struct pm_step *s, const struct pm_msg *m)
{
	if (s->parent && s->parent_ok) {
		if (pm_conn_send(s->parent, m))
			pm_log(s, "cannot send %s to the parent: %m", pm_msg_name(m->type));
		return;
	}
	if (s->upq_len == s->upq_cap) {
		int cap = s->upq_cap ? s->upq_cap * 2 : 8;
		struct pm_msg *q = realloc(s->upq, (size_t)cap * sizeof(*q));
		if (!q) {
			pm_log(s, "out of memory queueing %s", pm_msg_name(m->type));
			return;
		}
		s->upq = q;
		s->upq_cap = cap;
	}
	s->upq[s->upq_len++] = *m;
}

static void send_down(struct pm_step *s, const struct pm_msg *m)
{
	int i;
	for (i = 0; i < s->nchildren; i++)
		if (s->children[i])
			pm_conn_send(s->children[i], m);
}

static void send_ranks(struct pm_step *s, const struct pm_msg *m)
{
	int i;
	for (i = 0; i < s->ntasks_local; i++)
		if (s->ranks[i].c)
			pm_conn_send(s->ranks[i].c, m);
}

static bool is_root(const struct pm_step *s)
{
	return s->node == 0;
}

static bool terminal(const struct pm_step *s)
{
	return s->phase == PM_PHASE_FINISHED || s->phase == PM_PHASE_ABORTED;
}

/* --procmgr-verbose: the root's decisions on srun's stderr, through the
 * supervisor of rank 0, which is on this node. */
static void say(struct pm_step *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say(struct pm_step *s, const char *fmt, ...)
{
	struct pm_msg m;
	char buf[1024];
	va_list ap;
	int i;

	if (!s->opts.verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	pm_msg_init(&m, PM_MSG_PRINT);
	pm_msg_set_text(&m, buf);
	for (i = 0; i < s->ntasks_local; i++)
		if (s->ranks[i].c && s->ranks[i].grank == 0)
			pm_conn_send(s->ranks[i].c, &m);
}

/* ---- root: decisions ---- */

static void restart_label(struct pm_step *s, char *buf, size_t len)
{
	if (s->policy.mode == PM_RESTART_NEVER)
		snprintf(buf, len, "restart=never");
	else
		snprintf(buf, len, "restart=%s:%d", pm_restart_name(s->policy.mode),
			 s->policy.max_restarts);
}

static void root_abort(struct pm_step *s, int code, int rank, int node,
		       const char *text)
{
	struct pm_msg m;
	char esc[2048], f[2300];

	pm_json_escape(text, esc, sizeof(esc));
	snprintf(f, sizeof(f), "\"gen\":%u,\"exit_code\":%d,\"message\":\"%s\"",
		 s->gen, code, esc);
	pm_event(&s->events, "give_up", f);
	pm_msg_init(&m, PM_MSG_ABORT);
	m.gen = s->gen;
	m.status = code;
	m.rank = rank;
	m.node = node;
	pm_msg_set_text(&m, text);
	node_abort(s, &m);
}

/* A node failed a check: while running, like a rank failure (the checks
 * run again before the restart); between generations, the end. */
static void root_health(struct pm_step *s, const struct pm_msg *m)
{
	char esc[1024], f[1200], text[1200], label[64];
	unsigned delay = 0;
	const char *when = s->phase == PM_PHASE_STARTING ? "before launch" :
			   s->phase == PM_PHASE_RUNNING ? "while running" : "before a restart";

	pm_json_escape(m->text, esc, sizeof(esc));
	snprintf(f, sizeof(f), "\"gen\":%u,\"node\":\"%s\",\"check\":\"%s\",\"when\":\"%s\"",
		 m->gen, node_name(s, m->node), esc, when);
	pm_event(&s->events, "health_failed", f);
	if (terminal(s))
		return;
	restart_label(s, label, sizeof(label));
	if (s->phase == PM_PHASE_RUNNING &&
	    pm_policy_decide(&s->policy, s->restarts, true, &delay) == PM_DECIDE_RESTART) {
		s->fail_t0 = pm_now_ms();
		say(s, "procmgr: generation %u: node %s failed a health check (%s); "
		       "restarting all %d ranks", s->gen, node_name(s, m->node), m->text,
		    s->ntasks);
		node_stop(s, s->gen);
		return;
	}
	snprintf(text, sizeof(text), "procmgr: node %s failed a health check %s: %.900s; "
		 "ending the step (%s)", node_name(s, m->node), when, m->text, label);
	root_abort(s, 1, -1, m->node, text);
}

static void root_fail(struct pm_step *s, const struct pm_msg *m)
{
	char how[128], label[64], text[1024], f[512];
	bool hung = m->count & PM_FLAG_HUNG;
	bool lost = m->count & PM_FLAG_LOST;
	unsigned delay = 0;
	enum pm_decision d;

	if (m->count & PM_FLAG_HEALTH) {
		root_health(s, m);
		return;
	}
	pm_status_describe(m->status, hung, how, sizeof(how));
	if (lost)
		snprintf(how, sizeof(how), "lost its supervisor (the task was killed)");
	snprintf(f, sizeof(f),
		 "\"gen\":%u,\"rank\":%d,\"node\":\"%s\",\"status\":\"%s\"%s%s",
		 m->gen, m->rank, node_name(s, m->node), how,
		 hung ? ",\"hung\":true" : "",
		 s->phase != PM_PHASE_RUNNING || m->gen != s->gen ? ",\"ignored\":true" : "");
	pm_event(&s->events, "rank_failed", f);
	if (s->phase != PM_PHASE_RUNNING || m->gen != s->gen)
		return; /* this generation is already being stopped */

	s->fail_t0 = pm_now_ms();
	restart_label(s, label, sizeof(label));
	d = lost ? PM_DECIDE_ABORT :
		   pm_policy_decide(&s->policy, s->restarts, true, &delay);
	if (d == PM_DECIDE_RESTART) {
		say(s, "procmgr: generation %u: rank %d on %s %s; restarting all %d ranks "
		       "(restart %d of %d)", m->gen, m->rank, node_name(s, m->node), how,
		    s->ntasks, s->restarts + 1, s->policy.max_restarts);
		node_stop(s, s->gen);
		return;
	}
	if (lost || s->policy.mode == PM_RESTART_NEVER)
		snprintf(text, sizeof(text),
			 "procmgr: rank %d on %s %s in generation %u; not restarting (%s)",
			 m->rank, node_name(s, m->node), how, m->gen, label);
	else
		snprintf(text, sizeof(text),
			 "procmgr: rank %d on %s %s in generation %u; giving up after %d "
			 "restart%s (%s)", m->rank, node_name(s, m->node), how, m->gen,
			 s->restarts, s->restarts == 1 ? "" : "s", label);
	root_abort(s, hung || lost ? 1 : pm_status_exit_code(m->status), m->rank, m->node,
		   text);
}

static void root_generation_done(struct pm_step *s)
{
	unsigned delay = 0;
	char f[128];

	snprintf(f, sizeof(f), "\"gen\":%u", s->gen);
	pm_event(&s->events, "generation_succeeded", f);
	if (pm_policy_decide(&s->policy, s->restarts, false, &delay) == PM_DECIDE_RESTART) {
		s->fail_t0 = pm_now_ms();
		node_stop(s, s->gen);
		return;
	}
	pm_event(&s->events, "finish", f);
	say(s, "procmgr: all %d ranks succeeded in generation %u", s->ntasks, s->gen);
	node_finish(s, s->gen);
}

static void root_stopped(struct pm_step *s)
{
	unsigned delay = 0;
	char f[128];

	pm_policy_decide(&s->policy, s->restarts, true, &delay);
	snprintf(f, sizeof(f), "\"gen\":%u,\"stop_ms\":%llu,\"delay_ms\":%u", s->gen,
		 (unsigned long long)(pm_now_ms() - s->stop_t0), delay);
	pm_event(&s->events, "stopped", f);
	s->phase = PM_PHASE_DELAY;
	if (delay)
		pm_timer_set(s->delay_w.fd, delay, 0);
	else
		start_next(s);
}

static void delay_expired(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_step *s = w->arg;
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	if (s->phase == PM_PHASE_DELAY)
		start_next(s);
}

static void start_next(struct pm_step *s)
{
	char f[128];

	s->restarts++;
	snprintf(f, sizeof(f), "\"gen\":%u,\"restart\":%d,\"since_failure_ms\":%llu",
		 s->gen + 1, s->restarts,
		 (unsigned long long)(pm_now_ms() - s->fail_t0));
	pm_event(&s->events, "start", f);
	say(s, "procmgr: starting generation %u on %d nodes", s->gen + 1, s->nnodes);
	node_start(s, s->gen + 1);
}

/* ---- every node: the generation's life ---- */

static void node_stop(struct pm_step *s, uint32_t gen)
{
	struct pm_msg m;
	int i;

	/* A node that joined late may not have seen generation gen start. */
	if (s->phase != PM_PHASE_RUNNING || gen < s->gen)
		return;
	s->gen = gen;
	s->phase = PM_PHASE_STOPPING;
	s->checked = false;
	s->stop_t0 = pm_now_ms();
	s->stopped_children = 0;
	s->stopped_sent = false;
	pm_msg_init(&m, PM_MSG_STOP);
	m.gen = gen;
	send_down(s, &m);
	for (i = 0; i < s->ntasks_local; i++) {
		struct pm_rank *r = &s->ranks[i];
		if (r->c && r->st == PM_RANK_RUNNING) {
			r->stop_pending = true;
			pm_conn_send(r->c, &m);
		}
	}
	check_stopped(s);
}

static void node_start(struct pm_step *s, uint32_t gen)
{
	struct pm_msg m;
	int i;

	if (terminal(s))
		return;
	s->gen = gen;
	s->phase = PM_PHASE_RUNNING;
	s->done_children = 0;
	s->done_sent = false;
	pm_msg_init(&m, PM_MSG_START);
	m.gen = gen;
	send_down(s, &m);
	for (i = 0; i < s->ntasks_local; i++) {
		struct pm_rank *r = &s->ranks[i];
		if (r->c) {
			r->st = PM_RANK_RUNNING;
			pm_conn_send(r->c, &m);
		}
	}
}

static void node_finish(struct pm_step *s, uint32_t gen)
{
	struct pm_msg m;

	s->phase = PM_PHASE_FINISHED;
	pm_msg_init(&m, PM_MSG_FINISH);
	m.gen = gen;
	s->end_msg = m;
	send_down(s, &m);
	send_ranks(s, &m);
}

static void node_abort(struct pm_step *s, const struct pm_msg *m)
{
	if (terminal(s))
		return;
	s->phase = PM_PHASE_ABORTED;
	s->end_msg = *m;
	send_down(s, m);
	send_ranks(s, m);
}

void pm_step_abort_local(struct pm_step *s, const char *why)
{
	struct pm_msg m;

	int i;

	pm_log(s, "%s", why);
	pm_msg_init(&m, PM_MSG_ABORT);
	m.status = 1;
	pm_msg_set_text(&m, why);
	/* Said by one rank of this node, where the reason is known. */
	for (i = 0; i < s->ntasks_local; i++)
		if (s->ranks[i].c && (m.rank < 0 || s->ranks[i].grank < m.rank))
			m.rank = s->ranks[i].grank;
	if (is_root(s))
		pm_event(&s->events, "give_up", "\"reason\":\"local\"");
	node_abort(s, &m);
}

static void check_done(struct pm_step *s)
{
	struct pm_msg m;
	int i;

	if (s->phase != PM_PHASE_RUNNING || s->done_sent)
		return;
	for (i = 0; i < s->ntasks_local; i++)
		if (s->ranks[i].st != PM_RANK_DONE)
			return;
	if (1 + s->done_children < s->subtree)
		return;
	s->done_sent = true;
	if (is_root(s)) {
		root_generation_done(s);
		return;
	}
	pm_msg_init(&m, PM_MSG_DONE);
	m.gen = s->gen;
	m.count = (uint32_t)s->subtree;
	send_up(s, &m);
}

static void check_stopped(struct pm_step *s)
{
	struct pm_msg m;
	int i;

	if (s->phase != PM_PHASE_STOPPING || s->stopped_sent)
		return;
	for (i = 0; i < s->ntasks_local; i++)
		if (s->ranks[i].stop_pending)
			return;
	if (!s->checked) {
		/* No rank runs here now: check the node before a restart. */
		char why[1024];
		s->checked = true;
		if (s->guard && pm_guard_run(s->guard, why, sizeof(why)))
			pm_step_health_failed(s, why);
		if (s->phase != PM_PHASE_STOPPING)
			return;
	}
	if (1 + s->stopped_children < s->subtree)
		return;
	s->stopped_sent = true;
	if (is_root(s)) {
		root_stopped(s);
		return;
	}
	pm_msg_init(&m, PM_MSG_STOPPED);
	m.gen = s->gen;
	m.count = (uint32_t)s->subtree;
	send_up(s, &m);
}

/* Generation 0 starts when every node is ready: connected, its checks
 * passed. A node that failed them never says so, and the root ends the
 * step instead. */
static void check_ready(struct pm_step *s)
{
	struct pm_msg m;
	char f[128];

	if (s->phase != PM_PHASE_STARTING || s->ready_sent || !s->local_ready ||
	    1 + s->ready_children < s->subtree)
		return;
	s->ready_sent = true;
	if (!is_root(s)) {
		pm_msg_init(&m, PM_MSG_READY);
		m.count = (uint32_t)s->subtree;
		send_up(s, &m);
		return;
	}
	snprintf(f, sizeof(f), "\"gen\":0,\"nodes\":%d,\"ranks\":%d", s->nnodes, s->ntasks);
	pm_event(&s->events, "launch", f);
	node_start(s, 0);
}

void pm_step_ready(struct pm_step *s)
{
	s->local_ready = true;
	check_ready(s);
}

/* A failure anywhere goes to the root, which alone decides. */
static void report_fail(struct pm_step *s, const struct pm_msg *m)
{
	if (is_root(s))
		root_fail(s, m);
	else
		send_up(s, m);
}

void pm_step_health_failed(void *step, const char *why)
{
	struct pm_step *s = step;
	struct pm_msg m;

	pm_log(s, "health check failed: %s", why);
	pm_msg_init(&m, PM_MSG_FAIL);
	m.gen = s->gen;
	m.node = s->node;
	m.count = PM_FLAG_HEALTH;
	pm_msg_set_text(&m, why);
	report_fail(s, &m);
}

/* ---- rank supervisors ---- */

static void rank_closed(struct pm_conn *c, const char *why)
{
	struct pm_step *s = c->w.arg;
	struct pm_rank *r = c->id >= 0 ? &s->ranks[c->id] : NULL;
	struct pm_msg m;

	if (r && r->c == c) {
		r->c = NULL;
		r->stop_pending = false;
		r->st = PM_RANK_GONE;
		if (!terminal(s)) {
			pm_log(s, "supervisor of rank %d disconnected%s%s", r->grank,
			       why ? ": " : "", why ? why : "");
			pm_msg_init(&m, PM_MSG_FAIL);
			m.gen = s->gen;
			m.rank = r->grank;
			m.node = s->node;
			m.count = PM_FLAG_LOST;
			report_fail(s, &m);
		}
		check_stopped(s);
	} else if (why) {
		pm_log(s, "rank connection closed: %s", why);
	}
	pm_conn_free(c);
	s->over = pm_step_over(s);
	if (s->over)
		pm_loop_stop(s->loop);
}

static void rank_msg(struct pm_conn *c, const struct pm_msg *m)
{
	struct pm_step *s = c->w.arg;
	struct pm_rank *r;
	struct pm_msg out;

	if (c->id < 0) {
		if (m->type != PM_MSG_RANK_HELLO || m->node < 0 ||
		    m->node >= s->ntasks_local || s->ranks[m->node].c ||
		    s->ranks[m->node].st != PM_RANK_ABSENT) {
			pm_conn_drop(c, "bad or duplicate rank hello");
			return;
		}
		c->id = m->node;
		r = &s->ranks[c->id];
		r->c = c;
		r->grank = m->rank;
		r->st = PM_RANK_IDLE;
		if (terminal(s)) {
			pm_conn_send(c, &s->end_msg);
		} else if (s->phase == PM_PHASE_RUNNING) {
			pm_msg_init(&out, PM_MSG_START);
			out.gen = s->gen;
			r->st = PM_RANK_RUNNING;
			pm_conn_send(c, &out);
		}
		return;
	}
	r = &s->ranks[c->id];
	switch (m->type) {
	case PM_MSG_RANK_EXIT:
		if (m->gen != s->gen || r->st != PM_RANK_RUNNING)
			return;
		if (m->status == 0 && !(m->count & PM_FLAG_HUNG)) {
			r->st = PM_RANK_DONE;
			check_done(s);
			return;
		}
		r->st = PM_RANK_FAILED;
		out = *m;
		out.type = PM_MSG_FAIL;
		out.rank = r->grank;
		out.node = s->node;
		report_fail(s, &out);
		return;
	case PM_MSG_RANK_STOPPED:
		if (m->gen != s->gen)
			return;
		r->stop_pending = false;
		if (r->st == PM_RANK_RUNNING)
			r->st = PM_RANK_IDLE;
		check_stopped(s);
		return;
	default:
		pm_conn_drop(c, "unexpected message from a rank");
	}
}

void pm_step_rank_conn(struct pm_step *s, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	/* Only the job's user (and root) may talk to procmgrd. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
	    (cred.uid != s->uid && cred.uid != 0)) {
		pm_log(s, "refused a local connection from uid %u",
		       len == sizeof(cred) ? (unsigned)cred.uid : 0u);
		close(fd);
		return;
	}
	if (!pm_conn_new(s->loop, fd, rank_msg, rank_closed, s)) {
		pm_log(s, "cannot watch a rank connection: %m");
		close(fd);
	}
}

/* ---- the tree ---- */

/* A node's procmgrd is gone: the root ends the step, others pass it up. */
static void report_lost(struct pm_step *s, const struct pm_msg *m)
{
	char text[512];

	if (!is_root(s)) {
		send_up(s, m);
		return;
	}
	snprintf(text, sizeof(text), "procmgr: lost node %s (its procmgrd or slurmstepd "
		 "went away); ending the step", node_name(s, m->node));
	root_abort(s, 1, -1, m->node, text);
}

static void child_closed(struct pm_conn *c, const char *why)
{
	struct pm_step *s = c->w.arg;
	struct pm_msg m;
	int idx = c->id >= 0 ? c->id - s->child_first : -1;

	if (idx >= 0 && idx < s->nchildren && s->children[idx] == c) {
		s->children[idx] = NULL;
		if (!terminal(s)) {
			pm_log(s, "lost child node %s%s%s", node_name(s, c->id),
			       why ? ": " : "", why ? why : "");
			pm_msg_init(&m, PM_MSG_LOST);
			m.node = c->id;
			report_lost(s, &m);
		}
	} else if (why) {
		pm_log(s, "refused tree connection: %s", why);
	}
	pm_conn_free(c);
}

static void child_msg(struct pm_conn *c, const struct pm_msg *m)
{
	struct pm_step *s = c->w.arg;

	if (c->id < 0) {
		char payload[128], err[256];
		int idx;
		struct pm_msg r;

		if (m->type != PM_MSG_HELLO) {
			pm_conn_drop(c, "first message is not hello");
			return;
		}
		idx = m->node - s->child_first;
		/* Who it is first: nothing else is told to an unknown peer. */
		err[0] = '\0';
		pm_auth_payload(payload, sizeof(payload), s->job, s->stepid);
		if (pm_auth_verify(s->munge_socket, m->text, s->uid, payload, err,
				   sizeof(err))) {
			if (!err[0])
				snprintf(err, sizeof(err), "credential refused");
		} else if (idx < 0 || idx >= s->nchildren) {
			snprintf(err, sizeof(err), "node %d is not a child of node %d",
				 m->node, s->node);
		} else if (s->children[idx]) {
			snprintf(err, sizeof(err), "node %d is already connected", m->node);
		}
		if (err[0]) {
			static char why[400];
			pm_msg_init(&r, PM_MSG_REFUSED);
			pm_msg_set_text(&r, err);
			pm_conn_send(c, &r);
			snprintf(why, sizeof(why), "from node %d: %s", m->node, err);
			pm_conn_drop(c, why);
			return;
		}
		c->id = m->node;
		s->children[idx] = c;
		pm_msg_init(&r, PM_MSG_WELCOME);
		pm_conn_send(c, &r);
		/* It may have missed what happened before it joined. */
		if (terminal(s)) {
			pm_conn_send(c, &s->end_msg);
		} else if (s->phase == PM_PHASE_STOPPING) {
			pm_msg_init(&r, PM_MSG_STOP);
			r.gen = s->gen;
			pm_conn_send(c, &r);
		} else if (s->gen > 0 && s->phase == PM_PHASE_RUNNING) {
			pm_msg_init(&r, PM_MSG_START);
			r.gen = s->gen;
			pm_conn_send(c, &r);
		}
		return;
	}
	switch (m->type) {
	case PM_MSG_FAIL:
		report_fail(s, m);
		break;
	case PM_MSG_READY:
		s->ready_children += (int)m->count;
		check_ready(s);
		break;
	case PM_MSG_DONE:
		if (m->gen == s->gen && s->phase == PM_PHASE_RUNNING) {
			s->done_children += (int)m->count;
			check_done(s);
		}
		break;
	case PM_MSG_STOPPED:
		if (m->gen == s->gen && s->phase == PM_PHASE_STOPPING) {
			s->stopped_children += (int)m->count;
			check_stopped(s);
		}
		break;
	case PM_MSG_LOST:
		report_lost(s, m);
		break;
	default:
		pm_conn_drop(c, "unexpected message from a child");
	}
}

void pm_step_tree_conn(struct pm_step *s, int fd)
{
	if (!pm_conn_new(s->loop, fd, child_msg, child_closed, s)) {
		pm_log(s, "cannot watch a tree connection: %m");
		close(fd);
	}
}

static void parent_closed(struct pm_conn *c, const char *why)
{
	struct pm_step *s = c->w.arg;
	char text[512];

	s->parent = NULL;
	s->parent_ok = false;
	if (!terminal(s)) {
		snprintf(text, sizeof(text),
			 "procmgr: lost the connection to node %s%s%s; ending the step",
			 node_name(s, pm_tree_parent(s->node, s->fanout)), why ? ": " : "",
			 why ? why : "");
		pm_step_abort_local(s, text);
	}
	pm_conn_free(c);
}

static void parent_msg(struct pm_conn *c, const struct pm_msg *m)
{
	struct pm_step *s = c->w.arg;
	int i;

	switch (m->type) {
	case PM_MSG_WELCOME:
		s->parent_ok = true;
		for (i = 0; i < s->upq_len; i++)
			pm_conn_send(c, &s->upq[i]);
		s->upq_len = 0;
		break;
	case PM_MSG_REFUSED: {
		char text[PM_WIRE_TEXT_MAX + 64];
		snprintf(text, sizeof(text), "procmgr: the parent node refused us: %s",
			 m->text);
		pm_step_abort_local(s, text);
		break;
	}
	case PM_MSG_STOP:
		node_stop(s, m->gen);
		break;
	case PM_MSG_START:
		node_start(s, m->gen);
		break;
	case PM_MSG_FINISH:
		node_finish(s, m->gen);
		break;
	case PM_MSG_ABORT:
		node_abort(s, m);
		break;
	default:
		pm_conn_drop(c, "unexpected message from the parent");
	}
}

int pm_step_parent_up(struct pm_step *s, int fd)
{
	struct pm_msg m;
	char payload[128], err[256], *cred = NULL;

	s->parent = pm_conn_new(s->loop, fd, parent_msg, parent_closed, s);
	if (!s->parent) {
		close(fd);
		return -1;
	}
	pm_auth_payload(payload, sizeof(payload), s->job, s->stepid);
	if (pm_auth_encode(s->munge_socket, payload, &cred, err, sizeof(err))) {
		pm_step_abort_local(s, err);
		return -1;
	}
	pm_msg_init(&m, PM_MSG_HELLO);
	m.node = s->node;
	pm_msg_set_text(&m, cred);
	free(cred);
	return pm_conn_send(s->parent, &m);
}

bool pm_step_over(const struct pm_step *s)
{
	int i;

	if (!terminal(s))
		return false;
	/* Every supervisor must have come and gone: one that is late still
	 * needs to be told how the step ended. */
	for (i = 0; i < s->ntasks_local; i++)
		if (s->ranks[i].st != PM_RANK_GONE)
			return false;
	return true;
}

int pm_step_init(struct pm_step *s)
{
	s->ranks = calloc((size_t)s->ntasks_local, sizeof(*s->ranks));
	s->nchildren = pm_tree_children(s->node, s->fanout, s->nnodes, &s->child_first);
	s->subtree = pm_tree_subtree_size(s->node, s->fanout, s->nnodes);
	s->children = calloc((size_t)(s->nchildren ? s->nchildren : 1), sizeof(*s->children));
	if (!s->ranks || !s->children)
		return -1;
	pm_policy_from_opts(&s->policy, &s->opts);
	s->phase = PM_PHASE_STARTING;
	s->delay_w.fd = pm_timer_new();
	s->delay_w.fn = delay_expired;
	s->delay_w.arg = s;
	if (s->delay_w.fd < 0 || pm_loop_add(s->loop, &s->delay_w, EPOLLIN))
		return -1;
	return 0;
}

void pm_step_free(struct pm_step *s)
{
	int i;

	for (i = 0; i < s->ntasks_local; i++)
		if (s->ranks[i].c)
			pm_conn_free(s->ranks[i].c);
	for (i = 0; i < s->nchildren; i++)
		if (s->children[i])
			pm_conn_free(s->children[i]);
	if (s->parent)
		pm_conn_free(s->parent);
	if (s->delay_w.fd >= 0)
		close(s->delay_w.fd);
	pm_events_close(&s->events);
	free(s->ranks);
	free(s->children);
	free(s->upq);
}
