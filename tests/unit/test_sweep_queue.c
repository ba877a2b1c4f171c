/* Unit tests of runtime/sweep/sweep_queue.c: the state table, then whole
 * sweeps driven on a simulated clock (trials that run for a set time and
 * fail a set number of times), checking after every decision that no slot
 * or port is held twice. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sweep/sweep_queue.h"

#define CHECK(cond, ...) do { if (!(cond)) fail_msg(__VA_ARGS__); } while (0)
#define MAXT 512

static char err[256];

/* A sweep on a simulated clock. fails[i]: how many runs of trial i fail
 * (-1: every one). */
struct sim {
	struct pm_sq q;
	uint64_t now, end_at[MAXT], dur[MAXT];
	int runs[MAXT], fails[MAXT], ports_seen[MAXT], slot0[MAXT];
	int max_running, started_order[MAXT * 4], nstarted;
};

static struct pm_sq_cfg cfg(int nodes, int slots, int max_restarts)
{
	struct pm_sq_cfg c = { 0 };

	c.nodes = nodes;
	c.slots_per_node = slots;
	c.policy.mode = max_restarts ? PM_RESTART_ON_FAILURE : PM_RESTART_NEVER;
	c.policy.max_restarts = max_restarts;
	c.policy.delay_ms = 100;
	c.policy.max_delay_ms = 1000;
	c.port_first = 29500;
	c.port_count = nodes * slots;
	return c;
}

static void sim_init(struct sim *s, const struct pm_sq_cfg *c, const int *ranks, int n,
		     uint64_t dur)
{
	int i;

	memset(s, 0, sizeof(*s));
	assert_int_equal(pm_sq_init(&s->q, c, ranks, n, err, sizeof(err)), 0);
	for (i = 0; i < n; i++)
		s->dur[i] = dur;
}

/* Every slot and port held once, by a trial that holds it. */
static void check_invariants(struct sim *s)
{
	static int seen_port[65536];
	int i, r, running = 0, slots = s->q.pack.nodes * s->q.pack.slots;
	long held = 0;

	memset(seen_port, 0, sizeof(seen_port));
	for (i = 0; i < s->q.n; i++) {
		const struct pm_sq_trial *t = &s->q.t[i];

		if (t->state != PM_TS_STARTING && t->state != PM_TS_RUNNING &&
		    t->state != PM_TS_RESTARTING)
			continue;
		running++;
		CHECK(t->port >= 29500 && !seen_port[t->port]++, "port %d twice", t->port);
		for (r = 0; r < t->ranks; r++) {
			CHECK(s->q.owner[t->slot_of_rank[r]] == i, "slot %d of trial %d owned by %d",
			      t->slot_of_rank[r], i, s->q.owner[t->slot_of_rank[r]]);
			CHECK(!s->q.pack.lost[pm_pack_node_of(&s->q.pack, t->slot_of_rank[r])],
			      "trial %d on a lost node", i);
		}
		held += t->ranks;
	}
	for (i = 0; i < slots; i++) {
		held -= s->q.owner[i] >= 0;
		/* A held slot's port (its rank 0 may still listen) is no one else's. */
		if (s->q.owner[i] == PM_SQ_HELD && s->q.hold_port[i])
			CHECK(!seen_port[s->q.hold_port[i]]++, "held port %d twice", s->q.hold_port[i]);
	}
	assert_int_equal(held, 0);
	/* Every free port is free: none in use, none twice, none lost. */
	for (i = 0; i < s->q.port_nfree; i++) {
		int p = s->q.ports[(s->q.port_rd + i) % s->q.cfg.port_count];
		CHECK(!seen_port[p]++, "free port %d in use or twice", p);
	}
	for (i = 0, r = 0; i < 65536; i++)
		r += seen_port[i];
	assert_int_equal(r, s->q.cfg.port_count);
	if (running > s->max_running)
		s->max_running = running;
}

static void sim_schedule(struct sim *s)
{
	int st[MAXT], n, k;

	n = pm_sq_schedule(&s->q, s->now, st, MAXT);
	for (k = 0; k < n; k++) {
		int i = st[k];

		assert_int_equal(s->q.t[i].state, PM_TS_STARTING);
		assert_int_equal(pm_sq_started(&s->q, i, s->now), 0);
		s->runs[i]++;
		s->end_at[i] = s->now + s->dur[i];
		s->started_order[s->nstarted++] = i;
		if (s->runs[i] == 1) {
			s->ports_seen[i] = s->q.t[i].port;
			s->slot0[i] = s->q.t[i].slot_of_rank[0];
		}
	}
	check_invariants(s);
}

/* Advances to the next end or restart; false when nothing is left. */
static bool sim_step(struct sim *s)
{
	uint64_t next = pm_sq_next_due(&s->q);
	int i, who = -1;

	for (i = 0; i < s->q.n; i++)
		if (s->q.t[i].state == PM_TS_RUNNING && s->end_at[i] < next) {
			next = s->end_at[i];
			who = i;
		}
	if (next == UINT64_MAX)
		return false;
	s->now = next;
	if (who >= 0) {
		bool failed = s->fails[who] != 0;

		if (s->fails[who] > 0)
			s->fails[who]--;
		CHECK(pm_sq_ended(&s->q, who, failed, failed ? 3 : 0,
				  failed ? "RuntimeError: boom" : NULL, s->now, NULL) >= 0,
		      "end of %d refused", who);
	}
	sim_schedule(s);
	return true;
}

static void sim_run(struct sim *s)
{
	int guard = 0;

	sim_schedule(s);
	while (sim_step(s))
		CHECK(++guard < 1000000, "the sweep does not end");
}

static void test_table(void **state)
{
	int s, e;

	(void)state;
	for (s = 0; s < PM_TS_COUNT; s++) {
		bool holds = s == PM_TS_STARTING || s == PM_TS_RUNNING || s == PM_TS_RESTARTING;
		bool waits = s == PM_TS_QUEUED || s == PM_TS_REQUEUED;
		bool final = s == PM_TS_DONE || s == PM_TS_FAILED;

		for (e = 0; e < PM_TEV_COUNT; e++)
			if (final)
				assert_int_equal(pm_sq_next_state(s, e), -1);
		if (final)
			continue;
		assert_int_equal(pm_sq_next_state(s, PM_TEV_STOP), PM_TS_FAILED);
		assert_int_equal(pm_sq_next_state(s, PM_TEV_NODE_LOST),
				 holds ? PM_TS_REQUEUED : -1);
		assert_int_equal(pm_sq_next_state(s, PM_TEV_GRANTED), waits ? PM_TS_STARTING : -1);
		assert_int_equal(pm_sq_next_state(s, PM_TEV_NO_ROOM), waits ? PM_TS_FAILED : -1);
	}
	assert_int_equal(pm_sq_next_state(PM_TS_STARTING, PM_TEV_STARTED), PM_TS_RUNNING);
	assert_int_equal(pm_sq_next_state(PM_TS_RUNNING, PM_TEV_STARTED), -1);
	assert_int_equal(pm_sq_next_state(PM_TS_RUNNING, PM_TEV_END_DONE), PM_TS_DONE);
	assert_int_equal(pm_sq_next_state(PM_TS_RUNNING, PM_TEV_END_RESTART), PM_TS_RESTARTING);
	assert_int_equal(pm_sq_next_state(PM_TS_RUNNING, PM_TEV_END_FAILED), PM_TS_FAILED);
	assert_int_equal(pm_sq_next_state(PM_TS_STARTING, PM_TEV_END_FAILED), PM_TS_FAILED);
	assert_int_equal(pm_sq_next_state(PM_TS_RESTARTING, PM_TEV_DUE), PM_TS_STARTING);
	assert_int_equal(pm_sq_next_state(PM_TS_RESTARTING, PM_TEV_END_DONE), -1);
	assert_int_equal(pm_sq_next_state(PM_TS_QUEUED, PM_TEV_DUE), -1);
	assert_int_equal(pm_sq_next_state(PM_TS_COUNT, 0), -1);
	assert_string_equal(pm_ts_name(PM_TS_REQUEUED), "requeued");
}

static void test_init_refused(void **state)
{
	struct pm_sq q;
	struct pm_sq_cfg c = cfg(4, 4, 0);
	int r[] = { 1, 17 };

	(void)state;
	assert_int_equal(pm_sq_init(&q, &c, r, 2, err, sizeof(err)), -1);
	CHECK(strstr(err, "trial 1 asks for 17 ranks; the sweep has 16 slots"), "[%s]", err);
	c.port_first = 65530;
	assert_int_equal(pm_sq_init(&q, &c, r, 1, err, sizeof(err)), -1);
	CHECK(strstr(err, "port range"), "[%s]", err);
}

/* 200 one-rank trials on 4x4: each runs exactly once, 16 at a time. */
static void test_200_once(void **state)
{
	static struct sim s;
	struct pm_sq_cfg c = cfg(4, 4, 3);
	int ranks[200], i;

	(void)state;
	for (i = 0; i < 200; i++)
		ranks[i] = 1;
	sim_init(&s, &c, ranks, 200, 0);
	for (i = 0; i < 200; i++)
		s.dur[i] = 1000 + (i * 37) % 500;
	sim_run(&s);
	for (i = 0; i < 200; i++) {
		assert_int_equal(s.runs[i], 1);
		assert_int_equal(s.q.t[i].state, PM_TS_DONE);
		assert_int_equal(s.q.t[i].exit_code, 0);
	}
	assert_int_equal(s.max_running, 16);
	assert_true(pm_sq_finished(&s.q));
	assert_int_equal(s.q.count[PM_TS_DONE], 200);
	/* All slots and ports back. */
	assert_int_equal(s.q.pack.free_total, 16);
	assert_int_equal(s.q.port_nfree, 16);
	/* First in, first out when everything is alike. */
	for (i = 0; i < 200; i++)
		assert_int_equal(s.started_order[i], i);
	pm_sq_free(&s.q);
}

/* Trial 5 fails once: it restarts on its own slots and port after the
 * policy's delay; no other trial runs twice. */
static void test_fail_once_restarts_alone(void **state)
{
	static struct sim s;
	struct pm_sq_cfg c = cfg(4, 4, 3);
	int ranks[40], i;

	(void)state;
	for (i = 0; i < 40; i++)
		ranks[i] = i % 3 == 0 ? 2 : 1;
	sim_init(&s, &c, ranks, 40, 1000);
	s.fails[5] = 1;
	sim_schedule(&s);
	{
		int slot = s.q.t[5].slot_of_rank[0], port = s.q.t[5].port;
		uint64_t ended_at;

		/* To its first end. */
		while (s.runs[5] < 1 || s.q.t[5].state == PM_TS_RUNNING)
			assert_true(sim_step(&s));
		assert_int_equal(s.q.t[5].state, PM_TS_RESTARTING);
		ended_at = s.now;
		assert_int_equal(pm_sq_next_due(&s.q), ended_at + 100);
		assert_int_equal(s.q.t[5].slot_of_rank[0], slot);
		assert_int_equal(s.q.owner[slot], 5);
		while (s.runs[5] < 2)
			assert_true(sim_step(&s));
		assert_int_equal(s.now, ended_at + 100);
		assert_int_equal(s.q.t[5].slot_of_rank[0], slot);
		assert_int_equal(s.q.t[5].port, port);
	}
	sim_run(&s);
	for (i = 0; i < 40; i++) {
		assert_int_equal(s.runs[i], i == 5 ? 2 : 1);
		assert_int_equal(s.q.t[i].state, PM_TS_DONE);
		assert_int_equal(s.q.t[i].restarts, i == 5 ? 1 : 0);
	}
	/* Done after a restart: no error left from the failed run. */
	assert_null(s.q.t[5].error);
	pm_sq_free(&s.q);
}

/* Trial 3 always fails: after 2 restarts it is failed, the rest is done. */
static void test_always_fails(void **state)
{
	static struct sim s;
	struct pm_sq_cfg c = cfg(2, 2, 2);
	int ranks[10] = { 1, 1, 1, 2, 1, 1, 1, 1, 1, 1 }, i;

	(void)state;
	sim_init(&s, &c, ranks, 10, 500);
	s.fails[3] = -1;
	sim_run(&s);
	for (i = 0; i < 10; i++)
		assert_int_equal(s.q.t[i].state, i == 3 ? PM_TS_FAILED : PM_TS_DONE);
	assert_int_equal(s.runs[3], 3);
	assert_int_equal(s.q.t[3].restarts, 2);
	assert_int_equal(s.q.t[3].exit_code, 3);
	assert_string_equal(s.q.t[3].error, "RuntimeError: boom");
	assert_true(pm_sq_finished(&s.q));
	assert_int_equal(s.q.count[PM_TS_FAILED], 1);
	assert_int_equal(s.q.pack.free_total, 4);
	/* Ended trials take no more events. */
	assert_int_equal(pm_sq_ended(&s.q, 3, true, 1, NULL, s.now, NULL), -1);
	assert_int_equal(pm_sq_started(&s.q, 3, s.now), -1);
	assert_int_equal(pm_sq_stop(&s.q, 0, s.now, NULL), -1);
	pm_sq_free(&s.q);
}

/* With restart=never a failure is final at once, with "exit code N" when
 * no error line came. */
static void test_never_restart(void **state)
{
	struct pm_sq q;
	struct pm_sq_cfg c = cfg(1, 2, 0);
	int ranks[] = { 1 }, st[2];

	(void)state;
	assert_int_equal(pm_sq_init(&q, &c, ranks, 1, err, sizeof(err)), 0);
	assert_int_equal(pm_sq_schedule(&q, 0, st, 2), 1);
	assert_int_equal(pm_sq_ended(&q, 0, true, 137, "", 5, NULL), PM_TS_FAILED);
	assert_string_equal(q.t[0].error, "exit code 137");
	assert_int_equal(q.t[0].end_ms, 5);
	pm_sq_free(&q);
}

/* Node 1 is lost while 16 trials run: its 4 are requeued (not counted as
 * restarts), run first when slots free up, never on node 1; all complete. */
static void test_node_lost_requeues(void **state)
{
	static struct sim s;
	struct pm_sq_cfg c = cfg(4, 4, 1);
	int ranks[40], affected[8], i, n, on1 = 0;

	(void)state;
	for (i = 0; i < 40; i++)
		ranks[i] = 1;
	sim_init(&s, &c, ranks, 40, 1000);
	sim_schedule(&s);
	for (i = 0; i < 16; i++)
		on1 += pm_pack_node_of(&s.q.pack, s.q.t[i].slot_of_rank[0]) == 1;
	assert_int_equal(on1, 4);
	s.now = 10;
	n = pm_sq_node_lost(&s.q, 1, s.now, affected, 8, NULL);
	assert_int_equal(n, 4);
	for (i = 0; i < n; i++) {
		const struct pm_sq_trial *t = &s.q.t[affected[i]];

		assert_int_equal(t->state, PM_TS_REQUEUED);
		assert_int_equal(t->requeues, 1);
		assert_int_equal(t->restarts, 0);
		assert_int_equal(t->port, 0);
		assert_int_equal(pm_pack_node_of(&s.q.pack, s.slot0[affected[i]]), 1);
	}
	check_invariants(&s);
	/* No slot is free (12 usable, 12 held): they wait, at the front. */
	assert_int_equal(s.q.wait_head, affected[n - 1]);
	sim_run(&s);
	for (i = 0; i < 40; i++)
		assert_int_equal(s.q.t[i].state, PM_TS_DONE);
	for (i = 0; i < n; i++)
		assert_int_equal(s.runs[affected[i]], 2);
	/* The requeued ones started before trial 16 onwards went on. */
	for (i = 0; i < n; i++) {
		int k, pos = -1;

		for (k = 0; k < s.nstarted; k++)
			if (s.started_order[k] == affected[i])
				pos = k;
		CHECK(pos >= 16 && pos < 16 + 12, "requeued trial started at %d", pos);
	}
	assert_int_equal(s.q.pack.free_total, 12);
	pm_sq_free(&s.q);
}

/* A 6-rank trial across nodes 0 and 1 loses node 1: its slots on node 0
 * come free too; a trial that can no longer fit anywhere is failed. */
static void test_node_lost_multi_node(void **state)
{
	struct pm_sq q;
	struct pm_sq_cfg c = cfg(2, 4, 1);
	int ranks[] = { 6, 8 }, st[4], aff[2];

	(void)state;
	assert_int_equal(pm_sq_init(&q, &c, ranks, 2, err, sizeof(err)), 0);
	assert_int_equal(pm_sq_schedule(&q, 0, st, 4), 1);
	assert_int_equal(pm_sq_started(&q, 0, 0), 0);
	assert_int_equal(pm_sq_node_lost(&q, 1, 7, aff, 2, NULL), 1);
	assert_int_equal(aff[0], 0);
	assert_int_equal(q.pack.free_total, 4);
	/* Both wait for ever now: 4 slots remain. */
	assert_int_equal(pm_sq_schedule(&q, 8, st, 4), 0);
	assert_int_equal(q.t[0].state, PM_TS_FAILED);
	assert_int_equal(q.t[1].state, PM_TS_FAILED);
	assert_string_equal(q.t[1].error, "needs 8 ranks; the nodes still up have 4 slots");
	assert_true(pm_sq_finished(&q));
	pm_sq_free(&q);
}

/* The ranks of a requeued or stopped trial still running on the nodes
 * left keep their slots (held) until each one's end is known, and rank
 * 0's slot keeps the port: nothing else starts there meanwhile. */
static void test_held_slots(void **state)
{
	struct pm_sq q;
	struct pm_sq_cfg c = cfg(2, 4, 1);
	int ranks[] = { 6, 4 }, st[4], aff[2], r, s0, port;
	unsigned char busy[8];

	(void)state;
	c.port_count = 2;
	assert_int_equal(pm_sq_init(&q, &c, ranks, 2, err, sizeof(err)), 0);
	assert_int_equal(pm_sq_schedule(&q, 0, st, 4), 1); /* trial 1 waits */
	assert_int_equal(pm_sq_started(&q, 0, 0), 0);
	s0 = q.t[0].slot_of_rank[0];
	port = q.t[0].port;
	assert_int_equal(pm_pack_node_of(&q.pack, s0), 0); /* whole node 0 first */
	memset(busy, 1, sizeof(busy));
	/* Node 1 goes: trial 0's 4 ranks on node 0 are held, not free. */
	assert_int_equal(pm_sq_node_lost(&q, 1, 5, aff, 2, busy), 1);
	for (r = 0; r < 4; r++)
		assert_int_equal(q.owner[r], PM_SQ_HELD);
	assert_int_equal(q.hold_port[s0], port);
	assert_int_equal(q.pack.free_total, 0);
	assert_int_equal(q.port_nfree, 1);
	/* Trial 0 can never fit any more (6 ranks, 4 slots left); trial 1
	 * waits for the held slots, the last one rank 0's with the port. */
	assert_int_equal(pm_sq_schedule(&q, 6, st, 4), 0);
	assert_int_equal(q.t[0].state, PM_TS_FAILED);
	for (r = 0; r < 4; r++)
		if (r != s0)
			assert_int_equal(pm_sq_unhold(&q, r), 0);
	assert_int_equal(pm_sq_unhold(&q, s0 ? 0 : 1), -1);
	assert_int_equal(q.pack.free_total, 3);
	assert_int_equal(q.port_nfree, 1);
	assert_int_equal(pm_sq_schedule(&q, 7, st, 4), 0);
	assert_int_equal(pm_sq_unhold(&q, s0), 0);
	assert_int_equal(q.port_nfree, 2);
	assert_int_equal(pm_sq_schedule(&q, 8, st, 4), 1);
	assert_int_equal(st[0], 1);
	assert_int_equal(pm_sq_started(&q, 1, 8), 0);
	/* A stopped trial's busy slots are held the same way. */
	assert_int_equal(pm_sq_stop(&q, 1, 9, busy), 0);
	assert_int_equal(q.t[1].state, PM_TS_FAILED);
	assert_int_equal(q.pack.free_total, 0);
	assert_int_equal(q.port_nfree, 1);
	for (r = 0; r < 4; r++)
		assert_int_equal(pm_sq_unhold(&q, q.t[1].slot_of_rank[r]), 0);
	assert_int_equal(q.pack.free_total, 4);
	assert_int_equal(q.port_nfree, 2);
	assert_true(pm_sq_finished(&q));
	pm_sq_free(&q);
}

/* A 16-rank trial behind a long 1-rank one: later small trials start
 * ahead of it, but only starve_limit of them; then the sweep drains until
 * it fits. */
static void test_skip_ahead_and_starvation(void **state)
{
	static struct sim s;
	struct pm_sq_cfg c = cfg(4, 4, 0);
	int ranks[102], i, pos_big = -1;

	(void)state;
	ranks[0] = 1;
	ranks[1] = 16;
	for (i = 2; i < 102; i++)
		ranks[i] = 1;
	c.starve_limit = 4;
	sim_init(&s, &c, ranks, 102, 1000);
	s.dur[0] = 100000;
	sim_run(&s);
	for (i = 0; i < s.nstarted; i++)
		if (s.started_order[i] == 1)
			pos_big = i;
	/* Trial 0, four small ones ahead of the big one, then the big one. */
	assert_int_equal(pos_big, 5);
	assert_int_equal(s.end_at[1], 100000 + 1000);
	for (i = 0; i < 102; i++)
		assert_int_equal(s.q.t[i].state, PM_TS_DONE);
	pm_sq_free(&s.q);

	/* No limit to speak of: every small trial passes it. */
	c.starve_limit = 1000000;
	sim_init(&s, &c, ranks, 102, 1000);
	s.dur[0] = 100000;
	sim_run(&s);
	assert_int_equal(s.started_order[101], 1);
	pm_sq_free(&s.q);
}

/* Two ports for four one-slot trials: two run at a time, and a freed port
 * goes to the back of the line. */
static void test_ports(void **state)
{
	struct pm_sq q;
	struct pm_sq_cfg c = cfg(1, 4, 0);
	int ranks[] = { 1, 1, 1, 1 }, st[4];

	(void)state;
	c.port_count = 2;
	assert_int_equal(pm_sq_init(&q, &c, ranks, 4, err, sizeof(err)), 0);
	assert_int_equal(pm_sq_schedule(&q, 0, st, 4), 2);
	assert_int_equal(q.t[0].port, 29500);
	assert_int_equal(q.t[1].port, 29501);
	assert_int_equal(pm_sq_ended(&q, 0, false, 0, NULL, 1, NULL), PM_TS_DONE);
	assert_int_equal(pm_sq_schedule(&q, 1, st, 4), 1);
	assert_int_equal(st[0], 2);
	assert_int_equal(q.t[2].port, 29500);
	assert_int_equal(pm_sq_ended(&q, 2, false, 0, NULL, 2, NULL), PM_TS_DONE);
	assert_int_equal(pm_sq_ended(&q, 1, false, 0, NULL, 2, NULL), PM_TS_DONE);
	/* 29500 was freed before 29501: it is used again first. */
	assert_int_equal(pm_sq_schedule(&q, 2, st, 4), 1);
	assert_int_equal(q.t[3].port, 29500);
	pm_sq_free(&q);
}

static void test_stop(void **state)
{
	struct pm_sq q;
	struct pm_sq_cfg c = cfg(1, 2, 3);
	int ranks[] = { 2, 1 }, st[4];

	(void)state;
	assert_int_equal(pm_sq_init(&q, &c, ranks, 2, err, sizeof(err)), 0);
	assert_int_equal(pm_sq_stop(&q, 1, 0, NULL), 0);
	assert_int_equal(q.t[1].state, PM_TS_FAILED);
	assert_string_equal(q.t[1].error, "stopped");
	assert_int_equal(pm_sq_schedule(&q, 0, st, 4), 1);
	assert_int_equal(st[0], 0);
	assert_int_equal(pm_sq_started(&q, 0, 3), 0);
	assert_int_equal(q.pack.free_total, 0);
	assert_int_equal(pm_sq_stop(&q, 0, 9, NULL), 0);
	assert_int_equal(q.pack.free_total, 2);
	assert_int_equal(q.t[0].end_ms, 9);
	assert_true(pm_sq_finished(&q));
	assert_int_equal(pm_sq_stop(&q, 0, 9, NULL), -1);
	assert_int_equal(pm_sq_stop(&q, 7, 9, NULL), -1);
	pm_sq_free(&q);
}

/* A trial waiting for its restart loses its node: requeued, off the restart
 * list, started on the other node keeping its restart count; another one
 * waiting for its restart is stopped: off the list too. */
static void test_lost_or_stopped_while_restarting(void **state)
{
	struct pm_sq q;
	struct pm_sq_cfg c = cfg(2, 1, 3);
	int ranks[] = { 1, 1 }, st[2], aff[2];

	(void)state;
	assert_int_equal(pm_sq_init(&q, &c, ranks, 2, err, sizeof(err)), 0);
	assert_int_equal(pm_sq_schedule(&q, 0, st, 2), 2);
	assert_int_equal(pm_sq_started(&q, 0, 0), 0);
	assert_int_equal(pm_sq_started(&q, 1, 0), 0);
	assert_int_equal(pm_pack_node_of(&q.pack, q.t[0].slot_of_rank[0]), 0);
	assert_int_equal(pm_sq_ended(&q, 0, true, 1, NULL, 10, NULL), PM_TS_RESTARTING);
	assert_int_equal(pm_sq_ended(&q, 1, true, 1, NULL, 20, NULL), PM_TS_RESTARTING);
	assert_int_equal(pm_sq_next_due(&q), 110);
	assert_int_equal(pm_sq_node_lost(&q, 0, 30, aff, 2, NULL), 1);
	assert_int_equal(q.t[0].state, PM_TS_REQUEUED);
	assert_int_equal(pm_sq_next_due(&q), 120);
	assert_int_equal(pm_sq_stop(&q, 1, 40, NULL), 0);
	assert_int_equal(pm_sq_next_due(&q), UINT64_MAX);
	assert_int_equal(pm_sq_schedule(&q, 40, st, 2), 1);
	assert_int_equal(st[0], 0);
	assert_int_equal(pm_pack_node_of(&q.pack, q.t[0].slot_of_rank[0]), 1);
	assert_int_equal(q.t[0].restarts, 1);
	assert_int_equal(q.t[0].requeues, 1);
	pm_sq_free(&q);
}

/* restart=always: a trial that succeeds runs again, max_restarts times. */
static void test_always_policy(void **state)
{
	static struct sim s;
	struct pm_sq_cfg c = cfg(1, 1, 2);
	int ranks[] = { 1 };

	(void)state;
	c.policy.mode = PM_RESTART_ALWAYS;
	sim_init(&s, &c, ranks, 1, 10);
	sim_run(&s);
	assert_int_equal(s.runs[0], 3);
	assert_int_equal(s.q.t[0].state, PM_TS_DONE);
	pm_sq_free(&s.q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_init_refused),
		cmocka_unit_test(test_200_once),
		cmocka_unit_test(test_fail_once_restarts_alone),
		cmocka_unit_test(test_always_fails),
		cmocka_unit_test(test_never_restart),
		cmocka_unit_test(test_node_lost_requeues),
		cmocka_unit_test(test_node_lost_multi_node),
		cmocka_unit_test(test_held_slots),
		cmocka_unit_test(test_skip_ahead_and_starvation),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_lost_or_stopped_while_restarting),
		cmocka_unit_test(test_always_policy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
