/* What a sweep tells the user at the end, as text. Pure.
 *
 * The results file has one line per trial, in the trials file's order:
 *   TSV:  a header line, then
 *         NAME STATE EXIT RESTARTS RUNTIME_S ERROR METRIC VALUE
 *         tab-separated; EXIT is "-" for a trial that never ended, RUNTIME_S
 *         seconds with 3 decimals from its first start to its end (or to
 *         now while it runs), ERROR "-" when there is none. Tabs and line
 *         ends inside an error become blanks, so a line is always a row.
 *         METRIC VALUE: the result its last attempt reported
 *         (sweep_metric.h), as written, "-" "-" when none: last, so that
 *         the columns before keep their numbers (sort -t$'\t' -k8,8g).
 *   JSON lines: {"trial":NAME,"state":STATE,"exit":N|null,"restarts":N,
 *         "requeues":N,"runtime_s":X,"error":TEXT|null,"metric":NAME|null,
 *         "value":X|null}, escaped as JSON.
 * The summary for srun's stderr: one count line, then one line per failed
 * trial (at most PM_SR_LIST_MAX, then how many more) with its error line. */
#ifndef PM_SWEEP_RESULTS_H
#define PM_SWEEP_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#include "sweep_queue.h"

#define PM_SR_LIST_MAX 20

struct pm_sr_trial {
	const char *name;
	enum pm_ts state;
	int exit_code;       /* -1: never ended */
	int restarts, requeues;
	uint64_t runtime_ms;
	const char *error;   /* NULL: none */
	const char *result;  /* NAME=VALUE (sweep_metric.h), NULL: none */
};

/* Trial i of q named name, its runtime up to now_ms if it still runs. */
void pm_sr_from_queue(const struct pm_sq *q, int i, const char *name, uint64_t now_ms,
		      struct pm_sr_trial *out);

/* The TSV header line, with its '\n'. */
const char *pm_sr_tsv_header(void);
/* One line with its '\n' into buf. Returns its length, or -1 if it does
 * not fit in len (buf then holds nothing usable). */
int pm_sr_tsv_line(const struct pm_sr_trial *t, char *buf, size_t len);
int pm_sr_json_line(const struct pm_sr_trial *t, char *buf, size_t len);

struct pm_sr_counts {
	int total, done, failed, running, queued, requeued;
};
void pm_sr_count(const struct pm_sr_trial *t, int n, struct pm_sr_counts *c);
/* The end-of-sweep summary (lines end with '\n'). results names the results
 * file (may be NULL). Returns its length, cut short to fit len if needed. */
size_t pm_sr_summary(const struct pm_sr_trial *t, int n, const char *results, char *buf,
		     size_t len);
/* srun's exit code for the sweep: 0 when every trial is done, else 1. */
int pm_sr_exit_code(const struct pm_sr_trial *t, int n);

#endif
