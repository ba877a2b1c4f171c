/* procmgrd's buddy replication link (state_repl.c, state_repl_stream.c)
 * with the test as its other end, a raw socket on loopback: every way a
 * BUDDY hello is wrong refused with what is wrong; a node receiving blobs
 * (acks, old versions kept out, "end", bad lines); a node sending, which
 * says nothing before its buddy proved itself and sends the blob's line
 * and bytes as staterepl.h writes them. Node to node: test_state_repl.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/handshake.h"
#include "io/auth.h"
#include "io/memblob.h"
#include "io/statesrv.h"
#include "procmgrd/state_repl_int.h"
#include "procmgrd/step.h"
#include "pump.h"
#include "stateclient.h"
#include "stepnet.h"

static bool no_links(void *arg)
{
	return !sc_repl(arg)->links;
}

static bool ended0(void *arg)
{
	return sc_repl(arg)->ended[0];
}

static void frame_send(int fd, const struct pm_msg *m)
{
	uint8_t buf[PM_WIRE_FRAME_MAX];
	int n = pm_msg_encode(m, buf, sizeof(buf));

	assert_true(n > 0);
	assert_int_equal(send(fd, buf, (size_t)n, MSG_NOSIGNAL), n);
}

/* One frame from fd (nothing after it is sent before we answer). */
static void frame_read(int fd, struct pm_msg *m)
{
	uint8_t buf[PM_WIRE_FRAME_MAX];
	size_t len = 0;
	const char *err = NULL;

	for (;;) {
		int k = pm_msg_decode(buf, len, m, &err);
		ssize_t n;
		assert_true(k >= 0);
		if (k > 0) {
			assert_int_equal(k, (int)len);
			return;
		}
		assert_true(pm_pump(&loop, sc_readable, &fd, 5000));
		n = recv(fd, buf + len, sizeof(buf) - len, MSG_DONTWAIT);
		assert_true(n > 0);
		len += (size_t)n;
	}
}

/* Exactly len bytes from fd (a line's, a blob's). */
static void bytes_read(int fd, char *buf, size_t len)
{
	for (size_t got = 0; got < len;) {
		ssize_t n;
		assert_true(pm_pump(&loop, sc_readable, &fd, 5000));
		n = recv(fd, buf + got, len - got, MSG_DONTWAIT);
		assert_true(n > 0);
		got += (size_t)n;
	}
}

static void line_read(int fd, char *buf, size_t cap)
{
	size_t i = 0;

	do {
		assert_true(i < cap - 1);
		bytes_read(fd, buf + i, 1);
	} while (buf[i++] != '\n');
	buf[i] = '\0';
}

/* A BUDDY frame as node from says it to node to (claiming node claimed). */
static void buddy_msg(struct pm_msg *m, unsigned job, enum pm_hs_kind kind, int from, int to,
		      int claimed, const char *nonce)
{
	struct pm_hs h = { .kind = kind, .job = job, .step = STEP, .from = from, .to = to };
	char payload[PM_HS_MAX], err[128], *cred = NULL;

	snprintf(h.nonce, sizeof(h.nonce), "%s", nonce);
	assert_int_equal(pm_hs_format(&h, payload, sizeof(payload)), 0);
	assert_int_equal(pm_auth_encode(NULL, payload, &cred, err, sizeof(err)), 0);
	pm_msg_init(m, PM_MSG_BUDDY);
	m->node = claimed;
	pm_msg_set_text(m, cred);
	free(cred);
}

static const char *nonce = "00112233445566778899aabbccddeeff";

/* A BUDDY refused: the REFUSED frame's text, and the connection closed. */
static void refused(const struct pm_msg *m, const char *want)
{
	struct peer p;

	peer_open(&p, dial("127.0.0.1", "127.0.0.2"));
	assert_int_equal(pm_conn_send(p.c, m), 0);
	assert_true(pm_pump(&loop, peer_closed, &p, 5000));
	assert_int_equal(p.n, 1);
	assert_int_equal(p.got[0].type, PM_MSG_REFUSED);
	if (!strstr(p.got[0].text, want))
		fail_msg("refused with '%s', not '%s'", p.got[0].text, want);
}

/* Every way a BUDDY hello is wrong is refused with what is wrong. */
static void test_hello_refused(void **state)
{
	struct tnode *t;
	struct pm_msg m;
	(void)state;

	sc_mktmp(sc_tmp, sizeof(sc_tmp));
	t = node_up(1, 2, 2, 1, 0, 0, true);
	buddy_msg(&m, JOB, PM_HS_BUDDY, 0, 1, 0, nonce);
	refused(&m, "no state store on this node");
	assert_int_equal(pm_state_link_init(&t->s, sc_sock(1), 1, 1), 0);
	set_text(&m, PM_MSG_BUDDY, "garbage");
	m.node = 0;
	refused(&m, "invalid munge credential");
	buddy_msg(&m, JOB, PM_HS_HELLO, 0, 1, 0, nonce);
	refused(&m, "credential is not a procmgr buddy hello");
	buddy_msg(&m, JOB + 1, PM_HS_BUDDY, 0, 1, 0, nonce);
	refused(&m, "credential for another job or step");
	buddy_msg(&m, JOB, PM_HS_BUDDY, 0, 0, 0, nonce);
	refused(&m, "credential for another link (from node 0 to node 0)");
	buddy_msg(&m, JOB, PM_HS_BUDDY, 0, 1, 1, nonce);
	refused(&m, "credential for another link (from node 0 to node 1)");
	pm_fake_auth_uid = 4242;
	buddy_msg(&m, JOB, PM_HS_BUDDY, 0, 1, 0, nonce);
	pm_fake_auth_uid = -1;
	refused(&m, "credential of uid 4242");
	buddy_msg(&m, JOB, PM_HS_BUDDY, 0, 1, 0, nonce);
	pm_fake_auth_fail = 1; /* our answer cannot be made */
	refused(&m, "cannot answer");
	pm_fake_auth_fail = 0;
	sc_repl(t)->lost[0] = true;
	refused(&m, "node 0 is out of the step");
	assert_null(sc_repl(t)->links);
	sc_rmtmp(sc_tmp);
}

/* The test as node 0 replicating to node 1: the handshake, and node 1's
 * WELCOME proving itself for our nonce. A raw socket from then on. */
static int to_node1(void)
{
	int fd = dial("127.0.0.1", "127.0.0.2");
	struct pm_msg m;
	struct pm_hs h;
	char payload[PM_HS_MAX], err[128];

	buddy_msg(&m, JOB, PM_HS_BUDDY, 0, 1, 0, nonce);
	frame_send(fd, &m);
	frame_read(fd, &m);
	assert_int_equal(m.type, PM_MSG_WELCOME);
	assert_int_equal(pm_auth_decode(NULL, m.text, getuid(), payload, sizeof(payload), err,
					sizeof(err)), 0);
	assert_int_equal(pm_hs_parse(payload, &h), 0);
	assert_int_equal(h.kind, PM_HS_BUDDY_WELCOME);
	assert_int_equal(h.from, 1);
	assert_int_equal(h.to, 0);
	assert_string_equal(h.nonce, nonce);
	return fd;
}

static void say(int fd, const char *s, size_t len)
{
	assert_int_equal(send(fd, s, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* What the link then takes is told off and closed. */
static void cut(const char *what, size_t len)
{
	int fd = to_node1();

	say(fd, what, len);
	assert_true(pm_pump(&loop, sc_eof, &fd, 5000));
	close(fd);
}

/* Node 1 keeps what node 0 sends as replicas and acknowledges each; an
 * old version is kept out, not acknowledged, the link goes on; "end"
 * says node 0's state is all there. A blob of node 1's own, one over the
 * node's limit, an ack the wrong way, a bad or endless line: closed. */
static void test_receiver(void **state)
{
	struct tnode *t;
	char line[256], *got;
	uint64_t ver;
	int fd;
	(void)state;

	sc_mktmp(sc_tmp, sizeof(sc_tmp));
	t = node_up(1, 2, 2, 1, 0, 0, true);
	assert_int_equal(pm_state_link_init(&t->s, sc_sock(1), 1, 1), 0);
	fd = to_node1();
	say(fd, "blob 0 0 model 1 5 3 0\nhello", 28);
	line_read(fd, line, sizeof(line));
	assert_string_equal(line, "ack 0 model 1\n");
	got = sc_replica(t, 0, "model", &ver);
	assert_string_equal(got, "hello");
	free(got);
	say(fd, "blob 0 0 model 1 5 3 0\nhallo", 28);
	say(fd, "blob 0 0 model 2 3 4 0\n", 23);
	say(fd, "bye", 3);
	line_read(fd, line, sizeof(line));
	assert_string_equal(line, "ack 0 model 2\n"); /* none for the old one */
	got = sc_replica(t, 0, "model", &ver);
	assert_string_equal(got, "bye");
	free(got);
	assert_int_equal(sc_repl(t)->received, 2);
	say(fd, "end 0 1\n", 8);
	assert_true(pm_pump(&loop, ended0, t, 5000));
	say(fd, "ack 0 model 2\n", 14);
	assert_true(pm_pump(&loop, sc_eof, &fd, 5000));
	close(fd);
	cut("blob 1 0 mine 1 5 0 0\n", 22);
	cut("blob 0 0 huge 1 2097152 0 0\n", 28);
	cut("nonsense\n", 9);
	memset(line, 'x', sizeof(line));
	cut(line, sizeof(line));
	{
		/* The peer goes mid-blob: the partial replica is dropped. */
		int k = to_node1();
		say(k, "blob 0 0 part 1 100 0 0\nabc", 27);
		close(k);
	}
	assert_true(pm_pump(&loop, no_links, t, 5000));
	assert_null(pm_state_find(sc_repl(t)->st, 0, "part"));
	sc_rmtmp(sc_tmp);
}

/* The test as node 1, node 0's buddy: node 0's next try (its retry
 * pause cut short), the BUDDY frame read and its nonce. */
static int from_node0(struct tnode *a, int lfd, char *nonce_out)
{
	struct pm_msg m;
	struct pm_hs h;
	char payload[PM_HS_MAX], err[128];
	int fd;

	sc_repl(a)->retry_at = 0;
	assert_true(pm_pump(&loop, sc_readable, &lfd, 5000));
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(fd >= 0);
	frame_read(fd, &m);
	assert_int_equal(m.type, PM_MSG_BUDDY);
	assert_int_equal(m.node, 0);
	assert_int_equal(pm_auth_decode(NULL, m.text, getuid(), payload, sizeof(payload), err,
					sizeof(err)), 0);
	assert_int_equal(pm_hs_parse(payload, &h), 0);
	assert_int_equal(h.kind, PM_HS_BUDDY);
	assert_int_equal(h.from, 0);
	assert_int_equal(h.to, 1);
	strcpy(nonce_out, h.nonce);
	return fd;
}

static bool no_buddy_link(void *arg)
{
	return !sc_repl(arg)->buddy_link;
}

/* Node 0's answer to a bad WELCOME: the link closed, tried again later. */
static void bad_welcome(struct tnode *a, int lfd, const struct pm_msg *m)
{
	char got[PM_HS_NONCE_HEX + 1];
	int fd = from_node0(a, lfd, got);

	if (m)
		frame_send(fd, m);
	else
		shutdown(fd, SHUT_WR);
	assert_true(pm_pump(&loop, sc_eof, &fd, 5000));
	assert_true(pm_pump(&loop, no_buddy_link, a, 5000));
	close(fd);
}

/* Node 0 sends nothing before its buddy proved itself (REFUSED, another
 * frame, a credential for another nonce, a close: each ends the link, and
 * it tries again); proven, the blob's line and bytes, and our ack makes
 * the version safe. A blob the wrong way ends the link. */
static void test_sender(void **state)
{
	struct tnode *a;
	struct peer sup;
	struct pm_msg m;
	struct pm_hs h = { .kind = PM_HS_BUDDY_WELCOME, .job = JOB, .step = STEP, .from = 1,
			   .to = 0 };
	char out[512], line[256], payload[PM_HS_MAX], err[128], *cred = NULL;
	int lfd, fd, c;
	(void)state;

	sc_mktmp(sc_tmp, sizeof(sc_tmp));
	a = sc_node(0, 2, 0);
	lfd = listen_on("127.0.0.2", &port);
	sc_rank_in(a, &sup, 0);
	c = sc_connect(sc_sock(0));
	sc_save(c, "model", "hello", 5, 3, out, sizeof(out));
	assert_string_equal(out, "ok 1");
	set_text(&m, PM_MSG_REFUSED, "go away");
	bad_welcome(a, lfd, &m);
	set_text(&m, PM_MSG_HELLO, "x");
	bad_welcome(a, lfd, &m);
	buddy_msg(&m, JOB, PM_HS_BUDDY_WELCOME, 1, 0, 1, nonce); /* not its nonce */
	m.type = PM_MSG_WELCOME;
	bad_welcome(a, lfd, &m);
	bad_welcome(a, lfd, NULL);
	assert_int_equal(sc_repl(a)->replicated, 0);
	/* Proven. */
	fd = from_node0(a, lfd, h.nonce);
	assert_int_equal(pm_hs_format(&h, payload, sizeof(payload)), 0);
	assert_int_equal(pm_auth_encode(NULL, payload, &cred, err, sizeof(err)), 0);
	set_text(&m, PM_MSG_WELCOME, cred);
	free(cred);
	frame_send(fd, &m);
	line_read(fd, line, sizeof(line));
	assert_int_equal(strncmp(line, "blob 0 0 model 1 5 3 ", 21), 0);
	bytes_read(fd, out, 5);
	assert_memory_equal(out, "hello", 5);
	say(fd, "ack 0 model 1\n", 14);
	sc_want = 1;
	assert_true(pm_pump(&loop, sc_replicated, a, 5000));
	assert_int_equal(sc_ask(c, "list", -1, out, sizeof(out), NULL), 0);
	assert_int_equal(sc_safe_of(out, "model"), 1);
	say(fd, "blob 1 0 x 1 1 0 0\n", 19);
	assert_true(pm_pump(&loop, sc_eof, &fd, 5000));
	assert_true(pm_pump(&loop, no_buddy_link, a, 5000));
	close(fd);
	close(c);
	close(lfd);
	peer_free(&sup);
	sc_rmtmp(sc_tmp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hello_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_receiver, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sender, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
