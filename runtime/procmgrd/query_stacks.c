/* Stacks of this node's ranks, taken now: one debugger per rank, in
 * parallel, each writing to a file in the run directory and watched
 * through its pidfd; a tool that overruns its time is killed, so a query
 * or a hang's capture is bounded whatever the tool does. procmgrd runs as
 * the job's user: so do the tools. */
#include "step.h"
#include "query.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/stacks.h"
#include "io/stacktool.h"

#define PM_STACK_RAW_MAX (256 * 1024)
#define PM_STACK_TEXT_MAX (32 * 1024)

struct pm_tool {
	struct pm_stacks *st;
	struct pm_watch w; /* its pidfd */
	pid_t pid, target;
	int lrank, grank;
	bool running;
	char path[4096];
};

struct pm_stacks {
	struct pm_step *s;
	struct pm_tool *t;
	int n, left;
	unsigned ms;
	struct pm_watch timer_w;
	pm_stack_fn each;
	pm_stacks_fin fin;
	void *arg;
	bool *cancelled; /* set when freed from inside a callback */
};

/* Local ranks whose debugger runs now, for whichever query: a process
 * has one tracer at a time, so a second query's tool would only fail
 * (ptrace: Operation not permitted) or wait out its bound. */
static bool *busy;

/* The tool's output as a stack, or its last words when it gave none. */
static void result(struct pm_tool *t, bool killed, char *text, size_t len)
{
	char *raw = malloc(PM_STACK_RAW_MAX + 1), *last, *p;
	ssize_t n = -1;
	int fd;

	text[0] = '\0';
	if (!raw) {
		snprintf(text, len, "procmgr: out of memory reading the stack of rank %d\n",
			 t->grank);
		return;
	}
	fd = open(t->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, raw, PM_STACK_RAW_MAX);
		close(fd);
	}
	unlink(t->path);
	raw[n > 0 ? n : 0] = '\0';
	if (pm_stack_normalize(raw, text, len) > 0 && !killed) {
		free(raw);
		return;
	}
	/* The last line that says something: "ptrace: Operation not permitted." */
	for (p = raw + strlen(raw); p > raw && (p[-1] == '\n' || p[-1] == ' '); p--)
		;
	*p = '\0';
	last = strrchr(raw, '\n');
	last = last ? last + 1 : raw;
	if (killed) {
		char words[256];
		double load = -1;
		if (getloadavg(&load, 1) != 1)
			load = -1;
		pm_stack_overrun_words("the stack tool", t->st->ms, load,
				       sysconf(_SC_NPROCESSORS_ONLN), "", words, sizeof(words));
		snprintf(text, len, "procmgr: no stack for rank %d (pid %d): %s\n", t->grank,
			 (int)t->target, words);
	} else
		snprintf(text, len, "procmgr: no stack for rank %d (pid %d): %.300s\n", t->grank,
			 (int)t->target, *last ? last : "the tool said nothing");
	free(raw);
}

static void tool_free(struct pm_stacks *st, struct pm_tool *t, bool kill_it)
{
	if (!t->running)
		return;
	t->running = false;
	if (busy)
		busy[t->lrank] = false;
	if (kill_it)
		kill(-t->pid, SIGKILL);
	pm_loop_del(st->s->loop, &t->w);
	close(t->w.fd);
	waitpid(t->pid, NULL, 0);
	st->left--;
}

static void free_all(struct pm_stacks *st)
{
	int i;

	for (i = 0; i < st->n; i++)
		if (st->t[i].running) {
			tool_free(st, &st->t[i], true);
			unlink(st->t[i].path);
		}
	if (st->timer_w.fd >= 0) {
		pm_loop_del(st->s->loop, &st->timer_w);
		close(st->timer_w.fd);
	}
	if (st->cancelled)
		*st->cancelled = true;
	free(st->t);
	free(st);
}

static void report(struct pm_stacks *st, struct pm_tool *t, bool killed)
{
	char *text = malloc(PM_STACK_TEXT_MAX);

	tool_free(st, t, killed);
	if (!text)
		return;
	result(t, killed, text, PM_STACK_TEXT_MAX);
	st->each(st->s, st->arg, t->lrank, t->grank, text);
	free(text);
}

/* The last one ended: fin() may free st (through pm_stacks_cancel). */
static void maybe_fin(struct pm_stacks *st)
{
	if (st->left == 0)
		st->fin(st->s, st->arg);
}

static void on_tool_exit(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_tool *t = w->arg;
	struct pm_stacks *st = t->st;
	(void)l;
	(void)ev;

	report(st, t, false);
	maybe_fin(st);
}

static void on_deadline(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_stacks *st = w->arg;
	bool gone = false;
	int i;
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	st->cancelled = &gone;
	for (i = 0; i < st->n && !gone; i++)
		if (st->t[i].running)
			report(st, &st->t[i], true);
	if (!gone) {
		st->cancelled = NULL;
		maybe_fin(st);
	}
}

int pm_stacks_take(struct pm_step *s, const char *ranks, unsigned ms, pm_stack_fn each,
		   pm_stacks_fin fin, void *arg, struct pm_stacks **out, char *why, size_t len)
{
	char tool[4096];
	bool gdb;
	struct pm_stacks *st;
	static unsigned seq;
	int i;

	*out = NULL;
	if (pm_stacktool_find(tool, sizeof(tool), &gdb, why, len)) {
		char tmp[256];
		snprintf(tmp, sizeof(tmp), "procmgr: node %s: %s", s->names[s->node], why);
		snprintf(why, len, "%s", tmp);
		return -1;
	}
	st = calloc(1, sizeof(*st));
	if (!st || !(st->t = calloc((size_t)(s->ntasks_local ? s->ntasks_local : 1),
				    sizeof(*st->t)))) {
		free(st);
		snprintf(why, len, "procmgr: out of memory on node %s", s->names[s->node]);
		return -1;
	}
	*st = (struct pm_stacks){ .s = s, .t = st->t, .ms = ms, .each = each, .fin = fin,
				  .arg = arg };
	st->timer_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_deadline, .arg = st };
	if (st->timer_w.fd < 0 || pm_loop_add(s->loop, &st->timer_w, EPOLLIN) ||
	    pm_timer_set(st->timer_w.fd, ms, 0)) {
		snprintf(why, len, "procmgr: no timer for the stack tools: %s", strerror(errno));
		if (st->timer_w.fd >= 0)
			close(st->timer_w.fd);
		st->timer_w.fd = -1;
		free_all(st);
		return -1;
	}
	if (!busy)
		busy = calloc((size_t)(s->ntasks_local ? s->ntasks_local : 1), sizeof(*busy));
	for (i = 0; i < s->ntasks_local; i++) {
		const struct pm_gen_rank *r = &s->gen.ranks[i];
		struct pm_tool *t = &st->t[st->n];
		if (r->st != PM_RANK_RUNNING || s->cmd_pgid[i] <= 0 ||
		    (strcmp(ranks, "-") && pm_ranks_contains(ranks, r->grank) != 1))
			continue;
		if (busy && busy[i]) {
			char text[256];
			snprintf(text, sizeof(text), "procmgr: no stack for rank %d (pid %d): "
				 "another procmgr stacks is taking it now (one debugger at a "
				 "time); ask again\n", r->grank, (int)s->cmd_pgid[i]);
			each(s, arg, i, r->grank, text);
			continue;
		}
		*t = (struct pm_tool){ .st = st, .target = s->cmd_pgid[i], .lrank = i,
				       .grank = r->grank };
		/* Unique per capture: queries at once must not share a file. */
		snprintf(t->path, sizeof(t->path), "%s/stack.%u.%d", pm_query_rundir(s), ++seq, i);
		t->pid = pm_stacktool_spawn(tool, gdb, t->target, t->path);
		if (t->pid < 0) {
			pm_log(s, "cannot start %s for rank %d: %m", tool, r->grank);
			continue;
		}
		t->w = (struct pm_watch){ .fd = pm_pidfd_open(t->pid), .fn = on_tool_exit, .arg = t };
		if (t->w.fd < 0 || pm_loop_add(s->loop, &t->w, EPOLLIN)) {
			pm_log(s, "cannot watch %s for rank %d: %m", tool, r->grank);
			kill(t->pid, SIGKILL);
			waitpid(t->pid, NULL, 0);
			if (t->w.fd >= 0)
				close(t->w.fd);
			unlink(t->path);
			continue;
		}
		t->running = true;
		if (busy)
			busy[i] = true;
		st->n++;
		st->left++;
	}
	if (!st->n) {
		free_all(st);
		return 1;
	}
	*out = st;
	return 0;
}

void pm_stacks_cancel(struct pm_stacks *st)
{
	if (st)
		free_all(st);
}

/* ---- the stacks query ---- */

static void q_each(struct pm_step *s, void *arg, int lrank, int grank, const char *text)
{
	(void)lrank;
	pm_q_text(s, arg, grank, text);
}

static void q_fin(struct pm_step *s, void *arg)
{
	struct pm_q *q = arg;
	struct pm_stacks *st = q->stacks;

	q->stacks = NULL;
	pm_stacks_cancel(st);
	pm_q_local_done(s, q);
}

int pm_query_stacks(struct pm_step *s, struct pm_q *q)
{
	char why[512];
	double load = -1;
	int rc;

	/* A loaded node's debuggers take longer: the bound grows with the
	 * load (and a tool that still overruns says the bound and the load). */
	if (getloadavg(&load, 1) != 1)
		load = -1;
	rc = pm_stacks_take(s, q->args, pm_stack_bound_ms(PM_STACKS_MS, load,
							  sysconf(_SC_NPROCESSORS_ONLN),
							  PM_STACKS_MAX_MS),
			    q_each, q_fin, q, &q->stacks, why, sizeof(why));

	if (rc < 0) {
		strcat(why, "\n");
		pm_q_text(s, q, -1, why);
	}
	return rc == 0 ? 0 : -1;
}
