/* procmgr-rank: what the machine (rank_machine.c) decides, done: the
 * command spawned (rank_exec.c), its standby released, messages to
 * procmgrd, signals, timers, the hang's stack; and the warm channels over
 * which a command or its standby says "ready". */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/contract.h"
#include "common/options.h"
#include "common/policy.h"
#include "common/slowsum.h"
#include "common/text.h"
#include "io/sys.h"
#include "rank_sup.h"
#include "sweep/sweep_metric.h"

/* ---- warm channels ---- */

/* The processes reaped before anyone asked for them (a fork server's
 * generation that ended before its pid was said): the last few, with their
 * status, for the START that names one (rank_events.c adds them). */
void pm_rank_early_add(struct rank *r, pid_t pid, int status)
{
	int n = (int)(sizeof(r->early) / sizeof(r->early[0]));

	if (r->n_early >= n) { /* the oldest goes */
		memmove(r->early, r->early + 1, sizeof(r->early[0]) * (size_t)(n - 1));
		r->n_early = n - 1;
	}
	r->early[r->n_early].pid = pid;
	r->early[r->n_early].status = status;
	r->n_early++;
}

int pm_rank_early_take(struct rank *r, pid_t pid, int *status)
{
	int i;

	for (i = 0; i < r->n_early; i++)
		if (r->early[i].pid == pid) {
			*status = r->early[i].status;
			r->early[i] = r->early[--r->n_early];
			return 0;
		}
	return -1;
}

void pm_rank_ch_close(struct rank *r, int i)
{
	if (r->ch[i].w.fd < 0)
		return;
	pm_loop_del(&r->loop, &r->ch[i].w);
	close(r->ch[i].w.fd);
	r->ch[i].w.fd = -1;
	r->ch[i].buf.len = 0;
}

/* The parent of pid, from /proc; -1 if gone. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the name may hold anything */
	return p && p[1] == ' ' && p[2] && p[3] == ' ' ? (pid_t)atoi(p + 4) : -1;
}

/* "pid N" from the fork server: the generation's process, ours only if it
 * is our child (double-forked to us, its subreaper) or ended as one
 * already. Anything else: the server is not believed, it goes, and the
 * generation starts cold (its end says so). */
static void on_forked(struct rank *r, pid_t pid)
{
	struct pm_rank_ev e = { .type = PM_RE_FORKED, .rank = -1, .status = pid };
	int status;
	bool ended = pm_rank_early_take(r, pid, &status) == 0;

	if (pid == r->m.sb || (!ended && parent_of(pid) != getpid())) {
		fprintf(stderr, "procmgr: rank %d on %s: the fork server said pid %d, not a child "
			"of this supervisor; stopping it\n", r->m.grank, r->cfg.node, (int)pid);
		if (r->m.sb > 0)
			kill(-r->m.sb, SIGKILL);
		return; /* its SIGCHLD: SB_EXIT, cold */
	}
	r->n_early = 0;
	pm_rank_m_event(&r->m, &e);
	if (r->m.child != pid) { /* not asked for (no fork pending): not kept */
		if (!ended) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
		}
		return;
	}
	if (ended) { /* as rank_events.c's SIGCHLD does for the command */
		struct pm_rank_ev x = { .type = PM_RE_CHILD_EXIT, .rank = -1, .status = status };
		kill(-pid, SIGKILL);
		pm_rank_exec_kill_strays(r->m.sb);
		pm_rank_ch_close(r, 0);
		pm_rank_pump_drain(&r->pump_out, true);
		pm_rank_pump_drain(&r->pump, true);
		pm_rank_m_event(&r->m, &x);
	}
}

/* "ready" from the command or the standby; "pid N" from the fork server;
 * anything else is refused, said. */
static void on_warm(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct warm_ch *ch = w->arg;
	struct rank *r = ch->r;
	int i = ch == &r->ch[1];
	char data[PM_WARM_LINE_MAX], line[PM_WARM_LINE_MAX], why[256];
	struct pm_warm_line wl;
	ssize_t n;
	int len;
	(void)l;
	(void)ev;

	n = read(w->fd, data, sizeof(data));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) { /* closed: its process ended, or is done with it */
		pm_rank_ch_close(r, i);
		return;
	}
	if (pm_warm_buf_add(&ch->buf, data, (size_t)n, why, sizeof(why))) {
		fprintf(stderr, "procmgr: rank %d on %s: the warm channel of its %s: %s; closed\n",
			r->m.grank, r->cfg.node, i ? "standby" : "command", why);
		pm_rank_ch_close(r, i);
		return;
	}
	while ((len = pm_warm_buf_line(&ch->buf, line, sizeof(line))) >= 0) {
		struct pm_rank_ev e = { .type = PM_RE_READY, .rank = -1, .status = i };
		int bad = pm_warm_parse(line, (size_t)len, &wl, why, sizeof(why));
		if (!bad && wl.kind == PM_WARM_PID && i == 1 && r->cfg.warm == PM_RW_PYTHON) {
			on_forked(r, wl.pid);
		} else if (bad || wl.kind != PM_WARM_READY) {
			fprintf(stderr, "procmgr: rank %d on %s: the warm channel of its %s: %s "
				"(a program says only: ready)\n", r->m.grank, r->cfg.node,
				i ? "standby" : "command", bad ? why : "not a program's line");
			continue;
		} else {
			pm_rank_m_event(&r->m, &e);
		}
		if (r->ch[i].w.fd < 0)
			return;
	}
}

/* A new channel as [i]; the other end, for the child, in r->x.warm_fd. */
static int ch_open(struct rank *r, int i)
{
	int sv[2];

	pm_rank_ch_close(r, i);
	r->x.warm_fd = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		fprintf(stderr, "procmgr: rank %d on %s: no warm channel: %s\n", r->m.grank,
			r->cfg.node, strerror(errno));
		return -1;
	}
	r->ch[i].w = (struct pm_watch){ .fd = sv[0], .fn = on_warm, .arg = &r->ch[i] };
	r->ch[i].r = r;
	if (pm_loop_add(&r->loop, &r->ch[i].w, EPOLLIN)) {
		close(sv[0]);
		close(sv[1]);
		r->ch[i].w.fd = -1;
		return -1;
	}
	r->x.warm_fd = sv[1];
	return 0;
}

static void ch_child_end_done(struct rank *r)
{
	if (r->x.warm_fd >= 0)
		close(r->x.warm_fd);
	r->x.warm_fd = -1;
}

static int ch_write(struct rank *r, int i, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(r->ch[i].w.fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---- the machine's effects ---- */

/* The generation's rank's files, opened when the rank changes, and a line
 * in each where a generation begins. A file that cannot be opened is said
 * on stderr (srun's) and the rank runs on without it. */
static void output_files(struct rank *r, const struct pm_rank_who *who)
{
	struct pm_rank_pump *pumps[2] = { &r->pump_out, &r->pump };
	static const char *const streams[2] = { "out", "err" };
	char name[64], why[512], line[256], when[64];
	time_t now = time(NULL);
	struct tm tm;
	int i, n;

	if (r->out_dfd < 0)
		return;
	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S%z", &tm);
	n = snprintf(line, sizeof(line), "procmgr: generation %u of rank %d starts on %s at %s\n",
		     who->gen, who->grank, r->cfg.node, when);
	for (i = 0; i < 2; i++) {
		int fd = pumps[i]->file_fd;
		if (pumps[i]->err_fd < 0)
			continue; /* a terminal: the command has it */
		if (fd < 0 || r->file_rank != who->grank) {
			pm_outdir_name(name, sizeof(name), who->grank, streams[i]);
			fd = pm_outdir_file(r->out_dfd, name, why, sizeof(why));
			if (fd < 0)
				fprintf(stderr, "procmgr: rank %d on %s: --procmgr-output-dir=%s: %s\n",
					who->grank, r->cfg.node, r->output_dir, why);
			pm_rank_pump_set_file(pumps[i], fd);
		}
		if (fd >= 0)
			(void)!write(fd, line, (size_t)n);
	}
	r->file_rank = who->grank;
}

static pid_t op_spawn(void *ctx, const struct pm_rank_m *m, bool *noexec)
{
	struct rank *r = ctx;
	struct pm_rank_who who = { .gen = m->gen, .grank = m->grank, .group = m->group,
				   .master = m->master, .trial = r->trial.on ? &r->trial : NULL };
	pid_t pid;

	pm_tail_reset(&r->pump.tail);
	output_files(r, &who);
	r->x.link_fd = r->c ? r->c->w.fd : -1;
	pm_rank_ch_close(r, 0);
	r->x.warm_fd = -1;
	if (r->cfg.warm != PM_RW_OFF)
		ch_open(r, 0); /* without one, the command is cold as without warm */
	pid = pm_rank_exec_spawn(&r->x, &who, noexec);
	ch_child_end_done(r);
	return pid;
}

static pid_t op_standby(void *ctx, const struct pm_rank_m *m)
{
	struct rank *r = ctx;
	pid_t pid;

	if (r->cfg.warm == PM_RW_PYTHON && !r->x.sb_argv) {
		fprintf(stderr, "procmgr: rank %d on %s: --procmgr-warm=python: the command is not "
			"a python interpreter (%s); every generation starts cold\n", m->grank,
			r->cfg.node, r->x.argv[0]);
		return -1;
	}
	r->x.link_fd = r->c ? r->c->w.fd : -1;
	if (ch_open(r, 1))
		return -1;
	pid = pm_rank_exec_standby(&r->x, m->grank);
	ch_child_end_done(r);
	if (pid <= 0)
		pm_rank_ch_close(r, 1);
	return pid;
}

/* The standby becomes the generation: its environment, then "start"; its
 * channel is the command's from now on. */
static int op_release(void *ctx, const struct pm_rank_m *m, bool standby)
{
	struct rank *r = ctx;
	struct pm_rank_who who = { .gen = m->gen, .grank = m->grank, .group = m->group,
				   .master = m->master };
	struct pm_rank_envvar vars[PM_RANK_GENENV_MAX];
	char buf[PM_RANK_GENENV_MAX * (PM_WARM_LINE_MAX + 1)], why[256];
	size_t off = 0;
	int i, n, k;

	if (!standby) {
		n = pm_warm_format_start(buf, sizeof(buf), m->gen);
		return r->ch[0].w.fd < 0 || n < 0 || ch_write(r, 0, buf, (size_t)n) ? -1 : 0;
	}
	if (r->ch[1].w.fd < 0)
		return -1;
	pm_tail_reset(&r->pump.tail);
	pm_rank_exec_prepare(&r->x, &who, true);
	n = pm_rank_exec_genenv(&r->x, &who, vars);
	for (i = 0; i < n; i++) {
		k = pm_warm_format_env(buf + off, sizeof(buf) - off, vars[i].name, vars[i].value,
				       why, sizeof(why));
		if (k < 0) {
			fprintf(stderr, "procmgr: rank %d on %s: %s\n", m->grank, r->cfg.node, why);
			return -1;
		}
		off += (size_t)k;
	}
	k = pm_warm_format_start(buf + off, sizeof(buf) - off, m->gen);
	if (k < 0 || ch_write(r, 1, buf, off + (size_t)k)) {
		pm_rank_ch_close(r, 1);
		return -1;
	}
	if (r->cfg.warm == PM_RW_PYTHON) {
		/* The fork server stays the standby, on its own channel. */
		pm_rank_ch_close(r, 0);
		r->n_early = 0;
		return 0;
	}
	pm_rank_ch_close(r, 0);
	r->ch[0] = r->ch[1];
	r->ch[0].w.arg = &r->ch[0];
	pm_loop_del(&r->loop, &r->ch[1].w);
	r->ch[1].w.fd = -1;
	r->ch[1].buf.len = 0;
	if (pm_loop_add(&r->loop, &r->ch[0].w, EPOLLIN)) {
		close(r->ch[0].w.fd);
		r->ch[0].w.fd = -1;
	}
	return 0;
}

/* The end of a trial's attempt on its rank 0 carries the trial's result
 * (sweep/sweep_metric.h); a file that holds none is said in the trial's
 * stderr file, where its author looks. */
static void trial_result(struct rank *r, struct pm_msg *m, const char *text)
{
	struct pm_metric res;
	char why[256];
	int k = pm_rank_trial_result(&r->trial, &res, why, sizeof(why));

	if (k < 0 && r->trial.err_fd >= 0)
		dprintf(r->trial.err_fd, "procmgr: trial %s: no result: %s=%s: %s\n",
			r->trial.name, PM_ENV_RESULT_FILE, r->trial.result_path, why);
	pm_metric_encode(m, k > 0 ? &res : NULL, text);
}

void pm_rank_send(void *ctx, enum pm_msg_type t, uint32_t gen, int status, unsigned flags,
		    const char *text)
{
	struct rank *r = ctx;
	struct pm_msg m;

	pm_msg_init(&m, t);
	m.gen = gen;
	m.status = status;
	m.count = flags;
	if (t == PM_MSG_RANK_EXIT && r->trial.on && r->trial.rank == 0 &&
	    !(flags & PM_FLAG_CANCEL))
		trial_result(r, &m, text);
	else if (text)
		pm_msg_set_text(&m, text);
	if (r->c)
		pm_conn_send(r->c, &m);
}

static void op_kill(void *ctx, pid_t pgid, int sig)
{
	(void)ctx;
	if (pgid < -1)
		kill(pgid, sig);
}

static void op_timer(void *ctx, enum pm_rank_timer t, unsigned ms)
{
	struct rank *r = ctx;

	pm_timer_set(t == PM_RT_GRACE ? r->grace_w.fd : r->hang_w.fd, ms, 0);
}

static void captured(void *arg)
{
	struct rank *r = arg;

	pm_rank_m_post(&r->m, PM_RE_CAPTURED);
}

/* Where procmgrd looks for it: beside the heartbeat files. */
static int op_capture(void *ctx, pid_t pid)
{
	struct rank *r = ctx;
	char path[4096], dir[4096], why[256];

	snprintf(dir, sizeof(dir), "%s", r->heartbeat ? r->heartbeat : "");
	if (!r->heartbeat || pm_path_hang_stack(path, sizeof(path), dirname(dir), r->lrank))
		return -1;
	if (pm_rank_stack_start(&r->stack, &r->loop, pid, path, r->stack_ms, captured, r,
				why, sizeof(why))) {
		fprintf(stderr, "procmgr: rank %d on %s: no stack at the hang: %s\n", r->m.grank,
			r->cfg.node, why);
		return -1;
	}
	return 0;
}

static void op_capture_stop(void *ctx)
{
	struct rank *r = ctx;

	pm_rank_stack_stop(&r->stack);
}

static void op_failure(void *ctx, char *text, size_t len)
{
	struct rank *r = ctx;

	pm_rank_exec_failure(r->x.error_file, &r->pump.tail, text, len);
	/* A trial's stdout is in its file: its last line when stderr said
	 * nothing. */
	if (!text[0] && r->trial.on)
		pm_rank_trial_stdout_failure(&r->trial, text, len);
}

static void op_say(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "%s\n", line);
}

static uint64_t op_wall_ms(void *ctx)
{
	(void)ctx;
	return (uint64_t)(pm_wall_s() * 1000.0);
}

static void op_done(void *ctx)
{
	struct rank *r = ctx;

	pm_loop_stop(&r->loop);
}

const struct pm_rank_ops pm_rank_live_ops = {
	.spawn = op_spawn,
	.send = pm_rank_send,
	.kill = op_kill,
	.timer = op_timer,
	.capture = op_capture,
	.capture_stop = op_capture_stop,
	.failure = op_failure,
	.say = op_say,
	.wall_ms = op_wall_ms,
	.done = op_done,
	.standby = op_standby,
	.release = op_release,
};
