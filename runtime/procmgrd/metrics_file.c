/* The step's metrics file: written whole or not at all. */
#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int pm_metrics_path(char *buf, size_t len, const char *dir, uint32_t job, uint32_t step)
{
	int n = snprintf(buf, len, "%s/procmgr-%u.%u.prom", dir, job, step);

	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int pm_metrics_write(const char *dir, uint32_t job, uint32_t step, const char *text)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	size_t len = strlen(text), off = 0;
	struct stat st;
	int fd, e;

	if (pm_metrics_path(path, sizeof(path), dir, job, step))
		return -1;
	/* node_exporter reads *.prom only: the temporary name is never read. */
	if (snprintf(tmp, sizeof(tmp), "%s/.procmgr-%u.%u.prom.%ld", dir, job, step,
		     (long)getpid()) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* The name is the step's; a file there that is not ours stays. */
	if (lstat(path, &st) == 0 && (st.st_uid != geteuid() || !S_ISREG(st.st_mode))) {
		errno = EEXIST;
		return -1;
	}
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		off += (size_t)n;
	}
	/* Readable by node_exporter's user, whatever our umask. */
	if (fchmod(fd, 0644))
		goto fail;
	if (close(fd)) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path))
		goto fail;
	return 0;
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	errno = e;
	return -1;
}

void pm_metrics_remove(const char *dir, uint32_t job, uint32_t step)
{
	char path[PATH_MAX];
	struct stat st;

	if (pm_metrics_path(path, sizeof(path), dir, job, step) == 0 && lstat(path, &st) == 0 &&
	    st.st_uid == geteuid())
		unlink(path);
}
