/* The protocol simulation's world: N nodes, each the real state machine
 * (runtime/procmgrd/gen.h) with a simulated clock, CPU and network, and
 * their rank supervisors. ops.c is the one file that speaks the state
 * machine's API; sim.c holds the models and the scenarios, sim_main.c
 * the command line and the report. */
#ifndef SIM_H
#define SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "procmgrd/gen.h"
#include "queue.h"

enum sim_kind {
	EV_NODE_START, /* procmgrd starts: listens, connects to its parent */
	EV_CONNECT,    /* a (re)try to connect to the parent */
	EV_HELLO,      /* at the parent: a child's HELLO (node: parent, arg: child) */
	EV_WELCOME,    /* at the child: its parent's WELCOME */
	EV_UP,         /* at the parent: a frame from child arg */
	EV_DOWN,       /* at the child: a frame from its parent */
	EV_TO_SUP,     /* at supervisor node*rpn+arg: a frame from procmgrd */
	EV_FROM_SUP,   /* at procmgrd node: a frame from local rank arg */
	EV_DELAY,      /* the root's delay timer (arg: its arming) */
	EV_STOP_TIMER, /* a stop deadline (arg: its arming) */
	EV_CHILD_LOST, /* at the parent: child arg is lost */
	EV_PARENT_LOST,/* at the child: the parent is lost */
	EV_SCENARIO,   /* the scenario's next step (arg: which) */
	EV_ATTACH,     /* a node whose parent is lost asks its next candidate */
	EV_ATTACH_HELLO, /* at candidate node: HELLO from arg, whose parent was lost */
	EV_ATTACH_ANSWER, /* at the child: arg 1 WELCOME, 0 refused */
	EV_ATTACH_TIMEOUT, /* arg: its arming */
};

struct sim_params {
	int nodes, fanout, rpn, trials, spares;
	/* microseconds */
	double hop_us, jitter_us;   /* one way between procmgrd; jitter: exponential mean */
	double op_us;               /* procmgrd CPU per frame in or out */
	double rank_hop_us, sup_us; /* procmgrd <-> supervisor; supervisor CPU per frame */
	double exec_us;             /* a rank command's fork/exec (0: none, the fleet) */
	double cred_us;             /* a munge encode or decode */
	double spawn_us;            /* between the starts of two procmgrd */
	double settle_ms;           /* before each injected failure */
	int cores;                  /* shared by every process; 0: one each */
	int munge_threads;          /* one munged for all (0: one per node) */
	bool fleet;                 /* one supervisor process for every rank */
	unsigned peer_timeout_ms;
	int slow_node;              /* -1: none */
	double slow_factor;
	const char *fault;          /* none crash silent partition slow root replace */
	int fault_node;
	uint64_t seed;
};

struct sim_node {
	struct pm_gen g;
	uint64_t busy; /* ns: its CPU is free from then */
	uint32_t delay_arm, stop_arm, attach_arm;
	int parent;    /* now: -1 for the root */
	int *cand;     /* attaching: the candidates (attach.c), next to ask */
	int ncand, next;
	unsigned retry_ms;
	uint64_t last_up, last_down; /* TCP keeps a link's order */
	bool started, joined /* at its parent */, parent_ok, dead, silent /* dead, no RST */;
	uint8_t *pend; /* frames for the parent before its WELCOME */
	uint32_t pend_len;
};

struct sim_sup {
	uint64_t busy, last_to, last_from;
	bool running, ended;
};

struct sim_count {
	uint64_t in, out, bytes_in, bytes_out;
};

struct sim {
	struct sim_params p;
	struct sim_node *n;
	struct sim_sup *sup;
	struct sim_queue q;
	const char **names;
	int cur;          /* node being handled */
	uint64_t cursor;  /* its CPU time: what it sends leaves from here */
	uint64_t *core;   /* when each shared core is free */
	uint64_t *munge;  /* when each munged thread is free */
	uint64_t rng;
	int interior;     /* a node with children other than the root */
	int cut;          /* partitioned: the subtree of this node is cut off; -1 none */
	struct sim_count c_root, c_interior;
	uint64_t events;
};

/* What the run observed; times in ns (sim.c records, sim_main.c reports). */
struct sim_obs {
	int ngen;
	uint64_t *t_fail, *ev_failed, *ev_stopped, *ev_start, *first_start, *last_start;
	uint64_t *last_stop;
	int *started;
	uint64_t ev_launch, ev_lost, ev_end, t_fault, last_end, last_spawn;
	uint64_t ev_replaced, ev_root_moved, t_recovered;
	int gen_recovered, world;
	int ended;
	const char *end_event;
	bool counting;
};

/* ---- sim.c: the world's run ---- */
struct sim_obs *sim_obs(void);
/* Start every node, then handle events until none is left. */
void sim_run(struct sim *s);

/* ---- ops.c: the adapter to the state machine ---- */
int sim_node_init(struct sim *s, int node);
void sim_node_free(struct sim *s, int node);
/* Inputs, each at s->cur at time s->cursor. */
void sim_gen_local_ready(struct sim *s);
int sim_gen_child_hello(struct sim *s, int child);
void sim_gen_child_joined(struct sim *s, int child);
void sim_gen_attach_start(struct sim *s, const char *why);
void sim_gen_attach_none(struct sim *s, const char *why);
void sim_gen_parent_changed(struct sim *s);
void sim_gen_parent_ok(struct sim *s);
int sim_gen_from_child(struct sim *s, int child, const uint8_t *frame, size_t len);
int sim_gen_from_parent(struct sim *s, const uint8_t *frame, size_t len);
int sim_gen_from_rank(struct sim *s, int lrank, const uint8_t *frame, size_t len);
void sim_gen_child_lost(struct sim *s, int child, const char *why);
void sim_gen_parent_lost(struct sim *s, const char *why);
void sim_gen_delay(struct sim *s, uint32_t arm);
void sim_gen_stop_timer(struct sim *s, uint32_t arm);
bool sim_gen_terminal(const struct sim *s, int node);
size_t sim_gen_bytes(const struct sim *s, int node); /* the machine's own memory */

/* ---- sim.c: what the adapter asks of the world ---- */
/* A frame from s->cur to node `to` (kind EV_UP/EV_DOWN) or to a supervisor
 * (EV_TO_SUP, to = local rank); costs the sender op_us. */
void sim_send(struct sim *s, int kind, int to, const struct pm_msg *m);
void sim_timer(struct sim *s, int kind, unsigned ms, uint32_t arm);
void sim_root_event(struct sim *s, const char *name, const char *fields);
uint64_t sim_rand(struct sim *s);

#endif
