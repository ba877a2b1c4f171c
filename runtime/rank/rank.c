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
#include "rank_sup.h"

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
	/* Watched always: a generation's first beat is when the program
	 * trains again, the end of a restart as the user counts it. */
	r->heartbeat = getenv(PM_ENV_HEARTBEAT);
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

	/* The command starts with no signal blocked (orig_mask, empty), not
	 * with whatever slurmstepd left blocked: a program expects the
	 * default. Ours is replaced whole (SIG_SETMASK, not SIG_BLOCK): just
	 * the signals this loop takes from its signalfd, so they queue there. */
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
				      .fn = pm_rank_on_signal, .arg = r };
	if (r->sig_w.fd < 0 || pm_loop_add(&r->loop, &r->sig_w, EPOLLIN) ||
	    add_timer(r, &r->grace_w, pm_rank_on_timer) || add_timer(r, &r->hang_w, pm_rank_on_timer))
		goto sys;
	if (r->cfg.peer_timeout_ms) {
		unsigned period = pm_conn_ping_period(r->cfg.peer_timeout_ms);
		if (add_timer(r, &r->live_w, pm_rank_on_live) || pm_timer_set(r->live_w.fd, period, period))
			goto sys;
	}
	if (r->heartbeat) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", r->heartbeat);
		r->ino_w = (struct pm_watch){ .fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC),
					      .fn = pm_rank_on_inotify, .arg = r };
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
	r->c = pm_conn_new(&r->loop, fd, pm_rank_on_msg, pm_rank_on_close, r);
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
	pm_rank_m_init(&r.m, &r.cfg, &pm_rank_live_ops, &r, grank);
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
