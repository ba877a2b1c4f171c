/* Helpers the per-kind checks share (declared in health_int.h). They call
 * nothing of the dispatcher or of the checks: health.c -> health_*.c ->
 * health_util.c, never back. */
#include "health_int.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void pm_hres(struct pm_health_result *r, enum pm_health_status st,
	     const char *fmt, ...)
{
	va_list ap;
	char *p;

	r->status = st;
	va_start(ap, fmt);
	vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
	va_end(ap);
	/* Reasons end up in one-line logs, srun output and Slurm's node
	 * reason: text from scripts or sysfs must not break them. */
	for (p = r->reason; *p; p++)
		if (iscntrl((unsigned char)*p))
			*p = ' ';
}

int pm_hpath(const struct pm_health *h, char *buf, size_t len,
	     const char *fmt, ...)
{
	va_list ap;
	size_t n = strlen(h->sysroot);
	int m;

	if (n >= len)
		return -1;
	memcpy(buf, h->sysroot, n);
	va_start(ap, fmt);
	m = vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
	return m < 0 || (size_t)m >= len - n ? -1 : 0;
}

const char *pm_hsize(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	unsigned i = 0;

	while (v >= 1024 && i + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.1f %s", v, unit[i]);
	return buf;
}
