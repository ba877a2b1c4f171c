/* A sweep's journal (sweep_loss.h): the root appends a line for each trial
 * that reached its end, as it ends, to FILE.journal beside the trials
 * file. The results file is written once at the sweep's end; the journal
 * is what is known of the trials that ended when the root is lost before
 * that end, and what a root that takes over rebuilds the queue from.
 * Best effort: a journal that cannot be written is said once in the log
 * and the sweep goes on without it. */
#include "step.h"
#include "sweep_run.h"
#include "sweep_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "io/sys.h"
#include "sweep/sweep_loss.h"
#include "sweep/sweep_results.h"

void pm_sweep_journal_open(struct pm_step *s)
{
	struct pm_sweep_run *r = s->sweep;
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%.*s.journal", PATH_MAX - 9, s->opts.sweep);
	/* A new sweep's journal: an older run's lines must not count. */
	r->journal_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW |
			     O_CLOEXEC | O_NONBLOCK, 0644);
	if (r->journal_fd < 0)
		pm_log(s, "sweep: cannot write the journal %s: %s; going on without it", path,
		       strerror(errno));
}

void pm_sweep_journal_end(struct pm_step *s, int i)
{
	struct pm_sweep_run *r = s->sweep;
	struct pm_sr_trial tr;
	struct pm_sl_end e;
	char line[PM_SWEEP_NAME_MAX + PM_SQ_ERR_MAX + 128];
	int n;

	if (!r || r->journal_fd < 0)
		return;
	pm_sr_from_queue(&r->q, i, r->file.trials[i].name, pm_now_ms(), &tr);
	if (tr.state != PM_TS_DONE && tr.state != PM_TS_FAILED)
		return;
	memset(&e, 0, sizeof(e));
	e.state = tr.state;
	e.exit_code = tr.exit_code;
	e.restarts = tr.restarts;
	e.requeues = tr.requeues;
	e.runtime_ms = tr.runtime_ms;
	snprintf(e.error, sizeof(e.error), "%s", tr.error ? tr.error : "");
	n = pm_sl_journal_line(tr.name, &e, line, sizeof(line));
	/* One write per line, O_APPEND: a loss tears at most the last one. */
	if (n > 0 && write(r->journal_fd, line, (size_t)n) != n) {
		pm_log(s, "sweep: cannot write the journal: %s; going on without it",
		       strerror(errno));
		close(r->journal_fd);
		r->journal_fd = -1;
	}
}

void pm_sweep_journal_close(struct pm_step *s)
{
	struct pm_sweep_run *r = s->sweep;

	if (r && r->journal_fd >= 0) {
		close(r->journal_fd);
		r->journal_fd = -1;
	}
}
