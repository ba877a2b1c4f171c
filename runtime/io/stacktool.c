#include "stacktool.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int on_path(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char dirs[4096], *save = NULL, *d;

	snprintf(dirs, sizeof(dirs), "%s", path && *path ? path : "/usr/bin:/bin");
	for (d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/%s", d, name);
		if (access(out, X_OK) == 0)
			return 0;
	}
	return -1;
}

int pm_stacktool_find(char *path, size_t len, bool *gdb, char *why, size_t wlen)
{
	*gdb = on_path("gdb", path, len) == 0;
	if (*gdb || on_path("eu-stack", path, len) == 0)
		return 0;
	snprintf(why, wlen, "no stack tool: install gdb (and python3-dbg for Python frames) "
		 "or elfutils (eu-stack)");
	return -1;
}

pid_t pm_stacktool_spawn(const char *tool, bool gdb, pid_t target, const char *out)
{
	char pid[16];
	pid_t p;

	snprintf(pid, sizeof(pid), "%d", (int)target);
	p = fork();
	if (p != 0)
		return p;
	{
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		sigset_t none;
		if (fd < 0 || null < 0 || dup2(null, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setpgid(0, 0);
		/* Argument values are costly to print (Python's pretty printers)
		 * and differ between ranks anyway. */
		if (gdb)
			execl(tool, tool, "-q", "-batch", "-nx", "-p", pid, "-ex", "set pagination off",
			      "-ex", "set print frame-arguments none", "-ex", "thread apply all bt",
			      "-ex", "thread apply all py-bt", (char *)NULL);
		else
			execl(tool, tool, "-p", pid, (char *)NULL);
		_exit(127);
	}
}
