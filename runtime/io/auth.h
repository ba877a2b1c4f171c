/* munge credentials for the control tree: a child proves to its parent that
 * it runs as the job's user, for this job and step. */
#ifndef PM_AUTH_H
#define PM_AUTH_H

#include <stddef.h>
#include <sys/types.h>

/* The payload a credential carries for a step. */
void pm_auth_payload(char *buf, size_t len, unsigned job, unsigned step);
/* socket NULL: munge's default. *cred is malloc'ed. */
int pm_auth_encode(const char *socket, const char *payload, char **cred,
		   char *err, size_t errlen);
/* 0 if cred is valid, from uid, and carries exactly payload. */
int pm_auth_verify(const char *socket, const char *cred, uid_t uid,
		   const char *payload, char *err, size_t errlen);

#endif
