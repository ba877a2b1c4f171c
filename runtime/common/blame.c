#include "blame.h"

#include <stddef.h>

struct pm_blame pm_blame_hang(int first, int followers, uint64_t lead_ms, unsigned resolution_ms,
			      int outlier)
{
	if (!followers || lead_ms >= resolution_ms)
		return (struct pm_blame){ PM_BLAME_HEARTBEAT, first };
	if (outlier >= 0)
		return (struct pm_blame){ PM_BLAME_STACK, outlier };
	return (struct pm_blame){ PM_BLAME_NONE, -1 };
}

int pm_blame_outlier(const int *group, const int *ranks, int n, int ngroups)
{
	int i, alone = -1, k = 0;

	if (n < 3 || ngroups != 2)
		return -1;
	for (i = 0; i < n; i++)
		if (group[i] == 1) {
			alone = ranks[i];
			k++;
		}
	return k == 1 ? alone : -1;
}

const char *pm_blame_name(enum pm_blame_by by)
{
	static const char *const names[] = { "heartbeat", "stack", "none" };

	return (unsigned)by < sizeof(names) / sizeof(names[0]) ? names[by] : "?";
}
