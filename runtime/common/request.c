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

int pm_request_format(const struct pm_request *r, char *buf, size_t len)
{
	int n;

	if (r->kind <= 0 || r->kind >= PM_Q_MAX || !args_ok(r->args))
		return -1;
	n = snprintf(buf, len, "procmgr-client v1 %s job=%u step=%u args=%s",
		     kinds[r->kind], r->job, r->step, r->args);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int pm_request_parse(const char *s, struct pm_request *r)
{
	char kind[16], again[PM_REQ_MAX];
	int end = -1;

	memset(r, 0, sizeof(*r));
	if (strlen(s) >= PM_REQ_MAX ||
	    sscanf(s, "procmgr-client v1 %15s job=%u step=%u args=%255s%n", kind, &r->job,
		   &r->step, r->args, &end) != 4 ||
	    end < 0 || s[end] != '\0' || pm_query_kind_parse(kind, &r->kind))
		return -1;
	/* What sscanf let through (signs, leading zeros, spaces) is refused
	 * by asking for the same text back. */
	if (pm_request_format(r, again, sizeof(again)) || strcmp(again, s))
		return -1;
	return 0;
}
