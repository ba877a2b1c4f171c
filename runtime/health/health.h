/* Node health checks: run the checks of checkspec.h on this node and say,
 * for each, ok / fail / error with a one-line reason.
 *
 * FAIL means the node was checked and is unhealthy (a port down, too little
 * memory, a GPU with pending row remapping); ERROR means the check could not
 * be carried out (no NVML library, unreadable /proc, a script that cannot be
 * started). Whether an ERROR blocks a launch or drains a node is policy, not
 * decided here.
 *
 * Paths read: <sysroot>/proc/meminfo, <sysroot>/sys/class/infiniband/ and
 * <sysroot>/sys/class/net/ (sysroot lets tests use fixture trees). disk:PATH
 * and script:PATH are NOT prefixed by sysroot: they name what the job really
 * uses and what the site really runs.
 *
 * Built-in checks run in the caller's thread and can block as long as the
 * kernel or NVML does (statvfs on a hung NFS mount, a GPU falling off the
 * bus); only scripts are bounded by timeout_ms. Run pm_health_run off any
 * latency-critical path. Scripts are children of the caller: the caller must
 * not reap with waitpid(-1) / wait() while pm_health_run is running. */
#ifndef PM_HEALTH_H
#define PM_HEALTH_H

#include <stdbool.h>
#include <stddef.h>

#include "common/checkspec.h"

#define PM_HEALTH_DEFAULT_MIN (1ull << 30)       /* mem, disk: 1 GiB */
#define PM_HEALTH_DEFAULT_NVML "libnvidia-ml.so.1"

enum pm_health_status { PM_HEALTH_OK, PM_HEALTH_FAIL, PM_HEALTH_ERROR };

struct pm_health_result {
	enum pm_health_status status;
	/* The check as written, e.g. "disk:/tmp", whole: the plugin matches it
	 * against the site's list before it drains. */
	char check[PATH_MAX + 32];
	char reason[256];  /* one line, no control characters */
	unsigned elapsed_ms;
};

struct pm_health_ctx {
	const char *sysroot;  /* prefix of /proc and /sys reads; NULL = "/" */
	const char *nvml_lib; /* NULL = PM_HEALTH_DEFAULT_NVML */
	unsigned timeout_ms;  /* scripts: the process group is killed after
	                       * this; 0 = PM_HEALTH_DEFAULT_TIMEOUT_MS */
	const char *nics;     /* NICs the ranks use, '+'-separated; NULL or ""
	                       * = none known. Used by a bare "nic" check. */
};

/* State kept across runs: the NVML library and its XID event set, so that a
 * later run reports only XID events that are new since the previous one. */
struct pm_health;

/* The ctx strings are copied. NVML is loaded on the first gpu check, not
 * here, so nodes without GPUs never touch it. Returns 0 or -1 with err. */
int pm_health_open(struct pm_health **h, const struct pm_health_ctx *ctx,
		   char *err, size_t errlen);
/* Runs checks[0..n) in order; fills results[0..n); returns how many are not
 * PM_HEALTH_OK. */
int pm_health_run(struct pm_health *h, const struct pm_check *checks, int n,
		  struct pm_health_result *results);
void pm_health_close(struct pm_health *h);

/* Whether the NVML library can be loaded (lib NULL = the default). Lets a
 * caller add a gpu check only where GPUs may exist. */
bool pm_health_nvml_loadable(const char *lib);

const char *pm_health_status_name(enum pm_health_status s); /* "ok", ... */

#endif
