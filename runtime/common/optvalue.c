/* The values of procmgr's options, parsed and formatted: what each option's
 * text may be. options.c applies them to the step's options. */
#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "text.h"

int pm_parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v;

	if (!s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

const char *pm_restart_name(enum pm_restart_mode m)
{
	switch (m) {
	case PM_RESTART_NEVER: return "never";
	case PM_RESTART_ON_FAILURE: return "on-failure";
	case PM_RESTART_ALWAYS: return "always";
	}
	return "?";
}

int pm_parse_restart(const char *s, enum pm_restart_mode *m, int *max)
{
	const char *colon;
	size_t n;
	unsigned v;

	if (!s)
		return -1;
	if (!strcmp(s, "never")) {
		*m = PM_RESTART_NEVER;
		*max = 0;
		return 0;
	}
	colon = strchr(s, ':');
	n = colon ? (size_t)(colon - s) : strlen(s);
	if (n == 10 && !strncmp(s, "on-failure", n))
		*m = PM_RESTART_ON_FAILURE;
	else if (n == 6 && !strncmp(s, "always", n))
		*m = PM_RESTART_ALWAYS;
	else
		return -1;
	if (!colon) {
		*max = -1;
		return 0;
	}
	if (pm_parse_uint(colon + 1, 0, 1000000, &v))
		return -1;
	*max = (int)v;
	return 0;
}

static const char *const bind_names[] = { "gpu", "nic", "cpu", "mem", "mem-strict" };
#define NBIND 5

int pm_parse_bind(const char *s, unsigned *mask)
{
	char buf[64], *save = NULL, *tok;
	unsigned m = 0;

	if (!s || !*s)
		return -1;
	if (!strcmp(s, "none")) {
		*mask = 0;
		return 0;
	}
	if (!strcmp(s, "closest")) {
		*mask = PM_BIND_ALL;
		return 0;
	}
	if (strlen(s) >= sizeof(buf) || s[0] == ',' || s[strlen(s) - 1] == ',' ||
	    strstr(s, ",,"))
		return -1;
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;
		if (!strcmp(tok, "closest")) {
			m |= PM_BIND_ALL;
			continue;
		}
		for (i = 0; i < NBIND; i++)
			if (!strcmp(tok, bind_names[i]))
				break;
		if (i == NBIND)
			return -1;
		m |= 1u << i;
		if (m & PM_BIND_MEM_STRICT)
			m |= PM_BIND_MEM;
	}
	*mask = m;
	return 0;
}

int pm_format_bind(unsigned mask, char *buf, size_t len)
{
	size_t off = 0;
	int i;

	if (mask == 0)
		return snprintf(buf, len, "none") >= (int)len ? -1 : 0;
	if (mask == PM_BIND_ALL)
		return snprintf(buf, len, "closest") >= (int)len ? -1 : 0;
	buf[0] = '\0';
	for (i = 0; i < NBIND; i++) {
		int n;
		if (!(mask & (1u << i)) ||
		    (i == 3 && (mask & PM_BIND_MEM_STRICT))) /* mem-strict says it */
			continue;
		n = snprintf(buf + off, len - off, "%s%s", off ? "," : "", bind_names[i]);
		if (n < 0 || (size_t)n >= len - off)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

int pm_opt_bad(char *err, size_t errlen, const char *name, const char *value,
	       const char *allowed)
{
	if (!value)
		value = "";
	snprintf(err, errlen, "invalid value '%.*s%s' for --procmgr%s%s: expected %s",
		 PM_Q(value), *name ? "-" : "", name, allowed);
	return -1;
}

/* SECONDS[,FIRST]: the hang timeout, and the first heartbeat's deadline
 * (0: a rank that never beats is never judged). */
int pm_parse_hang(const char *v, unsigned *ms, unsigned *first_ms)
{
	char head[64];
	const char *comma;
	size_t n;

	if (!v)
		return -1;
	comma = strchr(v, ',');
	n = comma ? (size_t)(comma - v) : strlen(v);
	if (n >= sizeof(head))
		return -1;
	memcpy(head, v, n);
	head[n] = '\0';
	*first_ms = 0;
	if (pm_duration_parse(head, ms) || (*ms && *ms < 100) || *ms > 604800000u)
		return -1;
	if (!comma)
		return 0;
	if (!*ms || pm_duration_parse(comma + 1, first_ms) || *first_ms < 100 ||
	    *first_ms > 604800000u)
		return -1;
	return 0;
}

/* An absolute path that can travel in the options text (space-separated
 * name=value tokens) and in a file name: no blanks, no control characters. */
int pm_parse_dir(const char *v, char *out, size_t len, char *err, size_t errlen)
{
	const char *why = NULL;
	const char *p;

	if (!v || !*v)
		why = "an empty path";
	else if (v[0] != '/')
		why = "a relative path (each node resolves it in another working directory)";
	else if (strlen(v) >= len)
		why = "a path too long";
	for (p = v; !why && *p; p++)
		if (isspace((unsigned char)*p) || iscntrl((unsigned char)*p))
			why = "a blank or a control character in the path";
	if (why) {
		snprintf(err, errlen, "invalid value '%.*s%s' for --procmgr-output-dir: %s; "
			 "expected an absolute directory path (at most %zu characters, no blanks), "
			 "which each node creates if missing", PM_Q(v ? v : ""), why, len - 1);
		return -1;
	}
	strcpy(out, v);
	return 0;
}

/* "on", "off"/"0", or INTERVAL[,THRESHOLD%]. */
int pm_parse_slow(const char *s, unsigned *interval_ms, unsigned *pct)
{
	char buf[64], *comma;

	if (!s || strlen(s) >= sizeof(buf))
		return -1;
	if (!strcmp(s, "on")) {
		*interval_ms = PM_DEFAULT_SLOW_INTERVAL_MS;
		*pct = PM_DEFAULT_SLOW_THRESHOLD_PCT;
		return 0;
	}
	if (!strcmp(s, "off") || !strcmp(s, "0")) {
		*interval_ms = 0;
		*pct = PM_DEFAULT_SLOW_THRESHOLD_PCT;
		return 0;
	}
	strcpy(buf, s);
	*pct = PM_DEFAULT_SLOW_THRESHOLD_PCT;
	comma = strchr(buf, ',');
	if (comma) {
		size_t n;
		*comma++ = '\0';
		n = strlen(comma);
		if (n < 2 || comma[n - 1] != '%')
			return -1;
		comma[n - 1] = '\0';
		if (pm_parse_uint(comma, 1, 1000, pct))
			return -1;
	}
	if (pm_duration_parse(buf, interval_ms) || *interval_ms < 100 || *interval_ms > 3600000)
		return -1;
	return 0;
}
