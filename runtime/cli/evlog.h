/* A step's event log read from this node's disk, for when its root cannot
 * be asked (the step has ended): state_dir/JOB/STEP.events.jsonl, kept on
 * the step's first node until the job ends (the plugin's job epilog
 * removes state_dir/JOB). */
#ifndef PM_EVLOG_H
#define PM_EVLOG_H

#include <stddef.h>
#include <stdio.h>

/* JOBID or JOBID.STEP (step 0 if left out) as the log's readers take it;
 * -1 for anything else (a sign included). */
int pm_evlog_parse_id(const char *spec, unsigned *job, unsigned *step);
/* given if not NULL, else plugstack.conf's state_dir, else the default. */
void pm_evlog_state_dir(const char *given, char *dir, size_t len);
/* The log, opened following no link and never blocking (a FIFO), a regular
 * file only: the directory is the job user's and root may be the reader.
 * path is set whenever it fits; NULL with errno. */
FILE *pm_evlog_open(const char *state_dir, unsigned job, unsigned step, char *path, size_t len);
/* Where the log is, for a reader on another node: "on NODE, ..." from
 * Slurm's view of the job, or why it is gone. */
void pm_evlog_where(unsigned job, const char *path, char *out, size_t len);

#endif
