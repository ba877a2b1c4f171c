/* procmgr status of a sweep step: the root's "trial ..." lines
 * (procmgrd/sweep_run.h) as one table with a summary line, or JSON. */
#ifndef PM_CLI_SWEEP_STATUS_H
#define PM_CLI_SWEEP_STATUS_H

#include <stdbool.h>
#include <stdio.h>

struct pm_trial_st {
	char name[72], state[16], slots[512], exit[16];
	char result[80]; /* NAME=VALUE (sweep/sweep_metric.h), "-": none */
	int restarts, order;
	unsigned long long runtime_ms;
	char error[512];
};

struct pm_trials_st {
	struct pm_trial_st *t;
	int n, cap;
};

/* 1: a trial line (kept), 0: not one, -1: malformed or out of memory. */
int pm_trials_st_add(struct pm_trials_st *a, const char *line);
/* "200 trials: 150 done, 16 running, 30 queued, 4 failed" */
void pm_trials_st_summary(const struct pm_trials_st *a, char *buf, size_t len);
void pm_trials_st_print(FILE *f, const struct pm_trials_st *a);
/* --sort=KEY: "result" (lowest value first), "-result" (highest first);
 * trials without a result after the others, ties in the file's order.
 * 0, or -1 with why (the keys allowed) for another key. */
int pm_trials_st_sort_check(const char *key, char *why, size_t len);
int pm_trials_st_sort(struct pm_trials_st *a, const char *key);
/* ,"sweep":{...},"trials":[...] (members of the step's object) */
void pm_trials_st_json(FILE *f, const struct pm_trials_st *a);
void pm_trials_st_free(struct pm_trials_st *a);

#endif
