/* procmgrd's links in-process, over real loopback TCP and unix socketpairs:
 * the tree handshake both ways (tree_link.c) with its refusals, the door
 * (gate.c), the parent that does not prove itself, liveness (transport.c's
 * tick), the rank supervisors' links (rank_link.c), a one-node step from
 * HELLO to its end, and the re-attach to an ancestor when the parent is
 * lost (attach.c, spares). Every node is a struct pm_step on one loop,
 * named by a loopback address of its own (127.0.0.N: stepnet.c). munge is
 * replaced by tests/unit/fake_auth.c behind io/auth.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
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
#include "common/tree.h"
#include "io/auth.h"
#include "procmgrd/query.h"
#include "procmgrd/step.h"
#include "pump.h"
#include "stepnet.h"

/* ---- the handshake between two real nodes ---- */

static bool joined(void *arg)
{
	struct tnode *child = arg;
	return nodes[0].s.children[0] && child->s.parent_ok;
}

static void test_handshake(void **state)
{
	struct tnode *root, *child;
	(void)state;

	root = node_up(0, 2, 2, 1, 0, 0, true);
	child = node_up(1, 2, 2, 1, 0, 0, false);
	assert_int_equal(root->s.nchildren, 1);
	attach_to_parent(child);
	assert_false(child->s.parent_ok);
	assert_true(pm_pump(&loop, joined, child, 5000));
	assert_int_equal(root->s.children[0]->id, 1);
	assert_int_equal(root->s.nseen, 1);
	assert_int_equal(root->s.npending, 0); /* out of the door */
	assert_int_equal(child->s.upq_len, 0);
	assert_false(pm_gen_terminal(&root->s.gen));
	assert_false(pm_gen_terminal(&child->s.gen));
}

/* ---- what the door refuses, and says ---- */

static void refused(const char *from, void (*say)(struct peer *), const char *text)
{
	struct peer p;

	peer_open(&p, dial(from, "127.0.0.1"));
	say(&p);
	assert_true(pm_pump(&loop, peer_closed, &p, 5000));
	if (text) {
		assert_true(p.n >= 1);
		assert_int_equal(p.got[0].type, PM_MSG_REFUSED);
		if (!strstr(p.got[0].text, text))
			fail_msg("refusal '%s' does not say '%s'", p.got[0].text, text);
	} else {
		assert_int_equal(p.n, 0);
	}
}

static void say_stop(struct peer *p)
{
	struct pm_msg m;
	pm_msg_init(&m, PM_MSG_STOP);
	assert_int_equal(pm_conn_send(p->c, &m), 0);
}

static void say_garbage_cred(struct peer *p)
{
	struct pm_msg m;
	pm_msg_init(&m, PM_MSG_HELLO);
	m.node = 1;
	pm_msg_set_text(&m, "MUNGE:not-a-credential");
	assert_int_equal(pm_conn_send(p->c, &m), 0);
}

static void say_other_uid(struct peer *p)
{
	pm_fake_auth_uid = (long)getuid() + 1;
	hello(p, JOB, 1, 0, 1);
	pm_fake_auth_uid = -1;
}

static void say_other_job(struct peer *p) { hello(p, JOB + 1, 1, 0, 1); }
static void say_other_link(struct peer *p) { hello(p, JOB, 2, 0, 1); }
static void say_grandchild(struct peer *p) { hello(p, JOB, 3, 0, 3); }

static void say_not_hello(struct peer *p)
{
	struct pm_hs h = { .kind = PM_HS_WELCOME, .job = JOB, .step = STEP, .from = 1,
			   .to = 0, .nonce = "00112233445566778899aabbccddeeff" };
	char payload[PM_HS_MAX], err[128], *cred = NULL;
	struct pm_msg m;

	assert_int_equal(pm_hs_format(&h, payload, sizeof(payload)), 0);
	assert_int_equal(pm_auth_encode(NULL, payload, &cred, err, sizeof(err)), 0);
	pm_msg_init(&m, PM_MSG_HELLO);
	m.node = 1;
	pm_msg_set_text(&m, cred);
	free(cred);
	assert_int_equal(pm_conn_send(p->c, &m), 0);
}

static void test_refusals(void **state)
{
	struct tnode *root;
	(void)state;

	/* 4 nodes, fanout 2: node 0's children are 1 and 2, node 3 is 1's. */
	root = node_up(0, 4, 2, 1, 0, 0, true);
	refused("127.0.0.2", say_stop, NULL); /* not even HELLO: closed unanswered */
	refused("127.0.0.2", say_garbage_cred, "invalid munge credential");
	refused("127.0.0.2", say_other_uid, "not the job's user");
	refused("127.0.0.2", say_other_job, "another job or step");
	refused("127.0.0.2", say_other_link, "another link");
	refused("127.0.0.4", say_grandchild, "node 3 is not a child of node 0");
	refused("127.0.0.2", say_not_hello, "not a procmgr hello");
	assert_null(root->s.children[0]);
	assert_int_equal(root->s.npending, 0);
	assert_true(root->s.refused_logged >= 6);
	assert_false(pm_gen_terminal(&root->s.gen));
}

/* A fake node 1 that proves itself gets a WELCOME for its own nonce; a
 * second one for the same node is refused while the first holds it. */
static void test_welcome_and_duplicate(void **state)
{
	struct tnode *root;
	struct peer p;
	struct pm_hs h;
	char payload[PM_HS_MAX], err[128];
	uid_t uid;
	(void)state;

	root = node_up(0, 3, 2, 1, 0, 0, true);
	peer_open(&p, dial("127.0.0.2", "127.0.0.1"));
	hello(&p, JOB, 1, 0, 1);
	assert_true(pm_pump(&loop, peer_got, &p, 5000));
	assert_int_equal(p.got[0].type, PM_MSG_WELCOME);
	assert_int_equal(pm_auth_decode_uid(NULL, p.got[0].text, &uid, payload, sizeof(payload),
					    err, sizeof(err)), 0);
	assert_int_equal(uid, getuid());
	assert_int_equal(pm_hs_parse(payload, &h), 0);
	assert_int_equal(h.kind, PM_HS_WELCOME);
	assert_int_equal(h.from, 0);
	assert_int_equal(h.to, 1);
	assert_string_equal(h.nonce, "00112233445566778899aabbccddeeff");
	assert_non_null(root->s.children[0]);
	refused("127.0.0.2", say_other_job, "another job"); /* still checked first */
	{
		struct peer q;
		peer_open(&q, dial("127.0.0.2", "127.0.0.1"));
		hello(&q, JOB, 1, 0, 1);
		assert_true(pm_pump(&loop, peer_closed, &q, 5000));
		assert_int_equal(q.got[0].type, PM_MSG_REFUSED);
		assert_non_null(strstr(q.got[0].text, "already connected"));
	}
	/* The child goes: the root loses it. */
	peer_free(&p);
	assert_true(pm_pump(&loop, NULL, NULL, 50));
	assert_null(root->s.children[0]);
}

/* The root cannot make its proof: the child is dropped, not welcomed. */
static void test_welcome_cannot_be_made(void **state)
{
	struct peer p;
	(void)state;

	node_up(0, 2, 2, 1, 0, 0, true);
	peer_open(&p, dial("127.0.0.2", "127.0.0.1"));
	hello(&p, JOB, 1, 0, 1);
	pm_fake_auth_fail = 1;
	assert_true(pm_pump(&loop, peer_closed, &p, 5000));
	assert_int_equal(p.n, 0);
	assert_null(nodes[0].s.children[0]);
}

/* ---- a parent that does not prove itself ---- */

struct fake_parent {
	int lfd;
	struct peer p;
	struct pm_hs hello;
};

static bool child_said_hello(void *arg)
{
	struct fake_parent *f = arg;
	return f->p.n > 0;
}

static void fake_parent_accept(struct fake_parent *f, struct tnode *child)
{
	char payload[PM_HS_MAX], err[128];
	int fd = -1, i;

	for (i = 0; i < 1000 && fd < 0; i++) {
		fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			pm_pump(&loop, NULL, NULL, 2);
	}
	assert_true(fd >= 0);
	peer_open(&f->p, fd);
	assert_true(pm_pump(&loop, child_said_hello, f, 5000));
	assert_int_equal(f->p.got[0].type, PM_MSG_HELLO);
	assert_int_equal(f->p.got[0].node, child->s.node);
	assert_int_equal(pm_auth_decode(NULL, f->p.got[0].text, getuid(), payload,
					sizeof(payload), err, sizeof(err)), 0);
	assert_int_equal(pm_hs_parse(payload, &f->hello), 0);
	assert_string_equal(f->hello.nonce, child->s.nonce);
}

static void welcome(struct fake_parent *f, const char *nonce)
{
	struct pm_hs h = f->hello;
	char payload[PM_HS_MAX], err[128], *cred = NULL;
	struct pm_msg m;

	h.kind = PM_HS_WELCOME;
	h.from = f->hello.to;
	h.to = f->hello.from;
	snprintf(h.nonce, sizeof(h.nonce), "%s", nonce);
	assert_int_equal(pm_hs_format(&h, payload, sizeof(payload)), 0);
	assert_int_equal(pm_auth_encode(NULL, payload, &cred, err, sizeof(err)), 0);
	pm_msg_init(&m, PM_MSG_WELCOME);
	pm_msg_set_text(&m, cred);
	free(cred);
	assert_int_equal(pm_conn_send(f->p.c, &m), 0);
}

static bool child_ended(void *arg)
{
	struct tnode *t = arg;
	return pm_gen_terminal(&t->s.gen) && !t->s.parent;
}

static void unproven(void (*answer)(struct fake_parent *))
{
	struct fake_parent f;
	struct tnode *child;
	unsigned p0 = 0;

	f.lfd = listen_on("127.0.0.1", &p0);
	port = p0;
	child = node_up(1, 2, 2, 1, 0, 0, false);
	attach_to_parent(child);
	fake_parent_accept(&f, child);
	answer(&f);
	assert_true(pm_pump(&loop, child_ended, child, 5000));
	assert_false(child->s.parent_ok);
	peer_free(&f.p);
	close(f.lfd);
}

static void answer_other_nonce(struct fake_parent *f)
{
	welcome(f, "ffffffffffffffffffffffffffffffff"); /* a recorded WELCOME */
}

static void answer_refused(struct fake_parent *f)
{
	struct pm_msg m;
	pm_msg_init(&m, PM_MSG_REFUSED);
	pm_msg_set_text(&m, "busy: try again");
	assert_int_equal(pm_conn_send(f->p.c, &m), 0);
}

static void answer_orders(struct fake_parent *f)
{
	struct pm_msg m;
	pm_msg_init(&m, PM_MSG_STOP);
	assert_int_equal(pm_conn_send(f->p.c, &m), 0);
}

static void test_parent_must_prove_itself(void **state)
{
	(void)state;
	unproven(answer_other_nonce);
	teardown(NULL);
	setup(NULL);
	unproven(answer_refused);
	teardown(NULL);
	setup(NULL);
	unproven(answer_orders);
}

static bool parent_proven(void *arg)
{
	return ((struct tnode *)arg)->s.parent_ok;
}

/* The proven parent goes away: the child ends its part (no spares). */
static void test_parent_lost(void **state)
{
	struct fake_parent f;
	struct tnode *child;
	unsigned p0 = 0;
	(void)state;

	f.lfd = listen_on("127.0.0.1", &p0);
	port = p0;
	child = node_up(1, 2, 2, 1, 0, 0, false);
	attach_to_parent(child);
	fake_parent_accept(&f, child);
	welcome(&f, child->s.nonce);
	assert_true(pm_pump(&loop, parent_proven, child, 5000));
	peer_free(&f.p);
	assert_true(pm_pump(&loop, child_ended, child, 5000));
	close(f.lfd);
}

/* ---- liveness ---- */

static bool kid_gone(void *arg)
{
	(void)arg;
	return nodes[0].s.children[0] == NULL;
}

/* A child that proved itself and then says nothing, not even PING, is
 * lost after the peer timeout; two real nodes that ping stay linked. */
static void test_liveness(void **state)
{
	struct tnode *root, *child;
	struct peer p;
	(void)state;

	root = node_up(0, 2, 2, 1, 0, 300, true);
	peer_open(&p, dial("127.0.0.2", "127.0.0.1"));
	hello(&p, JOB, 1, 0, 1);
	assert_true(pm_pump(&loop, peer_got, &p, 5000));
	assert_non_null(root->s.children[0]);
	/* Silent from now on: its PINGs are not answered (the peer's conn is
	 * taken out of the loop, as a stopped process would be). */
	pm_loop_del(&loop, &p.c->w);
	assert_true(pm_pump(&loop, kid_gone, NULL, 5000));
	pm_conn_free(p.c);
	p.c = NULL;
	teardown(NULL);
	setup(NULL);
	root = node_up(0, 2, 2, 1, 0, 600, true);
	child = node_up(1, 2, 2, 1, 0, 600, false);
	attach_to_parent(child);
	assert_true(pm_pump(&loop, joined, child, 5000));
	pm_pump(&loop, NULL, NULL, 1400); /* over two timeouts: pings keep it */
	assert_non_null(root->s.children[0]);
	assert_true(child->s.parent_ok);
}

/* ---- the ranks' links ---- */

static bool over(void *arg)
{
	return pm_gen_over(&((struct tnode *)arg)->s.gen);
}

static bool terminal(void *arg)
{
	return pm_gen_terminal(&((struct tnode *)arg)->s.gen);
}

static bool got_start(void *arg)
{
	struct peer *p = arg;
	int i;

	for (i = 0; i < p->n && i < 16; i++)
		if (p->got[i].type == PM_MSG_START)
			return true;
	return false;
}

static void test_rank_links(void **state)
{
	struct tnode *t;
	struct peer r0, dup, bad, early, r1;
	struct pm_msg m;
	int i;
	(void)state;

	/* One node, two local ranks: the whole step here. */
	t = node_up(0, 1, 2, 2, 0, 0, false);
	rank_pair(t, &r0);
	rank_hello(&r0, 0, 0);
	assert_true(pm_pump(&loop, rank0_in, t, 5000));
	/* A second supervisor for local rank 0, a rank out of range, and a
	 * first frame that is not a hello: each closed. */
	rank_pair(t, &dup);
	rank_hello(&dup, 0, 0);
	assert_true(pm_pump(&loop, peer_closed, &dup, 5000));
	rank_pair(t, &bad);
	rank_hello(&bad, 7, 7);
	assert_true(pm_pump(&loop, peer_closed, &bad, 5000));
	rank_pair(t, &early);
	pm_msg_init(&m, PM_MSG_RANK_EXIT);
	assert_int_equal(pm_conn_send(early.c, &m), 0);
	assert_true(pm_pump(&loop, peer_closed, &early, 5000));
	assert_true(t->s.ranks[0] != NULL);
	/* Both ranks, the node ready: generation 0 starts on them. */
	rank_pair(t, &r1);
	rank_hello(&r1, 1, 1);
	pm_gen_local_ready(&t->s.gen);
	assert_true(pm_pump(&loop, got_start, &r0, 5000));
	assert_true(pm_pump(&loop, got_start, &r1, 5000));
	/* The command runs, then exits 0 on both: the step is over. */
	for (i = 0; i < 2; i++) {
		struct peer *p = i ? &r1 : &r0;
		pm_msg_init(&m, PM_MSG_RANK_RUN);
		m.gen = 0;
		m.status = 0;
		assert_int_equal(pm_conn_send(p->c, &m), 0);
		pm_msg_init(&m, PM_MSG_RANK_EXIT);
		m.gen = 0;
		m.status = 0;
		assert_int_equal(pm_conn_send(p->c, &m), 0);
	}
	assert_true(pm_pump(&loop, terminal, t, 5000));
	assert_false(pm_step_over(&t->s)); /* its supervisors are still there */
	/* The supervisors leave in order: then it is over. */
	peer_free(&r0);
	peer_free(&r1);
	assert_true(pm_pump(&loop, over, t, 5000));
	assert_null(t->s.ranks[0]);
	assert_null(t->s.ranks[1]);
	assert_true(pm_step_over(&t->s));
}

/* A supervisor that goes before the end: its rank is gone, and the
 * machine hears it (the step fails on it, no restarts). */
static void test_rank_lost(void **state)
{
	struct tnode *t;
	struct peer r0;
	(void)state;

	t = node_up(0, 1, 2, 1, 0, 0, false);
	rank_pair(t, &r0);
	rank_hello(&r0, 0, 0);
	pm_gen_local_ready(&t->s.gen);
	assert_true(pm_pump(&loop, got_start, &r0, 5000));
	t->s.cmd_pgid[0] = 0; /* nothing of ours to kill */
	peer_free(&r0);
	assert_true(pm_pump(&loop, over, t, 5000));
	assert_null(t->s.ranks[0]);
}

/* ---- re-attach (spares) ---- */

static bool reattached(void *arg)
{
	struct tnode *t = arg;
	return t->s.parent_ok && t->s.parent_node == 0 && !t->s.attach.active;
}

static bool chain_up(void *arg)
{
	(void)arg;
	return nodes[1].s.parent_ok && nodes[3].s.parent_ok;
}

/* 4 nodes, fanout 2 (spares need it), one spare: node 3's parent is node
 * 1, whose parent is the root; node 2 never comes. */
static struct tnode *chain(void)
{
	node_up(0, 4, 2, 1, 1, 0, true);
	node_up(1, 4, 2, 1, 1, 0, true);
	node_up(3, 4, 2, 1, 1, 0, true);
	attach_to_parent(&nodes[1]);
	attach_to_parent(&nodes[3]);
	assert_true(pm_pump(&loop, chain_up, NULL, 5000));
	return &nodes[3];
}

static void test_reattach_to_ancestor(void **state)
{
	struct tnode *n3;
	int idx;
	(void)state;

	n3 = chain();
	assert_int_equal(pm_gen_kid_index(&nodes[0].s.gen, 3), -1);
	/* Node 1's procmgrd goes away: node 3 asks the root, which adopts it. */
	node_down(&nodes[1]);
	assert_true(pm_pump(&loop, reattached, n3, 5000));
	idx = pm_gen_kid_index(&nodes[0].s.gen, 3);
	assert_true(idx >= 0);
	assert_non_null(*pm_step_child(&nodes[0].s, idx));
}

/* Nobody above answers: a node below the root's children ends its part. */
static bool left(void *arg)
{
	struct tnode *t = arg;
	return !t->s.attach.active && pm_gen_terminal(&t->s.gen);
}

static void test_reattach_nobody(void **state)
{
	struct tnode *n3;
	(void)state;

	n3 = chain();
	node_down(&nodes[0]);
	pm_pump(&loop, NULL, NULL, 20);
	node_down(&nodes[1]);
	assert_true(pm_pump(&loop, left, n3, 10000));
	assert_false(n3->s.parent_ok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_handshake, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_welcome_and_duplicate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_welcome_cannot_be_made, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parent_must_prove_itself, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parent_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(test_liveness, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rank_links, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rank_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reattach_to_ancestor, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reattach_nobody, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
