/* runtime/io/auth.h without munge, for the unit tests of procmgrd's links:
 * a credential is "fake:UID:PAYLOAD", made and checked in-process. The
 * links link this file in place of auth.c (the seam is the header), so
 * that the handshake, its refusals and the re-attach run over real sockets
 * with no munged. pm_fake_auth_uid is whose credentials encode makes;
 * pm_fake_auth_fail makes encode fail. */
#include "io/auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/wire.h"

long pm_fake_auth_uid = -1; /* -1: getuid() */
int pm_fake_auth_fail;

int pm_auth_encode(const char *socket, const char *payload, char **cred,
		   char *err, size_t errlen)
{
	size_t n = strlen(payload) + 32;
	(void)socket;

	if (pm_fake_auth_fail) {
		snprintf(err, errlen, "munge_encode: fake failure");
		return -1;
	}
	*cred = malloc(n);
	if (!*cred)
		return snprintf(err, errlen, "out of memory"), -1;
	snprintf(*cred, n, "fake:%ld:%s", pm_fake_auth_uid < 0 ? (long)getuid() :
		 pm_fake_auth_uid, payload);
	return 0;
}

int pm_auth_decode_uid(const char *socket, const char *cred, uid_t *uid, char *payload,
		       size_t len, char *err, size_t errlen)
{
	char *end;
	long u;
	(void)socket;

	if (strncmp(cred, "fake:", 5)) {
		snprintf(err, errlen, "invalid munge credential: Invalid credential format");
		return -1;
	}
	u = strtol(cred + 5, &end, 10);
	if (*end != ':' || strlen(end + 1) >= len) {
		snprintf(err, errlen, "credential carries no procmgr handshake");
		return -1;
	}
	*uid = (uid_t)u;
	snprintf(payload, len, "%s", end + 1);
	return 0;
}

int pm_auth_decode(const char *socket, const char *cred, uid_t uid, char *payload,
		   size_t len, char *err, size_t errlen)
{
	uid_t cuid;

	if (pm_auth_decode_uid(socket, cred, &cuid, payload, len, err, errlen))
		return -1;
	if (cuid != uid) {
		snprintf(err, errlen, "credential of uid %u, not the job's user (uid %u)",
			 (unsigned)cuid, (unsigned)uid);
		return -1;
	}
	return 0;
}

int pm_auth_verify(const char *socket, const char *cred, uid_t uid,
		   const char *payload, char *err, size_t errlen)
{
	char got[PM_WIRE_TEXT_MAX];

	if (pm_auth_decode(socket, cred, uid, got, sizeof(got), err, errlen))
		return -1;
	if (strcmp(got, payload)) {
		snprintf(err, errlen, "credential for another job, step, link or nonce ('%.80s')",
			 got);
		return -1;
	}
	return 0;
}
