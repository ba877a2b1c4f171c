/* Prometheus metrics of a step, in node_exporter's textfile format: the
 * root's procmgrd keeps counters from its own events (so every decision,
 * the lead's new ones included, counts without a second call site) and
 * rewrites one file per step in the site's metrics_dir (made by the plugin).
 *
 * pm_metrics_note and pm_metrics_format are pure (metrics_text.c, unit
 * tested); pm_metrics_write does the file
 * (metrics_file.c); metrics.c feeds them from procmgrd's step. */
#ifndef PM_METRICS_H
#define PM_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pm_mreason { PM_MR_EXIT, PM_MR_SIGNAL, PM_MR_HANG, PM_MR_HEALTH, PM_MR_LOST, PM_MR_N };

#define PM_METRICS_CHECKS 8 /* health checks named; more count as "other" */

struct pm_metrics {
	uint32_t job, step;
	int nodes, ranks;
	bool running;
	uint32_t gen;
	unsigned long restarts[PM_MR_N];  /* by what caused them */
	unsigned long failures[PM_MR_N];  /* rank and node failures judged */
	unsigned long hangs, nodes_lost, nodes_replaced;
	/* Slow nodes (slowlink.c): flagged now, ever flagged, evicted. */
	long slow_nodes;
	unsigned long slow_total, slow_evicted;
	struct { char check[32]; unsigned long n; } health[PM_METRICS_CHECKS + 1];
	int nhealth;
	int last_reason;                  /* of the failure being recovered from */
	double last_restart_s;            /* failure to the next generation's start */
	double last_process_s;            /* failure to every rank running again */
	double last_recovery_s;           /* failure to every rank's first heartbeat */
	bool have_restart, have_process, have_recovery;
	/* The ranks' state in memory: restores, and the steps the last one
	 * lost (state_restored); processes that saved (state_saved). */
	unsigned long state_restores, state_savers;
	long state_lost_steps; /* -1: no restore yet */
	/* Goodput (common/goodput.h), set by procmgrd's goodput_link.c before
	 * each event's counting: the ratio and the seconds (-1: cannot be
	 * known), the seconds lost by phase (PM_GP_NPHASES, -1 unknown). */
	double goodput, gp_useful_s, gp_wall_s, gp_lost_s[6];
};

const char *pm_mreason_name(enum pm_mreason r);
void pm_metrics_init(struct pm_metrics *m, uint32_t job, uint32_t step);
/* One event of the step's log: name and its JSON members. */
void pm_metrics_note(struct pm_metrics *m, const char *name, const char *fields);
/* The file's text; -1 if it does not fit in len. */
int pm_metrics_format(const struct pm_metrics *m, char *buf, size_t len);

/* The file of a step: DIR/procmgr-JOB.STEP.prom. */
int pm_metrics_path(char *buf, size_t len, const char *dir, uint32_t job, uint32_t step);
/* Rewritten in place in the file the plugin created for us (no other:
 * never a link, a FIFO or another user's file). -1 with errno. */
int pm_metrics_write(const char *dir, uint32_t job, uint32_t step, const char *text);

#endif
