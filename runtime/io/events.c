#include "events.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int pm_events_open(struct pm_events *e, const char *path, unsigned job,
		   unsigned step)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->step, sizeof(e->step), "%u.%u", job, step);
	e->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (e->fd < 0)
		return -1;
	e->opened = true;
	return 0;
}

void pm_events_close(struct pm_events *e)
{
	if (e->opened)
		close(e->fd);
	e->opened = false;
}

int pm_event(struct pm_events *e, const char *event, const char *fields)
{
	char line[16384];
	off_t end;
	ssize_t w;
	int n, err;

	if (!e->opened)
		return 0;
	n = snprintf(line, sizeof(line), "{\"time\":%.6f,\"step\":\"%s\",\"event\":\"%s\"%s%s}\n",
		     pm_wall_s(), e->step, event, fields && *fields ? "," : "",
		     fields ? fields : "");
	if (n < 0 || (size_t)n >= sizeof(line)) {
		e->lost++;
		errno = EMSGSIZE;
		return -1;
	}
	/* Only the root writes this file: where it ends now is where the line
	 * starts, and where to cut it back to if it goes in only in part. */
	end = lseek(e->fd, 0, SEEK_END);
	w = write(e->fd, line, (size_t)n);
	if (w == n)
		return 0;
	err = w < 0 ? errno : ENOSPC;
	if (w > 0 && end >= 0 && ftruncate(e->fd, end))
		err = errno;
	e->lost++;
	errno = err;
	return -1;
}
