/* A sweep step run for real (procmgrd/sweep_run.c, sweep_node.c,
 * sweep_ctl.c): in-process nodes over loopback (stepnet.c), each slot's
 * supervisor played by trialsup.c, which runs the trials' commands with
 * sh. Trials that succeed, fail, are killed, span nodes, are restarted on
 * failure, lose their node and are requeued; the sweep's end when a
 * supervisor is lost, on Slurm's cancel and on a failed health check; the
 * trials file refused at the start. Asserted: the results file, the event
 * log, the lines said on srun's stderr and the step's exit code. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <glob.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "procmgrd/step.h"
#include "procmgrd/sweep_run.h"
#include "pump.h"
#include "stepnet.h"
#include "trialsup.h"

static void has(const char *text, const char *what)
{
	if (!text)
		fail_msg("no text where '%s' was expected", what);
	if (!strstr(text, what))
		fail_msg("'%s' not in '%s'", what, text);
}

/* u was told what to say on srun's stderr (it may still be on its way). */
static void said(struct sup *u, const char *what)
{
	int i;

	if (sup_hears(u, what))
		return;
	for (i = 0; i < u->nprints; i++)
		print_message("said: %s\n", u->prints[i]);
	fail_msg("'%s' not said on srun's stderr", what);
}

/* A line of text holds a, b and c. */
static void line_has(const char *text, const char *a, const char *b, const char *c)
{
	const char *l = text;

	assert_non_null(text);
	while (l && *l) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		char line[2048];
		snprintf(line, sizeof(line), "%.*s", (int)n, l);
		if (strstr(line, a) && strstr(line, b) && strstr(line, c))
			return;
		l = e ? e + 1 : NULL;
	}
	fail_msg("no line with '%s', '%s' and '%s' in '%s'", a, b, c, text);
}

/* The step's end: FINISH (0) or ABORT with the sweep's exit code. */
static void ended_with(int code)
{
	const struct pm_msg *m = &nodes[0].s.gen.end_msg;

	assert_true(pm_pump(&loop, sweep_over, NULL, 10000));
	assert_int_equal(m->type, code ? PM_MSG_ABORT : PM_MSG_FINISH);
	assert_int_equal(m->status, code);
	/* Issue 32 (12): only task 0 (it said the summary) ends with the
	 * code, so that srun adds one line, not one per node. */
	if (code) {
		assert_int_equal(m->rank, 0);
		assert_true(m->count & PM_FLAG_BLAME);
	}
}

/* Two nodes of two slots: a trial that succeeds, one that fails with its
 * own words, one killed by a signal, one silent failure, and one of four
 * ranks over both nodes (routed down the tree, its ends back up). */
static void test_true_false_killed(void **state)
{
	char *res, *ev;
	(void)state;

	sweep_up(2, 2, 2,
		 "# the trials\n"
		 "[ok] true\n"
		 "[bad] echo 'ValueError: lr too high'; echo traceback; exit 3\n"
		 "[killed] kill -9 $$\n"
		 "[wide ranks=4] true\n"
		 "[silent] exit 4\n");
	ended_with(1);
	res = sweep_read("trials.results");
	has(res, "trial\tstate\texit\trestarts\truntime_s\terror\tmetric\tvalue\n");
	has(res, "ok\tdone\t0\t0\t");
	has(res, "\tValueError: lr too high\t-\t-\n");
	has(res, "bad\tfailed\t3\t0\t");
	has(res, "killed\tfailed\t137\t0\t");
	has(res, "silent\tfailed\t4\t0\t");
	has(res, "\texit code 4\t-\t-\n");
	has(res, "wide\tdone\t0\t0\t");
	/* srun's stderr, through rank 0's supervisor: each failure, then
	 * the summary. */
	said(&sups[0], "procmgr: trial bad exited with code 3 (ValueError: lr too high); "
		       "no restart left: failed");
	said(&sups[0], "procmgr: trial killed exited with code 137");
	/* Issue 32 (12): said once, not "exited with code 4 (exit code 4)". */
	said(&sups[0], "procmgr: trial silent exited with code 4; no restart left: failed");
	said(&sups[0], "procmgr: sweep of 5 trials: 2 done, 3 failed; results in ");
	assert_false(sup_said(&sups[1], "sweep of 5 trials"));
	/* wide's four ranks, two on each node: local ranks 0 and 1 of 2 there,
	 * one master for all. */
	{
		char n0[4200], n1[4200], m[64];
		const char *w;
		snprintf(n0, sizeof(n0), "%s%s", sups[0].log, sups[1].log);
		snprintf(n1, sizeof(n1), "%s%s", sups[2].log, sups[3].log);
		has(n0, "wide 4 0 2 127.0.0.");
		has(n0, "wide 4 1 2 127.0.0.");
		has(n1, "wide 4 0 2 127.0.0.");
		has(n1, "wide 4 1 2 127.0.0.");
		w = strstr(n0, "wide 4 0 2 ");
		snprintf(m, sizeof(m), "%.*s", (int)strcspn(w, "|"), w);
		has(n1, m + strlen("wide 4 0 2 ")); /* the same master and port */
	}
	ev = sweep_read("events");
	has(ev, "\"event\":\"sweep\",\"trials\":5,\"slots\":4,\"nodes\":2");
	line_has(ev, "\"event\":\"trial_start\",\"trial\":\"wide\",\"attempt\":",
		 "\"ranks\":4,\"restarts\":0,\"master\":\"127.0.0.", "\"first_slot\":");
	has(ev, "\"event\":\"trial_end\",\"trial\":\"bad\",\"attempt\":");
	has(ev, "\"state\":\"failed\",\"exit_code\":3,\"restarts\":0,\"delay_ms\":0,"
		"\"error\":\"ValueError: lr too high\"");
	has(ev, "\"event\":\"sweep_end\",\"trials\":5,\"done\":2,\"failed\":3,\"exit_code\":1");
	/* Each trial's outputs go beside the trials file. */
	{
		char out[128];
		snprintf(out, sizeof(out), "%s/trials.out", sweep_dir);
		assert_int_equal(access(out, X_OK), 0);
	}
}

/* Every trial done: the step succeeds. */
static void test_all_done(void **state)
{
	(void)state;

	sweep_up(1, 2, 2, "true\n[b] exit 0\n[c] test -d /\n");
	ended_with(0);
	said(&sups[0], "procmgr: sweep of 3 trials: 3 done, 0 failed");
	has(sweep_read("trials.results"), "1\tdone\t0\t0\t");
	has(sweep_read("events"), "\"event\":\"finish\"");
}

/* Restarts on failure, alone and in place: a trial that fails once, and
 * one that fails every time and runs out of restarts. */
static void test_restart_on_failure(void **state)
{
	char text[512], *res, *ev;
	(void)state;

	sweep_restarts = 1;
	snprintf(text, sizeof(text),
		 "[flaky] test -e %s/flaky && exit 0; touch %s/flaky; echo 'first try fails'; exit 5\n"
		 "[never] echo nope; exit 2\n", sweep_dir, sweep_dir);
	sweep_up(1, 2, 2, text);
	ended_with(1);
	said(&sups[0], "procmgr: trial flaky exited with code 5 (first try fails); restarting it alone");
	said(&sups[0], "procmgr: trial never exited with code 2 (nope); restarting it alone");
	said(&sups[0], "procmgr: trial never exited with code 2 (nope); no restart left: failed");
	res = sweep_read("trials.results");
	has(res, "flaky\tdone\t0\t1\t");
	has(res, "never\tfailed\t2\t1\t");
	ev = sweep_read("events");
	has(ev, "\"trial\":\"flaky\",\"attempt\":1,\"state\":\"restarting\",\"exit_code\":5,"
		"\"restarts\":1");
	line_has(ev, "\"event\":\"trial_start\",\"trial\":\"flaky\"", "\"ranks\":1,\"restarts\":1,",
		 "\"master\":\"127.0.0.1\"");
	/* The restart's TRIAL_START says which restart it is. */
	assert_int_equal(sups[0].starts + sups[1].starts, 4);
}

/* Issue 32 (12): a trial's result comes back with its rank 0's end (the
 * codec), goes in the results file's last two columns and the status
 * lines; a failed trial keeps what it reported; rank 1's is not the
 * trial's; an attempt that reports none leaves none (not its last one's). */
static void test_results(void **state)
{
	char text[1024], *res;
	(void)state;

	sweep_restarts = 1;
	snprintf(text, sizeof(text),
		 "[lr1] echo RESULT loss=0.5\n"
		 "[lr2 ranks=2] echo RESULT loss=1$RANK\n"
		 "[div] echo RESULT loss=9e9; exit 3\n"
		 "[again] test -e %s/again && exit 0; touch %s/again; echo RESULT loss=7; exit 1\n"
		 "[bad] echo RESULT loss=nan\n"
		 "[none] true\n", sweep_dir, sweep_dir);
	sweep_up(1, 2, 2, text);
	ended_with(1);
	res = sweep_read("trials.results");
	has(res, "lr1\tdone\t0\t0\t");
	has(res, "\t-\tloss\t0.5\n");
	has(res, "\t-\tloss\t10\n"); /* rank 0's, not rank 1's 11 */
	assert_null(strstr(res, "\tloss\t11\n"));
	has(res, "div\tfailed\t3\t1\t");
	has(res, "\tloss\t9e9\n");
	has(res, "again\tdone\t0\t1\t");
	assert_null(strstr(res, "\tloss\t7\n"));
	line_has(res, "bad\tdone", "\t-\t-\t-", "");
	line_has(res, "none\tdone", "\t-\t-\t-", "");
	/* The decision line and the results say the error, not the result. */
	said(&sups[0], "procmgr: trial div exited with code 3 (RESULT loss=9e9); no restart left");
}

static bool three_run(void *arg)
{
	(void)arg;
	return sups[0].pid && sups[1].pid && sups[2].pid;
}

static bool three_run_spare(void *arg)
{
	(void)arg;
	return sups[0].pid && sups[2].pid;
}

static bool said_lost(void *arg)
{
	return sup_said(&sups[0], (const char *)arg);
}

static bool stopped_one(void *arg)
{
	(void)arg;
	return sups[0].stops == 1 && sups[0].pid == 0;
}

/* Four nodes of one slot: an idle node lost (nothing to requeue), then
 * the node of a two-rank trial's second rank: that trial is requeued, its
 * rank on the root stopped (its slot held until that rank's end), and it
 * runs again on the slots left once they are free. */
static void test_node_lost(void **state)
{
	char text[512], *res, *ev;
	(void)state;

	snprintf(text, sizeof(text),
		 "[span ranks=2] test -e %s/go && exit 0; exec sleep 100\n"
		 "[solo] test -e %s/go && exit 0; exec sleep 100\n", sweep_dir, sweep_dir);
	sweep_up(4, 3, 1, text);
	assert_true(pm_pump(&loop, three_run, NULL, 5000));
	assert_string_equal(sup_trial(&sups[0]), "span");
	assert_string_equal(sup_trial(&sups[1]), "span");
	assert_string_equal(sup_trial(&sups[2]), "solo");
	assert_int_equal(sups[3].starts, 0);
	/* The idle node. */
	node_down(&nodes[3]);
	assert_true(pm_pump(&loop, said_lost, "procmgr: lost node 127.0.0.4", 5000));
	said(&sups[0], "no trial ran there, the sweep goes on on the other nodes");
	/* The node of span's second rank. */
	node_down(&nodes[1]);
	assert_true(pm_pump(&loop, said_lost, "procmgr: lost node 127.0.0.2", 5000));
	said(&sups[0], "its 1 trial goes to the other nodes: span");
	assert_true(pm_pump(&loop, stopped_one, NULL, 5000));
	assert_false(pm_gen_terminal(&nodes[0].s.gen));
	/* span waits for two free slots: solo's, once it ends. */
	assert_int_equal(sups[0].starts, 1);
	snprintf(text, sizeof(text), "%s/go", sweep_dir);
	fclose(fopen(text, "w"));
	{
		char msg[256];
		assert_int_equal(pm_sweep_request(&nodes[0].s, false, "solo", "the test", msg,
						  sizeof(msg)), 0);
		has(msg, "procmgr: step 77.3: stopping trial solo");
	}
	ended_with(1);
	assert_int_equal(sups[0].starts, 2);
	assert_int_equal(sups[2].starts, 2);
	/* span again on the slots left, the root's and solo's. */
	has(sups[2].log, "solo 1 0 1 127.0.0.3 ");
	has(sups[2].log, "|span 2 ");
	has(sups[0].log, "|span 2 ");
	res = sweep_read("trials.results");
	has(res, "span\tdone\t0\t0\t");
	has(res, "solo\tfailed\t");
	ev = sweep_read("events");
	has(ev, "\"event\":\"trial_requeued\",\"trial\":\"span\",\"attempt\":1,"
		"\"node\":\"127.0.0.2\",\"requeues\":1");
	has(ev, "\"event\":\"node_lost\",\"gen\":0,\"node\":\"127.0.0.2\"");
	has(ev, "\"sweep\":\"requeue\"");
	has(ev, "\"event\":\"trial_stop_requested\",\"trial\":\"solo\"");
}

static bool two_run(void *arg)
{
	(void)arg;
	return sups[0].pid && sups[1].pid;
}

/* Three nodes of one slot, the last a spare: it runs nothing until node 1
 * is lost; then its slot joins the pool and the requeued trial runs there,
 * not charged a restart. */
static void test_spare_joins(void **state)
{
	char text[512], *res, *ev;
	(void)state;

	snprintf(text, sizeof(text),
		 "[a] while [ ! -e %s/go ]; do sleep 0.05; done\n"
		 "[b] while [ ! -e %s/go ]; do sleep 0.05; done\n", sweep_dir, sweep_dir);
	sweep_spares = 1;
	sweep_up(3, 2, 1, text);
	assert_true(pm_pump(&loop, two_run, NULL, 5000));
	assert_int_equal(sups[2].starts, 0);
	node_down(&nodes[1]);
	assert_true(pm_pump(&loop, said_lost, "procmgr: lost node 127.0.0.2", 5000));
	said(&sups[0], "spare 127.0.0.3's 1 slots join the pool");
	assert_true(pm_pump(&loop, three_run_spare, NULL, 5000));
	snprintf(text, sizeof(text), "%s/go", sweep_dir);
	fclose(fopen(text, "w"));
	ended_with(0);
	assert_int_equal(sups[2].starts, 1);
	res = sweep_read("trials.results");
	/* Not charged a restart. */
	has(res, "a\tdone\t0\t0\t");
	has(res, "b\tdone\t0\t0\t");
	ev = sweep_read("events");
	has(ev, "\"event\":\"spare_joined\",\"node\":\"127.0.0.3\",\"lost\":\"127.0.0.2\"");
	/* The journal has both ends. */
	res = sweep_read("trials.journal");
	line_has(res, "a\tdone\t0\t", "\t", "\t");
	line_has(res, "b\tdone\t0\t", "\t", "\t");
}

static bool q_ended_ab_run(void *arg)
{
	char *j = sweep_read("trials.journal");
	bool ok = j && strstr(j, "q\tdone") && sups[0].pid && sups[1].pid;

	(void)arg;
	return ok;
}

static bool took_over(void *arg)
{
	return sup_said(&sups[1], (const char *)arg);
}

/* a and b run again under the new root: on node 1 and the spare. */
static bool ab_again(void *arg)
{
	(void)arg;
	return sups[1].pid && sups[2].pid && sups[1].gen >= (1u << 24) &&
	       sups[2].gen >= (1u << 24);
}

static bool new_root_over(void *arg)
{
	(void)arg;
	return pm_gen_terminal(&nodes[1].s.gen);
}

/* Three nodes of one slot, the last a spare; q ends (the journal has it),
 * a and b run; the root is lost. Node 1 takes its place, rebuilds the
 * queue from the trials file and the journal: q is not run again, a (or
 * b) on node 1 is stopped and both run again, on node 1 and the spare,
 * with attempts above the old root's; the results are complete. */
static void test_root_lost_takeover(void **state)
{
	char text[512], *res, *j;
	(void)state;

	snprintf(text, sizeof(text),
		 "[q] true\n"
		 "[a] while [ ! -e %s/go ]; do sleep 0.05; done\n"
		 "[b] while [ ! -e %s/go ]; do sleep 0.05; done\n", sweep_dir, sweep_dir);
	sweep_spares = 1;
	sweep_up(3, 2, 1, text);
	assert_true(pm_pump(&loop, q_ended_ab_run, NULL, 5000));
	assert_int_equal(sups[2].starts, 0);
	node_down(&nodes[0]);
	assert_true(pm_pump(&loop, took_over, "procmgr: the sweep's root 127.0.0.1 was lost; "
			    "127.0.0.2 took its place: 1 of 3 trials had ended", 10000));
	if (!pm_pump(&loop, ab_again, NULL, 10000))
		fail_msg("sup1 pid %d gen %u starts %d stops %d exits %d; sup2 pid %d gen %u starts %d "
			 "stops %d exits %d", (int)sups[1].pid, sups[1].gen, sups[1].starts,
			 sups[1].stops, sups[1].exits, (int)sups[2].pid, sups[2].gen,
			 sups[2].starts, sups[2].stops, sups[2].exits);
	snprintf(text, sizeof(text), "%s/go", sweep_dir);
	fclose(fopen(text, "w"));
	assert_true(pm_pump(&loop, new_root_over, NULL, 10000));
	assert_int_equal(nodes[1].s.gen.end_msg.type, PM_MSG_FINISH);
	said(&sups[1], "procmgr: sweep of 3 trials: 3 done, 0 failed");
	res = sweep_read("trials.results");
	has(res, "q\tdone\t0\t0\t");
	has(res, "a\tdone\t0\t0\t");
	has(res, "b\tdone\t0\t0\t");
	j = sweep_read("trials.journal");
	has(j, "#root 1\n");
	/* q once: before the mark only. */
	assert_null(strstr(strstr(j, "#root 1\n"), "q\t"));
}

static bool both_run(void *arg)
{
	(void)arg;
	return sups[0].pid && sups[1].pid;
}

/* A trial whose rank hangs (its supervisor kills it and says so), one
 * whose error has a tab; the results file's name is taken (a directory
 * there, as another user's file in a sticky directory would): said, and
 * the results stay in their temporary file, which the summary names. */
static void test_hung_and_no_results(void **state)
{
	char path[160], *ev;
	(void)state;

	snprintf(path, sizeof(path), "%s/trials.results", sweep_dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/trials.results/x", sweep_dir);
	assert_int_equal(mkdir(path, 0755), 0);
	sweep_up(1, 2, 1, "[stuck] exec sleep 100 # hung\n[tab] printf 'a\\tb\\n'; exit 1\n");
	ended_with(1);
	said(&sups[0], "procmgr: trial stuck exited with code 124 (hung: no heartbeat for the "
		       "hang timeout (rank on 127.0.0.1)); no restart left: failed");
	snprintf(path, sizeof(path), "procmgr: sweep: cannot replace %s/trials.results (", sweep_dir);
	said(&sups[0], path);
	snprintf(path, sizeof(path), "procmgr: sweep of 2 trials: 0 done, 2 failed; results in "
		 "%s/trials.results.", sweep_dir);
	said(&sups[0], path);
	{
		glob_t g;
		char *res;

		snprintf(path, sizeof(path), "%s/trials.results.*.tmp", sweep_dir);
		assert_int_equal(glob(path, 0, NULL, &g), 0);
		assert_int_equal(g.gl_pathc, 1);
		res = sweep_read(g.gl_pathv[0] + strlen(sweep_dir) + 1);
		globfree(&g);
		has(res, "stuck\tfailed\t124\t");
		has(res, "tab\tfailed\t1\t");
	}
	ev = sweep_read("events");
	has(ev, "\"state\":\"failed\",\"exit_code\":124,");
	has(ev, "\"error\":\"a\\u0009b\"");
}

/* Two nodes of one slot, both trials running; then what ends the sweep
 * early. */
static void two_running(void)
{
	sweep_up(2, 2, 1, "[a] exec sleep 100\n[b] exec sleep 100\n");
	assert_true(pm_pump(&loop, both_run, NULL, 5000));
}

static void test_supervisor_lost(void **state)
{
	(void)state;

	two_running();
	sup_down(&sups[1]);
	ended_with(1);
	said(&sups[0], "procmgr: a node or a supervisor of the sweep was lost (node 127.0.0.2");
	said(&sups[0], "ending the sweep");
	said(&sups[0], "procmgr: sweep of 2 trials: 0 done, 0 failed, 2 running");
	has(sweep_read("events"), "\"event\":\"sweep_end\",\"trials\":2,\"done\":0,\"failed\":0,"
				  "\"exit_code\":1");
}

static void test_cancelled(void **state)
{
	(void)state;

	two_running();
	pm_step_terminate(&nodes[1].s); /* Slurm's SIGTERM on the second node */
	/* Trials not done: 1, as for any sweep that did not do them all. */
	ended_with(1);
	said(&sups[0], "procmgr: the sweep was cancelled (procmgrd got SIGTERM from slurmstepd); "
		       "trials not ended are not counted done");
}

static void test_health_failed(void **state)
{
	(void)state;

	two_running();
	pm_gen_health_failed(&nodes[1].s.gen, "mem: only 1.0 KiB available");
	ended_with(1);
	said(&sups[0], "procmgr: node 127.0.0.2 failed a health check: mem: only 1.0 KiB "
		       "available; ending the sweep");
}

static struct pm_msg exit_seen;
static int exits_seen;
static void record_exit(struct pm_step *s, const struct pm_msg *m)
{
	(void)s;
	exit_seen = *m;
	exits_seen++;
}

/* A TRIAL_START for a supervisor not connected yet waits for its HELLO; a
 * TRIAL_STOP before it takes it back and answers for it: the attempt
 * ended, stopped, on that slot (the root waits for every rank's end: a
 * 3-rank trial whose first rank failed at once, before the third rank's
 * supervisor connected, hung the sweep for ever). A stop of another
 * attempt leaves the pending start. News of an attempt the root never
 * started is not taken for a trial's. */
static void test_start_before_hello(void **state)
{
	struct pm_step_hooks hooks;
	const struct pm_step_hooks *was;
	char err[256], path[128];
	struct pm_msg m;
	struct sup u;
	FILE *f;
	(void)state;

	snprintf(path, sizeof(path), "%s/trials", sweep_dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("[a] true\n", f);
	fclose(f);
	node_up(0, 1, 2, 2, 0, 0, false);
	snprintf(nodes[0].s.opts.sweep, sizeof(nodes[0].s.opts.sweep), "%s", path);
	assert_int_equal(pm_sweep_run_init(&nodes[0].s, err, sizeof(err)), 0);
	pm_msg_init(&m, PM_MSG_TRIAL_START);
	m.gen = 99;
	m.node = 0;
	m.status = 0; /* local rank 0: started, then stopped before it came */
	pm_msg_set_text(&m, "x 1 0 1 127.0.0.1 1 99\nexit 0");
	pm_sweep_node_route(&nodes[0].s, &m);
	assert_true(nodes[0].s.sweep_node->has_pending[0]);
	was = nodes[0].s.hooks;
	hooks = *was;
	hooks.trial_exit = record_exit;
	nodes[0].s.hooks = &hooks;
	exits_seen = 0;
	m.type = PM_MSG_TRIAL_STOP;
	m.gen = 98; /* not the attempt pending: kept */
	pm_sweep_node_route(&nodes[0].s, &m);
	assert_true(nodes[0].s.sweep_node->has_pending[0]);
	assert_int_equal(exits_seen, 0);
	m.gen = 99;
	pm_sweep_node_route(&nodes[0].s, &m);
	assert_false(nodes[0].s.sweep_node->has_pending[0]);
	assert_int_equal(exits_seen, 1);
	assert_int_equal(exit_seen.type, PM_MSG_TRIAL_EXIT);
	assert_int_equal(exit_seen.gen, 99);
	assert_int_equal(exit_seen.rank, 0);
	assert_int_equal(exit_seen.node, 0);
	assert_true(exit_seen.count & PM_FLAG_STOPPED);
	/* Said once: a second stop finds nothing pending. */
	pm_sweep_node_route(&nodes[0].s, &m);
	assert_int_equal(exits_seen, 1);
	nodes[0].s.hooks = was;
	m.type = PM_MSG_TRIAL_START;
	m.status = 1; /* local rank 1: waits for its supervisor */
	pm_sweep_node_route(&nodes[0].s, &m);
	m.status = 2; /* no such slot here */
	pm_sweep_node_route(&nodes[0].s, &m);
	sup_up(&u, 0, 1, 1);
	assert_true(pm_pump(&loop, sup_running, &u, 5000));
	assert_int_equal(u.start.gen, 99);
	has(u.log, "x 1 0 1 127.0.0.1 1 99|");
	assert_false(nodes[0].s.sweep_node->has_pending[1]);
	assert_true(pm_pump(&loop, sup_idle, &u, 5000));
	assert_int_equal(u.exits, 1);
	assert_false(pm_gen_terminal(&nodes[0].s.gen));
	sup_down(&u);
}

/* What the root refuses at the start, each said with what is allowed. */
static void test_refused(void **state)
{
	char err[512], path[512], name[300];
	FILE *f;
	struct pm_step *s;
	(void)state;

	node_up(0, 2, 2, 2, 0, 0, false);
	s = &nodes[0].s;
	/* Not a sweep: nothing to do. */
	assert_int_equal(pm_sweep_run_init(s, err, sizeof(err)), 0);
	assert_null(s->sweep_node);
	/* No such file. */
	snprintf(s->opts.sweep, sizeof(s->opts.sweep), "%s/none", sweep_dir);
	assert_int_equal(pm_sweep_run_init(s, err, sizeof(err)), -1);
	has(err, "/none");
	pm_sweep_run_free(s);
	/* Uneven tasks. */
	s->ntasks = 3;
	assert_int_equal(pm_sweep_run_init(s, err, sizeof(err)), -1);
	has(err, "--procmgr-sweep needs the same number of tasks on every node (3 tasks on 2 "
		 "nodes, 2 on this one)");
	pm_sweep_run_free(s);
	s->ntasks = 4;
	/* A command too long for one message with its head. */
	snprintf(path, sizeof(path), "%s/long", sweep_dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "[long] echo %04000d\n", 0);
	fclose(f);
	snprintf(s->opts.sweep, sizeof(s->opts.sweep), "%s", path);
	assert_int_equal(pm_sweep_run_init(s, err, sizeof(err)), -1);
	has(err, "--procmgr-sweep: line 1 (trial long): the command has 4005 bytes; a trial's "
		 "command may have at most");
	pm_sweep_run_free(s);
	/* The outputs' directory cannot be made (its name is too long). */
	memset(name, 'x', 252);
	name[252] = '\0';
	snprintf(path, sizeof(path), "%s/%s", sweep_dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("true\n", f);
	fclose(f);
	snprintf(s->opts.sweep, sizeof(s->opts.sweep), "%s", path);
	assert_int_equal(pm_sweep_run_init(s, err, sizeof(err)), -1);
	has(err, "--procmgr-sweep: cannot make the trials' output directory ");
	has(err, "File name too long");
	pm_sweep_run_free(s);
	assert_null(s->sweep);
	/* A node that is not the root keeps only its slots' side. */
	node_up(1, 2, 2, 2, 0, 0, false);
	snprintf(nodes[1].s.opts.sweep, sizeof(nodes[1].s.opts.sweep), "%s", path);
	assert_int_equal(pm_sweep_run_init(&nodes[1].s, err, sizeof(err)), 0);
	assert_non_null(nodes[1].s.sweep_node);
	assert_null(nodes[1].s.sweep);
	s->opts.sweep[0] = '\0';
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_true_false_killed, sweep_setup, sweep_teardown),
		cmocka_unit_test_setup_teardown(test_all_done, sweep_setup, sweep_teardown),
		cmocka_unit_test_setup_teardown(test_restart_on_failure, sweep_setup, sweep_teardown),
		cmocka_unit_test_setup_teardown(test_results, sweep_setup, sweep_teardown),
		cmocka_unit_test_setup_teardown(test_node_lost, sweep_setup, sweep_teardown),
		cmocka_unit_test_setup_teardown(test_spare_joins, sweep_setup, sweep_teardown),
		cmocka_unit_test_setup_teardown(test_root_lost_takeover, sweep_setup, sweep_teardown),
		cmocka_unit_test_setup_teardown(test_hung_and_no_results, sweep_setup, sweep_teardown),
		cmocka_unit_test_setup_teardown(test_supervisor_lost, sweep_setup, sweep_teardown),
		cmocka_unit_test_setup_teardown(test_cancelled, sweep_setup, sweep_teardown),
		cmocka_unit_test_setup_teardown(test_health_failed, sweep_setup, sweep_teardown),
		cmocka_unit_test_setup_teardown(test_start_before_hello, sweep_setup, sweep_teardown),
		cmocka_unit_test_setup_teardown(test_refused, sweep_setup, sweep_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
