/* The step's metrics file: created by the plugin, as root, for the job's
 * user in a metrics_dir that is root's alone (plugin/metricsdir.c), so that
 * no other user can create, replace or plant it; rewritten here in place.
 * A scrape at the instant of a rewrite may read a mix of two versions
 * (node_exporter then reports that scrape's error); the next one is whole. */
#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/metricsname.h"

int pm_metrics_path(char *buf, size_t len, const char *dir, uint32_t job, uint32_t step)
{
	char name[64];
	int n;

	if (pm_metrics_name(name, sizeof(name), job, step)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	n = snprintf(buf, len, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int pm_metrics_write(const char *dir, uint32_t job, uint32_t step, const char *text)
{
	char path[PATH_MAX];
	size_t len = strlen(text), off = 0;
	struct stat st;
	int fd, e;

	if (pm_metrics_path(path, sizeof(path), dir, job, step))
		return -1;
	/* Ours, made by root for us: no link, no FIFO, nobody else's. */
	fd = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	while (off < len) {
		ssize_t n = pwrite(fd, text + off, len - off, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		off += (size_t)n;
	}
	if (ftruncate(fd, (off_t)len))
		goto fail;
	return close(fd);
fail:
	e = errno;
	close(fd);
	errno = e;
	return -1;
}
