/* What the procmgr command asks a step's root (procmgrd/query.c and
 * query_status.c), in-process over loopback TCP (stepnet.c): who may ask
 * (the job's user, proven by a credential naming the request; the right
 * step; the root only), status through the tree, the event log and
 * following it, stop and restart, and one request per connection. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/request.h"
#include "io/auth.h"
#include "procmgrd/query.h"
#include "pump.h"
#include "stepnet.h"

/* A procmgr command's connection, from an address that is no node's. */
static void ask(struct peer *p, const char *to, enum pm_query_kind kind, unsigned job,
		unsigned step, const char *args)
{
	static unsigned nonce;

	/* Signed for the node it is sent to, with a nonce of its own. */
	client_ask(p, to, to, kind, job, step, ++nonce, args);
}


/* The last frame: its END (or REFUSED), after the answers. */
static const struct pm_msg *last(const struct peer *p)
{
	assert_true(p->n > 0 && p->n <= 16);
	return &p->got[p->n - 1];
}

static void has(const char *text, const char *what)
{
	if (!strstr(text, what))
		fail_msg("'%s' not in '%s'", what, text);
}

static void refused(const char *to, enum pm_query_kind kind, unsigned job, unsigned step,
		    const char *why)
{
	struct peer p;

	ask(&p, to, kind, job, step, "-");
	assert_true(pm_pump(&loop, peer_closed, &p, 5000));
	assert_int_equal(last(&p)->type, PM_MSG_REFUSED);
	has(last(&p)->text, why);
}

static bool up(void *arg)
{
	(void)arg;
	return nodes[1].s.parent_ok && nodes[0].s.ranks[0] && nodes[1].s.ranks[0];
}

/* Root and one child, a supervisor each. */
static void two_nodes(struct peer *r0, struct peer *r1)
{
	node_up(0, 2, 2, 1, 0, 0, true);
	node_up(1, 2, 2, 1, 0, 0, true);
	attach_to_parent(&nodes[1]);
	rank_pair(&nodes[0], r0);
	rank_hello(r0, 0, 0);
	rank_pair(&nodes[1], r1);
	rank_hello(r1, 0, 1);
	assert_true(pm_pump(&loop, up, NULL, 5000));
}

static void test_who_may_ask(void **state)
{
	struct peer r0, r1, p;
	(void)state;

	two_nodes(&r0, &r1);
	refused("127.0.0.1", PM_Q_STATUS, JOB, STEP + 1, "this is step 77.3, not 77.4");
	refused("127.0.0.1", PM_Q_STATUS, JOB + 1, STEP, "not 78.3");
	pm_fake_auth_uid = (long)getuid() + 1;
	refused("127.0.0.1", PM_Q_STATUS, JOB, STEP, "only");
	pm_fake_auth_uid = -1;
	refused("127.0.0.2", PM_Q_STATUS, JOB, STEP, "node 127.0.0.2 is not the step's root");
	/* A credential that is none. */
	peer_open(&p, dial("127.0.0.9", "127.0.0.1"));
	{
		struct pm_msg m;
		pm_msg_init(&m, PM_MSG_CLIENT);
		pm_msg_set_text(&m, "MUNGE:garbage");
		assert_int_equal(pm_conn_send(p.c, &m), 0);
	}
	assert_true(pm_pump(&loop, peer_closed, &p, 5000));
	assert_int_equal(last(&p)->type, PM_MSG_REFUSED);
	has(last(&p)->text, "invalid munge credential");
	/* The step goes on. */
	assert_false(pm_gen_terminal(&nodes[0].s.gen));
	peer_free(&r0);
	peer_free(&r1);
}

static void test_status_through_the_tree(void **state)
{
	struct peer r0, r1, p;
	char all[16 * 1024] = "";
	int i;
	(void)state;

	two_nodes(&r0, &r1);
	ask(&p, "127.0.0.1", PM_Q_STATUS, JOB, STEP, "-");
	assert_true(pm_pump(&loop, client_answered, &p, 5000));
	for (i = 0; i < p.n - 1 && i < 15; i++) {
		assert_int_equal(p.got[i].type, PM_MSG_ANSWER);
		strncat(all, p.got[i].text, sizeof(all) - strlen(all) - 1);
	}
	assert_int_equal(last(&p)->type, PM_MSG_ANSWER_END);
	assert_int_equal(last(&p)->status, 0);
	has(all, "127.0.0.1");
	has(all, "127.0.0.2"); /* the child's own answer, through the tree */
	/* One request per connection: a second frame closes it. */
	if (p.c) {
		struct pm_msg m;
		pm_msg_init(&m, PM_MSG_CLIENT);
		pm_conn_send(p.c, &m);
		assert_true(pm_pump(&loop, peer_closed, &p, 5000));
	}
	peer_free(&p);
	peer_free(&r0);
	peer_free(&r1);
}

/* A child that is not there yet is said absent, and the answer still
 * ends. */
static void test_status_child_absent(void **state)
{
	struct peer p;
	char all[8192] = "";
	int i;
	(void)state;

	node_up(0, 2, 2, 1, 0, 0, true);
	ask(&p, "127.0.0.1", PM_Q_STATUS, JOB, STEP, "-");
	assert_true(pm_pump(&loop, client_answered, &p, 5000));
	for (i = 0; i < p.n && i < 16; i++)
		strncat(all, p.got[i].text, sizeof(all) - strlen(all) - 1);
	has(all, "absent");
	assert_int_equal(last(&p)->type, PM_MSG_ANSWER_END);
	peer_free(&p);
}

static bool got_type(const struct peer *p, int type)
{
	int i;

	for (i = 0; i < p->n && i < 16; i++)
		if (p->got[i].type == type)
			return true;
	return false;
}

static bool started(void *arg)
{
	return got_type(arg, PM_MSG_START);
}

static bool aborted(void *arg)
{
	return got_type(arg, PM_MSG_ABORT);
}

static void test_stop_and_restart(void **state)
{
	struct peer r0, r1, p;
	(void)state;

	two_nodes(&r0, &r1);
	/* Not running yet: nothing to restart. */
	ask(&p, "127.0.0.1", PM_Q_RESTART, JOB, STEP, "-");
	assert_true(pm_pump(&loop, client_answered, &p, 5000));
	assert_int_equal(last(&p)->type, PM_MSG_ANSWER_END);
	if (last(&p)->status == 0)
		has(last(&p)->text, "restarting every rank");
	else
		has(last(&p)->text, "cannot restart step 77.3 now");
	peer_free(&p);
	/* Generation 0 starts on both nodes. */
	pm_gen_local_ready(&nodes[1].s.gen);
	pm_gen_local_ready(&nodes[0].s.gen);
	assert_true(pm_pump(&loop, started, &r0, 5000));
	assert_true(pm_pump(&loop, started, &r1, 5000));
	ask(&p, "127.0.0.1", PM_Q_STOP, JOB, STEP, "-");
	assert_true(pm_pump(&loop, client_answered, &p, 5000));
	assert_int_equal(last(&p)->type, PM_MSG_ANSWER_END);
	assert_int_equal(last(&p)->status, 0);
	has(last(&p)->text, "step 77.3: stopping every rank");
	peer_free(&p);
	/* The ranks are told the end (status 0: on purpose), on both nodes;
	 * a second stop is too late. */
	assert_true(pm_pump(&loop, aborted, &r0, 5000));
	assert_true(pm_pump(&loop, aborted, &r1, 5000));
	assert_int_equal(r1.got[r1.n - 1].status, 0);
	has(r1.got[r1.n - 1].text, "asked to stop the step");
	ask(&p, "127.0.0.1", PM_Q_STOP, JOB, STEP, "-");
	assert_true(pm_pump(&loop, client_answered, &p, 5000));
	assert_int_equal(last(&p)->status, 1);
	has(last(&p)->text, "cannot stop step 77.3 now");
	peer_free(&p);
	peer_free(&r0);
	peer_free(&r1);
}

static void test_events(void **state)
{
	struct peer p;
	char path[] = "/tmp/pm-events-XXXXXX";
	int fd = mkstemp(path);
	const char *log = "{\"event\":\"launch\"}\n{\"event\":\"start\",\"gen\":0}\n";
	(void)state;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, log, strlen(log)), (ssize_t)strlen(log));
	close(fd);
	node_up(0, 1, 2, 1, 0, 0, true);
	/* No log kept: said so. */
	ask(&p, "127.0.0.1", PM_Q_EVENTS, JOB, STEP, "0");
	assert_true(pm_pump(&loop, client_answered, &p, 5000));
	assert_int_equal(last(&p)->status, 1);
	has(last(&p)->text, "this step keeps no event log");
	peer_free(&p);
	/* The root's log (main.c gives it at start). */
	pm_query_free(&nodes[0].s);
	assert_int_equal(pm_query_init(&nodes[0].s, "/nonexistent", path), 0);
	ask(&p, "127.0.0.1", PM_Q_EVENTS, JOB, STEP, "0");
	assert_true(pm_pump(&loop, client_answered, &p, 5000));
	assert_int_equal(p.got[0].type, PM_MSG_ANSWER);
	has(p.got[0].text, "\"event\":\"launch\"");
	has(p.got[0].text, "\"event\":\"start\"");
	assert_int_equal(last(&p)->status, 0);
	peer_free(&p);
	/* From an offset: what follows it. */
	ask(&p, "127.0.0.1", PM_Q_EVENTS, JOB, STEP, "19");
	assert_true(pm_pump(&loop, client_answered, &p, 5000));
	assert_null(strstr(p.got[0].text, "launch"));
	has(p.got[0].text, "\"event\":\"start\"");
	peer_free(&p);
	ask(&p, "127.0.0.1", PM_Q_EVENTS, JOB, STEP, "x1");
	assert_true(pm_pump(&loop, client_answered, &p, 5000));
	has(last(&p)->text, "bad offset");
	peer_free(&p);
	/* Following: what is written later comes as it is written. */
	ask(&p, "127.0.0.1", PM_Q_EVENTS, JOB, STEP, "follow:0");
	assert_true(pm_pump(&loop, peer_got, &p, 5000));
	assert_int_equal(p.got[0].type, PM_MSG_ANSWER);
	{
		FILE *f = fopen(path, "a");
		fprintf(f, "{\"event\":\"end\"}\n");
		fclose(f);
	}
	pm_query_event_written(&nodes[0].s, "end");
	assert_true(pm_pump(&loop, NULL, NULL, 50));
	assert_true(p.n >= 2);
	has(p.got[p.n - 1].text, "\"event\":\"end\"");
	peer_free(&p);
	pm_pump(&loop, NULL, NULL, 20); /* the root sees the follower go */
	node_down(&nodes[0]);
	unlink(path);
}

/* ---- stacks, taken now (query_stacks.c) ---- */

/* A stand-in for gdb on PATH: prints a stack naming the pid it was given;
 * with DIR/fail it says what ptrace says, with DIR/hang it never ends. */
static char sdir[64], oldpath[4096];

static void fake_gdb(void)
{
	char path[128];
	FILE *f;

	snprintf(sdir, sizeof(sdir), "/tmp/pm-test-stacks-XXXXXX");
	assert_non_null(mkdtemp(sdir));
	snprintf(path, sizeof(path), "%s/gdb", sdir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n"
		   "while [ $# -gt 0 ] && [ \"$1\" != -p ]; do shift; done\n"
		   "if [ -e %s/hang ]; then exec /bin/sleep 1000; fi\n"
		   "if [ -e %s/fail ]; then echo 'ptrace: Operation not permitted.'; exit 1; fi\n"
		   "echo \"Thread 1 (Thread 0x7f (LWP $2)):\"\n"
		   "echo \"#0  0x0000 in work_$2 (n=1) at train.c:42\"\n"
		   "echo \"#1  0x0000 in main () at train.c:7\"\n", sdir, sdir);
	fclose(f);
	assert_int_equal(chmod(path, 0700), 0);
	if (!oldpath[0]) /* a failed test did not put it back */
		snprintf(oldpath, sizeof(oldpath), "%s", getenv("PATH") ? getenv("PATH") : "");
	setenv("PATH", sdir, 1);
}

static void fake_gdb_gone(void)
{
	char cmd[128];

	setenv("PATH", oldpath, 1);
	snprintf(cmd, sizeof(cmd), "/bin/rm -rf %s", sdir);
	assert_int_equal(system(cmd), 0);
}

static pid_t sleeper(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed test leaves none */
		setpgid(0, 0);
		for (;;)
			pause();
	}
	setpgid(pid, pid);
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static bool both_in(void *arg)
{
	(void)arg;
	return nodes[0].s.ranks[0] && nodes[0].s.ranks[1];
}

/* One node, two ranks running generation 0, each rank's command a real
 * process. (One node: the debuggers' one-at-a-time table is procmgrd's,
 * one per node, and the nodes here share a process.) */
static void running(struct peer *r0, struct peer *r1, pid_t *cmd)
{
	int i;

	node_up(0, 1, 2, 2, 0, 0, true);
	rank_pair(&nodes[0], r0);
	rank_hello(r0, 0, 0);
	rank_pair(&nodes[0], r1);
	rank_hello(r1, 1, 1);
	assert_true(pm_pump(&loop, both_in, NULL, 5000));
	pm_gen_local_ready(&nodes[0].s.gen);
	assert_true(pm_pump(&loop, started, r0, 5000));
	assert_true(pm_pump(&loop, started, r1, 5000));
	for (i = 0; i < 2; i++) {
		struct pm_msg m;
		cmd[i] = sleeper();
		pm_msg_init(&m, PM_MSG_RANK_RUN);
		m.gen = 0;
		m.status = (int)cmd[i];
		assert_int_equal(pm_conn_send((i ? r1 : r0)->c, &m), 0);
	}
	/* The tools write where the query's run directory is. */
	pm_query_free(&nodes[0].s);
	assert_int_equal(pm_query_init(&nodes[0].s, sdir, NULL), 0);
	assert_true(pm_pump(&loop, NULL, NULL, 50));
	assert_int_equal(nodes[0].s.cmd_pgid[0], cmd[0]);
	assert_int_equal(nodes[0].s.cmd_pgid[1], cmd[1]);
}

static void answers(const struct peer *p, char *all, size_t len)
{
	int i;

	all[0] = '\0';
	for (i = 0; i < p->n - 1 && i < 15; i++) {
		assert_int_equal(p->got[i].type, PM_MSG_ANSWER);
		strncat(all, p->got[i].text, len - strlen(all) - 1);
	}
	assert_int_equal(last(p)->type, PM_MSG_ANSWER_END);
}

/* procmgr stacks: every rank's stack, the tool's own words when it gives
 * none, only the ranks asked for, and no tool at all. */
static void test_stacks(void **state)
{
	struct peer r0, r1, p;
	char all[16 * 1024], want[128];
	pid_t cmd[2];
	FILE *f;
	(void)state;

	fake_gdb();
	running(&r0, &r1, cmd);
	ask(&p, "127.0.0.1", PM_Q_STACKS, JOB, STEP, "-");
	assert_true(pm_pump(&loop, client_answered, &p, 5000));
	answers(&p, all, sizeof(all));
	snprintf(want, sizeof(want), "work_%d at train.c:42", (int)cmd[0]);
	has(all, want);
	snprintf(want, sizeof(want), "work_%d at train.c:42", (int)cmd[1]);
	has(all, want);
	peer_free(&p);
	/* Rank 1 only. */
	ask(&p, "127.0.0.1", PM_Q_STACKS, JOB, STEP, "1");
	assert_true(pm_pump(&loop, client_answered, &p, 5000));
	answers(&p, all, sizeof(all));
	has(all, want);
	snprintf(want, sizeof(want), "work_%d", (int)cmd[0]);
	assert_null(strstr(all, want));
	peer_free(&p);
	/* The tool cannot attach: its last words. */
	snprintf(want, sizeof(want), "%s/fail", sdir);
	f = fopen(want, "w");
	assert_non_null(f);
	fclose(f);
	ask(&p, "127.0.0.1", PM_Q_STACKS, JOB, STEP, "0");
	assert_true(pm_pump(&loop, client_answered, &p, 5000));
	answers(&p, all, sizeof(all));
	has(all, "ptrace: Operation not permitted.");
	peer_free(&p);
	/* No tool at all: said, per node. */
	setenv("PATH", "/nonexistent", 1);
	ask(&p, "127.0.0.1", PM_Q_STACKS, JOB, STEP, "-");
	assert_true(pm_pump(&loop, client_answered, &p, 5000));
	answers(&p, all, sizeof(all));
	has(all, "no stack tool: install gdb");
	peer_free(&p);
	reap(cmd[0]);
	reap(cmd[1]);
	peer_free(&r0);
	peer_free(&r1);
	fake_gdb_gone();
}

struct took {
	char text[4096];
	int each, fin;
};

static void took_each(struct pm_step *s, void *arg, int lrank, int grank, const char *text)
{
	struct took *t = arg;
	(void)s;
	(void)lrank;
	(void)grank;
	t->each++;
	snprintf(t->text, sizeof(t->text), "%s", text);
}

static void took_fin(struct pm_step *s, void *arg)
{
	(void)s;
	((struct took *)arg)->fin++;
}

static bool took_done(void *arg)
{
	return ((struct took *)arg)->fin > 0;
}

/* A tool that overruns its time is killed at the deadline, and the rank
 * said to have no stack; while it runs, a second capture of the same rank
 * is told another debugger holds it. */
static void test_stacks_deadline(void **state)
{
	struct peer r0, r1;
	struct took a = { .each = 0 }, b = { .each = 0 };
	struct pm_stacks *sa = NULL, *sb = NULL;
	char why[256], hang[128];
	pid_t cmd[2];
	FILE *f;
	(void)state;

	fake_gdb();
	running(&r0, &r1, cmd);
	snprintf(hang, sizeof(hang), "%s/hang", sdir);
	f = fopen(hang, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(pm_stacks_take(&nodes[0].s, "-", 300, took_each, took_fin, &a, &sa, why,
					sizeof(why)), 0);
	assert_int_equal(pm_stacks_take(&nodes[0].s, "-", 300, took_each, took_fin, &b, &sb, why,
					sizeof(why)), 1); /* nothing to take: said at once */
	assert_int_equal(b.each, 2); /* both ranks: held by the first */
	has(b.text, "another procmgr stacks is taking it now");
	assert_true(pm_pump(&loop, took_done, &a, 5000));
	assert_int_equal(a.each, 2);
	has(a.text, "the stack tool did not finish within 0.3 s");
	pm_stacks_cancel(sa);
	reap(cmd[0]);
	reap(cmd[1]);
	peer_free(&r0);
	peer_free(&r1);
	fake_gdb_gone();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_who_may_ask, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_through_the_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_child_absent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_and_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stacks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stacks_deadline, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
