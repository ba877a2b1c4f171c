/* The step's metrics file in the site's metrics_dir: its name, and when a
 * finished step's file may go. Shared by procmgrd (which writes it) and the
 * plugin (which creates it as root for the job's user and sweeps it). Pure. */
#ifndef PM_METRICSNAME_H
#define PM_METRICSNAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A finished step's final counters stay this long for node_exporter's
 * scrapes (a scrape interval is 15-60 s), then a later step's end on the
 * node removes them. */
#define PM_METRICS_KEEP_S 60

/* "procmgr-JOB.STEP.prom"; -1 if it does not fit. */
int pm_metrics_name(char *buf, size_t len, uint32_t job, uint32_t step);
/* 0 if name is exactly such a name (*job, *step set), else -1. */
int pm_metrics_name_parse(const char *name, uint32_t *job, uint32_t *step);
/* Whether the content is a step's last word (procmgr_step_running 0). */
bool pm_metrics_finished(const char *content);
/* Whether a file with this content, age_s seconds old, may be removed:
 * finished, or empty (its procmgrd never wrote), at least PM_METRICS_KEEP_S
 * ago. A running step's file is never removed. */
bool pm_metrics_sweepable(const char *content, long long age_s);

#endif
