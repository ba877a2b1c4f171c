/* procmgr-rank: what a Slurm task becomes under procmgr. It keeps the
 * task's pid and stdio (Slurm's I/O forwarding, accounting and exit codes
 * keep working) and runs the user's command as its child, once per
 * generation, as procmgrd tells it. This file wires the event loop to the
 * machine (rank_machine.c), which decides; rank_exec.c runs the command,
 * rank_pump.c carries its stderr. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/contract.h"
#include "common/options.h"
#include "common/policy.h"
#include "common/slowsum.h"
#include "common/text.h"
#include "common/warm.h"
#include "io/conn.h"
#include "io/loop.h"
#include "io/outdir.h"
#include "io/sys.h"
#include "rank_exec.h"
#include "rank_machine.h"
#include "rank_pump.h"
#include "rank_stack.h"

struct rank {
	struct pm_loop loop;
	struct pm_conn *c;
	struct pm_rank_m m;
	struct pm_rank_cfg cfg;
	struct pm_rank_exec x;
	struct pm_rank_pump pump;
	/* --procmgr-output-dir: its descriptor, and the rank whose files the
	 * pumps write (a spare's supervisor takes a lost slot's rank) */
	struct pm_rank_pump pump_out;
	char output_dir[PM_OUTPUT_DIR_MAX];
	int out_dfd, file_rank;
	int lrank;
	const char *heartbeat;
	/* Slow-node detection: each new step of the heartbeat goes to
	 * procmgrd (PM_MSG_RANK_STEP); the last one said, +1 (0: none). */
	bool slow;
	uint64_t step_said;
	uint32_t step_gen;
	struct pm_watch sig_w, grace_w, hang_w, ino_w, live_w;
	/* On a hang: the command's stack, taken before it is stopped, within
	 * the step's stack-timeout */
	struct pm_rank_stack stack;
	unsigned stack_ms;
	/* Warm channels: [0] the running command's, [1] the standby's. */
	struct warm_ch {
		struct pm_watch w;
		struct pm_warm_buf buf;
		struct rank *r;
	} ch[2];
	/* A sweep: the trial this slot runs, and where trials' outputs go */
	struct pm_rank_trial trial;
	char *sweep_out;
};

/* ---- warm channels ---- */

static void ch_close(struct rank *r, int i)
{
	if (r->ch[i].w.fd < 0)
		return;
	pm_loop_del(&r->loop, &r->ch[i].w);
	close(r->ch[i].w.fd);
	r->ch[i].w.fd = -1;
	r->ch[i].buf.len = 0;
}

/* "ready" from the command or the standby; anything else is refused, said. */
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
		ch_close(r, i);
		return;
	}
	if (pm_warm_buf_add(&ch->buf, data, (size_t)n, why, sizeof(why))) {
		fprintf(stderr, "procmgr: rank %d on %s: the warm channel of its %s: %s; closed\n",
			r->m.grank, r->cfg.node, i ? "standby" : "command", why);
		ch_close(r, i);
		return;
	}
	while ((len = pm_warm_buf_line(&ch->buf, line, sizeof(line))) >= 0) {
		struct pm_rank_ev e = { .type = PM_RE_READY, .rank = -1, .status = i };
		if (pm_warm_parse(line, (size_t)len, &wl, why, sizeof(why)) ||
		    wl.kind != PM_WARM_READY) {
			fprintf(stderr, "procmgr: rank %d on %s: the warm channel of its %s: %s "
				"(a program says only: ready)\n", r->m.grank, r->cfg.node,
				i ? "standby" : "command",
				wl.kind != PM_WARM_READY ? "not a program's line" : why);
			continue;
		}
		pm_rank_m_event(&r->m, &e);
		if (r->ch[i].w.fd < 0)
			return;
	}
}

/* A new channel as [i]; the other end, for the child, in r->x.warm_fd. */
static int ch_open(struct rank *r, int i)
{
	int sv[2];

	ch_close(r, i);
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
	ch_close(r, 0);
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
		ch_close(r, 1);
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
		ch_close(r, 1);
		return -1;
	}
	ch_close(r, 0);
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

static void op_send(void *ctx, enum pm_msg_type t, uint32_t gen, int status, unsigned flags,
		    const char *text)
{
	struct rank *r = ctx;
	struct pm_msg m;

	pm_msg_init(&m, t);
	m.gen = gen;
	m.status = status;
	m.count = flags;
	if (text)
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

static const struct pm_rank_ops rank_ops = {
	.spawn = op_spawn,
	.send = op_send,
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

/* ---- events ---- */

static void on_timer(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct rank *r = w->arg;
	(void)l;
	(void)ev;
	pm_timer_ack(w->fd);
	pm_rank_m_post(&r->m, w == &r->grace_w ? PM_RE_GRACE : PM_RE_HANG);
}

/* The heartbeat's content, "STEP [COMPUTE_MS]", read as it changes: a
 * new step goes to procmgrd with when we saw it (our clock, not the
 * program's: a stopped or throttled program is seen late). A file that
 * does not hold that (a touch) says nothing more than the beat. */
static void tell_step(struct rank *r)
{
	char buf[64], text[96];
	uint64_t step;
	double compute;
	ssize_t n;
	struct pm_msg m;
	int fd;

	if (!r->c || r->m.child <= 0)
		return;
	if (r->step_gen != r->m.gen) {
		r->step_gen = r->m.gen;
		r->step_said = 0;
	}
	fd = open(r->heartbeat, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	if (pm_beat_parse(buf, &step, &compute) || step + 1 <= r->step_said)
		return;
	r->step_said = step + 1;
	pm_msg_init(&m, PM_MSG_RANK_STEP);
	m.gen = r->m.gen;
	snprintf(text, sizeof(text), "%llu %llu %.3f", (unsigned long long)step,
		 (unsigned long long)(pm_wall_s() * 1000.0), compute);
	pm_msg_set_text(&m, text);
	pm_conn_send(r->c, &m);
}

static void on_inotify(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct rank *r = w->arg;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	const char *base = strrchr(r->heartbeat, '/') + 1;
	ssize_t n;
	(void)l;
	(void)ev;

	while ((n = read(w->fd, buf, sizeof(buf))) > 0) {
		char *p = buf;
		while (p < buf + n) {
			struct inotify_event *ie = (struct inotify_event *)p;
			if (ie->len && !strcmp(ie->name, base)) {
				if (r->slow)
					tell_step(r);
				/* Without a hang timeout the machine judges no
				 * heartbeat: the file is there for the detector. */
				if (r->cfg.heartbeat)
					pm_rank_m_post(&r->m, PM_RE_BEAT);
			}
			p += sizeof(*ie) + ie->len;
		}
	}
}

static void on_signal(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct rank *r = w->arg;
	struct signalfd_siginfo si;
	(void)l;
	(void)ev;

	while (read(w->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		struct pm_rank_ev e = { .rank = -1, .status = (int)si.ssi_signo };
		if (si.ssi_signo == SIGCHLD) {
			int status;
			pid_t pid;
			while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
				if (pid > 0 && pid == r->m.sb) {
					kill(-pid, SIGKILL);
					ch_close(r, 1);
					e.type = PM_RE_SB_EXIT;
					e.status = status;
					pm_rank_m_event(&r->m, &e);
					continue;
				}
				if (pid != r->m.child)
					continue;
				/* What the command left in its group goes with it. */
				kill(-pid, SIGKILL);
				pm_rank_exec_kill_strays(r->m.sb);
				ch_close(r, 0);
				pm_rank_pump_drain(&r->pump_out, true);
				pm_rank_pump_drain(&r->pump, true);
				e.type = PM_RE_CHILD_EXIT;
				e.status = status;
				pm_rank_m_event(&r->m, &e);
			}
			continue;
		}
		e.type = si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT ? PM_RE_SIGTERM
									  : PM_RE_SIGNAL;
		pm_rank_m_event(&r->m, &e);
	}
}

/* procmgr's lines for srun (a restart and why, the step's end): also in
 * the rank's stderr file, which outlives srun. */
static void say(struct rank *r, const char *text)
{
	fprintf(stderr, "%s\n", text);
	fflush(stderr);
	if (r->pump.file_fd >= 0) {
		(void)!write(r->pump.file_fd, text, strlen(text));
		(void)!write(r->pump.file_fd, "\n", 1);
	}
}

/* A sweep's trial for this slot: its files, then a generation of its own
 * (the attempt is the generation number). Its stderr goes to its file,
 * still through the pump, whose tail says why it failed. */
static void trial_start(struct rank *r, const struct pm_msg *m)
{
	struct pm_rank_ev e = { .type = PM_RE_START, .gen = m->gen, .rank = -1, .group = -1 };
	char err[512];

	if (r->m.state != PM_RS_IDLE) {
		/* Never silent: the root would wait for this attempt for ever. */
		snprintf(err, sizeof(err), "procmgr: slot of rank %d is busy (%s)", r->m.grank,
			 pm_rank_state_name(r->m.state));
		op_send(r, PM_MSG_RANK_EXIT, m->gen, 126 << 8, 0, err);
		return;
	}
	pm_rank_pump_flush(&r->pump, true);
	r->pump.out_fd = STDERR_FILENO;
	if (!r->sweep_out || pm_rank_trial_set(&r->trial, m->rank, (int)m->count, m->text,
					       r->sweep_out, err, sizeof(err))) {
		if (!r->sweep_out)
			snprintf(err, sizeof(err), "a trial outside a sweep step");
		op_send(r, PM_MSG_RANK_EXIT, m->gen, 126 << 8, 0, err);
		return;
	}
	if (r->pump.err_fd >= 0) {
		r->pump.out_fd = r->trial.err_fd;
		r->pump.out_file = true;
	}
	pm_rank_m_event(&r->m, &e);
}

static void on_msg(struct pm_conn *c, const struct pm_msg *m)
{
	struct rank *r = c->w.arg;
	struct pm_rank_ev e = { .gen = m->gen, .rank = -1 };

	switch (m->type) {
	case PM_MSG_START:
		e.type = PM_RE_START;
		e.rank = m->rank;
		e.group = m->node;
		e.master = m->text;
		break;
	case PM_MSG_STOP:
		e.type = m->count & PM_FLAG_HUNG ? PM_RE_STOP_HUNG : PM_RE_STOP;
		break;
	case PM_MSG_FINISH:
		e.type = PM_RE_FINISH;
		break;
	case PM_MSG_ABORT:
		/* The failing rank, or rank 0 for a step-wide reason, says why. */
		if (m->text_len && (m->rank == r->m.grank || (m->rank < 0 && r->m.grank == 0)))
			say(r, m->text);
		/* srun's per-task lines then name the task that failed. */
		e.type = PM_RE_FINISH;
		e.status = (m->count & PM_FLAG_BLAME) && m->rank != r->m.grank ? 0 : m->status;
		break;
	case PM_MSG_PRINT:
		say(r, m->text);
		return;
	case PM_MSG_TRIAL_START:
		trial_start(r, m);
		return;
	case PM_MSG_TRIAL_STOP:
		e.type = PM_RE_STOP;
		break;
	default:
		return;
	}
	pm_rank_m_event(&r->m, &e);
}

static void on_close(struct pm_conn *c, const char *why)
{
	struct rank *r = c->w.arg;
	struct pm_rank_ev e = { .type = PM_RE_LINK_LOST, .rank = -1, .why = why };

	r->c = NULL;
	pm_conn_free(c);
	pm_rank_m_event(&r->m, &e);
}

/* procmgrd and we watch each other: each says something every third of
 * the peer timeout. */
static void on_live(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct rank *r = w->arg;
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	if (!r->c || pm_rank_m_exiting(&r->m))
		return;
	if (pm_conn_keepalive(r->c, pm_now_ms(), r->cfg.peer_timeout_ms))
		pm_rank_m_post(&r->m, PM_RE_PEER_SILENT);
}

/* ---- setup ---- */

static int env_uint(const char *name, unsigned *out)
{
	const char *v = getenv(name);
	return v ? pm_parse_uint(v, 0, ~0u, out) : 0;
}

/* The step's options as slurmstepd resolved them: the plugin sets them in
 * every rank's environment, in the one form options travel in. */
static int read_env(struct rank *r, int *grank, char *err, size_t errlen)
{
	const char *s = getenv(PM_ENV_STEP_OPTS);
	struct pm_opts o;
	unsigned v = 0;
	enum pm_warm_mode mode;
	char mods[PM_WARM_MODS_MAX];

	r->cfg.node = getenv("SLURMD_NODENAME") ? getenv("SLURMD_NODENAME") : "?";
	if (env_uint(PM_ENV_RANK, &v) == 0)
		*grank = (int)v;
	v = 0;
	if (env_uint(PM_ENV_LOCAL_RANK, &v) == 0)
		r->lrank = (int)v;
	pm_opts_init(&o);
	if (s && pm_opts_parse_str(&o, s, PM_ENV_STEP_OPTS, err, errlen))
		return -1;
	r->cfg.grace_ms = o.grace_ms;
	r->stack_ms = o.stack_timeout_ms;
	r->cfg.hang_ms = o.hang_timeout_ms;
	r->cfg.hang_first_ms = o.hang_first_ms;
	if (o.warm[0] && pm_warm_mode_parse(o.warm, &mode, mods, sizeof(mods)) == 0)
		r->cfg.warm = mode == PM_WARM_CONTRACT ? PM_RW_CONTRACT :
			      mode == PM_WARM_PYTHON ? PM_RW_PYTHON : PM_RW_OFF;
	if (r->cfg.warm == PM_RW_PYTHON)
		pm_rank_exec_python_argv(&r->x, mods);
	r->slow = pm_opts_slow_interval(&o) != 0;
	r->heartbeat = r->cfg.hang_ms || r->slow ? getenv(PM_ENV_HEARTBEAT) : NULL;
	r->cfg.heartbeat = r->heartbeat != NULL && r->cfg.hang_ms;
	r->x.heartbeat = r->heartbeat;
	r->x.error_base = getenv(PM_ENV_TE_ERROR_FILE);
	snprintf(r->output_dir, sizeof(r->output_dir), "%s", o.output_dir);
	if (o.sweep[0] && asprintf(&r->sweep_out, "%s.out", o.sweep) < 0)
		r->sweep_out = NULL;
	r->cfg.peer_timeout_ms = PM_DEFAULT_PEER_TIMEOUT_MS;
	if (env_uint(PM_ENV_PEER_TIMEOUT, &r->cfg.peer_timeout_ms)) {
		snprintf(err, errlen, PM_ENV_PEER_TIMEOUT " is not a number of milliseconds");
		return -1;
	}
	return 0;
}

static int add_timer(struct rank *r, struct pm_watch *w, pm_io_fn fn)
{
	*w = (struct pm_watch){ .fd = pm_timer_new(), .fn = fn, .arg = r };
	return w->fd < 0 || pm_loop_add(&r->loop, w, EPOLLIN) ? -1 : 0;
}

static int setup(struct rank *r, int *grank, char *err, size_t errlen)
{
	const char *sock = getenv(PM_ENV_SOCK);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	sigset_t set;
	struct pm_msg m;
	int fd;

	if (!sock || strlen(sock) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, PM_ENV_SOCK " is not set: procmgr-rank runs inside a "
			 "procmgr step only");
		return -1;
	}
	if (read_env(r, grank, err, errlen))
		return -1;

	/* Our own mask from slurmstepd is what the command should get, less
	 * what slurmstepd blocks for itself. */
	sigemptyset(&r->x.orig_mask);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGQUIT);
	sigprocmask(SIG_SETMASK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_CHILD_SUBREAPER, 1);

	if (pm_loop_init(&r->loop))
		goto sys;
	r->sig_w = (struct pm_watch){ .fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC),
				      .fn = on_signal, .arg = r };
	if (r->sig_w.fd < 0 || pm_loop_add(&r->loop, &r->sig_w, EPOLLIN) ||
	    add_timer(r, &r->grace_w, on_timer) || add_timer(r, &r->hang_w, on_timer))
		goto sys;
	if (r->cfg.peer_timeout_ms) {
		unsigned period = pm_conn_ping_period(r->cfg.peer_timeout_ms);
		if (add_timer(r, &r->live_w, on_live) || pm_timer_set(r->live_w.fd, period, period))
			goto sys;
	}
	if (r->heartbeat) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", r->heartbeat);
		r->ino_w = (struct pm_watch){ .fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC),
					      .fn = on_inotify, .arg = r };
		if (r->ino_w.fd < 0 ||
		    inotify_add_watch(r->ino_w.fd, dirname(dir),
				      IN_CREATE | IN_ATTRIB | IN_MODIFY | IN_CLOSE_WRITE) < 0 ||
		    pm_loop_add(&r->loop, &r->ino_w, EPOLLIN))
			goto sys;
	}
	if (pm_rank_pump_init(&r->pump, &r->loop, STDERR_FILENO))
		goto sys;
	r->x.err_fd = r->pump.child_fd;
	if (r->output_dir[0]) {
		char why[512];
		/* stdout passes through us only when it has a file to go to. */
		if (pm_rank_pump_init(&r->pump_out, &r->loop, STDOUT_FILENO))
			goto sys;
		r->x.out_fd = r->pump_out.child_fd;
		r->out_dfd = pm_outdir_open(r->output_dir, why, sizeof(why));
		if (r->out_dfd < 0)
			fprintf(stderr, "procmgr: rank %d on %s: --procmgr-output-dir: %s; this "
				"rank's output goes to srun only\n", *grank, r->cfg.node, why);
	}

	strcpy(sa.sun_path, sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		snprintf(err, errlen, "cannot reach procmgrd at %s: %s", sock, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	r->c = pm_conn_new(&r->loop, fd, on_msg, on_close, r);
	if (!r->c)
		goto sys;
	pm_msg_init(&m, PM_MSG_RANK_HELLO);
	m.rank = *grank;
	m.node = r->lrank;
	m.status = getpid();
	return pm_conn_send(r->c, &m);
sys:
	snprintf(err, errlen, "setup: %s", strerror(errno));
	return -1;
}

int main(int argc, char **argv)
{
	static struct rank r;
	char err[512];
	const char *argv0 = getenv(PM_ENV_ARGV0);
	int grank = 0;

	r.x.link_fd = r.x.err_fd = r.x.out_fd = r.x.warm_fd = -1;
	r.ch[0].w.fd = r.ch[1].w.fd = -1;
	r.trial.out_fd = r.trial.err_fd = -1;
	r.pump.err_fd = r.pump.child_fd = r.pump.file_fd = -1;
	r.pump_out.err_fd = r.pump_out.child_fd = r.pump_out.file_fd = -1;
	r.out_dfd = r.file_rank = -1;
	if (argc < 1 || !argv0) {
		fprintf(stderr, "procmgr-rank: " PM_ENV_ARGV0 " is not set: procmgr-rank runs "
			"inside a procmgr step only\n");
		return 2;
	}
	/* Slurm exec'd us in place of the command: put the command back. */
	argv[0] = strdup(argv0);
	unsetenv(PM_ENV_ARGV0);
	r.x.argv = argv;
	if (setup(&r, &grank, err, sizeof(err))) {
		fprintf(stderr, "procmgr: rank %d: %s\n", grank, err);
		return 1;
	}
	pm_rank_m_init(&r.m, &r.cfg, &rank_ops, &r, grank);
	if (pm_loop_run(&r.loop))
		fprintf(stderr, "procmgr: rank %d: epoll: %s\n", r.m.grank, strerror(errno));
	pm_rank_pump_drain(&r.pump_out, true);
	pm_rank_pump_flush(&r.pump_out, true);
	pm_rank_pump_free(&r.pump_out);
	pm_rank_pump_drain(&r.pump, true);
	pm_rank_pump_flush(&r.pump, true);
	pm_rank_pump_free(&r.pump);
	pm_rank_trial_clear(&r.trial);
	if (r.x.error_file[0])
		unlink(r.x.error_file);
	if (r.c)
		pm_conn_free(r.c);
	if (r.m.sb > 0)
		kill(-r.m.sb, SIGKILL);
	pm_rank_stack_stop(&r.stack);
	if (r.heartbeat)
		unlink(r.heartbeat);
	fflush(stderr);
	return r.m.exit_code;
}
