/* Unit tests of what the procmgr command asks the root's state machine
 * (pm_gen_request_restart, pm_gen_request_stop in decide.c), through a
 * transport that records every action. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "procmgrd/gen.h"

struct rec {
	int kind, target;
	struct pm_msg m;
	char name[32], text[1024];
};

enum { UP, DOWN, RANK, EVENT, OTHER };

struct world {
	struct rec r[128];
	int n;
	uint64_t now;
	struct pm_gen g;
};

static struct rec *add(struct world *w, int kind, int target)
{
	struct rec *r;

	assert_true(w->n < 128);
	r = &w->r[w->n++];
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->target = target;
	return r;
}

static void rec_up(void *c, const struct pm_msg *m) { add(c, UP, -1)->m = *m; }
static void rec_down(void *c, const struct pm_msg *m) { add(c, DOWN, -1)->m = *m; }
static void rec_child(void *c, int n, const struct pm_msg *m) { add(c, DOWN, n)->m = *m; }
static void rec_rank(void *c, int l, const struct pm_msg *m) { add(c, RANK, l)->m = *m; }
static void rec_timer(void *c, unsigned ms) { add(c, OTHER, (int)ms); }
static int rec_checks(void *c, char *why, size_t len) { (void)c, (void)why, (void)len; return 1; }
static void rec_log(void *c, const char *t) { snprintf(add(c, OTHER, -1)->text, 1024, "%s", t); }
static uint64_t rec_now(void *c) { return ((struct world *)c)->now; }
static void rec_event(void *c, const char *name, const char *f)
{
	struct rec *r = add(c, EVENT, -1);
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->text, sizeof(r->text), "%s", f);
}

static const struct pm_gen_ops ops = {
	.send_up = rec_up, .send_down = rec_down, .send_child = rec_child,
	.send_rank = rec_rank, .arm_timer = rec_timer, .run_checks = rec_checks,
	.event = rec_event, .log = rec_log, .now_ms = rec_now,
};

/* The root of 2 nodes (fanout 2), 2 local ranks of 4, never restarting on
 * its own: what happens is what was asked. */
static struct world *root(bool verbose)
{
	static const char *const names[] = { "n0", "n1" };
	struct world *w = calloc(1, sizeof(*w));
	struct pm_gen_config cf = { .node = 0, .nnodes = 2, .fanout = 2, .ntasks = 4,
				    .ntasks_local = 2, .verbose = verbose, .ops = &ops,
				    .names = names };
	struct pm_msg m;

	assert_non_null(w);
	cf.ctx = w;
	cf.policy.mode = PM_RESTART_NEVER;
	assert_int_equal(pm_gen_init(&w->g, &cf), 0);
	assert_int_equal(pm_gen_rank_hello(&w->g, 0, 0), 0);
	assert_int_equal(pm_gen_rank_hello(&w->g, 1, 1), 0);
	pm_gen_local_ready(&w->g);
	pm_msg_init(&m, PM_MSG_READY);
	m.count = 1;
	assert_int_equal(pm_gen_child_msg(&w->g, 1, &m), 0);
	assert_int_equal(w->g.phase, PM_PHASE_RUNNING);
	w->n = 0;
	return w;
}

static void done(struct world *w)
{
	pm_gen_free(&w->g);
	free(w);
}

static const struct rec *find(const struct world *w, int kind, int type, const char *name)
{
	int i;

	for (i = 0; i < w->n; i++)
		if (w->r[i].kind == kind && (!type || w->r[i].m.type == type) &&
		    (!name || !strcmp(w->r[i].name, name)))
			return &w->r[i];
	return NULL;
}

static void child_stopped(struct world *w, uint32_t gen)
{
	struct pm_msg m;

	pm_msg_init(&m, PM_MSG_STOPPED);
	m.gen = gen;
	m.count = 1;
	assert_int_equal(pm_gen_child_msg(&w->g, 1, &m), 0);
}

static void rank_stopped(struct world *w, int lrank, uint32_t gen)
{
	struct pm_msg m;

	pm_msg_init(&m, PM_MSG_RANK_STOPPED);
	m.gen = gen;
	assert_int_equal(pm_gen_rank_msg(&w->g, lrank, &m), 0);
}

static void test_restart_counts(void **state)
{
	struct world *w = root(false);
	const struct rec *r;
	char err[128];
	(void)state;

	w->now = 100;
	assert_int_equal(pm_gen_request_restart(&w->g, "alice (uid 1000)", err, sizeof(err)), 0);
	/* Said on srun's stderr even without --procmgr-verbose, and logged. */
	r = find(w, RANK, PM_MSG_PRINT, NULL);
	assert_non_null(r);
	assert_int_equal(r->target, 0);
	assert_non_null(strstr(r->m.text, "generation 0: alice (uid 1000) asked for a restart; "
				      "restarting all 4 ranks (restart 1)"));
	r = find(w, EVENT, 0, "restart_requested");
	assert_non_null(r);
	assert_string_equal(r->text, "\"gen\":0,\"by\":\"alice (uid 1000)\"");
	/* Every rank is stopped, here and below. */
	assert_int_equal(w->g.phase, PM_PHASE_STOPPING);
	assert_non_null(find(w, DOWN, PM_MSG_STOP, NULL));
	w->n = 0;
	w->now = 130;
	rank_stopped(w, 0, 0);
	rank_stopped(w, 1, 0);
	child_stopped(w, 0);
	/* Then generation 1 starts, a restart like any other. */
	assert_int_equal(w->g.phase, PM_PHASE_RUNNING);
	assert_int_equal(w->g.gen, 1);
	assert_int_equal(w->g.restarts, 1);
	r = find(w, EVENT, 0, "start");
	assert_non_null(r);
	assert_non_null(strstr(r->text, "\"gen\":1,\"restart\":1,\"since_failure_ms\":30"));
	done(w);
}

static void test_restart_refused_when_not_running(void **state)
{
	struct world *w = root(false);
	char err[128];
	(void)state;

	assert_int_equal(pm_gen_request_restart(&w->g, "root", err, sizeof(err)), 0);
	assert_int_equal(pm_gen_request_restart(&w->g, "root", err, sizeof(err)), -1);
	assert_string_equal(err, "generation 0 is already being stopped or restarted");
	done(w);
}

static void test_stop_ends_cleanly(void **state)
{
	struct world *w = root(false);
	const struct rec *r;
	char err[128];
	(void)state;

	assert_int_equal(pm_gen_request_stop(&w->g, "alice (uid 1000)", err, sizeof(err)), 0);
	assert_int_equal(w->g.phase, PM_PHASE_ABORTED);
	r = find(w, DOWN, PM_MSG_ABORT, NULL);
	assert_non_null(r);
	/* Exit code 0: ended on purpose; rank 0 says who asked. */
	assert_int_equal(r->m.status, 0);
	assert_int_equal(r->m.rank, 0);
	assert_non_null(strstr(r->m.text, "alice (uid 1000) asked to stop the step"));
	r = find(w, RANK, PM_MSG_ABORT, NULL);
	assert_non_null(r);
	assert_non_null(find(w, EVENT, 0, "stop_requested"));
	/* Once ended, nothing more can be asked. */
	assert_int_equal(pm_gen_request_stop(&w->g, "root", err, sizeof(err)), -1);
	assert_string_equal(err, "the step has already ended");
	assert_int_equal(pm_gen_request_restart(&w->g, "root", err, sizeof(err)), -1);
	done(w);
}

static void test_stop_while_restarting(void **state)
{
	struct world *w = root(false);
	char err[128];
	(void)state;

	assert_int_equal(pm_gen_request_restart(&w->g, "root", err, sizeof(err)), 0);
	assert_int_equal(pm_gen_request_stop(&w->g, "root", err, sizeof(err)), 0);
	assert_int_equal(w->g.phase, PM_PHASE_ABORTED);
	done(w);
}

static void test_only_the_root(void **state)
{
	static const char *const names[] = { "n0", "n1" };
	struct world *w = calloc(1, sizeof(*w));
	struct pm_gen_config cf = { .node = 1, .nnodes = 2, .fanout = 2, .ntasks = 2,
				    .ntasks_local = 1, .ops = &ops, .names = names };
	char err[128];
	(void)state;

	cf.ctx = w;
	assert_int_equal(pm_gen_init(&w->g, &cf), 0);
	assert_int_equal(pm_gen_request_restart(&w->g, "root", err, sizeof(err)), -1);
	assert_string_equal(err, "only the root node decides");
	assert_int_equal(pm_gen_request_stop(&w->g, "root", err, sizeof(err)), -1);
	assert_string_equal(err, "only the root node decides");
	done(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restart_counts),
		cmocka_unit_test(test_restart_refused_when_not_running),
		cmocka_unit_test(test_stop_ends_cleanly),
		cmocka_unit_test(test_stop_while_restarting),
		cmocka_unit_test(test_only_the_root),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
