/* munge credentials for the control tree: each end proves to the other
 * that it runs as the job's user; what the credential carries is
 * common/handshake.h's. */
#ifndef PM_AUTH_H
#define PM_AUTH_H

#include <stddef.h>
#include <sys/types.h>

/* socket NULL: munge's default. *cred is malloc'ed. */
int pm_auth_encode(const char *socket, const char *payload, char **cred,
		   char *err, size_t errlen);
/* 0 if cred is valid and from uid; its payload (NUL-terminated, no NUL
 * inside, shorter than len) is copied to payload. */
int pm_auth_decode(const char *socket, const char *cred, uid_t uid, char *payload,
		   size_t len, char *err, size_t errlen);
/* The same for a credential of any user: *uid says whose it is. */
int pm_auth_decode_uid(const char *socket, const char *cred, uid_t *uid, char *payload,
		       size_t len, char *err, size_t errlen);
/* 0 if cred is valid, from uid, and carries exactly payload. */
int pm_auth_verify(const char *socket, const char *cred, uid_t uid,
		   const char *payload, char *err, size_t errlen);

#endif
