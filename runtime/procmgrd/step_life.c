/* The step's lifecycle on this node: the machine's timers (restart delay,
 * stop deadline), its checks' answers, and the end: whether everything
 * procmgrd serves is over, lingering for children that have not joined,
 * the plugin's SIGTERM. Under the links and attach.c, which call it. */
#include "step.h"

#include <stdbool.h>
#include <sys/epoll.h>

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


int pm_step_life_init(struct pm_step *s)
{
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
	s->stop_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = stop_expired, .arg = s };
	if (s->stop_w.fd < 0 || pm_loop_add(s->loop, &s->stop_w, EPOLLIN))
		return -1;
	return 0;
}
