/* procmgr stop|restart --trial and procmgr status of a sweep, sent as the
 * procmgr command sends them (a credential naming the request, over
 * loopback TCP to the root: query.c) to in-process nodes (stepnet.c)
 * whose slots' supervisors run the trials for real (trialsup.c). What is
 * asserted: the command's answer and exit status, what the trials' ranks
 * are told, the lines on srun's stderr, the trial lines of the status, the
 * event log and the results. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/request.h"
#include "io/auth.h"
#include "procmgrd/query.h"
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

/* A procmgr command's request to the root, as the command signs it. */
static void ask(struct peer *p, enum pm_query_kind kind, const char *args)
{
	static unsigned nonce;

	client_ask(p, "127.0.0.1", "127.0.0.1", kind, JOB, STEP, ++nonce, args);
}


/* Asks, and returns the END's status; its text (and every answer's before
 * it) in text. */
static int request(enum pm_query_kind kind, const char *args, char *text, size_t len)
{
	struct peer p;
	int i, st;

	ask(&p, kind, args);
	assert_true(pm_pump(&loop, client_answered, &p, 5000));
	assert_int_equal(p.proofs, 1); /* the root proved itself first */
	text[0] = '\0';
	for (i = 0; i < p.n && i < 16; i++)
		strncat(text, p.got[i].text, len - strlen(text) - 1);
	assert_int_equal(p.got[p.n - 1].type, PM_MSG_ANSWER_END);
	st = p.got[p.n - 1].status;
	peer_free(&p);
	return st;
}

static bool two_run(void *arg)
{
	(void)arg;
	return sups[0].pid && sups[1].pid;
}

static int want_starts;

static bool restarted(void *arg)
{
	return ((struct sup *)arg)->starts == want_starts && ((struct sup *)arg)->pid;
}

static bool slot1_free_again(void *arg)
{
	(void)arg;
	return sups[1].stops == 1 && sups[1].starts == 2;
}

/* One node of two slots: two long trials run, a third waits. */
static void test_stop_restart_trial(void **state)
{
	char text[16384], msg[512], *ev;
	(void)state;

	sweep_up(1, 2, 2, "[long1] exec sleep 100\n[long2] exec sleep 100\n[later] exit 0\n"
			  "[last] exit 0\n");
	assert_true(pm_pump(&loop, two_run, NULL, 5000));
	assert_string_equal(sup_trial(&sups[0]), "long1");
	assert_string_equal(sup_trial(&sups[1]), "long2");
	/* procmgr status: the node, then a line per trial. */
	assert_int_equal(request(PM_Q_STATUS, "-", text, sizeof(text)), 0);
	has(text, "node id=0 name=127.0.0.1 phase=sweep ");
	has(text, "trial long1 running 127.0.0.1:0 0 ");
	has(text, "trial long2 running 127.0.0.1:1 0 ");
	has(text, "trial later queued - 0 0 - - -\n");
	/* No such trial; a queued trial does not restart. */
	assert_int_equal(request(PM_Q_RESTART, "trial=nope", text, sizeof(text)), 1);
	has(text, "procmgr: step 77.3 has no trial 'nope' (procmgr status 77.3 lists its 4 trials)");
	assert_int_equal(request(PM_Q_RESTART, "trial=later", text, sizeof(text)), 1);
	has(text, "procmgr: cannot restart trial later of step 77.3 now: it is queued; only a "
		  "running trial restarts");
	/* A running one does: its rank is stopped, then it starts again in
	 * place; asked again before that, it is being stopped. */
	assert_int_equal(pm_sweep_request(&nodes[0].s, true, "long1", "me", msg, sizeof(msg)), 0);
	has(msg, "procmgr: step 77.3: restarting trial long1 (restart 1)");
	assert_int_equal(pm_sweep_request(&nodes[0].s, true, "long1", "me", msg, sizeof(msg)), -1);
	has(msg, "procmgr: cannot restart trial long1 of step 77.3 now: it is being stopped");
	want_starts = 2;
	assert_true(pm_pump(&loop, restarted, &sups[0], 5000));
	assert_int_equal(sups[0].stops, 1);
	assert_int_equal(sups[0].start.count, 1); /* its first restart */
	assert_true(sup_hears(&sups[0], "procmgr: trial long1: me asked for a restart; "
					"restarting it alone (restart 1)"));
	/* Stopping a trial that has not started: it will not run. */
	assert_int_equal(request(PM_Q_STOP, "trial=later", text, sizeof(text)), 0);
	has(text, "procmgr: step 77.3: not running trial later");
	assert_true(sup_hears(&sups[0], "asked to stop trial later; it will not run"));
	assert_int_equal(request(PM_Q_STOP, "trial=later", text, sizeof(text)), 1);
	has(text, "procmgr: cannot stop trial later of step 77.3: it has ended (failed)");
	assert_int_equal(request(PM_Q_RESTART, "trial=later", text, sizeof(text)), 1);
	has(text, "procmgr: cannot restart trial later of step 77.3: it has ended (failed)");
	/* Stopping a running one: its slot is held until its rank ended,
	 * then the next trial takes it. */
	assert_int_equal(request(PM_Q_STOP, "trial=long2", text, sizeof(text)), 0);
	has(text, "procmgr: step 77.3: stopping trial long2");
	assert_true(sup_hears(&sups[0], "asked to stop trial long2; stopping its ranks"));
	assert_true(pm_pump(&loop, slot1_free_again, NULL, 5000));
	has(sups[1].log, "|last 1 0 1 127.0.0.1 ");
	assert_int_equal(request(PM_Q_STATUS, "-", text, sizeof(text)), 0);
	has(text, "trial long1 running 127.0.0.1:0 1 ");
	has(text, "trial long2 failed - 0 ");
	/* Asked by the command. */
	assert_int_equal(request(PM_Q_RESTART, "trial=long1", text, sizeof(text)), 0);
	has(text, "procmgr: step 77.3: restarting trial long1 (restart 2)");
	want_starts = 3;
	assert_true(pm_pump(&loop, restarted, &sups[0], 5000));
	assert_int_equal(sups[0].start.count, 2);
	/* The last one: the sweep ends, two trials stopped. */
	assert_int_equal(request(PM_Q_STOP, "trial=long1", text, sizeof(text)), 0);
	assert_true(pm_pump(&loop, sweep_over, NULL, 5000));
	assert_int_equal(nodes[0].s.gen.end_msg.status, 1);
	assert_true(sup_hears(&sups[0], "procmgr: sweep of 4 trials: 1 done, 3 failed"));
	ev = sweep_read("events");
	has(ev, "\"event\":\"trial_restart_requested\",\"trial\":\"long1\",\"attempt\":1,"
		"\"state\":\"running\",\"by\":\"");
	has(ev, "\"event\":\"trial_stop_requested\",\"trial\":\"later\",\"attempt\":0,"
		"\"state\":\"queued\"");
	has(ev, "\"event\":\"trial_end\",\"trial\":\"long1\",\"attempt\":1,\"state\":\"restarting\"");
	has(sweep_read("trials.results"), "last\tdone\t0\t0\t");
	/* After the end: nothing to stop. */
	assert_int_equal(pm_sweep_request(&nodes[0].s, false, "last", "me", msg, sizeof(msg)), -1);
	has(msg, "procmgr: cannot stop trial last of step 77.3: it has ended (done)");
}

/* --trial on a step that is no sweep. */
static void test_not_a_sweep(void **state)
{
	char text[4096];
	(void)state;

	node_up(0, 1, 2, 1, 0, 0, true);
	assert_int_equal(request(PM_Q_STOP, "trial=x", text, sizeof(text)), 1);
	has(text, "procmgr: step 77.3 is not a sweep: --trial names a trial of a --procmgr-sweep "
		  "step");
}

/* A sweep over two nodes: the status comes through the tree, the child's
 * node line before the trials, which only the root says. */
static void test_status_two_nodes(void **state)
{
	char text[16384];
	(void)state;

	sweep_up(2, 2, 1, "[a] exec sleep 100\n[b ranks=2] echo RESULT acc=0.$RANK\n"
			  "[c] printf 'one\\ttwo\\n'; exit 6\n");
	assert_true(pm_pump(&loop, sup_running, &sups[0], 5000));
	assert_int_equal(request(PM_Q_STATUS, "-", text, sizeof(text)), 0);
	has(text, "name=127.0.0.2 phase=sweep");
	has(text, "trial a running 127.0.0.1:0 0 ");
	has(text, "trial b queued - 0 0 - - -");
	/* The query on the other node: no trial lines of its own. */
	assert_null(strstr(strstr(text, "name=127.0.0.2"), "trial a"));
	assert_int_equal(request(PM_Q_STOP, "trial=a", text, sizeof(text)), 0);
	assert_true(pm_pump(&loop, sweep_over, NULL, 5000));
	has(sweep_read("trials.results"), "b\tdone\t0\t0\t");
	/* Asked after the end: every trial's line, an error's tab a blank. */
	assert_int_equal(request(PM_Q_STATUS, "-", text, sizeof(text)), 0);
	has(text, "trial a failed - 0 ");
	has(text, "trial c failed - 0 ");
	has(text, " 6 - one two\n");
	/* Issue 32 (12): a result between the exit and the error. */
	has(text, "trial b done - 0 ");
	has(text, " 0 acc=0.0 -\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stop_restart_trial, sweep_setup, sweep_teardown),
		cmocka_unit_test_setup_teardown(test_not_a_sweep, sweep_setup, sweep_teardown),
		cmocka_unit_test_setup_teardown(test_status_two_nodes, sweep_setup, sweep_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
