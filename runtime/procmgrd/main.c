/* procmgrd: one per node per step, started by procmgr.so, running as the
 * job's user. Supervises this node's ranks and joins the step's control
 * tree. Everything is an event on one epoll loop. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/backoff.h"
#include "common/contract.h"
#include "common/hostlist.h"

#include "guard.h"
#include "io/rundir.h"
#include "io/sys.h"
#include "io/tcp.h"
#include "query.h"
#include "admit.h"
#include "step.h"
#include "common/tree.h"

struct daemon {
	struct pm_loop loop;
	struct pm_step step;
	struct pm_guard guard;
	char rundir[PATH_MAX];
	char sock_path[PATH_MAX];
	unsigned port;
	int ready_fd;
	pid_t watch_pid;
	struct pm_watch unix_w, tcp_w, sig_w, pid_w, connect_w, retry_w;
	struct pm_watch unix_rest_w; /* the unix listener resting (out of descriptors) */
	unsigned unix_starved;
	struct sockaddr_storage parent_addr, self_addr;
	socklen_t parent_addrlen, self_addrlen;
	struct pm_backoff retry;
	unsigned connect_timeout_ms;
	/* A failed pre-launch check's ready line, held until the tree knows
	 * (held_w bounds the wait); join_w: the children's join deadline. */
	char held[1024];
	bool holding;
	struct pm_watch held_w, join_w;
};

/* "fd:N": the plugin passed a list too long for a command line (Linux
 * takes at most 128 KiB per argument) in a memfd; read it whole. */
static char *nodes_from_fd(const char *arg, char *err, size_t errlen)
{
	unsigned fd;
	size_t len = 0, cap = 1 << 16;
	char *buf = NULL, *nb;
	ssize_t k;

	if (pm_parse_uint(arg + 3, 0, 65535, &fd)) {
		snprintf(err, errlen, "bad --nodes '%.40s': fd:N wants a descriptor", arg);
		return NULL;
	}
	for (;;) {
		if (len + 1 >= cap || !buf) {
			if (cap > PM_NODELIST_MAX || !(nb = realloc(buf, cap *= 2)))
				break;
			buf = nb;
		}
		k = read((int)fd, buf + len, cap - len - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k < 0)
				break;
			close((int)fd);
			buf[len] = '\0';
			return buf;
		}
		len += (size_t)k;
	}
	snprintf(err, errlen, "cannot read the node list from descriptor %u: %s", fd,
		 errno ? strerror(errno) : "too long");
	free(buf);
	return NULL;
}

static int expand_nodes(const char *list, char ***out, char *err, size_t errlen)
{
	char *owned = NULL;
	int n;

	if (!strncmp(list, "fd:", 3) && !(list = owned = nodes_from_fd(list, err, errlen)))
		return -1;
	n = pm_hostlist_expand(list, 10000000, out);
	if (n <= 0)
		snprintf(err, errlen, "bad node list '%.200s%s'", list, strlen(list) > 200 ? "..." : "");
	free(owned);
	return n <= 0 ? -1 : n;
}

/* An interior node at a large fanout holds a connection per child, per
 * local rank and a few more: the soft limit (often 1024) is raised to the
 * hard one, which is the site's to set. */
static void raise_nofile(struct pm_step *s)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		pm_log(s, "cannot raise the open files limit to %llu: %m",
		       (unsigned long long)rl.rlim_max);
}

/* ---- listening sockets ---- */

/* The tree's links all carry the same options (io/tcp.c). */
static void user_timeout(struct daemon *d, int fd)
{
	char warn[256];

	if (pm_tcp_tune(fd, d->step.peer_timeout_ms, warn, sizeof(warn)))
		pm_log(&d->step, "%s", warn);
}

/* Both listeners: rank supervisors on the unix socket, children on the
 * tree port. */
static void on_accept(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct daemon *d = w->arg;
	int fd;
	(void)l;
	(void)ev;
	while ((fd = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		if (w == &d->unix_w) {
			d->unix_starved = 0;
			pm_step_rank_conn(&d->step, fd);
		} else {
			user_timeout(d, fd);
			pm_step_tree_conn(&d->step, fd);
		}
	}
	/* Out of descriptors (a flood): the listener would stay readable and
	 * the loop spin; the door pauses it for a tick. */
	if (w == &d->tcp_w && errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
		pm_gate_pause(&d->step, errno);
	/* The supervisors' listener rests likewise, longer each time in a row. */
	if (w == &d->unix_w && pm_admit_starved(errno) && pm_loop_mod(l, w, 0) == 0) {
		unsigned ms = pm_admit_backoff_ms(++d->unix_starved);
		if (d->unix_starved == 1)
			pm_log(&d->step, "supervisors' socket: cannot accept (%m): resting %u ms", ms);
		pm_timer_set(d->unix_rest_w.fd, ms, 0);
	}
}

static void on_unix_rested(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct daemon *d = w->arg;
	(void)ev;

	pm_timer_ack(w->fd);
	pm_loop_mod(l, &d->unix_w, EPOLLIN);
}

static int listen_unix(struct daemon *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(d->sock_path) >= sizeof(sa.sun_path)) {
		pm_log(&d->step, "socket path too long: %s", d->sock_path);
		return -1;
	}
	strcpy(sa.sun_path, d->sock_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    chmod(d->sock_path, 0600) || listen(fd, 128)) {
		pm_log(&d->step, "unix socket %s: %m", d->sock_path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	d->unix_w = (struct pm_watch){ .fd = fd, .fn = on_accept, .arg = d };
	d->unix_rest_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_unix_rested, .arg = d };
	if (d->unix_rest_w.fd < 0 || pm_loop_add(&d->loop, &d->unix_rest_w, EPOLLIN))
		return -1;
	return pm_loop_add(&d->loop, &d->unix_w, EPOLLIN);
}

/* The step's control port on this node's address. Taken by another
 * process (another user may bind it first): the step fails at once, and
 * says where. */
static int listen_tcp(struct daemon *d, char *err, size_t errlen)
{
	struct pm_step *s = &d->step;
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1;

	if (pm_step_resolve(s->names[s->node], d->port, &ss, &len, err, errlen))
		return -1;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 1024)) {
		int e = errno;
		snprintf(err, errlen, "cannot listen on the step's control port %s:%u: %s%s",
			 s->names[s->node], d->port, strerror(e),
			 e == EADDRINUSE ? " (another process holds it)" : "");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	d->tcp_w = (struct pm_watch){ .fd = fd, .fn = on_accept, .arg = d };
	s->listen_w = &d->tcp_w;
	return pm_loop_add(&d->loop, &d->tcp_w, EPOLLIN);
}

/* ---- the connection to the parent: non-blocking, retried until the
 * parent's procmgrd listens (nodes start in any order) ---- */

static void try_connect(struct daemon *d);

static void on_retry(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	(void)l;
	(void)ev;
	pm_timer_ack(w->fd);
	try_connect(w->arg);
}

static void connect_failed(struct daemon *d, int e)
{
	char text[512];
	struct pm_step *s = &d->step;
	int p = pm_tree_parent(s->node, s->fanout);
	long wait_ms = pm_backoff_next(&d->retry, pm_now_ms());

	if (wait_ms < 0) {
		snprintf(text, sizeof(text),
			 "procmgr: cannot reach node %s's procmgrd on port %u within %u s "
			 "(site key connect_timeout): %s",
			 s->names[p], d->port, d->connect_timeout_ms / 1000, strerror(e));
		/* With spares, a parent that never came is a lost node. */
		if (s->opts.spares)
			pm_attach_start(s, text + strlen("procmgr: "));
		else
			pm_step_abort_local(s, text);
		return;
	}
	pm_timer_set(d->retry_w.fd, (unsigned)wait_ms, 0);
}

static void on_connected(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct daemon *d = w->arg;
	int e = 0;
	socklen_t len = sizeof(e);
	(void)ev;

	pm_loop_del(l, w);
	getsockopt(w->fd, SOL_SOCKET, SO_ERROR, &e, &len);
	if (e) {
		close(w->fd);
		connect_failed(d, e);
		return;
	}
	pm_step_parent_up(&d->step, w->fd);
}

static void try_connect(struct daemon *d)
{
	char warn[256], err[256];
	int fd = pm_tcp_connect((struct sockaddr *)&d->parent_addr, d->parent_addrlen,
				(struct sockaddr *)&d->self_addr, d->self_addrlen,
				d->step.peer_timeout_ms, warn, sizeof(warn), err, sizeof(err));

	if (warn[0])
		pm_log(&d->step, "%s: %s", d->step.names[d->step.node], warn);
	if (fd < 0) {
		connect_failed(d, errno);
		return;
	}
	d->connect_w = (struct pm_watch){ .fd = fd, .fn = on_connected, .arg = d };
	if (pm_loop_add(&d->loop, &d->connect_w, EPOLLOUT) == 0)
		return;
	close(fd);
	connect_failed(d, errno);
}

/* ---- signals and the life of slurmstepd ---- */

static void on_signal(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct daemon *d = w->arg;
	struct signalfd_siginfo si;
	(void)l;
	(void)ev;
	while (read(w->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (!pm_gen_terminal(&d->step.gen))
			pm_log(&d->step, "stopped by signal %u", si.ssi_signo);
		pm_step_terminate(&d->step);
	}
}

static void on_stepd_exit(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct daemon *d = w->arg;
	(void)ev;
	pm_loop_del(l, w);
	if (d->step.opts.spares && !pm_gen_terminal(&d->step.gen)) {
		/* This node is lost; the rest of the step goes on with a spare. */
		pm_gen_lost(&d->step.gen, d->step.node, "its slurmstepd went away");
		pm_gen_leave(&d->step.gen, "procmgr: slurmstepd of this node went away");
	} else {
		pm_step_abort_local(&d->step,
				    "procmgr: slurmstepd of this node went away; ending the step");
	}
	pm_loop_stop(l);
}

static int setup_signals(struct daemon *d)
{
	sigset_t set;
	int fd;

	/* slurmstepd blocks most signals and we inherit that: take them back,
	 * then route the ones we act on through a signalfd. */
	sigemptyset(&set);
	sigprocmask(SIG_SETMASK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return -1;
	d->sig_w = (struct pm_watch){ .fd = fd, .fn = on_signal, .arg = d };
	if (pm_loop_add(&d->loop, &d->sig_w, EPOLLIN))
		return -1;
	if (d->watch_pid > 0) {
		fd = pm_pidfd_open(d->watch_pid);
		if (fd < 0)
			return -1;
		d->pid_w = (struct pm_watch){ .fd = fd, .fn = on_stepd_exit, .arg = d };
		if (pm_loop_add(&d->loop, &d->pid_w, EPOLLIN))
			return -1;
	}
	return 0;
}

static void cleanup_rundir(struct daemon *d)
{
	if (pm_rundir_remove(d->rundir))
		pm_log(&d->step, "cannot remove %s: %m", d->rundir);
}

/* The one line the plugin waits for (contract.h); a cut reason still
 * makes a whole line. */
static void ready(struct daemon *d, enum pm_ready_kind kind, const char *node,
		  const char *text)
{
	char msg[PM_READY_MAX];

	if (d->ready_fd < 0)
		return;
	pm_ready_format(msg, sizeof(msg), kind, node, text);
	if (write(d->ready_fd, msg, strlen(msg)) < 0)
		pm_log(&d->step, "cannot tell the plugin we are ready: %m");
	close(d->ready_fd);
	d->ready_fd = -1;
}

/* A child that never joins is lost once it had its own connect_timeout
 * to reach us and a peer timeout more. */
static void on_join_deadline(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct daemon *d = w->arg;
	(void)ev;

	pm_timer_ack(w->fd);
	pm_loop_del(l, w);
	pm_gen_join_timer(&d->step.gen, d->connect_timeout_ms + d->step.peer_timeout_ms);
	pm_step_over(&d->step);
}

static int arm_join_deadline(struct daemon *d)
{
	d->join_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_join_deadline, .arg = d };
	if (d->join_w.fd < 0 || pm_loop_add(&d->loop, &d->join_w, EPOLLIN))
		return -1;
	return pm_timer_set(d->join_w.fd, d->connect_timeout_ms + d->step.peer_timeout_ms, 0);
}

static void release_held(struct daemon *d)
{
	if (!d->holding)
		return;
	d->holding = false;
	pm_loop_del(&d->loop, &d->held_w);
	close(d->held_w.fd);
	ready(d, PM_READY_HEALTH, d->step.names[d->step.node], d->held);
}

/* The tree was told this node failed its checks (the root: every child
 * joined and was told the end): the plugin may end us now. */
static void on_told(struct pm_step *s, void *arg)
{
	struct daemon *d = arg;

	if (s->node > 0 ? s->parent_ok && s->upq_len == 0 : s->nseen >= s->nchildren)
		release_held(d);
}

static void on_held_timeout(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct daemon *d = w->arg;
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	pm_log(&d->step, "the tree was not told of the failed check within %u ms; "
	       "telling the plugin anyway (the parent's join deadline covers it)",
	       d->step.peer_timeout_ms);
	release_held(d);
}

/* Before launch: a node that fails never starts a rank, and stays in the
 * tree only to have the root end the step everywhere. The plugin hears of
 * the failure once the tree did, within a peer timeout. */
static void prelaunch_checks(struct daemon *d)
{
	struct pm_step *s = &d->step;

	if (!pm_guard_run(&d->guard, d->held, sizeof(d->held))) {
		ready(d, PM_READY_OK, NULL, NULL);
		pm_gen_local_ready(&s->gen);
		return;
	}
	d->holding = true;
	d->held_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_held_timeout, .arg = d };
	if (d->held_w.fd < 0 || pm_loop_add(&d->loop, &d->held_w, EPOLLIN) ||
	    pm_timer_set(d->held_w.fd, s->peer_timeout_ms ? s->peer_timeout_ms : 5000, 0)) {
		d->holding = false;
		ready(d, PM_READY_HEALTH, s->names[s->node], d->held);
	}
	s->told = on_told;
	s->told_arg = d;
	pm_gen_health_failed(&s->gen, d->held);
	on_told(s, d);
}

int main(int argc, char **argv)
{
	struct daemon d;
	struct pm_step *s = &d.step;
	struct pm_daemon_args a;
	const char *nodes, *events, *opts, *report;
	char err[PM_ERRLEN];
	unsigned health_timeout;
	int rc = 1;

	memset(&d, 0, sizeof(d));
	d.ready_fd = -1;
	s->loop = &d.loop;
	if (pm_daemon_args_parse(&a, argc, argv, err, sizeof(err))) {
		fprintf(stderr, "procmgrd: %s\n%s", err, PM_DAEMON_USAGE);
		return 2;
	}
	s->job = a.job;
	s->stepid = a.step;
	s->node = (int)a.node_id;
	nodes = a.nodes;
	s->ntasks_local = (int)a.ntasks_local;
	s->ntasks = (int)a.ntasks;
	d.port = a.port;
	s->fanout = (int)a.fanout;
	snprintf(d.rundir, sizeof(d.rundir), "%s", a.rundir);
	events = a.events;
	s->munge_socket = a.munge_socket;
	s->metrics_dir = a.metrics_dir;
	s->health_timeout_ms = a.health_timeout_ms;
	s->peer_timeout_ms = a.peer_timeout_ms;
	opts = a.opts;
	report = a.health_report;
	health_timeout = a.health_timeout_ms;
	d.ready_fd = a.ready_fd;
	d.watch_pid = a.watch_pid;
	s->wait_term = a.watch_pid > 0;
	d.connect_timeout_ms = a.connect_timeout_ms;
	s->srun_node_id = -1;
	s->uid = getuid();
	pm_opts_init(&s->opts);
	/* Every error below is said once, at out_ready. */
	if (pm_opts_parse_str(&s->opts, opts, "--opts", err, sizeof(err)))
		goto out_ready;
	s->nnodes = expand_nodes(nodes, &s->names, err, sizeof(err));
	if (s->nnodes < 0 || s->node >= s->nnodes) {
		if (s->nnodes >= 0)
			snprintf(err, sizeof(err), "node id %d outside the node list", s->node);
		goto out_ready;
	}
	if (a.srun_node) {
		int i;
		for (i = 0; i < s->nnodes; i++)
			if (!strcmp(s->names[i], a.srun_node))
				s->srun_node_id = i;
	}
	/* Site check scripts are told where they run, as under slurmd. */
	setenv("SLURMD_NODENAME", s->names[s->node], 1);
	if (pm_guard_init(&d.guard, s->opts.health, s->names[s->node], report,
			  health_timeout, err, sizeof(err)))
		goto out_ready;
	s->guard = &d.guard;
	raise_nofile(s);
	if (pm_loop_init(&d.loop) || pm_step_init(s) || setup_signals(&d) ||
	    pm_guard_periodic(&d.guard, &d.loop, s->opts.health_interval_ms)) {
		snprintf(err, sizeof(err), "cannot set up the event loop: %s", strerror(errno));
		goto out_ready;
	}
	s->port = d.port;
	if (pm_sweep_run_init(s, err, sizeof(err)))
		goto out_ready;
	s->parent_node = pm_tree_parent(s->node, s->fanout);
	if (events)
		snprintf(s->events_path, sizeof(s->events_path), "%s", events);
	if (pm_attach_init(s) || pm_slowlink_init(s)) {
		snprintf(err, sizeof(err), "timerfd: %s", strerror(errno));
		goto out_ready;
	}
	if (s->node == 0 && events &&
	    pm_events_open(&s->events, events, s->job, s->stepid)) {
		snprintf(err, sizeof(err), "event log %s: %s", events, strerror(errno));
		goto out_ready;
	}
	if (mkdir(d.rundir, 0700) && errno != EEXIST) {
		snprintf(err, sizeof(err), "mkdir %.400s: %s", d.rundir, strerror(errno));
		goto out_ready;
	}
	if (pm_path_sock(d.sock_path, sizeof(d.sock_path), d.rundir)) {
		snprintf(err, sizeof(err), "run directory path too long: %.400s", d.rundir);
		goto out_clean;
	}
	if (listen_unix(&d)) {
		snprintf(err, sizeof(err), "cannot listen on %.400s (see the procmgrd log)",
			 d.sock_path);
		goto out_clean;
	}
	/* The ranks' state: without it they run on, their saves refused. */
	{
		char state_path[PATH_MAX];
		if (!pm_path_state(state_path, sizeof(state_path), d.rundir) &&
		    pm_state_link_init(s, state_path, a.state_max_rank_mib, a.state_max_node_mib))
			pm_log(s, "the ranks' state socket is off (see above)");
		else
			pm_state_link_set_rate(s, (uint64_t)a.state_repl_mib_s << 20);
	}
	/* With spares any node may become the parent of a node whose own is
	 * lost; the root listens even alone: the procmgr command asks it. A
	 * leaf listens too (below), once its parent's name resolved. */
	if ((s->nchildren || s->opts.spares || s->node == 0) && listen_tcp(&d, err, sizeof(err)))
		goto out_clean;
	if (pm_query_init(s, d.rundir, s->node == 0 ? events : NULL)) {
		snprintf(err, sizeof(err), "out of memory");
		goto out_clean;
	}
	if (s->node > 0) {
		int p = pm_tree_parent(s->node, s->fanout);
		if (pm_step_resolve(s->names[p], d.port, &d.parent_addr, &d.parent_addrlen, err,
			    sizeof(err)) ||
		    pm_step_resolve(s->names[s->node], 0, &d.self_addr, &d.self_addrlen, err, sizeof(err)))
			goto out_clean;
		/* Every node of a step of two or more is some node's buddy: its
		 * state replication comes to this port (state_repl.c). */
		if (!s->listen_w && listen_tcp(&d, err, sizeof(err)))
			goto out_clean;
		d.retry_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_retry, .arg = &d };
		if (d.retry_w.fd < 0 || pm_loop_add(&d.loop, &d.retry_w, EPOLLIN)) {
			snprintf(err, sizeof(err), "timerfd: %s", strerror(errno));
			goto out_clean;
		}
		/* Seeded by node and pid: siblings that find their parent
		 * late retry at different times. */
		pm_backoff_init(&d.retry, 10, 1000, pm_now_ms() + d.connect_timeout_ms,
				((uint64_t)s->node << 32) ^ (uint64_t)getpid());
		try_connect(&d);
	}
	if (s->nchildren && arm_join_deadline(&d)) {
		snprintf(err, sizeof(err), "timerfd: %s", strerror(errno));
		goto out_clean;
	}
	prelaunch_checks(&d);
	if (pm_loop_run(&d.loop))
		pm_log(s, "epoll: %m");
	rc = 0;
	pm_step_jobend(s);
	cleanup_rundir(&d);
	pm_guard_free(&d.guard, &d.loop);
	pm_step_free(s);
	return rc;

out_clean:
	cleanup_rundir(&d);
out_ready:
	fprintf(stderr, "procmgrd: %s\n", err);
	ready(&d, PM_READY_ERROR, NULL, err);
	return rc;
}
