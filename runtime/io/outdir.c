#include "outdir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Like mkdir -p: each missing component, as the user. */
static int make_parents(const char *path, char *err, size_t errlen)
{
	char buf[PATH_MAX];
	char *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		snprintf(err, errlen, "the path is too long");
		return -1;
	}
	for (p = buf + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		{
			char c = *p;
			*p = '\0';
			if (mkdir(buf, 0755) && errno != EEXIST) {
				snprintf(err, errlen, "cannot create %s: %s", buf, strerror(errno));
				return -1;
			}
			*p = c;
		}
		if (!*p)
			break;
	}
	return 0;
}

int pm_outdir_open(const char *path, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if (path[0] != '/') {
		snprintf(err, errlen, "'%s' is not an absolute path", path);
		return -1;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		if (make_parents(path, err, errlen))
			return -1;
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s%s", path, strerror(errno),
			 errno == ENOTDIR ? " (it must be a directory)" : "");
		return -1;
	}
	if (fstat(fd, &st)) {
		snprintf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
		goto bad;
	}
	/* Another user's directory: they could replace the ranks' files. */
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s belongs to uid %u, not to you (uid %u): another user "
			 "could replace the ranks' files there; use a directory of your own",
			 path, (unsigned)st.st_uid, (unsigned)geteuid());
		goto bad;
	}
	if (faccessat(fd, ".", W_OK | X_OK, AT_EACCESS)) {
		snprintf(err, errlen, "you cannot write in %s: %s", path, strerror(errno));
		goto bad;
	}
	return fd;
bad:
	close(fd);
	return -1;
}

int pm_outdir_file(int dfd, const char *name, char *err, size_t errlen)
{
	struct stat st;
	/* Read too: a sweep's trial failure quotes stdout's last line. */
	int fd = openat(dfd, name, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK |
				O_CLOEXEC | O_NOCTTY, 0644);

	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s%s", name, strerror(errno),
			 errno == ELOOP ? " (a symbolic link: refused)" : "");
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s is not a regular file of yours: refused", name);
		close(fd);
		return -1;
	}
	if (fcntl(fd, F_SETFL, O_APPEND)) {
		snprintf(err, errlen, "%s: fcntl: %s", name, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

int pm_outdir_name(char *buf, size_t len, int rank, const char *stream)
{
	int n = snprintf(buf, len, "rank.%d.%s", rank, stream);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}
