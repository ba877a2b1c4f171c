/* The unit tests' procmgrd nodes, in-process (test_links.c, test_queries.c):
 * each node a struct pm_step on one loop, named by a loopback address of
 * its own (127.0.0.N, its tree port on it), with munge replaced by
 * fake_auth.c; and peers the test drives, pm_conns that record what they
 * get. */
#ifndef PM_TEST_STEPNET_H
#define PM_TEST_STEPNET_H

#include <stdbool.h>
#include <stdint.h>

#include "common/request.h"
#include "procmgrd/step.h"

#define MAXN 4
#define JOB 77
#define STEP 3

extern long pm_fake_auth_uid;
extern int pm_fake_auth_fail;

struct tnode {
	struct pm_step s;
	struct pm_watch lw; /* its tree port */
	char *names[MAXN];
	bool up;
};

struct peer {
	struct pm_conn *c;
	struct pm_msg got[16];
	int n;
	bool closed;
	char why[256];
	/* A procmgr command's connection: the root's proof (a WELCOME before
	 * any answer) is kept apart from the answers. */
	bool client;
	struct pm_msg proof;
	int proofs;
};

extern struct pm_loop loop;
/* Called by node_up on the step before pm_step_init (options the test
 * sets: grace, restart delay...); NULL by default, reset by setup. */
extern void (*node_tweak)(struct pm_step *s);
extern unsigned port; /* every node's tree port */
extern struct tnode nodes[MAXN];

/* cmocka's setup and teardown: a fresh loop, every node down after. */
int setup(void **state);
int teardown(void **state);
/* A listening TCP socket on addr:*p (0: any port, set). */
int listen_on(const char *addr, unsigned *p);
/* Node id of nnodes: pm_step_init, attach and queries set up, its tree
 * port listening if listen. */
struct tnode *node_up(int id, int nnodes, int fanout, int ntasks_local,
		      unsigned spares, unsigned peer_timeout_ms, bool listen);
void node_down(struct tnode *t);
/* A TCP connection from addr to to:port. */
int dial(const char *addr, const char *to);
/* Connect to its parent and say HELLO (main.c's part). */
void attach_to_parent(struct tnode *t);

void peer_open(struct peer *p, int fd);
void peer_free(struct peer *p);
bool peer_closed(void *arg);
bool peer_got(void *arg);
/* A HELLO from node from to node to (a credential of that handshake),
 * claiming to be node claimed. */
void hello(struct peer *p, unsigned job, int from, int to, int claimed);
/* A supervisor's link to t, and its RANK_HELLO. */
void rank_pair(struct tnode *t, struct peer *p);
void rank_hello(struct peer *p, int lrank, int grank);
/* Whether the other end closed fd (EOF), without waiting; the same for
 * pm_pump (arg: an int *). */
bool fd_closed(int fd);
bool fd_closed_p(void *arg);
/* For pm_pump (arg: a struct tnode *): its local rank 0's supervisor gone,
 * or connected. */
bool rank0_gone(void *arg);
bool rank0_in(void *arg);
/* A file's text (up to 16 KiB, until the next call); NULL if unreadable. */
char *slurp(const char *path);
/* The procmgr command, from an address that is no node's (127.0.0.9):
 * a credential over payload sent as its CLIENT frame to the node at to;
 * a request of kind for job.step, signed for host with nonce n. */
void client_send(struct peer *p, const char *to, const char *payload);
void client_ask(struct peer *p, const char *to, const char *host, enum pm_query_kind kind, unsigned job, unsigned step,
		unsigned n, const char *args);
/* Its END or REFUSED came among the first 16 frames, or the node closed. */
bool client_answered(void *arg);
/* A message of type with text. */
void set_text(struct pm_msg *m, int type, const char *text);

#endif
