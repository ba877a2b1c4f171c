/* The slow-node detector's I/O (slowlink.c) in-process: four of
 * stepnet.c's nodes in a tree (0 <- 1, 2; 1 <- 3) over loopback, their supervisors
 * reporting each step (PM_MSG_RANK_STEP) as procmgr-rank does, summaries
 * going up every interval on the wall-clock grid (merged at node 1), the
 * root judging. Checked: the root's `slow` and `slow_cleared` events, the
 * line on srun's stderr (a PRINT to rank 0's supervisor), the verdict down
 * the tree to the slow node's status, both kinds of evidence, and with
 * --procmgr-evict-slow a spare taking the slow node's slot at the root's
 * next step boundary. The rules themselves: test_slow.c, test_slowsum.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/sys.h"
#include "procmgrd/step.h"
#include "pump.h"
#include "stepnet.h"

static char tmp[64];
static int nn;              /* nodes in the tree */
static int slow;            /* the slow node */
static struct peer sup[MAXN];
static double compute[MAXN]; /* ms a step per node, < 0: not reported */
static unsigned lag[MAXN];   /* ms a node reaches each step after the others */
static uint64_t step, next_ms;
static const char *want;     /* in the root's event log */

static void tweak(struct pm_step *s)
{
	s->opts.slow_interval_ms = 100;
	s->opts.verbose = true;
}

static bool tree_joined(void *arg)
{
	(void)arg;
	for (int i = 1; i < nn; i++)
		if (!nodes[i].s.parent_ok)
			return false;
	return true;
}

static bool started(void *arg)
{
	(void)arg;
	for (int i = 0; i < nn; i++) {
		bool got = false;
		if (nodes[i].s.gen.node_slot && nodes[i].s.gen.node_slot[i] < 0)
			continue; /* a spare runs nothing */
		for (int k = 0; k < sup[i].n && k < 16; k++)
			got |= sup[i].got[k].type == PM_MSG_START;
		if (!got)
			return false;
	}
	return true;
}

/* Nodes 0..n-1 in a tree of fan-out 2, each with a supervisor, generation 0 running,
 * the root's event log open. */
static void tree_up(int n, unsigned spares, void (*tw)(struct pm_step *))
{
	snprintf(tmp, sizeof(tmp), "/tmp/pm-test-slow-XXXXXX");
	assert_non_null(mkdtemp(tmp));
	nn = n;
	node_tweak = tw;
	for (int i = 0; i < n; i++) {
		node_up(i, n, 2, 1, spares, 0, 2 * i + 1 < n);
		assert_int_equal(pm_slowlink_init(&nodes[i].s), 0);
		compute[i] = 100;
		lag[i] = 0;
	}
	snprintf(nodes[0].s.events_path, sizeof(nodes[0].s.events_path), "%s/e.jsonl", tmp);
	pm_step_ops.became_root(&nodes[0].s);
	for (int i = 1; i < n; i++)
		attach_to_parent(&nodes[i]);
	assert_true(pm_pump(&loop, tree_joined, NULL, 5000));
	for (int i = 0; i < n; i++) {
		rank_pair(&nodes[i], &sup[i]);
		rank_hello(&sup[i], 0, i);
		pm_gen_local_ready(&nodes[i].s.gen);
	}
	assert_true(pm_pump(&loop, started, NULL, 5000));
	step = 1;
	next_ms = 0;
}

static void tree_down(void)
{
	char cmd[128];

	for (int i = 0; i < nn; i++)
		peer_free(&sup[i]);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	assert_int_equal(system(cmd), 0);
}

/* For pm_pump: every 10 ms each supervisor says its rank reached the next
 * five steps (its lag later, with its compute time): enough steps in each
 * interval for a verdict (min_steps) even when a loaded machine runs this
 * late; true once the root's event log holds want. */
static bool feed(void *arg)
{
	uint64_t now = pm_now_ms();
	const char *log;
	(void)arg;

	if (now >= next_ms) {
		uint64_t at = (uint64_t)(pm_wall_s() * 1000);
		next_ms = now + 10;
		for (int b = 0; b < 5; b++, step++)
			for (int i = 0; i < nn; i++) {
				struct pm_msg m;
				char text[96];
				if (!sup[i].c)
					continue;
				snprintf(text, sizeof(text), "%llu %llu %.1f",
					 (unsigned long long)step,
					 (unsigned long long)(at + (uint64_t)b + lag[i]), compute[i]);
				set_text(&m, PM_MSG_RANK_STEP, text);
				m.gen = nodes[0].s.gen.gen;
				(void)pm_conn_send(sup[i].c, &m);
			}
	}
	log = slurp(nodes[0].s.events_path);
	return log && strstr(log, want);
}

static bool printed(struct peer *p, const char *text)
{
	for (int k = 0; k < p->n && k < 16; k++)
		if (p->got[k].type == PM_MSG_PRINT && strstr(p->got[k].text, text))
			return true;
	return false;
}

static bool flagged(void *arg)
{
	(void)arg;
	return pm_slowlink_state(&nodes[slow].s) != NULL;
}

static bool cleared(void *arg)
{
	(void)arg;
	return pm_slowlink_state(&nodes[slow].s) == NULL;
}

/* Node 3's ranks compute three times as long as the others': flagged
 * (event, srun's stderr, its status says so), then cleared when it is as
 * fast again. Its summaries and the verdict pass node 1. */
static void test_compute(void **state)
{
	const char *log;
	(void)state;

	tree_up(4, 0, tweak);
	slow = 3;
	compute[3] = 300;
	want = "\"event\":\"slow\"";
	assert_true(pm_pump(&loop, feed, NULL, 20000));
	log = slurp(nodes[0].s.events_path);
	assert_non_null(strstr(log, "\"event\":\"slow\",\"gen\":0,\"node\":\"127.0.0.4\","
				    "\"evidence\":\"compute\",\"ratio\":3.000,\"intervals\":"));
	assert_null(strstr(log, "\"evicted\""));
	assert_true(pm_pump(&loop, flagged, NULL, 5000));
	assert_string_equal(pm_slowlink_state(&nodes[3].s), "compute:3.00");
	assert_null(pm_slowlink_state(&nodes[1].s));
	assert_true(printed(&sup[0], "procmgr: node 127.0.0.4 is slow: its ranks' compute time "
				     "per step 3.00x the job's median (evidence: compute time"));
	compute[3] = 100;
	want = "\"event\":\"slow_cleared\"";
	assert_true(pm_pump(&loop, feed, NULL, 20000));
	assert_true(pm_pump(&loop, cleared, NULL, 5000));
	assert_true(printed(&sup[0], "procmgr: node 127.0.0.4 is no longer slow"));
	tree_down();
}

/* No compute times: node 2 is last to reach every step, by more than the
 * heartbeats' resolution. */
static void test_phase(void **state)
{
	const char *log;
	(void)state;

	tree_up(4, 0, tweak);
	slow = 2;
	for (int i = 0; i < 4; i++)
		compute[i] = -1;
	lag[2] = 8;
	want = "\"event\":\"slow\"";
	assert_true(pm_pump(&loop, feed, NULL, 20000));
	log = slurp(nodes[0].s.events_path);
	assert_non_null(strstr(log, "\"node\":\"127.0.0.3\",\"evidence\":\"phase\",\"ratio\":"));
	assert_true(pm_pump(&loop, flagged, NULL, 5000));
	assert_int_equal(strncmp(pm_slowlink_state(&nodes[2].s), "phase:", 6), 0);
	assert_true(printed(&sup[0], "procmgr: node 127.0.0.3 is slow: last to reach"));
	tree_down();
}

static void tweak_evict(struct pm_step *s)
{
	tweak(s);
	s->opts.evict_slow = true;
}

/* --procmgr-evict-slow with a free spare: the slow node is replaced at
 * the root's next step, the spare (node 3) takes its slot. */
static void test_evict(void **state)
{
	const char *log;
	(void)state;

	tree_up(4, 1, tweak_evict);
	slow = 2;
	compute[2] = 300;
	want = "\"event\":\"node_replaced\"";
	assert_true(pm_pump(&loop, feed, NULL, 20000));
	log = slurp(nodes[0].s.events_path);
	assert_non_null(strstr(log, "\"node\":\"127.0.0.3\",\"evidence\":\"compute\",\"ratio\":3.000"));
	assert_non_null(strstr(log, ",\"evicted\":true"));
	assert_non_null(strstr(log, "\"event\":\"node_replaced\",\"gen\":0,\"node\":\"127.0.0.3\","
				    "\"spare\":\"127.0.0.4\""));
	assert_true(printed(&sup[0], "; replacing it with a spare at the next step boundary"));
	assert_int_equal(nodes[0].s.gen.node_slot[3], 2);
	tree_down();
}

/* Off (no interval): nothing set up; a summary from a child is still
 * that message, and taken. A summary that does not parse is said, not
 * fatal. */
static void test_off_and_bad(void **state)
{
	struct pm_msg m;
	(void)state;

	node_up(0, 2, 2, 1, 0, 0, false);
	assert_int_equal(pm_slowlink_init(&nodes[0].s), 0);
	assert_null(nodes[0].s.slow);
	set_text(&m, PM_MSG_SLOW, "whatever");
	assert_int_equal(pm_slowlink_child(&nodes[0].s, &m), 1);
	assert_null(pm_slowlink_state(&nodes[0].s));
	set_text(&m, PM_MSG_PING, "");
	assert_int_equal(pm_slowlink_child(&nodes[0].s, &m), 0);
	assert_int_equal(pm_slowlink_parent(&nodes[0].s, &m), 0);
	node_tweak = tweak;
	node_up(1, 2, 2, 1, 0, 0, false);
	assert_int_equal(pm_slowlink_init(&nodes[1].s), 0);
	/* A summary of another generation goes up as it is. */
	set_text(&m, PM_MSG_SLOW, "not a summary");
	m.gen = 5;
	assert_int_equal(pm_slowlink_child(&nodes[1].s, &m), 1);
	assert_int_equal(nodes[1].s.upq_len, 1);
	assert_string_equal(nodes[1].s.upq[0].text, "not a summary");
	m.gen = 0; /* this node's: merged, and this one does not parse */
	assert_int_equal(pm_slowlink_child(&nodes[1].s, &m), 1);
	assert_int_equal(nodes[1].s.upq_len, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_compute, setup, teardown),
		cmocka_unit_test_setup_teardown(test_phase, setup, teardown),
		cmocka_unit_test_setup_teardown(test_evict, setup, teardown),
		cmocka_unit_test_setup_teardown(test_off_and_bad, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
