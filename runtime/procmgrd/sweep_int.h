/* Inside a sweep's root (sweep_run.c, sweep_ctl.c): the run's state and
 * what the two files share. Not an API: see sweep_run.h. */
#ifndef PM_SWEEP_INT_H
#define PM_SWEEP_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "io/loop.h"
#include "common/statescope.h"
#include "sweep/sweep_file.h"
#include "sweep/sweep_queue.h"

struct pm_step;

/* TRIAL_START's text besides the command: the name, four numbers, the
 * master's host name (at most 255), the state scope and the separators. */
#define TRIAL_HEAD_MAX (PM_SWEEP_NAME_MAX + 5 * 12 + 256 + 8)
#define START_BATCH 256

struct pm_sweep_run {
	struct pm_sweep file;
	struct pm_sq q;
	int L;                      /* slots per node */
	uint32_t next_attempt;
	uint32_t *attempt;          /* by trial: its current attempt */
	struct pm_scope_run *scope; /* by trial: its run's state scope */
	int *live;                  /* by trial: ranks of the attempt not ended */
	bool *failing;              /* by trial: a rank of the attempt failed */
	bool *restart_req;          /* by trial: the user asked for its restart */
	int *fail_code;
	char **fail_err;            /* the failing rank's error line */
	unsigned char *slot_live;   /* by slot: its rank of the owner's attempt runs */
	uint32_t *slot_attempt;     /* by slot: the attempt its rank last ran */
	struct pm_watch due_w;
	bool launched, ended;
	uint64_t t0;
	char results[PATH_MAX];
	int journal_fd;             /* FILE.journal (sweep_journal.c), or -1 */
	/* The pool (sweep_journal.c): by node, out of the step / in the
	 * pool / usable (the first root: every node; a root that took
	 * over: once its slots answered), and slots still to answer. */
	bool *gone, *in_pool, *ready;
	int *reclaim_left;
	unsigned char *reclaim_slot; /* by slot: its answer still awaited */
	int pool_n, pool_want;
	uint32_t base;              /* attempts from here: a take-over's */
};

void pm_sweep_ev(struct pm_step *s, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Starts what the queue says can start; ends the sweep once all ended. */
void pm_sweep_schedule(struct pm_step *s);
/* Every trial ended (or the step cannot go on: why): results, summary,
 * the step's end. */
void pm_sweep_finish(struct pm_step *s, int code_if_ok, const char *why);
/* TRIAL_STOP to trial i's ranks still running (skip_node's excepted). */
void pm_sweep_stop_ranks(struct pm_step *s, int i, int skip_node);
/* Trial i's run ended (done, failed, stopped, requeued): its state goes
 * on the nodes of its slots (skip_node's excepted: lost) and at their
 * buddies (TRIAL_STOP with PM_FLAG_ENDED). */
void pm_sweep_free_state(struct pm_step *s, int i, int skip_node);
/* A held slot's rank ended (held by sweep_ctl.c at a node's loss): 1 if
 * slot was held for that attempt (now free), else 0. sweep_run.c's, like
 * the stop above: sweep_ctl.c is the floor above sweep_run.c. */
int pm_sweep_held_exit(struct pm_step *s, int slot, uint32_t attempt);
/* sweep_journal.c: FILE.journal, the root's record of the trials that
 * ended (sweep_loss.h), for whoever reads it after the root is lost. */
void pm_sweep_journal_open(struct pm_step *s);
void pm_sweep_journal_end(struct pm_step *s, int i);
void pm_sweep_journal_close(struct pm_step *s);
/* The root part of pm_sweep_run_init (sweep_run.c): the trials file
 * read, the queue made; also a root that takes over (sweep_takeover.c). */
int pm_sweep_root_init(struct pm_step *s, char *err, size_t errlen);
/* sweep_journal.c, a node lost (sweep_loss.h): the pool of slots. At the
 * launch, the spares out of it; a node out of the step (gone); a node
 * whose slots a root that took over has back (ready), which joins the
 * pool while it holds fewer nodes than the step less its spares. */
int pm_sweep_pool_init(struct pm_step *s, bool all_ready);
/* A new root may start once the pool is full or every node answered. */
bool pm_sweep_pool_complete(const struct pm_step *s);
/* 1 if node was in the pool. */
int pm_sweep_pool_gone(struct pm_step *s, int node);
/* A node joins if the pool wants one: the node joined, or -1. */
int pm_sweep_pool_fill(struct pm_step *s);
/* A TRIAL_EXIT for slot from before a take-over (gen below the base): 1
 * if taken (the slot is back; its node may join the pool), else 0. */
int pm_sweep_reclaimed(struct pm_step *s, int slot, uint32_t gen);

#endif
