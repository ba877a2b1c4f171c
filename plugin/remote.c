/* slurmstepd: one per node per step. Starts this node's procmgrd, turns each
 * task into a supervised rank, and stops everything at step end. */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "affinity/bind.h"
#include "common/checkspec.h"
#include "drain.h"
#include "affinity/gpumap.h"
#include "health/health.h"
#include "common/hostlist.h"
#include "plugin.h"
#include "io/rundir.h"

/* Everything this node's part of the step needs; filled in init_post_opt
 * (root) and user_init, inherited by every task's process. */
struct pm_node {
	uint32_t job, step, nodeid, nnodes, ntasks_local, ntasks;
	uid_t uid;
	gid_t gid;
	unsigned port;  /* control tree; MASTER_PORT is port + 1 */
	char nodelist[4096];
	char master[256];
	char jobdir[PATH_MAX];
	char rundir[PATH_MAX];
	char munge_socket[PATH_MAX];
	char shim[PATH_MAX];
	char nodename[256];
	char report[PATH_MAX]; /* procmgrd's account of a failed check */
	struct pm_bind_plan *plan;
	char step_gpus[1024]; /* set when Slurm renumbers the task's GPUs */
	pid_t pid;      /* procmgrd */
	int pidfd;
	uint32_t tasks_exited;
};

static struct pm_node node_s;
static bool active; /* procmgr supervises this step on this node */

static void maybe_drain(struct pm_node *n);

/* slurmstepd's own configuration, for the munge socket (weak: no link to a
 * particular libslurm). */
extern slurm_conf_t slurm_conf __attribute__((weak));

static void munge_socket_from_conf(char *buf, size_t len)
{
	const char *a = &slurm_conf && slurm_conf.authinfo ? slurm_conf.authinfo : NULL;
	const char *p = a ? strstr(a, "socket=") : NULL;
	size_t n;

	buf[0] = '\0';
	if (!p)
		return;
	p += 7;
	n = strcspn(p, ",");
	if (n < len) {
		memcpy(buf, p, n);
		buf[n] = '\0';
	}
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;

	if (!pm_g.error[0]) {
		va_start(ap, fmt);
		vsnprintf(pm_g.error, sizeof(pm_g.error), fmt, ap);
		va_end(ap);
	}
	pm_err("%s", pm_g.error);
	return 0; /* told to the user from task_init, where srun shows it */
}

/* Our node's Slurm name, to drain it: the step's node list at our index.
 * slurm_hostlist_* come from the Slurm library slurmstepd has loaded. */
static void this_node_name(struct pm_node *n)
{
	hostlist_t hl = slurm_hostlist_create(n->nodelist);
	char *h = NULL;
	uint32_t i;

	n->nodename[0] = '\0';
	if (!hl)
		return;
	for (i = 0; i <= n->nodeid; i++) {
		free(h);
		h = slurm_hostlist_shift(hl);
		if (!h)
			break;
	}
	if (h)
		snprintf(n->nodename, sizeof(n->nodename), "%s", h);
	free(h);
	slurm_hostlist_destroy(hl);
}

/* The step's ports: Slurm's reserved ones, else the site's range. */
static int pick_ports(spank_t sp, struct pm_node *n)
{
	char buf[256];
	unsigned first, count;

	if (spank_getenv(sp, "SLURM_STEP_RESV_PORTS", buf, sizeof(buf)) == ESPANK_SUCCESS &&
	    pm_ports_parse(buf, &first, &count) == 0 && count >= 2 && first < 65535) {
		n->port = first;
		return 0;
	}
	if (pm_g.site.port_hi) {
		unsigned slots = (pm_g.site.port_hi - pm_g.site.port_lo + 1) / 2;
		n->port = pm_g.site.port_lo + 2 * ((n->job * 7919u + n->step) % slots);
		return 0;
	}
	return -1;
}

static int prepare(spank_t sp)
{
	struct pm_node *n = &node_s;
	struct stat st;

	if (spank_get_item(sp, S_JOB_ID, &n->job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &n->step) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NODEID, &n->nodeid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NNODES, &n->nnodes) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &n->ntasks_local) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &n->ntasks) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &n->uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &n->gid) != ESPANK_SUCCESS)
		return fail("cannot read the step's identity from Slurm");
	n->pid = -1;
	n->pidfd = -1;
	if (spank_getenv(sp, "SLURM_STEP_NODELIST", n->nodelist, sizeof(n->nodelist)) !=
		    ESPANK_SUCCESS ||
	    pm_hostlist_first(n->nodelist, n->master, sizeof(n->master)))
		return fail("cannot read the step's node list (SLURM_STEP_NODELIST='%s')",
			    n->nodelist);
	if (pick_ports(sp, n))
		return fail("no port for the control tree: the site needs MpiParams=ports=LO-HI "
			    "in slurm.conf or ports=LO-HI on procmgr's line in %s",
			    pm_g.plugstack);
	munge_socket_from_conf(n->munge_socket, sizeof(n->munge_socket));
	snprintf(n->shim, sizeof(n->shim), "%s", pm_g.site.runtime);
	{
		char *slash = strrchr(n->shim, '/');
		snprintf(slash + 1, sizeof(n->shim) - (size_t)(slash + 1 - n->shim),
			 "procmgr-rank");
	}

	/* state_dir/JOB belongs to the job's user: the event log and procmgrd's
	 * logs stay there for the user to read. */
	if (mkdir(pm_g.site.state_dir, 0755) && errno != EEXIST)
		return fail("cannot create state_dir %s: %s", pm_g.site.state_dir,
			    strerror(errno));
	snprintf(n->jobdir, sizeof(n->jobdir), "%.3000s/%u", pm_g.site.state_dir, n->job);
	if (mkdir(n->jobdir, 0700) && errno != EEXIST)
		return fail("cannot create %s: %s", n->jobdir, strerror(errno));
	/* We are root here: never follow a link, never take another user's
	 * directory (a job id seen before, or a trap). */
	if (lstat(n->jobdir, &st))
		return fail("cannot stat %s: %s", n->jobdir, strerror(errno));
	if (!S_ISDIR(st.st_mode) || (st.st_uid != 0 && st.st_uid != n->uid))
		return fail("%s is not a directory of root or of the job's user: remove it",
			    n->jobdir);
	if (lchown(n->jobdir, n->uid, n->gid))
		return fail("cannot give %s to the job's user: %s", n->jobdir, strerror(errno));
	snprintf(n->rundir, sizeof(n->rundir), "%.3000s/%u.%u.run", n->jobdir, n->step,
		 n->nodeid);
	snprintf(n->report, sizeof(n->report), "%.3000s/%u.%u.unhealthy", n->jobdir,
		 n->step, n->nodeid);
	this_node_name(n);
	return 0;
}

int pm_remote_post_opt(spank_t sp)
{
	char buf[4096], err[PM_ERRLEN];
	uint32_t stepid = 0;
	struct pm_opts step;

	if (spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS)
		return 0;
	if (stepid == SLURM_BATCH_SCRIPT) {
		/* #SBATCH --procmgr-* lines: handed to the script's srun steps. */
		if (pm_g.flags.set && pm_opts_format(&pm_g.flags, buf, sizeof(buf)) == 0 &&
		    spank_setenv(sp, PM_ENV_JOB_OPTS, buf, 1) != ESPANK_SUCCESS)
			pm_err("cannot export %s to the batch script", PM_ENV_JOB_OPTS);
		return 0;
	}
	if (stepid == SLURM_EXTERN_CONT || stepid == SLURM_INTERACTIVE_STEP)
		return 0;
	if (spank_getenv(sp, PM_ENV_STEP_OPTS, buf, sizeof(buf)) != ESPANK_SUCCESS)
		return 0;

	/* The environment is the user's: check it again, site cap included. */
	pm_opts_init(&step);
	if (pm_opts_parse_str(&step, buf, PM_ENV_STEP_OPTS, err, sizeof(err)) ||
	    pm_opts_resolve(&pm_g.resolved, &pm_g.site, NULL, &step, err, sizeof(err))) {
		if (!pm_g.error[0])
			snprintf(pm_g.error, sizeof(pm_g.error), "%s", err);
		pm_err("%s", err);
	}
	active = pm_g.resolved.enabled || pm_g.error[0];
	if (active && !pm_g.error[0])
		prepare(sp);
	return 0;
}

/* In the child, before exec: become the job's user for good. */
static int drop_privileges(spank_t sp, const struct pm_node *n)
{
	gid_t *gids = NULL;
	int ngids = 0;

	if (geteuid() != 0 && seteuid(0))
		return -1;
	if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &gids, &ngids) != ESPANK_SUCCESS)
		ngids = 0;
	if (setgroups((size_t)ngids, gids) || setresgid(n->gid, n->gid, n->gid) ||
	    setresuid(n->uid, n->uid, n->uid))
		return -1;
	/* Make sure there is no way back. */
	if (n->uid != 0 && setresuid(0, 0, 0) == 0)
		return -1;
	return 0;
}

static void exec_procmgrd(spank_t sp, struct pm_node *n, int ready_fd, pid_t stepd)
{
	char a[16][64], opts[4096], log[PATH_MAX], events[PATH_MAX];
	sigset_t none;
	int fd;

	setsid();
	if (drop_privileges(sp, n)) {
		dprintf(ready_fd, "error: cannot become uid %u: %s\n", n->uid, strerror(errno));
		_exit(1);
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	snprintf(log, sizeof(log), "%.3000s/%u.%u.log", n->jobdir, n->step, n->nodeid);
	snprintf(events, sizeof(events), "%.3000s/%u.events.jsonl", n->jobdir, n->step);
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0) {
		dup2(fd, 0);
		close(fd);
	}
	fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	pm_g.resolved.set = ~0u;
	pm_opts_format(&pm_g.resolved, opts, sizeof(opts));
	snprintf(a[0], 64, "%u", n->job);
	snprintf(a[1], 64, "%u", n->step);
	snprintf(a[2], 64, "%u", n->nodeid);
	snprintf(a[3], 64, "%u", n->ntasks_local);
	snprintf(a[4], 64, "%u", n->ntasks);
	snprintf(a[5], 64, "%u", n->port);
	snprintf(a[6], 64, "%u", pm_g.site.fanout);
	snprintf(a[7], 64, "%d", ready_fd);
	snprintf(a[8], 64, "%d", (int)stepd);
	snprintf(a[9], 64, "%u", pm_g.site.health_timeout_ms);
	{
		char *argv[] = {
			pm_g.site.runtime, "--job", a[0], "--step", a[1], "--node-id", a[2],
			"--nodes", n->nodelist, "--ntasks-local", a[3], "--ntasks", a[4],
			"--port", a[5], "--fanout", a[6], "--rundir", n->rundir,
			"--events", events, "--opts", opts, "--ready-fd", a[7],
			"--watch-pid", a[8], "--health-report", n->report,
			"--health-timeout", a[9],
			n->munge_socket[0] ? "--munge-socket" : NULL, n->munge_socket, NULL
		};
		char *envp[] = { "PATH=/usr/bin:/bin", NULL };
		/* Only what we pass: nothing of slurmstepd's fds. */
		for (fd = 3; fd < 1024; fd++)
			if (fd != ready_fd)
				close(fd);
		execve(argv[0], argv, envp);
		dprintf(ready_fd, "error: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(1);
	}
}

/* Once per node, before the tasks fork: they inherit the plan. */
static void plan_binding(spank_t sp, struct pm_node *n)
{
	char allowed[4096], gpus[1024], err[PM_ERRLEN];
	cpu_set_t set;
	size_t off = 0;
	int cpu, start = -1;

	allowed[0] = '\0';
	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		for (cpu = 0; cpu <= CPU_SETSIZE; cpu++) {
			bool in = cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set);
			if (in && start < 0)
				start = cpu;
			if (!in && start >= 0 && off + 24 < sizeof(allowed)) {
				off += (size_t)snprintf(allowed + off, sizeof(allowed) - off,
							"%s%d", off ? "," : "", start);
				if (cpu - 1 > start)
					off += (size_t)snprintf(allowed + off, sizeof(allowed) - off,
								"-%d", cpu - 1);
				start = -1;
			}
		}
	}
	if (spank_getenv(sp, "SLURM_STEP_GPUS", gpus, sizeof(gpus)) == ESPANK_SUCCESS) {
		char cvd[1024];
		/* ConstrainDevices=yes: the task will see these as 0..n-1. */
		if (spank_getenv(sp, "CUDA_VISIBLE_DEVICES", cvd, sizeof(cvd)) == ESPANK_SUCCESS &&
		    pm_gpus_renumbered(gpus, cvd))
			snprintf(n->step_gpus, sizeof(n->step_gpus), "%s", gpus);
	} else if (spank_getenv(sp, "CUDA_VISIBLE_DEVICES", gpus, sizeof(gpus)) != ESPANK_SUCCESS) {
		gpus[0] = '\0';
	}
	if (pm_bind_plan_node(pm_g.site.topology[0] ? pm_g.site.topology : NULL,
			      pm_g.resolved.bind, (int)n->ntasks_local,
			      allowed[0] ? allowed : NULL, gpus[0] ? gpus : NULL, &n->plan,
			      err, sizeof(err)))
		fail("cannot plan the binding of node %u's ranks: %s", n->nodeid, err);
}

static int bind_setenv(void *ctx, const char *name, const char *value)
{
	return spank_setenv(ctx, name, value, 1) == ESPANK_SUCCESS ? 0 : -1;
}

static int bind_getenv(void *ctx, const char *name, char *buf, size_t len)
{
	return spank_getenv(ctx, name, buf, (int)len) == ESPANK_SUCCESS ? 0 : -1;
}

int pm_remote_user_init(spank_t sp)
{
	struct pm_node *n = &node_s;
	int p[2];
	char buf[PM_ERRLEN];
	ssize_t len = 0;
	struct pollfd pfd;
	pid_t stepd = getpid();
	int nchecks, wait_ms;

	if (!active || pm_g.error[0])
		return 0;
	if (pipe2(p, O_CLOEXEC)) {
		fail("pipe: %s", strerror(errno));
		return 0;
	}
	n->pid = fork();
	if (n->pid < 0) {
		close(p[0]);
		close(p[1]);
		fail("fork: %s", strerror(errno));
		return 0;
	}
	if (n->pid == 0) {
		close(p[0]);
		fcntl(p[1], F_SETFD, 0);
		exec_procmgrd(sp, n, p[1], stepd);
	}
	close(p[1]);
	n->pidfd = (int)syscall(SYS_pidfd_open, n->pid, 0);

	/* Ready means listening, with this node's checks done: give them
	 * their time (each script is bounded by health_timeout). */
	nchecks = pm_checks_parse(pm_g.resolved.health, NULL, 0, buf, sizeof(buf));
	wait_ms = 30000 + (nchecks > 0 ? nchecks : 0) * (int)pm_g.site.health_timeout_ms;
	pfd.fd = p[0];
	pfd.events = POLLIN;
	while (len < (ssize_t)sizeof(buf) - 1) {
		ssize_t r;
		int pr = poll(&pfd, 1, wait_ms);
		if (pr == 0) {
			snprintf(buf, sizeof(buf), "error: not ready after %d s", wait_ms / 1000);
			len = (ssize_t)strlen(buf);
			break;
		}
		if (pr < 0 && errno == EINTR)
			continue;
		r = read(p[0], buf + len, sizeof(buf) - 1 - (size_t)len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += r;
		if (memchr(buf, '\n', (size_t)len))
			break;
	}
	close(p[0]);
	buf[len] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (!strncmp(buf, "health\t", 7)) {
		char *node = buf + 7, *why = strchr(node, '\t');
		if (why)
			*why++ = '\0';
		fail("node %s failed a health check before launch: %s; the step does not "
		     "start", node, why ? why : "?");
	} else if (strcmp(buf, "ok")) {
		fail("procmgrd did not start on node %u: %s", n->nodeid,
		     len ? buf : "it exited without a word (see its log in state_dir)");
	}
	if (!pm_g.error[0] && pm_g.resolved.bind)
		plan_binding(sp, n);
	return 0;
}

static int set(spank_t sp, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int set(spank_t sp, const char *name, const char *fmt, ...)
{
	char v[PATH_MAX + 64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	return spank_setenv(sp, name, v, 1) == ESPANK_SUCCESS ? 0 : -1;
}

/* The plan names the node's GPUs; under ConstrainDevices the task knows
 * them by their place in the step's list. */
static int renumber_gpus(spank_t sp, struct pm_node *n, uint32_t rank)
{
	char node[1024], task[1024];

	if (spank_getenv(sp, "CUDA_VISIBLE_DEVICES", node, sizeof(node)) != ESPANK_SUCCESS)
		return 0;
	if (pm_gpus_to_task(n->step_gpus, node, task, sizeof(task)) ||
	    spank_setenv(sp, "CUDA_VISIBLE_DEVICES", task, 1) != ESPANK_SUCCESS) {
		pm_err("rank %u: cannot renumber GPUs %s within the step's %s", rank, node,
		       n->step_gpus);
		return -1;
	}
	return 0;
}

int pm_remote_task_init(spank_t sp)
{
	struct pm_node *n = &node_s;
	uint32_t rank = 0;
	int lrank = 0, argc = 0, rc = 0;
	char **argv = NULL, buf[4096];

	if (!active)
		return 0;
	if (pm_g.error[0]) {
		pm_err("%s", pm_g.error);
		return -1;
	}
	if (spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_ID, &lrank) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1) {
		pm_err("cannot read the task's rank and command from Slurm");
		return -1;
	}
	if (pm_g.resolved.verbose && rank == 0 &&
	    pm_opts_format(&pm_g.resolved, buf, sizeof(buf)) == 0)
		fprintf(stderr, PM_NAME ": rank 0 runs with: %s\n", buf);

	/* torchrun's contract, so that a script written for it runs as is. */
	rc |= set(sp, "RANK", "%u", rank);
	rc |= set(sp, "LOCAL_RANK", "%d", lrank);
	rc |= set(sp, "WORLD_SIZE", "%u", n->ntasks);
	rc |= set(sp, "LOCAL_WORLD_SIZE", "%u", n->ntasks_local);
	rc |= set(sp, "GROUP_RANK", "%u", n->nodeid);
	rc |= set(sp, "GROUP_WORLD_SIZE", "%u", n->nnodes);
	rc |= set(sp, "ROLE_RANK", "%u", rank);
	rc |= set(sp, "ROLE_WORLD_SIZE", "%u", n->ntasks);
	rc |= set(sp, "MASTER_ADDR", "%s", n->master);
	rc |= set(sp, "MASTER_PORT", "%u", n->port + 1);
	rc |= set(sp, "TORCHELASTIC_RUN_ID", "%u.%u", n->job, n->step);
	rc |= set(sp, "TORCHELASTIC_MAX_RESTARTS", "%d", pm_g.resolved.restart_max);
	rc |= set(sp, "TORCHELASTIC_USE_AGENT_STORE", "False");
	rc |= set(sp, "PROCMGR_RESTART_COUNT", "0");
	rc |= set(sp, "TORCHELASTIC_RESTART_COUNT", "0");
	rc |= set(sp, "PROCMGR_SOCK", "%s/sock", n->rundir);
	rc |= set(sp, "PROCMGR_GRACE_MS", "%u", pm_g.resolved.grace_ms);
	if (pm_g.resolved.hang_timeout_ms) {
		rc |= set(sp, "PROCMGR_HANG_MS", "%u", pm_g.resolved.hang_timeout_ms);
		rc |= set(sp, "PROCMGR_HEARTBEAT", "%s/heartbeat.%d", n->rundir, lrank);
	}
	if (n->plan) {
		char msg[2048];
		if (pm_bind_apply_rank(n->plan, lrank, bind_setenv, bind_getenv, sp, msg,
				       sizeof(msg))) {
			pm_err("rank %u: binding: %s", rank, msg);
			return -1;
		}
		if (pm_g.resolved.verbose && msg[0])
			fprintf(stderr, PM_NAME ": rank %u: %s\n", rank, msg);
		if (n->step_gpus[0] && renumber_gpus(sp, n, rank))
			return -1;
	}
	/* Slurm execs the supervisor in the command's place, after TaskProlog
	 * and the rest of the task's set-up; it runs the command itself. */
	rc |= set(sp, "PROCMGR_ARGV0", "%s", argv[0]);
	if (rc) {
		pm_err("cannot set the rank's environment");
		return -1;
	}
	argv[0] = strdup(n->shim);
	return argv[0] ? 0 : -1;
}

/* procmgrd removes its run directory; after a SIGKILL we do. */
static void remove_rundir(struct pm_node *n)
{
	if (pm_rundir_remove(n->rundir))
		pm_err("cannot remove %s: %m", n->rundir);
}

static void stop_procmgrd(struct pm_node *n)
{
	struct pollfd pfd;

	if (n->pid <= 0)
		return;
	kill(n->pid, SIGTERM);
	if (n->pidfd >= 0) {
		pfd.fd = n->pidfd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 5000) == 0) {
			pm_err("procmgrd (pid %d) ignored SIGTERM for 5 s: killing it", (int)n->pid);
			kill(n->pid, SIGKILL);
		}
		close(n->pidfd);
		n->pidfd = -1;
	}
	/* slurmstepd may have reaped it already: ECHILD is fine. */
	waitpid(n->pid, NULL, 0);
	n->pid = -1;
	remove_rundir(n);
}

int pm_remote_task_exit(spank_t sp)
{
	struct pm_node *n = &node_s;
	(void)sp;

	if (!active || n->pid <= 0)
		return 0;
	if (++n->tasks_exited >= n->ntasks_local) {
		stop_procmgrd(n);
		/* Now, before Slurm sweeps the step's processes away. */
		maybe_drain(n);
	}
	return 0;
}

/* procmgrd (the user's) says a check failed here. Drain only for a check of
 * the site's own list, and only if it fails again when we, root, run it:
 * a job's user must not be able to drain a node at will. */
static bool site_check(const char *item)
{
	char list[PM_LIST_MAX], *save = NULL, *tok;

	snprintf(list, sizeof(list), "%s", pm_g.site.health);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, item))
			return true;
	return false;
}

static void maybe_drain(struct pm_node *n)
{
	char line[1024], err[PM_ERRLEN], *colon;
	struct pm_check check;
	struct pm_health *h = NULL;
	struct pm_health_result res;
	struct pm_health_ctx ctx = { .timeout_ms = pm_g.site.health_timeout_ms };
	FILE *f;
	int fd;

	fd = open(n->report, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return;
	}
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	unlink(n->report);
	line[strcspn(line, "\n")] = '\0';
	colon = strstr(line, ": ");
	if (!pm_g.site.drain || !colon)
		return;
	*colon = '\0';
	if (!site_check(line)) {
		pm_info("not draining for '%s': not one of the site's checks", line);
		return;
	}
	if (!n->nodename[0]) {
		pm_err("cannot drain for '%s': this node's name is unknown", line);
		return;
	}
	/* As procmgrd ran it: site scripts learn where they run. */
	setenv("SLURMD_NODENAME", n->nodename, 1);
	if (pm_check_parse(line, &check, err, sizeof(err)) ||
	    pm_health_open(&h, &ctx, err, sizeof(err))) {
		pm_err("cannot re-run '%s' before draining: %s", line, err);
		return;
	}
	if (pm_health_run(h, &check, 1, &res) == 0) {
		pm_info("not draining %s: '%s' passes when run as root", n->nodename, line);
	} else {
		char reason[512];
		snprintf(reason, sizeof(reason), "%s: %s", res.check, res.reason);
		if (pm_drain_node(n->nodename, reason, err, sizeof(err)))
			pm_err("%s", err);
		else
			pm_info("drained node %s: %s", n->nodename, reason);
	}
	pm_health_close(h);
}

int pm_remote_exit(spank_t sp)
{
	(void)sp;
	if (!active)
		return 0;
	stop_procmgrd(&node_s);
	maybe_drain(&node_s);
	if (node_s.plan)
		pm_bind_plan_free(node_s.plan);
	return 0;
}
