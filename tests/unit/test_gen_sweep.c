/* Unit tests of a sweep's end and node losses in the generation machine
 * (runtime/procmgrd/gen_sweep.c, through decide.c's pm_gen_root_lost): a
 * lost node that is not the root goes to the sweep (its trials are
 * requeued there) with the nodes below it in the tree, and the step goes
 * on; before launch, with spares or without the op, a loss ends the step. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "procmgrd/gen.h"

struct world {
	struct pm_gen g;
	int launched, lost[16], nlost, aborts, finishes;
	char events[4096];
};

static void no_msg(void *ctx, const struct pm_msg *m)
{
	struct world *w = ctx;

	w->aborts += m->type == PM_MSG_ABORT;
	w->finishes += m->type == PM_MSG_FINISH;
}
static void no_child(void *ctx, int node, const struct pm_msg *m)
{
	(void)node;
	no_msg(ctx, m);
}
static void no_rank(void *ctx, int lrank, const struct pm_msg *m)
{
	(void)ctx;
	(void)lrank;
	(void)m;
}
static void no_timer(void *ctx, unsigned ms)
{
	(void)ctx;
	(void)ms;
}
static int no_checks(void *ctx, char *why, size_t len)
{
	(void)ctx;
	(void)why;
	(void)len;
	return 1;
}
static void rec_event(void *ctx, const char *name, const char *fields)
{
	struct world *w = ctx;
	size_t off = strlen(w->events);

	snprintf(w->events + off, sizeof(w->events) - off, "%s{%s}\n", name, fields);
}
static void no_log(void *ctx, const char *text)
{
	(void)ctx;
	(void)text;
}
static uint64_t zero(void *ctx)
{
	(void)ctx;
	return 0;
}
static void rec_launch(void *ctx) { ((struct world *)ctx)->launched++; }
static int rec_lost(void *ctx, int node, const char *why)
{
	struct world *w = ctx;
	int i;

	assert_non_null(why);
	for (i = 0; i < w->nlost; i++)
		if (w->lost[i] == node)
			return 0;
	w->lost[w->nlost++] = node;
	return 1;
}

static struct pm_gen_ops ops = {
	.send_up = no_msg, .send_down = no_msg, .send_child = no_child, .send_rank = no_rank,
	.arm_timer = no_timer, .arm_stop = no_timer, .run_checks = no_checks,
	.event = rec_event, .log = no_log, .now_ms = zero, .sweep_launch = rec_launch,
	.sweep_node_lost = rec_lost,
};

/* The root of a sweep on 7 nodes, fanout 2 (1 and 2 below it, 3 and 4
 * below 1, 5 and 6 below 2), one slot each; launched when launch. */
static struct world *root(int spares, bool launch)
{
	static const char *const names[] = { "n0", "n1", "n2", "n3", "n4", "n5", "n6" };
	struct world *w = calloc(1, sizeof(*w));
	struct pm_gen_config cf = {
		.node = 0, .nnodes = 7, .fanout = 2, .ntasks = 7, .ntasks_local = 1,
		.names = names, .ops = &ops, .sweep = true, .spares = spares,
	};
	struct pm_msg m;

	assert_non_null(w);
	cf.ctx = w;
	cf.policy.mode = PM_RESTART_ON_FAILURE;
	cf.policy.max_restarts = 3;
	assert_int_equal(pm_gen_init(&w->g, &cf), 0);
	if (!launch)
		return w;
	assert_int_equal(pm_gen_rank_hello(&w->g, 0, 0), 0);
	pm_gen_local_ready(&w->g);
	pm_msg_init(&m, PM_MSG_READY);
	m.count = 3;
	assert_int_equal(pm_gen_child_msg(&w->g, 1, &m), 0);
	assert_int_equal(pm_gen_child_msg(&w->g, 2, &m), 0);
	assert_int_equal(w->launched, 1);
	return w;
}

static void done(struct world *w)
{
	pm_gen_free(&w->g);
	free(w);
}

static void test_lost_leaf_goes_to_the_sweep(void **state)
{
	struct world *w = root(0, true);

	(void)state;
	pm_gen_child_lost(&w->g, 2, "connection closed");
	/* Node 2 and the two below it, once each; nothing ends. */
	assert_int_equal(w->nlost, 3);
	assert_int_equal(w->lost[0], 2);
	assert_int_equal(w->lost[1], 5);
	assert_int_equal(w->lost[2], 6);
	assert_true(pm_gen_excluded(&w->g, 2) && pm_gen_excluded(&w->g, 5) &&
		    pm_gen_excluded(&w->g, 6));
	assert_false(pm_gen_excluded(&w->g, 1) || pm_gen_excluded(&w->g, 3));
	assert_false(pm_gen_terminal(&w->g));
	assert_int_equal(w->aborts, 0);
	assert_non_null(strstr(w->events, "node_lost{\"gen\":0,\"node\":\"n2\",\"reason\":"
				"\"connection closed\",\"sweep\":\"requeue\"}"));
	assert_non_null(strstr(w->events, "\"node\":\"n5\",\"reason\":\"below lost node n2"));
	assert_null(strstr(strstr(w->events, "\"n5\"") + 1, "\"n5\""));
	/* Its LOST said again by another path: not twice. */
	{
		struct pm_msg m;
		pm_msg_init(&m, PM_MSG_LOST);
		m.node = 5;
		assert_int_equal(pm_gen_child_msg(&w->g, 1, &m), 0);
	}
	assert_int_equal(w->nlost, 3);
	assert_null(strstr(strstr(w->events, "\"n5\"") + 1, "\"n5\""));
	/* Node 1 with the two below it. */
	pm_gen_child_lost(&w->g, 1, NULL);
	assert_int_equal(w->nlost, 6);
	assert_int_equal(w->lost[3], 1);
	/* The sweep's end is the step's. */
	pm_gen_sweep_end(&w->g, 0, "");
	assert_true(pm_gen_terminal(&w->g));
	assert_int_equal(w->finishes, 1);
	done(w);
}

/* With spares the subtree finds another parent: only the node goes to the
 * sweep (its spare joins there), and the machine replaces nothing. */
static void test_spares_only_the_node(void **state)
{
	struct world *w = root(2, true);

	(void)state;
	pm_gen_child_lost(&w->g, 2, "connection closed");
	assert_int_equal(w->nlost, 1);
	assert_int_equal(w->lost[0], 2);
	assert_true(pm_gen_excluded(&w->g, 2));
	assert_false(pm_gen_excluded(&w->g, 5) || pm_gen_excluded(&w->g, 6));
	assert_false(pm_gen_terminal(&w->g));
	assert_int_equal(w->aborts, 0);
	assert_null(strstr(w->events, "node_replaced"));
	assert_null(strstr(w->events, "start{"));
	assert_non_null(strstr(w->events, "\"node\":\"n2\",\"reason\":\"connection closed\","
				"\"sweep\":\"requeue\""));
	done(w);
}

static void test_lost_before_launch_ends_the_step(void **state)
{
	struct world *w = root(0, false);

	(void)state;
	pm_gen_child_lost(&w->g, 2, "connection closed");
	assert_int_equal(w->nlost, 0);
	assert_true(pm_gen_terminal(&w->g));
	assert_int_equal(w->aborts, 1);
	done(w);
}

static void test_without_the_op_the_step_ends(void **state)
{
	struct world *w;

	(void)state;
	ops.sweep_node_lost = NULL;
	w = root(0, true);
	pm_gen_child_lost(&w->g, 1, "connection closed");
	assert_true(pm_gen_terminal(&w->g));
	assert_int_equal(w->aborts, 1);
	ops.sweep_node_lost = rec_lost;
	done(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lost_leaf_goes_to_the_sweep),
		cmocka_unit_test(test_spares_only_the_node),
		cmocka_unit_test(test_lost_before_launch_ends_the_step),
		cmocka_unit_test(test_without_the_op_the_step_ends),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
