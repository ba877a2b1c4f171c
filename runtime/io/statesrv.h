/* procmgrd's side of the state socket (common/stateproto.h): one request
 * read from a rank's connection, judged against the store
 * (common/statestore.h), carried out and answered, descriptors included.
 * No event loop here: procmgrd's state_link.c calls it when the socket is
 * readable, tests/unit/test_statesrv.c over socketpairs. */
#ifndef PM_STATESRV_H
#define PM_STATESRV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/statestore.h"

/* A connection of one rank: who it is (fixed when it connected) and its
 * save in flight (one at a time: begin, write, commit). */
struct pm_state_peer {
	int32_t grank;
	uint64_t ticket; /* 0: none */
};

/* What a request did, for procmgrd's log and events. */
enum pm_state_did { PM_STATE_DID_NOTHING, PM_STATE_DID_SAVE, PM_STATE_DID_LOAD,
		    PM_STATE_DID_REFUSE };
struct pm_state_note {
	enum pm_state_did did;
	char name[PM_STATE_NAME_MAX + 1];
	uint64_t version, size, step, age_ms;
	/* LOAD: the rank's newest step saved (any name) less the one loaded:
	 * the steps of work the restore gives up. */
	uint64_t lost_steps;
	bool replica;   /* LOAD: the buddy's copy of a lost node's rank (a spare) */
	uint32_t owner; /* LOAD: the node that saved it */
	char why[256]; /* REFUSE: the reply's text */
};

/* What procmgrd knows beyond the store. reading: whether a blob's file is
 * still being read (sent to the buddy), so that a swap does not hand it
 * back to be written; NULL: never. */
struct pm_statesrv_hooks {
	bool (*reading)(int handle, void *arg);
	void *arg;
};

/* Serve one message on sock. 1: served (note says what), 0: the peer
 * closed, -1: the connection is unusable (err says why). A refusal is
 * answered ("err TEXT") and is 1: the rank goes on. h may be NULL. */
int pm_statesrv_serve(struct pm_state_store *st, int sock, struct pm_state_peer *p,
		      uint64_t now_ms, const struct pm_statesrv_hooks *h, struct pm_state_note *note,
		      char *err, size_t errlen);
/* The connection is gone: its save in flight is aborted (the last good
 * version stays). */
void pm_statesrv_closed(struct pm_state_store *st, struct pm_state_peer *p);

/* Which of n supervisors (their pids) pid descends from, reading
 * PROCROOT/PID/stat up the parents ("/proc"; tests give a fixture tree):
 * its index, or -1 if none within 64 generations. */
int pm_state_peer_index(const char *procroot, pid_t pid, const pid_t *sup, int n);
/* When pid started, in clock ticks since boot (/proc/PID/stat's field
 * 22): 0, or -1 if it cannot be read. state_link.c refuses a peer whose
 * pid started after the connection was accepted: the pid SO_PEERCRED gave
 * was reused by another process. */
int pm_state_peer_start(const char *procroot, pid_t pid, uint64_t *ticks);

#endif
