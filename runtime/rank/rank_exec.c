#include "rank_exec.h"
#include "sweep/sweep_file.h"
#include "sweep/sweep_metric.h"

#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/contract.h"
#include "common/envlist.h"
#include "common/warm.h"
#include "common/wire.h"
#include "io/outdir.h"

#define PM_WARM_ARGV_MAX 4096

void pm_rank_exec_kill_strays(pid_t keep)
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
			if ((pid_t)atoi(p) != keep)
				kill((pid_t)atoi(p), SIGKILL);
	}
	closedir(dir);
}

static void put(struct pm_rank_envvar *vars, int *n, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void put(struct pm_rank_envvar *vars, int *n, const char *name, const char *fmt, ...)
{
	va_list ap;

	if (*n >= PM_RANK_GENENV_MAX)
		return;
	vars[*n].name = name;
	va_start(ap, fmt);
	vsnprintf(vars[*n].value, sizeof(vars[*n].value), fmt, ap);
	va_end(ap);
	(*n)++;
}

int pm_rank_exec_genenv(const struct pm_rank_exec *x, const struct pm_rank_who *who,
			struct pm_rank_envvar *vars)
{
	int n = 0;

	put(vars, &n, PM_ENV_RESTART_COUNT, "%u", who->gen);
	put(vars, &n, PM_ENV_TE_RESTART_COUNT, "%u", who->gen);
	if (who->group >= 0) {
		put(vars, &n, PM_ENV_RANK, "%d", who->grank);
		put(vars, &n, PM_ENV_ROLE_RANK, "%d", who->grank);
		put(vars, &n, PM_ENV_GROUP_RANK, "%d", who->group);
		if (who->master && who->master[0])
			put(vars, &n, PM_ENV_MASTER_ADDR, "%s", who->master);
	}
	if (x->error_file[0])
		put(vars, &n, PM_ENV_TE_ERROR_FILE, "%s", x->error_file);
	return n;
}

void pm_rank_trial_clear(struct pm_rank_trial *t)
{
	if (t->out_fd >= 0)
		close(t->out_fd);
	if (t->err_fd >= 0)
		close(t->err_fd);
	free(t->cmd);
	memset(t, 0, sizeof(*t));
	t->out_fd = t->err_fd = -1;
}

/* dir/NAME.RANK.EXT, in the directory judged the user's own (io/outdir.h):
 * beside a trials file in a shared directory, another user's directory,
 * link or FIFO there must not get a trial's output. */
static int open_out(int dfd, const char *name, int rank, const char *ext, char *err,
		    size_t errlen)
{
	char file[PM_SWEEP_NAME_MAX + 32];

	if (snprintf(file, sizeof(file), "%s.%d.%s", name, rank, ext) >= (int)sizeof(file)) {
		snprintf(err, errlen, "trial %s: its name is too long for a file", name);
		return -1;
	}
	return pm_outdir_file(dfd, file, err, errlen);
}

/* The last bytes of fd (at most len - 1), NUL-terminated: their length. */
static size_t read_tail(int fd, char *buf, size_t len)
{
	struct stat st;
	off_t at;
	ssize_t n;

	buf[0] = '\0';
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode))
		return 0;
	at = st.st_size > (off_t)(len - 1) ? st.st_size - (off_t)(len - 1) : 0;
	n = pread(fd, buf, len - 1, at);
	if (n < 0)
		n = 0;
	buf[n] = '\0';
	return (size_t)n;
}

int pm_rank_trial_result(const struct pm_rank_trial *t, struct pm_metric *m, char *why,
			 size_t whylen)
{
	char buf[PM_METRIC_FILE_TAIL + 1];
	size_t n;
	int fd, rc;

	/* The trial's own file, in its user's directory; a FIFO or a link put
	 * there must not block or redirect us. */
	fd = open(t->result_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(why, whylen, "cannot read it: %s", strerror(errno));
		return -1;
	}
	n = read_tail(fd, buf, sizeof(buf));
	if (!n) {
		struct stat st;
		rc = fstat(fd, &st) || S_ISREG(st.st_mode) ? 0 : -1;
		close(fd);
		if (rc)
			snprintf(why, whylen, "it is not a regular file");
		return rc;
	}
	close(fd);
	return pm_metric_from_text(buf, n, m, why, whylen);
}

void pm_rank_trial_stdout_failure(const struct pm_rank_trial *t, char *text, size_t len)
{
	char buf[PM_TAIL_BYTES + 1];

	text[0] = '\0';
	if (read_tail(t->out_fd, buf, sizeof(buf)))
		pm_err_from_stdout(buf, text, len);
}

int pm_rank_trial_set(struct pm_rank_trial *t, int rank, int restarts, const char *text,
		      const char *dir, char *err, size_t errlen)
{
	const char *nl = strchr(text, '\n');
	int n = 0, dfd;

	pm_rank_trial_clear(t);
	/* The last field, the state scope, is procmgrd's (statescope.h). */
	if (!nl || sscanf(text, "%64s %d %d %d %255s %d %*u%n", t->name, &t->world, &t->local_rank,
			  &t->local_world, t->master, &t->port, &n) != 6 || text + n != nl) {
		snprintf(err, errlen, "malformed trial start from procmgrd");
		return -1;
	}
	t->rank = rank;
	t->restarts = restarts;
	t->cmd = strdup(nl + 1);
	if (!t->cmd) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	dfd = pm_outdir_open(dir, err, errlen);
	if (dfd < 0)
		return -1;
	t->out_fd = open_out(dfd, t->name, rank, "out", err, errlen);
	if (t->out_fd >= 0)
		t->err_fd = open_out(dfd, t->name, rank, "err", err, errlen);
	close(dfd);
	if (t->out_fd < 0 || t->err_fd < 0)
		return -1;
	/* A result is its attempt's: the one before goes (or a stale one of
	 * an earlier sweep of the same file). */
	if (snprintf(t->result_path, sizeof(t->result_path), "%s/%s.%d.result", dir, t->name,
		     rank) >= (int)sizeof(t->result_path)) {
		snprintf(err, errlen, "the result file's path of trial %s in %s is too long", t->name,
			 dir);
		return -1;
	}
	if (unlink(t->result_path) && errno != ENOENT) {
		snprintf(err, errlen, "cannot remove %s: %s", t->result_path, strerror(errno));
		return -1;
	}
	t->on = true;
	return 0;
}

static int trial_env(struct pm_envlist *e, const struct pm_rank_trial *t)
{
	int rc = 0;

	rc |= pm_envlist_setf(e, PM_ENV_RESTART_COUNT, "%d", t->restarts);
	rc |= pm_envlist_setf(e, PM_ENV_TE_RESTART_COUNT, "%d", t->restarts);
	rc |= pm_envlist_setf(e, PM_ENV_RANK, "%d", t->rank);
	rc |= pm_envlist_setf(e, PM_ENV_ROLE_RANK, "%d", t->rank);
	rc |= pm_envlist_setf(e, PM_ENV_WORLD_SIZE, "%d", t->world);
	rc |= pm_envlist_setf(e, PM_ENV_ROLE_WORLD_SIZE, "%d", t->world);
	rc |= pm_envlist_setf(e, PM_ENV_LOCAL_RANK, "%d", t->local_rank);
	rc |= pm_envlist_setf(e, PM_ENV_LOCAL_WORLD_SIZE, "%d", t->local_world);
	/* One group per node the trial spans would need its node order;
	 * torch reads GROUP_RANK only under torchrun's agent. */
	pm_envlist_unset(e, PM_ENV_GROUP_RANK);
	pm_envlist_unset(e, PM_ENV_GROUP_WORLD_SIZE);
	rc |= pm_envlist_set(e, PM_ENV_MASTER_ADDR, t->master);
	rc |= pm_envlist_setf(e, PM_ENV_MASTER_PORT, "%d", t->port);
	rc |= pm_envlist_set(e, PM_ENV_TE_RUN_ID, t->name);
	rc |= pm_envlist_set(e, PM_ENV_TRIAL, t->name);
	rc |= pm_envlist_set(e, PM_ENV_RESULT_FILE, t->result_path);
	return rc;
}

/* The command's whole environment: the step's, and what its generation,
 * its trial or its standby adds; the warm channel stays open across exec,
 * under the number the environment names. */
static int child_env(struct pm_envlist *e, const struct pm_rank_exec *x,
		     const struct pm_rank_who *who)
{
	struct pm_rank_envvar vars[PM_RANK_GENENV_MAX];
	int rc = 0;

	if (pm_envlist_init(e, environ))
		return -1;
	if (who && who->trial) {
		rc |= trial_env(e, who->trial);
		if (x->error_file[0])
			rc |= pm_envlist_set(e, PM_ENV_TE_ERROR_FILE, x->error_file);
	} else if (who) {
		int n = pm_rank_exec_genenv(x, who, vars);
		for (int i = 0; i < n; i++)
			rc |= pm_envlist_set(e, vars[i].name, vars[i].value);
	} else {
		/* A standby has no generation yet (the step's 0 is not its
		 * own): START sends it. */
		pm_envlist_unset(e, PM_ENV_RESTART_COUNT);
		pm_envlist_unset(e, PM_ENV_TE_RESTART_COUNT);
	}
	if (x->warm_fd < 0)
		pm_envlist_unset(e, PM_ENV_WARM_FD);
	else
		rc |= pm_envlist_setf(e, PM_ENV_WARM_FD, "%d", x->warm_fd);
	return rc ? -1 : 0;
}

void pm_rank_exec_prepare(struct pm_rank_exec *x, const struct pm_rank_who *who, bool warm)
{
	if (x->heartbeat)
		unlink(x->heartbeat); /* judged after its first heartbeat, or FIRST */
	/* An error is the generation's own: the last one's file goes. */
	if (x->error_file[0])
		unlink(x->error_file);
	x->error_file[0] = '\0';
	if (x->error_base && pm_path_error_file_gen(x->error_file, sizeof(x->error_file),
						    x->error_base, who->gen) == 0)
		unlink(x->error_file);
	/* In the ranks' output and per-task files, where a generation begins. */
	if (who->gen > 0 && !who->trial)
		fprintf(stderr, "procmgr: rank %d: generation %u starts%s\n", who->grank, who->gen,
			warm ? " (warm)" : "");
}

/* Everything the child needs, made before it exists: it shares our memory
 * and runs on a stack of its own until exec (clone with CLONE_VM and
 * CLONE_VFORK, as posix_spawn does), so it calls nothing that allocates,
 * locks or writes our memory: only system calls on its own descriptors. */
struct child_plan {
	pid_t parent, tracer; /* tracer: procmgrd, 0 unknown */
	const sigset_t *mask;
	int warm_fd, err_fd, out_fd, trial_out_fd, ep;
	bool path_search; /* execvpe (PATH) or execve */
	const char *file;
	char *const *argv;
	char *const *envp;
};

static int child_main(void *arg)
{
	const struct child_plan *p = arg;
	int e;

	/* Never outlive the supervisor (procmgrd kills the group too). */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != p->parent)
		_exit(137);
	setpgid(0, 0);
	/* procmgrd takes the command's stacks (procmgr stacks, a hang):
	 * under Yama's ptrace_scope 1 only a declared tracer may. */
	if (p->tracer > 0)
		prctl(PR_SET_PTRACER, (unsigned long)p->tracer);
	/* No handler of ours is installed (signals come through a signalfd),
	 * so unblocking runs none of our code here. */
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, p->mask, NULL);
	if (p->warm_fd >= 0)
		fcntl(p->warm_fd, F_SETFD, 0);
	if (p->err_fd >= 0 && dup2(p->err_fd, STDERR_FILENO) < 0)
		_exit(126);
	if (p->out_fd >= 0 && dup2(p->out_fd, STDOUT_FILENO) < 0)
		_exit(126);
	if (p->trial_out_fd >= 0 && dup2(p->trial_out_fd, STDOUT_FILENO) < 0)
		_exit(126);
	if (p->path_search)
		execvpe(p->file, p->argv, p->envp);
	else
		execve(p->file, p->argv, p->envp);
	e = errno;
	(void)!write(p->ep, &e, sizeof(e));
	_exit(e == ENOENT ? 127 : 126);
}

/* The child's stack: one start at a time (procmgr-rank has one thread, and
 * CLONE_VFORK holds it until the child execs or exits). */
static char child_stack[64 * 1024] __attribute__((aligned(16)));

static pid_t fork_exec(struct pm_rank_exec *x, const struct pm_rank_who *who, int grank,
		       char **argv, bool *noexec)
{
	struct child_plan p = { .parent = getpid(), .mask = &x->orig_mask, .warm_fd = x->warm_fd,
				.err_fd = x->err_fd, .out_fd = x->out_fd, .trial_out_fd = -1,
				.path_search = true, .file = argv[0], .argv = argv };
	char line[PM_WIRE_TEXT_MAX + 1], *av[64];
	char *sh_argv[] = { "sh", "-c", NULL, NULL };
	struct pm_envlist env;
	int ep[2], e = 0;
	bool direct = false;
	ssize_t n;
	pid_t pid;

	*noexec = false;
	if (child_env(&env, x, who)) {
		fprintf(stderr, "procmgr: rank %d: cannot make the command's environment: %s\n",
			grank, strerror(errno));
		pm_envlist_free(&env);
		return -1;
	}
	p.envp = env.v;
	if (x->link_fd >= 0) {
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		if (!getsockopt(x->link_fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl))
			p.tracer = cr.pid;
	}
	if (who && who->trial) {
		p.trial_out_fd = who->trial->out_fd;
		/* A plain command line runs without a shell in between (one
		 * exec, not two: a sweep of short trials is bound by them); a
		 * builtin or anything not found goes to sh (below). */
		sh_argv[2] = who->trial->cmd;
		if (pm_sweep_simple_argv(who->trial->cmd, line, sizeof(line), av, 64) > 0) {
			p.file = av[0];
			p.argv = av;
			direct = true;
		} else {
			p.file = "/bin/sh";
			p.argv = sh_argv;
			p.path_search = false;
		}
	}
again:
	/* Closed by a successful exec; an errno comes back through it if exec
	 * fails, which tells "cannot run" from a command exiting 127. */
	if (pipe2(ep, O_CLOEXEC)) {
		fprintf(stderr, "procmgr: rank %d: pipe: %s\n", grank, strerror(errno));
		pm_envlist_free(&env);
		return -1;
	}
	p.ep = ep[1];
	pid = clone(child_main, child_stack + sizeof(child_stack), CLONE_VM | CLONE_VFORK | SIGCHLD,
		    &p);
	if (pid < 0) {
		fprintf(stderr, "procmgr: rank %d: fork: %s\n", grank, strerror(errno));
		close(ep[0]);
		close(ep[1]);
		pm_envlist_free(&env);
		return -1;
	}
	setpgid(pid, pid); /* both sides: no race with the first kill */
	close(ep[1]);
	while ((n = read(ep[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	*noexec = n == (ssize_t)sizeof(e);
	close(ep[0]);
	if (*noexec && direct && e == ENOENT) {
		/* "exit 5", "cd x": no such program, so the shell's (which
		 * says "not found" itself for a name that is neither). */
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		direct = false;
		p.file = "/bin/sh";
		p.argv = sh_argv;
		p.path_search = false;
		goto again;
	}
	if (*noexec) {
		/* Where the command's own stderr would have said it. */
		dprintf(x->err_fd >= 0 ? x->err_fd : STDERR_FILENO,
			"procmgr: rank %d: cannot run %s: %s\n", grank, p.file, strerror(e));
	}
	pm_envlist_free(&env);
	return pid;
}

pid_t pm_rank_exec_spawn(struct pm_rank_exec *x, const struct pm_rank_who *who, bool *noexec)
{
	pm_rank_exec_prepare(x, who, false);
	return fork_exec(x, who, who->grank, x->argv, noexec);
}

pid_t pm_rank_exec_standby(struct pm_rank_exec *x, int grank)
{
	bool noexec;
	pid_t pid = fork_exec(x, NULL, grank, x->sb_argv ? x->sb_argv : x->argv, &noexec);

	return noexec ? -1 : pid;
}

void pm_rank_exec_failure(const char *error_file, const struct pm_tail *tail, char *text,
			  size_t len)
{
	char json[65536], msgtext[1024], trace[PM_WIRE_TEXT_MAX], lines[PM_TAIL_BYTES];
	ssize_t n = -1;
	int fd = -1;

	text[0] = '\0';
	if (error_file[0])
		fd = open(error_file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0) {
		n = read(fd, json, sizeof(json));
		close(fd);
	}
	if (n > 0 && pm_errfile_parse(json, (size_t)n, msgtext, sizeof(msgtext), trace,
				      sizeof(trace)) == 0 && msgtext[0]) {
		pm_err_compose(msgtext, trace, text, len);
		return;
	}
	pm_tail_lines(tail, PM_TAIL_BYTES, lines, sizeof(lines)); /* all of them */
	pm_err_from_tail(lines, text, len);
}

/* --procmgr-warm=python:MODS: the command's own interpreter runs procmgr's
 * server, python/procmgr/standby.py as a file (warm.h: never -c), which
 * imports MODS, says ready, and at START runs the command's script as
 * the interpreter would have (modules found as `python script.py` finds
 * them). The one installed beside the module, else the source tree's
 * procmgr-rank was built in (where neither is, the installed path: the
 * interpreter says it cannot open it and every generation starts cold).
 * NULL (cold, said) if the command is not a python interpreter or has
 * too many arguments. */
void pm_rank_exec_python_argv(struct pm_rank_exec *x, const char *mods)
{
	static const char *const dirs[] = { PM_PYTHONMODDIR, PM_SRC_PYTHONDIR };
	static char modsbuf[PM_WARM_MODS_MAX], server[PATH_MAX];
	static char *py_argv[PM_WARM_ARGV_MAX];
	size_t i;

	if (!pm_warm_is_python(x->argv[0]))
		return;
	snprintf(modsbuf, sizeof(modsbuf), "%s", mods);
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(server, sizeof(server), "%s/procmgr/standby.py", dirs[i]);
		if (access(server, R_OK) == 0)
			break;
	}
	if (i == sizeof(dirs) / sizeof(dirs[0]))
		snprintf(server, sizeof(server), "%s/procmgr/standby.py", dirs[0]);
	if (pm_warm_python_argv(x->argv, modsbuf, server, py_argv, PM_WARM_ARGV_MAX) < 0)
		return;
	x->sb_argv = py_argv;
}
