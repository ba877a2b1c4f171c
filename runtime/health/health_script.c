/* script:PATH: a site check in the style of LBNL NHC. Exit 0 is healthy;
 * otherwise the first line of its output (stdout and stderr together) is
 * the reason. Run without a shell, stdin from /dev/null, in its own process
 * group, which is killed when the script ends or times out so that nothing
 * it started outlives the check. */
#include "health_int.h"

#include "common/text.h"
#include "io/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;


/* Returns 0 or an errno value. */
static int spawn(const char *path, int out, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dfl;
	char *const argv[] = { (char *)path, NULL };
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out, 1);
	posix_spawn_file_actions_adddup2(&fa, out, 2);
	/* Whatever the caller has open (sockets, the event loop's fds) is
	 * none of the script's business. */
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	/* procmgrd (and slurmstepd before it) block signals for signalfd: a
	 * script must start with none blocked and default actions, or it
	 * could not be stopped by SIGTERM nor see SIGPIPE. */
	sigemptyset(&none);
	sigfillset(&dfl);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
				      POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawn(pid, path, &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	return rc;
}

/* Keeps the first line of everything read; drains the rest so that a
 * chatty script never blocks on a full pipe. */
struct first_line {
	char buf[256];
	size_t len;
	int done;
};

static void take(struct first_line *fl, const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n && !fl->done; i++) {
		if (p[i] == '\n') {
			/* NHC scripts often print an empty line first. */
			if (fl->len)
				fl->done = 1;
			continue;
		}
		if (fl->len + 1 < sizeof(fl->buf))
			fl->buf[fl->len++] = p[i];
	}
	fl->buf[fl->len] = '\0';
}

/* One read of the script's output; *open drops to 0 at EOF or an error. */
static void read_some(int fd, struct first_line *fl, int *open)
{
	char buf[4096];
	ssize_t k = read(fd, buf, sizeof(buf));

	if (k > 0)
		take(fl, buf, (size_t)k);
	else if (k == 0 || errno != EINTR)
		*open = 0;
}

void pm_health_script(struct pm_health *h, const struct pm_check *c,
		      struct pm_health_result *r)
{
	struct first_line fl = { .len = 0, .done = 0 };
	int pipefd[2], pidfd, pipe_open = 1, exited = 0, timed_out = 0;
	long long deadline = (long long)pm_now_ms() + h->timeout_ms;
	char tmo[32];
	int rc;
	siginfo_t si;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC)) {
		pm_hres(r, PM_HEALTH_ERROR, "cannot create a pipe: %s", strerror(errno));
		return;
	}
	rc = spawn(c->arg, pipefd[1], &pid);
	if (rc) {
		close(pipefd[0]);
		close(pipefd[1]);
		pm_hres(r, PM_HEALTH_ERROR, "cannot run %s: %s", c->arg, strerror(rc));
		return;
	}
	close(pipefd[1]);
	pidfd = pm_pidfd_open(pid);
	if (pidfd < 0) {
		pm_hres(r, PM_HEALTH_ERROR, "pidfd_open: %s", strerror(errno));
		killpg(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(pipefd[0]);
		return;
	}
	/* Until the script exits: its exit is awaited through the pidfd, not
	 * through the pipe, which a child it left behind may hold open. */
	while (!exited) {
		struct pollfd p[2] = {
			{ .fd = pidfd, .events = POLLIN },
			{ .fd = pipe_open ? pipefd[0] : -1, .events = POLLIN },
		};
		long long left = deadline - (long long)pm_now_ms();
		int n;

		if (left <= 0) {
			timed_out = 1;
			break;
		}
		n = poll(p, 2, left > 60000 ? 60000 : (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			pm_hres(r, PM_HEALTH_ERROR, "poll: %s", strerror(errno));
			timed_out = -1;
			break;
		}
		if (p[1].revents)
			read_some(pipefd[0], &fl, &pipe_open);
		if (p[0].revents & POLLIN)
			exited = 1;
	}
	/* The leader is a zombie (or still running) and not yet reaped, so
	 * its pid cannot be reused: the group kill below reaches only what
	 * the script started. */
	killpg(pid, SIGKILL);
	/* What the script wrote before it exited is still in the pipe. Read
	 * it without blocking: a grandchild that escaped the group (setsid)
	 * may hold the pipe open, and is not worth waiting for. */
	fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
	while (pipe_open && !fl.done)
		read_some(pipefd[0], &fl, &pipe_open);
	memset(&si, 0, sizeof(si));
	while (waitid(P_PID, (id_t)pid, &si, WEXITED) < 0 && errno == EINTR)
		;
	close(pidfd);
	close(pipefd[0]);
	if (timed_out < 0)
		return;
	if (timed_out) {
		pm_fmt_seconds(h->timeout_ms, tmo, sizeof(tmo));
		pm_hres(r, PM_HEALTH_FAIL, "timed out after %s s%s%s", tmo,
			fl.len ? "; last said: " : "", fl.buf);
		return;
	}
	if (si.si_code == CLD_EXITED && si.si_status == 0) {
		pm_hres(r, PM_HEALTH_OK, "%s", fl.len ? fl.buf : "exit 0");
		return;
	}
	if (fl.len)
		pm_hres(r, PM_HEALTH_FAIL, "%s", fl.buf);
	else if (si.si_code == CLD_EXITED)
		/* The check's label names the script: the reason need not. */
		pm_hres(r, PM_HEALTH_FAIL, "exited with status %d and no message",
			si.si_status);
	else
		pm_hres(r, PM_HEALTH_FAIL, "killed by signal %d (%s)", si.si_status,
			strsignal(si.si_status));
}
