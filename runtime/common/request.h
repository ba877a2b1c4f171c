/* What the procmgr command asks a step's root procmgrd: the payload of the
 * munge credential in its CLIENT frame, so that the request itself (kind,
 * step, arguments) is signed by the asking user. Pure. */
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
#define PM_REQ_MAX 384 /* a payload's length, NUL included */

struct pm_request {
	enum pm_query_kind kind;
	unsigned job, step;
	/* Free text without spaces or control characters: a rank list for
	 * stacks, a byte offset for events; "-" for none. */
	char args[PM_REQ_ARGS_MAX];
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

#endif
