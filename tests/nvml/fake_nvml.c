/* A test double for libnvidia-ml.so.1: the NVML entry points procmgr uses,
 * with NVML's signatures and return codes, driven by a key=value file named
 * by PROCMGR_FAKE_NVML and re-read on every call, so that a test can change
 * the "hardware" between two health runs.
 *
 *   init=9                    nvmlInit_v2 returns this code
 *   count=4                   devices (at most 64)
 *   gpuN.handle=15            nvmlDeviceGetHandleByIndex_v2 returns this code
 *   gpuN.lost=1               every query on the device returns GPU_IS_LOST
 *   gpuN.ecc=3                volatile uncorrected ECC count, or "unsupported"
 *   gpuN.retired_pending=1    pending page retirement, or "unsupported"
 *   gpuN.remap_pending=1      pending row remapping, or "unsupported"
 *   gpuN.remap_failed=1       row remapping failed
 *   gpuN.events=unsupported   nvmlDeviceRegisterEvents says NOT_SUPPORTED
 *   xid=0:79,1:48             XID events so far, oldest first (device:xid)
 *
 * As in NVML, an event set receives only events that happen after its
 * devices were registered: those already listed at registration are past. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health/nvml_abi.h"

#define FAKE_MAX_DEV 64
#define FAKE_MAX_XID 256
#define UNSUPPORTED (-1)

#define EXPORT __attribute__((visibility("default")))

struct fake_dev {
	int handle_rc, lost, events_unsupported;
	long long ecc, retired, remap_pending, remap_failed;
};

struct fake_cfg {
	int init_rc;
	unsigned count;
	struct fake_dev dev[FAKE_MAX_DEV];
	int nxid;
	unsigned xid_dev[FAKE_MAX_XID];
	unsigned long long xid[FAKE_MAX_XID];
};

struct nvmlDevice_st { unsigned index; };
struct nvmlEventSet_st {
	unsigned long long registered; /* bit per device */
	int cursor;                    /* next xid[] to deliver */
};

static struct nvmlDevice_st handles[FAKE_MAX_DEV];
static struct fake_cfg cfg;
static int init_count;

static long long num(const char *v)
{
	return strcmp(v, "unsupported") ? strtoll(v, NULL, 0) : UNSUPPORTED;
}

static void parse_xids(const char *v)
{
	char buf[4096], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", v);
	for (tok = strtok_r(buf, ",", &save); tok && cfg.nxid < FAKE_MAX_XID;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned d;
		unsigned long long x;
		if (sscanf(tok, "%u:%llu", &d, &x) == 2) {
			cfg.xid_dev[cfg.nxid] = d;
			cfg.xid[cfg.nxid++] = x;
		}
	}
}

/* Re-read on every call: the file is the hardware's current state. */
static void load(void)
{
	const char *path = getenv("PROCMGR_FAKE_NVML");
	char line[4096];
	FILE *f;

	memset(&cfg, 0, sizeof(cfg));
	if (!path || !(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof(line), f)) {
		char *eq = strchr(line, '='), *k = line, *v;
		unsigned i;
		char field[64];
		if (!eq || line[0] == '#')
			continue;
		*eq = '\0';
		v = eq + 1;
		v[strcspn(v, "\r\n")] = '\0';
		if (!strcmp(k, "init"))
			cfg.init_rc = (int)num(v);
		else if (!strcmp(k, "count"))
			cfg.count = (unsigned)num(v) > FAKE_MAX_DEV ? FAKE_MAX_DEV : (unsigned)num(v);
		else if (!strcmp(k, "xid"))
			parse_xids(v);
		else if (sscanf(k, "gpu%u.%63s", &i, field) == 2 && i < FAKE_MAX_DEV) {
			struct fake_dev *d = &cfg.dev[i];
			if (!strcmp(field, "handle")) d->handle_rc = (int)num(v);
			else if (!strcmp(field, "lost")) d->lost = (int)num(v);
			else if (!strcmp(field, "ecc")) d->ecc = num(v);
			else if (!strcmp(field, "retired_pending")) d->retired = num(v);
			else if (!strcmp(field, "remap_pending")) d->remap_pending = num(v);
			else if (!strcmp(field, "remap_failed")) d->remap_failed = num(v);
			else if (!strcmp(field, "events")) d->events_unsupported = num(v) == UNSUPPORTED;
		}
	}
	fclose(f);
}

/* The checks every device query does first, in NVML's order. */
static nvmlReturn_t dev_check(nvmlDevice_t d, struct fake_dev **out)
{
	if (!init_count)
		return NVML_ERROR_UNINITIALIZED;
	if (!d || d < handles || d >= handles + FAKE_MAX_DEV)
		return NVML_ERROR_INVALID_ARGUMENT;
	load();
	if (d->index >= cfg.count)
		return NVML_ERROR_GPU_IS_LOST;
	*out = &cfg.dev[d->index];
	return (*out)->lost ? NVML_ERROR_GPU_IS_LOST : NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	load();
	if (cfg.init_rc)
		return cfg.init_rc;
	init_count++;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
	if (!init_count)
		return NVML_ERROR_UNINITIALIZED;
	init_count--;
	return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t rc)
{
	switch (rc) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	case NVML_ERROR_TIMEOUT: return "Timeout";
	case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
	default: return "Unknown Error";
	}
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	if (!init_count)
		return NVML_ERROR_UNINITIALIZED;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	load();
	*count = cfg.count;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	if (!init_count)
		return NVML_ERROR_UNINITIALIZED;
	load();
	if (!device || index >= cfg.count)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (cfg.dev[index].handle_rc)
		return cfg.dev[index].handle_rc;
	handles[index].index = index;
	*device = &handles[index];
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	struct fake_dev *d;
	nvmlReturn_t rc = dev_check(device, &d);

	if (rc)
		return rc;
	if (!uuid)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (length < 80)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	snprintf(uuid, length, "GPU-fa4e0000-0000-0000-0000-%012u", device->index);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device,
						nvmlMemoryErrorType_t type,
						nvmlEccCounterType_t counter,
						unsigned long long *eccCounts)
{
	struct fake_dev *d;
	nvmlReturn_t rc = dev_check(device, &d);

	if (rc)
		return rc;
	if (!eccCounts || type > NVML_MEMORY_ERROR_TYPE_UNCORRECTED ||
	    counter > NVML_AGGREGATE_ECC)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d->ecc == UNSUPPORTED)
		return NVML_ERROR_NOT_SUPPORTED;
	/* Only what procmgr asks for is modelled; the rest reads 0. */
	*eccCounts = type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED &&
		     counter == NVML_VOLATILE_ECC ? (unsigned long long)d->ecc : 0;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
							   nvmlEnableState_t *isPending)
{
	struct fake_dev *d;
	nvmlReturn_t rc = dev_check(device, &d);

	if (rc)
		return rc;
	if (!isPending)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d->retired == UNSUPPORTED)
		return NVML_ERROR_NOT_SUPPORTED;
	*isPending = d->retired ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows,
					      unsigned int *uncRows, unsigned int *isPending,
					      unsigned int *failureOccurred)
{
	struct fake_dev *d;
	nvmlReturn_t rc = dev_check(device, &d);

	if (rc)
		return rc;
	if (!corrRows || !uncRows || !isPending || !failureOccurred)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d->remap_pending == UNSUPPORTED)
		return NVML_ERROR_NOT_SUPPORTED;
	*corrRows = 0;
	*uncRows = d->remap_pending || d->remap_failed ? 1 : 0;
	*isPending = d->remap_pending ? 1 : 0;
	*failureOccurred = d->remap_failed ? 1 : 0;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
	if (!init_count)
		return NVML_ERROR_UNINITIALIZED;
	if (!set)
		return NVML_ERROR_INVALID_ARGUMENT;
	*set = calloc(1, sizeof(**set));
	return *set ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
					     unsigned long long eventTypes,
					     nvmlEventSet_t set)
{
	struct fake_dev *d;
	nvmlReturn_t rc = dev_check(device, &d);

	if (rc)
		return rc;
	if (!set || !eventTypes)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d->events_unsupported || (eventTypes & ~nvmlEventTypeXidCriticalError))
		return NVML_ERROR_NOT_SUPPORTED;
	set->registered |= 1ULL << device->index;
	set->cursor = cfg.nxid; /* what is listed now happened before */
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data,
					unsigned int timeoutms)
{
	(void)timeoutms; /* the fake never waits: events are in the file or not */
	if (!init_count)
		return NVML_ERROR_UNINITIALIZED;
	if (!set || !data)
		return NVML_ERROR_INVALID_ARGUMENT;
	load();
	while (set->cursor < cfg.nxid) {
		int k = set->cursor++;
		unsigned dev = cfg.xid_dev[k];
		if (dev >= FAKE_MAX_DEV || !(set->registered & (1ULL << dev)))
			continue;
		memset(data, 0, sizeof(*data));
		data->device = &handles[dev];
		data->eventType = nvmlEventTypeXidCriticalError;
		data->eventData = cfg.xid[k];
		return NVML_SUCCESS;
	}
	return NVML_ERROR_TIMEOUT;
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
	if (!init_count)
		return NVML_ERROR_UNINITIALIZED;
	free(set);
	return NVML_SUCCESS;
}
