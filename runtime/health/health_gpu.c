/* gpu: NVML, loaded with dlopen on the first gpu check so that procmgr
 * neither builds nor runs against CUDA unless a GPU check is asked for. */
#include "health_int.h"
#include "nvml_abi.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PM_XID_DRAIN_MAX 4096 /* events read per run, a bound not a quota */

struct pm_nvml {
	void *dl;
	int inited;
	nvmlInit_v2_fn init;
	nvmlShutdown_fn shutdown;
	nvmlErrorString_fn errstr;
	nvmlDeviceGetCount_v2_fn count;
	nvmlDeviceGetHandleByIndex_v2_fn handle;
	nvmlDeviceGetUUID_fn uuid;
	/* Optional: older drivers or GPUs lack some; a missing one skips
	 * that part of the check. */
	nvmlDeviceGetTotalEccErrors_fn ecc;
	nvmlDeviceGetRetiredPagesPendingStatus_fn retired;
	nvmlDeviceGetRemappedRows_fn remapped;
	nvmlEventSetCreate_fn ev_create;
	nvmlDeviceRegisterEvents_fn ev_register;
	nvmlEventSetWait_v2_fn ev_wait;
	nvmlEventSetFree_fn ev_free;
	nvmlEventSet_t events; /* XID events of every device, from the first run */
	int events_tried;
};

/* The first problem found is the reason; the others are counted. */
struct gpu_acc {
	struct pm_health_result *r;
	int problems;
	int error_only; /* all problems so far were ERRORs */
};

__attribute__((format(printf, 3, 4)))
static void problem(struct gpu_acc *a, enum pm_health_status st, const char *fmt, ...)
{
	va_list ap;
	char buf[256];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* A FAIL (the node is unhealthy) outranks an ERROR (could not tell). */
	if (!a->problems || (a->error_only && st == PM_HEALTH_FAIL)) {
		pm_hres(a->r, st, "%s", buf);
		a->error_only = st == PM_HEALTH_ERROR;
	}
	a->problems++;
}

static void *sym(struct pm_nvml *n, const char *name)
{
	return dlsym(n->dl, name);
}

static struct pm_nvml *nvml_load(const char *lib, struct pm_health_result *r)
{
	struct pm_nvml *n = calloc(1, sizeof(*n));

	if (!n) {
		pm_hres(r, PM_HEALTH_ERROR, "out of memory");
		return NULL;
	}
	n->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!n->dl) {
		pm_hres(r, PM_HEALTH_ERROR,
			"NVML not available, is the NVIDIA driver installed? (%s)", dlerror());
		free(n);
		return NULL;
	}
	n->init = (nvmlInit_v2_fn)sym(n, "nvmlInit_v2");
	n->shutdown = (nvmlShutdown_fn)sym(n, "nvmlShutdown");
	n->errstr = (nvmlErrorString_fn)sym(n, "nvmlErrorString");
	n->count = (nvmlDeviceGetCount_v2_fn)sym(n, "nvmlDeviceGetCount_v2");
	n->handle = (nvmlDeviceGetHandleByIndex_v2_fn)sym(n, "nvmlDeviceGetHandleByIndex_v2");
	n->uuid = (nvmlDeviceGetUUID_fn)sym(n, "nvmlDeviceGetUUID");
	n->ecc = (nvmlDeviceGetTotalEccErrors_fn)sym(n, "nvmlDeviceGetTotalEccErrors");
	n->retired = (nvmlDeviceGetRetiredPagesPendingStatus_fn)
		sym(n, "nvmlDeviceGetRetiredPagesPendingStatus");
	n->remapped = (nvmlDeviceGetRemappedRows_fn)sym(n, "nvmlDeviceGetRemappedRows");
	n->ev_create = (nvmlEventSetCreate_fn)sym(n, "nvmlEventSetCreate");
	n->ev_register = (nvmlDeviceRegisterEvents_fn)sym(n, "nvmlDeviceRegisterEvents");
	n->ev_wait = (nvmlEventSetWait_v2_fn)sym(n, "nvmlEventSetWait_v2");
	n->ev_free = (nvmlEventSetFree_fn)sym(n, "nvmlEventSetFree");
	if (!n->init || !n->shutdown || !n->errstr || !n->count || !n->handle || !n->uuid) {
		pm_hres(r, PM_HEALTH_ERROR, "%s is not a usable NVML library (it lacks %s)", lib,
			!n->init ? "nvmlInit_v2" : !n->shutdown ? "nvmlShutdown" :
			!n->errstr ? "nvmlErrorString" : !n->count ? "nvmlDeviceGetCount_v2" :
			!n->handle ? "nvmlDeviceGetHandleByIndex_v2" : "nvmlDeviceGetUUID");
		dlclose(n->dl);
		free(n);
		return NULL;
	}
	return n;
}

static const char *nv_err(struct pm_nvml *n, nvmlReturn_t rc)
{
	const char *s = n->errstr(rc);
	return s ? s : "unknown NVML error";
}

/* An NVML query that did not succeed: a lost GPU is a FAIL, an unsupported
 * query is nothing, anything else is an ERROR (we could not tell). */
static int query_failed(struct pm_nvml *n, struct gpu_acc *a, nvmlReturn_t rc,
			unsigned i, const char *what)
{
	if (rc == NVML_SUCCESS)
		return 0;
	if (rc == NVML_ERROR_NOT_SUPPORTED)
		return 1;
	problem(a, rc == NVML_ERROR_GPU_IS_LOST ? PM_HEALTH_FAIL : PM_HEALTH_ERROR,
		"GPU %u: cannot read %s: %s", i, what, nv_err(n, rc));
	return 1;
}

static void check_device(struct pm_nvml *n, nvmlDevice_t d, unsigned i, struct gpu_acc *a)
{
	unsigned long long ecc = 0;
	nvmlEnableState_t pending = NVML_FEATURE_DISABLED;
	unsigned corr = 0, unc = 0, rpending = 0, rfailed = 0;
	nvmlReturn_t rc;

	if (n->ecc) {
		rc = n->ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &ecc);
		if (!query_failed(n, a, rc, i, "ECC counters") && ecc)
			problem(a, PM_HEALTH_FAIL,
				"GPU %u: %llu uncorrectable ECC error(s) since the driver loaded",
				i, ecc);
	}
	if (n->retired) {
		rc = n->retired(d, &pending);
		if (!query_failed(n, a, rc, i, "page retirement") &&
		    pending == NVML_FEATURE_ENABLED)
			problem(a, PM_HEALTH_FAIL,
				"GPU %u: page retirement pending (the GPU needs a reset)", i);
	}
	if (n->remapped) {
		rc = n->remapped(d, &corr, &unc, &rpending, &rfailed);
		if (!query_failed(n, a, rc, i, "row remapping")) {
			if (rfailed)
				problem(a, PM_HEALTH_FAIL, "GPU %u: row remapping failed", i);
			else if (rpending)
				problem(a, PM_HEALTH_FAIL,
					"GPU %u: row remapping pending (the GPU needs a reset)", i);
		}
	}
}

/* Called once, on the first run that reaches the devices: from then on,
 * every XID event is queued for a later run to find. */
static void events_register(struct pm_nvml *n, nvmlDevice_t *devs, unsigned count,
			    struct gpu_acc *a)
{
	unsigned i, ok = 0;
	nvmlReturn_t rc;

	n->events_tried = 1;
	if (!n->ev_create || !n->ev_register || !n->ev_wait || !n->ev_free)
		return;
	rc = n->ev_create(&n->events);
	if (rc != NVML_SUCCESS) {
		n->events = NULL;
		problem(a, PM_HEALTH_ERROR, "cannot create an NVML event set: %s", nv_err(n, rc));
		return;
	}
	for (i = 0; i < count; i++) {
		if (!devs[i])
			continue;
		rc = n->ev_register(devs[i], nvmlEventTypeXidCriticalError, n->events);
		if (rc == NVML_SUCCESS)
			ok++;
		else if (rc != NVML_ERROR_NOT_SUPPORTED)
			problem(a, PM_HEALTH_ERROR, "GPU %u: cannot watch XID events: %s", i,
				nv_err(n, rc));
	}
	if (!ok) {
		n->ev_free(n->events);
		n->events = NULL;
	}
}

static void events_drain(struct pm_nvml *n, nvmlDevice_t *devs, unsigned count,
			 struct gpu_acc *a)
{
	nvmlEventData_t ev;
	nvmlReturn_t rc;
	unsigned i, k;

	for (k = 0; n->events && k < PM_XID_DRAIN_MAX; k++) {
		memset(&ev, 0, sizeof(ev));
		/* Timeout 0: only what is already queued; never block. */
		rc = n->ev_wait(n->events, &ev, 0);
		if (rc == NVML_ERROR_TIMEOUT)
			return;
		if (rc != NVML_SUCCESS) {
			problem(a, PM_HEALTH_ERROR, "cannot read XID events: %s", nv_err(n, rc));
			return;
		}
		if (!(ev.eventType & nvmlEventTypeXidCriticalError))
			continue;
		for (i = 0; i < count && devs[i] != ev.device; i++)
			;
		if (i < count)
			problem(a, PM_HEALTH_FAIL, "GPU %u: XID %llu", i, ev.eventData);
		else
			problem(a, PM_HEALTH_FAIL, "XID %llu on an unknown GPU", ev.eventData);
	}
}

void pm_health_gpu(struct pm_health *h, const struct pm_check *c,
		   struct pm_health_result *r)
{
	struct gpu_acc a = { .r = r, .problems = 0, .error_only = 0 };
	nvmlDevice_t *devs = NULL;
	unsigned count = 0, i, ok = 0;
	struct pm_nvml *n;
	nvmlReturn_t rc;

	if (!h->nvml && !(h->nvml = nvml_load(h->nvml_lib, r)))
		return;
	n = h->nvml;
	if (!n->inited) {
		rc = n->init();
		if (rc != NVML_SUCCESS) {
			pm_hres(r, PM_HEALTH_ERROR, "nvmlInit failed: %s", nv_err(n, rc));
			return;
		}
		n->inited = 1;
	}
	rc = n->count(&count);
	if (rc != NVML_SUCCESS) {
		pm_hres(r, PM_HEALTH_ERROR, "cannot count GPUs: %s", nv_err(n, rc));
		return;
	}
	if (count && !(devs = calloc(count, sizeof(*devs)))) {
		pm_hres(r, PM_HEALTH_ERROR, "out of memory");
		return;
	}
	for (i = 0; i < count; i++) {
		char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
		nvmlDevice_t d;
		rc = n->handle(i, &d);
		if (rc == NVML_ERROR_NO_PERMISSION)
			continue; /* another job's GPU behind a device cgroup */
		if (rc != NVML_SUCCESS) {
			problem(&a, PM_HEALTH_FAIL, "GPU %u: %s", i, nv_err(n, rc));
			continue;
		}
		/* A cheap query: a GPU that cannot answer this is not usable. */
		rc = n->uuid(d, uuid, sizeof(uuid));
		if (rc != NVML_SUCCESS) {
			problem(&a, PM_HEALTH_FAIL, "GPU %u not responding: %s", i, nv_err(n, rc));
			continue;
		}
		devs[i] = d;
		ok++;
		check_device(n, d, i, &a);
	}
	if (!n->events_tried)
		events_register(n, devs, count, &a);
	events_drain(n, devs, count, &a);
	free(devs);
	if (c->count > 0 && ok < (unsigned)c->count)
		problem(&a, PM_HEALTH_FAIL, "%u responsive GPU(s), expected %d", ok, c->count);
	else if (c->count < 0 && ok == 0)
		problem(&a, PM_HEALTH_FAIL, "no responsive GPU (NVML sees %u)", count);
	if (a.problems > 1) {
		size_t l = strlen(r->reason);
		snprintf(r->reason + l, sizeof(r->reason) - l, " (and %d more problem(s))",
			 a.problems - 1);
	}
	if (!a.problems)
		pm_hres(r, PM_HEALTH_OK, "%u GPU(s) responsive; no ECC, retirement, remapping or XID problem%s",
			ok, n->events ? "" : " (XID events not watched)");
}

void pm_health_gpu_close(struct pm_health *h)
{
	struct pm_nvml *n = h->nvml;

	if (!n)
		return;
	if (n->events)
		n->ev_free(n->events);
	if (n->inited)
		n->shutdown();
	dlclose(n->dl);
	free(n);
	h->nvml = NULL;
}
