#include "blame.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stacks.h"

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

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void fmt_ms(uint64_t ms, char *buf, size_t len)
{
	if (ms < 1000)
		snprintf(buf, len, "%llu ms", (unsigned long long)ms);
	else
		snprintf(buf, len, "%.1f s", (double)ms / 1000.0);
}

void pm_blame_text(const struct pm_blame *b, int first, const char *first_node,
		   const char *blamed_node, int *follower, int n, int nfollowers,
		   uint64_t lead_ms, char *buf, size_t len)
{
	int i, all[65];
	char ago[32], res[32], list[256];
	size_t off;

	if (n > 64)
		n = 64;
	qsort(follower, (size_t)n, sizeof(int), cmp_int);
	fmt_ms(lead_ms, ago, sizeof(ago));
	if (b->by != PM_BLAME_HEARTBEAT) {
		memcpy(all, follower, (size_t)n * sizeof(int));
		all[n] = first;
		if (pm_ranks_format(all, n + 1, list, sizeof(list)))
			snprintf(list, sizeof(list), "%d ranks", nfollowers + 1);
		fmt_ms(PM_BLAME_RESOLUTION_MS, res, sizeof(res));
		off = (size_t)snprintf(buf, len, "ranks %s%s hung with their last heartbeats "
				       "within %s of each other, less than heartbeats resolve (%s): ",
				       list, nfollowers > n ? " and more" : "", ago, res);
		if (b->by == PM_BLAME_STACK)
			snprintf(buf + off, off < len ? len - off : 0, "rank %d on %s, whose stack "
				 "differs from the others', is the likely cause", b->rank, blamed_node);
		else
			snprintf(buf + off, off < len ? len - off : 0, "inconclusive, no evidence "
				 "points at one rank");
		return;
	}
	off = (size_t)snprintf(buf, len, "rank %d on %s hung", first, first_node);
	if (!nfollowers)
		return;
	off += (size_t)snprintf(buf + off, off < len ? len - off : 0,
				" first (its last heartbeat %s before any other's); rank%s", ago,
				nfollowers > 1 ? "s" : "");
	for (i = 0; i < n; i++)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s %d",
					i ? "," : "", follower[i]);
	if (nfollowers > n)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, " and %d more",
					nfollowers - n);
	snprintf(buf + off, off < len ? len - off : 0, " followed");
}
