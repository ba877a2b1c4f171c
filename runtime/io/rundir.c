#include "rundir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int pm_rundir_remove(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		/* Not a directory (a link, a FIFO, a file planted under its
		 * name): the name goes, never what it points to. */
		if ((e == ENOTDIR || e == ELOOP) && unlink(path) == 0)
			return 0;
		errno = e;
		return e == ENOENT ? 0 : -1;
	}
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	if (rmdir(path) && errno != ENOENT)
		return -1;
	return 0;
}
