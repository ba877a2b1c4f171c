#include "privdir.h"

#include <stdbool.h>
#include <stdio.h>

int pm_privdir_judge(const struct stat *st, uid_t owner, const char *path, char *err,
		     size_t errlen)
{
	const char *what = NULL;

	if (!S_ISDIR(st->st_mode))
		what = "is not a directory (a link is not followed)";
	else if (st->st_uid != owner)
		what = "belongs to another user";
	else if (st->st_mode & 022)
		what = "may be written by other users";
	if (!what)
		return 0;
	snprintf(err, errlen, "%.400s %s (owner uid %u, mode %04o): it must be a directory "
		 "of uid %u that only its owner may write (chown %u; chmod go-w)",
		 path, what, (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777),
		 (unsigned)owner, (unsigned)owner);
	return -1;
}

int pm_privdir_judge_above(const struct stat *st, uid_t owner, const char *path,
			   const char *shown, char *err, size_t errlen)
{
	const char *what = NULL;
	bool ours = st->st_uid == 0 || st->st_uid == owner;

	if (S_ISLNK(st->st_mode))
		/* A link's own mode means nothing; its owner alone may change it. */
		what = ours ? NULL : "is a link of another user's";
	else if (!S_ISDIR(st->st_mode))
		what = "is not a directory";
	else if (!ours)
		what = "belongs to another user";
	else if ((st->st_mode & 022) && !(st->st_mode & S_ISVTX))
		what = "may be written by other users";
	if (!what)
		return S_ISLNK(st->st_mode) ? 1 : 0;
	snprintf(err, errlen, "%.400s: %.400s above it %s (owner uid %u, mode %04o): every "
		 "directory above it must be root's%s and writable by no one else (or sticky, "
		 "like /tmp), and a link on the way root's", path, shown, what,
		 (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777),
		 owner ? " or its owner's" : "");
	return -1;
}

int pm_userfile_judge(const struct stat *st, uid_t me, const char *path, char *err,
		      size_t errlen)
{
	const char *what = NULL;

	if (S_ISLNK(st->st_mode))
		what = "a link";
	else if (S_ISFIFO(st->st_mode))
		what = "a FIFO";
	else if (S_ISDIR(st->st_mode))
		what = "a directory";
	else if (!S_ISREG(st->st_mode))
		what = "not a regular file";
	else if (st->st_uid != me)
		what = "another user's file";
	if (!what)
		return 0;
	snprintf(err, errlen, "%.400s is %s (owner uid %u, mode %04o), not one of uid %u's: "
		 "not written through; remove it, or use a directory only you may write", path, what, (unsigned)st->st_uid,
		 (unsigned)(st->st_mode & 07777), (unsigned)me);
	return -1;
}
