/* The dispatcher: opens the context, runs each check by its kind, closes. */
#include "health_int.h"

#include "io/sys.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *pm_health_status_name(enum pm_health_status s)
{
	switch (s) {
	case PM_HEALTH_OK: return "ok";
	case PM_HEALTH_FAIL: return "fail";
	case PM_HEALTH_ERROR: return "error";
	}
	return "?";
}

static int copy_str(char *dst, size_t len, const char *src, const char *what,
		    char *err, size_t errlen)
{
	if (strlen(src) >= len) {
		snprintf(err, errlen, "health: %s '%.64s...' is longer than %zu characters",
			 what, src, len - 1);
		return -1;
	}
	strcpy(dst, src);
	return 0;
}

int pm_health_open(struct pm_health **hp, const struct pm_health_ctx *ctx,
		   char *err, size_t errlen)
{
	struct pm_health *h = calloc(1, sizeof(*h));
	const char *root = ctx && ctx->sysroot ? ctx->sysroot : "";

	*hp = NULL;
	if (!h) {
		snprintf(err, errlen, "health: out of memory");
		return -1;
	}
	if (*root && *root != '/') {
		snprintf(err, errlen, "health: sysroot '%s' is not an absolute path", root);
		free(h);
		return -1;
	}
	if (copy_str(h->sysroot, sizeof(h->sysroot), root, "sysroot", err, errlen) ||
	    copy_str(h->nvml_lib, sizeof(h->nvml_lib),
		     ctx && ctx->nvml_lib ? ctx->nvml_lib : PM_HEALTH_DEFAULT_NVML,
		     "NVML library", err, errlen) ||
	    copy_str(h->nics, sizeof(h->nics), ctx && ctx->nics ? ctx->nics : "",
		     "NIC list", err, errlen)) {
		free(h);
		return -1;
	}
	/* "/" and "/x/" must give "/proc/..." and "/x/proc/...". */
	while (*h->sysroot && h->sysroot[strlen(h->sysroot) - 1] == '/')
		h->sysroot[strlen(h->sysroot) - 1] = '\0';
	h->timeout_ms = ctx && ctx->timeout_ms ? ctx->timeout_ms
					      : PM_HEALTH_DEFAULT_TIMEOUT_MS;
	*hp = h;
	return 0;
}

void pm_health_close(struct pm_health *h)
{
	if (!h)
		return;
	pm_health_gpu_close(h);
	free(h);
}

static void check_label(const struct pm_check *c, char *buf, size_t len)
{
	const char *name = pm_check_name(c->kind);
	char size[32] = "";

	if (c->kind == PM_CHECK_GPU) {
		if (c->count > 0)
			snprintf(buf, len, "gpu:%d", c->count);
		else
			snprintf(buf, len, "gpu");
		return;
	}
	if (c->min_bytes) {
		/* Written back the way a user would write it: 10G, not 10737418240. */
		static const char sfx[] = "KMGT";
		unsigned long long v = c->min_bytes;
		int s = -1;
		while (s < 3 && v % 1024 == 0) {
			v /= 1024;
			s++;
		}
		if (s < 0)
			snprintf(size, sizeof(size), ":%llu", v);
		else
			snprintf(size, sizeof(size), ":%llu%c", v, sfx[s]);
	}
	/* buf holds any path (PATH_MAX); were it shorter, the label would
	 * no longer match the site's list and a site check would not drain. */
	snprintf(buf, len, "%s%s%s%s", name, c->arg[0] ? ":" : "", c->arg, size);
}

int pm_health_run(struct pm_health *h, const struct pm_check *checks, int n,
		  struct pm_health_result *results)
{
	int i, bad = 0;

	for (i = 0; i < n; i++) {
		const struct pm_check *c = &checks[i];
		struct pm_health_result *r = &results[i];
		uint64_t t0;

		memset(r, 0, sizeof(*r));
		check_label(c, r->check, sizeof(r->check));
		t0 = pm_now_ms();
		switch (c->kind) {
		case PM_CHECK_GPU: pm_health_gpu(h, c, r); break;
		case PM_CHECK_MEM: pm_health_mem(h, c, r); break;
		case PM_CHECK_DISK: pm_health_disk(h, c, r); break;
		case PM_CHECK_NIC: pm_health_nic(h, c, r); break;
		case PM_CHECK_SCRIPT: pm_health_script(h, c, r); break;
		default:
			pm_hres(r, PM_HEALTH_ERROR, "unknown check kind %d", (int)c->kind);
		}
		r->elapsed_ms = (unsigned)(pm_now_ms() - t0);
		if (r->status != PM_HEALTH_OK)
			bad++;
	}
	return bad;
}

bool pm_health_nvml_loadable(const char *lib)
{
	/* RTLD_LAZY: only whether it can be found and loaded matters here. */
	void *dl = dlopen(lib ? lib : PM_HEALTH_DEFAULT_NVML, RTLD_LAZY | RTLD_LOCAL);

	if (!dl)
		return false;
	dlclose(dl);
	return true;
}
