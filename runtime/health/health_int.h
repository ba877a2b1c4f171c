/* Internals of the health module: the context (struct pm_health), the
 * helpers in health_util.c and the per-kind checks (health_sys.c,
 * health_gpu.c, health_script.c) that the dispatcher (health.c) calls.
 * Includes only the public header. Not for users of health.h. */
#ifndef PM_HEALTH_INT_H
#define PM_HEALTH_INT_H

#include <limits.h>
#include <stdint.h>

#include "health.h"

struct pm_nvml; /* health_gpu.c */

struct pm_health {
	char sysroot[PATH_MAX]; /* "" for "/", never ends with '/' */
	char nvml_lib[PATH_MAX];
	char nics[PATH_MAX];
	unsigned timeout_ms;
	struct pm_nvml *nvml;   /* NULL until the first gpu check */
};

/* health_util.c. Sets status and a one-line reason (control characters become spaces). */
__attribute__((format(printf, 3, 4)))
void pm_hres(struct pm_health_result *r, enum pm_health_status st,
	     const char *fmt, ...);
/* <sysroot><path>, or -1 if it does not fit. */
__attribute__((format(printf, 4, 5)))
int pm_hpath(const struct pm_health *h, char *buf, size_t len,
	     const char *fmt, ...);
/* 1536 MiB -> "1.5 GiB". */
const char *pm_hsize(uint64_t bytes, char *buf, size_t len);

void pm_health_mem(struct pm_health *h, const struct pm_check *c,
		   struct pm_health_result *r);
void pm_health_disk(struct pm_health *h, const struct pm_check *c,
		    struct pm_health_result *r);
void pm_health_nic(struct pm_health *h, const struct pm_check *c,
		   struct pm_health_result *r);
void pm_health_gpu(struct pm_health *h, const struct pm_check *c,
		   struct pm_health_result *r);
void pm_health_script(struct pm_health *h, const struct pm_check *c,
		      struct pm_health_result *r);
void pm_health_gpu_close(struct pm_health *h);

#endif
