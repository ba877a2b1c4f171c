/* A trial's result: one NAME=VALUE a trial reports (a loss, an accuracy),
 * carried from its rank's supervisor to the sweep's root, shown in the
 * results file and procmgr status, and sorted on. Pure.
 *
 * How a trial reports it (docs/user-guide.md, Sweeps): it writes lines
 * NAME=VALUE to the file $PROCMGR_RESULT_FILE; the last line that is not
 * blank counts (a trial may append one per epoch). NAME: 1 to
 * PM_METRIC_NAME_MAX letters, digits, '_', '.', '-'; VALUE: a finite
 * decimal number as strtod reads it (0.25, -3, 1e-4), at most
 * PM_METRIC_VALUE_MAX characters, kept as written.
 *
 * On the wire (the trial's RANK_EXIT, then TRIAL_EXIT): PM_FLAG_RESULT in
 * count says the text's first line is NAME=VALUE; the error text, if
 * any, follows after its '\n'. pm_metric_encode/pm_metric_decode are that
 * payload's one codec. */
#ifndef PM_SWEEP_METRIC_H
#define PM_SWEEP_METRIC_H

#include <stdbool.h>
#include <stddef.h>

#include "common/wire.h"

#define PM_METRIC_NAME_MAX 32
#define PM_METRIC_VALUE_MAX 32
/* NAME=VALUE with its NUL */
#define PM_METRIC_TEXT_MAX (PM_METRIC_NAME_MAX + 1 + PM_METRIC_VALUE_MAX + 1)
/* What of $PROCMGR_RESULT_FILE is read: its last bytes. */
#define PM_METRIC_FILE_TAIL 4096

struct pm_metric {
	char name[PM_METRIC_NAME_MAX + 1];
	char value[PM_METRIC_VALUE_MAX + 1];
	double v;
};

/* One line NAME=VALUE (n bytes, no line end; blanks around are allowed).
 * 0, or -1 with why in err (what is wrong and what is allowed). */
int pm_metric_parse(const char *line, size_t n, struct pm_metric *m, char *err, size_t errlen);
/* The result in a file's last bytes (buf, n; need not be NUL-terminated):
 * its last line that is not blank. 1: a result; 0: none (only blanks);
 * -1: the last line is no result (err says why). */
int pm_metric_from_text(const char *buf, size_t n, struct pm_metric *m, char *err,
			size_t errlen);
/* "NAME=VALUE" into buf (at least PM_METRIC_TEXT_MAX). */
void pm_metric_format(const struct pm_metric *m, char *buf, size_t len);

/* The trial end's payload into msg: count gets PM_FLAG_RESULT when m is
 * set (NULL: none), text the result's line and the error (may be NULL).
 * The error is cut to fit. */
void pm_metric_encode(struct pm_msg *msg, const struct pm_metric *m, const char *error);
/* Back: 1 with *m, 0 without a result, -1 if the flag is set and the
 * first line is no result (the message then carries none). *error points
 * into msg's text (the part after the result), "" if none. */
int pm_metric_decode(const struct pm_msg *msg, struct pm_metric *m, const char **error);

/* Sorting trials by their result: -1, 0, 1 as a before, equal to, after b
 * (NULL: no result, after every result whichever the order). */
int pm_metric_cmp(const char *a, const char *b, bool descending);

#endif
