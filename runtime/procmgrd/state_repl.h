/* procmgrd's buddy replication of the ranks' state (state_repl.c): the
 * link to this node's buddy, the links of the nodes that replicate here,
 * and a lost node's state handed to the spare that takes its slot. */
#ifndef PM_STATE_REPL_H
#define PM_STATE_REPL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/options.h" /* PM_DEFAULT_STATE_REPL_MIB_S */

struct pm_step;
struct pm_conn;
struct pm_msg;
struct pm_state_store;
struct pm_state_repl;

/* How long a spare's ranks' loads wait for the lost node's state from its
 * buddy before they go on without it. */
#define PM_REPL_AWAIT_MS 60000
/* The replication's bandwidth bound per node, bytes per second (0: none):
 * a background copy that leaves the rest of the link to training. The
 * site's state_repl_rate replaces it (pm_state_repl_set_rate). */
#define PM_REPL_RATE_DEFAULT ((uint64_t)PM_DEFAULT_STATE_REPL_MIB_S << 20)

/* NULL on failure (no replication; the store works without it). */
struct pm_state_repl *pm_state_repl_new(struct pm_step *s, struct pm_state_store *st,
					uint64_t rate);
void pm_state_repl_free(struct pm_state_repl *r);
/* The bound from now on (the site's state_repl_rate); 0: none. */
void pm_state_repl_set_rate(struct pm_state_repl *r, uint64_t rate);
/* A rank committed a version: it goes to the buddy in the background. */
void pm_state_repl_saved(struct pm_step *s, int32_t grank, const char *name, uint64_t version);
/* A rank's state went here (pm_state_drop_rank, a sweep's trial run
 * ended): not sent any more, and the buddy drops its replicas. */
void pm_state_repl_dropped(struct pm_step *s, int32_t grank);
/* The buddy node holds node's replicas: which one (-1: none). */
long pm_state_repl_buddy_of(struct pm_step *s, int node);
/* Whether the file of handle is being sent to a node now (a swapped-in
 * version is not handed back to its rank meanwhile). */
bool pm_state_repl_reading(struct pm_step *s, int handle);
/* The replacements applied since the last call (g->repl), and the spare's
 * wait: true while this node's loads should wait for a lost node's state. */
void pm_state_repl_sync(struct pm_step *s);
bool pm_state_repl_waiting(struct pm_step *s);
/* tree_link.c: a first frame of type BUDDY on the tree port: 1 if it was
 * (answered, and the socket taken or refused), 0 otherwise. */
int pm_state_repl_hello(struct pm_step *s, struct pm_conn *c, const struct pm_msg *m);
void pm_state_repl_counts(const struct pm_state_repl *r, uint64_t *replicated,
			  uint64_t *received, long *buddy);

/* state_link.c's side, above: loads that waited for a lost node's state
 * are served now (state_repl.c calls it through the step's hooks). */
void pm_state_link_resume(struct pm_step *s);

#endif
