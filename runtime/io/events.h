/* The step's event log: one JSON object per line, written by the root
 * procmgrd; every decision is in it. */
#ifndef PM_EVENTS_H
#define PM_EVENTS_H

#include <stdio.h>

struct pm_events {
	FILE *f;
	char step[32];
};

int pm_events_open(struct pm_events *e, const char *path, unsigned job,
		   unsigned step);
void pm_events_close(struct pm_events *e);
/* fields: already-formatted JSON members ("\"gen\":1,\"rank\":3"), may be
 * empty. Flushed at once: the log is read while the step runs. */
void pm_event(struct pm_events *e, const char *event, const char *fields);

#endif
