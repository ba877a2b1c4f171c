#include "metricsname.h"

#include <stdio.h>
#include <string.h>

int pm_metrics_name(char *buf, size_t len, uint32_t job, uint32_t step)
{
	int n = snprintf(buf, len, "procmgr-%u.%u.prom", job, step);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int pm_metrics_name_parse(const char *name, uint32_t *job, uint32_t *step)
{
	char again[64];
	unsigned j, s;
	int end = -1;

	if (strlen(name) >= sizeof(again) ||
	    sscanf(name, "procmgr-%u.%u.prom%n", &j, &s, &end) != 2 || end < 0 || name[end] ||
	    pm_metrics_name(again, sizeof(again), j, s) || strcmp(again, name))
		return -1;
	*job = j;
	*step = s;
	return 0;
}

bool pm_metrics_sweepable(const char *content, long long age_s)
{
	return age_s >= PM_METRICS_KEEP_S && (!*content || pm_metrics_finished(content));
}

bool pm_metrics_finished(const char *content)
{
	const char *p = content;

	/* The line procmgrd writes last: procmgr_step_running{job=..,step=..} 0 */
	while ((p = strstr(p, "procmgr_step_running{"))) {
		const char *eol = strchr(p, '\n'), *end = eol ? eol : p + strlen(p);
		if ((p == content || p[-1] == '\n') && end - p >= 3 && !strncmp(end - 3, "} 0", 3))
			return true;
		p = end;
	}
	return false;
}
