#include "duration.h"

#include <ctype.h>
#include <stdint.h>
#include <string.h>

/* Digits at *p, at least one, advancing *p. -1 when there are none or the
 * value passes cap (checked digit by digit, so no overflow whatever the
 * length; leading zeros cost nothing). */
static int digits(const char **p, uint64_t cap, uint64_t *out)
{
	uint64_t v = 0;

	if (!isdigit((unsigned char)**p))
		return -1;
	for (; isdigit((unsigned char)**p); (*p)++) {
		v = v * 10 + (uint64_t)(**p - '0');
		if (v > cap)
			return -1;
	}
	*out = v;
	return 0;
}

/* "N[.DDD][unit]": the number in thousandths of its unit, times the
 * unit's milliseconds. */
static int number_with_unit(const char *p, uint64_t *ms)
{
	uint64_t whole, frac = 0, unit;
	int fdigits = 0;

	if (digits(&p, PM_DURATION_MAX_MS, &whole))
		return -1;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		for (; isdigit((unsigned char)*p); p++) {
			if (++fdigits > 3)
				return -1;
			frac = frac * 10 + (uint64_t)(*p - '0');
		}
		for (; fdigits < 3; fdigits++)
			frac *= 10;
	}
	switch (*p) {
	case '\0': case 's': unit = 1; break;
	case 'm': unit = 60; break;
	case 'h': unit = 3600; break;
	case 'd': unit = 86400; break;
	default: return -1;
	}
	if (*p && p[1])
		return -1;
	*ms = (whole * 1000 + frac) * unit;
	return 0;
}

/* Slurm's forms: [D-]fields, fields ':'-separated, the last one seconds
 * unless there is a day and fewer than three. */
static int slurm_form(const char *p, uint64_t *ms)
{
	const uint64_t cap = PM_DURATION_MAX_MS / 1000;
	uint64_t days = 0, f[3];
	int n = 0, has_days = 0;
	const char *dash = strchr(p, '-');

	if (dash) {
		if (digits(&p, cap, &days) || p != dash)
			return -1;
		p++;
		has_days = 1;
	}
	for (;;) {
		if (n == 3 || digits(&p, cap, &f[n]))
			return -1;
		n++;
		if (*p == '\0')
			break;
		if (*p++ != ':')
			return -1;
	}
	if (!has_days) {
		uint64_t h = 0, m, s;
		if (n == 1) /* a bare number is handled as seconds elsewhere */
			return -1;
		if (n == 3)
			h = f[0];
		m = f[n - 2];
		s = f[n - 1];
		/* The first field is free ("90:00"), the ones after it are not. */
		if (s > 59 || (n == 3 && m > 59))
			return -1;
		*ms = ((h * 60 + m) * 60 + s) * 1000;
		return 0;
	}
	/* D-H, D-H:M, D-H:M:S */
	if (f[0] > 23 || (n > 1 && f[1] > 59) || (n > 2 && f[2] > 59))
		return -1;
	*ms = (((days * 24 + f[0]) * 60 + (n > 1 ? f[1] : 0)) * 60 + (n > 2 ? f[2] : 0)) * 1000;
	return 0;
}

int pm_duration_parse(const char *s, unsigned *ms)
{
	uint64_t v;

	if (!s || !isdigit((unsigned char)*s))
		return -1;
	if (strpbrk(s, ":-") ? slurm_form(s, &v) : number_with_unit(s, &v))
		return -1;
	if (v > PM_DURATION_MAX_MS)
		return -1;
	*ms = (unsigned)v;
	return 0;
}
