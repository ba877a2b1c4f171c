/* A framed, non-blocking connection in the event loop: whole messages in,
 * whole messages out, whatever the socket does. */
#ifndef PM_CONN_H
#define PM_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loop.h"
#include "common/wire.h"
#include "common/liveness.h"

struct pm_conn;
typedef void (*pm_msg_fn)(struct pm_conn *c, const struct pm_msg *m);
/* why: NULL for an orderly close by the peer. The callback may free c. */
typedef void (*pm_close_fn)(struct pm_conn *c, const char *why);

struct pm_conn {
	struct pm_watch w; /* w.arg is the owner's */
	struct pm_loop *loop;
	uint8_t *in;
	size_t in_len, in_cap;
	uint8_t *out;
	size_t out_len, out_cap;
	pm_msg_fn on_msg;
	pm_close_fn on_close;
	bool dead;
	char drop_why[400]; /* pm_conn_drop's, copied: on_close comes later */
	int id; /* the owner's: node id, local rank */
	uint64_t last_rx; /* pm_now_ms of the last bytes read: the peer's liveness */
	uint64_t last_tick; /* pm_conn_keepalive's last call (common/liveness.h) */
};

/* Takes ownership of fd (made non-blocking). */
struct pm_conn *pm_conn_new(struct pm_loop *l, int fd, pm_msg_fn on_msg,
			    pm_close_fn on_close, void *arg);
int pm_conn_send(struct pm_conn *c, const struct pm_msg *m);
/* From inside on_msg: stop reading; on_close follows with a copy of why
 * (NULL stays NULL). */
void pm_conn_drop(struct pm_conn *c, const char *why);
/* Close now (after trying to flush what is queued) and free. Only from
 * on_close or outside the connection's callbacks. */
void pm_conn_free(struct pm_conn *c);

/* Liveness. A peer that says nothing else still says PING (pm_conn_ping)
 * every period; the frames are consumed here. pm_conn_silent: nothing was
 * read for timeout_ms. pm_conn_fail: close it from outside its callbacks
 * (a timer): on_close runs with why, and c is gone after. */
int pm_conn_ping(struct pm_conn *c);
bool pm_conn_silent(const struct pm_conn *c, uint64_t now_ms, unsigned timeout_ms);
/* One tick of the rule (common/liveness.h): true if the peer is lost (the
 * caller ends the link), else a PING is sent and false. */
bool pm_conn_keepalive(struct pm_conn *c, uint64_t now_ms, unsigned timeout_ms);
/* How often to tick for a timeout: a peer hears from us three times in it. */
static inline unsigned pm_conn_ping_period(unsigned timeout_ms) { return pm_live_period(timeout_ms); }
void pm_conn_fail(struct pm_conn *c, const char *why);

#endif
