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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen_int.h"
#include "io/safefile.h"
#include "io/sys.h"
#include "sweep/sweep_loss.h"
#include "sweep/sweep_results.h"

void pm_sweep_journal_open(struct pm_step *s)
{
	struct pm_sweep_run *r = s->sweep;
	char path[PATH_MAX + 16], err[PATH_MAX + 256];

	snprintf(path, sizeof(path), "%.*s.journal", PATH_MAX - 9, s->opts.sweep);
	/* A new sweep's journal: an older run's lines must not count (its file
	 * is replaced); another user's plant is never written through. */
	r->journal_fd = pm_userfile_create(path, O_APPEND, 0644, err, sizeof(err));
	if (r->journal_fd < 0) {
		pm_log(s, "sweep: the journal: %s; going on without it", err);
		pm_gen_tell(&s->gen, "procmgr: sweep: no journal: %s; the sweep goes on "
			    "without it (a root lost with spares then runs every trial again)", err);
	}
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
	if (r) { /* and the pool's */
		free(r->gone);
		free(r->in_pool);
		free(r->ready);
		free(r->reclaim_left);
		free(r->reclaim_slot);
		r->gone = r->in_pool = r->ready = NULL;
		r->reclaim_left = NULL;
		r->reclaim_slot = NULL;
	}
}

/* ---- the pool of slots (sweep_loss.h's rules) ---- */

int pm_sweep_pool_init(struct pm_step *s, bool all_ready)
{
	struct pm_sweep_run *r = s->sweep;
	int n, N = s->nnodes;

	r->gone = calloc((size_t)N, sizeof(bool));
	r->in_pool = calloc((size_t)N, sizeof(bool));
	r->ready = calloc((size_t)N, sizeof(bool));
	r->reclaim_left = calloc((size_t)N, sizeof(int));
	r->reclaim_slot = calloc((size_t)N * (size_t)r->L, 1);
	if (!r->gone || !r->in_pool || !r->ready || !r->reclaim_left || !r->reclaim_slot)
		return -1;
	r->pool_want = N - (int)s->opts.spares;
	if (r->pool_want < 1)
		r->pool_want = 1;
	/* The first root: the nodes in order, the spares out (the packer's
	 * order untouched); a new root: every node out until its slots are
	 * back (pm_sweep_reclaimed). */
	for (n = 0; n < N; n++) {
		r->ready[n] = all_ready;
		if (all_ready && n < r->pool_want) {
			r->in_pool[n] = true;
			r->pool_n++;
			continue;
		}
		pm_pack_node_lost(&r->q.pack, n);
		r->reclaim_left[n] = all_ready ? 0 : r->L;
		if (!all_ready)
			memset(r->reclaim_slot + (size_t)n * (size_t)r->L, 1, (size_t)r->L);
	}
	return 0;
}

int pm_sweep_pool_fill(struct pm_step *s)
{
	struct pm_sweep_run *r = s->sweep;
	int n;

	if (r->pool_n >= r->pool_want)
		return -1;
	n = pm_sl_next_spare(r->in_pool, r->gone, r->ready, s->nnodes, 0);
	if (n < 0)
		return -1;
	r->in_pool[n] = true;
	r->pool_n++;
	pm_pack_node_join(&r->q.pack, n);
	return n;
}

int pm_sweep_pool_gone(struct pm_step *s, int node)
{
	struct pm_sweep_run *r = s->sweep;
	int was;

	if (!r->gone || r->gone[node])
		return 0;
	r->gone[node] = true;
	was = r->in_pool[node];
	if (was) {
		r->in_pool[node] = false;
		r->pool_n--;
	}
	pm_pack_node_lost(&r->q.pack, node);
	return was;
}

bool pm_sweep_pool_complete(const struct pm_step *s)
{
	const struct pm_sweep_run *r = s->sweep;
	int n;

	if (r->pool_n >= r->pool_want)
		return true;
	for (n = 0; n < s->nnodes; n++)
		if (!r->gone[n] && !r->ready[n])
			return false;
	return true;
}

int pm_sweep_reclaimed(struct pm_step *s, int slot, uint32_t gen)
{
	struct pm_sweep_run *r = s->sweep;
	int node = slot / r->L;

	if (!r->base || gen >= r->base)
		return 0;
	/* The old root's attempt (or none, gen 0): the slot is ours now. */
	if (r->reclaim_slot[slot]) {
		r->reclaim_slot[slot] = 0;
		if (--r->reclaim_left[node] == 0 && !r->gone[node]) {
			r->ready[node] = true;
			(void)pm_sweep_pool_fill(s);
		}
	}
	return 1;
}
