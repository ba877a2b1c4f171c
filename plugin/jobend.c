/* The job's end on a node (slurmd's job epilog, as root): state_dir/JOB,
 * the job user's directory (event logs, procmgrd's logs, hang stacks),
 * goes. The event log stays readable until then (procmgr events after the
 * step; docs/user-guide.md). With job_dir_keep, it goes that long after
 * the job's end instead: the end is marked (state_dir/.JOB.ended, root's)
 * and any later job's epilog on the node removes what is due.
 *
 * Root in the user's directory: nothing is followed (every name is opened
 * or removed relative to a directory opened with O_NOFOLLOW), and the
 * depth is bounded; what the user adds meanwhile stays, and is said. An
 * epilog that fails drains the node: this never fails. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/safefile.h"
#include "jobend.h"
#include "plugin.h"

#define PM_JOBEND_DEPTH 4 /* JOB/STEP.NODE.run/ is as deep as procmgr goes */
#define PM_ENDED_SUFFIX ".ended"

/* Empty the directory dfd (closed here), depth levels at most. */
static void empty(int dfd, int depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;

	if (!d) {
		close(dfd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;
		int sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (!S_ISDIR(st.st_mode)) {
			unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		if (depth <= 1)
			continue;
		sub = openat(dirfd(d), de->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		empty(sub, depth - 1);
		unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

/* state_dir/name and all in it. */
static void remove_job_dir(int sfd, const char *state_dir, const char *name)
{
	int jfd = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (jfd < 0) {
		if (errno != ENOENT)
			pm_err("cannot remove %s/%s at the job's end: %m", state_dir, name);
		return;
	}
	empty(jfd, PM_JOBEND_DEPTH);
	if (unlinkat(sfd, name, AT_REMOVEDIR) && errno != ENOENT)
		pm_err("cannot remove %s/%s at the job's end: %m", state_dir, name);
}

/* Jobs whose end is older than keep_ms: their directory and mark go. */
static void sweep(int sfd, const char *state_dir, unsigned keep_ms)
{
	int dup_fd = dup(sfd);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	time_t now = time(NULL);
	struct dirent *de;

	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return;
	}
	while ((de = readdir(d))) {
		char job[32];
		struct stat st;
		size_t n = strlen(de->d_name), sl = strlen(PM_ENDED_SUFFIX);

		if (de->d_name[0] != '.' || n <= sl + 1 || n - sl - 1 >= sizeof(job) ||
		    strcmp(de->d_name + n - sl, PM_ENDED_SUFFIX))
			continue;
		memcpy(job, de->d_name + 1, n - sl - 1);
		job[n - sl - 1] = '\0';
		if (strspn(job, "0123456789") != strlen(job) ||
		    fstatat(sfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || st.st_uid != 0 ||
		    (long long)(now - st.st_mtime) * 1000 < (long long)keep_ms)
			continue;
		remove_job_dir(sfd, state_dir, job);
		unlinkat(sfd, de->d_name, 0);
	}
	closedir(d);
}

int pm_jobend_epilog(spank_t sp, int ac, char **av, const char *plugstack)
{
	char err[PM_ERRLEN], job[32], mark[48];
	struct pm_site site;
	uint32_t jobid = 0;
	int sfd, fd;

	pm_site_init(&site);
	if (pm_site_parse(&site, ac, av, plugstack, err, sizeof(err))) {
		pm_err("%s", err);
		return 0;
	}
	if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS || !jobid)
		return 0;
	/* state_dir is root's (spawn.c made it so): judged as spawn.c judged
	 * it, every directory above it too, and opened once. */
	switch (pm_privdir_find(site.state_dir, 0, &sfd, err, sizeof(err))) {
	case 1:
		return 0; /* no procmgr step ever ran here */
	case -1:
		pm_err("state_dir: %s; job directories not removed", err);
		return 0;
	}
	snprintf(job, sizeof(job), "%u", jobid);
	if (!site.job_dir_keep_ms) {
		remove_job_dir(sfd, site.state_dir, job);
	} else {
		struct stat st;
		snprintf(mark, sizeof(mark), "." "%u" PM_ENDED_SUFFIX, jobid);
		if (fstatat(sfd, job, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (fd = openat(sfd, mark, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				 O_NONBLOCK | O_CLOEXEC, 0600)) >= 0)
			close(fd);
		sweep(sfd, site.state_dir, site.job_dir_keep_ms);
	}
	close(sfd);
	return 0;
}
