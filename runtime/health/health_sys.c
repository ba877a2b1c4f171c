/* mem, disk and nic: the checks that read /proc, /sys and statvfs. */
#include "health_int.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define IFF_UP_FLAG 0x1 /* <net/if.h>'s IFF_UP, as /sys/class/net/X/flags shows it */

static uint64_t min_of(const struct pm_check *c)
{
	return c->min_bytes ? c->min_bytes : PM_HEALTH_DEFAULT_MIN;
}

void pm_health_mem(struct pm_health *h, const struct pm_check *c,
		   struct pm_health_result *r)
{
	char path[PATH_MAX], line[256], a[32], b[32];
	unsigned long long kb = 0;
	int found = 0;
	uint64_t avail;
	FILE *f;

	if (pm_hpath(h, path, sizeof(path), "/proc/meminfo")) {
		pm_hres(r, PM_HEALTH_ERROR, "sysroot path too long");
		return;
	}
	f = fopen(path, "re");
	if (!f) {
		pm_hres(r, PM_HEALTH_ERROR, "cannot read %s: %s", path, strerror(errno));
		return;
	}
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "MemAvailable: %llu kB", &kb) == 1;
	fclose(f);
	if (!found) {
		/* Kernels before 3.14 lack it; free+cached would overstate
		 * what can really be allocated, so don't guess. */
		pm_hres(r, PM_HEALTH_ERROR, "no MemAvailable line in %s", path);
		return;
	}
	avail = (uint64_t)kb * 1024;
	pm_hsize(avail, a, sizeof(a));
	pm_hsize(min_of(c), b, sizeof(b));
	if (avail < min_of(c))
		pm_hres(r, PM_HEALTH_FAIL, "only %s of memory available, below %s", a, b);
	else
		pm_hres(r, PM_HEALTH_OK, "%s available (min %s)", a, b);
}

void pm_health_disk(struct pm_health *h, const struct pm_check *c,
		    struct pm_health_result *r)
{
	struct statvfs sv;
	uint64_t avail;
	char a[32], b[32];

	(void)h;
	if (statvfs(c->arg, &sv)) {
		pm_hres(r, PM_HEALTH_ERROR, "cannot statvfs %s: %s", c->arg, strerror(errno));
		return;
	}
	/* f_bavail, not f_bfree: the job runs unprivileged and cannot use
	 * the blocks reserved for root. */
	avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	pm_hsize(avail, a, sizeof(a));
	pm_hsize(min_of(c), b, sizeof(b));
	if (avail < min_of(c))
		pm_hres(r, PM_HEALTH_FAIL, "only %s free on %s, below %s", a, c->arg, b);
	else
		pm_hres(r, PM_HEALTH_OK, "%s free on %s (min %s)", a, c->arg, b);
}

/* First line of a small sysfs file, without the newline; -1 with errno. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -1;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok) {
		errno = ENODATA;
		return -1;
	}
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int visible(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* Every port of IB device dev must be ACTIVE. Returns 0 if it is, 1 with
 * r filled if not, -1 with r filled if it cannot be read. */
static int ib_ports(struct pm_health *h, const char *dev,
		    struct pm_health_result *r, int *nports)
{
	char path[PATH_MAX], state[64];
	struct dirent **ports = NULL;
	int i, n, rc = 0;

	if (pm_hpath(h, path, sizeof(path), "/sys/class/infiniband/%s/ports", dev)) {
		pm_hres(r, PM_HEALTH_ERROR, "path too long for %s", dev);
		return -1;
	}
	n = scandir(path, &ports, visible, alphasort);
	if (n < 0) {
		pm_hres(r, PM_HEALTH_ERROR, "cannot list %s: %s", path, strerror(errno));
		return -1;
	}
	if (n == 0) {
		pm_hres(r, PM_HEALTH_FAIL, "%s has no ports", dev);
		rc = 1;
	}
	for (i = 0; i < n; i++) {
		const char *name = ports[i]->d_name;
		const char *s;
		if (rc)
			continue;
		if (pm_hpath(h, path, sizeof(path), "/sys/class/infiniband/%s/ports/%s/state",
			     dev, name) || read_line(path, state, sizeof(state))) {
			pm_hres(r, PM_HEALTH_ERROR, "cannot read the state of %s port %s: %s",
				dev, name, strerror(errno));
			rc = -1;
			continue;
		}
		(*nports)++;
		/* The file reads "4: ACTIVE": the number is the IB spec's. */
		s = strchr(state, ':');
		s = s ? s + 1 + strspn(s + 1, " ") : state;
		if (strcmp(s, "ACTIVE")) {
			pm_hres(r, PM_HEALTH_FAIL, "InfiniBand %s port %s is %s, not ACTIVE",
				dev, name, s);
			rc = 1;
		}
	}
	for (i = 0; i < n; i++)
		free(ports[i]);
	free(ports);
	return rc;
}

/* Interface dev must be up. Same return convention as ib_ports. */
static int net_up(struct pm_health *h, const char *dev, struct pm_health_result *r)
{
	char path[PATH_MAX], state[64], flags[64];

	if (pm_hpath(h, path, sizeof(path), "/sys/class/net/%s/operstate", dev) ||
	    read_line(path, state, sizeof(state))) {
		pm_hres(r, PM_HEALTH_ERROR, "cannot read the state of %s: %s", dev,
			strerror(errno));
		return -1;
	}
	if (!strcmp(state, "up"))
		return 0;
	/* Loopback and some drivers (tunnels, a few IPoIB and RoCE setups)
	 * never report an operstate: then administratively up is all there
	 * is to know. */
	if (!strcmp(state, "unknown") &&
	    !pm_hpath(h, path, sizeof(path), "/sys/class/net/%s/flags", dev) &&
	    !read_line(path, flags, sizeof(flags)) &&
	    (strtoul(flags, NULL, 16) & IFF_UP_FLAG))
		return 0;
	pm_hres(r, PM_HEALTH_FAIL, "interface %s is %s, not up", dev, state);
	return 1;
}

static int exists(struct pm_health *h, const char *cls, const char *dev)
{
	char path[PATH_MAX];

	if (pm_hpath(h, path, sizeof(path), "/sys/class/%s/%s", cls, dev))
		return 0;
	return access(path, F_OK) == 0;
}

/* Worst of the two: an unhealthy NIC outranks an unreadable one, so that a
 * real failure is what gets reported and drained for. */
static void keep_worst(struct pm_health_result *acc, int *acc_rc,
		       const struct pm_health_result *r, int rc)
{
	if (rc > 0 && *acc_rc <= 0) {
		*acc = *r;
		*acc_rc = rc;
	} else if (rc < 0 && *acc_rc == 0) {
		*acc = *r;
		*acc_rc = rc;
	}
}

static void nic_list(struct pm_health *h, const char *list,
		     struct pm_health_result *r)
{
	char buf[PATH_MAX], *save = NULL, *dev;
	struct pm_health_result tmp = *r, worst = *r;
	int rc, worst_rc = 0, nib = 0, nnet = 0, nports = 0;

	snprintf(buf, sizeof(buf), "%s", list);
	for (dev = strtok_r(buf, "+", &save); dev; dev = strtok_r(NULL, "+", &save)) {
		int found = 0;
		if (exists(h, "infiniband", dev)) {
			found = 1;
			nib++;
			rc = ib_ports(h, dev, &tmp, &nports);
			keep_worst(&worst, &worst_rc, &tmp, rc);
		}
		if (exists(h, "net", dev)) {
			found = 1;
			nnet++;
			rc = net_up(h, dev, &tmp);
			keep_worst(&worst, &worst_rc, &tmp, rc);
		}
		if (!found) {
			pm_hres(&tmp, PM_HEALTH_FAIL, "no InfiniBand device or interface named %s",
				dev);
			keep_worst(&worst, &worst_rc, &tmp, 1);
		}
	}
	if (worst_rc) {
		r->status = worst.status;
		memcpy(r->reason, worst.reason, sizeof(r->reason));
		return;
	}
	pm_hres(r, PM_HEALTH_OK, "%d InfiniBand device(s) (%d port(s) ACTIVE), %d interface(s) up",
		nib, nports, nnet);
}

void pm_health_nic(struct pm_health *h, const struct pm_check *c,
		   struct pm_health_result *r)
{
	char path[PATH_MAX], list[PATH_MAX] = "";
	struct dirent **devs = NULL;
	size_t used = 0;
	int i, n;

	if (c->arg[0]) {
		nic_list(h, c->arg, r);
		return;
	}
	if (h->nics[0]) {
		nic_list(h, h->nics, r);
		return;
	}
	/* Neither the check nor the step names a NIC: every IB device. */
	if (pm_hpath(h, path, sizeof(path), "/sys/class/infiniband")) {
		pm_hres(r, PM_HEALTH_ERROR, "sysroot path too long");
		return;
	}
	n = scandir(path, &devs, visible, alphasort);
	if (n < 0 && errno == ENOENT) {
		pm_hres(r, PM_HEALTH_OK, "no InfiniBand device and no NIC named: nothing to check");
		return;
	}
	if (n < 0) {
		pm_hres(r, PM_HEALTH_ERROR, "cannot list %s: %s", path, strerror(errno));
		return;
	}
	for (i = 0; i < n; i++) {
		size_t l = strlen(devs[i]->d_name);
		if (used + l + 2 < sizeof(list)) {
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
						 used ? "+" : "", devs[i]->d_name);
		}
		free(devs[i]);
	}
	free(devs);
	if (!n) {
		pm_hres(r, PM_HEALTH_OK, "no InfiniBand device and no NIC named: nothing to check");
		return;
	}
	nic_list(h, list, r);
}
