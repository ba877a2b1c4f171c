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
	struct pm_request r = { .kind = kind, .job = job, .step = step, .port = port };
	char payload[PM_REQ_MAX], err[128], *cred = NULL;
	static unsigned nonce;
	struct pm_msg m;

	snprintf(r.args, sizeof(r.args), "%s", args);
	/* Signed for the node it is sent to, with a nonce of its own. */
	snprintf(r.host, sizeof(r.host), "%s", to);
	snprintf(r.nonce, sizeof(r.nonce), "%0*x", PM_REQ_NONCE_HEX, ++nonce);
	assert_int_equal(pm_request_format(&r, payload, sizeof(payload)), 0);
	assert_int_equal(pm_auth_encode(NULL, payload, &cred, err, sizeof(err)), 0);
	peer_open(p, dial("127.0.0.9", to));
	p->client = true;
	pm_msg_init(&m, PM_MSG_CLIENT);
	pm_msg_set_text(&m, cred);
	free(cred);
	assert_int_equal(pm_conn_send(p->c, &m), 0);
}

static bool ended(void *arg)
{
	struct peer *p = arg;
	int i;

	for (i = 0; i < p->n && i < 16; i++)
		if (p->got[i].type == PM_MSG_ANSWER_END || p->got[i].type == PM_MSG_REFUSED)
			return true;
	return p->closed;
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
	assert_true(pm_pump(&loop, ended, &p, 5000));
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
	assert_true(pm_pump(&loop, ended, &p, 5000));
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
	assert_true(pm_pump(&loop, ended, &p, 5000));
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
	assert_true(pm_pump(&loop, ended, &p, 5000));
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
	assert_true(pm_pump(&loop, ended, &p, 5000));
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
	assert_true(pm_pump(&loop, ended, &p, 5000));
	assert_int_equal(last(&p)->status, 1);
	has(last(&p)->text, "this step keeps no event log");
	peer_free(&p);
	/* The root's log (main.c gives it at start). */
	pm_query_free(&nodes[0].s);
	assert_int_equal(pm_query_init(&nodes[0].s, "/nonexistent", path), 0);
	ask(&p, "127.0.0.1", PM_Q_EVENTS, JOB, STEP, "0");
	assert_true(pm_pump(&loop, ended, &p, 5000));
	assert_int_equal(p.got[0].type, PM_MSG_ANSWER);
	has(p.got[0].text, "\"event\":\"launch\"");
	has(p.got[0].text, "\"event\":\"start\"");
	assert_int_equal(last(&p)->status, 0);
	peer_free(&p);
	/* From an offset: what follows it. */
	ask(&p, "127.0.0.1", PM_Q_EVENTS, JOB, STEP, "19");
	assert_true(pm_pump(&loop, ended, &p, 5000));
	assert_null(strstr(p.got[0].text, "launch"));
	has(p.got[0].text, "\"event\":\"start\"");
	peer_free(&p);
	ask(&p, "127.0.0.1", PM_Q_EVENTS, JOB, STEP, "x1");
	assert_true(pm_pump(&loop, ended, &p, 5000));
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_who_may_ask, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_through_the_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_child_absent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_and_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
