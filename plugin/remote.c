/* slurmstepd: one per node per step. Starts this node's procmgrd, turns each
 * task into a supervised rank, and stops everything at step end. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
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

#include "hostlist.h"
#include "plugin.h"

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
	pid_t pid;      /* procmgrd */
	int pidfd;
	uint32_t tasks_exited;
};

static struct pm_node node_s;
static bool active; /* procmgr supervises this step on this node */

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
	if (chown(n->jobdir, n->uid, n->gid))
		return fail("cannot give %s to the job's user: %s", n->jobdir, strerror(errno));
	snprintf(n->rundir, sizeof(n->rundir), "%.3000s/%u.%u.run", n->jobdir, n->step,
		 n->nodeid);
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
	{
		char *argv[] = {
			pm_g.site.runtime, "--job", a[0], "--step", a[1], "--node-id", a[2],
			"--nodes", n->nodelist, "--ntasks-local", a[3], "--ntasks", a[4],
			"--port", a[5], "--fanout", a[6], "--rundir", n->rundir,
			"--events", events, "--opts", opts, "--ready-fd", a[7],
			"--watch-pid", a[8],
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

int pm_remote_user_init(spank_t sp)
{
	struct pm_node *n = &node_s;
	int p[2];
	char buf[PM_ERRLEN];
	ssize_t len = 0;
	struct pollfd pfd;
	pid_t stepd = getpid();

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

	/* Ready means listening, with this node's checks passed. */
	pfd.fd = p[0];
	pfd.events = POLLIN;
	while (len < (ssize_t)sizeof(buf) - 1) {
		ssize_t r;
		int pr = poll(&pfd, 1, 30000);
		if (pr == 0) {
			snprintf(buf, sizeof(buf), "error: not ready after 30 s");
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
	if (strcmp(buf, "ok")) {
		char node[64];
		snprintf(node, sizeof(node), "%u", n->nodeid);
		fail("procmgrd did not start on node %s: %s", node,
		     len ? buf : "it exited without a word (see its log in state_dir)");
	}
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
	DIR *d = opendir(n->rundir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	if (rmdir(n->rundir))
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
	if (++n->tasks_exited >= n->ntasks_local)
		stop_procmgrd(n);
	return 0;
}

int pm_remote_exit(spank_t sp)
{
	(void)sp;
	if (active)
		stop_procmgrd(&node_s);
	return 0;
}
