/* The procmgr command's step commands (cmd_status.c, cmd_events.c,
 * cmd_stacks.c, cmd_stop.c, cmd_restart.c through client.c) against a real
 * root: stepnet.c's in-process procmgrd nodes, served from a thread while
 * the command runs in the test's, found through a fake scontrol and squeue
 * (clitest.h), munge replaced by fake_auth.c. Each test asserts what the
 * user sees: the text and JSON, the exit status, the error said. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cmd.h"
#include "client.h"
#include "clitest.h"
#include "procmgrd/gate_rule.h"
#include "procmgrd/query.h"
#include "pump.h"
#include "stepnet.h"

/* ---- the root, served from a thread while a command runs ---- */

static pthread_t server;
static atomic_int serving;
/* Called on the server's thread every few ms while a command runs; true:
 * leave the loop to run act (what must not run inside it: a node going
 * down). */
static bool (*tick)(void);
static void (*act)(void);

static bool stop_serving(void *arg)
{
	(void)arg;
	return !atomic_load(&serving) || (tick && tick());
}

static void *serve(void *arg)
{
	(void)arg;
	while (atomic_load(&serving)) {
		pm_pump(&loop, stop_serving, NULL, 60000);
		if (atomic_load(&serving) && act) {
			act();
			act = NULL;
		}
	}
	return NULL;
}

static void serve_start(void)
{
	atomic_store(&serving, 1);
	assert_int_equal(pthread_create(&server, NULL, serve, NULL), 0);
}

static void serve_stop(void)
{
	atomic_store(&serving, 0);
	assert_int_equal(pthread_join(server, NULL), 0);
}

static int up_cli(void **state)
{
	setup(state);
	cli_tools();
	cli_before = serve_start;
	cli_after = serve_stop;
	tick = NULL;
	act = NULL;
	unsetenv("SLURM_JOB_ID");
	setenv("PROCMGR_MUNGE_SOCKET", "/nonexistent/munge.socket", 1);
	return 0;
}

static int down_cli(void **state)
{
	cli_tools_gone();
	cli_before = cli_after = NULL;
	return teardown(state);
}

/* scontrol's line for step 77.3 on nodes (its root the first), the
 * step's reserved ports starting at the nodes' tree port. */
static void step_known(const char *id, const char *nodes)
{
	char cmd[64], text[512];

	snprintf(cmd, sizeof(cmd), "scontrol show step -o %s", id);
	snprintf(text, sizeof(text), "StepId=%s UserId=%s(%u) StepName=train State=RUNNING "
		 "Partition=all NodeList=%s Nodes=2 Tasks=2 ResvPorts=%u-%u\n", id,
		 getuid() ? "user" : "root", (unsigned)getuid(), nodes, port, port + 1);
	cli_answer(cmd, text, 0);
}

static bool ranks_in(void *arg)
{
	int i, n = *(int *)arg;

	for (i = 0; i < n; i++)
		if (!nodes[i].s.ranks[0])
			return false;
	return !nodes[1].up || nodes[1].s.parent_ok;
}

/* Root and one child, a supervisor each, generation 0 running. */
static void two_nodes(struct peer *r0, struct peer *r1)
{
	int n = 2;

	node_up(0, 2, 2, 1, 0, 0, true);
	node_up(1, 2, 2, 1, 0, 0, true);
	attach_to_parent(&nodes[1]);
	rank_pair(&nodes[0], r0);
	rank_hello(r0, 0, 0);
	rank_pair(&nodes[1], r1);
	rank_hello(r1, 0, 1);
	assert_true(pm_pump(&loop, ranks_in, &n, 5000));
	step_known("77.3", "127.0.0.[1-2]");
}

static void test_status(void **state)
{
	struct peer r0, r1;
	struct cli_out o;
	(void)state;

	two_nodes(&r0, &r1);
	cli_run(&o, pm_cmd_status, "status", "77.3", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "step 77.3: ");
	cli_has(o.out, "RANK   LOCAL NODE");
	cli_has(o.out, "127.0.0.2"); /* the child's rank, through the tree */
	cli_has(o.out, "NODE   NAME");
	assert_string_equal(o.err, "");
	cli_has(o.log, "asks for status");
	/* JSON: one object, both ranks and both nodes. */
	cli_run(&o, pm_cmd_status, "status", "--json", "77.3", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "{\"job\":77,\"step\":3,\"summary\":{\"text\":");
	cli_has(o.out, "\"nodes\":2,\"nodes_answering\":2,\"ranks\":2");
	cli_has(o.out, "{\"rank\":1,\"local_rank\":0,\"node\":\"127.0.0.2\",\"node_id\":1");
	cli_has(o.out, "{\"node_id\":0,\"name\":\"127.0.0.1\"");
	assert_int_equal(o.out[strlen(o.out) - 2], '}');
	peer_free(&r0);
	peer_free(&r1);
}

/* No step named: the job's running steps (squeue), batch and extern left
 * out; none: said. */
static void test_status_default_steps(void **state)
{
	struct peer r0, r1;
	struct cli_out o;
	(void)state;

	two_nodes(&r0, &r1);
	setenv("SLURM_JOB_ID", "77", 1);
	cli_answer("squeue -h -s -j 77 -o %i", "77.batch\n77.extern\n77.3\n", 0);
	cli_run(&o, pm_cmd_status, "status", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "step 77.3: ");
	cli_answer("squeue -h -s -j 77 -o %i", "77.batch\n", 0);
	cli_run(&o, pm_cmd_status, "status", "--json", NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "procmgr status: no running step of this job; name one");
	cli_answer("squeue -h -s -j 77 -o %i", "squeue: error: Invalid job id specified\n", 1);
	cli_run(&o, pm_cmd_status, "status", NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "procmgr status: squeue failed: squeue: error: Invalid job id");
	/* No job: the user's steps. */
	unsetenv("SLURM_JOB_ID");
	cli_answer("squeue -h -s --me -o %i", "", 0);
	cli_run(&o, pm_cmd_status, "status", NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "no running step of yours");
	peer_free(&r0);
	peer_free(&r1);
}

/* The step asked is not there, or named wrongly: said, exit 1 or 2. */
static void test_no_step(void **state)
{
	struct cli_out o;
	(void)state;

	node_up(0, 1, 2, 1, 0, 0, true);
	cli_run(&o, pm_cmd_status, "status", "78", NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "procmgr status: no running step 78.0 (scontrol: slurm_load_jobs error");
	/* Named wrongly: a usage error (2), for every command as for events. */
	cli_run(&o, pm_cmd_stacks, "stacks", "12x", NULL);
	assert_int_equal(o.rc, 2);
	cli_has(o.err, "procmgr stacks: bad step '12x' (allowed: JOBID or JOBID.STEP");
	cli_run(&o, pm_cmd_status, "status", "x.1", NULL);
	assert_int_equal(o.rc, 2);
	cli_has(o.err, "procmgr status: bad step 'x.1' (allowed: JOBID or JOBID.STEP");
	cli_run(&o, pm_cmd_stop, "stop", "7.", NULL);
	assert_int_equal(o.rc, 2);
	cli_has(o.err, "procmgr stop: bad step '7.' (allowed: JOBID or JOBID.STEP");
	cli_run(&o, pm_cmd_restart, "restart", "-3", NULL);
	assert_int_equal(o.rc, 2);
	cli_run(&o, pm_cmd_events, "events", "12x", NULL);
	assert_int_equal(o.rc, 2);
	cli_run(&o, pm_cmd_stop, "stop", NULL);
	assert_int_equal(o.rc, 2);
	cli_has(o.err, "procmgr stop: which step? JOBID[.STEP] is needed");
	cli_run(&o, pm_cmd_restart, "restart", "77.3", "--trial", "a b", NULL);
	assert_int_equal(o.rc, 2);
	cli_has(o.err, "procmgr restart: --trial: ");
	cli_run(&o, pm_cmd_status, "status", "77.3", "--colour", NULL);
	assert_int_equal(o.rc, 2);
	cli_has(o.err, "unexpected argument '--colour'");
	cli_run(&o, pm_cmd_stop, "stop", "-h", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "usage: procmgr stop JOBID[.STEP] [--trial NAME]");
	cli_run(&o, pm_cmd_restart, "restart", "--help", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "usage: procmgr restart JOBID[.STEP]");
}

static bool got_type(void *arg)
{
	struct peer *p = arg;
	int i;

	for (i = 0; i < p->n && i < 16; i++)
		if (p->got[i].type == PM_MSG_START)
			return true;
	return false;
}

static void test_stop_and_restart(void **state)
{
	struct peer r0, r1;
	struct cli_out o;
	(void)state;

	two_nodes(&r0, &r1);
	pm_gen_local_ready(&nodes[1].s.gen);
	pm_gen_local_ready(&nodes[0].s.gen);
	assert_true(pm_pump(&loop, got_type, &r0, 5000));
	/* A trial in a step that is no sweep: the root's refusal, exit 1. */
	cli_run(&o, pm_cmd_restart, "restart", "77.3", "--trial", "lr1", NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "procmgr: step 77.3 is not a sweep: --trial names a trial");
	cli_has(o.log, "asks for restart (trial=lr1)");
	cli_run(&o, pm_cmd_stop, "stop", "77.3", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "procmgr: step 77.3: stopping every rank\n");
	/* Stopping: neither a second stop nor a restart now. */
	cli_run(&o, pm_cmd_stop, "stop", "77.3", NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "procmgr: cannot stop step 77.3 now");
	assert_string_equal(o.out, "");
	cli_run(&o, pm_cmd_restart, "restart", "77.3", NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "procmgr: cannot restart step 77.3 now");
	peer_free(&r0);
	peer_free(&r1);
}

/* ---- events: the log, and following it until the step's end ---- */

static char evpath[64];

static void with_log(const char *text)
{
	FILE *f;
	int fd;

	snprintf(evpath, sizeof(evpath), "/tmp/pm-test-cli-ev-XXXXXX");
	fd = mkstemp(evpath);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	pm_query_free(&nodes[0].s);
	assert_int_equal(pm_query_init(&nodes[0].s, "/nonexistent", evpath), 0);
}

static void root_down(void)
{
	node_down(&nodes[0]);
}

/* The root, following: once the command shows the first line, a second is
 * written; once it shows that, the step ends (its procmgrd goes). */
static int follow_stage;

static bool follow_tick(void)
{
	const char *out = cli_out_now();

	if (follow_stage == 0 && strstr(out, "launch")) {
		FILE *f = fopen(evpath, "a");
		fputs("{\"time\":2.5,\"step\":\"77.3\",\"event\":\"finished\",\"gen\":0}\n", f);
		fclose(f);
		pm_query_event_written(&nodes[0].s, "finished");
		follow_stage = 1;
	} else if (follow_stage == 1 && strstr(out, "finished")) {
		follow_stage = 2;
		act = root_down;
		return true;
	}
	return false;
}

static void test_events(void **state)
{
	struct cli_out o;
	(void)state;

	node_up(0, 2, 2, 1, 0, 0, true);
	step_known("77.3", "127.0.0.[1-2]");
	cli_run(&o, pm_cmd_events, "events", "77.3", NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "procmgr events: procmgr: this step keeps no event log");
	with_log("{\"time\":1.5,\"step\":\"77.3\",\"event\":\"launch\",\"nodes\":2,"
		 "\"by\":\"a,b\\\"c\"}\n{\"time\":2,\"event\":\"start\",\"gen\":0,\"x\":\"\x1b[2J\"}\n"
		 "not json\n");
	cli_run(&o, pm_cmd_events, "events", "77.3", NULL);
	assert_int_equal(o.rc, 0);
	/* Members after the event, keys unquoted; a comma inside a string
	 * stays; no terminal control from the user's file. */
	cli_has(o.out, "1.5 launch nodes=2 by=\"a,b\\\"c\"\n2 start gen=0 x=\"?[2J\"\nnot json\n");
	cli_run(&o, pm_cmd_events, "events", "--json", "77.3", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "{\"time\":1.5,\"step\":\"77.3\",\"event\":\"launch\"");
	/* Following: what comes is printed as it comes; the step's end ends it
	 * (exit 0). */
	tick = follow_tick;
	follow_stage = 0;
	cli_run(&o, pm_cmd_events, "events", "77.3", "-f", NULL);
	tick = NULL;
	assert_int_equal(follow_stage, 2);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "1.5 launch");
	cli_has(o.out, "2.5 finished gen=0\n");
	unlink(evpath);
}

/* ---- stacks: grouped, the outlier last ---- */

static bool took_start(void *arg)
{
	struct peer *r = arg;
	int i, k;

	for (k = 0; k < 3; k++)
		if (!got_type(&r[k]))
			return false;
	for (i = 0; i < 3; i++)
		if (nodes[0].s.cmd_pgid[i] <= 0)
			return false;
	return true;
}

static bool three_in(void *arg)
{
	(void)arg;
	return nodes[0].s.ranks[0] && nodes[0].s.ranks[1] && nodes[0].s.ranks[2];
}

/* One node, three ranks running with (fake) pids 4101-4103. */
static void three_ranks(struct peer *r)
{
	int i;

	node_up(0, 1, 2, 3, 0, 0, true);
	for (i = 0; i < 3; i++) {
		rank_pair(&nodes[0], &r[i]);
		rank_hello(&r[i], i, i);
	}
	assert_true(pm_pump(&loop, three_in, NULL, 5000));
	pm_gen_local_ready(&nodes[0].s.gen);
	assert_true(pm_pump(&loop, got_type, &r[0], 5000));
	for (i = 0; i < 3; i++) {
		struct pm_msg m;
		pm_msg_init(&m, PM_MSG_RANK_RUN);
		m.gen = 0;
		m.status = 4101 + i;
		assert_int_equal(pm_conn_send(r[i].c, &m), 0);
	}
	assert_true(pm_pump(&loop, took_start, r, 5000));
	pm_query_free(&nodes[0].s);
	assert_int_equal(pm_query_init(&nodes[0].s, cli_dir(), NULL), 0);
	step_known("77.3", "127.0.0.1");
}

static void test_stacks(void **state)
{
	struct peer r[3];
	struct cli_out o;
	char path[128];
	int i;
	(void)state;

	cli_fake_gdb();
	three_ranks(r);
	cli_run(&o, pm_cmd_stacks, "stacks", "77.3", NULL);
	assert_int_equal(o.rc, 0);
	/* Each rank's main thread: ranks 0 and 1 alike, their other
	 * threads aside. */
	cli_has(o.out, "step 77.3: stacks of 3 ranks, 3 taken, 2 distinct (each rank's main "
		       "thread, by its Python frames where it has them; --native for every "
		       "thread)\n");
	cli_has(o.out, "\n== ranks 0-1 (2) in ");
	cli_has(o.out, "allreduce");
	cli_has(o.out, "\n== rank 2 (1) in ");
	cli_has(o.out, "barrier_wait");
	assert_true(strstr(o.out, "ranks 0-1") < strstr(o.out, "rank 2 (1)"));
	assert_null(strchr(o.out, '\x1b')); /* the user's text, made visible */
	assert_null(strstr(o.out, "waitSend"));
	/* --native: every thread, so that ranks 0 and 1 differ. */
	cli_run(&o, pm_cmd_stacks, "stacks", "77.3", "--native", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "step 77.3: stacks of 3 ranks, 3 taken, 3 distinct\n");
	cli_has(o.out, "waitSend");
	cli_has(o.out, "waitRecv");
	cli_run(&o, pm_cmd_stacks, "stacks", "77.3", "--json", "--rank", "1-2", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "{\"job\":77,\"step\":3,\"ranks\":2,\"taken\":2,\"native\":false,"
		       "\"groups\":[{\"ranks\":[1],\"count\":1,\"top\":");
	cli_has(o.out, "{\"ranks\":[2],\"count\":1,");
	cli_has(o.out, "\\u001b[31m");
	cli_has(o.out, "],\"missing\":[],\"notes\":[]}\n");
	cli_run(&o, pm_cmd_stacks, "stacks", "77.3", "--rank", "x", NULL);
	assert_int_equal(o.rc, 2);
	cli_has(o.err, "procmgr stacks: --rank: ");
	/* No tool on the node: its note, in both forms. */
	snprintf(path, sizeof(path), "%s/gdb", cli_dir());
	unlink(path);
	setenv("PATH", cli_dir(), 1);
	cli_run(&o, pm_cmd_stacks, "stacks", "77.3", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "step 77.3: stacks of 0 ranks, 0 taken, 0 distinct (each rank's main");
	cli_has(o.out, "no stack tool: install gdb");
	cli_run(&o, pm_cmd_stacks, "stacks", "--json", "77.3", NULL);
	cli_has(o.out, "\"groups\":[],\"missing\":[],\"notes\":[\"procmgr: ");
	for (i = 0; i < 3; i++)
		peer_free(&r[i]);
}

/* ---- the root found, and proven ---- */

/* With spares the root may have moved: node 0 says it is not the root and
 * the next candidate is asked. */
static void test_root_moved(void **state)
{
	struct peer r0, r1;
	struct cli_out o;
	(void)state;

	two_nodes(&r0, &r1);
	step_known("77.3", "127.0.0.2,127.0.0.1");
	cli_run(&o, pm_cmd_status, "status", "77.3", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "step 77.3: ");
	assert_string_equal(o.err, "");
	/* No candidate is the root: what the first said. */
	step_known("77.3", "127.0.0.2");
	cli_run(&o, pm_cmd_status, "status", "77.3", NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "procmgr status: procmgr: node 127.0.0.2 is not the step's root\n");
	peer_free(&r0);
	peer_free(&r1);
}

static void drain(void)
{
	while (pm_bucket_take(&nodes[0].s.cred_bucket, pm_now_ms(), PM_GATE_CRED_RATE,
			      PM_GATE_CRED_BURST))
		;
	nodes[0].s.cred_bucket.tokens_milli = 0; /* not even part of the next one */
}

static bool drain_tick(void)
{
	drain();
	return false;
}

/* Busy until the root has said so once. */
static bool drain_once_tick(void)
{
	if (!nodes[0].s.refused_logged)
		drain();
	return false;
}

static int count(void *arg, const struct pm_msg *m)
{
	(void)m;
	++*(int *)arg;
	return 0;
}

/* Busy (over the root's rate of credentials): asked again after a pause,
 * within the command's time; still busy at its end: said. */
static void test_busy(void **state)
{
	struct cli_out o;
	struct pm_target t;
	struct pm_msg end;
	char why[512];
	int n = 0;
	(void)state;

	node_up(0, 1, 2, 1, 0, 0, true);
	step_known("77.3", "127.0.0.1");
	drain();
	tick = drain_once_tick;
	cli_run(&o, pm_cmd_status, "status", "77.3", NULL);
	tick = NULL;
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "step 77.3: ");
	cli_has(o.log, "over the rate (told busy)");
	assert_int_equal(pm_client_target(77, 3, &t, why, sizeof(why)), 0);
	tick = drain_tick;
	drain(); /* before the server's first tick */
	serve_start();
	assert_int_equal(pm_client_ask(&t, PM_Q_STATUS, "-", 1300, count, &n, &end, why,
				       sizeof(why)), -1);
	serve_stop();
	tick = NULL;
	assert_int_equal(n, 0);
	cli_has(why, "refused: busy (step 77.3's procmgrd on 127.0.0.1: too many requests");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_status, up_cli, down_cli),
		cmocka_unit_test_setup_teardown(test_status_default_steps, up_cli, down_cli),
		cmocka_unit_test_setup_teardown(test_no_step, up_cli, down_cli),
		cmocka_unit_test_setup_teardown(test_stop_and_restart, up_cli, down_cli),
		cmocka_unit_test_setup_teardown(test_events, up_cli, down_cli),
		cmocka_unit_test_setup_teardown(test_stacks, up_cli, down_cli),
		cmocka_unit_test_setup_teardown(test_root_moved, up_cli, down_cli),
		cmocka_unit_test_setup_teardown(test_busy, up_cli, down_cli),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
