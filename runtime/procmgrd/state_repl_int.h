/* state_repl.c and state_repl_stream.c: buddy replication's links,
 * shared between the two (the handshake and the replacements in the
 * first, the stream's bytes each way in the second). Internal. */
#ifndef PM_STATE_REPL_INT_H
#define PM_STATE_REPL_INT_H

#include "step.h"

#include "common/handshake.h"
#include "common/staterepl.h"
#include "state_repl.h"

#define PM_REPL_TICK_MS 250
#define PM_REPL_RETRY_MS 1000
#define PM_REPL_CHUNK (1u << 20)

/* A blob queued on a push link (holder to spare). */
struct pushed {
	struct pm_state_blob meta;
	int fd; /* a dup of the replica's memfd */
};

struct rlink {
	struct pm_step *s;
	struct pm_state_repl *r;
	struct pm_watch w, tw; /* the socket; the bandwidth timer */
	int peer;
	bool out, push; /* we send blobs: to our buddy, or a lost node's to a spare */
	bool proven;    /* the peer's credential was checked */
	bool connecting;
	char nonce[PM_HS_NONCE_HEX + 1];
	char in[PM_WIRE_FRAME_MAX];
	size_t in_len;
	/* receiving a blob */
	bool rx;
	struct pm_repl_line rl;
	int rx_fd;
	uint64_t rx_got;
	/* sending a blob */
	int tx_fd;
	char hdr[PM_REPL_LINE_MAX + 1];
	size_t hdr_len, hdr_off;
	uint64_t tx_off, tx_size;
	/* A file its rank may write again (swap): copied into the socket
	 * (pread and send), not spliced: sendfile's pages stay referenced by
	 * the socket after it returns, and the rank's next version would
	 * reach the buddy in their place. */
	bool tx_copy;
	int32_t tx_grank;
	char tx_name[PM_STATE_NAME_MAX + 1];
	uint64_t tx_version;
	bool throttled;
	/* push: the queue, then "end" */
	struct pushed *q;
	size_t nq, iq, acked;
	bool end_sent;
	bool handed; /* received a holder's "end": its close is the hand-over's end */
	struct rlink *next;
};

struct pm_state_repl {
	struct pm_step *s;
	struct pm_state_store *st;
	struct pm_repl_track track;
	struct rlink *links, *buddy_link;
	long buddy;
	int nrepl_seen;
	bool *lost;
	bool *ended; /* by owner node: its holder said end */
	uint32_t *dom; /* each node's leaf switch (topology.conf), NULL: the ring */
	long await_from;
	int await_owner;
	uint64_t await_until;
	uint64_t rate, tokens, refill_ms; /* bytes per second */
	uint64_t retry_at;
	struct pm_watch tick;
	uint64_t replicated, received, bytes_out;
	bool said_replicated, said_received, said_fail;
	/* pm_state_repl_sync, for the stream (under state_repl.c) at a
	 * holder's end. */
	void (*sync)(struct pm_step *s);
	/* Ranks whose replicas the buddy is to drop ("drop" lines), said on
	 * the buddy's link between two blobs: after any version of theirs
	 * already on its way, before any saved since. */
	int32_t *drops;
	size_t ndrops, capdrops;
};

/* state_repl_stream.c, under state_repl.c: a link's end, its failures
 * said (once for the buddy's, until it works again), its bytes. */
void pm_repl_link_free(struct rlink *k, const char *why);
void pm_repl_linklog(struct rlink *k, const char *what, const char *why);
int pm_repl_send_all(int fd, const char *buf, size_t len);
int pm_repl_send_frame(int fd, const struct pm_msg *m);
int pm_repl_read_in(struct rlink *k, char *err, size_t len);
/* Send what the socket and the bandwidth allow. */
void pm_repl_pump(struct rlink *k);
void pm_repl_on_throttle(struct pm_loop *l, struct pm_watch *w, uint32_t ev);

#endif
