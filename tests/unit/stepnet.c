/* tests/unit/stepnet.h: in-process procmgrd nodes for the unit tests. */
#include "stepnet.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/handshake.h"
#include "common/request.h"
#include "common/tree.h"
#include "io/auth.h"
#include "procmgrd/query.h"
#include "pump.h"

struct pm_loop loop;
unsigned port;
void (*node_tweak)(struct pm_step *s);


struct tnode nodes[MAXN];

static void on_accept(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct tnode *t = w->arg;
	int fd = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC);
	(void)l;
	(void)ev;

	if (fd >= 0)
		pm_step_tree_conn(&t->s, fd);
}

int listen_on(const char *addr, unsigned *p)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)*p) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;

	assert_true(fd >= 0);
	inet_pton(AF_INET, addr, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*p = ntohs(sa.sin_port);
	return fd;
}

/* Node id of nnodes, its tree port listening unless nolisten. */
struct tnode *node_up(int id, int nnodes, int fanout, int ntasks_local,
			     unsigned spares, unsigned peer_timeout_ms, bool listen)
{
	struct tnode *t = &nodes[id];
	struct pm_step *s = &t->s;
	int i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < nnodes; i++) {
		t->names[i] = malloc(32);
		snprintf(t->names[i], 32, "127.0.0.%d", i + 1);
	}
	s->loop = &loop;
	s->job = JOB;
	s->stepid = STEP;
	s->node = id;
	s->nnodes = nnodes;
	s->fanout = fanout;
	s->names = t->names;
	s->ntasks_local = ntasks_local;
	s->ntasks = ntasks_local * nnodes;
	s->uid = getuid();
	pm_opts_init(&s->opts);
	s->opts.spares = spares;
	if (spares)
		s->opts.restart = PM_RESTART_ON_FAILURE, s->opts.restart_max = 3;
	s->peer_timeout_ms = peer_timeout_ms;
	if (node_tweak)
		node_tweak(s);
	assert_int_equal(pm_step_init(s), 0);
	s->parent_node = pm_tree_parent(id, fanout);
	assert_int_equal(pm_attach_init(s), 0);
	assert_int_equal(pm_query_init(s, "/nonexistent", NULL), 0);
	t->lw.fd = -1;
	if (listen) {
		t->lw = (struct pm_watch){ .fd = listen_on(t->names[id], &port), .fn = on_accept,
					   .arg = t };
		s->listen_w = &t->lw;
		assert_int_equal(pm_loop_add(&loop, &t->lw, EPOLLIN), 0);
	}
	s->port = port; /* the tree port, known once the first node listens */
	t->up = true;
	return t;
}

void node_down(struct tnode *t)
{
	int i;

	if (!t->up)
		return;
	if (t->lw.fd >= 0) {
		pm_loop_del(&loop, &t->lw);
		close(t->lw.fd);
	}
	pm_step_free(&t->s);
	for (i = 0; i < MAXN; i++)
		free(t->names[i]);
	t->up = false;
}

/* A TCP connection from addr to to:port (blocking connect on loopback). */
int dial(const char *addr, const char *to)
{
	struct sockaddr_in self = { .sin_family = AF_INET };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	inet_pton(AF_INET, addr, &self.sin_addr);
	inet_pton(AF_INET, to, &sa.sin_addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&self, sizeof(self)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

void attach_to_parent(struct tnode *t)
{
	struct pm_step *s = &t->s;
	int fd = dial(s->names[s->node], s->names[s->parent_node]);

	assert_int_equal(pm_step_parent_up(s, fd), 0);
}

int setup(void **state)
{
	(void)state;
	memset(nodes, 0, sizeof(nodes));
	port = 0;
	node_tweak = NULL;
	pm_fake_auth_uid = -1;
	pm_fake_auth_fail = 0;
	return pm_loop_init(&loop);
}

int teardown(void **state)
{
	int i;
	(void)state;

	for (i = 0; i < MAXN; i++)
		node_down(&nodes[i]);
	close(loop.epfd);
	return 0;
}

/* ---- a peer driven by the test: a pm_conn that records what it gets ---- */


static void peer_msg(struct pm_conn *c, const struct pm_msg *m)
{
	struct peer *p = c->w.arg;

	if (p->client && m->type == PM_MSG_WELCOME && p->n == 0) {
		p->proof = *m;
		p->proofs++;
		return;
	}
	if (p->n < 16)
		p->got[p->n] = *m;
	p->n++;
}

static void peer_close(struct pm_conn *c, const char *why)
{
	struct peer *p = c->w.arg;

	p->closed = true;
	snprintf(p->why, sizeof(p->why), "%s", why ? why : "");
	pm_conn_free(c);
	p->c = NULL;
}

void peer_open(struct peer *p, int fd)
{
	memset(p, 0, sizeof(*p));
	p->c = pm_conn_new(&loop, fd, peer_msg, peer_close, p);
	assert_non_null(p->c);
}

void peer_free(struct peer *p)
{
	if (p->c)
		pm_conn_free(p->c);
	p->c = NULL;
}

bool peer_closed(void *arg)
{
	return ((struct peer *)arg)->closed;
}

bool peer_got(void *arg)
{
	return ((struct peer *)arg)->n > 0;
}

/* A HELLO as node from says it to node to, with the credential made of
 * this handshake. */
void hello(struct peer *p, unsigned job, int from, int to, int claimed)
{
	struct pm_hs h = { .kind = PM_HS_HELLO, .job = job, .step = STEP, .from = from,
			   .to = to, .nonce = "00112233445566778899aabbccddeeff" };
	char payload[PM_HS_MAX], err[128], *cred = NULL;
	struct pm_msg m;

	assert_int_equal(pm_hs_format(&h, payload, sizeof(payload)), 0);
	assert_int_equal(pm_auth_encode(NULL, payload, &cred, err, sizeof(err)), 0);
	pm_msg_init(&m, PM_MSG_HELLO);
	m.node = claimed;
	pm_msg_set_text(&m, cred);
	free(cred);
	assert_int_equal(pm_conn_send(p->c, &m), 0);
}

void rank_pair(struct tnode *t, struct peer *p)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pm_step_rank_conn(&t->s, sv[0]);
	peer_open(p, sv[1]);
}

void rank_hello(struct peer *p, int lrank, int grank)
{
	struct pm_msg m;

	pm_msg_init(&m, PM_MSG_RANK_HELLO);
	m.node = lrank;
	m.rank = grank;
	m.status = (int)getpid();
	assert_int_equal(pm_conn_send(p->c, &m), 0);
}

/* Whether the other end closed fd (EOF), without waiting. */
bool fd_closed(int fd)
{
	char b[64];
	ssize_t n;

	while ((n = recv(fd, b, sizeof(b), MSG_DONTWAIT)) > 0)
		;
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

bool fd_closed_p(void *arg)
{
	return fd_closed(*(int *)arg);
}

bool rank0_gone(void *arg)
{
	return ((struct tnode *)arg)->s.ranks[0] == NULL;
}

bool rank0_in(void *arg)
{
	return ((struct tnode *)arg)->s.ranks[0] != NULL;
}

void set_text(struct pm_msg *m, int type, const char *text)
{
	pm_msg_init(m, type);
	pm_msg_set_text(m, text);
}

char *slurp(const char *path)
{
	static char buf[16384];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

void client_send(struct peer *p, const char *to, const char *payload)
{
	char err[128], *cred = NULL;
	struct pm_msg m;

	assert_int_equal(pm_auth_encode(NULL, payload, &cred, err, sizeof(err)), 0);
	peer_open(p, dial("127.0.0.9", to));
	p->client = true;
	pm_msg_init(&m, PM_MSG_CLIENT);
	pm_msg_set_text(&m, cred);
	free(cred);
	assert_int_equal(pm_conn_send(p->c, &m), 0);
}

void client_ask(struct peer *p, const char *to, const char *host, enum pm_query_kind kind, unsigned job, unsigned step,
		unsigned n, const char *args)
{
	struct pm_request r = { .kind = kind, .job = job, .step = step,
				.port = port };
	char payload[PM_REQ_MAX];

	snprintf(r.args, sizeof(r.args), "%s", args);
	snprintf(r.host, sizeof(r.host), "%s", host);
	snprintf(r.nonce, sizeof(r.nonce), "%0*x", PM_REQ_NONCE_HEX, n);
	assert_int_equal(pm_request_format(&r, payload, sizeof(payload)), 0);
	client_send(p, to, payload);
}

bool client_answered(void *arg)
{
	struct peer *p = arg;
	int i;

	for (i = 0; i < p->n && i < 16; i++)
		if (p->got[i].type == PM_MSG_ANSWER_END || p->got[i].type == PM_MSG_REFUSED)
			return true;
	return p->closed;
}
