/* procmgr-rank's parts that rank.c (setup, main), rank_ops.c (the
 * machine's effects, the warm channels) and rank_events.c (the loop's
 * events into the machine) share. Private to procmgr-rank. */
#ifndef PM_RANK_SUP_H
#define PM_RANK_SUP_H

#include <stdbool.h>
#include <stdint.h>

#include "common/warm.h"
#include "io/conn.h"
#include "io/loop.h"
#include "io/outdir.h"
#include "rank_exec.h"
#include "rank_machine.h"
#include "rank_pump.h"
#include "rank_stack.h"

struct rank {
	struct pm_loop loop;
	struct pm_conn *c;
	struct pm_rank_m m;
	struct pm_rank_cfg cfg;
	struct pm_rank_exec x;
	struct pm_rank_pump pump;
	/* --procmgr-output-dir: its descriptor, and the rank whose files the
	 * pumps write (a spare's supervisor takes a lost slot's rank) */
	struct pm_rank_pump pump_out;
	char output_dir[PM_OUTPUT_DIR_MAX];
	int out_dfd, file_rank;
	int lrank;
	const char *heartbeat;
	/* Slow-node detection: each new step of the heartbeat goes to
	 * procmgrd (PM_MSG_RANK_STEP); the last one said, +1 (0: none). */
	bool slow;
	uint64_t step_said;
	uint32_t step_gen;
	struct pm_watch sig_w, grace_w, hang_w, ino_w, live_w;
	/* On a hang: the command's stack, taken before it is stopped, within
	 * the step's stack-timeout */
	struct pm_rank_stack stack;
	unsigned stack_ms;
	/* Warm channels: [0] the running command's, [1] the standby's. */
	struct warm_ch {
		struct pm_watch w;
		struct pm_warm_buf buf;
		struct rank *r;
	} ch[2];
	/* python: processes we reaped while the fork server forked the
	 * generation, before it said the pid: the generation's may be one
	 * (it ended before we knew it). */
	struct { pid_t pid; int status; } early[8];
	int n_early;
	/* A sweep: the trial this slot runs, and where trials' outputs go */
	struct pm_rank_trial trial;
	char *sweep_out;
};

/* rank_ops.c */
extern const struct pm_rank_ops pm_rank_live_ops;
void pm_rank_send(void *ctx, enum pm_msg_type t, uint32_t gen, int status, unsigned flags,
		  const char *text);
void pm_rank_ch_close(struct rank *r, int i);
/* rank_ops.c: a reaped pid and its status, or 0/-1 (never reaped). */
void pm_rank_early_add(struct rank *r, pid_t pid, int status);
int pm_rank_early_take(struct rank *r, pid_t pid, int *status);

/* rank_events.c: the loop's watches */
void pm_rank_on_timer(struct pm_loop *l, struct pm_watch *w, uint32_t ev);
void pm_rank_on_inotify(struct pm_loop *l, struct pm_watch *w, uint32_t ev);
void pm_rank_on_signal(struct pm_loop *l, struct pm_watch *w, uint32_t ev);
void pm_rank_on_live(struct pm_loop *l, struct pm_watch *w, uint32_t ev);
void pm_rank_on_msg(struct pm_conn *c, const struct pm_msg *m);
void pm_rank_on_close(struct pm_conn *c, const char *why);

#endif
