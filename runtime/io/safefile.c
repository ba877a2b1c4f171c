#include "safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/privdir.h"

/* Links followed on the way to a directory, at most (root's own, as
 * /var/run -> /run). */
#define LINKS_MAX 16

struct walk {
	const char *path; /* the directory asked for, for messages */
	uid_t owner;
	int links;
	char *err;
	size_t errlen;
};

/* The path so far, for messages: a link's target after the link's name. */
static void show(char *buf, size_t len, const char *via, const char *dirs, size_t n)
{
	if (via)
		snprintf(buf, len, "%.400s -> %.*s", via, (int)(n < 400 ? n : 400), dirs);
	else
		snprintf(buf, len, "%.*s", (int)(n < 800 ? n : 800), dirs);
}

/* The directories of dirs (the path above the last name, or a link's
 * target, named via), walked from at ("/" if absolute): each opened without
 * following a link, judged as a directory above (pm_privdir_judge_above),
 * a link of root's walked in its turn. Nothing is opened but O_PATH: no
 * FIFO, no device, and no read permission needed (check-config as any
 * user). The O_PATH descriptor of the directory reached, or -1 with err. */
static int walk(struct walk *w, int at, const char *dirs, const char *via)
{
	char name[NAME_MAX + 1], shown[1024];
	const char *p = dirs;
	struct stat st;
	int dfd, fd, r;

	if (*p == '/') {
		dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		show(shown, sizeof(shown), via, "/", 1);
		if (dfd >= 0 && (fstat(dfd, &st) ||
				 pm_privdir_judge_above(&st, w->owner, w->path, shown, w->err,
							w->errlen))) {
			close(dfd);
			return -1;
		}
	} else {
		dfd = fcntl(at, F_DUPFD_CLOEXEC, 0);
	}
	if (dfd < 0) {
		snprintf(w->err, w->errlen, "%.400s: cannot open a directory above it: %s",
			 w->path, strerror(errno));
		return -1;
	}
	for (;;) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (!n)
			return dfd;
		if (n > NAME_MAX) {
			snprintf(w->err, w->errlen, "%.400s: a name above it is too long", w->path);
			goto fail;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		if (!strcmp(name, "."))
			continue;
		show(shown, sizeof(shown), via, dirs, (size_t)(p - dirs));
		fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT)
				snprintf(w->err, w->errlen, "%.400s: %.400s above it does not exist: "
					 "only the last directory is made", w->path, shown);
			else
				snprintf(w->err, w->errlen, "%.400s: cannot open %.400s above it: %s",
					 w->path, shown, strerror(errno));
			goto fail;
		}
		r = fstat(fd, &st) ? -1 : pm_privdir_judge_above(&st, w->owner, w->path, shown,
								 w->err, w->errlen);
		if (r == 1) {
			char *target = malloc(PATH_MAX);
			ssize_t k = -1;

			if (++w->links > LINKS_MAX)
				snprintf(w->err, w->errlen, "%.400s: more than %d links above it",
					 w->path, LINKS_MAX);
			else if (!target || (k = readlinkat(fd, "", target, PATH_MAX - 1)) <= 0)
				snprintf(w->err, w->errlen, "%.400s: cannot read the link %.400s "
					 "above it: %s", w->path, shown,
					 k == 0 ? "empty" : strerror(errno));
			close(fd);
			fd = -1;
			if (k > 0) {
				target[k] = '\0';
				fd = walk(w, dfd, target, shown);
			}
			free(target);
			r = fd < 0 ? -1 : 0;
		}
		if (r) {
			if (fd >= 0)
				close(fd);
			goto fail;
		}
		close(dfd);
		dfd = fd;
	}
fail:
	close(dfd);
	return -1;
}

/* path judged from "/" down; with make, its last directory made (mode) if
 * missing. 0 with *fd (O_PATH, or O_RDONLY with readable), 1 if only the
 * last directory is missing and not made, -1 with err. */
static int privdir(const char *path, mode_t mode, uid_t owner, bool make, bool readable,
		   int *fd, char *err, size_t errlen)
{
	struct walk w = { path, owner, 0, err, errlen };
	char dirs[PATH_MAX], *base;
	struct stat st;
	size_t n = strlen(path);
	int pfd, dfd;

	*fd = -1;
	while (n > 1 && path[n - 1] == '/')
		n--;
	if (path[0] != '/' || n >= sizeof(dirs)) {
		snprintf(err, errlen, "%.400s: not an absolute path, or too long", path);
		return -1;
	}
	memcpy(dirs, path, n);
	dirs[n] = '\0';
	base = strrchr(dirs, '/');
	*base++ = '\0';
	if (!*base) /* "/" itself */
		base = ".";
	pfd = walk(&w, AT_FDCWD, dirs[0] ? dirs : "/", NULL);
	if (pfd < 0)
		return -1;
	/* Made below the directory judged: never through a link. */
	if (make && mkdirat(pfd, base, mode) && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %.400s: %s", path, strerror(errno));
		close(pfd);
		return -1;
	}
	dfd = openat(pfd, base, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		int e = errno;

		close(pfd);
		snprintf(err, errlen, "cannot open %.400s: %s", path, strerror(e));
		return e == ENOENT && !make ? 1 : -1;
	}
	close(pfd);
	if (fstat(dfd, &st)) {
		snprintf(err, errlen, "cannot stat %.400s: %s", path, strerror(errno));
		close(dfd);
		return -1;
	}
	if (pm_privdir_judge(&st, owner, path, err, errlen)) {
		close(dfd);
		return -1;
	}
	if (readable) {
		/* The directory judged, not whatever has its name now. */
		int rfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (rfd < 0)
			snprintf(err, errlen, "cannot open %.400s: %s", path, strerror(errno));
		close(dfd);
		if (rfd < 0)
			return -1;
		dfd = rfd;
	}
	*fd = dfd;
	return 0;
}

int pm_privdir_open(const char *path, mode_t mode, uid_t owner, char *err, size_t errlen)
{
	int fd;

	return privdir(path, mode, owner, true, true, &fd, err, errlen) ? -1 : fd;
}

int pm_privdir_find(const char *path, uid_t owner, int *fd, char *err, size_t errlen)
{
	int tmp, r = privdir(path, 0, owner, false, fd != NULL, fd ? fd : &tmp, err, errlen);

	if (!fd && r == 0)
		close(tmp);
	return r;
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

/* The file at path is one judged; -1 with err if not. */
static int judged(int fd, const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st)) {
		snprintf(err, errlen, "cannot stat %.400s: %s", path, strerror(errno));
		return -1;
	}
	return pm_userfile_judge(&st, geteuid(), path, err, errlen);
}

int pm_userfile_create(const char *path, int flags, mode_t mode, char *err, size_t errlen)
{
	const int how = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | flags;
	struct stat st;
	int fd = open(path, how, mode);

	if (fd < 0 && errno == EEXIST) {
		/* An earlier run's file of ours goes; a plant stays, untouched. */
		if (lstat(path, &st) == 0 && pm_userfile_judge(&st, geteuid(), path, err, errlen))
			return -1;
		if (unlink(path) && errno != ENOENT) {
			snprintf(err, errlen, "cannot replace %.400s: %s", path, strerror(errno));
			return -1;
		}
		fd = open(path, how, mode);
		if (fd < 0 && errno == EEXIST) {
			/* Planted again between the two: not ours to fight over. */
			if (lstat(path, &st) || !pm_userfile_judge(&st, geteuid(), path, err, errlen))
				snprintf(err, errlen, "%.400s: made again by another process while "
					 "it was being replaced: not written", path);
			return -1;
		}
	}
	if (fd < 0)
		snprintf(err, errlen, "cannot create %.400s: %s", path, strerror(errno));
	return fd;
}

int pm_userfile_append(const char *path, mode_t mode, char *err, size_t errlen)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT)
		return pm_userfile_create(path, O_APPEND, mode, err, errlen);
	if (fd < 0) {
		struct stat st;

		/* ELOOP, ENXIO (a FIFO nobody reads): say what is there. */
		if (lstat(path, &st) || !pm_userfile_judge(&st, geteuid(), path, err, errlen))
			snprintf(err, errlen, "cannot open %.400s: %s", path, strerror(errno));
		return -1;
	}
	if (judged(fd, path, err, errlen)) {
		close(fd);
		return -1;
	}
	return fd;
}

int pm_userfile_read(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		struct stat st;
		int e = errno;

		if (e == ENOENT || lstat(path, &st) ||
		    !pm_userfile_judge(&st, geteuid(), path, err, errlen))
			snprintf(err, errlen, "cannot open %.400s: %s", path, strerror(e));
		errno = e;
		return -1;
	}
	if (judged(fd, path, err, errlen)) {
		close(fd);
		return -1;
	}
	return fd;
}

int pm_userfile_temp(const char *path, char *tmp, size_t tmplen, mode_t mode, char *err,
		     size_t errlen)
{
	unsigned r;
	int i, fd = -1, n;

	/* A name no one can plant ahead: the pid and a random part, made new. */
	for (i = 0; i < 100 && fd < 0; i++) {
		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			r = (unsigned)i * 2654435761u;
		n = snprintf(tmp, tmplen, "%s.%ld.%08x.tmp", path, (long)getpid(), r);
		if (n < 0 || (size_t)n >= tmplen) {
			snprintf(err, errlen, "%.400s: too long for a temporary name", path);
			return -1;
		}
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			  mode);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0)
		snprintf(err, errlen, "cannot create %.400s: %s", tmp, strerror(errno));
	return fd;
}
