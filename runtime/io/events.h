/* The step's event log: one JSON object per line, written by the root
 * procmgrd; every decision is in it. */
#ifndef PM_EVENTS_H
#define PM_EVENTS_H

#include <stdbool.h>

struct pm_events {
	bool opened;
	int fd;
	char step[32];
	unsigned lost; /* lines that could not be written */
};

int pm_events_open(struct pm_events *e, const char *path, unsigned job,
		   unsigned step);
void pm_events_close(struct pm_events *e);
/* fields: already-formatted JSON members ("\"gen\":1,\"rank\":3"), may be
 * empty. One write per line, so the log is read whole while the step runs;
 * a line that does not fit (a full file system) is taken back, never left
 * cut. -1 with errno when the line is lost. */
int pm_event(struct pm_events *e, const char *event, const char *fields);

#endif
