#include "topocache.h"

#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "affinity/topology.h"
#include "io/safefile.h"
#include "plugin.h"

/* Per host, as state_dir may be shared between nodes. */
static int cache_name(char *buf, size_t len)
{
	char host[256];
	int n;

	if (gethostname(host, sizeof(host)))
		return -1;
	host[sizeof(host) - 1] = '\0';
	if (strchr(host, '/'))
		return -1;
	n = snprintf(buf, len, "topology.%s.xml", host);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int cache_path(char *buf, size_t len)
{
	char name[300];
	int n;

	if (cache_name(name, sizeof(name)))
		return -1;
	n = snprintf(buf, len, "%s/%s", pm_g.site.state_dir, name);
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
static bool current_at(int dfd, const char *name)
{
	struct stat st;
	time_t bt = boot_time();

	return bt > 0 && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & 022) &&
	       st.st_mtime >= bt;
}

static bool current(const char *path)
{
	return current_at(AT_FDCWD, path);
}

/* As root: state_dir opened once and judged root's alone (spawn.c made it
 * so), the file created new and renamed in it (io/safefile.h). */
void pm_topocache_refresh(void)
{
	char name[300], err[PM_ERRLEN];
	char *xml = NULL;
	size_t len;
	int dfd;

	if (pm_g.site.topology[0] || cache_name(name, sizeof(name)))
		return;
	dfd = pm_privdir_open(pm_g.site.state_dir, 0755, 0, err, sizeof(err));
	if (dfd < 0) {
		pm_info("no topology cache, each step discovers the topology: %s", err);
		return;
	}
	/* Read by the plugin as the job's user. */
	if (!current_at(dfd, name) &&
	    (pm_topo_export_xml(&xml, &len, err, sizeof(err)) ||
	     pm_safefile_write(dfd, name, xml, len, 0644, err, sizeof(err))))
		pm_info("no topology cache, each step discovers the topology: %s", err);
	free(xml);
	close(dfd);
}

const char *pm_topocache_xml(char *buf, size_t len)
{
	if (pm_g.site.topology[0])
		return pm_g.site.topology;
	if (cache_path(buf, len) || !current(buf))
		return NULL;
	return buf;
}
