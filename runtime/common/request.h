/* What the procmgr command asks a step's root procmgrd: the payload of the
 * munge credential in its CLIENT frame, so that the request itself (kind,
 * step, arguments) is signed by the asking user. It also names the
 * address the command dialled and a fresh nonce, so that whoever holds
 * that address cannot use it anywhere else (common/clientauth.h), and the
 * root's proof (its own credential, in a WELCOME before any answer) binds
 * the same. Pure. */
#ifndef PM_REQUEST_H
#define PM_REQUEST_H

#include <stddef.h>

enum pm_query_kind {
	PM_Q_STATUS = 1, /* every rank and node, through the tree */
	PM_Q_STACKS,     /* the ranks' stacks, taken now, through the tree */
	PM_Q_EVENTS,     /* the root's event log from a byte offset */
	PM_Q_RESTART,    /* every rank, now (a restart) */
	PM_Q_STOP,       /* end the step cleanly */
	PM_Q_MAX
};

#define PM_REQ_ARGS_MAX 256
#define PM_REQ_HOST_MAX 256 /* a node name, NUL included */
#define PM_REQ_NONCE_HEX 32 /* 16 random bytes */
#define PM_REQ_MAX 704 /* a payload's length, NUL included */

struct pm_request {
	enum pm_query_kind kind;
	unsigned job, step;
	/* Free text without spaces or control characters: a rank list for
	 * stacks, a byte offset for events; "-" for none. */
	char args[PM_REQ_ARGS_MAX];
	/* The node and port the command connected to (Slurm's node name, the
	 * step's control port): the root answers only a request for itself. */
	char host[PM_REQ_HOST_MAX];
	unsigned port;
	char nonce[PM_REQ_NONCE_HEX + 1]; /* lowercase hex */
};

const char *pm_query_kind_name(int kind);
/* 0 if name is a kind (*kind set), else -1. */
int pm_query_kind_parse(const char *name, enum pm_query_kind *kind);
/* Whether the kind is answered by every node (down the tree and back). */
int pm_query_kind_tree(enum pm_query_kind kind);

/* -1 if it does not fit or a field is out of range. */
int pm_request_format(const struct pm_request *r, char *buf, size_t len);
/* Strict: exactly what pm_request_format writes; -1 for anything else. */
int pm_request_parse(const char *s, struct pm_request *r);
/* The root's proof for request r: the payload of its WELCOME's credential
 * ("procmgr-root v1 job=J step=S to=HOST:PORT nonce=N"); -1 if r's fields
 * cannot be said. */
int pm_request_proof(const struct pm_request *r, char *buf, size_t len);
/* Whether s looks like an older command's request (v1), to say so. */
int pm_request_is_v1(const char *s);

#endif
