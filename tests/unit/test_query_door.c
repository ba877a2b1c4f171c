/* The root's door for the procmgr command (procmgrd/query.c), beyond
 * test_queries.c: each refusal of a credential or a request (another
 * user's, a request of the old command, one that is none, one signed for
 * another node, a replay, a root that cannot prove itself), the event log
 * in frames of whole lines and its followers, and the tree's part of a
 * query: a child that never answers and is lost, a CLI that leaves before
 * its answer, a query of a kind the tree does not carry. In-process nodes
 * over loopback (stepnet.c), munge replaced by fake_auth.c. */
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
#include "pump.h"
#include "stepnet.h"

static void has(const char *text, const char *what)
{
	if (!strstr(text, what))
		fail_msg("'%s' not in '%s'", what, text);
}


/* A request for host (signed), nonce n, sent to the root. */
static void ask(struct peer *p, enum pm_query_kind kind, const char *host, unsigned n,
		const char *args)
{
	client_ask(p, "127.0.0.1", host, kind, JOB, STEP, n, args);
}

static bool done(void *arg)
{
	struct peer *p = arg;

	return (p->n > 0 && (p->got[p->n - 1].type == PM_MSG_ANSWER_END ||
			     p->got[p->n - 1].type == PM_MSG_REFUSED)) || p->closed;
}

/* Refused, with why. */
static void refused(struct peer *p, const char *why)
{
	assert_true(pm_pump(&loop, peer_closed, p, 5000));
	assert_true(p->n > 0);
	assert_int_equal(p->got[p->n - 1].type, PM_MSG_REFUSED);
	has(p->got[p->n - 1].text, why);
	peer_free(p);
}

static void test_refusals(void **state)
{
	struct peer p;
	(void)state;

	node_up(0, 2, 2, 1, 0, 0, true);
	/* Another user's step, not root's: who owns it and who asks. */
	nodes[0].s.uid = 4242001;
	pm_fake_auth_uid = 4242002;
	ask(&p, PM_Q_STATUS, "127.0.0.1", 1, "-");
	refused(&p, "procmgr: job 77 belongs to uid 4242001; only uid 4242001 and root may query "
		    "it (you are uid 4242002)");
	pm_fake_auth_uid = -1;
	nodes[0].s.uid = getuid();
	/* The old command's request, and one that is none. */
	client_send(&p, "127.0.0.1", "procmgr-client v1 status 77 3");
	refused(&p, "the procmgr command is older than this step's procmgrd");
	client_send(&p, "127.0.0.1", "hello there");
	refused(&p, "procmgr: not a procmgr request ('hello there')");
	/* Signed for another node, and relayed here. */
	ask(&p, PM_Q_STATUS, "127.0.0.2", 2, "-");
	refused(&p, "the request was signed for 127.0.0.2:");
	/* Answered once; the same request again is a replay. */
	ask(&p, PM_Q_STATUS, "127.0.0.1", 3, "-");
	assert_true(pm_pump(&loop, done, &p, 5000));
	assert_int_equal(p.got[p.n - 1].type, PM_MSG_ANSWER_END);
	peer_free(&p);
	ask(&p, PM_Q_STATUS, "127.0.0.1", 3, "-");
	refused(&p, "a replayed request (its nonce 00000000000000000000000000000003 was used "
		    "already)");
	/* The root cannot make its own credential: it cannot prove itself. */
	ask(&p, PM_Q_STATUS, "127.0.0.1", 4, "-");
	pm_fake_auth_fail = 1;
	refused(&p, "procmgr: step 77.3's procmgrd cannot prove itself: munge_encode: fake failure");
	pm_fake_auth_fail = 0;
	assert_int_equal(p.proofs, 0);
}

static char logpath[64];

static void write_log(const char *text)
{
	FILE *f = fopen(logpath, "a");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static bool got_later(void *arg)
{
	struct peer *p = arg;

	return p->n > 0 && strstr(p->got[p->n - 1].text, "\"event\":\"later\"");
}

/* The event log: frames of whole lines, the end's count the next offset;
 * a log that cannot be read; five followers (their table grows), each
 * getting what is written, and one leaving. */
static void test_events(void **state)
{
	struct peer p, f[5];
	char line[200], big[6000] = "";
	int fd, i;
	(void)state;

	snprintf(logpath, sizeof(logpath), "/tmp/pm-test-door-XXXXXX");
	fd = mkstemp(logpath);
	assert_true(fd >= 0);
	close(fd);
	for (i = 0; i < 40; i++) {
		snprintf(line, sizeof(line), "{\"event\":\"e%02d\",\"pad\":\"%0120d\"}\n", i, 0);
		strcat(big, line);
	}
	write_log(big); /* 40 lines, more than one frame holds */
	node_up(0, 1, 2, 1, 0, 0, true);
	pm_query_free(&nodes[0].s);
	assert_int_equal(pm_query_init(&nodes[0].s, "/nonexistent", logpath), 0);
	ask(&p, PM_Q_EVENTS, "127.0.0.1", 1, "0");
	assert_true(pm_pump(&loop, done, &p, 5000));
	assert_true(p.n >= 3); /* two frames at least, then the end */
	for (i = 0; i < p.n - 1; i++) {
		size_t n = strlen(p.got[i].text);
		assert_int_equal(p.got[i].type, PM_MSG_ANSWER);
		assert_true(n > 0 && p.got[i].text[n - 1] == '\n'); /* whole lines */
	}
	has(p.got[0].text, "\"event\":\"e00\"");
	has(p.got[p.n - 2].text, "\"event\":\"e39\"");
	assert_int_equal(p.got[p.n - 1].count, (uint32_t)strlen(big));
	peer_free(&p);
	/* A line still being written (no newline yet) is not sent. */
	write_log("{\"event\":\"half");
	ask(&p, PM_Q_EVENTS, "127.0.0.1", 2, "5000");
	assert_true(pm_pump(&loop, done, &p, 5000));
	assert_int_equal(p.got[p.n - 1].count, (uint32_t)strlen(big));
	for (i = 0; i < p.n - 1; i++)
		assert_null(strstr(p.got[i].text, "half"));
	peer_free(&p);
	write_log("\"}\n");
	/* Followers. */
	for (i = 0; i < 5; i++) {
		snprintf(line, sizeof(line), "follow:%zu", strlen(big));
		ask(&f[i], PM_Q_EVENTS, "127.0.0.1", 10 + (unsigned)i, line);
		assert_true(pm_pump(&loop, peer_got, &f[i], 5000));
		has(f[i].got[0].text, "\"event\":\"half\"}");
	}
	peer_free(&f[2]);
	pm_pump(&loop, NULL, NULL, 20); /* the root sees it go */
	write_log("{\"event\":\"later\"}\n");
	pm_query_event_written(&nodes[0].s, "later");
	for (i = 0; i < 5; i++) {
		if (i == 2)
			continue;
		assert_true(pm_pump(&loop, got_later, &f[i], 5000));
		assert_int_equal(f[i].got[f[i].n - 1].type, PM_MSG_ANSWER); /* no end: it follows */
		peer_free(&f[i]);
	}
	/* A log that cannot be read (gone). */
	unlink(logpath);
	ask(&p, PM_Q_EVENTS, "127.0.0.1", 20, "0");
	assert_true(pm_pump(&loop, done, &p, 5000));
	assert_int_equal(p.got[p.n - 1].status, 1);
	has(p.got[p.n - 1].text, "cannot read the event log ");
	has(p.got[p.n - 1].text, "No such file or directory");
	peer_free(&p);
}

static bool child_in(void *arg)
{
	struct peer *c = arg;

	return c->n > 0 && c->got[0].type == PM_MSG_WELCOME;
}

static bool queried(void *arg)
{
	struct peer *c = arg;

	return c->n > 0 && c->got[c->n - 1].type == PM_MSG_QUERY;
}

static int seen;

static bool no_ranks(void *arg)
{
	struct peer *p = arg;
	int i;

	for (i = 0; i < p->n && i < 16; i++)
		if (strstr(p->got[i].text, "node 127.0.0.2: no ranks"))
			return true;
	return false;
}

static bool queried_again(void *arg)
{
	struct peer *c = arg;

	return c->n > seen && c->got[c->n - 1].type == PM_MSG_QUERY;
}

/* Node 1 played by the test: it joins, is asked, never answers, and is
 * lost; its lines say so, for it and the node below it (and for the
 * child that never came). */
static void test_child_lost_mid_query(void **state)
{
	struct peer c, p;
	char all[8192] = "";
	int i;
	(void)state;

	node_up(0, 4, 2, 1, 0, 0, true); /* node 1 has node 3 below it; 2 never comes */
	peer_open(&c, dial("127.0.0.2", "127.0.0.1"));
	hello(&c, JOB, 1, 0, 1);
	assert_true(pm_pump(&loop, child_in, &c, 5000));
	ask(&p, PM_Q_STATUS, "127.0.0.1", 1, "-");
	assert_true(pm_pump(&loop, queried, &c, 5000));
	assert_false(done(&p)); /* waits for node 1 */
	peer_free(&c);
	assert_true(pm_pump(&loop, done, &p, 5000));
	for (i = 0; i < p.n; i++)
		strncat(all, p.got[i].text, sizeof(all) - strlen(all) - 1);
	has(all, "node id=1 name=127.0.0.2 phase=lost gen=0 ranks=0 health=unknown");
	has(all, "node id=3 name=127.0.0.4 phase=lost");
	has(all, "node id=2 name=127.0.0.3 phase=absent");
	assert_int_equal(p.got[p.n - 1].type, PM_MSG_ANSWER_END);
	peer_free(&p);
	/* Stacks: the same, said in words; the CLI gone before the end. */
	peer_open(&c, dial("127.0.0.2", "127.0.0.1"));
	hello(&c, JOB, 1, 0, 1);
	assert_true(pm_pump(&loop, child_in, &c, 5000));
	ask(&p, PM_Q_STACKS, "127.0.0.1", 2, "-");
	assert_true(pm_pump(&loop, queried, &c, 5000));
	{
		/* A late answer to a query that is not there: dropped. */
		struct pm_msg m;
		pm_msg_init(&m, PM_MSG_ANSWER_END);
		m.gen = 999;
		assert_int_equal(pm_conn_send(c.c, &m), 0);
		/* Its answer, then its end, after the CLI left. */
		set_text(&m, PM_MSG_ANSWER, "node 127.0.0.2: no ranks\n");
		m.gen = c.got[c.n - 1].gen;
		assert_int_equal(pm_conn_send(c.c, &m), 0);
		assert_true(pm_pump(&loop, no_ranks, &p, 5000));
		peer_free(&p);
		pm_pump(&loop, NULL, NULL, 20); /* the root sees the CLI go first */
		pm_msg_init(&m, PM_MSG_ANSWER_END);
		m.gen = c.got[c.n - 1].gen;
		m.count = 1;
		assert_int_equal(pm_conn_send(c.c, &m), 0);
	}
	/* The next query still goes to it: it is not blamed for that. */
	seen = c.n;
	ask(&p, PM_Q_STATUS, "127.0.0.1", 3, "-");
	assert_true(pm_pump(&loop, queried_again, &c, 5000));
	peer_free(&p);
	assert_false(c.closed);
	peer_free(&c);
}

/* What the parent asks of a child: only status and stacks go down. */
static void test_parent_kinds(void **state)
{
	struct pm_msg m;
	(void)state;

	node_up(1, 2, 2, 1, 0, 0, false);
	set_text(&m, PM_MSG_QUERY, "0");
	m.status = PM_Q_EVENTS;
	m.gen = 5;
	assert_true(pm_query_parent_msg(&nodes[1].s, &m)); /* taken, and ignored */
	m.type = PM_MSG_PING;
	assert_false(pm_query_parent_msg(&nodes[1].s, &m));
	m.type = PM_MSG_START;
	assert_false(pm_query_child_msg(&nodes[1].s, 3, &m));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_child_lost_mid_query, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parent_kinds, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
