#include "request.h"

#include <stdio.h>
#include <string.h>

static const char *const kinds[PM_Q_MAX] = {
	[PM_Q_STATUS] = "status", [PM_Q_STACKS] = "stacks", [PM_Q_EVENTS] = "events",
	[PM_Q_RESTART] = "restart", [PM_Q_STOP] = "stop",
};

const char *pm_query_kind_name(int kind)
{
	return kind > 0 && kind < PM_Q_MAX ? kinds[kind] : "unknown";
}

int pm_query_kind_parse(const char *name, enum pm_query_kind *kind)
{
	int k;

	for (k = 1; k < PM_Q_MAX; k++)
		if (!strcmp(name, kinds[k])) {
			*kind = (enum pm_query_kind)k;
			return 0;
		}
	return -1;
}

int pm_query_kind_tree(enum pm_query_kind kind)
{
	return kind == PM_Q_STATUS || kind == PM_Q_STACKS;
}

static int args_ok(const char *a)
{
	if (!*a)
		return 0;
	for (; *a; a++)
		if (*a <= ' ' || *a == 0x7f)
			return 0;
	return 1;
}

static int host_ok(const char *h)
{
	size_t n = strlen(h);

	if (!n || n >= PM_REQ_HOST_MAX || h[0] == '-' || h[0] == '.')
		return 0;
	return strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

static int nonce_ok(const char *n)
{
	return strlen(n) == PM_REQ_NONCE_HEX &&
	       strspn(n, "0123456789abcdef") == PM_REQ_NONCE_HEX;
}

static int fields_ok(const struct pm_request *r)
{
	return host_ok(r->host) && r->port > 0 && r->port < 65536 && nonce_ok(r->nonce);
}

int pm_request_format(const struct pm_request *r, char *buf, size_t len)
{
	int n;

	if (r->kind <= 0 || r->kind >= PM_Q_MAX || !args_ok(r->args) || !fields_ok(r))
		return -1;
	n = snprintf(buf, len, "procmgr-client v2 %s job=%u step=%u to=%s:%u nonce=%s args=%s",
		     kinds[r->kind], r->job, r->step, r->host, r->port, r->nonce, r->args);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int pm_request_parse(const char *s, struct pm_request *r)
{
	char kind[16], again[PM_REQ_MAX];
	int end = -1;

	memset(r, 0, sizeof(*r));
	if (strlen(s) >= PM_REQ_MAX ||
	    sscanf(s, "procmgr-client v2 %15s job=%u step=%u to=%255[A-Za-z0-9._-]:%u "
		   "nonce=%32s args=%255s%n", kind, &r->job, &r->step, r->host, &r->port,
		   r->nonce, r->args, &end) != 7 ||
	    end < 0 || s[end] != '\0' || pm_query_kind_parse(kind, &r->kind))
		return -1;
	/* What sscanf let through (signs, leading zeros, spaces) is refused
	 * by asking for the same text back. */
	if (pm_request_format(r, again, sizeof(again)) || strcmp(again, s))
		return -1;
	return 0;
}

int pm_request_proof(const struct pm_request *r, char *buf, size_t len)
{
	int n;

	if (!fields_ok(r))
		return -1;
	n = snprintf(buf, len, "procmgr-root v1 job=%u step=%u to=%s:%u nonce=%s", r->job,
		     r->step, r->host, r->port, r->nonce);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int pm_request_is_v1(const char *s)
{
	return !strncmp(s, "procmgr-client v1 ", 18);
}
