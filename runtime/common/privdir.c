#include "privdir.h"

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
