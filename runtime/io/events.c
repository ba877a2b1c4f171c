#include "events.h"
#include "sys.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int pm_events_open(struct pm_events *e, const char *path, unsigned job,
		   unsigned step)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

	snprintf(e->step, sizeof(e->step), "%u.%u", job, step);
	e->f = fd < 0 ? NULL : fdopen(fd, "a");
	if (!e->f) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return 0;
}

void pm_events_close(struct pm_events *e)
{
	if (e->f)
		fclose(e->f);
	e->f = NULL;
}

void pm_event(struct pm_events *e, const char *event, const char *fields)
{
	if (!e->f)
		return;
	fprintf(e->f, "{\"time\":%.6f,\"step\":\"%s\",\"event\":\"%s\"%s%s}\n",
		pm_wall_s(), e->step, event, fields && *fields ? "," : "",
		fields ? fields : "");
	fflush(e->f);
}
