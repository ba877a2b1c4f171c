/* Shared by the generation machine's files: gen.c (what a node does on the
 * root's word), gen_report.c (reports up), gen_input.c (inputs), decide.c
 * (the root's decisions), spares.c, recovery.c. */
#ifndef PM_GEN_INT_H
#define PM_GEN_INT_H

#include "gen.h"

void pm_gen_log(struct pm_gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* --procmgr-verbose: a line on srun's stderr through rank 0's supervisor. */
void pm_gen_say(struct pm_gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same, always: a decision (a restart and why), which a user must not miss. */
void pm_gen_tell(struct pm_gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool pm_gen_is_root(const struct pm_gen *g);
/* An event of the step's log: its JSON fields (without braces) by fmt. */
void pm_gen_event(struct pm_gen *g, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "all 8 ranks"; "its one rank", not "all 1 ranks". Until the next call. */
const char *pm_gen_all_ranks(const struct pm_gen *g);
/* The root: stop every rank, to start the next generation after delay_ms. */
void pm_gen_root_restart(struct pm_gen *g, unsigned delay_ms);

/* What every node does on the root's word. */
void pm_gen_stop(struct pm_gen *g, uint32_t gen);
void pm_gen_start(struct pm_gen *g, uint32_t gen);
void pm_gen_end(struct pm_gen *g, const struct pm_msg *m);
void pm_gen_progress(struct pm_gen *g);
/* A failure: to the root, or judged here on the root. */
void pm_gen_fail(struct pm_gen *g, const struct pm_msg *m);
void pm_gen_fail_health(struct pm_gen *g, const char *why);
/* This node fails as a whole (flag PM_FLAG_HEALTH, PM_FLAG_CANCEL). */
void pm_gen_fail_node(struct pm_gen *g, uint32_t flag, const char *why);
/* A supervisor that connected and is not gone. */
bool pm_gen_rank_connected(const struct pm_gen_rank *r);
/* START to one local rank (its global rank anew with spares). */
void pm_gen_start_rank(struct pm_gen *g, int lrank);
/* A supervisor said HELLO: what was said before the printer came. */
void pm_gen_said_hello(struct pm_gen *g, int lrank);

/* The root: each called once per occasion by gen.c. */
void pm_gen_root_launch(struct pm_gen *g);
void pm_gen_root_fail(struct pm_gen *g, const struct pm_msg *m);
void pm_gen_root_lost(struct pm_gen *g, int node, const char *why);
void pm_gen_root_done(struct pm_gen *g);
void pm_gen_root_stopped(struct pm_gen *g);
void pm_gen_root_next(struct pm_gen *g);
/* Every rank of the generation runs (beat: has heartbeaten). */
void pm_gen_root_running(struct pm_gen *g, bool beat);

/* spares.c */
bool pm_gen_spares(const struct pm_gen *g);
/* The ranks of a generation: the active nodes' with spares. */
int pm_gen_world(const struct pm_gen *g);
int pm_gen_slot(const struct pm_gen *g, int node);
int pm_gen_spares_init(struct pm_gen *g);
void pm_gen_spares_free(struct pm_gen *g);
int pm_gen_expected(const struct pm_gen *g);
uint32_t pm_gen_below(const struct pm_gen *g, enum pm_phase phase);
uint32_t pm_gen_running_below(const struct pm_gen *g, int beat);
void pm_gen_exclude(struct pm_gen *g, int node);
void pm_gen_apply_repl(struct pm_gen *g, const struct pm_repl *r);
void pm_gen_repl_msg(const struct pm_repl *r, struct pm_msg *m);
void pm_gen_repl_from_msg(const struct pm_msg *m, struct pm_repl *r);
int pm_gen_free_spare(const struct pm_gen *g);
int pm_gen_spares_left(const struct pm_gen *g);
int pm_gen_missing(struct pm_gen *g, int *out, int max);
bool pm_gen_majority(const struct pm_gen *g);
/* The root's lowest live rank, to say what the lost cannot. */
int pm_gen_printer(const struct pm_gen *g, int avoid);
/* decide.c: a root that took over acts once it has a majority. */
void pm_gen_root_act(struct pm_gen *g);
void arm_stop_off(struct pm_gen *g);
/* The stop deadline: stage 1 own ranks, 2 children, 3 the election. */
void pm_gen_arm_stop(struct pm_gen *g, int stage, unsigned ms);

#endif
