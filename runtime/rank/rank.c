/* procmgr-rank: what a Slurm task becomes under procmgr. It keeps the
 * task's pid and stdio (Slurm's I/O forwarding, accounting and exit codes
 * keep working) and runs the user's command as its child, once per
 * generation, as procmgrd tells it. */
#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/contract.h"
#include "common/errinfo.h"
#include "common/options.h"
#include "common/policy.h"
#include "common/text.h"
#include "io/conn.h"
#include "io/loop.h"
#include "rank_stack.h"

struct rank {
	struct pm_loop loop;
	struct pm_conn *c;
	char **argv;
	int grank, lrank;
	/* Spares: who this rank is in the generation it runs (START says). */
	int group;
	char master[256];
	const char *node;
	unsigned grace_ms, hang_ms, hang_first_ms;
	unsigned peer_timeout_ms; /* procmgrd silent this long: it is gone */
	const char *heartbeat;
	const char *error_base; /* TORCHELASTIC_ERROR_FILE as the plugin set it */
	char error_file[PATH_MAX]; /* the generation's own, "" if none */
	/* The command's stderr passes through us (err_fd: our end of the pipe)
	 * so that its last lines can say why it failed. -1: straight to ours. */
	int err_fd, err_child;
	struct pm_tail tail;
	char *ob;              /* the command's stderr that ours has not taken */
	size_t olen, ooff, ocap;
	bool out_armed;        /* waiting for our stderr; the pipe not read */
	bool out_file;         /* our stderr cannot be waited for (a file) */
	/* the current generation */
	pid_t child;
	uint32_t gen;
	bool stopping;   /* we are stopping it: its end is not a failure */
	bool hung, beat;
	uint64_t beat_wall_ms; /* last heartbeat, or the start (epoch ms) */
	bool noexec;     /* exec failed: it would fail the same way again */
	int last_status;
	/* how to end */
	bool exiting;
	int exit_code;
	struct pm_watch sig_w, grace_w, hang_w, ino_w, live_w, err_w, out_w;
	sigset_t orig_mask;
	/* On a hang: the command's stack, taken before it is stopped */
	struct pm_rank_stack stack;
	bool capturing;
	uint32_t capture_gen; /* the generation whose command is being captured */
};

static void msg(struct rank *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void msg(struct rank *r, const char *fmt, ...)
{
	va_list ap;
	(void)r;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void on_out(struct pm_loop *l, struct pm_watch *w, uint32_t ev);

static void send_text(struct rank *r, enum pm_msg_type t, int status, unsigned flags,
		      const char *text)
{
	struct pm_msg m;
	pm_msg_init(&m, t);
	m.gen = r->gen;
	m.status = status;
	m.count = flags;
	if (text)
		pm_msg_set_text(&m, text);
	if (r->c)
		pm_conn_send(r->c, &m);
}

static void send_simple(struct rank *r, enum pm_msg_type t, int status, unsigned flags)
{
	send_text(r, t, status, flags, NULL);
}

static uint64_t wall_ms(void)
{
	return (uint64_t)(pm_wall_s() * 1000.0);
}

/* Descendants that left the process group come back to us (we are their
 * subreaper) once their parent is gone: none may outlive the generation. */
static void kill_strays(void)
{
	char path[300], buf[4096];
	DIR *dir = opendir("/proc/self/task");
	struct dirent *de;

	if (!dir)
		return;
	while ((de = readdir(dir))) {
		int fd;
		ssize_t n;
		char *p, *save = NULL;
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/children", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		for (p = strtok_r(buf, " \n", &save); p; p = strtok_r(NULL, " \n", &save))
			kill((pid_t)atoi(p), SIGKILL);
	}
	closedir(dir);
}

static void start_child(struct rank *r, uint32_t gen)
{
	/* A capture of the last generation's command (it ended meanwhile)
	 * must not stop this one. */
	if (r->capturing) {
		pm_rank_stack_stop(&r->stack);
		r->capturing = false;
	}
	char count[16];
	int ep[2], e;
	ssize_t n;
	pid_t pid, parent = getpid();

	r->gen = gen;
	r->stopping = false;
	r->hung = false;
	r->beat = false;
	r->beat_wall_ms = wall_ms();
	if (r->heartbeat)
		unlink(r->heartbeat); /* judged after its first heartbeat, or FIRST */
	pm_timer_set(r->hang_w.fd, r->heartbeat ? r->hang_first_ms : 0, 0);
	/* An error is the generation's own: the last one's file goes. */
	if (r->error_file[0])
		unlink(r->error_file);
	r->error_file[0] = '\0';
	if (r->error_base &&
	    pm_path_error_file_gen(r->error_file, sizeof(r->error_file), r->error_base, gen) == 0)
		unlink(r->error_file);
	pm_tail_reset(&r->tail);
	snprintf(count, sizeof(count), "%u", gen);
	/* In the ranks' output and per-task files, where a generation begins. */
	if (gen > 0)
		msg(r, "procmgr: rank %d: generation %u starts", r->grank, gen);
	r->noexec = false;
	/* Closed by a successful exec; an errno comes back through it if exec
	 * fails, which tells "cannot run" from a command exiting 127. */
	if (pipe2(ep, O_CLOEXEC)) {
		msg(r, "procmgr: rank %d: pipe: %s", r->grank, strerror(errno));
		send_simple(r, PM_MSG_RANK_EXIT, 127 << 8, 0);
		return;
	}
	pid = fork();
	if (pid < 0) {
		close(ep[0]);
		close(ep[1]);
		msg(r, "procmgr: rank %d: fork: %s", r->grank, strerror(errno));
		send_simple(r, PM_MSG_RANK_EXIT, 127 << 8, 0);
		return;
	}
	if (pid == 0) {
		/* Never outlive the supervisor (procmgrd kills the group too). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(137);
		setpgid(0, 0);
		/* procmgrd takes the command's stacks (procmgr stacks, a hang):
		 * under Yama's ptrace_scope 1 only a declared tracer may. */
		{
			struct ucred cr;
			socklen_t cl = sizeof(cr);
			if (r->c && !getsockopt(r->c->w.fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl))
				prctl(PR_SET_PTRACER, (unsigned long)cr.pid);
		}
		sigprocmask(SIG_SETMASK, &r->orig_mask, NULL);
		signal(SIGPIPE, SIG_DFL);
		setenv(PM_ENV_RESTART_COUNT, count, 1);
		setenv(PM_ENV_TE_RESTART_COUNT, count, 1);
		if (r->group >= 0) {
			char v[16];
			snprintf(v, sizeof(v), "%d", r->grank);
			setenv(PM_ENV_RANK, v, 1);
			setenv(PM_ENV_ROLE_RANK, v, 1);
			snprintf(v, sizeof(v), "%d", r->group);
			setenv(PM_ENV_GROUP_RANK, v, 1);
			if (r->master[0])
				setenv(PM_ENV_MASTER_ADDR, r->master, 1);
		}
		if (r->error_file[0])
			setenv(PM_ENV_TE_ERROR_FILE, r->error_file, 1);
		if (r->err_child >= 0 && dup2(r->err_child, STDERR_FILENO) < 0)
			_exit(126);
		close(ep[0]);
		execvp(r->argv[0], r->argv);
		e = errno;
		(void)!write(ep[1], &e, sizeof(e));
		fprintf(stderr, "procmgr: rank %d: cannot run %s: %s\n", r->grank,
			r->argv[0], strerror(e));
		_exit(e == ENOENT ? 127 : 126);
	}
	setpgid(pid, pid); /* both sides: no race with the first kill */
	r->child = pid;
	send_simple(r, PM_MSG_RANK_RUN, pid, 0);
	close(ep[1]);
	while ((n = read(ep[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	r->noexec = n == (ssize_t)sizeof(e);
	close(ep[0]);
}

static void stop_child(struct rank *r)
{
	if (r->child <= 0 || r->stopping)
		return;
	r->stopping = true;
	kill(-r->child, SIGTERM);
	kill(-r->child, SIGCONT);
	pm_timer_set(r->grace_w.fd, r->grace_ms, 0);
}

static void captured(void *arg)
{
	struct rank *r = arg;

	r->capturing = false;
	/* The command whose stack was taken, not one started since. */
	if (r->gen == r->capture_gen)
		stop_child(r);
}

/* Its stack first (rank_stack.h), for procmgrd to send up; then the stop. */
static void capture_then_stop(struct rank *r)
{
	char path[4096], dir[4096], why[256];

	if (r->capturing)
		return;
	snprintf(dir, sizeof(dir), "%s", r->heartbeat ? r->heartbeat : "");
	if (!r->heartbeat || r->child <= 0 || r->stopping ||
	    pm_path_hang_stack(path, sizeof(path), dirname(dir), r->lrank)) {
		stop_child(r);
		return;
	}
	if (pm_rank_stack_start(&r->stack, &r->loop, r->child, path, PM_HANG_STACK_MS, captured,
				r, why, sizeof(why))) {
		msg(r, "procmgr: rank %d on %s: no stack at the hang: %s", r->grank, r->node, why);
		stop_child(r);
		return;
	}
	r->capturing = true;
	r->capture_gen = r->gen;
}

static void finish(struct rank *r, int code)
{
	r->exiting = true;
	r->exit_code = code;
	if (r->child > 0)
		stop_child(r);
	else
		pm_loop_stop(&r->loop);
}

static void on_grace(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct rank *r = w->arg;
	(void)l;
	(void)ev;
	pm_timer_ack(w->fd);
	if (r->child > 0)
		kill(-r->child, SIGKILL);
}

static void on_hang(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct rank *r = w->arg;
	char secs[32];
	(void)l;
	(void)ev;
	pm_timer_ack(w->fd);
	if (r->child <= 0 || r->stopping || (!r->beat && !r->hang_first_ms))
		return;
	r->hung = true;
	if (r->beat) {
		pm_fmt_seconds(r->hang_ms, secs, sizeof(secs));
		msg(r, "procmgr: rank %d on %s hung: no heartbeat for %s s", r->grank, r->node,
		    secs);
	} else {
		pm_fmt_seconds(r->hang_first_ms, secs, sizeof(secs));
		msg(r, "procmgr: rank %d on %s hung: no first heartbeat within %s s of its start",
		    r->grank, r->node, secs);
	}
	capture_then_stop(r);
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
			if (ie->len && !strcmp(ie->name, base) && r->child > 0 && !r->stopping) {
				if (!r->beat) /* for the root's "every rank beats" */
					send_simple(r, PM_MSG_RANK_RUN, r->child, PM_FLAG_BEAT);
				r->beat = true;
				r->beat_wall_ms = wall_ms();
				pm_timer_set(r->hang_w.fd, r->hang_ms, 0);
			}
			p += sizeof(*ie) + ie->len;
		}
	}
}

/* What the command wrote on stderr goes on to ours, its last lines kept.
 * We never block on our stderr (a stuck srun would make procmgrd judge us
 * silent): what Slurm cannot take yet waits in ob, and meanwhile the pipe
 * is not read, so the command blocks as it did writing to Slurm itself. */
static void out_wait(struct rank *r, bool wait)
{
	if (wait == r->out_armed)
		return;
	/* Watched only while waiting: a closed reader's HUP would not stop. */
	if (wait) {
		r->out_w = (struct pm_watch){ .fd = STDERR_FILENO, .fn = on_out, .arg = r };
		if (pm_loop_add(&r->loop, &r->out_w, EPOLLOUT)) {
			r->out_file = true; /* a file: never waits long; written as it comes */
			return;
		}
	} else {
		pm_loop_del(&r->loop, &r->out_w);
	}
	r->out_armed = wait;
	pm_loop_mod(&r->loop, &r->err_w, wait ? 0 : EPOLLIN);
}

/* As much of ob as our stderr takes now; block: all of it (at exit). */
static void flush_out(struct rank *r, bool block)
{
	while (r->ooff < r->olen) {
		struct pollfd p = { .fd = STDERR_FILENO, .events = POLLOUT };
		size_t n = r->olen - r->ooff;
		ssize_t k;

		if (!block && !r->out_file && poll(&p, 1, 0) == 0) {
			out_wait(r, true);
			if (r->out_armed)
				return;
		}
		/* A pipe that polls writable takes PIPE_BUF bytes without blocking. */
		if (!block && n > PIPE_BUF)
			n = PIPE_BUF;
		k = write(STDERR_FILENO, r->ob + r->ooff, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r->ooff = r->olen; /* our stderr is gone: keep the tail anyway */
			break;
		}
		r->ooff += (size_t)k;
	}
	r->ooff = r->olen = 0;
	out_wait(r, false);
}

static void on_out(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	(void)l;
	(void)ev;
	flush_out(w->arg, false);
}

/* Reads what the pipe holds (all of it: final, once the command ended). */
static void drain_stderr(struct rank *r, bool final)
{
	ssize_t n;

	if (r->err_fd < 0)
		return;
	for (;;) {
		if (r->olen + 16384 > r->ocap) {
			size_t cap = r->olen + 65536;
			char *b = realloc(r->ob, cap);
			if (!b)
				break;
			r->ob = b;
			r->ocap = cap;
		}
		n = read(r->err_fd, r->ob + r->olen, 16384);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		pm_tail_feed(&r->tail, r->ob + r->olen, (size_t)n);
		r->olen += (size_t)n;
		if (!final && r->olen >= 65536)
			break; /* the rest once Slurm took this */
	}
	flush_out(r, false);
}

static void on_stderr(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	(void)l;
	(void)ev;
	drain_stderr(w->arg, false);
}

/* Why the command failed: torch's error file, or else its stderr's last
 * lines; "" if neither says anything. */
static void failure_text(struct rank *r, char *text, size_t len)
{
	char json[65536], msgtext[1024], trace[PM_WIRE_TEXT_MAX], tail[PM_TAIL_BYTES];
	ssize_t n = -1;
	int fd = -1;

	text[0] = '\0';
	if (r->error_file[0])
		fd = open(r->error_file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0) {
		n = read(fd, json, sizeof(json));
		close(fd);
	}
	if (n > 0 && pm_errfile_parse(json, (size_t)n, msgtext, sizeof(msgtext), trace,
				      sizeof(trace)) == 0 && msgtext[0]) {
		pm_err_compose(msgtext, trace, text, len);
		return;
	}
	pm_tail_lines(&r->tail, PM_TAIL_LINES, tail, sizeof(tail));
	pm_err_from_tail(tail, text, len);
}

static void reaped(struct rank *r, int status)
{
	bool stopped = r->stopping;

	drain_stderr(r, true);
	r->child = 0;
	r->last_status = status;
	pm_timer_set(r->grace_w.fd, 0, 0);
	pm_timer_set(r->hang_w.fd, 0, 0);
	if (r->exiting) {
		pm_loop_stop(&r->loop);
		return;
	}
	if (r->hung) {
		char beat[32];
		snprintf(beat, sizeof(beat), "%llu", (unsigned long long)r->beat_wall_ms);
		send_text(r, PM_MSG_RANK_EXIT, status, PM_FLAG_HUNG, beat);
	}
	else if (stopped)
		send_simple(r, PM_MSG_RANK_STOPPED, status, 0);
	else if (r->noexec || status == 0)
		send_simple(r, PM_MSG_RANK_EXIT, status, r->noexec ? PM_FLAG_EXEC : 0);
	else {
		char text[PM_WIRE_TEXT_MAX + 1];
		failure_text(r, text, sizeof(text));
		send_text(r, PM_MSG_RANK_EXIT, status, 0, text[0] ? text : NULL);
	}
}

static void on_signal(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct rank *r = w->arg;
	struct signalfd_siginfo si;
	(void)l;
	(void)ev;

	while (read(w->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			int status;
			pid_t pid;
			while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
				if (pid != r->child)
					continue;
				/* What the command left in its group goes with it. */
				kill(-pid, SIGKILL);
				kill_strays();
				reaped(r, status);
			}
		} else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
			/* scancel, or Slurm ending the step: pass it on, say so (the
			 * root ends the step as cancelled, not as a failure), go. */
			if (!r->exiting)
				send_simple(r, PM_MSG_RANK_EXIT, (int)si.ssi_signo, PM_FLAG_CANCEL);
			if (r->child > 0)
				kill(-r->child, (int)si.ssi_signo);
			finish(r, 128 + (int)si.ssi_signo);
		} else if (r->child > 0) {
			/* srun --signal=USR1@60 and the like: for the command. */
			kill(-r->child, (int)si.ssi_signo);
		}
	}
}

static void on_msg(struct pm_conn *c, const struct pm_msg *m)
{
	struct rank *r = c->w.arg;

	switch (m->type) {
	case PM_MSG_START:
		if (r->child > 0 || r->exiting)
			return;
		if (m->rank >= 0) {
			/* With spares the node's slot says who runs here now. */
			r->grank = m->rank;
			r->group = m->node;
			snprintf(r->master, sizeof(r->master), "%.255s", m->text);
		}
		start_child(r, m->gen);
		break;
	case PM_MSG_STOP:
		if (r->child > 0 && m->gen == r->gen) {
			/* A hang's stop: every rank's stack is taken first. One
			 * being taken ends in the stop anyway. */
			if (m->count & PM_FLAG_HUNG)
				capture_then_stop(r);
			else if (!r->capturing)
				stop_child(r);
		} else
			send_simple(r, PM_MSG_RANK_STOPPED, r->last_status, 0);
		break;
	case PM_MSG_FINISH:
		finish(r, 0);
		break;
	case PM_MSG_ABORT:
		/* The failing rank, or rank 0 for a step-wide reason, says why. */
		if (m->text_len && (m->rank == r->grank || (m->rank < 0 && r->grank == 0)))
			msg(r, "%s", m->text);
		/* srun's per-task lines then name the task that failed. */
		finish(r, (m->count & PM_FLAG_BLAME) && m->rank != r->grank ? 0 : m->status);
		break;
	case PM_MSG_PRINT:
		msg(r, "%s", m->text);
		break;
	default:
		break;
	}
}

static void on_close(struct pm_conn *c, const char *why)
{
	struct rank *r = c->w.arg;

	r->c = NULL;
	pm_conn_free(c);
	if (!r->exiting) {
		msg(r, "procmgr: rank %d on %s lost its node's procmgrd%s%s; ending", r->grank,
		    r->node, why ? ": " : "", why ? why : "");
		finish(r, 1);
	}
}

/* procmgrd and we watch each other: each says something every third of
 * the peer timeout, and a procmgrd silent for all of it (stopped, or its
 * node's runtime wedged) ends our command and us. */
static void on_live(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct rank *r = w->arg;
	char secs[32];
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	if (!r->c || r->exiting)
		return;
	if (!pm_conn_keepalive(r->c, pm_now_ms(), r->peer_timeout_ms))
		return;
	pm_fmt_seconds(r->peer_timeout_ms, secs, sizeof(secs));
	msg(r, "procmgr: rank %d on %s: its node's procmgrd stopped answering (no heartbeat "
	    "for %s s); ending", r->grank, r->node, secs);
	finish(r, 1);
}

static int env_uint(const char *name, unsigned *out)
{
	const char *v = getenv(name);
	return v ? pm_parse_uint(v, 0, ~0u, out) : 0;
}

/* The step's options as slurmstepd resolved them: the plugin sets them in
 * every rank's environment, in the one form options travel in. */
static int read_opts(struct rank *r, char *err, size_t errlen)
{
	const char *s = getenv(PM_ENV_STEP_OPTS);
	struct pm_opts o;

	pm_opts_init(&o);
	if (s && pm_opts_parse_str(&o, s, PM_ENV_STEP_OPTS, err, errlen))
		return -1;
	r->grace_ms = o.grace_ms;
	r->hang_ms = o.hang_timeout_ms;
	r->hang_first_ms = o.hang_first_ms;
	return 0;
}

static int setup(struct rank *r, char *err, size_t errlen)
{
	const char *sock = getenv(PM_ENV_SOCK);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	sigset_t set;
	unsigned v = 0;
	struct pm_msg m;
	int fd;

	if (!sock || strlen(sock) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, PM_ENV_SOCK " is not set: procmgr-rank runs inside a "
			 "procmgr step only");
		return -1;
	}
	r->node = getenv("SLURMD_NODENAME") ? getenv("SLURMD_NODENAME") : "?";
	r->group = -1;
	if (env_uint(PM_ENV_RANK, &v) == 0)
		r->grank = (int)v;
	v = 0;
	if (env_uint(PM_ENV_LOCAL_RANK, &v) == 0)
		r->lrank = (int)v;
	if (read_opts(r, err, errlen))
		return -1;
	r->heartbeat = r->hang_ms ? getenv(PM_ENV_HEARTBEAT) : NULL;
	r->error_base = getenv(PM_ENV_TE_ERROR_FILE);
	r->peer_timeout_ms = PM_DEFAULT_PEER_TIMEOUT_MS;
	if (env_uint(PM_ENV_PEER_TIMEOUT, &r->peer_timeout_ms)) {
		snprintf(err, errlen, PM_ENV_PEER_TIMEOUT " is not a number of milliseconds");
		return -1;
	}

	/* Our own mask from slurmstepd is what the command should get, less
	 * what slurmstepd blocks for itself. */
	sigemptyset(&r->orig_mask);
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
	r->grace_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_grace, .arg = r };
	r->hang_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_hang, .arg = r };
	if (r->sig_w.fd < 0 || r->grace_w.fd < 0 || r->hang_w.fd < 0 ||
	    pm_loop_add(&r->loop, &r->sig_w, EPOLLIN) ||
	    pm_loop_add(&r->loop, &r->grace_w, EPOLLIN) ||
	    pm_loop_add(&r->loop, &r->hang_w, EPOLLIN))
		goto sys;
	if (r->peer_timeout_ms) {
		unsigned period = pm_conn_ping_period(r->peer_timeout_ms);
		r->live_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_live, .arg = r };
		if (r->live_w.fd < 0 || pm_loop_add(&r->loop, &r->live_w, EPOLLIN) ||
		    pm_timer_set(r->live_w.fd, period, period))
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

	/* On a terminal (srun --pty) the command keeps it: it may ask isatty. */
	if (!isatty(STDERR_FILENO)) {
		int ep[2];
		if (pipe2(ep, O_CLOEXEC | O_NONBLOCK))
			goto sys;
		r->err_fd = ep[0];
		r->err_child = ep[1];
		/* The command's end blocks as a pipe does; ours never blocks. */
		if (fcntl(ep[1], F_SETFL, 0))
			goto sys;
		r->err_w = (struct pm_watch){ .fd = ep[0], .fn = on_stderr, .arg = r };
		if (pm_loop_add(&r->loop, &r->err_w, EPOLLIN))
			goto sys;
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
	m.rank = r->grank;
	m.node = r->lrank;
	m.status = getpid();
	return pm_conn_send(r->c, &m);
sys:
	snprintf(err, errlen, "setup: %s", strerror(errno));
	return -1;
}

int main(int argc, char **argv)
{
	struct rank r;
	char err[512];
	const char *argv0 = getenv(PM_ENV_ARGV0);

	memset(&r, 0, sizeof(r));
	r.err_fd = r.err_child = -1;
	if (argc < 1 || !argv0) {
		fprintf(stderr, "procmgr-rank: " PM_ENV_ARGV0 " is not set: procmgr-rank runs "
			"inside a procmgr step only\n");
		return 2;
	}
	/* Slurm exec'd us in place of the command: put the command back. */
	argv[0] = strdup(argv0);
	unsetenv(PM_ENV_ARGV0);
	r.argv = argv;
	if (setup(&r, err, sizeof(err))) {
		fprintf(stderr, "procmgr: rank %d: %s\n", r.grank, err);
		return 1;
	}
	if (pm_loop_run(&r.loop))
		fprintf(stderr, "procmgr: rank %d: epoll: %s\n", r.grank, strerror(errno));
	drain_stderr(&r, true);
	flush_out(&r, true);
	free(r.ob);
	if (r.error_file[0])
		unlink(r.error_file);
	if (r.c)
		pm_conn_free(r.c);
	pm_rank_stack_stop(&r.stack);
	if (r.heartbeat)
		unlink(r.heartbeat);
	fflush(stderr);
	return r.exit_code;
}
