/* A sweep slot's supervisor played by the unit tests (test_sweep_run.c,
 * test_sweep_ctl.c), on a socketpair to an in-process node (stepnet.c):
 * it says RANK_HELLO, runs each TRIAL_START's command for real (sh -c, in
 * a process group of its own), answers its end as procmgr-rank does
 * (RANK_EXIT with the wait status and, on a failure, the command's first
 * output as the error text; RANK_STOPPED after a TRIAL_STOP; a command
 * with "# hung" in it is killed at once and its end said hung), and keeps
 * what it was told (starts, stops, the PRINT lines for srun's stderr). */
#ifndef PM_TEST_TRIALSUP_H
#define PM_TEST_TRIALSUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/wire.h"
#include "io/conn.h"
#include "io/loop.h"

#define SUP_PRINTS 16

struct sup {
	struct pm_conn *c;
	int node, lrank;
	pid_t pid;              /* the trial's command, 0: none runs */
	int out;                /* its stdout, -1 none */
	struct pm_watch pw;     /* its pidfd */
	uint32_t gen;           /* the attempt it runs */
	bool stopping, hung, closed;
	int starts, stops, exits;
	struct pm_msg start;    /* the last TRIAL_START */
	char log[2048];         /* each TRIAL_START's first line, then '|' */
	char prints[SUP_PRINTS][PM_WIRE_TEXT_MAX + 1];
	int nprints;
};

/* ---- a sweep step of in-process nodes (stepnet.c), one sup per slot ---- */

extern char sweep_dir[64];   /* the test's own directory: trials file, results, log */
extern struct sup sups[8];   /* by slot: node * L + local rank */
extern int sweep_spares;     /* --procmgr-spares of the next sweep_up */
extern int sweep_restarts;   /* 0: never; N: on-failure, at most N, 1 ms apart */

/* cmocka's setup and teardown around stepnet's: a fresh directory; every
 * supervisor's command killed, the directory removed. */
int sweep_setup(void **state);
int sweep_teardown(void **state);
/* sweep_dir/trials holds text; nn nodes of L slots each, the sweep set up
 * on each (pm_sweep_run_init), joined in the tree, their supervisors in,
 * the root's event log open, and every node ready: the root launches. */
void sweep_up(int nn, int fanout, int L, const char *text);
/* sweep_dir/NAME's text (NULL if unreadable). */
char *sweep_read(const char *name);
/* For pm_pump: the root's step has ended. */
bool sweep_over(void *arg);

/* Connects local rank lrank of node id (global rank grank) and says HELLO. */
void sup_up(struct sup *u, int node, int lrank, int grank);
/* Kills what it runs and closes its link (a supervisor that died). */
void sup_down(struct sup *u);
/* Whether one of its PRINT lines holds text. */
bool sup_said(const struct sup *u, const char *text);
/* Whether it is told text on srun's stderr within a few seconds (what
 * the root says may still be on its way when the step has ended). */
bool sup_hears(struct sup *u, const char *text);
/* For pm_pump: its command runs (arg: a struct sup *), and is over. */
bool sup_running(void *arg);
bool sup_idle(void *arg);
/* The trial name of its last TRIAL_START ("" before any). */
const char *sup_trial(const struct sup *u);

#endif
