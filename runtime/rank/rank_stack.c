#include "rank_stack.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/stacktool.h"

static void end(struct pm_rank_stack *st)
{
	if (!st->running)
		return;
	st->running = false;
	kill(-st->pid, SIGKILL);
	/* The supervisor's SIGCHLD loop may have reaped it already. */
	waitpid(st->pid, NULL, WNOHANG);
	pm_loop_del(st->loop, &st->pid_w);
	pm_loop_del(st->loop, &st->timer_w);
	close(st->pid_w.fd);
	close(st->timer_w.fd);
}

static void on_end(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_rank_stack *st = w->arg;
	(void)l;
	(void)ev;

	end(st);
	st->done(st->arg);
}

int pm_rank_stack_start(struct pm_rank_stack *st, struct pm_loop *l, pid_t target,
			const char *out, unsigned ms, void (*done)(void *), void *arg, char *why,
			size_t len)
{
	char tool[4096];
	bool gdb;

	memset(st, 0, sizeof(*st));
	st->loop = l;
	st->done = done;
	st->arg = arg;
	if (pm_stacktool_find(tool, sizeof(tool), &gdb, why, len))
		return -1;
	st->timer_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_end, .arg = st };
	if (st->timer_w.fd < 0) {
		snprintf(why, len, "timerfd: %s", strerror(errno));
		return -1;
	}
	st->pid = pm_stacktool_spawn(tool, gdb, target, out);
	st->pid_w = (struct pm_watch){ .fd = st->pid > 0 ? pm_pidfd_open(st->pid) : -1,
				       .fn = on_end, .arg = st };
	if (st->pid < 0 || st->pid_w.fd < 0 || pm_loop_add(l, &st->pid_w, EPOLLIN) ||
	    pm_loop_add(l, &st->timer_w, EPOLLIN) || pm_timer_set(st->timer_w.fd, ms, 0)) {
		snprintf(why, len, "cannot start %s: %s", tool, strerror(errno));
		if (st->pid > 0) {
			kill(-st->pid, SIGKILL);
			waitpid(st->pid, NULL, 0);
		}
		if (st->pid_w.fd >= 0) {
			pm_loop_del(l, &st->pid_w);
			close(st->pid_w.fd);
		}
		pm_loop_del(l, &st->timer_w);
		close(st->timer_w.fd);
		return -1;
	}
	st->running = true;
	return 0;
}

void pm_rank_stack_stop(struct pm_rank_stack *st)
{
	end(st);
}
