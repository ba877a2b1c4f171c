/* Unit tests of runtime/sweep/sweep_loss.c (a node lost in a sweep: the
 * rules as a table, the next spare, the journal's lines and their replay),
 * and of the two additions it needs: pm_sq_recovered (a trial given the
 * end its journal says) and pm_pack_node_join (a spare kept out joins). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sweep/sweep_loss.h"
#include "sweep/sweep_pack.h"
#include "sweep/sweep_queue.h"

#define CHECK(cond, ...) do { if (!(cond)) fail_msg(__VA_ARGS__); } while (0)

static void test_rules_table(void **state)
{
	static const struct {
		struct pm_sl_case c;
		unsigned want;
	} rows[] = {
		/* spares root left again */
		{ { false, false, false, false }, PM_SL_REQUEUE | PM_SL_SUBTREE },
		{ { false, false, true, false }, PM_SL_REQUEUE | PM_SL_SUBTREE },
		{ { false, true, false, false }, PM_SL_END },
		{ { false, true, true, false }, PM_SL_END },
		{ { true, false, false, false }, PM_SL_REQUEUE },
		{ { true, false, true, false }, PM_SL_REQUEUE | PM_SL_SPARE },
		{ { true, true, false, false }, PM_SL_REBUILD },
		{ { true, true, true, false }, PM_SL_REBUILD | PM_SL_SPARE },
		{ { false, false, false, true }, PM_SL_NOTHING },
		{ { true, true, true, true }, PM_SL_NOTHING },
		{ { true, false, true, true }, PM_SL_NOTHING },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		CHECK(pm_sl_decide(&rows[i].c) == rows[i].want, "row %zu: %u, want %u", i,
		      pm_sl_decide(&rows[i].c), rows[i].want);
	/* Never both the end and a requeue or a rebuild. */
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		unsigned a = pm_sl_decide(&rows[i].c);
		CHECK(!(a & PM_SL_END) || a == PM_SL_END, "row %zu", i);
		CHECK(!((a & PM_SL_REQUEUE) && (a & PM_SL_REBUILD)), "row %zu", i);
	}
}

static void test_next_spare(void **state)
{
	bool pool[6] = { true, true, true, true, false, false };
	bool lost[6] = { false };

	(void)state;
	assert_int_equal(pm_sl_next_spare(pool, lost, NULL, 6, 4), 4);
	pool[4] = true;
	assert_int_equal(pm_sl_next_spare(pool, lost, NULL, 6, 4), 5);
	lost[5] = true; /* a spare lost before it was needed */
	assert_int_equal(pm_sl_next_spare(pool, lost, NULL, 6, 4), -1);
	lost[5] = false;
	pool[5] = true;
	assert_int_equal(pm_sl_next_spare(pool, lost, NULL, 6, 4), -1);
	/* A node below first_spare that left the pool is not a spare. */
	pool[1] = false;
	assert_int_equal(pm_sl_next_spare(pool, lost, NULL, 6, 4), -1);
	assert_int_equal(pm_sl_next_spare(pool, lost, NULL, 6, -3), 1);
	/* A node not ready (its slots not back yet) waits. */
	{
		bool ready[6] = { true, false, true, true, true, true };
		assert_int_equal(pm_sl_next_spare(pool, lost, ready, 6, 0), -1);
		ready[1] = true;
		assert_int_equal(pm_sl_next_spare(pool, lost, ready, 6, 0), 1);
	}
}

static void test_journal_lines(void **state)
{
	struct pm_sl_end e = { PM_TS_DONE, 0, 1, 2, 61234, "" };
	char buf[512];

	(void)state;
	assert_int_equal(pm_sl_journal_line("lr0.1", &e, buf, sizeof(buf)), 25);
	assert_string_equal(buf, "lr0.1\tdone\t0\t1\t2\t61234\t-\n");
	e.state = PM_TS_FAILED;
	e.exit_code = 3;
	snprintf(e.error, sizeof(e.error), "Runtime\tError\nat x");
	pm_sl_journal_line("7", &e, buf, sizeof(buf));
	assert_string_equal(buf, "7\tfailed\t3\t1\t2\t61234\tRuntime Error at x\n");
	/* Too small: -1 and nothing half written. */
	assert_int_equal(pm_sl_journal_line("7", &e, buf, 10), -1);
	assert_string_equal(buf, "");
	assert_int_equal(pm_sl_journal_root(3, buf, sizeof(buf)), 8);
	assert_string_equal(buf, "#root 3\n");
	assert_int_equal(pm_sl_journal_root(3, buf, 4), -1);
	assert_string_equal(buf, "");
}

/* What a root writes is what a new root reads, trial by trial. */
static void test_replay_round_trip(void **state)
{
	static const char *const names[] = { "a", "b", "c", "d" };
	struct pm_sl_end e[4], got[4];
	struct pm_sl_replay st;
	char text[2048];
	size_t off = 0;
	int i;

	(void)state;
	memset(e, 0, sizeof(e));
	e[0] = (struct pm_sl_end){ PM_TS_DONE, 0, 0, 1, 1500, "" };
	e[2] = (struct pm_sl_end){ PM_TS_FAILED, 137, 2, 0, 99, "Killed" };
	off += (size_t)pm_sl_journal_line("c", &e[2], text + off, sizeof(text) - off);
	off += (size_t)pm_sl_journal_root(1, text + off, sizeof(text) - off);
	off += (size_t)pm_sl_journal_line("a", &e[0], text + off, sizeof(text) - off);
	assert_int_equal(pm_sl_replay(text, off, names, 4, got, &st), 0);
	assert_int_equal(st.ended, 2);
	assert_int_equal(st.roots, 1);
	assert_int_equal(st.unknown + st.duplicate + st.bad, 0);
	for (i = 0; i < 4; i++) {
		if (i == 0 || i == 2) {
			CHECK(got[i].state == e[i].state && got[i].exit_code == e[i].exit_code &&
			      got[i].restarts == e[i].restarts && got[i].requeues == e[i].requeues &&
			      got[i].runtime_ms == e[i].runtime_ms &&
			      !strcmp(got[i].error, e[i].error), "trial %s", names[i]);
		} else {
			CHECK(got[i].state == PM_TS_QUEUED && got[i].exit_code == -1,
			      "trial %s has no end", names[i]);
		}
	}
}

/* Lines a replay must not believe, as a table: the text and what counts. */
static void test_replay_refuses(void **state)
{
	static const char *const names[] = { "a", "b" };
	static const struct {
		const char *text;
		int ended, unknown, duplicate, bad, roots;
		int a_exit; /* a's exit code after it, -1: none */
	} rows[] = {
		{ "", 0, 0, 0, 0, 0, -1 },
		/* the root lost while writing: the torn last line is not an end */
		{ "a\tdone\t0\t0\t0\t5\t-", 0, 0, 0, 1, 0, -1 },
		{ "b\tdone\t0\t0\t0\t5\t-\na\tfailed\t2\t0\t0", 1, 0, 0, 1, 0, -1 },
		{ "zz\tdone\t0\t0\t0\t5\t-\n", 0, 1, 0, 0, 0, -1 },
		/* the first line of a trial wins */
		{ "a\tfailed\t4\t0\t0\t5\tx\na\tdone\t0\t0\t0\t5\t-\n", 1, 0, 1, 0, 0, 4 },
		{ "a\trunning\t0\t0\t0\t5\t-\n", 0, 0, 0, 1, 0, -1 },
		{ "a\tdone\t-1\t0\t0\t5\t-\n", 0, 0, 0, 1, 0, -1 },
		{ "a\tdone\t0\t0\t0\n", 0, 0, 0, 1, 0, -1 },
		{ "a\tdone\t0\t0\t0\t5x\t-\n", 0, 0, 0, 1, 0, -1 },
		{ "a\tdone\t99999999999\t0\t0\t5\t-\n", 0, 0, 0, 1, 0, -1 },
		{ "\tdone\t0\t0\t0\t5\t-\n", 0, 0, 0, 1, 0, -1 },
		{ "a\n", 0, 0, 0, 1, 0, -1 },
		{ "a\tdone\n", 0, 0, 0, 1, 0, -1 },
		{ "#root 2\n#root 5\n#root x\n", 0, 0, 0, 1, 2, -1 },
		{ "\n\n", 0, 0, 0, 2, 0, -1 },
	};
	struct pm_sl_end got[2];
	struct pm_sl_replay st;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		assert_int_equal(pm_sl_replay(rows[i].text, strlen(rows[i].text), names, 2, got,
					      &st), 0);
		CHECK(st.ended == rows[i].ended && st.unknown == rows[i].unknown &&
		      st.duplicate == rows[i].duplicate && st.bad == rows[i].bad &&
		      st.roots == rows[i].roots,
		      "row %zu: ended %d unknown %d duplicate %d bad %d roots %d", i, st.ended,
		      st.unknown, st.duplicate, st.bad, st.roots);
		CHECK(got[0].exit_code == rows[i].a_exit, "row %zu: a's exit %d", i,
		      got[0].exit_code);
	}
	/* A NUL inside a line: not a line. */
	assert_int_equal(pm_sl_replay("a\0tdone\n", 8, names, 2, got, &st), 0);
	assert_int_equal(st.bad, 1);
	/* No trials at all. */
	assert_int_equal(pm_sl_replay("a\tdone\t0\t0\t0\t5\t-\n", 18, names, 0, got, &st), 0);
	assert_int_equal(st.unknown, 1);
}

static void test_attempt_base(void **state)
{
	(void)state;
	assert_int_equal(pm_sl_attempt_base(0), 1);
	assert_int_equal(pm_sl_attempt_base(-1), 1);
	assert_int_equal(pm_sl_attempt_base(1), 1u << 24);
	assert_int_equal(pm_sl_attempt_base(2), 2u << 24);
	assert_int_equal(pm_sl_attempt_base(1000), 255u << 24);
	/* Each root's range lies above the one before. */
	CHECK(pm_sl_attempt_base(1) > pm_sl_attempt_base(0) + 1000000, "a range");
}

static void queue(struct pm_sq *q, int nodes, int n)
{
	struct pm_sq_cfg cfg = { .nodes = nodes, .slots_per_node = 2, .port_first = 20000,
				 .port_count = nodes * 2 };
	int ranks[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
	char err[200];

	cfg.policy.mode = PM_RESTART_NEVER;
	assert_int_equal(pm_sq_init(q, &cfg, ranks, n, err, sizeof(err)), 0);
}

/* A new root gives the journal's ends to its queue; the rest runs. */
static void test_recovered(void **state)
{
	struct pm_sq q;
	int start[8], n;

	(void)state;
	queue(&q, 2, 4);
	assert_int_equal(pm_sq_recovered(&q, 1, PM_TS_DONE, 0, 1, 2, 500, "", 10000), 0);
	assert_int_equal(pm_sq_recovered(&q, 3, PM_TS_FAILED, 3, 0, 0, 20, "boom", 10000), 0);
	/* Only a queued trial, only an end. */
	assert_int_equal(pm_sq_recovered(&q, 1, PM_TS_DONE, 0, 0, 0, 0, NULL, 10000), -1);
	assert_int_equal(pm_sq_recovered(&q, 0, PM_TS_RUNNING, 0, 0, 0, 0, NULL, 10000), -1);
	assert_int_equal(pm_sq_recovered(&q, 9, PM_TS_DONE, 0, 0, 0, 0, NULL, 10000), -1);
	assert_int_equal(q.t[1].state, PM_TS_DONE);
	assert_int_equal(q.t[1].restarts, 1);
	assert_int_equal(q.t[1].requeues, 2);
	assert_int_equal(q.t[1].end_ms - q.t[1].first_start_ms, 500);
	assert_string_equal(q.t[3].error, "boom");
	assert_int_equal(q.t[3].exit_code, 3);
	n = pm_sq_schedule(&q, 10001, start, 8);
	assert_int_equal(n, 2); /* 0 and 2: never 1 or 3 again */
	assert_int_equal(start[0], 0);
	assert_int_equal(start[1], 2);
	assert_false(pm_sq_finished(&q));
	pm_sq_started(&q, 0, 10002);
	pm_sq_started(&q, 2, 10002);
	pm_sq_ended(&q, 0, false, 0, NULL, 10003, NULL);
	pm_sq_ended(&q, 2, false, 0, NULL, 10003, NULL);
	assert_true(pm_sq_finished(&q));
	pm_sq_free(&q);
}

/* A spare kept out of the pool takes nothing until it joins. */
static void test_spare_joins(void **state)
{
	struct pm_sq q;
	int start[8];

	(void)state;
	queue(&q, 3, 6);
	pm_pack_node_lost(&q.pack, 2); /* node 2 a spare */
	assert_int_equal(pm_sq_schedule(&q, 1, start, 8), 4);
	assert_int_equal(pm_sq_schedule(&q, 2, start, 8), 0);
	pm_pack_node_join(&q.pack, 2);
	pm_pack_node_join(&q.pack, 2); /* twice: once */
	pm_pack_node_join(&q.pack, 7); /* no such node */
	assert_int_equal(q.pack.usable_nodes, 3);
	assert_int_equal(pm_sq_schedule(&q, 3, start, 8), 2);
	assert_int_equal(start[0] >= 4 ? 1 : 0, 1);
	assert_int_equal(q.t[start[0]].slot_of_rank[0] / 2, 2);
	assert_int_equal(q.t[start[1]].slot_of_rank[0] / 2, 2);
	pm_sq_free(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules_table),
		cmocka_unit_test(test_next_spare),
		cmocka_unit_test(test_journal_lines),
		cmocka_unit_test(test_replay_round_trip),
		cmocka_unit_test(test_replay_refuses),
		cmocka_unit_test(test_attempt_base),
		cmocka_unit_test(test_recovered),
		cmocka_unit_test(test_spare_joins),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
