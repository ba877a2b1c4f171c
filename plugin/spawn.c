#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "common/checkspec.h"
#include "io/rundir.h"
#include "io/safefile.h"
#include "io/sys.h"
#include "metricsdir.h"
#include "plugin.h"

int pm_spawn_dirs(struct pm_node *n, char *err, size_t errlen)
{
	const char *job = strrchr(n->jobdir, '/');
	struct stat st;
	int dfd, rc = -1;

	/* state_dir is root's alone, judged without following a link: root
	 * creates, chmods and renames files in it (the topology cache), and a
	 * directory another user may write lets them plant links and FIFOs
	 * there. state_dir/JOB belongs to the job's user: the event log and
	 * procmgrd's logs stay there for the user to read. */
	dfd = pm_privdir_open(pm_g.site.state_dir, 0755, 0, err, errlen);
	if (dfd < 0)
		return -1;
	if (!job || !*++job) {
		snprintf(err, errlen, "%s is not a job directory in state_dir", n->jobdir);
		goto out;
	}
	if (mkdirat(dfd, job, 0700) && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", n->jobdir, strerror(errno));
		goto out;
	}
	/* Never take another user's directory (a job id seen before). */
	if (fstatat(dfd, job, &st, AT_SYMLINK_NOFOLLOW)) {
		snprintf(err, errlen, "cannot stat %s: %s", n->jobdir, strerror(errno));
		goto out;
	}
	if (!S_ISDIR(st.st_mode) || (st.st_uid != 0 && st.st_uid != n->uid)) {
		snprintf(err, errlen, "%s is not a directory of root or of the job's user: "
			 "remove it", n->jobdir);
		goto out;
	}
	if (fchownat(dfd, job, n->uid, n->gid, AT_SYMLINK_NOFOLLOW)) {
		snprintf(err, errlen, "cannot give %s to the job's user: %s", n->jobdir,
			 strerror(errno));
		goto out;
	}
	rc = 0;
out:
	close(dfd);
	return rc;
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

/* The child's last word when it cannot become procmgrd. */
static void __attribute__((noreturn, format(printf, 2, 3)))
child_fails(int ready_fd, const char *fmt, ...)
{
	char text[PM_ERRLEN], line[PM_READY_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	pm_ready_format(line, sizeof(line), PM_READY_ERROR, NULL, text);
	(void)!write(ready_fd, line, strlen(line));
	_exit(1);
}

static void redirect(const char *log)
{
	int fd = open("/dev/null", O_RDONLY);

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
}

/* buf holds procmgrd's argument strings: allocated before the fork, as
 * nothing that may take a lock (malloc) is safe in the child of a threaded
 * slurmstepd. */
extern slurm_conf_t slurm_conf __attribute__((weak));

/* procmgrd's environment, for the scancel of a root whose srun was lost
 * (jobend.c): Slurm's bin beside slurmstepd's sbin, and slurmstepd's
 * slurm.conf. Nothing of the user's. */
static void slurm_env(char *path, size_t plen, char *conf, size_t clen, char **envp)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	snprintf(path, plen, "PATH=/usr/bin:/bin");
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash && slash > exe) {
			*slash = '\0';
			slash = strrchr(exe, '/');
			if (slash && !strcmp(slash, "/sbin") && slash > exe &&
			    strcmp(exe, "/usr/sbin") && strcmp(exe, "/sbin"))
				snprintf(path, plen, "PATH=%.*s/bin:/usr/bin:/bin",
					 (int)(slash - exe), exe);
		}
	}
	if (&slurm_conf && slurm_conf.slurm_conf && slurm_conf.slurm_conf[0] == '/' &&
	    snprintf(conf, clen, "SLURM_CONF=%s", slurm_conf.slurm_conf) < (int)clen)
		envp[1] = conf;
}

static void __attribute__((noreturn))
exec_procmgrd(spank_t sp, const struct pm_node *n, int ready_fd, pid_t stepd, char *buf,
	      size_t buflen)
{
	char log[PATH_MAX], events[PATH_MAX], err[PM_ERRLEN];
	char *argv[PM_DAEMON_ARGV_MAX];
	char path_env[PATH_MAX + 64], conf_env[PATH_MAX + 16];
	char *envp[] = { path_env, NULL, NULL };
	struct pm_daemon_args a;
	char list_arg[32];
	sigset_t none;
	int fd, list_fd = -1, keep_lo, keep_hi;

	setsid();
	if (drop_privileges(sp, n))
		child_fails(ready_fd, "cannot become uid %u: %s", n->uid, strerror(errno));
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (pm_path_log(log, sizeof(log), pm_g.site.state_dir, n->job, n->step, n->nodeid) ||
	    pm_path_events(events, sizeof(events), pm_g.site.state_dir, n->job, n->step))
		child_fails(ready_fd, "state_dir %.400s is too long for the step's files",
			    pm_g.site.state_dir);
	redirect(log);
	slurm_env(path_env, sizeof(path_env), conf_env, sizeof(conf_env), envp);

	pm_daemon_args_init(&a);
	a.job = n->job;
	a.step = n->step;
	a.node_id = n->nodeid;
	a.nodes = n->nodelist;
	/* Longer than one argument may be: in a memfd, read by procmgrd. */
	if (strlen(n->nodelist) > PM_NODELIST_ARG_MAX) {
		size_t len = strlen(n->nodelist), off = 0;
		ssize_t k;
		list_fd = (int)syscall(SYS_memfd_create, "procmgr-nodes", 0u);
		if (list_fd < 0)
			child_fails(ready_fd, "memfd_create: %s", strerror(errno));
		while (off < len && (k = write(list_fd, n->nodelist + off, len - off)) > 0)
			off += (size_t)k;
		if (off < len || lseek(list_fd, 0, SEEK_SET))
			child_fails(ready_fd, "cannot pass the node list (%zu bytes): %s", len,
				    strerror(errno));
		snprintf(list_arg, sizeof(list_arg), "fd:%d", list_fd);
		a.nodes = list_arg;
	}
	a.ntasks_local = n->ntasks_local;
	a.ntasks = n->ntasks;
	a.port = n->port;
	a.fanout = pm_g.site.fanout;
	a.rundir = n->rundir;
	a.events = events;
	a.munge_socket = n->munge_socket;
	a.opts = n->opts;
	a.ready_fd = ready_fd;
	a.watch_pid = stepd;
	a.health_report = n->report;
	a.health_timeout_ms = pm_g.site.health_timeout_ms;
	a.peer_timeout_ms = pm_g.site.peer_timeout_ms;
	a.metrics_dir = pm_g.site.metrics_dir[0] ? pm_g.site.metrics_dir : NULL;
	a.connect_timeout_ms = pm_g.site.connect_timeout_ms;
	a.srun_node = n->srun_node[0] ? n->srun_node : NULL;
	a.state_max_rank_mib = pm_g.site.state_max_rank_mib;
	a.state_max_node_mib = pm_g.site.state_max_node_mib;
	a.state_repl_mib_s = pm_g.site.state_repl_mib_s;
	if (pm_daemon_args_format(&a, pm_g.site.runtime, argv, PM_DAEMON_ARGV_MAX, buf,
				  buflen, err, sizeof(err)))
		child_fails(ready_fd, "%s", err);
	/* Only what we pass: nothing of slurmstepd's fds. Two calls, not a
	 * thousand (each is a launch's cost); the loop where the kernel has
	 * no close_range. */
	keep_lo = list_fd >= 0 && list_fd < ready_fd ? list_fd : ready_fd;
	keep_hi = list_fd > ready_fd ? list_fd : ready_fd;
	if ((keep_lo > 3 && syscall(SYS_close_range, 3u, (unsigned)keep_lo - 1, 0u)) ||
	    (keep_hi > keep_lo + 1 &&
	     syscall(SYS_close_range, (unsigned)keep_lo + 1, (unsigned)keep_hi - 1, 0u)) ||
	    syscall(SYS_close_range, (unsigned)keep_hi + 1, ~0u, 0u))
		for (fd = 3; fd < 1024; fd++)
			if (fd != ready_fd && fd != list_fd)
				close(fd);
	execve(argv[0], argv, envp);
	child_fails(ready_fd, "cannot run %s: %s", argv[0], strerror(errno));
}

enum { READY_LINE, READY_NONE, READY_LATE };

/* The first line from procmgrd, if one comes in time. */
static int read_ready(int fd, int wait_ms, char *buf, size_t len)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t got = 0;

	while (got < len - 1) {
		ssize_t r;
		int pr = poll(&pfd, 1, wait_ms);
		if (pr == 0)
			return READY_LATE;
		if (pr < 0 && errno == EINTR)
			continue;
		r = read(fd, buf + got, len - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		if (memchr(buf, '\n', got))
			break;
	}
	buf[got] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return got ? READY_LINE : READY_NONE;
}

int pm_spawn_launch(spank_t sp, struct pm_node *n, char *err, size_t errlen)
{
	char line[PM_READY_MAX];
	pid_t stepd = getpid();
	int p[2], nchecks;
	size_t listlen = strlen(n->nodelist);
	size_t buflen = 4 * PATH_MAX + listlen + sizeof(n->opts) + 1024;
	char *buf;

	buf = malloc(buflen);
	if (!buf) {
		snprintf(err, errlen, "cannot allocate procmgrd's command line (%zu bytes): %s",
			 buflen, strerror(errno));
		return -1;
	}
	if (pipe2(p, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		free(buf);
		return -1;
	}
	n->pid = fork();
	if (n->pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		free(buf);
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (n->pid == 0) {
		close(p[0]);
		fcntl(p[1], F_SETFD, 0);
		exec_procmgrd(sp, n, p[1], stepd, buf, buflen);
	}
	free(buf);
	close(p[1]);
	n->pidfd = pm_pidfd_open(n->pid);
	n->ready_fd = p[0];
	/* Ready means listening, with this node's checks done: give them
	 * their time (each script is bounded by health_timeout). */
	nchecks = pm_checks_parse(pm_g.resolved.health, NULL, 0, line, sizeof(line));
	n->ready_ms = 30000 + (nchecks > 0 ? nchecks : 0) * (int)pm_g.site.health_timeout_ms;
	return 0;
}

int pm_spawn_ready(struct pm_node *n, char *err, size_t errlen)
{
	char line[PM_READY_MAX];
	struct pm_ready r;
	int got;

	if (n->ready_fd < 0) {
		snprintf(err, errlen, "procmgrd was not started on node %u", n->nodeid);
		return -1;
	}
	got = read_ready(n->ready_fd, n->ready_ms, line, sizeof(line));
	close(n->ready_fd);
	n->ready_fd = -1;
	if (got == READY_LATE) {
		snprintf(err, errlen, "procmgrd did not start on node %u: error: not ready "
			 "after %d s", n->nodeid, n->ready_ms / 1000);
		return -1;
	}
	if (got == READY_NONE) {
		snprintf(err, errlen, "procmgrd did not start on node %u: it exited without a "
			 "word (see its log in state_dir)", n->nodeid);
		return -1;
	}
	if (pm_ready_parse(line, &r)) {
		snprintf(err, errlen, "procmgrd did not start on node %u: %s", n->nodeid, line);
		return -1;
	}
	switch (r.kind) {
	case PM_READY_OK:
		return 0;
	case PM_READY_HEALTH:
		snprintf(err, errlen, "node %s failed a health check before launch: %s; the "
			 "step does not start", r.node, r.text[0] ? r.text : "?");
		return -1;
	case PM_READY_ERROR:
		snprintf(err, errlen, "procmgrd did not start on node %u: error: %s", n->nodeid,
			 r.text);
		return -1;
	}
	return -1;
}

int pm_spawn_start(spank_t sp, struct pm_node *n, char *err, size_t errlen)
{
	if (n->ready_fd < 0 && n->pid <= 0 && pm_spawn_launch(sp, n, err, errlen))
		return -1;
	return pm_spawn_ready(n, err, errlen);
}

/* procmgrd's log is its stderr, opened before exec, so it exists from the
 * start; one that stayed empty is only clutter in the user's job directory.
 * Created lazily it would need procmgrd (and every check script that
 * inherits its stderr) to open it on first write. We are root in a
 * directory the user owns: never follow a link, remove only an empty
 * regular file of the user's. Whatever the user puts there in a race is in
 * their own directory, which they may empty themselves. */
static void remove_empty_log(const struct pm_node *n)
{
	char log[PATH_MAX];
	const char *base;
	struct stat st;
	int dfd;

	if (pm_path_log(log, sizeof(log), pm_g.site.state_dir, n->job, n->step, n->nodeid))
		return;
	base = strrchr(log, '/') + 1;
	dfd = open(n->jobdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size == 0 && st.st_uid == n->uid && st.st_nlink == 1 &&
	    unlinkat(dfd, base, 0) && errno != ENOENT)
		pm_err("cannot remove the empty %s: %m", log);
	close(dfd);
}

/* Through the pidfd when there is one: a pid that was reused is never hit. */
static void signal_procmgrd(struct pm_node *n, int sig)
{
	if (n->pidfd >= 0)
		(void)syscall(SYS_pidfd_send_signal, n->pidfd, sig, NULL, 0);
	else
		kill(n->pid, sig);
}

void pm_spawn_signal(struct pm_node *n)
{
	if (n->pid <= 0)
		return;
	/* SIGCONT: a stopped procmgrd (SIGSTOP, a debugger) still ends now. */
	signal_procmgrd(n, SIGTERM);
	signal_procmgrd(n, SIGCONT);
}

void pm_spawn_stop(struct pm_node *n)
{
	struct pollfd pfd;
	int rc;

	if (n->ready_fd >= 0) {
		close(n->ready_fd);
		n->ready_fd = -1;
	}
	if (n->pid <= 0)
		return;
	pm_spawn_signal(n);
	if (n->pidfd >= 0) {
		pfd.fd = n->pidfd;
		pfd.events = POLLIN;
		while ((rc = poll(&pfd, 1, 5000)) < 0 && errno == EINTR)
			;
		if (rc == 0) {
			pm_err("procmgrd (pid %d) ignored SIGTERM for 5 s: killing it", (int)n->pid);
			signal_procmgrd(n, SIGKILL);
		}
		close(n->pidfd);
		n->pidfd = -1;
	}
	/* slurmstepd may have reaped it already: ECHILD is fine. */
	waitpid(n->pid, NULL, 0);
	n->pid = -1;
	/* procmgrd removes its run directory; after a SIGKILL we do. */
	if (pm_rundir_remove(n->rundir))
		pm_err("cannot remove %s: %m", n->rundir);
	remove_empty_log(n);
	pm_metricsdir_end(n);
}
