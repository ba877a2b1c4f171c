#include "safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/privdir.h"

int pm_privdir_open(const char *path, mode_t mode, uid_t owner, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if (mkdir(path, mode) && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %.400s: %s", path, strerror(errno));
		return -1;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOTDIR || errno == ELOOP)
			snprintf(err, errlen, "%.400s is not a directory (a link is not "
				 "followed): it must be a directory of uid %u that only its "
				 "owner may write", path, (unsigned)owner);
		else
			snprintf(err, errlen, "cannot open %.400s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st)) {
		snprintf(err, errlen, "cannot stat %.400s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (pm_privdir_judge(&st, owner, path, err, errlen)) {
		close(fd);
		return -1;
	}
	return fd;
}

int pm_safefile_write(int dfd, const char *name, const void *buf, size_t len, mode_t mode,
		      char *err, size_t errlen)
{
	char tmp[512];
	const char *p = buf;
	size_t off = 0;
	int fd, n;

	n = snprintf(tmp, sizeof(tmp), ".%s.%ld.tmp", name, (long)getpid());
	if (n < 0 || (size_t)n >= sizeof(tmp) || strchr(name, '/')) {
		snprintf(err, errlen, "file name %.300s: too long or not a plain name", name);
		return -1;
	}
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		    0600);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
		return -1;
	}
	while (off < len) {
		ssize_t k = write(fd, p + off, len - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			snprintf(err, errlen, "cannot write %s: %s", tmp,
				 k < 0 ? strerror(errno) : "no progress");
			goto fail;
		}
		off += (size_t)k;
	}
	if (fchmod(fd, mode)) {
		snprintf(err, errlen, "cannot chmod %s: %s", tmp, strerror(errno));
		goto fail;
	}
	if (close(fd)) {
		fd = -1;
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
		goto fail;
	}
	fd = -1;
	if (renameat(dfd, tmp, dfd, name)) {
		snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, name, strerror(errno));
		goto fail;
	}
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	/* Ours: created by the open above, in a directory no one else writes. */
	unlinkat(dfd, tmp, 0);
	return -1;
}
