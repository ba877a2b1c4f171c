#include "checkspec.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

const char *pm_check_name(enum pm_check_kind k)
{
	switch (k) {
	case PM_CHECK_GPU: return "gpu";
	case PM_CHECK_MEM: return "mem";
	case PM_CHECK_DISK: return "disk";
	case PM_CHECK_NIC: return "nic";
	case PM_CHECK_SCRIPT: return "script";
	}
	return "?";
}

const char *pm_check_short(const char *item)
{
	static const char pfx[] = "script:";
	const char *slash;

	if (strncmp(item, pfx, sizeof(pfx) - 1))
		return item;
	slash = strrchr(item, '/');
	/* "script:/dir/" names no file: keep it whole rather than show "". */
	return slash && slash[1] ? slash + 1 : item;
}

int pm_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mult = 1;

	if (!s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (toupper((unsigned char)*end)) {
	case '\0': break;
	case 'K': mult = 1ull << 10; end++; break;
	case 'M': mult = 1ull << 20; end++; break;
	case 'G': mult = 1ull << 30; end++; break;
	case 'T': mult = 1ull << 40; end++; break;
	default: return -1;
	}
	if (*end != '\0' || (v && mult > UINT64_MAX / v))
		return -1;
	*out = v * mult;
	return 0;
}

static int fail(char *err, size_t errlen, const char *item, const char *why)
{
	snprintf(err, errlen, "health check '%.*s%s': %s; allowed: %s", PM_Q(item), why,
		 PM_CHECK_GRAMMAR);
	return -1;
}

static int nic_names_ok(const char *s)
{
	const char *p;

	if (!*s)
		return 0;
	for (p = s; *p; p++) {
		if (*p == '+' && (p == s || p[1] == '+' || p[1] == '\0'))
			return 0;
		if (!isalnum((unsigned char)*p) && !strchr("+_-.", *p))
			return 0;
	}
	return 1;
}

/* Options travel from srun to slurmstepd as space-separated text, and
 * plugstack.conf arguments are split at white space: a path with white
 * space in it cannot get through either. */
static int has_space(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (isspace((unsigned char)s[i]))
			return 1;
	return 0;
}

int pm_check_parse(const char *item, struct pm_check *out, char *err,
		   size_t errlen)
{
	const char *colon = strchr(item, ':');
	size_t nlen = colon ? (size_t)(colon - item) : strlen(item);
	const char *arg = colon ? colon + 1 : NULL;

	memset(out, 0, sizeof(*out));
	out->count = -1;
	if (nlen == 3 && !strncmp(item, "gpu", 3)) {
		unsigned long v;
		char *end;
		out->kind = PM_CHECK_GPU;
		if (!arg)
			return 0;
		errno = 0;
		v = strtoul(arg, &end, 10);
		if (!isdigit((unsigned char)*arg) || *end || errno || v < 1 || v > 1024)
			return fail(err, errlen, item, "COUNT must be an integer from 1 to 1024");
		out->count = (int)v;
		return 0;
	}
	if (nlen == 3 && !strncmp(item, "mem", 3)) {
		out->kind = PM_CHECK_MEM;
		if (arg && (pm_parse_size(arg, &out->min_bytes) || !out->min_bytes))
			return fail(err, errlen, item, "MIN must be a positive size");
		return 0;
	}
	if (nlen == 4 && !strncmp(item, "disk", 4)) {
		const char *c2;
		size_t plen;
		out->kind = PM_CHECK_DISK;
		if (!arg || arg[0] != '/')
			return fail(err, errlen, item, "disk needs an absolute PATH");
		c2 = strchr(arg, ':');
		plen = c2 ? (size_t)(c2 - arg) : strlen(arg);
		if (plen >= sizeof(out->arg))
			return fail(err, errlen, item, "PATH is too long");
		if (has_space(arg, plen))
			return fail(err, errlen, item, "PATH may not contain white space");
		memcpy(out->arg, arg, plen);
		out->arg[plen] = '\0';
		if (c2 && (pm_parse_size(c2 + 1, &out->min_bytes) || !out->min_bytes))
			return fail(err, errlen, item, "MIN must be a positive size");
		return 0;
	}
	if (nlen == 3 && !strncmp(item, "nic", 3)) {
		out->kind = PM_CHECK_NIC;
		if (!arg)
			return 0;
		if (!nic_names_ok(arg) || strlen(arg) >= sizeof(out->arg))
			return fail(err, errlen, item, "NAME must be device names joined by '+'");
		strcpy(out->arg, arg);
		return 0;
	}
	if (nlen == 6 && !strncmp(item, "script", 6)) {
		out->kind = PM_CHECK_SCRIPT;
		if (!arg || arg[0] != '/')
			return fail(err, errlen, item, "script needs an absolute PATH");
		if (strlen(arg) >= sizeof(out->arg))
			return fail(err, errlen, item, "PATH is too long");
		if (has_space(arg, strlen(arg)))
			return fail(err, errlen, item, "PATH may not contain white space");
		strcpy(out->arg, arg);
		return 0;
	}
	return fail(err, errlen, item, "unknown check");
}

int pm_checks_parse(const char *list, struct pm_check *out, int max,
		    char *err, size_t errlen)
{
	char buf[4096], *save = NULL, *tok;
	int n = 0;

	if (strlen(list) >= sizeof(buf)) {
		snprintf(err, errlen, "health check list is longer than %zu characters",
			 sizeof(buf) - 1);
		return -1;
	}
	strcpy(buf, list);
	if (!*buf)
		return 0;
	if (buf[0] == ',' || buf[strlen(buf) - 1] == ',' || strstr(buf, ",,"))
		return fail(err, errlen, list, "empty item in the list");
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct pm_check tmp;
		if (pm_check_parse(tok, out && n < max ? &out[n] : &tmp, err, errlen))
			return -1;
		if (out && n >= max) {
			snprintf(err, errlen, "more than %d health checks", max);
			return -1;
		}
		n++;
	}
	return n;
}
