#include "clientauth.h"

#include <stdio.h>
#include <string.h>

int pm_nonces_seen(struct pm_nonces *set, const char *nonce, uint64_t now_ms)
{
	int i, oldest = -1;

	for (i = 0; i < set->n;) {
		if (set->e[i].until <= now_ms) {
			set->e[i] = set->e[--set->n];
			continue;
		}
		if (!strcmp(set->e[i].nonce, nonce))
			return 1;
		if (oldest < 0 || set->e[i].until < set->e[oldest].until)
			oldest = i;
		i++;
	}
	i = set->n < PM_NONCES_MAX ? set->n++ : oldest;
	set->e[i].until = now_ms + PM_NONCES_KEEP_MS;
	snprintf(set->e[i].nonce, sizeof(set->e[i].nonce), "%s", nonce);
	return 0;
}

int pm_clientauth_target(const struct pm_request *r, unsigned job, unsigned step,
			 const char *host, unsigned port, char *why, size_t len)
{
	if (r->job != job || r->step != step) {
		snprintf(why, len, "this is step %u.%u, not %u.%u", job, step, r->job, r->step);
		return -1;
	}
	if (strcmp(r->host, host) || r->port != port) {
		snprintf(why, len, "the request was signed for %.100s:%u, not for this node "
			 "(%.100s:%u): a request is answered only where its user sent it", r->host,
			 r->port, host, port);
		return -1;
	}
	return 0;
}

int pm_clientauth_proof(const struct pm_request *r, uid_t job_uid, uid_t cred_uid,
			const char *payload, char *why, size_t len)
{
	char want[PM_REQ_MAX];

	if (cred_uid != job_uid && cred_uid != 0) {
		snprintf(why, len, "its credential is of uid %u, neither the job's user (uid %u) "
			 "nor root", (unsigned)cred_uid, (unsigned)job_uid);
		return -1;
	}
	if (pm_request_proof(r, want, sizeof(want))) {
		snprintf(why, len, "the request cannot be proven (bad target or nonce)");
		return -1;
	}
	if (strcmp(payload, want)) {
		snprintf(why, len, "its credential answers another request ('%.120s')", payload);
		return -1;
	}
	return 0;
}
