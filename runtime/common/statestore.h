/* The rules of the ranks' state kept in memory by procmgrd: named blobs
 * per global rank, whole versions replaced atomically, bounded per rank
 * and per node, replicas of another node's ranks kept for a buddy, and who
 * may read what. Pure: a blob is an opaque handle (procmgrd's sealed memfd)
 * that the caller owns; every function that lets one go returns it, so the
 * caller closes exactly what the store no longer holds.
 *
 * A save is two steps, as it is on the socket: begin (the name and the
 * size, checked against the limits before a byte moves) and commit (the
 * sealed descriptor arrives). Until the commit the last good version is
 * what a load gets; an abort (the rank died, the descriptor was short or
 * unsealed) leaves it untouched. */
#ifndef PM_STATESTORE_H
#define PM_STATESTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PM_STATE_NAME_MAX 64

struct pm_state_cfg {
	uint64_t max_rank;  /* bytes one rank may hold, all names */
	uint64_t max_node;  /* bytes a node holds: its ranks' and its replicas' */
	unsigned max_names; /* names per rank */
};

struct pm_state_blob {
	uint32_t owner_node; /* the node whose rank saved it */
	int32_t grank;
	char name[PM_STATE_NAME_MAX + 1];
	uint64_t version; /* 1, 2, ...: per (grank, name), never reused */
	uint64_t size;
	uint64_t saved_ms;
	uint64_t step; /* the rank's progress counter when it saved; 0: none said */
	bool safe;     /* the buddy holds this version */
	bool replica;  /* held for another node */
	int handle;    /* the caller's: a sealed memfd */
};

struct pm_state_pending {
	int32_t grank;
	char name[PM_STATE_NAME_MAX + 1];
	uint64_t size;
	uint64_t ticket; /* 0: free slot */
};

struct pm_state_store {
	struct pm_state_cfg cfg;
	uint32_t node;
	struct pm_state_blob *b;
	size_t nb, capb;
	struct pm_state_pending *p;
	size_t np, capp;
	uint64_t held, pending; /* bytes */
	uint64_t next_ticket, next_version;
};

void pm_state_init(struct pm_state_store *s, const struct pm_state_cfg *cfg, uint32_t node);
/* Every handle still held goes to release(handle, arg); then freed. */
void pm_state_clear(struct pm_state_store *s, void (*release)(int, void *), void *arg);

/* 1 to 64 of [A-Za-z0-9._-], not starting with '.': names end up in the
 * events and the status text. 0 or -1 with err. */
int pm_state_name_check(const char *name, char *err, size_t errlen);

/* A save of size bytes by rank grank under name: a ticket (> 0), or 0 with
 * err saying which limit and its value. The bytes count against the
 * limits from now on, next to the version they will replace. */
uint64_t pm_state_begin(struct pm_state_store *s, int32_t grank, const char *name,
			uint64_t size, char *err, size_t errlen);
/* The blob of a begun save: it becomes the version a load gets. *old gets
 * the replaced version's handle (-1 if none) for the caller to close.
 * -1 if the ticket is unknown (aborted, or from before a clear). */
int pm_state_commit(struct pm_state_store *s, uint64_t ticket, int handle, uint64_t now_ms,
		    uint64_t step, int *old);
void pm_state_abort(struct pm_state_store *s, uint64_t ticket);
/* Every begun save of a rank is aborted (the rank died). */
void pm_state_abort_rank(struct pm_state_store *s, int32_t grank);

/* The latest version of (grank, name), own or replica; NULL if none. */
const struct pm_state_blob *pm_state_find(const struct pm_state_store *s, int32_t grank,
					  const char *name);
/* The i-th blob (for listing), NULL past the end. */
const struct pm_state_blob *pm_state_at(const struct pm_state_store *s, size_t i);

/* Who may read or save a rank's state: a supervisor of this step's job
 * user (the socket's peer uid) running that same global rank. Root is not
 * a reader: it never needs the user's bytes. */
bool pm_state_may_access(uint32_t job_uid, uint32_t peer_uid, int32_t peer_grank,
			 int32_t grank);

/* The buddy acknowledged (grank, name) at version: safe if it is still the
 * latest (an older one acknowledged late changes nothing). */
void pm_state_mark_safe(struct pm_state_store *s, int32_t grank, const char *name,
			uint64_t version);

/* A replica from owner_node: kept if newer than the one held and within
 * max_node; *old gets the handle replaced or refused (-1 if none) for the
 * caller to close. 0 kept, -1 refused with err. */
int pm_state_put_replica(struct pm_state_store *s, const struct pm_state_blob *meta, int handle,
			 int *old, char *err, size_t errlen);
/* The replicas of owner_node go (it was lost and its state handed on, or
 * the step shrank): each handle to release(). */
void pm_state_drop_replicas(struct pm_state_store *s, uint32_t owner_node,
			    void (*release)(int, void *), void *arg);

/* A newer copy of (grank, name) is here from node by_owner (this node's
 * own commit: by_owner == s->node; a replica from the node that runs the
 * rank now): the replicas of (grank, name) from any other node go, each
 * handle to release(). A global rank runs on one node at a time, so such
 * a replica is a lost node's, handed on and now superseded. The number of
 * blobs dropped. */
size_t pm_state_drop_superseded(struct pm_state_store *s, int32_t grank, const char *name,
				uint32_t by_owner, void (*release)(int, void *), void *arg);

/* A rank's state goes (a sweep's trial run ended on its slot, or another
 * began there: common/statescope.h). owner == s->node: every blob of
 * grank here, its own and any replica handed to this node for it, and its
 * saves in flight (their commits find no ticket); another owner: only
 * that node's replicas of grank (its buddy said so, or it was lost).
 * Each handle to release(); the number of blobs dropped. */
size_t pm_state_drop_rank(struct pm_state_store *s, uint32_t owner, int32_t grank,
			  void (*release)(int, void *), void *arg);

/* The buddy of node i among nodes 0..n-1 (n >= 2), given each node's
 * failure domain (a switch, a rack: dom[i]; NULL: all one domain): the
 * next node in ring order in another domain, else the next node. Every
 * node computes the same answer, so the root and a spare know where a lost
 * node's state is. -1 if n < 2. */
long pm_state_buddy(uint32_t i, uint32_t n, const uint32_t *dom);

#endif
