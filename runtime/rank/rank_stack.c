#include "rank_stack.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/stacks.h"
#include "io/stacktool.h"
#include "io/sys.h"

#define PM_SLOT_RETRY_MS 20

/* Why no stack came, where procmgrd reads the stack (query_hang.c). */
static void say_missing(const char *out, const char *fmt, const char *a, unsigned ms)
{
	int fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	char line[4400];
	int n;

	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "\nprocmgr: no stack: ");
	n += snprintf(line + n, sizeof(line) - (size_t)n, fmt, a, ms / 1000.0);
	if (n > 0 && (size_t)n < sizeof(line) - 1) {
		line[n++] = '\n';
		if (write(fd, line, (size_t)n) < 0)
			n = 0; /* nothing more to do: the reader says "no stack" */
	}
	close(fd);
}

static void end(struct pm_rank_stack *st)
{
	if (st->waiting) {
		st->waiting = false;
		pm_loop_del(st->loop, &st->retry_w);
		pm_loop_del(st->loop, &st->timer_w);
		close(st->retry_w.fd);
		close(st->timer_w.fd);
	}
	if (st->running) {
		st->running = false;
		kill(-st->pid, SIGKILL);
		/* The supervisor's SIGCHLD loop may have reaped it already. */
		waitpid(st->pid, NULL, WNOHANG);
		pm_loop_del(st->loop, &st->pid_w);
		pm_loop_del(st->loop, &st->timer_w);
		pm_loop_del(st->loop, &st->retry_w);
		close(st->pid_w.fd);
		close(st->timer_w.fd);
		close(st->retry_w.fd);
	}
	if (st->slot_fd >= 0) {
		close(st->slot_fd); /* the slot goes to the next rank */
		st->slot_fd = -1;
	}
}

static void on_end(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_rank_stack *st = w->arg;
	(void)l;
	(void)ev;

	if (w == &st->timer_w) {
		/* The bound and how busy the node was, said: a loaded node's
		 * debugger takes longer, and the user can raise the bound. */
		char words[4400];
		double load = -1;
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		if (getloadavg(&load, 1) != 1)
			load = -1;
		pm_stack_overrun_words(st->waiting ? NULL : st->tool, st->ms, load, cpus,
				       "--procmgr-stack-timeout raises the bound", words,
				       sizeof(words));
		say_missing(st->out, "%s", words, 0);
	}
	end(st);
	st->done(st->arg);
}

/* One of the node's tool slots: lock files beside the stack files (the
 * step's run directory, the job user's). */
static int take_slot(struct pm_rank_stack *st)
{
	char dir[4096], path[4200], *d;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int i, n = cpus > 4 ? (int)(cpus / 2) : 2;

	if (n > PM_STACK_TOOLS_MAX)
		n = PM_STACK_TOOLS_MAX;
	/* Once: dirname cuts dir in place, a second call is its parent's. */
	snprintf(dir, sizeof(dir), "%s", st->out);
	d = dirname(dir);
	for (i = 0; i < n; i++) {
		int fd;
		snprintf(path, sizeof(path), "%s/stack.slot.%d", d, i);
		fd = open(path, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return -1; /* no slots to be had: run unlimited */
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			st->slot_fd = fd;
			return 1;
		}
		close(fd);
	}
	return 0;
}

static int spawn(struct pm_rank_stack *st)
{
	st->pid = pm_stacktool_spawn(st->tool, st->gdb, st->target, st->out);
	st->pid_w = (struct pm_watch){ .fd = st->pid > 0 ? pm_pidfd_open(st->pid) : -1,
				       .fn = on_end, .arg = st };
	if (st->pid < 0 || st->pid_w.fd < 0 || pm_loop_add(st->loop, &st->pid_w, EPOLLIN)) {
		if (st->pid > 0) {
			kill(-st->pid, SIGKILL);
			waitpid(st->pid, NULL, 0);
		}
		if (st->pid_w.fd >= 0)
			close(st->pid_w.fd);
		return -1;
	}
	st->running = true;
	return 0;
}

static void on_retry(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_rank_stack *st = w->arg;
	char why[64];
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	if (!st->waiting)
		return;
	if (!take_slot(st)) {
		pm_timer_set(st->retry_w.fd, PM_SLOT_RETRY_MS, 0);
		return;
	}
	st->waiting = false;
	if (spawn(st)) {
		snprintf(why, sizeof(why), "%s", strerror(errno));
		say_missing(st->out, "cannot start the stack tool: %s", why, 0);
		st->waiting = true; /* end() closes the timers */
		end(st);
		st->done(st->arg);
	}
}

int pm_rank_stack_start(struct pm_rank_stack *st, struct pm_loop *l, pid_t target,
			const char *out, unsigned ms, void (*done)(void *), void *arg, char *why,
			size_t len)
{
	int slot;

	memset(st, 0, sizeof(*st));
	st->loop = l;
	st->done = done;
	st->arg = arg;
	st->target = target;
	st->ms = ms;
	st->slot_fd = -1;
	snprintf(st->out, sizeof(st->out), "%s", out);
	if (pm_stacktool_find(st->tool, sizeof(st->tool), &st->gdb, why, len)) {
		say_missing(out, "%s", why, 0);
		return -1;
	}
	st->timer_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_end, .arg = st };
	st->retry_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_retry, .arg = st };
	if (st->timer_w.fd < 0 || st->retry_w.fd < 0 || pm_loop_add(l, &st->timer_w, EPOLLIN) ||
	    pm_loop_add(l, &st->retry_w, EPOLLIN) || pm_timer_set(st->timer_w.fd, ms, 0)) {
		snprintf(why, len, "timerfd: %s", strerror(errno));
		goto fail;
	}
	slot = take_slot(st);
	if (slot == 0) {
		st->waiting = true;
		pm_timer_set(st->retry_w.fd, PM_SLOT_RETRY_MS, 0);
		return 0;
	}
	if (spawn(st)) {
		snprintf(why, len, "cannot start %s: %s", st->tool, strerror(errno));
		goto fail;
	}
	return 0;
fail:
	say_missing(out, "%s", why, 0);
	if (st->slot_fd >= 0)
		close(st->slot_fd);
	st->slot_fd = -1;
	if (st->timer_w.fd >= 0) {
		pm_loop_del(l, &st->timer_w);
		close(st->timer_w.fd);
	}
	if (st->retry_w.fd >= 0) {
		pm_loop_del(l, &st->retry_w);
		close(st->retry_w.fd);
	}
	return -1;
}

void pm_rank_stack_stop(struct pm_rank_stack *st)
{
	/* The command ended (or the supervisor leaves) before its stack was
	 * in: said, so that the summary does not show a bare "no stack". */
	if (st->running || st->waiting)
		say_missing(st->out, "%s", "its command ended before the stack tool finished", 0);
	end(st);
}
