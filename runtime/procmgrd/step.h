/* procmgrd's view of the step: the generation state machine (gen.h) and
 * the I/O around it. The links (rank_link.c, tree_link.c) decode frames
 * and feed the machine; transport.c carries out what it asks.
 *
 * runtime/procmgrd's files are on floors (docs/design.md, "procmgrd's
 * floors"), each calling only the floors under it (tests/unit/
 * no-circles.sh): step_log.c, transport.c, step_life.c at the bottom; the
 * links at the top; step_setup.c, which sets the step up and fills in
 * struct pm_step_hooks, above every other. What a lower file must tell a
 * higher one goes through those hooks. */
#ifndef PM_STEP_H
#define PM_STEP_H

#include <stdbool.h>
#include <stdint.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "common/handshake.h"
#include "common/options.h"
#include "gen.h"
#include "guard.h"
#include "io/conn.h"
#include "io/events.h"
#include "io/loop.h"
#include "metrics.h"
#include "gate_rule.h"
#include "sweep_run.h"

/* gate.c: a tree connection that has not said HELLO yet. */
struct pm_pending {
	struct pm_conn *c;
	uint64_t t0;
	uint8_t src[16];   /* its address (IPv4 mapped into IPv6) */
	bool node;         /* one of the step's nodes' addresses */
	bool spoke;        /* a stranger whose first bytes were there at accept */
};

struct pm_step;
struct pm_q;
struct pm_stacks;
/* What a lower file asks of a higher one, filled in by the top (step_setup.c's
 * pm_step_hooks, set by pm_step_init): the lower file owns the question,
 * the higher one answers it. Any may be NULL (nothing to do). */
struct pm_stack_verdict;
#define PM_STEP_LISTENERS 4
struct pm_step_hooks {
	/* transport.c: the root's event, before its line goes to the log
	 * (every event: the metrics), and once its line is in the log (a
	 * hang's report, events --follow), in order; NULL ends each list. */
	void (*on_event[PM_STEP_LISTENERS])(struct pm_step *s, const char *name,
					    const char *fields);
	void (*on_written[PM_STEP_LISTENERS])(struct pm_step *s, const char *name);
	/* transport.c: the machine's ops that higher files carry out. */
	int (*hang_outlier)(struct pm_step *s, int *node, struct pm_stack_verdict *v,
			    uint64_t *last_ms);
	void (*node_lost)(struct pm_step *s, int node);
	void (*lost_at_end)(struct pm_step *s, int first, unsigned nlost, bool silent);
	void (*sweep_launch)(void *ctx);
	void (*sweep_fail)(void *ctx, const struct pm_msg *m);
	int (*sweep_node_lost)(void *ctx, int node, const char *why);
	void (*sweep_takeover)(void *ctx);
	/* query.c: a query's local part by kind (0: pm_q_local_done follows,
	 * else it is done), a query's stacks dropped, a hang's stack from
	 * below (ANSWER of query 0), and procmgr stop/restart of a trial. */
	void (*query_status)(struct pm_step *s, struct pm_q *q);
	int (*query_stacks)(struct pm_step *s, struct pm_q *q);
	void (*stacks_cancel)(struct pm_stacks *st);
	void (*hang_answer)(struct pm_step *s, const struct pm_msg *m);
	int (*trial_request)(struct pm_step *s, bool restart, const char *name,
			     const char *who, char *msg, size_t len);
	/* sweep_node.c: the root's queue hears of a trial's end. */
	void (*trial_exit)(struct pm_step *s, const struct pm_msg *m);
	/* attach.c: say HELLO on a candidate parent's connection. */
	int (*parent_up)(struct pm_step *s, int fd);
	/* state_repl.c: loads that waited for a lost node's state go on. */
	void (*state_resume)(struct pm_step *s);
	/* sweep_node.c: a trial's run on local rank lrank ended, or another
	 * began there: that rank's state goes (state_link.c); lrank -1: the
	 * replicas of lost node owner go. */
	void (*state_drop)(struct pm_step *s, int lrank, int owner);
};
/* A hook of s, NULL when there is none. */
#define PM_HOOK(s, h) ((s)->hooks ? (s)->hooks->h : NULL)
/* step_setup.c: the hooks pm_step_init sets. */
extern const struct pm_step_hooks pm_step_hooks;

struct pm_step {
	struct pm_loop *loop;
	/* identity */
	unsigned job, stepid;
	int node, nnodes, fanout;
	char **names; /* node names, by node id */
	int ntasks_local, ntasks;
	uid_t uid;
	struct pm_opts opts;
	const char *munge_socket;
	unsigned health_timeout_ms;
	struct pm_guard *guard;
	struct pm_events events; /* root only */
	const char *metrics_dir;     /* root only; NULL: none */
	struct pm_metrics metrics;
	bool metrics_started, metrics_failed; /* a failure is said once, not retried */
	/* the machine */
	struct pm_gen gen;
	/* rank links, by local rank; NULL until its HELLO */
	struct pm_conn **ranks;
	/* The supervisors' socket's door (rank_link.c, admit.h): connections
	 * that have not said HELLO yet, by the process that connected. */
	struct pm_rank_door {
		struct pm_conn *c;
		pid_t pid;
		uint64_t t0;
	} *rank_door;
	int nrank_door, rank_door_cap;
	pid_t rank_door_said; /* the last process whose refusal was logged */
	pid_t *cmd_pgid;  /* by local rank: its command's group, 0 when none runs */
	int *sup_pidfd;   /* by local rank: its supervisor, -1 unknown */
	/* by local rank (--procmgr-warm): its standby's process group, 0: none,
	 * and its state (PM_MSG_RANK_STANDBY's count: 1 starting, 2 ready) */
	pid_t *sb_pgid;
	unsigned char *sb_state;
	/* tree links */
	struct pm_conn *parent;
	bool parent_ok;   /* its WELCOME proved it is this step's procmgrd */
	char nonce[PM_HS_NONCE_HEX + 1]; /* ours, in HELLO: the parent's WELCOME must carry it */
	struct pm_msg *upq; /* messages for the parent before it accepted us */
	int upq_len, upq_cap;
	int child_first, nchildren; /* the tree's own children */
	/* by the machine's kid index (gen.kids): the tree's children first,
	 * then nodes adopted when their parent was lost; NULL until joined */
	struct pm_conn **children;
	int children_cap;
	bool *seen;                /* by child index: joined once, so told the end */
	int nseen;
	struct pm_watch delay_w, stop_w;
	/* gate.c: the tree port's unauthenticated connections */
	struct pm_pending *pending;
	int npending, pending_cap;
	struct pm_watch gate_w, *listen_w;
	bool gate_armed, accept_paused;
	unsigned refused_more, refused_logged;
	uint64_t refused_t0;
	uint8_t (*node_addrs)[16]; /* sorted: the step's nodes that may come here */
	int nnode_addrs;
	struct pm_bucket cred_bucket; /* credentials not from those nodes */
	/* Liveness: every link pinged each third of peer_timeout_ms, and lost
	 * when silent for all of it. One timer for all links. */
	unsigned peer_timeout_ms;
	struct pm_watch live_w;
	/* Spares: where the parent is, and the search for a new one when it
	 * is lost (attach.c). */
	int parent_node;
	struct pm_attach {
		bool active;
		int cand[64], ncand, next;
		int fd;                 /* connecting, -1 none */
		struct pm_watch conn_w, timer_w;
		bool refused_all;       /* every candidate refused outright: gone */
		bool busy;              /* a candidate said busy this round */
		bool pausing;           /* timer_w: the pause before another round */
		uint64_t t0;            /* when the search began */
		char why[256];
		int lost;               /* the parent whose loss started it */
	} attach;
	char events_path[PATH_MAX];
	/* The event log failed before rank 0's supervisor came to say it. */
	bool events_untold;
	int events_errno;
	unsigned port;
	/* After the end, until every child was told it (or PM_LINGER_MS). */
	struct pm_watch linger_w;
	bool lingering, lingered;
	/* Started by the plugin (it watches slurmstepd): over, it leaves only
	 * on the plugin's SIGTERM (got_term), sent once slurmstepd reaped every
	 * task. slurmstepd waits for any child, and one that is not a task
	 * costs it a 100 ms sleep before it looks again. */
	bool wait_term, got_term;
	/* query.c: the procmgr command's requests in flight */
	struct pm_queries *queries;
	/* query_hang.c: the root's stacks of a hang, as they come; NULL: none */
	struct pm_hang_stacks *hang_stacks;
	/* Called once what was queued for the parent went to it, and when a
	 * child joins: main.c holds a failed check's ready line until the
	 * tree was told (else slurmstepd ends us before anyone knows why). */
	void (*told)(struct pm_step *s, void *arg);
	void *told_arg;
	/* jobend.c: srun's node (--srun-node; -1: not a node of the step),
	 * and whether the root declared it lost. */
	int srun_node_id;
	bool srun_lost;
	bool end_step;  /* nodes were lost: scancel JOB.STEP at the end */
	bool cancelled; /* Slurm's SIGTERM came before the step's end */
	/* slowlink.c: the slow-node detector, NULL when it is off */
	struct pm_slowlink *slow;
	/* state_link.c: the ranks' state kept in memory; NULL: none */
	struct pm_state_link *state;
	/* state_repl.c's, made and freed by state_link.c; NULL: none */
	struct pm_state_repl *repl;
	/* A sweep (sweep_run.h): the root's queue, and every node's side. */
	struct pm_sweep_run *sweep;
	struct pm_sweep_node *sweep_node;
	/* The higher floors' answers (pm_step_hooks), set by pm_step_init. */
	const struct pm_step_hooks *hooks;
	/* goodput_link.c: the root's goodput timeline; NULL until its first event */
	struct pm_gp_live *gp;
};

/* The tree port's door (gate.c): at most nchildren + PM_GATE_EXTRA
 * connections without HELLO, each for PM_GATE_HELLO_MS; refusals logged
 * in full up to PM_GATE_LOG_BURST per window, then counted. */
#define PM_GATE_EXTRA 16
#define PM_GATE_HELLO_MS 3000
#define PM_GATE_TICK_MS 500
#define PM_GATE_LOG_WINDOW_MS 10000
#define PM_GATE_LOG_BURST 10
int pm_gate_init(struct pm_step *s);
/* metrics.c: the root's events as the site's metrics (metrics_dir). */
void pm_step_metrics_event(struct pm_step *s, const char *name, const char *fields);
void pm_step_metrics_end(struct pm_step *s);
/* goodput_link.c (issue 35): the root's goodput. Every event feeds it (an
 * on_event listener, before the metrics: it sets their goodput); local
 * rank 0's PM_MSG_RANK_STEP become `progress` events; the status answer's
 * "goodput ..." line (-1: none); freed with the step. */
struct pm_gp_live;
void pm_step_goodput_event(struct pm_step *s, const char *name, const char *fields);
void pm_step_goodput_beat(struct pm_step *s, int lrank, const struct pm_msg *m);
int pm_step_goodput_status(struct pm_step *s, char *line, size_t len);
void pm_step_goodput_free(struct pm_step *s);
void pm_gate_free(struct pm_step *s);
/* jobend.c: the root declared node lost (is it srun's?); at procmgrd's
 * end, the step's result in the output directory and, srun lost, the
 * job's end. */
void pm_step_srun_lost(struct pm_step *s, int node);
/* The root ends the step after nodes were lost (the gen machine's
 * lost_at_end): srun told why it still waits, and, when every lost node
 * was seen to end (not silent), the step ended with scancel at
 * procmgrd's end (pm_step_jobend). */
void pm_step_lost_at_end(struct pm_step *s, int first, unsigned nlost, bool silent);
void pm_step_jobend(struct pm_step *s);
/* A new tree connection (fd accepted): held until its HELLO, or refused
 * ("busy", said to it) and closed. */
void pm_gate_accept(struct pm_step *s, int fd, pm_msg_fn on_msg, pm_close_fn on_close);
/* Whether c (still without HELLO) may have its credential decoded now:
 * false when it is not from a step node and over the rate (say busy). */
bool pm_gate_may_decode(struct pm_step *s, const struct pm_conn *c);
void pm_gate_remove(struct pm_step *s, struct pm_conn *c);
void pm_gate_refused(struct pm_step *s, const char *why);
/* accept failed (EMFILE...): stop accepting for a tick. */
void pm_gate_pause(struct pm_step *s, int err);

/* How long an ended procmgrd waits for children that have not joined yet,
 * to tell them the end: without it a late node would retry its parent's
 * port until its connect deadline. Less than the plugin's 5 s kill. */
#define PM_LINGER_MS 3000

/* step_setup.c: the step set up (and its hooks), and freed. */
int pm_step_init(struct pm_step *s);
void pm_step_free(struct pm_step *s);
/* step_life.c: the step's timers (restart delay, stop deadline, linger)
 * and its checks' callbacks; called by pm_step_init. */
int pm_step_life_init(struct pm_step *s);

/* rank_link.c: a rank supervisor connected on the unix socket. */
void pm_step_rank_conn(struct pm_step *s, int fd);
/* The door's connections closed (the step's end). */
void pm_step_rank_door_free(struct pm_step *s);
/* tree_link.c: a peer connected on the tree port: it must say HELLO
 * with a credential. */
void pm_step_tree_conn(struct pm_step *s, int fd);
/* Our connection to the parent is up: say HELLO. */
int pm_step_parent_up(struct pm_step *s, int fd);
/* step_life.c: the parent is unreachable, or slurmstepd went away: end
 * the step here. */
void pm_step_abort_local(struct pm_step *s, const char *why);
/* Whether everything procmgrd serves has ended, every child told; if so
 * the loop is stopped. Ended but with children still to come, it lingers
 * (at most PM_LINGER_MS) and says false. */
bool pm_step_over(struct pm_step *s);
/* SIGTERM from the plugin: stop now, or linger for late children. Before
 * the end, it is Slurm cancelling the step: said as such up the tree. */
void pm_step_terminate(struct pm_step *s);
/* rank_link.c: what a lost supervisor ran dies with it; a silent one is
 * killed too (it may be stopped, and would hold the Slurm step). */
void pm_step_rank_kill(struct pm_step *s, int lrank, bool supervisor);
/* transport.c: the event log's failure, on srun's stderr once rank 0's
 * supervisor is there to say it. */
void pm_step_events_untold(struct pm_step *s);
/* step_life.c: a child joined (tree_link.c says). */
void pm_step_child_seen(struct pm_step *s, int idx);
/* attach.c: the parent is lost (spares): ask its ancestors, then the
 * root's children, in turn; none answering, take the root's place or end. */
int pm_attach_init(struct pm_step *s);
void pm_attach_start(struct pm_step *s, const char *why);
/* tree_link.c tells it how the candidate answered. */
void pm_attach_welcomed(struct pm_step *s);
void pm_attach_failed(struct pm_step *s, const char *why);
void pm_attach_free(struct pm_step *s);
/* transport.c: a kid index's connection slot, grown as nodes are
 * adopted. */
struct pm_conn **pm_step_child(struct pm_step *s, int idx);
/* transport.c: resolve host:port (0: any port). */
int pm_step_resolve(const char *host, unsigned port, struct sockaddr_storage *ss,
		    socklen_t *len, char *err, size_t errlen);

/* slowlink.c: the slow-node detector's I/O (--procmgr-slow). */
int pm_slowlink_init(struct pm_step *s);
void pm_slowlink_free(struct pm_step *s);
/* A supervisor's PM_MSG_RANK_STEP. */
void pm_slowlink_rank(struct pm_step *s, int lrank, const struct pm_msg *m);
/* PM_MSG_SLOW from a child (a summary) or the parent (a verdict): 1 when
 * it was that message. */
int pm_slowlink_child(struct pm_step *s, const struct pm_msg *m);
int pm_slowlink_parent(struct pm_step *s, const struct pm_msg *m);
/* This node found slow: "compute:1.52" (evidence:ratio), else NULL. */
const char *pm_slowlink_state(struct pm_step *s);
/* state_link.c: the ranks' state socket (PROCMGR_STATE_SOCK) and this
 * node's store, limits in MiB; freed, every blob with it, by
 * pm_step_free. */
#define PM_STATE_NAMES_MAX 64
struct pm_state_usage {
	uint64_t held, max_node, max_rank, saves, loads, refused;
	size_t blobs;
	unsigned conns; /* connections held: the ranks', and refused ones awaiting their answer */
};
struct pm_state_note;
int pm_state_link_init(struct pm_step *s, const char *path, unsigned max_rank_mib,
		       unsigned max_node_mib);
/* The copy to the buddy: at most bytes_per_s (site key state_repl_rate); 0: no bound. */
void pm_state_link_set_rate(struct pm_step *s, uint64_t bytes_per_s);
void pm_state_link_usage(const struct pm_step *s, struct pm_state_usage *u);
void pm_state_link_free(struct pm_step *s);
/* The step_hooks' state_drop (sweep_node.c asks). */
void pm_state_link_drop(struct pm_step *s, int lrank, int owner);
/* transport.c: a save or a restore as the root's event (sent up from
 * other nodes as PM_MSG_EVENT); an EVENT from a child, relayed. */
void pm_step_state_event(struct pm_step *s, const char *name, int grank,
			 const struct pm_state_note *note);
void pm_step_event_msg(struct pm_step *s, const struct pm_msg *m);

/* step_log.c: a line of procmgrd's log (its own log file), prefixed
 * with the node. */
void pm_log(struct pm_step *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* transport.c: the machine's actions, carried out on this step's links. */
extern const struct pm_gen_ops pm_step_ops;
/* A conn's message to a link that cannot take it. */
void pm_step_send(struct pm_step *s, struct pm_conn *c, const struct pm_msg *m);

#endif
