/* Who may hold a connection to one of procmgrd's sockets, pure (the
 * sockets' I/O applies it: state_link.c, rank_link.c, main.c's accept).
 *
 * A rank's processes are the job's user, so they can reach every socket
 * of their node's procmgrd: the state socket, the supervisors' unix socket
 * and the tree port. None of them may cost the node its runtime: each
 * socket bounds the connections one peer holds (a rank, a process) and
 * its own total, and stops taking connections while fewer than its
 * reserve of descriptors are left, so that the tree's links, the procmgr
 * command's requests and the supervisors always find descriptors (the
 * tree port's reserve is the smallest: it is what those come through).
 *
 * Descriptors in use: the new connection's own number is the lowest that
 * was free (accept's rule), so every number under it is open; that is
 * what "used" is, at no cost per connection. */
#ifndef PM_ADMIT_H
#define PM_ADMIT_H

#include <stdbool.h>
#include <stddef.h>

/* The state socket: a rank opens one connection per process that saves
 * or loads (the procmgr module keeps it); a few dozen at the most. */
#define PM_ADMIT_STATE_PER_RANK 32
#define PM_ADMIT_STATE_MAX 1024
/* Connections refused (not a rank, over a bound) are answered at their
 * first request, then closed: at most this many held at once; beyond, the
 * oldest goes unanswered. */
#define PM_ADMIT_REFUSED_HELD 16
/* The supervisors' socket: connections that have not said HELLO yet, per
 * connecting process and in all (beyond the node's own supervisors). */
#define PM_ADMIT_RANK_PER_PID 4
#define PM_ADMIT_RANK_EXTRA 16
/* Descriptors kept free by the sockets the ranks reach: a base, and the
 * tree's and the supervisors' own (pm_admit_reserve). */
#define PM_ADMIT_RESERVE_BASE 64

struct pm_admit_cfg {
	unsigned per_peer;   /* connections one peer may hold on this socket, 0: no bound */
	unsigned per_socket; /* connections this socket may hold, 0: no bound */
	unsigned reserve;    /* descriptors this socket leaves to the others */
};

struct pm_admit_now {
	unsigned peer;     /* this peer's connections held on the socket, before this one */
	unsigned socket;   /* the socket's connections held, before this one */
	unsigned fd;       /* the new connection's descriptor */
	unsigned fd_limit; /* RLIMIT_NOFILE's soft limit */
};

enum pm_admit_verdict {
	PM_ADMIT_TAKE,
	PM_ADMIT_PEER_FULL,   /* the peer holds its share: refuse it */
	PM_ADMIT_SOCKET_FULL, /* the socket holds its share */
	PM_ADMIT_RESERVE,     /* the descriptors left are the others' */
};

enum pm_admit_verdict pm_admit_decide(const struct pm_admit_cfg *cfg,
				      const struct pm_admit_now *now);

/* The refusal said to the peer (and once in the log): what was over its
 * bound, and the bound. what names the socket ("the state socket"), who
 * the peer ("rank 3", "pid 1234"). */
int pm_admit_why(enum pm_admit_verdict v, const struct pm_admit_cfg *cfg,
		 const struct pm_admit_now *now, const char *what, const char *who, char *buf,
		 size_t len);

/* The descriptors the ranks' sockets leave free on a node with nchildren
 * tree children (or, with spares, the nodes that may come), ntasks local
 * supervisors: each child a link and a replication link, each supervisor
 * its link, its pidfd and its standby's, and the base. */
unsigned pm_admit_reserve(unsigned nchildren, unsigned ntasks);

/* After accept failed for want of descriptors (EMFILE, ENFILE, ENOBUFS,
 * ENOMEM): how long the listener rests before it is tried again, by how
 * many times in a row it failed (1, 2, ...): 50 ms doubling to 1 s. */
unsigned pm_admit_backoff_ms(unsigned failures);
/* Whether accept's errno means "out of descriptors or memory": the
 * listener stays readable, and would spin, unless it rests. */
bool pm_admit_starved(int err);

#endif
