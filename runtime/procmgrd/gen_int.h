/* Shared by the generation machine's files, in layers (each calls only
 * the ones below it; docs/design.md): gen_kids.c (children counting),
 * spares.c (slots), gen.c (state, printing, what a node does on the
 * root's word), decide.c (the root's verdicts, pure: decide.h),
 * recovery.c and gen_sweep.c, gen_apply.c (the root applies a verdict),
 * gen_report.c (reports up, failures and losses on their way to the
 * root), gen_input.c and gen_request.c (inputs). */
#ifndef PM_GEN_INT_H
#define PM_GEN_INT_H

#include "gen.h"

void pm_gen_log(struct pm_gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* --procmgr-verbose: a line on srun's stderr through rank 0's supervisor. */
void pm_gen_say(struct pm_gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same, always: a decision (a restart and why), which a user must not miss. */
void pm_gen_tell(struct pm_gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool pm_gen_is_root(const struct pm_gen *g);
/* Who prints on srun's stderr, one rule (decide.h): the global rank whose
 * supervisor speaks for this node, its lowest live rank (not avoid); -1
 * if none. An ABORT names it when no failed rank says why itself. */
int pm_gen_printer(const struct pm_gen *g, int avoid);
/* An event of the step's log: its JSON fields (without braces) by fmt. */
void pm_gen_event(struct pm_gen *g, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "all 8 ranks"; "its one rank", not "all 1 ranks". Until the next call. */
const char *pm_gen_all_ranks(const struct pm_gen *g);

/* gen.c: what every node does on the root's word. */
void pm_gen_stop(struct pm_gen *g, uint32_t gen);
void pm_gen_start(struct pm_gen *g, uint32_t gen);
void pm_gen_end(struct pm_gen *g, const struct pm_msg *m);
/* A supervisor that connected and is not gone. */
bool pm_gen_rank_connected(const struct pm_gen_rank *r);
/* START to one local rank (its global rank anew with spares). */
void pm_gen_start_rank(struct pm_gen *g, int lrank);
/* A supervisor said HELLO: what was said before the printer came. */
void pm_gen_said_hello(struct pm_gen *g, int lrank);

/* The stop deadline: stage 1 own ranks, 2 children, 3 the election; 0
 * (with ms 0) disarms it. */
void pm_gen_arm_stop(struct pm_gen *g, enum pm_stop_stage stage, unsigned ms);

/* gen_report.c: reports up, after every input. */
void pm_gen_progress(struct pm_gen *g);
/* A failure: to the root, or judged here on the root. */
void pm_gen_fail(struct pm_gen *g, const struct pm_msg *m);
void pm_gen_fail_health(struct pm_gen *g, const char *why);
/* This node fails as a whole (flag PM_FLAG_HEALTH, PM_FLAG_CANCEL). */
void pm_gen_fail_node(struct pm_gen *g, uint32_t flag, const char *why);

/* gen_apply.c: the root, each called once per occasion by the inputs and
 * reports; each asks decide.c and applies its verdict. */
/* Stop every rank, to start the next generation after delay_ms. */
void pm_gen_root_restart(struct pm_gen *g, unsigned delay_ms);
void pm_gen_root_launch(struct pm_gen *g);
void pm_gen_root_fail(struct pm_gen *g, const struct pm_msg *m);
void pm_gen_root_lost(struct pm_gen *g, int node, const char *why);
void pm_gen_root_done(struct pm_gen *g);
void pm_gen_root_stopped(struct pm_gen *g);
void pm_gen_root_next(struct pm_gen *g);
/* A root that took over acts once it has a majority. */
void pm_gen_root_act(struct pm_gen *g);
/* Why a node that failed a health check is lost (gen_report.c): the
 * root tells it from a dead node by this prefix (gen_apply.c). */
#define PM_GEN_HEALTH_LOST "failed a health check: "

/* recovery.c: every rank of the generation runs (beat: has heartbeaten). */
void pm_gen_root_running(struct pm_gen *g, bool beat);

/* gen_kids.c: the nodes below and what they reported. */
int pm_gen_kids_init(struct pm_gen *g);
void pm_gen_kids_free(struct pm_gen *g);
void pm_gen_kid_forget(struct pm_gen *g, int node);
int pm_gen_expected(const struct pm_gen *g);
uint32_t pm_gen_below(const struct pm_gen *g, enum pm_phase phase);
uint32_t pm_gen_running_below(const struct pm_gen *g, int beat);
int pm_gen_missing(struct pm_gen *g, int *out, int max);
bool pm_gen_majority(const struct pm_gen *g);

/* spares.c: slots, the nodes lost, the replacements. */
bool pm_gen_spares(const struct pm_gen *g);
/* The ranks of a generation: the active nodes' with spares. */
int pm_gen_world(const struct pm_gen *g);
int pm_gen_slot(const struct pm_gen *g, int node);
int pm_gen_spares_init(struct pm_gen *g);
void pm_gen_spares_free(struct pm_gen *g);
void pm_gen_exclude(struct pm_gen *g, int node);
void pm_gen_apply_repl(struct pm_gen *g, const struct pm_repl *r);
void pm_gen_repl_msg(const struct pm_repl *r, struct pm_msg *m);
void pm_gen_repl_from_msg(const struct pm_msg *m, struct pm_repl *r);
int pm_gen_free_spare(const struct pm_gen *g);
int pm_gen_spares_left(const struct pm_gen *g);
int pm_gen_spares_left_but(const struct pm_gen *g, int a, int b);

#endif
