/* procmgrd's end of a rank link, faked for the tests of procmgr-rank: the
 * built supervisor (./procmgr-rank) is exec'd with the environment the
 * plugin gives it, connects to a unix socket the test listens on, and is
 * driven with the real wire protocol (common/wire.h). Its stdout and
 * stderr come back through pipes. Every wait is a bounded poll on those
 * descriptors: the bound only ends a test that would hang. */
#ifndef PM_TEST_RANKSUP_H
#define PM_TEST_RANKSUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/wire.h"

#define RS_WAIT_MS 20000 /* a bound, never a timing assertion */
#define RS_MSGS 64

struct rsup {
	pid_t pid;     /* procmgr-rank */
	int status;    /* its wait status, once reaped */
	bool reaped;
	int lfd, fd;   /* the listener, and procmgrd's end of the link */
	int out, err;  /* its stdout and stderr, read ends */
	char dir[64];  /* the run directory: sock, heartbeat.0, hang-stack.0, bin/ */
	char sock[128], hb[128];
	uint8_t in[4 * PM_WIRE_FRAME_MAX];
	size_t in_len;
	struct pm_msg msgs[RS_MSGS]; /* received, PINGs answered and left out */
	int nmsgs, next;             /* next: the first not taken by rsup_recv */
	int pings;     /* PINGs received */
	bool mute;     /* PINGs left unanswered: a silent procmgrd */
	char outtext[65536], errtext[65536];
	size_t outlen, errlen;
};

struct rsup_cfg {
	const char *opts;         /* PROCMGR_STEP_OPTIONS; NULL: unset */
	const char *path;         /* PATH; NULL: inherited */
	bool heartbeat;           /* PROCMGR_HEARTBEAT=DIR/heartbeat.0 */
	const char *peer_timeout; /* PROCMGR_PEER_TIMEOUT_MS; NULL: unset */
	int rank;                 /* RANK (LOCAL_RANK is 0) */
	bool no_argv0, no_sock;   /* leave PROCMGR_ARGV0 / PROCMGR_SOCK unset */
	bool no_listen;           /* PROCMGR_SOCK names a socket nobody listens on */
	const char *env[6];       /* more NAME=VALUE */
};

/* A fresh run directory (s->dir), nothing started. */
void rsup_init(struct rsup *s);
/* Starts procmgr-rank on argv (argv[0] is the command: PROCMGR_ARGV0). */
void rsup_exec(struct rsup *s, const struct rsup_cfg *c, char *const argv[]);
/* Accepts its connection and checks its HELLO (rank, local rank 0, its pid). */
void rsup_hello(struct rsup *s, int rank);
/* The next message in order, PINGs aside; false if none came in time. */
bool rsup_recv(struct rsup *s, struct pm_msg *m);
/* The first message not yet taken of that type (others stay for
 * rsup_recv), within the bound; false if none. */
bool rsup_expect(struct rsup *s, int type, struct pm_msg *m);
void rsup_send(struct rsup *s, int type, uint32_t gen, int rank, int node, int status,
	       unsigned count, const char *text);
/* Whether n PINGs came (answered unless mute) while it ran on. */
bool rsup_await_pings(struct rsup *s, int n);
/* Whether its stdout / stderr says needle, within the bound. */
bool rsup_out_has(struct rsup *s, const char *needle);
bool rsup_err_has(struct rsup *s, const char *needle);
/* procmgr-rank's end: its exit code, or -1 if it did not exit in time or
 * was killed. */
int rsup_exit_code(struct rsup *s);
/* A pid that is gone (or a zombie no one reaped yet), within the bound. */
bool rsup_pid_gone(pid_t pid);
/* The procmgrd end closes (a lost procmgrd). */
void rsup_close_link(struct rsup *s);
/* Everything ends: procmgr-rank if still there, the directory. */
void rsup_free(struct rsup *s);
/* DIR/bin/NAME, an executable shell script with that body. */
void rsup_script(struct rsup *s, const char *name, const char *body);
/* A file's content ("" if none). */
void rsup_slurp(const char *path, char *buf, size_t len);
/* A supervisor started and said HELLO; generation 0 started: its pid. */
pid_t rsup_start_gen0(struct rsup *s, const struct rsup_cfg *c, char *const argv[]);
#define RSUP_SH(cmd) ((char *const[]){ "/bin/sh", "-c", cmd, NULL })

#endif
