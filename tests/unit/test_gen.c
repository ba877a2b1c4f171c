/* Unit tests of the generation state machine (runtime/procmgrd/gen.c and
 * decide.c), scenario by scenario, through a transport that records every
 * action. Expected actions follow the protocol of docs/design.md: failures
 * go up to the root, which alone decides; STOP/START/FINISH/ABORT go down;
 * READY/DONE/STOPPED are reported once per subtree. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "procmgrd/gen.h"

enum act { A_UP, A_DOWN, A_CHILD, A_RANK, A_TIMER, A_CHECKS, A_EVENT, A_LOG, A_STOPTIMER };

struct rec {
	enum act kind;
	int target;       /* child node, local rank, timer ms */
	struct pm_msg m;
	char name[32];    /* event */
	char text[1024];  /* event fields, log line */
};

struct world {
	struct rec r[256];
	int n;
	uint64_t now;
	int checks_rc;    /* what run_checks answers */
	const char *checks_why;
	const char *names[8];
	struct pm_gen g;
};

static struct rec *add(struct world *w, enum act kind, int target)
{
	struct rec *r;

	assert_true(w->n < (int)(sizeof(w->r) / sizeof(w->r[0])));
	r = &w->r[w->n++];
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->target = target;
	return r;
}

static void rec_up(void *ctx, const struct pm_msg *m) { add(ctx, A_UP, -1)->m = *m; }
static void rec_down(void *ctx, const struct pm_msg *m) { add(ctx, A_DOWN, -1)->m = *m; }
static void rec_child(void *ctx, int node, const struct pm_msg *m) { add(ctx, A_CHILD, node)->m = *m; }
static void rec_rank(void *ctx, int lrank, const struct pm_msg *m) { add(ctx, A_RANK, lrank)->m = *m; }
static void rec_timer(void *ctx, unsigned ms) { add(ctx, A_TIMER, (int)ms); }
static void rec_stop(void *ctx, unsigned ms) { add(ctx, A_STOPTIMER, (int)ms); }

static int rec_checks(void *ctx, char *why, size_t len)
{
	struct world *w = ctx;

	add(w, A_CHECKS, -1);
	if (w->checks_rc < 0)
		snprintf(why, len, "%s", w->checks_why);
	return w->checks_rc;
}

static void rec_event(void *ctx, const char *name, const char *fields)
{
	struct rec *r = add(ctx, A_EVENT, -1);
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->text, sizeof(r->text), "%s", fields);
}

static void rec_log(void *ctx, const char *text)
{
	snprintf(add(ctx, A_LOG, -1)->text, sizeof(((struct rec *)0)->text), "%s", text);
}

static uint64_t rec_now(void *ctx) { return ((struct world *)ctx)->now; }

static char avoided[1024];
static int became;
static void rec_avoid(void *ctx, const char *nodes, const char *why)
{
	(void)ctx;
	(void)why;
	snprintf(avoided, sizeof(avoided), "%s", nodes);
}
static void rec_became_root(void *ctx) { (void)ctx; became++; }
static int lost_said[8], nlost_said; /* node_lost ops, in order */
static void rec_node_lost(void *ctx, int node)
{
	(void)ctx;
	if (nlost_said < 8)
		lost_said[nlost_said++] = node;
}
static int outlier_rank = -1; /* what hang_outlier answers, on node 0 */
static uint64_t stacks_last_ms; /* and when the last stack came */
static int rec_outlier(void *ctx, int *node, struct pm_stack_verdict *v, uint64_t *last_ms)
{
	(void)ctx;
	*node = 0;
	memset(v, 0, sizeof(*v));
	v->rank = outlier_rank;
	if (outlier_rank >= 0)
		snprintf(v->words, sizeof(v->words), "the only rank not waiting in a collective "
			 "(it is in spin; ranks 0-1 wait in all_reduce)");
	*last_ms = stacks_last_ms;
	return outlier_rank;
}

static const struct pm_gen_ops ops = {
	.send_up = rec_up, .send_down = rec_down, .send_child = rec_child,
	.send_rank = rec_rank, .arm_timer = rec_timer, .arm_stop = rec_stop,
	.run_checks = rec_checks,
	.event = rec_event, .log = rec_log, .now_ms = rec_now,
	.avoid = rec_avoid, .became_root = rec_became_root, .hang_outlier = rec_outlier,
	.node_lost = rec_node_lost,
};

/* A node of a step; policy mode with max restarts and first delay. */
static int spares_of_next; /* cf.spares of the next node() */

static struct world *node(int id, int nnodes, int fanout, int ntasks, int ntasks_local,
			  enum pm_restart_mode mode, int max, unsigned delay)
{
	struct world *w = calloc(1, sizeof(*w));
	struct pm_gen_config cf = {
		.node = id, .nnodes = nnodes, .fanout = fanout, .ntasks = ntasks,
		.ntasks_local = ntasks_local, .verbose = true, .ops = &ops,
	};
	static const char *const names[] = { "n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7" };

	assert_non_null(w);
	assert_true(nnodes <= 8);
	cf.names = names;
	cf.ctx = w;
	cf.spares = spares_of_next;
	spares_of_next = 0;
	cf.policy.mode = mode;
	cf.policy.max_restarts = mode == PM_RESTART_NEVER ? 0 : max;
	cf.policy.delay_ms = delay;
	cf.policy.max_delay_ms = 60000;
	w->checks_rc = 1;
	assert_int_equal(pm_gen_init(&w->g, &cf), 0);
	return w;
}

static void done(struct world *w)
{
	pm_gen_free(&w->g);
	free(w);
}

static void clear(struct world *w) { w->n = 0; }

/* Actions of a kind (and target, -2 for any) carrying a message type
 * (0 for any). */
static int count(const struct world *w, enum act kind, int target, int type)
{
	int i, n = 0;

	for (i = 0; i < w->n; i++)
		if (w->r[i].kind == kind && (target == -2 || w->r[i].target == target) &&
		    (type == 0 || w->r[i].m.type == type))
			n++;
	return n;
}

static const struct rec *last(const struct world *w, enum act kind, int type)
{
	int i;

	for (i = w->n - 1; i >= 0; i--)
		if (w->r[i].kind == kind && (type == 0 || w->r[i].m.type == type))
			return &w->r[i];
	return NULL;
}

static const char *event(const struct world *w, const char *name)
{
	int i;

	for (i = w->n - 1; i >= 0; i--)
		if (w->r[i].kind == A_EVENT && !strcmp(w->r[i].name, name))
			return w->r[i].text;
	return NULL;
}

static void msg(struct pm_msg *m, int type, uint32_t gen, int status, uint32_t flags)
{
	pm_msg_init(m, (enum pm_msg_type)type);
	m->gen = gen;
	m->status = status;
	m->count = flags;
}

static void rank_exit(struct world *w, int lrank, uint32_t gen, int wstatus, uint32_t flags)
{
	struct pm_msg m;
	msg(&m, PM_MSG_RANK_EXIT, gen, wstatus, flags);
	assert_int_equal(pm_gen_rank_msg(&w->g, lrank, &m), 0);
}

static void rank_stopped(struct world *w, int lrank, uint32_t gen)
{
	struct pm_msg m;
	msg(&m, PM_MSG_RANK_STOPPED, gen, 0, 0);
	assert_int_equal(pm_gen_rank_msg(&w->g, lrank, &m), 0);
}

static void child(struct world *w, int node, int type, uint32_t gen, uint32_t count)
{
	struct pm_msg m;
	msg(&m, type, gen, 0, count);
	assert_int_equal(pm_gen_child_msg(&w->g, node, &m), 0);
}

static void parent(struct world *w, int type, uint32_t gen)
{
	struct pm_msg m;
	msg(&m, type, gen, 0, 0);
	assert_int_equal(pm_gen_parent_msg(&w->g, &m), 0);
}

/* Every local rank connected (global rank = base + local), the node ready. */
static void launch(struct world *w, int base)
{
	int i;

	for (i = 0; i < w->g.cf.ntasks_local; i++)
		assert_int_equal(pm_gen_rank_hello(&w->g, i, base + i), 0);
	pm_gen_local_ready(&w->g);
}

#define EXIT(code) ((code) << 8)

/* ---- scenarios ---- */

static void test_one_node_success(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_ON_FAILURE, 3, 0);
	(void)state;

	launch(w, 0);
	assert_non_null(event(w, "launch"));
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_START), 1);
	assert_int_equal(count(w, A_RANK, 1, PM_MSG_START), 1);
	assert_int_equal(w->g.phase, PM_PHASE_RUNNING);
	clear(w);
	rank_exit(w, 0, 0, 0, 0);
	assert_null(event(w, "finish"));
	rank_exit(w, 1, 0, 0, 0);
	assert_non_null(event(w, "generation_succeeded"));
	assert_non_null(event(w, "finish"));
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_FINISH), 2);
	assert_int_equal(w->g.phase, PM_PHASE_FINISHED);
	assert_false(pm_gen_over(&w->g));
	pm_gen_rank_gone(&w->g, 0, NULL);
	pm_gen_rank_gone(&w->g, 1, NULL);
	assert_true(pm_gen_over(&w->g));
	/* A supervisor ending after FINISH is not a failure. */
	assert_null(event(w, "rank_failed"));
	done(w);
}

static void test_root_barrier(void **state)
{
	/* 3 nodes, fanout 2: the root's children are 1 and 2. */
	struct world *w = node(0, 3, 2, 3, 1, PM_RESTART_ON_FAILURE, 1, 0);
	(void)state;

	launch(w, 0);
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_START), 0);
	child(w, 1, PM_MSG_READY, 0, 1);
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_START), 0);
	assert_null(event(w, "launch"));
	child(w, 2, PM_MSG_READY, 0, 1);
	assert_non_null(strstr(event(w, "launch"), "\"nodes\":3,\"ranks\":3"));
	assert_int_equal(count(w, A_DOWN, -1, PM_MSG_START), 1);
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_START), 1);
	done(w);
}

static void test_inner_node_reports_subtree(void **state)
{
	/* 4 nodes, fanout 2: node 1's subtree is {1, 3}. */
	struct world *w = node(1, 4, 2, 4, 1, PM_RESTART_ON_FAILURE, 1, 0);
	const struct rec *r;
	(void)state;

	launch(w, 1);
	assert_int_equal(count(w, A_UP, -1, PM_MSG_READY), 0);
	child(w, 3, PM_MSG_READY, 0, 1);
	r = last(w, A_UP, PM_MSG_READY);
	assert_non_null(r);
	assert_int_equal(r->m.count, 2);
	/* Only the root starts generation 0. */
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_START), 0);
	clear(w);
	parent(w, PM_MSG_START, 0);
	assert_int_equal(count(w, A_DOWN, -1, PM_MSG_START), 1);
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_START), 1);
	/* DONE goes up once the node and its child are done, counting both. */
	rank_exit(w, 0, 0, 0, 0);
	assert_int_equal(count(w, A_UP, -1, PM_MSG_DONE), 0);
	child(w, 3, PM_MSG_DONE, 0, 1);
	r = last(w, A_UP, PM_MSG_DONE);
	assert_non_null(r);
	assert_int_equal(r->m.count, 2);
	/* A second DONE from the child changes nothing. */
	child(w, 3, PM_MSG_DONE, 0, 1);
	assert_int_equal(count(w, A_UP, -1, PM_MSG_DONE), 1);
	done(w);
}

static void test_gen0_behind_barrier(void **state)
{
	struct world *w = node(0, 2, 2, 2, 1, PM_RESTART_ON_FAILURE, 1, 0);
	(void)state;

	assert_int_equal(pm_gen_rank_hello(&w->g, 0, 0), 0);
	assert_int_equal(count(w, A_RANK, 0, 0), 0);
	assert_int_equal(w->g.ranks[0].st, PM_RANK_IDLE);
	/* Early child's STOPPED or DONE have no place before launch. */
	child(w, 1, PM_MSG_DONE, 0, 1);
	pm_gen_local_ready(&w->g);
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_START), 0);
	child(w, 1, PM_MSG_READY, 0, 1);
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_START), 1);
	assert_int_equal(w->g.phase, PM_PHASE_RUNNING);
	done(w);
}

static void test_late_supervisor(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_ON_FAILURE, 2, 0);
	const struct rec *r;
	(void)state;

	assert_int_equal(pm_gen_rank_hello(&w->g, 0, 0), 0);
	pm_gen_local_ready(&w->g);
	assert_int_equal(w->g.phase, PM_PHASE_RUNNING);
	clear(w);
	/* Rank 1's supervisor comes while generation 0 runs: it starts at once. */
	assert_int_equal(pm_gen_rank_hello(&w->g, 1, 1), 0);
	r = last(w, A_RANK, PM_MSG_START);
	assert_non_null(r);
	assert_int_equal(r->target, 1);
	assert_int_equal(r->m.gen, 0);
	/* A second HELLO for the same rank is refused, as is one out of range. */
	assert_int_equal(pm_gen_rank_hello(&w->g, 1, 1), -1);
	assert_int_equal(pm_gen_rank_hello(&w->g, 2, 2), -1);
	done(w);
}

/* Rank 1 fails before rank 0's supervisor has connected: the restart line
 * waits for it, and reaches it before its START (report.bats saw it lost
 * one run in three). */
static void test_said_before_printer(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_ON_FAILURE, 2, 0);
	int i, print = -1, start = -1;
	(void)state;

	assert_int_equal(pm_gen_rank_hello(&w->g, 1, 1), 0);
	pm_gen_local_ready(&w->g);
	rank_exit(w, 1, 0, EXIT(3), 0);
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_PRINT), 0);
	assert_int_equal(w->g.gen, 1);
	clear(w);
	assert_int_equal(pm_gen_rank_hello(&w->g, 0, 0), 0);
	for (i = 0; i < w->n; i++) {
		if (w->r[i].kind != A_RANK || w->r[i].target != 0)
			continue;
		if (w->r[i].m.type == PM_MSG_PRINT && print < 0 &&
		    strstr(w->r[i].m.text, "generation 0: rank 1 on n0 exited with code 3; "
					   "restarting all 2 ranks (restart 1 of 2)"))
			print = i;
		if (w->r[i].m.type == PM_MSG_START)
			start = i;
	}
	assert_true(print >= 0);
	assert_true(start > print);
	/* Said once: a later line goes straight to the printer. */
	clear(w);
	rank_exit(w, 1, 1, EXIT(3), 0);
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_PRINT), 1);
	done(w);
}

/* A step of one rank: "restarting its one rank", not "all 1 ranks". */
/* A step of one rank: "restarting its one rank", not "all 1 ranks". */
static void test_restart_one_rank(void **state)
{
	struct world *w = node(0, 1, 32, 1, 1, PM_RESTART_ON_FAILURE, 3, 0);
	int i, said = 0;
	(void)state;

	launch(w, 0);
	clear(w);
	rank_exit(w, 0, 0, EXIT(3), 0);
	/* It restarts at once (no other rank to stop): any PRINT of the lot. */
	for (i = 0; i < w->n; i++)
		if (w->r[i].kind == A_RANK && w->r[i].m.type == PM_MSG_PRINT &&
		    strstr(w->r[i].m.text, "rank 0 on n0 exited with code 3; restarting its "
				    "one rank (restart 1 of 3)"))
			said++;
	assert_int_equal(said, 1);
	done(w);
}

static void test_restart_cycle(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_ON_FAILURE, 3, 0);
	(void)state;

	launch(w, 0);
	clear(w);
	w->now = 1000;
	rank_exit(w, 1, 0, EXIT(3), 0);
	assert_non_null(strstr(event(w, "rank_failed"), "\"rank\":1,\"node\":\"n0\","
					       "\"status\":\"exited with code 3\""));
	assert_int_equal(w->g.phase, PM_PHASE_STOPPING);
	/* STOP only to the rank that still runs. */
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_STOP), 1);
	assert_int_equal(count(w, A_RANK, 1, PM_MSG_STOP), 0);
	assert_int_equal(count(w, A_CHECKS, -2, 0), 0);
	/* The restart line, on rank 0's stderr. */
	assert_non_null(strstr(last(w, A_RANK, PM_MSG_PRINT)->m.text,
			       "rank 1 on n0 exited with code 3; restarting all 2 ranks "
			       "(restart 1 of 3)"));
	w->now = 1012;
	rank_stopped(w, 0, 0);
	assert_int_equal(count(w, A_CHECKS, -2, 0), 1);
	assert_non_null(strstr(event(w, "stopped"), "\"gen\":0,\"stop_ms\":12,\"delay_ms\":0"));
	assert_non_null(strstr(event(w, "start"), "\"gen\":1,\"restart\":1,"
					          "\"since_failure_ms\":12"));
	assert_int_equal(w->g.gen, 1);
	assert_int_equal(w->g.restarts, 1);
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_START), 1);
	assert_int_equal(count(w, A_RANK, 1, PM_MSG_START), 1);
	assert_int_equal(last(w, A_RANK, PM_MSG_START)->m.gen, 1);
	done(w);
}

static void test_failure_while_stopping(void **state)
{
	struct world *w = node(0, 1, 32, 3, 3, PM_RESTART_ON_FAILURE, 3, 0);
	(void)state;

	launch(w, 0);
	rank_exit(w, 0, 0, EXIT(1), 0);
	clear(w);
	/* Rank 1 dies of the STOP's SIGTERM before its supervisor says STOPPED. */
	rank_exit(w, 1, 0, EXIT(143), 0);
	assert_non_null(strstr(event(w, "rank_failed"), "\"ignored\":true"));
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_STOP), 0);
	assert_int_equal(w->g.phase, PM_PHASE_STOPPING);
	rank_stopped(w, 2, 0);
	/* Counted once: still the first restart. */
	assert_int_equal(w->g.restarts, 1);
	assert_int_equal(w->g.phase, PM_PHASE_RUNNING);
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_START), 3);
	done(w);
}

static void test_health_fails_while_stopping(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_ON_FAILURE, 3, 0);
	const struct rec *r;
	(void)state;

	w->checks_rc = 0; /* the checks run off the event loop */
	launch(w, 0);
	rank_exit(w, 0, 0, EXIT(1), 0);
	rank_stopped(w, 1, 0);
	assert_int_equal(count(w, A_CHECKS, -2, 0), 1);
	assert_int_equal(w->g.checks, PM_CHECKS_RUNNING);
	assert_null(event(w, "stopped"));
	/* Another input while they run starts no second run. */
	rank_stopped(w, 1, 0);
	assert_int_equal(count(w, A_CHECKS, -2, 0), 1);
	clear(w);
	pm_gen_checks_done(&w->g, "mem: 10 MiB available, 1024 needed");
	assert_non_null(strstr(event(w, "health_failed"), "\"when\":\"before a restart\""));
	assert_non_null(event(w, "give_up"));
	assert_null(event(w, "start"));
	assert_int_equal(w->g.phase, PM_PHASE_ABORTED);
	r = last(w, A_RANK, PM_MSG_ABORT);
	assert_non_null(r);
	assert_int_equal(r->m.status, 1);
	assert_non_null(strstr(r->m.text, "node n0 failed a health check before a restart: "
					  "mem: 10 MiB available"));
	done(w);
}

static void test_checks_pass_between_generations(void **state)
{
	struct world *w = node(0, 1, 32, 1, 1, PM_RESTART_ON_FAILURE, 3, 0);
	(void)state;

	w->checks_rc = 0;
	launch(w, 0);
	rank_exit(w, 0, 0, EXIT(1), 0);
	assert_int_equal(count(w, A_CHECKS, -2, 0), 1);
	assert_int_equal(w->g.phase, PM_PHASE_STOPPING);
	pm_gen_checks_done(&w->g, NULL);
	assert_int_equal(w->g.phase, PM_PHASE_RUNNING);
	assert_int_equal(w->g.gen, 1);
	/* A late result (no run going) changes nothing. */
	pm_gen_checks_done(&w->g, "stale");
	assert_null(event(w, "health_failed"));
	done(w);
}

static void test_checks_cannot_run(void **state)
{
	struct world *w = node(0, 1, 32, 1, 1, PM_RESTART_ON_FAILURE, 3, 0);
	(void)state;

	w->checks_rc = -1;
	w->checks_why = "cannot start the health checks: fork: out of memory";
	launch(w, 0);
	rank_exit(w, 0, 0, EXIT(1), 0);
	assert_int_equal(w->g.phase, PM_PHASE_ABORTED);
	assert_non_null(strstr(event(w, "health_failed"), "fork: out of memory"));
	done(w);
}

/* Every rank stuck in the same collective: each supervisor judges its own
 * rank hung and ends it, so the STOP that follows is answered by EXIT. */
static void test_all_hung_at_once(void **state)
{
	struct world *w = node(0, 1, 32, 3, 3, PM_RESTART_ON_FAILURE, 3, 0);
	(void)state;

	launch(w, 0);
	rank_exit(w, 2, 0, 9, PM_FLAG_HUNG);
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_STOP), 1);
	assert_int_equal(count(w, A_RANK, 1, PM_MSG_STOP), 1);
	rank_exit(w, 0, 0, 9, PM_FLAG_HUNG);
	assert_int_equal(w->g.phase, PM_PHASE_STOPPING);
	rank_exit(w, 1, 0, 9, PM_FLAG_HUNG);
	assert_int_equal(w->g.phase, PM_PHASE_RUNNING);
	assert_int_equal(w->g.gen, 1);
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_START), 3 + 3);
	done(w);
}

/* The other interleaving: a STOPPED comes after its rank's EXIT (the
 * supervisor answered the STOP it got after it ended the rank). */
static void test_stopped_after_exit(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_ON_FAILURE, 3, 0);
	(void)state;

	launch(w, 0);
	rank_exit(w, 0, 0, EXIT(1), 0);
	rank_exit(w, 1, 0, 9, PM_FLAG_HUNG);
	assert_int_equal(w->g.gen, 1);
	clear(w);
	rank_stopped(w, 1, 0); /* of generation 0: stale */
	assert_int_equal(w->g.phase, PM_PHASE_RUNNING);
	assert_int_equal(w->g.ranks[1].st, PM_RANK_RUNNING);
	assert_int_equal(w->n, 0);
	done(w);
}

static void test_success_and_failure_together(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_ON_FAILURE, 3, 0);
	(void)state;

	launch(w, 0);
	rank_exit(w, 0, 0, 0, 0);
	clear(w);
	rank_exit(w, 1, 0, EXIT(2), 0);
	/* Nothing runs to be stopped: the restart follows at once. */
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_STOP), 0);
	assert_null(event(w, "generation_succeeded"));
	assert_int_equal(w->g.gen, 1);
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_START), 2);
	done(w);
}

static void test_always_policy(void **state)
{
	struct world *w = node(0, 1, 32, 1, 1, PM_RESTART_ALWAYS, 2, 0);
	(void)state;

	launch(w, 0);
	rank_exit(w, 0, 0, 0, 0);
	assert_non_null(event(w, "generation_succeeded"));
	assert_null(event(w, "finish"));
	assert_int_equal(w->g.gen, 1);
	rank_exit(w, 0, 1, 0, 0);
	assert_int_equal(w->g.gen, 2);
	clear(w);
	rank_exit(w, 0, 2, 0, 0);
	assert_non_null(event(w, "finish"));
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_FINISH), 1);
	assert_int_equal(w->g.restarts, 2);
	done(w);
}

static void test_never_policy(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_NEVER, 0, 0);
	const struct rec *r;
	(void)state;

	launch(w, 0);
	clear(w);
	rank_exit(w, 1, 0, EXIT(3), 0);
	r = last(w, A_RANK, PM_MSG_ABORT);
	assert_non_null(r);
	assert_int_equal(r->m.status, 3);
	assert_int_equal(r->m.rank, 1);
	assert_string_equal(r->m.text, "procmgr: rank 1 on n0 exited with code 3 in generation "
				       "0; not restarting (restart=never)");
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_ABORT), 2);
	assert_non_null(strstr(event(w, "give_up"), "\"exit_code\":3"));
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_STOP), 0);
	done(w);
}

static void test_budget_spent(void **state)
{
	struct world *w = node(0, 1, 32, 1, 1, PM_RESTART_ON_FAILURE, 1, 0);
	const struct rec *r;
	(void)state;

	launch(w, 0);
	rank_exit(w, 0, 0, EXIT(42), 0);
	assert_int_equal(w->g.gen, 1);
	clear(w);
	rank_exit(w, 0, 1, 134, 0); /* killed by SIGABRT, core dumped */
	r = last(w, A_RANK, PM_MSG_ABORT);
	assert_non_null(r);
	assert_int_equal(r->m.status, 128 + 6);
	assert_non_null(strstr(r->m.text, "rank 0 on n0 was killed by signal 6"));
	assert_non_null(strstr(r->m.text, "giving up after 1 restart (restart=on-failure:1)"));
	done(w);
}

static void test_lost_child(void **state)
{
	struct world *root = node(0, 4, 2, 4, 1, PM_RESTART_ON_FAILURE, 3, 0);
	struct world *mid = node(1, 4, 2, 4, 1, PM_RESTART_ON_FAILURE, 3, 0);
	const struct rec *r;
	(void)state;

	/* An inner node passes the loss up; the root ends the step. */
	launch(mid, 1);
	pm_gen_child_lost(&mid->g, 3, "connection reset");
	r = last(mid, A_UP, PM_MSG_LOST);
	assert_non_null(r);
	assert_int_equal(r->m.node, 3);

	launch(root, 0);
	child(root, 1, PM_MSG_READY, 0, 2);
	child(root, 2, PM_MSG_READY, 0, 1);
	assert_int_equal(root->g.phase, PM_PHASE_RUNNING);
	clear(root);
	{
		struct pm_msg m;
		msg(&m, PM_MSG_LOST, 0, 0, 0);
		m.node = 3;
		assert_int_equal(pm_gen_child_msg(&root->g, 1, &m), 0);
	}
	assert_int_equal(root->g.phase, PM_PHASE_ABORTED);
	r = last(root, A_DOWN, PM_MSG_ABORT);
	assert_non_null(r);
	assert_string_equal(r->m.text, "procmgr: lost node n3 (its procmgrd or slurmstepd "
				       "went away); ending the step");
	assert_int_equal(count(root, A_RANK, 0, PM_MSG_ABORT), 1);
	/* A child that goes after the end is no news. */
	clear(root);
	pm_gen_child_lost(&root->g, 2, NULL);
	assert_int_equal(root->n, 0);
	done(root);
	done(mid);
}

static void test_lost_supervisor(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_ALWAYS, 5, 0);
	const struct rec *r;
	(void)state;

	launch(w, 0);
	pm_gen_rank_gone(&w->g, 1, "connection reset by peer");
	/* Not restartable: the task itself is gone. */
	assert_int_equal(w->g.phase, PM_PHASE_ABORTED);
	r = last(w, A_RANK, PM_MSG_ABORT);
	assert_non_null(r);
	assert_int_equal(r->target, 0);
	assert_non_null(strstr(r->m.text, "rank 1 on n0 lost its supervisor"));
	/* It had its START, and nothing after it was gone. */
	assert_int_equal(count(w, A_RANK, 1, 0), 1);
	done(w);
}

static void test_end_reaches_late_comers(void **state)
{
	struct world *w = node(0, 3, 2, 3, 1, PM_RESTART_NEVER, 0, 0);
	const struct rec *r;
	(void)state;

	launch(w, 0);
	child(w, 1, PM_MSG_READY, 0, 1);
	child(w, 2, PM_MSG_READY, 0, 1);
	{
		struct pm_msg m;
		msg(&m, PM_MSG_FAIL, 0, EXIT(1), 0);
		m.rank = 2;
		m.node = 2;
		assert_int_equal(pm_gen_child_msg(&w->g, 2, &m), 0);
	}
	assert_int_equal(w->g.phase, PM_PHASE_ABORTED);
	clear(w);
	/* A child that reconnects after the end is told the end. */
	pm_gen_child_joined(&w->g, 1);
	r = last(w, A_CHILD, PM_MSG_ABORT);
	assert_non_null(r);
	assert_int_equal(r->target, 1);
	done(w);

	w = node(0, 1, 32, 2, 2, PM_RESTART_ON_FAILURE, 0, 0);
	assert_int_equal(pm_gen_rank_hello(&w->g, 0, 0), 0);
	pm_gen_local_ready(&w->g);
	rank_exit(w, 0, 0, 0, 0);
	/* Rank 1 never came: its generation cannot end until it does. */
	assert_int_equal(w->g.phase, PM_PHASE_RUNNING);
	assert_int_equal(pm_gen_rank_hello(&w->g, 1, 1), 0);
	rank_exit(w, 1, 0, 0, 0);
	assert_int_equal(w->g.phase, PM_PHASE_FINISHED);
	done(w);

	/* FINISH from the parent reaches a supervisor that comes after it. */
	w = node(1, 2, 2, 2, 1, PM_RESTART_ON_FAILURE, 0, 0);
	pm_gen_local_ready(&w->g);
	parent(w, PM_MSG_START, 0);
	parent(w, PM_MSG_FINISH, 0);
	clear(w);
	assert_int_equal(pm_gen_rank_hello(&w->g, 0, 1), 0);
	r = last(w, A_RANK, PM_MSG_FINISH);
	assert_non_null(r);
	assert_false(pm_gen_over(&w->g));
	pm_gen_rank_gone(&w->g, 0, NULL);
	assert_true(pm_gen_over(&w->g));
	done(w);
}

static void test_delay_timer(void **state)
{
	struct world *w = node(0, 1, 32, 1, 1, PM_RESTART_ON_FAILURE, 3, 250);
	const struct rec *r;
	(void)state;

	launch(w, 0);
	pm_gen_timer(&w->g); /* fired outside a delay: nothing */
	assert_int_equal(w->g.phase, PM_PHASE_RUNNING);
	rank_exit(w, 0, 0, EXIT(1), 0);
	/* The delay decided at the failure is the one armed. */
	r = last(w, A_TIMER, 0);
	assert_non_null(r);
	assert_int_equal(r->target, 250);
	assert_non_null(strstr(event(w, "stopped"), "\"delay_ms\":250"));
	assert_int_equal(w->g.phase, PM_PHASE_DELAY);
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_START), 1);
	pm_gen_timer(&w->g);
	assert_int_equal(w->g.phase, PM_PHASE_RUNNING);
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_START), 2);
	/* It doubles for the next restart. */
	rank_exit(w, 0, 1, EXIT(1), 0);
	assert_int_equal(last(w, A_TIMER, 0)->target, 500);
	done(w);
}

static void test_inner_node_stop(void **state)
{
	/* Node 1 of 4, fanout 2: child 3. */
	struct world *w = node(1, 4, 2, 8, 2, PM_RESTART_ON_FAILURE, 3, 0);
	const struct rec *r;
	(void)state;

	w->checks_rc = 0;
	launch(w, 2);
	child(w, 3, PM_MSG_READY, 0, 1);
	parent(w, PM_MSG_START, 0);
	/* A local failure goes up, with global rank and node; nothing stops yet. */
	clear(w);
	rank_exit(w, 1, 0, EXIT(5), 0);
	r = last(w, A_UP, PM_MSG_FAIL);
	assert_non_null(r);
	assert_int_equal(r->m.rank, 3);
	assert_int_equal(r->m.node, 1);
	assert_int_equal(r->m.status, EXIT(5));
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_STOP), 0);
	parent(w, PM_MSG_STOP, 0);
	assert_int_equal(count(w, A_DOWN, -1, PM_MSG_STOP), 1);
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_STOP), 1);
	child(w, 3, PM_MSG_STOPPED, 0, 1);
	assert_int_equal(count(w, A_UP, -1, PM_MSG_STOPPED), 0);
	rank_stopped(w, 0, 0);
	/* Its ranks are stopped: now its checks, then STOPPED for 2 nodes. */
	assert_int_equal(count(w, A_CHECKS, -2, 0), 1);
	assert_int_equal(count(w, A_UP, -1, PM_MSG_STOPPED), 0);
	pm_gen_checks_done(&w->g, NULL);
	r = last(w, A_UP, PM_MSG_STOPPED);
	assert_non_null(r);
	assert_int_equal(r->m.count, 2);
	assert_int_equal(r->m.gen, 0);
	parent(w, PM_MSG_START, 1);
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_START), 2);
	assert_int_equal(last(w, A_RANK, PM_MSG_START)->m.gen, 1);
	done(w);
}

static void test_inner_node_health_fails_before_restart(void **state)
{
	struct world *w = node(1, 2, 2, 2, 1, PM_RESTART_ON_FAILURE, 3, 0);
	const struct rec *r;
	(void)state;

	w->checks_rc = 0;
	launch(w, 1);
	parent(w, PM_MSG_START, 0);
	parent(w, PM_MSG_STOP, 0);
	rank_stopped(w, 0, 0);
	clear(w);
	pm_gen_checks_done(&w->g, "script:/x: fan 3 failed");
	r = last(w, A_UP, PM_MSG_FAIL);
	assert_non_null(r);
	assert_true(r->m.count & PM_FLAG_HEALTH);
	assert_string_equal(r->m.text, "script:/x: fan 3 failed");
	/* It still reports its subtree stopped: the root decides. */
	assert_int_equal(count(w, A_UP, -1, PM_MSG_STOPPED), 1);
	done(w);
}

static void test_health_while_running_and_before_launch(void **state)
{
	struct world *w = node(0, 2, 2, 2, 1, PM_RESTART_ON_FAILURE, 3, 0);
	struct pm_msg m;
	(void)state;

	/* Node 1 failed its pre-launch checks: it never says READY. */
	launch(w, 0);
	msg(&m, PM_MSG_FAIL, 0, 0, PM_FLAG_HEALTH);
	m.node = 1;
	pm_msg_set_text(&m, "gpu: 7 of 8 GPUs");
	assert_int_equal(pm_gen_child_msg(&w->g, 1, &m), 0);
	assert_non_null(strstr(event(w, "health_failed"), "\"when\":\"before launch\""));
	assert_int_equal(w->g.phase, PM_PHASE_ABORTED);
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_START), 0);
	assert_non_null(strstr(last(w, A_RANK, PM_MSG_ABORT)->m.text,
			       "node n1 failed a health check before launch: gpu: 7 of 8 GPUs"));
	done(w);

	/* While running, a failed periodic check is a failure like a rank's. */
	w = node(0, 1, 32, 1, 1, PM_RESTART_ON_FAILURE, 3, 0);
	launch(w, 0);
	pm_gen_health_failed(&w->g, "mem: low");
	assert_non_null(strstr(event(w, "health_failed"), "\"when\":\"while running\""));
	assert_int_equal(w->g.phase, PM_PHASE_STOPPING);
	rank_stopped(w, 0, 0);
	assert_int_equal(w->g.gen, 1);
	done(w);
}

static void test_stale_and_unexpected(void **state)
{
	struct world *w = node(0, 2, 2, 2, 1, PM_RESTART_ON_FAILURE, 3, 0);
	struct pm_msg m;
	(void)state;

	launch(w, 0);
	child(w, 1, PM_MSG_READY, 0, 1);
	rank_exit(w, 0, 0, EXIT(1), 0);
	child(w, 1, PM_MSG_STOPPED, 0, 1);
	assert_int_equal(w->g.gen, 1);
	clear(w);
	/* Generation 0's news in generation 1 changes nothing. */
	rank_exit(w, 0, 0, EXIT(1), 0);
	child(w, 1, PM_MSG_DONE, 0, 1);
	assert_int_equal(w->g.phase, PM_PHASE_RUNNING);
	assert_int_equal(count(w, A_RANK, -2, 0), 0);
	/* Frames that have no place on a link are refused for the link to drop. */
	msg(&m, PM_MSG_START, 1, 0, 0);
	assert_int_equal(pm_gen_child_msg(&w->g, 1, &m), -1);
	assert_int_equal(pm_gen_rank_msg(&w->g, 0, &m), -1);
	msg(&m, PM_MSG_DONE, 1, 0, 1);
	assert_int_equal(pm_gen_parent_msg(&w->g, &m), -1);
	done(w);
}

static void test_abort_local(void **state)
{
	struct world *w = node(2, 3, 2, 6, 2, PM_RESTART_ON_FAILURE, 3, 0);
	const struct rec *r;
	(void)state;

	launch(w, 4);
	pm_gen_abort_local(&w->g, "procmgr: slurmstepd of this node went away; ending the step");
	assert_int_equal(w->g.phase, PM_PHASE_ABORTED);
	/* Said by the node's lowest rank, where the reason is known. */
	r = last(w, A_RANK, PM_MSG_ABORT);
	assert_non_null(r);
	assert_int_equal(r->m.rank, 4);
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_ABORT), 2);
	assert_null(event(w, "give_up")); /* only the root keeps the log */
	done(w);
}

static void test_cannot_run(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_ON_FAILURE, 3, 0);
	const struct rec *r;
	(void)state;

	launch(w, 0);
	clear(w);
	/* The supervisor's exec failed (not found): the budget is not spent on
	 * restarts that would fail the same way. */
	rank_exit(w, 1, 0, EXIT(127), PM_FLAG_EXEC);
	assert_int_equal(w->g.phase, PM_PHASE_ABORTED);
	assert_int_equal(w->g.restarts, 0);
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_STOP), 0);
	assert_non_null(strstr(event(w, "rank_failed"), "\"cannot_run\":true"));
	r = last(w, A_RANK, PM_MSG_ABORT);
	assert_non_null(r);
	assert_int_equal(r->m.status, 127);
	assert_non_null(strstr(r->m.text, "rank 1 on n0 cannot run its command (exited with "
					  "code 127) in generation 0; not restarting"));
	/* A command that itself exits 127 is an ordinary failure. */
	done(w);
	w = node(0, 1, 32, 1, 1, PM_RESTART_ON_FAILURE, 3, 0);
	launch(w, 0);
	rank_exit(w, 0, 0, EXIT(127), 0);
	assert_int_equal(w->g.gen, 1);
	done(w);
}

/* ---- liveness and hangs ---- */

static void rank_hung(struct world *w, int lrank, uint32_t gen, const char *beat)
{
	struct pm_msg m;
	msg(&m, PM_MSG_RANK_EXIT, gen, 15, PM_FLAG_HUNG);
	pm_msg_set_text(&m, beat);
	assert_int_equal(pm_gen_rank_msg(&w->g, lrank, &m), 0);
}

/* Several ranks judged hung: every rank is stopped first, and the one
 * whose last heartbeat is oldest is named, the others as following it,
 * whatever order their news came in. */
static void test_hang_blames_oldest(void **state)
{
	struct world *w = node(0, 1, 32, 4, 4, PM_RESTART_ON_FAILURE, 3, 0);
	const struct rec *r;
	const char *e;
	(void)state;

	launch(w, 0);
	clear(w);
	rank_hung(w, 2, 0, "1700000002500");
	assert_int_equal(w->g.phase, PM_PHASE_STOPPING);
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_STOP), 1);
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_PRINT), 0); /* not decided yet */
	rank_hung(w, 0, 0, "1700000001000");
	rank_hung(w, 3, 0, "1700000002800");
	rank_stopped(w, 1, 0);
	assert_int_equal(w->g.gen, 1);
	e = event(w, "hang");
	assert_non_null(e);
	assert_non_null(strstr(e, "\"rank\":0,\"node\":\"n0\",\"followers\":[2,3],"
				  "\"nfollowers\":2,\"lead_ms\":1500"));
	assert_non_null(strstr(event(w, "rank_failed"), "\"last_heartbeat_ms\":1700000002800"));
	{
		int i, n = 0;
		for (i = 0; i < w->n; i++)
			if (w->r[i].kind == A_RANK && w->r[i].m.type == PM_MSG_PRINT &&
			    strstr(w->r[i].m.text, "hung")) {
				assert_string_equal(w->r[i].m.text,
						    "procmgr: generation 0: rank 0 on n0 hung first "
						    "(its last heartbeat 1.5 s before any other's); "
						    "ranks 2, 3 followed; restarting all 4 ranks "
						    "(restart 1 of 3)");
				n++;
			}
		assert_int_equal(n, 1);
	}
	(void)r;
	done(w);
}

/* A supervisor takes its hung rank's stack and stops it before it says so:
 * the time since it judged the rank hung is part of the recovery (issue
 * 20, item 12), the earliest judgement counts, an absurd age does not. */
static void test_hang_capture_counts_in_recovery(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_ON_FAILURE, 3, 0);
	(void)state;

	launch(w, 0);
	w->now = 20000;
	rank_hung(w, 1, 0, "1700000002500 4000");
	assert_non_null(strstr(event(w, "rank_failed"), "\"last_heartbeat_ms\":1700000002500,"
							 "\"judged_ms_ago\":4000"));
	w->now = 20100;
	rank_hung(w, 0, 0, "1700000002600 5100"); /* judged at 15000: earlier */
	assert_int_equal(w->g.gen, 1);
	assert_non_null(strstr(event(w, "start"), "\"since_failure_ms\":5100"));
	done(w);

	w = node(0, 1, 32, 1, 1, PM_RESTART_ON_FAILURE, 3, 0);
	launch(w, 0);
	w->now = 20000;
	rank_hung(w, 0, 0, "1700000002500 99999999999");
	assert_non_null(strstr(event(w, "start"), "\"since_failure_ms\":0"));
	done(w);
}

static const char *printed(struct world *w, const char *what)
{
	int i;
	for (i = w->n - 1; i >= 0; i--)
		if (w->r[i].kind == A_RANK && w->r[i].m.type == PM_MSG_PRINT &&
		    strstr(w->r[i].m.text, what))
			return w->r[i].m.text;
	return NULL;
}

/* The common hang: every rank's last beat within a few ms (they all
 * waited at the same step). The oldest by 1 ms is no evidence: the
 * verdict says so, and names the rank whose stack stands out if one
 * does. */
static void test_hang_tie_is_inconclusive(void **state)
{
	struct world *w = node(0, 1, 32, 4, 4, PM_RESTART_ON_FAILURE, 3, 0);
	const struct rec *r;
	(void)state;

	launch(w, 0);
	clear(w);
	rank_hung(w, 1, 0, "1700000001001");
	rank_hung(w, 0, 0, "1700000001000");
	rank_hung(w, 3, 0, "1700000001003");
	rank_hung(w, 2, 0, "1700000001002");
	assert_int_equal(w->g.gen, 1);
	assert_string_equal(printed(w, "hung"),
			    "procmgr: generation 0: ranks 0-3 hung with their last heartbeats "
			    "within 1 ms of each other, less than heartbeats resolve (100 ms): "
			    "inconclusive, no evidence points at one rank; restarting all 4 ranks "
			    "(restart 1 of 3)");
	assert_non_null(strstr(event(w, "hang"), "\"lead_ms\":1,\"blame\":\"none\","
				  "\"blamed\":-1,\"resolution_ms\":100"));
	done(w);

	/* The stacks say rank 2 is elsewhere: it is named, and blamed at the end. */
	outlier_rank = 2;
	w = node(0, 1, 32, 4, 4, PM_RESTART_NEVER, 0, 0);
	launch(w, 0);
	rank_hung(w, 1, 0, "1700000001001");
	rank_hung(w, 0, 0, "1700000001000");
	rank_hung(w, 2, 0, "1700000001002");
	rank_stopped(w, 3, 0);
	assert_int_equal(w->g.phase, PM_PHASE_ABORTED);
	r = last(w, A_RANK, PM_MSG_ABORT);
	assert_non_null(r);
	assert_int_equal(r->m.rank, 2);
	assert_true(r->m.count & PM_FLAG_BLAME);
	assert_string_equal(r->m.text, "procmgr: generation 0: ranks 0-2 hung with their last "
			    "heartbeats within 1 ms of each other, less than heartbeats resolve "
			    "(100 ms): rank 2 on n0, the only rank not waiting in a collective (it "
			    "is in spin; ranks 0-1 wait in all_reduce), is the likely cause; not "
			    "restarting (restart=never)");
	assert_non_null(strstr(event(w, "hang"), "\"blame\":\"stack\",\"blamed\":2"));
	outlier_rank = -1;
	done(w);
}

/* Without restarts left, a hang still stops every rank cleanly before
 * the end, and the end names the rank that hung first. */
static void test_hang_gives_up_after_stop(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_NEVER, 0, 0);
	const struct rec *r;
	(void)state;

	launch(w, 0);
	rank_hung(w, 1, 0, "2000");
	assert_int_equal(w->g.phase, PM_PHASE_STOPPING);
	rank_stopped(w, 0, 0);
	assert_int_equal(w->g.phase, PM_PHASE_ABORTED);
	r = last(w, A_RANK, PM_MSG_ABORT);
	assert_non_null(r);
	assert_int_equal(r->m.rank, 1);
	assert_string_equal(r->m.text, "procmgr: generation 0: rank 1 on n0 hung; not restarting "
			    "(restart=never)");
	done(w);
}

/* A supervisor that does not end its command within the bound makes its
 * node lost, said up with why; the deadline is disarmed once running. */
static void test_stop_deadline_own_rank(void **state)
{
	struct world *w = node(1, 2, 2, 2, 1, PM_RESTART_ON_FAILURE, 3, 0);
	const struct rec *r;
	(void)state;

	w->g.cf.stop_bound_ms = 3000;
	w->g.cf.stop_margin_ms = 1000;
	launch(w, 1);
	parent(w, PM_MSG_START, 0);
	clear(w);
	pm_gen_stop_timer(&w->g); /* not stopping: nothing */
	assert_int_equal(w->n, 0);
	parent(w, PM_MSG_STOP, 0);
	r = last(w, A_STOPTIMER, 0);
	assert_non_null(r);
	assert_int_equal(r->target, 3000);
	clear(w);
	pm_gen_stop_timer(&w->g);
	r = last(w, A_UP, PM_MSG_LOST);
	assert_non_null(r);
	assert_int_equal(r->m.node, 1);
	assert_string_equal(r->m.text, "rank 1 did not stop within 3.0 s");
	/* Once it did stop and the next generation runs, no deadline. */
	rank_stopped(w, 0, 0);
	clear(w);
	parent(w, PM_MSG_START, 1);
	r = last(w, A_STOPTIMER, 0);
	assert_non_null(r);
	assert_int_equal(r->target, 0);
	done(w);
}

/* The root's own ranks stopped, one child's subtree never reported: after
 * a margin per level below, that child is lost and the step ends. */
static void test_stop_deadline_child(void **state)
{
	struct world *w = node(0, 3, 2, 3, 1, PM_RESTART_ON_FAILURE, 3, 0);
	const struct rec *r;
	(void)state;

	w->g.cf.stop_bound_ms = 3000;
	w->g.cf.stop_margin_ms = 1000;
	launch(w, 0);
	child(w, 1, PM_MSG_READY, 0, 1);
	child(w, 2, PM_MSG_READY, 0, 1);
	rank_exit(w, 0, 0, EXIT(1), 0);
	assert_int_equal(w->g.phase, PM_PHASE_STOPPING);
	child(w, 1, PM_MSG_STOPPED, 0, 1);
	clear(w);
	pm_gen_stop_timer(&w->g);
	r = last(w, A_STOPTIMER, 0);
	assert_non_null(r);
	assert_int_equal(r->target, 1000);
	assert_int_equal(w->g.phase, PM_PHASE_STOPPING);
	pm_gen_stop_timer(&w->g);
	assert_int_equal(w->g.phase, PM_PHASE_ABORTED);
	assert_non_null(strstr(event(w, "node_lost"), "\"node\":\"n2\""));
	r = last(w, A_DOWN, PM_MSG_ABORT);
	assert_non_null(r);
	assert_string_equal(r->m.text, "procmgr: lost node n2 (its ranks did not report stopped "
			    "within 4.0 s of the stop); ending the step");
	done(w);
}

/* Slurm's SIGTERM to a supervisor (scancel, a time limit) ends the step
 * as cancelled, never restarted, from any phase. */
static void test_cancel(void **state)
{
	struct world *root = node(0, 2, 2, 2, 1, PM_RESTART_ON_FAILURE, 3, 0);
	struct world *leaf = node(1, 2, 2, 2, 1, PM_RESTART_ON_FAILURE, 3, 0);
	const struct rec *r;
	(void)state;

	launch(leaf, 1);
	parent(leaf, PM_MSG_START, 0);
	clear(leaf);
	rank_exit(leaf, 0, 0, 15, PM_FLAG_CANCEL);
	r = last(leaf, A_UP, PM_MSG_FAIL);
	assert_non_null(r);
	assert_true(r->m.count & PM_FLAG_CANCEL);
	assert_string_equal(r->m.text, "rank 1 got SIGTERM from Slurm");

	launch(root, 0);
	child(root, 1, PM_MSG_READY, 0, 1);
	rank_exit(root, 0, 0, EXIT(1), 0); /* stopping for a restart */
	clear(root);
	assert_int_equal(pm_gen_child_msg(&root->g, 1, &r->m), 0);
	assert_int_equal(root->g.phase, PM_PHASE_ABORTED);
	assert_non_null(event(root, "cancelled"));
	r = last(root, A_DOWN, PM_MSG_ABORT);
	assert_non_null(r);
	assert_int_equal(r->m.status, 143);
	assert_string_equal(r->m.text, "procmgr: the step was cancelled (rank 1 got SIGTERM from "
			    "Slurm on n1); not restarting");
	done(root);
	done(leaf);
}

/* A supervisor lost while the ranks stop cannot be restarted in place:
 * the end, said by a rank still there. */
static void test_lost_supervisor_while_stopping(void **state)
{
	struct world *w = node(0, 1, 32, 3, 3, PM_RESTART_ON_FAILURE, 3, 0);
	const struct rec *r;
	(void)state;

	launch(w, 0);
	rank_exit(w, 2, 0, EXIT(1), 0);
	assert_int_equal(w->g.phase, PM_PHASE_STOPPING);
	pm_gen_rank_gone(&w->g, 0, "no heartbeat for 5 s");
	assert_int_equal(w->g.phase, PM_PHASE_ABORTED);
	r = last(w, A_RANK, PM_MSG_ABORT);
	assert_non_null(r);
	assert_int_equal(r->m.rank, 1); /* rank 0 is gone: the lowest other says it */
	assert_non_null(strstr(r->m.text, "rank 0 on n0 lost its supervisor (no heartbeat for "
					  "5 s) in generation 0; not restarting"));
	done(w);
}


/* A child killed before it joined (a node that failed its checks, its
 * procmgrd ended by slurmstepd) never reports: at the join deadline it is
 * lost and the step ends, naming it, instead of waiting for ever. */
static void test_child_that_never_joins_is_lost(void **state)
{
	struct world *w = node(0, 3, 32, 3, 1, PM_RESTART_ON_FAILURE, 3, 0);
	const struct rec *r;
	(void)state;

	launch(w, 0);
	pm_gen_child_joined(&w->g, 1);
	child(w, 1, PM_MSG_READY, 0, 1);
	assert_int_equal(w->g.phase, PM_PHASE_STARTING);
	clear(w);
	pm_gen_join_timer(&w->g, 30000);
	r = last(w, A_DOWN, PM_MSG_ABORT);
	assert_non_null(r);
	assert_non_null(strstr(r->m.text, "n2"));
	assert_non_null(strstr(r->m.text, "did not join the step within 30.0 s"));
	assert_true(pm_gen_terminal(&w->g));
	done(w);

	/* Every child joined: the deadline changes nothing. */
	w = node(0, 3, 32, 3, 1, PM_RESTART_ON_FAILURE, 3, 0);
	launch(w, 0);
	pm_gen_child_joined(&w->g, 1);
	pm_gen_child_joined(&w->g, 2);
	clear(w);
	pm_gen_join_timer(&w->g, 30000);
	assert_int_equal(count(w, A_DOWN, -1, 0), 0);
	assert_int_equal(w->g.phase, PM_PHASE_STARTING);
	done(w);
}

/* Below the root, the lost child is passed up for the root to decide. */
static void test_child_that_never_joins_goes_up(void **state)
{
	struct world *w = node(1, 4, 2, 4, 1, PM_RESTART_ON_FAILURE, 3, 0);
	const struct rec *r;
	(void)state;

	launch(w, 1);
	clear(w);
	pm_gen_join_timer(&w->g, 30000);
	r = last(w, A_UP, PM_MSG_LOST);
	assert_non_null(r);
	assert_int_equal(r->m.node, 3);
	done(w);
}

/* ---- hot spares ---- */

/* 6 nodes (fanout 32: all below the root), 1 rank each, the last 2 spares. */
static struct world *spare_node(int id)
{
	spares_of_next = 2;
	return node(id, 6, 32, 6, 1, PM_RESTART_ON_FAILURE, 3, 0);
}

/* The root with every node ready and generation 0 running. */
static struct world *spare_root_running(void)
{
	struct world *w = spare_node(0);
	int c;

	launch(w, 0);
	for (c = 1; c < 6; c++) {
		pm_gen_child_joined(&w->g, c);
		child(w, c, PM_MSG_READY, 0, 1);
	}
	assert_int_equal(w->g.phase, PM_PHASE_RUNNING);
	return w;
}

static void test_spare_runs_nothing_until_it_takes_a_slot(void **state)
{
	struct world *w = spare_node(4);
	const struct rec *r;
	struct pm_msg m;
	(void)state;

	launch(w, 4);
	assert_int_equal(w->g.ranks[0].grank, -1);
	parent(w, PM_MSG_START, 0);
	/* No slot: no START for its supervisor, and it is done at once. */
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_START), 0);
	r = last(w, A_UP, PM_MSG_DONE);
	assert_non_null(r);
	/* Node 2 is lost; node 4 takes slot 2. */
	parent(w, PM_MSG_STOP, 0);
	pm_msg_init(&m, PM_MSG_REPLACE);
	m.node = 2;
	m.rank = 2;
	m.status = 4;
	pm_msg_set_text(&m, "gone");
	assert_int_equal(pm_gen_parent_msg(&w->g, &m), 0);
	assert_true(pm_gen_excluded(&w->g, 2));
	clear(w);
	parent(w, PM_MSG_START, 1);
	r = last(w, A_RANK, PM_MSG_START);
	assert_non_null(r);
	assert_int_equal(r->m.rank, 2);  /* the lost node's global rank */
	assert_int_equal(r->m.node, 2);  /* and its GROUP_RANK */
	assert_string_equal(r->m.text, "n0"); /* MASTER_ADDR: rank 0's host */
	assert_int_equal(w->g.ranks[0].grank, 2);
	done(w);
}

static void test_spare_replaces_lost_node(void **state)
{
	struct world *w = spare_root_running();
	const struct rec *r;
	int c;
	(void)state;

	clear(w);
	avoided[0] = '\0';
	pm_gen_child_lost(&w->g, 2, "no heartbeat for 5 s");
	/* Out for good, its slot to the first spare, and everyone stops. */
	r = last(w, A_DOWN, PM_MSG_REPLACE);
	assert_non_null(r);
	assert_int_equal(r->m.node, 2);
	assert_int_equal(r->m.rank, 2);
	assert_int_equal(r->m.status, 4);
	assert_int_equal(count(w, A_DOWN, -1, PM_MSG_STOP), 1);
	assert_non_null(strstr(event(w, "node_replaced"), "\"node\":\"n2\",\"spare\":\"n4\""));
	assert_string_equal(avoided, "n2");
	r = last(w, A_RANK, PM_MSG_PRINT);
	assert_non_null(r);
	assert_non_null(strstr(r->m.text, "lost node n2 (no heartbeat for 5 s); its rank 2 move "
				       "to spare n4; restarting all 4 ranks (restart 1 of 3, 1 spare left)"));
	/* The lost node is not waited for. */
	rank_stopped(w, 0, 0);
	for (c = 1; c < 6; c++)
		if (c != 2)
			child(w, c, PM_MSG_STOPPED, 0, 1);
	assert_int_equal(count(w, A_DOWN, -1, PM_MSG_START), 1);
	r = last(w, A_DOWN, PM_MSG_START);
	assert_int_equal(r->m.gen, 1);
	assert_int_equal(r->m.count, 1); /* restarts so far, for a root to come */
	/* A second word of the same loss changes nothing. */
	clear(w);
	child(w, 1, PM_MSG_LOST, 1, 0);
	done(w);
}

static void test_spares_run_out(void **state)
{
	struct world *w = spare_root_running();
	const struct rec *r;
	int c;
	(void)state;

	pm_gen_child_lost(&w->g, 2, "crashed");
	rank_stopped(w, 0, 0);
	for (c = 1; c < 6; c++)
		if (c != 2)
			child(w, c, PM_MSG_STOPPED, 0, 1);
	pm_gen_child_lost(&w->g, 3, "crashed too");
	rank_stopped(w, 0, 1);
	for (c = 1; c < 6; c++)
		if (c != 2 && c != 3)
			child(w, c, PM_MSG_STOPPED, 1, 1);
	assert_int_equal(w->g.gen, 2);
	clear(w);
	pm_gen_child_lost(&w->g, 1, "third");
	r = last(w, A_DOWN, PM_MSG_ABORT);
	assert_non_null(r);
	assert_int_equal(r->m.status, 1);
	assert_non_null(strstr(r->m.text, "lost node n1 (third); no spare left; ending the step"));
	assert_non_null(strstr(r->m.text, "Nodes lost: n2 (crashed), n3 (crashed too), n1 (third)"));
	assert_non_null(strstr(r->m.text, "Next time: --exclude=n2,n3,n1"));
	assert_string_equal(avoided, "n2,n3,n1");
	done(w);
}

static void test_lost_spare_restarts_nothing(void **state)
{
	struct world *w = spare_root_running();
	(void)state;

	clear(w);
	pm_gen_child_lost(&w->g, 5, "crashed");
	assert_int_equal(count(w, A_DOWN, -1, PM_MSG_REPLACE), 1);
	assert_int_equal(count(w, A_DOWN, -1, PM_MSG_STOP), 0);
	assert_int_equal(w->g.phase, PM_PHASE_RUNNING);
	/* Its DONE is not awaited: the others' finish the step. */
	rank_exit(w, 0, 0, 0, 0);
	child(w, 1, PM_MSG_DONE, 0, 1);
	child(w, 2, PM_MSG_DONE, 0, 1);
	child(w, 3, PM_MSG_DONE, 0, 1);
	child(w, 4, PM_MSG_DONE, 0, 1);
	assert_int_equal(w->g.phase, PM_PHASE_FINISHED);
	done(w);
}

static void test_health_failure_with_spares_is_node_lost(void **state)
{
	struct world *w = spare_node(3);
	const struct rec *r;
	(void)state;

	launch(w, 3);
	parent(w, PM_MSG_START, 0);
	parent(w, PM_MSG_STOP, 0);
	w->checks_rc = 0;
	rank_stopped(w, 0, 0);
	pm_gen_checks_done(&w->g, "gpu: 7 of 8 GPUs");
	r = last(w, A_UP, PM_MSG_LOST);
	assert_non_null(r);
	assert_int_equal(r->m.node, 3);
	assert_non_null(strstr(r->m.text, "failed a health check: gpu: 7 of 8 GPUs"));
	assert_int_equal(count(w, A_UP, -1, PM_MSG_FAIL), 0);
	done(w);
}

static void test_parent_candidates(void **state)
{
	struct world *w;
	int c[16], n;
	(void)state;

	/* fanout 2, 8 nodes: node 7's ancestors are 3, 1, 0; then node 2. */
	spares_of_next = 1;
	w = node(7, 8, 2, 8, 1, PM_RESTART_ON_FAILURE, 3, 0);
	n = pm_gen_parent_candidates(&w->g, c, 16);
	assert_int_equal(n, 4);
	assert_int_equal(c[0], 3);
	assert_int_equal(c[1], 1);
	assert_int_equal(c[2], 0);
	assert_int_equal(c[3], 2);
	done(w);
	/* fanout 32: node 4 asks node 0, then the lower children 1, 2, 3. */
	w = spare_node(4);
	n = pm_gen_parent_candidates(&w->g, c, 16);
	assert_int_equal(n, 4);
	assert_int_equal(c[0], 0);
	assert_int_equal(c[3], 3);
	done(w);
	/* Node 1 has nobody below it to ask but the root. */
	w = spare_node(1);
	assert_int_equal(pm_gen_parent_candidates(&w->g, c, 16), 1);
	done(w);
}

static void test_new_root_acts_with_a_majority(void **state)
{
	struct world *w = spare_node(1);
	const struct rec *r;
	int c;
	(void)state;

	launch(w, 1);
	parent(w, PM_MSG_START, 0);
	became = 0;
	clear(w);
	pm_gen_take_root(&w->g, "node n0 closed the connection");
	assert_int_equal(became, 1);
	assert_true(w->g.root);
	/* Its own ranks stop at once; no decision before most of the step. */
	assert_int_equal(count(w, A_RANK, 0, PM_MSG_STOP), 1);
	assert_int_equal(count(w, A_DOWN, -1, PM_MSG_REPLACE), 0);
	assert_int_equal(pm_gen_adopt(&w->g, 2), 0);
	pm_gen_child_joined(&w->g, 2);
	assert_int_equal(count(w, A_DOWN, -1, PM_MSG_REPLACE), 0);
	assert_int_equal(pm_gen_adopt(&w->g, 3), 1);
	pm_gen_child_joined(&w->g, 3);
	/* 1 + 2 + 3 of 6: not more than half yet. */
	assert_int_equal(count(w, A_DOWN, -1, PM_MSG_REPLACE), 0);
	/* An excluded node is not adopted; a node is adopted once. */
	assert_int_equal(pm_gen_adopt(&w->g, 2), -1);
	assert_int_equal(pm_gen_adopt(&w->g, 0), -1);
	assert_int_equal(pm_gen_adopt(&w->g, 4), 2);
	pm_gen_child_joined(&w->g, 4);
	r = last(w, A_DOWN, PM_MSG_REPLACE);
	assert_non_null(r);
	assert_int_equal(r->m.node, 0);
	assert_int_equal(r->m.status, 4);
	assert_non_null(event(w, "root_moved"));
	/* The stop completes without node 0 (nor node 5, not yet here: the
	 * expected count is the step less the lost). */
	rank_stopped(w, 0, 0);
	child(w, 2, PM_MSG_STOPPED, 0, 1);
	child(w, 3, PM_MSG_STOPPED, 0, 1);
	child(w, 4, PM_MSG_STOPPED, 0, 1);
	assert_int_equal(count(w, A_DOWN, -1, PM_MSG_START), 0);
	assert_int_equal(pm_gen_adopt(&w->g, 5), 3);
	pm_gen_child_joined(&w->g, 5);
	child(w, 5, PM_MSG_STOPPED, 0, 1);
	assert_int_equal(count(w, A_DOWN, -1, PM_MSG_START), 1);
	(void)c;
	done(w);
}

/* The old root handed over itself (its REPLACE came down) before it went:
 * the new root decides nothing again, but the old root's node is still
 * lost to the step's I/O side (jobend.c: srun on it is gone, and the job
 * must be ended; once it stayed RUNNING until Slurm's timeout). */
static void test_new_root_says_a_handed_over_root_lost(void **state)
{
	struct world *w = spare_node(1);
	struct pm_msg m;
	int i;
	(void)state;

	launch(w, 1);
	parent(w, PM_MSG_START, 0);
	parent(w, PM_MSG_STOP, 0);
	pm_msg_init(&m, PM_MSG_REPLACE);
	m.node = 0;
	m.rank = 0;
	m.status = 4;
	pm_msg_set_text(&m, "its slurmstepd went away");
	assert_int_equal(pm_gen_parent_msg(&w->g, &m), 0);
	nlost_said = 0;
	clear(w);
	pm_gen_take_root(&w->g, "node n0 closed the connection");
	for (i = 2; i <= 4; i++) {
		assert_true(pm_gen_adopt(&w->g, i) >= 0);
		pm_gen_child_joined(&w->g, i);
	}
	assert_non_null(event(w, "root_moved"));
	/* Not replaced twice. */
	assert_int_equal(count(w, A_DOWN, -1, PM_MSG_REPLACE), 0);
	assert_int_equal(nlost_said, 1);
	assert_int_equal(lost_said[0], 0);
	done(w);
}

static void test_new_root_without_majority_leaves(void **state)
{
	struct world *w = spare_node(1);
	const struct rec *r;
	(void)state;

	launch(w, 1);
	parent(w, PM_MSG_START, 0);
	pm_gen_take_root(&w->g, "no heartbeat for 5 s");
	clear(w);
	pm_gen_stop_timer(&w->g);
	/* Cut off: its ranks end, not as a failure, and nothing is decided. */
	r = last(w, A_RANK, PM_MSG_ABORT);
	assert_non_null(r);
	assert_int_equal(r->m.status, 0);
	assert_int_equal(count(w, A_DOWN, -1, PM_MSG_REPLACE), 0);
	assert_int_equal(w->g.phase, PM_PHASE_ABORTED);
	done(w);
}

/* Nodes 0 and 1 lost at once: node 2 takes the root's place with 3, 4
 * and 5 below it. Node 1 never comes back; the stop's deadline, armed
 * again after the election, declares it lost and the step goes on. */
static void test_new_root_declares_the_other_lost_node(void **state)
{
	struct world *w = spare_node(2);
	const struct rec *r;
	int i;
	(void)state;

	launch(w, 2);
	parent(w, PM_MSG_START, 0);
	clear(w);
	pm_gen_take_root(&w->g, "node n0 closed the connection");
	for (i = 3; i <= 5; i++) {
		assert_true(pm_gen_adopt(&w->g, i) >= 0);
		pm_gen_child_joined(&w->g, i);
	}
	assert_non_null(event(w, "root_moved"));
	/* The deadline is on after the election, not off. */
	r = last(w, A_STOPTIMER, 0);
	assert_non_null(r);
	assert_true(r->target > 0);
	rank_stopped(w, 0, 0);
	for (i = 3; i <= 5; i++)
		child(w, i, PM_MSG_STOPPED, 0, 1);
	assert_int_equal(count(w, A_DOWN, -1, PM_MSG_START), 0);
	clear(w);
	pm_gen_stop_timer(&w->g);
	assert_true(pm_gen_excluded(&w->g, 1));
	r = last(w, A_DOWN, PM_MSG_REPLACE);
	assert_non_null(r);
	assert_int_equal(r->m.node, 1);
	assert_int_equal(count(w, A_DOWN, -1, PM_MSG_START), 1);
	done(w);
}

static void test_orphan_reports_again_to_new_parent(void **state)
{
	/* fanout 2, 7 nodes: 1's children are 3, 4. Node 3 reported its
	 * subtree stopped to node 1, which is lost; it goes to node 0. */
	struct world *w;
	(void)state;

	spares_of_next = 1;
	w = node(3, 7, 2, 7, 1, PM_RESTART_ON_FAILURE, 3, 0);
	launch(w, 3);
	parent(w, PM_MSG_START, 0);
	parent(w, PM_MSG_STOP, 0);
	rank_stopped(w, 0, 0);
	assert_int_equal(count(w, A_UP, -1, PM_MSG_STOPPED), 1);
	pm_gen_lost(&w->g, 1, "closed");
	pm_gen_parent_changed(&w->g);
	assert_int_equal(count(w, A_UP, -1, PM_MSG_STOPPED), 2);
	assert_int_equal(count(w, A_UP, -1, PM_MSG_LOST), 1);
	done(w);
}

/* ---- what a user is told: the error, every rank running again ---- */

static void rank_run(struct world *w, int lrank, uint32_t gen, uint32_t flags)
{
	struct pm_msg m;
	msg(&m, PM_MSG_RANK_RUN, gen, 4242, flags);
	assert_int_equal(pm_gen_rank_msg(&w->g, lrank, &m), 0);
}

static void test_error_in_restart_line(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_ON_FAILURE, 1, 0);
	const struct rec *r;
	struct pm_msg m;
	(void)state;

	w->g.cf.verbose = false;
	launch(w, 0);
	clear(w);
	msg(&m, PM_MSG_RANK_EXIT, 0, EXIT(1), 0);
	pm_msg_set_text(&m, "ValueError: loss is nan\nTraceback:\n  File \"t.py\"\nValueError: loss is nan");
	assert_int_equal(pm_gen_rank_msg(&w->g, 1, &m), 0);
	/* Said without --procmgr-verbose: a decision. */
	assert_non_null(strstr(last(w, A_RANK, PM_MSG_PRINT)->m.text,
			       "procmgr: generation 0: rank 1 on n0 exited with code 1 (ValueError: "
			       "loss is nan); restarting all 2 ranks (restart 1 of 1)"));
	assert_non_null(strstr(event(w, "rank_failed"), "\"status\":\"exited with code 1 "
			       "(ValueError: loss is nan)\",\"error\":\"ValueError: loss is nan\\u000a"
			       "Traceback:\\u000a  File \\\"t.py\\\"\\u000aValueError: loss is nan\""));
	rank_stopped(w, 0, 0);
	/* What is not a decision needs --procmgr-verbose. */
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_PRINT), 1);
	assert_int_equal(w->g.gen, 1);
	/* Giving up: the root cause follows, and the failing rank alone is blamed. */
	clear(w);
	msg(&m, PM_MSG_RANK_EXIT, 1, EXIT(2), 0);
	pm_msg_set_text(&m, "boom\nline one\nboom");
	assert_int_equal(pm_gen_rank_msg(&w->g, 0, &m), 0);
	r = last(w, A_RANK, PM_MSG_ABORT);
	assert_non_null(r);
	assert_int_equal(r->m.count, PM_FLAG_BLAME);
	assert_int_equal(r->m.rank, 0);
	assert_int_equal(r->m.status, 2);
	assert_string_equal(r->m.text, "procmgr: rank 0 on n0 exited with code 2 (boom) in "
			    "generation 1; giving up after 1 restart (restart=on-failure:1)\n"
			    "procmgr: root cause: rank 0 on n0:\n  line one\n  boom");
	done(w);
}

static void test_hang_and_lost_carry_no_error(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_NEVER, 0, 0);
	const struct rec *r;
	(void)state;

	launch(w, 0);
	clear(w);
	pm_gen_rank_gone(&w->g, 1, "it exited or was killed");
	assert_null(strstr(event(w, "rank_failed"), "\"error\""));
	r = last(w, A_RANK, PM_MSG_ABORT);
	/* Said by another rank: nobody is blamed for its exit code. */
	assert_int_equal(r->m.count, 0);
	assert_null(strstr(r->m.text, "root cause"));
	done(w);
}

static void test_inner_node_reports_running(void **state)
{
	/* 4 nodes, fanout 2: node 1's subtree is {1, 3}. */
	struct world *w = node(1, 4, 2, 8, 2, PM_RESTART_ON_FAILURE, 1, 0);
	struct pm_msg m;
	const struct rec *r;
	(void)state;

	launch(w, 2);
	parent(w, PM_MSG_START, 0);
	clear(w);
	rank_run(w, 0, 0, 0);
	rank_run(w, 1, 0, 0);
	assert_int_equal(count(w, A_UP, -1, PM_MSG_RUNNING), 0); /* node 3 not yet */
	rank_run(w, 0, 0, PM_FLAG_BEAT);
	rank_run(w, 1, 0, PM_FLAG_BEAT);
	child(w, 3, PM_MSG_RUNNING, 0, 1);
	r = last(w, A_UP, PM_MSG_RUNNING);
	assert_non_null(r);
	assert_int_equal(r->m.count, 2);
	assert_int_equal(r->m.status, 0);
	assert_int_equal(count(w, A_UP, -1, PM_MSG_RUNNING), 1);
	/* A stale generation's report counts for nothing. */
	msg(&m, PM_MSG_RUNNING, 7, 1, 1);
	assert_int_equal(pm_gen_child_msg(&w->g, 3, &m), 0);
	assert_int_equal(count(w, A_UP, -1, PM_MSG_RUNNING), 1);
	msg(&m, PM_MSG_RUNNING, 0, 1, 1);
	assert_int_equal(pm_gen_child_msg(&w->g, 3, &m), 0);
	r = last(w, A_UP, PM_MSG_RUNNING);
	assert_int_equal(r->m.status, 1);
	assert_int_equal(count(w, A_UP, -1, PM_MSG_RUNNING), 2);
	/* Once per generation. */
	rank_run(w, 1, 0, 0);
	assert_int_equal(count(w, A_UP, -1, PM_MSG_RUNNING), 2);
	/* Before DONE, on the next generation again. */
	parent(w, PM_MSG_STOP, 0);
	rank_stopped(w, 0, 0);
	rank_stopped(w, 1, 0);
	parent(w, PM_MSG_START, 1);
	clear(w);
	rank_run(w, 0, 1, 0);
	rank_run(w, 1, 1, 0);
	child(w, 3, PM_MSG_RUNNING, 1, 1);
	assert_int_equal(count(w, A_UP, -1, PM_MSG_RUNNING), 1);
	done(w);
}

static void test_root_running_event(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_ON_FAILURE, 1, 0);
	const struct rec *r;
	(void)state;

	w->g.cf.beats = true;
	w->g.cf.verbose = false;
	w->now = 100;
	launch(w, 0);
	w->now = 130;
	rank_run(w, 0, 0, 0);
	assert_null(event(w, "running"));
	rank_run(w, 1, 0, 0);
	assert_string_equal(event(w, "running"), "\"gen\":0,\"ranks\":2,\"since_start_ms\":30");
	assert_int_equal(w->g.rec.gen, 0); /* no restart: nothing to recover from */
	w->now = 1000;
	rank_exit(w, 1, 0, EXIT(3), 0);
	w->now = 1010;
	rank_stopped(w, 0, 0);
	clear(w);
	w->now = 1050;
	rank_run(w, 0, 1, 0);
	rank_run(w, 1, 1, 0);
	assert_string_equal(event(w, "running"),
			    "\"gen\":1,\"ranks\":2,\"since_start_ms\":40,\"since_failure_ms\":50,"
			    "\"process_ms\":50,\"heartbeats\":true");
	assert_null(event(w, "heartbeating"));
	/* Running is not training yet: nothing said until the heartbeats. */
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_PRINT), 0);
	assert_int_equal(w->g.rec.gen, 1);
	assert_false(w->g.rec.beat);
	w->now = 1500;
	rank_run(w, 0, 1, PM_FLAG_BEAT);
	assert_null(event(w, "heartbeating"));
	rank_run(w, 1, 1, PM_FLAG_BEAT);
	assert_string_equal(event(w, "heartbeating"),
			    "\"gen\":1,\"ranks\":2,\"since_start_ms\":490,\"since_failure_ms\":500,"
			    "\"recovery_ms\":500,\"process_ms\":50");
	assert_true(w->g.rec.beat);
	assert_int_equal(w->g.rec.recovery_ms, 500);
	assert_int_equal(w->g.rec.process_ms, 50);
	/* Said always, once: the figure a user waits for. */
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_PRINT), 1);
	r = last(w, A_RANK, PM_MSG_PRINT);
	assert_non_null(strstr(r->m.text, "procmgr: generation 1: every rank training again 0.50 s "
			       "after the failure (procmgr's part 0.05 s, the program's start "
			       "0.45 s)"));
	done(w);
}

/* Issue 32 item 10: the hang's stacks took 2 s (up to the stack timeout)
 * before the restart; the recovery line and events say them apart, not
 * as procmgr's part of the recovery. */
static void test_hang_stacks_apart_in_recovery(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_ON_FAILURE, 1, 0);
	const struct rec *r;
	(void)state;

	w->g.cf.beats = true;
	launch(w, 0);
	w->now = 20000;
	rank_hung(w, 0, 0, "1700000002500 0");
	stacks_last_ms = 22000;
	w->now = 22050;
	rank_hung(w, 1, 0, "1700000002501 0");
	assert_int_equal(w->g.gen, 1);
	clear(w);
	w->now = 22150;
	rank_run(w, 0, 1, 0);
	rank_run(w, 1, 1, 0);
	assert_non_null(strstr(event(w, "running"), "\"since_failure_ms\":2150,"
			       "\"process_ms\":150,\"stacks_ms\":2000"));
	w->now = 22650;
	rank_run(w, 0, 1, PM_FLAG_BEAT);
	rank_run(w, 1, 1, PM_FLAG_BEAT);
	assert_non_null(strstr(event(w, "heartbeating"), "\"recovery_ms\":2650,"
			       "\"process_ms\":150,\"stacks_ms\":2000"));
	r = last(w, A_RANK, PM_MSG_PRINT);
	assert_non_null(r);
	assert_non_null(strstr(r->m.text, "every rank training again 2.65 s after the failure "
			       "(the hang's stacks 2.00 s, procmgr's part 0.15 s, the program's "
			       "start 0.50 s)"));
	stacks_last_ms = 0;
	done(w);
}

/* Ranks that restored their state from procmgr's memory before their
 * first heartbeat: the recovery line and event say which step and the
 * work lost (the most of any rank); a restore of an older generation
 * does not count. */
static void test_root_running_state_restored(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_ON_FAILURE, 1, 0);
	const struct rec *r;
	(void)state;

	w->g.cf.beats = true;
	w->g.cf.verbose = false;
	w->now = 100;
	launch(w, 0);
	rank_run(w, 0, 0, 0);
	rank_run(w, 1, 0, 0);
	pm_gen_state_restored(&w->g, 3, 9); /* generation 0's: forgotten */
	w->now = 1000;
	rank_exit(w, 1, 0, EXIT(3), 0);
	rank_stopped(w, 0, 0);
	clear(w);
	w->now = 1050;
	rank_run(w, 0, 1, 0);
	rank_run(w, 1, 1, 0);
	pm_gen_state_restored(&w->g, 25, 0);
	pm_gen_state_restored(&w->g, 24, 1);
	w->now = 1500;
	rank_run(w, 0, 1, PM_FLAG_BEAT);
	rank_run(w, 1, 1, PM_FLAG_BEAT);
	assert_string_equal(event(w, "heartbeating"),
			    "\"gen\":1,\"ranks\":2,\"since_start_ms\":500,\"since_failure_ms\":500,"
			    "\"recovery_ms\":500,\"process_ms\":50,\"state_restores\":2,"
			    "\"state_step\":24,\"lost_steps\":1");
	r = last(w, A_RANK, PM_MSG_PRINT);
	assert_non_null(strstr(r->m.text, "the program's start 0.45 s); state restored from "
			       "procmgr's memory (2 restores, step 24, 1 step of work lost)"));
	done(w);
}

/* A program that never heartbeat: the figure says at once that it is
 * only procmgr's part, not the time to training again, and how to have
 * that. */
static void test_root_running_without_heartbeats(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_ON_FAILURE, 1, 0);
	(void)state;

	w->g.cf.verbose = false;
	w->now = 100;
	launch(w, 0);
	rank_run(w, 0, 0, 0);
	rank_run(w, 1, 0, 0);
	w->now = 1000;
	rank_exit(w, 0, 0, EXIT(1), 0);
	rank_stopped(w, 1, 0);
	clear(w);
	w->now = 1320;
	rank_run(w, 0, 1, 0);
	rank_run(w, 1, 1, 0);
	assert_non_null(strstr(event(w, "running"), "\"process_ms\":320,\"heartbeats\":false"));
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_PRINT), 1);
	assert_non_null(strstr(last(w, A_RANK, PM_MSG_PRINT)->m.text,
			       "procmgr: generation 1: every rank running again 0.32 s after the "
			       "failure (procmgr's part only, not the time to training again: the "
			       "program sent no heartbeat; call procmgr.heartbeat(step) once per "
			       "step to have it)"));
	assert_int_equal(w->g.rec.process_ms, 320);
	assert_false(w->g.rec.beat);
	/* Its first heartbeats after all (supervisors report them with or
	 * without a hang timeout): the real figure follows. */
	w->now = 1800;
	rank_run(w, 0, 1, PM_FLAG_BEAT);
	rank_run(w, 1, 1, PM_FLAG_BEAT);
	assert_int_equal(count(w, A_RANK, -2, PM_MSG_PRINT), 2);
	assert_non_null(strstr(last(w, A_RANK, PM_MSG_PRINT)->m.text,
			       "procmgr: generation 1: every rank training again 0.80 s after the "
			       "failure (procmgr's part 0.32 s, the program's start 0.48 s)"));
	assert_true(w->g.rec.beat);
	done(w);
}

/* No hang timeout, but every rank heartbeat in generation 0 (the program
 * calls procmgr.heartbeat(), e.g. a --procmgr-warm=python: fork server's
 * script): the restart is reported when every rank trains again, in one
 * line, and procmgr's part alone is never given as the recovery. Every
 * later restart too. */
static void test_root_running_heartbeats_without_hang_timeout(void **state)
{
	struct world *w = node(0, 1, 32, 2, 2, PM_RESTART_ON_FAILURE, 2, 0);
	const char *e;
	unsigned gen;
	(void)state;

	w->g.cf.verbose = false;
	assert_false(w->g.cf.beats);
	w->now = 100;
	launch(w, 0);
	rank_run(w, 0, 0, 0);
	rank_run(w, 1, 0, 0);
	rank_run(w, 0, 0, PM_FLAG_BEAT);
	rank_run(w, 1, 0, PM_FLAG_BEAT);
	assert_non_null(event(w, "heartbeating"));
	for (gen = 1; gen <= 2; gen++) {
		uint64_t t = 1000 * gen * 10;
		char want[200];
		w->now = t;
		rank_exit(w, 0, gen - 1, EXIT(1), 0);
		rank_stopped(w, 1, gen - 1);
		clear(w);
		w->now = t + 520;
		rank_run(w, 0, gen, 0);
		rank_run(w, 1, gen, 0);
		e = event(w, "running");
		assert_non_null(e);
		assert_non_null(strstr(e, "\"process_ms\":520,\"heartbeats\":true"));
		/* Running is not training: nothing said yet. */
		assert_int_equal(count(w, A_RANK, -2, PM_MSG_PRINT), 0);
		w->now = t + 1300;
		rank_run(w, 0, gen, PM_FLAG_BEAT);
		assert_int_equal(count(w, A_RANK, -2, PM_MSG_PRINT), 0);
		rank_run(w, 1, gen, PM_FLAG_BEAT);
		assert_string_equal(event(w, "heartbeating") + strlen(event(w, "heartbeating")) -
					    strlen("\"recovery_ms\":1300,\"process_ms\":520"),
				    "\"recovery_ms\":1300,\"process_ms\":520");
		assert_int_equal(count(w, A_RANK, -2, PM_MSG_PRINT), 1);
		snprintf(want, sizeof(want), "procmgr: generation %u: every rank training again "
			 "1.30 s after the failure (procmgr's part 0.52 s, the program's start "
			 "0.78 s)", gen);
		assert_non_null(strstr(last(w, A_RANK, PM_MSG_PRINT)->m.text, want));
		assert_int_equal(w->g.rec.recovery_ms, 1300);
	}
	done(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_node_success),
		cmocka_unit_test(test_root_barrier),
		cmocka_unit_test(test_inner_node_reports_subtree),
		cmocka_unit_test(test_spare_runs_nothing_until_it_takes_a_slot),
		cmocka_unit_test(test_spare_replaces_lost_node),
		cmocka_unit_test(test_spares_run_out),
		cmocka_unit_test(test_lost_spare_restarts_nothing),
		cmocka_unit_test(test_health_failure_with_spares_is_node_lost),
		cmocka_unit_test(test_parent_candidates),
		cmocka_unit_test(test_new_root_acts_with_a_majority),
		cmocka_unit_test(test_new_root_says_a_handed_over_root_lost),
		cmocka_unit_test(test_new_root_without_majority_leaves),
		cmocka_unit_test(test_new_root_declares_the_other_lost_node),
		cmocka_unit_test(test_child_that_never_joins_is_lost),
		cmocka_unit_test(test_child_that_never_joins_goes_up),
		cmocka_unit_test(test_orphan_reports_again_to_new_parent),
		cmocka_unit_test(test_error_in_restart_line),
		cmocka_unit_test(test_hang_and_lost_carry_no_error),
		cmocka_unit_test(test_inner_node_reports_running),
		cmocka_unit_test(test_root_running_event),
		cmocka_unit_test(test_root_running_without_heartbeats),
		cmocka_unit_test(test_root_running_heartbeats_without_hang_timeout),
		cmocka_unit_test(test_root_running_state_restored),
		cmocka_unit_test(test_gen0_behind_barrier),
		cmocka_unit_test(test_late_supervisor),
		cmocka_unit_test(test_said_before_printer),
		cmocka_unit_test(test_restart_one_rank),
		cmocka_unit_test(test_restart_cycle),
		cmocka_unit_test(test_failure_while_stopping),
		cmocka_unit_test(test_health_fails_while_stopping),
		cmocka_unit_test(test_checks_pass_between_generations),
		cmocka_unit_test(test_checks_cannot_run),
		cmocka_unit_test(test_all_hung_at_once),
		cmocka_unit_test(test_hang_tie_is_inconclusive),
		cmocka_unit_test(test_stopped_after_exit),
		cmocka_unit_test(test_success_and_failure_together),
		cmocka_unit_test(test_always_policy),
		cmocka_unit_test(test_never_policy),
		cmocka_unit_test(test_budget_spent),
		cmocka_unit_test(test_lost_child),
		cmocka_unit_test(test_lost_supervisor),
		cmocka_unit_test(test_end_reaches_late_comers),
		cmocka_unit_test(test_delay_timer),
		cmocka_unit_test(test_inner_node_stop),
		cmocka_unit_test(test_inner_node_health_fails_before_restart),
		cmocka_unit_test(test_health_while_running_and_before_launch),
		cmocka_unit_test(test_stale_and_unexpected),
		cmocka_unit_test(test_abort_local),
		cmocka_unit_test(test_cannot_run),
		cmocka_unit_test(test_hang_blames_oldest),
		cmocka_unit_test(test_hang_capture_counts_in_recovery),
		cmocka_unit_test(test_hang_stacks_apart_in_recovery),
		cmocka_unit_test(test_hang_gives_up_after_stop),
		cmocka_unit_test(test_stop_deadline_own_rank),
		cmocka_unit_test(test_stop_deadline_child),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_lost_supervisor_while_stopping),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
