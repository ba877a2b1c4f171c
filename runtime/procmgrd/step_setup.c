/* The step set up on this node and freed, its links' liveness, and the
 * step's hooks: the top floor of procmgrd's files (with main.c), the one
 * place that knows them all and tells each lower file who answers its
 * questions (struct pm_step_hooks). */
#include "step.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/text.h"
#include "query.h"
#include "state_repl.h"

/* Who answers: the lists in the order they were called in before the
 * hooks (the metrics before the log; a hang's report before the
 * followers are sent the lines it added). */
const struct pm_step_hooks pm_step_hooks = {
	.on_event = { pm_step_goodput_event, pm_step_metrics_event },
	.on_written = { pm_query_hang_event, pm_query_event_written },
	.hang_outlier = pm_query_hang_outlier,
	.node_lost = pm_step_srun_lost,
	.lost_at_end = pm_step_lost_at_end,
	.sweep_launch = pm_sweep_launch,
	.sweep_fail = pm_sweep_fail,
	.sweep_node_lost = pm_sweep_node_lost,
	.sweep_takeover = pm_sweep_takeover,
	.query_status = pm_query_status,
	.query_stacks = pm_query_stacks,
	.stacks_cancel = pm_stacks_cancel,
	.hang_answer = pm_query_hang_answer,
	.trial_request = pm_sweep_request,
	.trial_exit = pm_sweep_trial_exit,
	.parent_up = pm_step_parent_up,
	.state_resume = pm_state_link_resume,
	.state_drop = pm_state_link_drop,
};

/* Every link hears from us each period, and must have said something
 * within peer_timeout_ms: a stopped procmgrd or supervisor, or a node
 * whose packets are dropped, is found here, not by the kernel's TCP
 * timers (minutes). */
static void live_tick(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_step *s = w->arg;
	uint64_t now = pm_now_ms();
	unsigned t = s->peer_timeout_ms;
	char why[96];
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

	/* Before the machine, which may call its ops at once. */
	s->hooks = &pm_step_hooks;
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
	if (pm_step_life_init(s) || pm_gate_init(s))
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
	pm_step_rank_door_free(s);
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
	pm_query_hang_clear(s);
	pm_state_link_free(s);
	pm_gate_free(s);
	free(s->cmd_pgid);
	free(s->sup_pidfd);
	free(s->sb_pgid);
	free(s->sb_state);
	pm_events_close(&s->events);
	pm_step_metrics_end(s);
	pm_step_goodput_free(s);
	pm_gen_free(&s->gen);
	free(s->ranks);
	free(s->children);
	free(s->seen);
	free(s->upq);
}
