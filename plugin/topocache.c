#include "topocache.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "affinity/topology.h"
#include "plugin.h"

/* Per host, as state_dir may be shared between nodes. */
static int cache_path(char *buf, size_t len)
{
	char host[256];
	int n;

	if (gethostname(host, sizeof(host)))
		return -1;
	host[sizeof(host) - 1] = '\0';
	n = snprintf(buf, len, "%s/topology.%s.xml", pm_g.site.state_dir, host);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* A file older than the running kernel may describe other hardware. */
static time_t boot_time(void)
{
	FILE *f = fopen("/proc/stat", "re");
	char line[256];
	long long bt = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %lld", &bt) == 1)
			break;
	fclose(f);
	return (time_t)bt;
}

/* Root's and no one else's to change: the plugin plans as root from it. */
static bool current(const char *path)
{
	struct stat st;
	time_t bt = boot_time();

	return bt > 0 && lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 &&
	       !(st.st_mode & 022) && st.st_mtime >= bt;
}

void pm_topocache_refresh(void)
{
	char path[PATH_MAX], err[PM_ERRLEN];

	if (pm_g.site.topology[0] || cache_path(path, sizeof(path)) || current(path))
		return;
	if (pm_topo_export(path, err, sizeof(err)))
		pm_info("no topology cache, each step discovers the topology: %s", err);
}

const char *pm_topocache_xml(char *buf, size_t len)
{
	if (pm_g.site.topology[0])
		return pm_g.site.topology;
	if (cache_path(buf, len) || !current(buf))
		return NULL;
	return buf;
}
