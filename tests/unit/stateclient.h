/* A rank's end of procmgrd's state socket (common/stateproto.h) for the
 * in-process tests (test_state_link.c, test_state_repl.c,
 * test_state_wire.c): requests sent as the Python module sends them,
 * memfds attached, and the loop pumped until procmgrd answered; and what
 * those tests share about stepnet.c's nodes with a store. */
#ifndef PM_TEST_STATECLIENT_H
#define PM_TEST_STATECLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stepnet.h"

/* A connection to the state socket at path. */
int sc_connect(const char *path);
/* One request (fd >= 0 attached): the reply's text in out, its descriptor
 * in *rfd (-1: none; rfd NULL: none expected). -1 if no reply came (the
 * connection closed, or nothing in 5 s). */
int sc_ask(int sock, const char *req, int fd, char *out, size_t cap, int *rfd);
/* A sealable memory file of len bytes of buf, as a rank writes one. */
int sc_blob(const void *buf, size_t len);
/* begin, write, commit: the commit's reply (or begin's refusal) in out. */
void sc_save(int sock, const char *name, const void *buf, size_t len, unsigned step,
	     char *out, size_t cap);
/* load: the reply in head; the bytes (malloc'd, *len) when it sent some,
 * else NULL. */
char *sc_load(int sock, const char *name, char *head, size_t cap, size_t *len);
/* A temporary directory of the test's, and its removal. */
void sc_mktmp(char *dir, size_t cap);
void sc_rmtmp(const char *dir);

/* The test's directory (sc_mktmp), node id's state socket in it. */
extern char sc_tmp[64];
const char *sc_sock(int id);
/* Node id of nnodes, listening on its tree port, with a state socket
 * (8 MiB a rank, 16 MiB the node). */
struct tnode *sc_node(int id, int nnodes, unsigned spares);
/* Node t's local rank 0's supervisor connected, global rank grank: this
 * process is then one of t's ranks. */
void sc_rank_in(struct tnode *t, struct peer *sup, int grank);
struct pm_state_repl *sc_repl(struct tnode *t);
/* For pm_pump: node arg received / replicated at least sc_want blobs; fd
 * *arg readable; fd *arg at its end. */
extern uint64_t sc_want;
bool sc_received(void *arg);
bool sc_replicated(void *arg);
bool sc_readable(void *arg);
bool sc_eof(void *arg);
/* The bytes of t's replica of (grank, name), malloc'd; its version. */
char *sc_replica(struct tnode *t, int32_t grank, const char *name, uint64_t *version);
/* A list reply's SAFE field for name (-1: not listed). */
int sc_safe_of(const char *list, const char *name);

#endif
