#include "auth.h"

#include "common/wire.h"

#include <munge.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static munge_ctx_t ctx_for(const char *socket, char *err, size_t errlen)
{
	munge_ctx_t ctx = munge_ctx_create();

	if (!ctx) {
		snprintf(err, errlen, "munge_ctx_create failed");
		return NULL;
	}
	if (socket && *socket &&
	    munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket) != EMUNGE_SUCCESS) {
		snprintf(err, errlen, "munge socket %s: %s", socket, munge_ctx_strerror(ctx));
		munge_ctx_destroy(ctx);
		return NULL;
	}
	return ctx;
}

int pm_auth_encode(const char *socket, const char *payload, char **cred,
		   char *err, size_t errlen)
{
	munge_ctx_t ctx = ctx_for(socket, err, errlen);
	munge_err_t e;

	if (!ctx)
		return -1;
	e = munge_encode(cred, ctx, payload, (int)strlen(payload));
	if (e != EMUNGE_SUCCESS)
		snprintf(err, errlen, "munge_encode: %s", munge_ctx_strerror(ctx));
	munge_ctx_destroy(ctx);
	return e == EMUNGE_SUCCESS ? 0 : -1;
}

int pm_auth_decode(const char *socket, const char *cred, uid_t uid, char *payload,
		   size_t plen, char *err, size_t errlen)
{
	uid_t cuid;

	if (pm_auth_decode_uid(socket, cred, &cuid, payload, plen, err, errlen))
		return -1;
	if (cuid != uid) {
		snprintf(err, errlen, "credential of uid %u, not the job's user (uid %u)",
			 (unsigned)cuid, (unsigned)uid);
		return -1;
	}
	return 0;
}

int pm_auth_decode_uid(const char *socket, const char *cred, uid_t *uid, char *payload,
		       size_t plen, char *err, size_t errlen)
{
	munge_ctx_t ctx = ctx_for(socket, err, errlen);
	void *buf = NULL;
	int len = 0, rc = -1;
	uid_t cuid;
	gid_t cgid;
	munge_err_t e;

	if (!ctx)
		return -1;
	e = munge_decode(cred, ctx, &buf, &len, &cuid, &cgid);
	if (e != EMUNGE_SUCCESS)
		snprintf(err, errlen, "invalid munge credential: %s", munge_ctx_strerror(ctx));
	else if (len < 0 || (size_t)len >= plen || memchr(buf, '\0', (size_t)len))
		snprintf(err, errlen, "credential carries no procmgr handshake");
	else {
		memcpy(payload, buf, (size_t)len);
		payload[len] = '\0';
		*uid = cuid;
		rc = 0;
	}
	free(buf);
	munge_ctx_destroy(ctx);
	return rc;
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
