/* The wire format of procmgr, on the control tree (TCP) and between procmgrd
 * and its ranks (unix socket): versioned, length-prefixed frames. Pure. */
#ifndef PM_WIRE_H
#define PM_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define PM_WIRE_MAGIC 0x504du /* "PM" */
#define PM_WIRE_VERSION 1
#define PM_WIRE_HDR 8         /* magic u16, version u8, type u8, length u32 */
#define PM_WIRE_FIXED 22      /* gen, rank, node, status, count, text length */
#define PM_WIRE_TEXT_MAX 4096
#define PM_WIRE_FRAME_MAX (PM_WIRE_HDR + PM_WIRE_FIXED + PM_WIRE_TEXT_MAX)

enum pm_msg_type {
	/* control tree, up */
	PM_MSG_HELLO = 1,  /* node, text: munge credential */
	PM_MSG_FAIL,       /* gen, rank, node, status (wait status), count: flags */
	PM_MSG_STOPPED,    /* gen, count: nodes of the subtree stopped */
	PM_MSG_DONE,       /* gen, count: nodes of the subtree whose ranks all succeeded */
	PM_MSG_LOST,       /* node: a node whose procmgrd went away */
	/* control tree, down (and procmgrd to its ranks) */
	PM_MSG_WELCOME,    /* the parent accepted HELLO */
	PM_MSG_REFUSED,    /* text: why */
	PM_MSG_STOP,       /* gen */
	PM_MSG_START,      /* gen */
	PM_MSG_FINISH,     /* gen */
	PM_MSG_ABORT,      /* status: exit code for the ranks, rank, node, text */
	/* procmgrd and its ranks */
	PM_MSG_RANK_HELLO, /* rank: global, node: local rank, status: pid */
	PM_MSG_RANK_EXIT,  /* gen, status (wait status), count: flags */
	PM_MSG_RANK_STOPPED, /* gen */
	PM_MSG_PRINT,      /* text for the rank's stderr (--procmgr-verbose) */
	PM_MSG_READY,      /* up, count: nodes of the subtree ready to launch */
	/* Both ways on every link, when nothing else is said: proves the peer
	 * alive. Consumed by the connection layer (io/conn.c), never handed on. */
	PM_MSG_PING,
	PM_MSG_RANK_RUN,   /* rank -> procmgrd: gen, status: the command's pid
			    * (and process group), to be killed if we are lost;
			    * again with count PM_FLAG_BEAT at its first heartbeat */
	/* Spares, down: node (lost) is out of the step; status: the spare
	 * that takes its slot (rank), or -1; text: why. Applied in order. */
	PM_MSG_REPLACE,
	PM_MSG_RUNNING,    /* up, gen, count: nodes of the subtree whose ranks all
			    * run (status 0) or have all heartbeaten (status 1) */
	/* The procmgr command and the tree's queries (procmgrd/query.c) */
	PM_MSG_CLIENT,     /* CLI -> root: text: munge credential of the request
			    * (common/request.h) */
	PM_MSG_QUERY,      /* down: gen: query id, status: kind, text: arguments */
	PM_MSG_ANSWER,     /* up (and root -> CLI): gen: query id, node, rank (-1:
			    * the node's own), text: lines or a part of a stack */
	PM_MSG_ANSWER_END, /* up: gen: query id, count: nodes of the subtree that
			    * answered; to the CLI: status 0, or an error */
	/* Slow-node detection (common/slowsum.h) */
	PM_MSG_RANK_STEP,  /* rank -> procmgrd: gen, text: "STEP AT_MS COMPUTE_MS"
			    * (the heartbeat's step, when seen, -1: no compute) */
	PM_MSG_SLOW,       /* up, gen, text: a subtree's summary of an interval */
	PM_MSG_EVENT,      /* up: text: an event's name, a blank, its JSON members;
			    * relayed unchanged, written by the root */
	/* Sweeps (procmgrd/sweep_run.c): one trial's rank on one slot. */
	PM_MSG_TRIAL_START, /* down to node, then to its rank: gen: the attempt,
			     * rank: the trial's rank, node: the node, status: the
			     * slot (local rank), count: the trial's restarts, text:
			     * NAME WORLD LOCAL_RANK LOCAL_WORLD MASTER PORT SCOPE, '\n',
			     * CMD (SCOPE: whose state it sees, common/statescope.h) */
	PM_MSG_TRIAL_STOP,  /* down: gen: the attempt, node, status: the slot */
	PM_MSG_TRIAL_EXIT,  /* up to the root: gen: the attempt, node, rank: the
			     * slot, status: wait status, count: flags, text: the
			     * result (PM_FLAG_RESULT) and the error, encoded by
			     * sweep/sweep_metric.h */
	/* Warm generations: rank -> procmgrd, gen, status: the standby's pid
	 * (its process group; 0: none), count: 0 none, 1 starting, 2 ready;
	 * procmgrd -> a spare's rank (no field): keep a standby */
	PM_MSG_RANK_STANDBY,
	/* State replication (procmgrd/state_repl.c): the first frame on a
	 * node's link to its buddy's tree port: node, text: munge credential
	 * of kind buddy (common/handshake.h); answered WELCOME (kind
	 * buddy-welcome) or REFUSED, then the link carries the stream. */
	PM_MSG_BUDDY,
	PM_MSG_TYPE_MAX
};

enum {
	PM_FLAG_HUNG = 1u << 0, /* no heartbeat for the hang timeout */
	PM_FLAG_LOST = 1u << 1, /* the rank's supervisor went away */
	PM_FLAG_HEALTH = 1u << 2, /* a node failed a health check; text: why */
	PM_FLAG_EXEC = 1u << 3,   /* the command could not be run at all */
	PM_FLAG_CANCEL = 1u << 4, /* Slurm is ending the step (scancel, time limit) */
	PM_FLAG_BLAME = 1u << 5,  /* ABORT: rank failed; the others, stopped, end 0 */
	PM_FLAG_BEAT = 1u << 6,   /* RANK_RUN: the command's first heartbeat */
	PM_FLAG_STOPPED = 1u << 7, /* TRIAL_EXIT: stopped by TRIAL_STOP, no failure */
	/* RANK_EXIT and TRIAL_EXIT of a trial: the text's first line is the
	 * trial's result (sweep/sweep_metric.h, its codec) */
	PM_FLAG_RESULT = 1u << 8,
	/* TRIAL_STOP: not a stop but the end of a trial's run (gen: its state
	 * scope, common/statescope.h): the state of slot status on node goes;
	 * status -1: node holds lost node rank's replicas, which go. Never
	 * passed to a supervisor. */
	PM_FLAG_ENDED = 1u << 9,
};

/* START to a rank (spares): rank is the global rank it runs as, node its
 * group rank (slot), text the host of rank 0 (MASTER_ADDR); rank -1:
 * keep what Slurm gave. START down the tree: count is the restarts so far
 * (a root that takes over counts on). */

/* A FAIL with PM_FLAG_HUNG carries in its text the wall-clock time (ms
 * since the epoch) of the rank's last heartbeat, or of its start if it
 * never beat: the root blames the oldest. */

struct pm_msg {
	uint8_t type;
	uint32_t gen;
	int32_t rank;
	int32_t node;
	int32_t status;
	uint32_t count;
	uint16_t text_len;
	char text[PM_WIRE_TEXT_MAX + 1]; /* always NUL-terminated */
};

void pm_msg_init(struct pm_msg *m, enum pm_msg_type type);
void pm_msg_set_text(struct pm_msg *m, const char *text);
/* Encode into buf; returns the frame's length, or -1 if it does not fit. */
int pm_msg_encode(const struct pm_msg *m, uint8_t *buf, size_t len);
/* Decode the frame at the start of buf. Returns the frame's length, 0 when
 * more bytes are needed, -1 for a malformed frame (err says why). */
int pm_msg_decode(const uint8_t *buf, size_t len, struct pm_msg *m,
		  const char **err);
const char *pm_msg_name(int type);

#endif
