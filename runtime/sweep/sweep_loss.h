/* A sweep when a node is lost: what the sweep does (the rules, a table),
 * and what lets a new root rebuild the queue when the root itself is lost
 * (the journal). Pure: no I/O, time and text are arguments.
 *
 * The rules, by (spares or not) x (root or not) x (a spare left or not):
 *   - a node that is not the root: its trials are requeued on the other
 *     nodes, never charged to their restart budget (the node's fault, not
 *     the trial's). Without spares its subtree goes with it (nobody adopts
 *     it: its trials are as good as gone); with spares the subtree finds
 *     another parent and only the node is out. With a spare left, the
 *     spare's slots join the pool.
 *   - the root, with spares: the queue was the root's, so the node that
 *     takes its place rebuilds it from the trials file (every node reads
 *     it) and the journal (below): trials the journal says ended keep
 *     their end, every other trial is queued again (those that ran are
 *     stopped first); a spare joins as above.
 *   - the root without spares: nobody can take its place; the sweep ends
 *     (what the journal holds is the record of what ended).
 *   - a node lost once more (said by its parent and its child) does nothing.
 *
 * The journal, FILE.journal beside the trials file, written by the root
 * only, appended one line per trial that reached its end (done or failed)
 * and never rewritten; a line is
 *   NAME TAB STATE TAB EXIT TAB RESTARTS TAB REQUEUES TAB RUNTIME_MS TAB ERROR LF
 * (STATE done or failed, ERROR "-" when none, tabs and line ends inside it
 * blanks) and a root that took over appends "#root NODE LF" first. A last
 * line without its LF (the root lost while writing) is ignored; a trial is
 * taken from its first line (a later one is counted as a duplicate). The
 * attempt numbers of a root that took over start above the old root's:
 * pm_sl_attempt_base of the number of "#root" lines, so that a stopped
 * rank's late end is never taken for a new attempt's. */
#ifndef PM_SWEEP_LOSS_H
#define PM_SWEEP_LOSS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sweep_queue.h"

/* What the sweep does at a lost node (flags). */
enum pm_sl_act {
	PM_SL_NOTHING = 0,
	PM_SL_REQUEUE = 1 << 0,  /* its trials requeued on the other nodes */
	PM_SL_SUBTREE = 1 << 1,  /* its subtree is out with it */
	PM_SL_SPARE = 1 << 2,    /* a spare's slots join the pool */
	PM_SL_REBUILD = 1 << 3,  /* this node is the new root: rebuild the queue */
	PM_SL_END = 1 << 4,      /* the sweep ends */
};

struct pm_sl_case {
	bool spares;     /* the step has --procmgr-spares */
	bool root;       /* the lost node was the root (the queue's holder) */
	bool spare_left; /* a spare not yet in the pool and not lost */
	bool again;      /* the node was handled already */
};

/* The rules above: a set of enum pm_sl_act. */
unsigned pm_sl_decide(const struct pm_sl_case *c);

/* The next node to join the pool: the lowest node >= first that is not in
 * the pool, not lost and ready (ready may be NULL: every node), or -1. */
int pm_sl_next_spare(const bool *in_pool, const bool *lost, const bool *ready, int nodes,
		     int first);

/* A trial's end as the journal keeps it. */
struct pm_sl_end {
	enum pm_ts state;   /* PM_TS_DONE or PM_TS_FAILED; PM_TS_QUEUED: none */
	int exit_code;
	int restarts, requeues;
	uint64_t runtime_ms;
	char error[PM_SQ_ERR_MAX + 1]; /* "" when none */
};

/* Trial name's end as one journal line with its LF: its length, or -1 if
 * it does not fit len (buf then holds ""). */
int pm_sl_journal_line(const char *name, const struct pm_sl_end *e, char *buf, size_t len);
/* The line a root that took over appends first. */
int pm_sl_journal_root(int node, char *buf, size_t len);

struct pm_sl_replay {
	int ended;      /* trials given an end */
	int roots;      /* "#root" lines: roots that took over */
	int unknown;    /* lines naming no trial of the file */
	int duplicate;  /* a trial's later lines */
	int bad;        /* lines that are no journal line (the torn last one too) */
};

/* Reads a journal's text (len bytes, need not end in NUL) for the n trials
 * named names[] (in the file's order): out[i] is trial i's end, state
 * PM_TS_QUEUED where the journal has none. names must be distinct. Returns
 * 0, or -1 if out of memory. */
int pm_sl_replay(const char *text, size_t len, const char *const *names, int n,
		 struct pm_sl_end *out, struct pm_sl_replay *st);

/* The first attempt number of the root after `roots` take-overs: 1 for the
 * first root, then a range of 2^24 attempts each (255 take-overs). */
uint32_t pm_sl_attempt_base(int roots);

#endif
