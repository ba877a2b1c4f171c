/* What the state machine asks, carried out on procmgrd's links, timer,
 * checks and event log; and the step's set-up around it. */
#include "step.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/text.h"
#include "io/statesrv.h"
#include "query.h"
#include "rank/rank_stack.h"

void pm_log(struct pm_step *s, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "procmgrd[%s %u.%u]: ", s->names[s->node], s->job, s->stepid);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void pm_step_send(struct pm_step *s, struct pm_conn *c, const struct pm_msg *m)
{
	/* A link that cannot take a frame is broken: its close says so. */
	if (pm_conn_send(c, m))
		pm_log(s, "cannot send %s: %s", pm_msg_name(m->type), strerror(errno));
}

static void send_up(void *ctx, const struct pm_msg *m)
{
	struct pm_step *s = ctx;

	if (s->parent && s->parent_ok) {
		pm_step_send(s, s->parent, m);
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

struct pm_conn **pm_step_child(struct pm_step *s, int idx)
{
	if (idx < 0)
		return NULL;
	if (idx >= s->children_cap) {
		int cap = s->children_cap * 2 > idx ? s->children_cap * 2 : idx + 4;
		struct pm_conn **c = realloc(s->children, (size_t)cap * sizeof(*c));
		if (!c)
			return NULL;
		memset(c + s->children_cap, 0, (size_t)(cap - s->children_cap) * sizeof(*c));
		s->children = c;
		s->children_cap = cap;
	}
	return &s->children[idx];
}

static void send_down(void *ctx, const struct pm_msg *m)
{
	struct pm_step *s = ctx;
	int i;

	for (i = 0; i < s->gen.nkids && i < s->children_cap; i++)
		if (s->children[i])
			pm_step_send(s, s->children[i], m);
}

static void send_child(void *ctx, int node, const struct pm_msg *m)
{
	struct pm_step *s = ctx;
	int idx = pm_gen_kid_index(&s->gen, node);

	if (idx >= 0 && idx < s->children_cap && s->children[idx])
		pm_step_send(s, s->children[idx], m);
}

static void send_rank(void *ctx, int lrank, const struct pm_msg *m)
{
	struct pm_step *s = ctx;

	if (lrank >= 0 && lrank < s->ntasks_local && s->ranks[lrank])
		pm_step_send(s, s->ranks[lrank], m);
}

static void arm_timer(void *ctx, unsigned ms)
{
	struct pm_step *s = ctx;

	if (pm_timer_set(s->delay_w.fd, ms, 0))
		pm_log(s, "cannot arm the restart delay: %s", strerror(errno));
}

static void arm_stop(void *ctx, unsigned ms)
{
	struct pm_step *s = ctx;

	if (pm_timer_set(s->stop_w.fd, ms, 0))
		pm_log(s, "cannot arm the stop deadline: %s", strerror(errno));
}

static int run_checks(void *ctx, char *why, size_t len)
{
	struct pm_step *s = ctx;

	return s->guard ? pm_guard_start(s->guard, s->loop, why, len) : 1;
}

static void event(void *ctx, const char *name, const char *fields)
{
	struct pm_step *s = ctx;
	char text[PATH_MAX + 256];

	pm_step_metrics_event(s, name, fields);
	if (pm_event(&s->events, name, fields) == 0) {
		pm_query_event_written(s, name);
		return;
	}
	if (s->events.lost != 1)
		return;
	/* Said once, here and on srun's stderr through rank 0's supervisor;
	 * at the step's start that one has not come yet: when it does. */
	s->events_errno = errno;
	s->events_untold = true;
	snprintf(text, sizeof(text), "procmgr: the step's event log cannot be written (%s): "
		 "events from now on are lost (is state_dir full?)", strerror(errno));
	pm_log(s, "%s", text);
	pm_step_events_untold(s);
}

void pm_step_state_event(struct pm_step *s, const char *name, int grank,
			 const struct pm_state_note *n)
{
	char fields[PM_WIRE_TEXT_MAX - 64];
	int len;
	struct pm_msg m;

	len = snprintf(fields, sizeof(fields),
		       "\"rank\":%d,\"node\":\"%s\",\"name\":\"%s\",\"version\":%llu,"
		       "\"bytes\":%llu,\"train_step\":%llu", grank, s->names[s->node], n->name,
		       (unsigned long long)n->version, (unsigned long long)n->size,
		       (unsigned long long)n->step);
	if (n->did == PM_STATE_DID_LOAD && len > 0 && (size_t)len < sizeof(fields))
		snprintf(fields + len, sizeof(fields) - (size_t)len,
			 ",\"age_ms\":%llu,\"lost_steps\":%llu,\"generation\":%u",
			 (unsigned long long)n->age_ms, (unsigned long long)n->lost_steps,
			 s->gen.gen);
	if (n->did == PM_STATE_DID_LOAD && n->replica && (int)n->owner < s->nnodes) {
		len = (int)strlen(fields);
		snprintf(fields + len, sizeof(fields) - (size_t)len, ",\"from_node\":\"%s\"",
			 s->names[n->owner]);
	}
	if (s->gen.root) {
		if (n->did == PM_STATE_DID_LOAD)
			pm_gen_state_restored(&s->gen, n->step, n->lost_steps);
		event(s, name, fields);
		return;
	}
	pm_msg_init(&m, PM_MSG_EVENT);
	{
		char text[PM_WIRE_TEXT_MAX + 1];
		snprintf(text, sizeof(text), "%s %s", name, fields);
		pm_msg_set_text(&m, text);
	}
	send_up(s, &m);
}

void pm_step_event_msg(struct pm_step *s, const struct pm_msg *m)
{
	char name[64];
	const char *sp = strchr(m->text, ' ');

	if (!s->gen.root) {
		send_up(s, m);
		return;
	}
	/* Only names procmgr's nodes send: a child is authenticated, but a
	 * name is a key of the log and the metrics. */
	if (!sp || (size_t)(sp - m->text) >= sizeof(name))
		return;
	memcpy(name, m->text, (size_t)(sp - m->text));
	name[sp - m->text] = '\0';
	if (strcmp(name, "state_saved") && strcmp(name, "state_restored") &&
	    strcmp(name, "state_replicated"))
		return;
	if (!strcmp(name, "state_restored")) {
		const char *st = strstr(sp, "\"train_step\":"), *lo = strstr(sp, "\"lost_steps\":");
		if (st && lo)
			pm_gen_state_restored(&s->gen, strtoull(st + 13, NULL, 10),
					      strtoull(lo + 13, NULL, 10));
	}
	event(s, name, sp + 1);
}

void pm_step_events_untold(struct pm_step *s)
{
	char text[PATH_MAX + 256];
	struct pm_msg m;
	int i;

	if (!s->events_untold)
		return;
	snprintf(text, sizeof(text), "procmgr: the step's event log cannot be written (%s): "
		 "events from now on are lost (is state_dir full?)", strerror(s->events_errno));
	pm_msg_init(&m, PM_MSG_PRINT);
	pm_msg_set_text(&m, text);
	for (i = 0; i < s->ntasks_local; i++)
		if (s->ranks[i] && s->gen.ranks[i].grank == 0) {
			pm_step_send(s, s->ranks[i], &m);
			s->events_untold = false;
		}
}

/* The nodes lost so far, for the job script: one line, replaced whole. */
static void avoid(void *ctx, const char *nodes, const char *why)
{
	struct pm_step *s = ctx;
	char path[PATH_MAX], tmp[PATH_MAX + 16];
	size_t n = strlen(s->events_path), suf = strlen(".events.jsonl");
	FILE *f;
	(void)why;

	if (!s->events_path[0] || n <= suf || n - suf + 8 >= sizeof(path))
		return;
	snprintf(path, sizeof(path), "%.*s.exclude", (int)(n - suf), s->events_path);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "wx");
	if (!f) {
		pm_log(s, "cannot write %s: %m", tmp);
		return;
	}
	fprintf(f, "%s\n", nodes);
	if (fclose(f) || rename(tmp, path)) {
		pm_log(s, "cannot write %s: %m", path);
		unlink(tmp);
	}
}

/* The event log goes on here: the same file name, on this node. */
static void became_root(void *ctx)
{
	struct pm_step *s = ctx;

	if (s->events_path[0] && !s->events.opened &&
	    pm_events_open(&s->events, s->events_path, s->job, s->stepid))
		pm_log(s, "cannot open the event log %s: %m", s->events_path);
}

static void log_line(void *ctx, const char *text)
{
	pm_log(ctx, "%s", text);
}

static int hang_outlier(void *ctx, int *node)
{
	return pm_query_hang_outlier(ctx, node);
}

static void node_lost(void *ctx, int node)
{
	pm_step_srun_lost(ctx, node);
}

static uint64_t now_ms(void *ctx)
{
	(void)ctx;
	return pm_now_ms();
}

const struct pm_gen_ops pm_step_ops = {
	.send_up = send_up,
	.send_down = send_down,
	.send_child = send_child,
	.send_rank = send_rank,
	.arm_timer = arm_timer,
	.arm_stop = arm_stop,
	.run_checks = run_checks,
	.event = event,
	.avoid = avoid,
	.became_root = became_root,
	.log = log_line,
	.now_ms = now_ms,
	.hang_outlier = hang_outlier,
	.node_lost = node_lost,
	.sweep_launch = pm_sweep_launch,
	.sweep_fail = pm_sweep_fail,
	.sweep_node_lost = pm_sweep_node_lost,
};

static void delay_expired(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_step *s = w->arg;
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	pm_gen_timer(&s->gen);
}

static void stop_expired(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_step *s = w->arg;
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	pm_gen_stop_timer(&s->gen);
	pm_step_over(s);
}

/* Every link hears from us each period, and must have said something
 * within peer_timeout_ms: a stopped procmgrd or supervisor, or a node
 * whose packets are dropped, is found here, not by the kernel's TCP
 * timers (minutes). */
static void live_tick(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_step *s = w->arg;
	uint64_t now = pm_now_ms();
	unsigned t = s->peer_timeout_ms;
	static char why[96];
	char secs[32];
	int i;
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	pm_fmt_seconds(t, secs, sizeof(secs));
	snprintf(why, sizeof(why), "no heartbeat for %s s", secs);
	if (s->parent && s->parent_ok && pm_conn_keepalive(s->parent, now, t))
		pm_conn_fail(s->parent, why);
	for (i = 0; i < s->gen.nkids && i < s->children_cap; i++)
		if (s->children[i] && pm_conn_keepalive(s->children[i], now, t))
			pm_conn_fail(s->children[i], why);
	for (i = 0; i < s->ntasks_local; i++)
		if (s->ranks[i] && pm_conn_keepalive(s->ranks[i], now, t)) {
			pm_step_rank_kill(s, i, true);
			pm_conn_fail(s->ranks[i], why);
		}
}

static void checks_done(void *arg, const char *why)
{
	struct pm_step *s = arg;

	pm_gen_checks_done(&s->gen, why);
}

static void health_failed(void *arg, const char *why)
{
	struct pm_step *s = arg;

	pm_gen_health_failed(&s->gen, why);
}

void pm_step_abort_local(struct pm_step *s, const char *why)
{
	pm_gen_abort_local(&s->gen, why);
}

/* This node's part is over: leave now, or at the plugin's SIGTERM. */
static void leave(struct pm_step *s)
{
	if (!s->wait_term || s->got_term)
		pm_loop_stop(s->loop);
}

static void linger_expired(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_step *s = w->arg;
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	pm_log(s, "%d child node%s never joined; leaving", s->nchildren - s->nseen,
	       s->nchildren - s->nseen == 1 ? "" : "s");
	s->lingered = true;
	leave(s);
}

static void linger(struct pm_step *s)
{
	if (s->lingering)
		return;
	s->lingering = true;
	if (pm_timer_set(s->linger_w.fd, PM_LINGER_MS, 0))
		pm_loop_stop(s->loop);
}

void pm_step_child_seen(struct pm_step *s, int idx)
{
	if (s->seen[idx])
		return;
	s->seen[idx] = true;
	if (++s->nseen == s->nchildren && s->lingering)
		leave(s);
	if (s->told)
		s->told(s, s->told_arg);
}

bool pm_step_over(struct pm_step *s)
{
	if (!pm_gen_over(&s->gen))
		return false;
	if (s->nseen < s->nchildren && !s->lingered) {
		linger(s);
		return false;
	}
	leave(s);
	return true;
}

void pm_step_terminate(struct pm_step *s)
{
	s->got_term = true;
	if (!pm_gen_terminal(&s->gen)) {
		s->cancelled = true;
		/* Slurm ends the step before procmgr did: scancel, a time limit.
		 * Said up the tree, so that nobody reports a lost node. */
		pm_gen_cancel(&s->gen, "procmgrd got SIGTERM from slurmstepd");
		pm_gen_abort_local(&s->gen, "procmgr: the step is being cancelled");
		pm_loop_stop(s->loop);
		return;
	}
	if (s->nseen < s->nchildren && !s->lingered)
		linger(s);
	else
		pm_loop_stop(s->loop);
}

int pm_step_init(struct pm_step *s)
{
	struct pm_gen_config cf = {
		.node = s->node, .nnodes = s->nnodes, .fanout = s->fanout,
		.ntasks = s->ntasks, .ntasks_local = s->ntasks_local,
		.names = (const char *const *)s->names, .verbose = s->opts.verbose,
		.spares = (int)s->opts.spares, .sweep = s->opts.sweep[0] != '\0',
		.ops = &pm_step_ops, .ctx = s,
	};
	int i;

	/* The supervisors' grace, their checks between generations, and a
	 * margin for the messages; then a margin per level for the tree. */
	cf.stop_bound_ms = s->opts.grace_ms + 2000 +
			   (unsigned)(s->guard ? s->guard->n : 0) * s->health_timeout_ms;
	cf.stop_margin_ms = 1000;
	cf.stack_ms = s->opts.stack_timeout_ms;
	cf.beats = s->opts.hang_timeout_ms > 0;
	s->delay_w.fd = s->linger_w.fd = s->stop_w.fd = s->live_w.fd = s->gate_w.fd = -1;
	pm_policy_from_opts(&cf.policy, &s->opts);
	if (pm_gen_init(&s->gen, &cf))
		return -1;
	s->child_first = s->gen.child_first;
	s->nchildren = s->gen.nchildren;
	s->ranks = calloc((size_t)(s->ntasks_local ? s->ntasks_local : 1), sizeof(*s->ranks));
	s->children_cap = s->nchildren ? s->nchildren : 1;
	s->children = calloc((size_t)s->children_cap, sizeof(*s->children));
	s->seen = calloc((size_t)(s->nchildren ? s->nchildren : 1), sizeof(*s->seen));
	s->cmd_pgid = calloc((size_t)(s->ntasks_local ? s->ntasks_local : 1), sizeof(pid_t));
	s->sup_pidfd = calloc((size_t)(s->ntasks_local ? s->ntasks_local : 1), sizeof(int));
	s->sb_pgid = calloc((size_t)(s->ntasks_local ? s->ntasks_local : 1), sizeof(pid_t));
	s->sb_state = calloc((size_t)(s->ntasks_local ? s->ntasks_local : 1), 1);
	if (!s->ranks || !s->children || !s->seen || !s->cmd_pgid || !s->sup_pidfd ||
	    !s->sb_pgid || !s->sb_state)
		return -1;
	for (i = 0; i < s->ntasks_local; i++)
		s->sup_pidfd[i] = -1;
	if (s->guard) {
		s->guard->on_fail = health_failed;
		s->guard->on_checked = checks_done;
		s->guard->arg = s;
	}
	s->delay_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = delay_expired, .arg = s };
	if (s->delay_w.fd < 0 || pm_loop_add(s->loop, &s->delay_w, EPOLLIN))
		return -1;
	s->linger_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = linger_expired, .arg = s };
	if (s->linger_w.fd < 0 || pm_loop_add(s->loop, &s->linger_w, EPOLLIN))
		return -1;
	if (pm_gate_init(s))
		return -1;
	s->stop_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = stop_expired, .arg = s };
	if (s->stop_w.fd < 0 || pm_loop_add(s->loop, &s->stop_w, EPOLLIN))
		return -1;
	if (s->peer_timeout_ms) {
		unsigned period = pm_conn_ping_period(s->peer_timeout_ms);
		s->live_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = live_tick, .arg = s };
		if (s->live_w.fd < 0 || pm_loop_add(s->loop, &s->live_w, EPOLLIN) ||
		    pm_timer_set(s->live_w.fd, period, period))
			return -1;
	}
	return 0;
}

void pm_step_free(struct pm_step *s)
{
	int i;

	pm_sweep_run_free(s);
	for (i = 0; s->ranks && i < s->ntasks_local; i++)
		if (s->ranks[i])
			pm_conn_free(s->ranks[i]);
	for (i = 0; s->children && i < s->children_cap; i++)
		if (s->children[i])
			pm_conn_free(s->children[i]);
	pm_attach_free(s);
	pm_slowlink_free(s);
	if (s->parent)
		pm_conn_free(s->parent);
	if (s->delay_w.fd >= 0)
		close(s->delay_w.fd);
	if (s->linger_w.fd >= 0)
		close(s->linger_w.fd);
	if (s->stop_w.fd >= 0)
		close(s->stop_w.fd);
	if (s->live_w.fd >= 0)
		close(s->live_w.fd);
	for (i = 0; s->sup_pidfd && i < s->ntasks_local; i++)
		if (s->sup_pidfd[i] >= 0)
			close(s->sup_pidfd[i]);
	pm_query_free(s);
	pm_state_link_free(s);
	pm_gate_free(s);
	free(s->cmd_pgid);
	free(s->sup_pidfd);
	free(s->sb_pgid);
	free(s->sb_state);
	pm_events_close(&s->events);
	pm_step_metrics_end(s);
	pm_gen_free(&s->gen);
	free(s->ranks);
	free(s->children);
	free(s->seen);
	free(s->upq);
}
