/* The procmgr command and a step's root prove themselves to each other
 * (issue 20, item 8): the command's request names the node and port it
 * dialled and a fresh nonce (common/request.h), so that whoever listens
 * there cannot use it anywhere else, nor twice; the root answers nothing
 * before a WELCOME whose credential, of the job's user (or root), binds
 * that same request, so that whoever holds an old root's port cannot pass
 * itself off as the root. Pure: munge's decoding is the caller's. */
#ifndef PM_CLIENTAUTH_H
#define PM_CLIENTAUTH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/request.h"

/* How long a request's nonce is remembered: the credential's lifetime
 * (munge's default TTL, 300 s, which the command keeps) and as much again
 * for the clocks of the nodes. */
#define PM_NONCES_KEEP_MS 600000u
/* At most this many at once; the oldest goes first when it is full (munged's
 * own replay cache still refuses a credential decoded twice on one node). */
#define PM_NONCES_MAX 1024

struct pm_nonces {
	int n;
	struct pm_nonce_entry {
		uint64_t until;
		char nonce[PM_REQ_NONCE_HEX + 1];
	} e[PM_NONCES_MAX];
};

/* 1 if nonce was seen within its lifetime (a replay), else 0 and it is
 * remembered until now + PM_NONCES_KEEP_MS. */
int pm_nonces_seen(struct pm_nonces *set, const char *nonce, uint64_t now_ms);

/* The root: whether request r is for this step and was sent to this very
 * node and port; -1 with why (said to the asker) if not. */
int pm_clientauth_target(const struct pm_request *r, unsigned job, unsigned step,
			 const char *host, unsigned port, char *why, size_t len);

/* The command: whether the WELCOME's credential (of cred_uid, carrying
 * payload) proves that its peer is the step's procmgrd for request r,
 * asked by the job's user job_uid; -1 with why if not. */
int pm_clientauth_proof(const struct pm_request *r, uid_t job_uid, uid_t cred_uid,
			const char *payload, char *why, size_t len);

#endif
