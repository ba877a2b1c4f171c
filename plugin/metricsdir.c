#include "metricsdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/metricsname.h"
#include "io/safefile.h"
#include "plugin.h"

#define CONTENT_MAX 16384

static int open_dir(void)
{
	char err[PM_ERRLEN];
	int dfd;

	dfd = pm_privdir_open(pm_g.site.metrics_dir, 0755, 0, err, sizeof(err));
	if (dfd < 0)
		pm_err("metrics_dir: %s; no metrics for this step", err);
	return dfd;
}

/* What a file of the user's says, read as root: without following a link,
 * blocking on a FIFO or reading more than a metrics file holds. -1 if it
 * is no regular file. */
static int read_file(int dfd, const char *name, char *buf, size_t len, struct stat *st)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	ssize_t n;

	buf[0] = '\0';
	if (fd < 0)
		return -1;
	if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
		close(fd);
		return -1;
	}
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return 0;
}

static void sweep(int dfd)
{
	char buf[CONTENT_MAX];
	struct dirent *e;
	struct stat st;
	uint32_t job, step;
	time_t now = time(NULL);
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)))
		if (pm_metrics_name_parse(e->d_name, &job, &step) == 0 &&
		    read_file(dfd, e->d_name, buf, sizeof(buf), &st) == 0 &&
		    pm_metrics_sweepable(buf, (long long)(now - st.st_mtime)) &&
		    unlinkat(dfd, e->d_name, 0) && errno != ENOENT)
			pm_err("metrics_dir: cannot remove %s: %m", e->d_name);
	closedir(d);
}

void pm_metricsdir_prepare(const struct pm_node *n)
{
	char name[64];
	int dfd, fd;

	if (!pm_g.site.metrics_dir[0] || n->nodeid != 0 ||
	    pm_metrics_name(name, sizeof(name), n->job, n->step))
		return;
	dfd = open_dir();
	if (dfd < 0)
		return;
	/* Only root creates in the directory: a file of that name is a
	 * leftover of an earlier cluster's job id, not the user's plant. */
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		    0644);
	if (fd < 0 && errno == EEXIST && unlinkat(dfd, name, 0) == 0)
		fd = openat(dfd, name,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
	/* The user's to rewrite (procmgrd runs as the user); readable by
	 * node_exporter, whatever root's umask. */
	if (fd < 0 || fchown(fd, n->uid, n->gid) || fchmod(fd, 0644))
		pm_err("metrics_dir: cannot create %s/%s for the job's user: %m",
		       pm_g.site.metrics_dir, name);
	if (fd >= 0)
		close(fd);
	close(dfd);
}

void pm_metricsdir_end(const struct pm_node *n)
{
	char name[64], buf[CONTENT_MAX];
	struct stat st;
	int dfd;

	if (!pm_g.site.metrics_dir[0] || n->nodeid != 0 ||
	    pm_metrics_name(name, sizeof(name), n->job, n->step))
		return;
	dfd = open_dir();
	if (dfd < 0)
		return;
	/* Kept only as the step's last word: a procmgrd killed before it (or
	 * that never wrote) leaves a file that would say "running" for ever. */
	if (read_file(dfd, name, buf, sizeof(buf), &st) == 0 &&
	    !pm_metrics_finished(buf) && unlinkat(dfd, name, 0) &&
	    errno != ENOENT)
		pm_err("metrics_dir: cannot remove %s: %m", name);
	sweep(dfd);
	close(dfd);
}
