/* CPU sets and node masks: parse, format, combine. Pure. */
#include "plan_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pm_cpuset_zero(struct pm_cpuset *s)
{
	memset(s, 0, sizeof(*s));
}

void pm_cpuset_set(struct pm_cpuset *s, int cpu)
{
	if (cpu >= 0 && cpu < PM_MAX_CPUS)
		s->w[cpu / 64] |= 1ull << (cpu % 64);
}

bool pm_cpuset_isset(const struct pm_cpuset *s, int cpu)
{
	return cpu >= 0 && cpu < PM_MAX_CPUS && (s->w[cpu / 64] >> (cpu % 64)) & 1;
}

int pm_cpuset_count(const struct pm_cpuset *s)
{
	int n = 0;
	for (size_t i = 0; i < PM_MAX_CPUS / 64; i++)
		n += __builtin_popcountll(s->w[i]);
	return n;
}

int pm_cpuset_next(const struct pm_cpuset *s, int prev)
{
	for (int c = prev + 1; c < PM_MAX_CPUS; c++) {
		uint64_t w = s->w[c / 64] >> (c % 64);
		if (!w) {
			c = (c / 64) * 64 + 63;
			continue;
		}
		return c + __builtin_ctzll(w);
	}
	return -1;
}

int pm_cpuset_first(const struct pm_cpuset *s)
{
	return pm_cpuset_next(s, -1);
}

void pm_cpuset_and(struct pm_cpuset *d, const struct pm_cpuset *a)
{
	for (size_t i = 0; i < PM_MAX_CPUS / 64; i++)
		d->w[i] &= a->w[i];
}

void pm_cpuset_or(struct pm_cpuset *d, const struct pm_cpuset *a)
{
	for (size_t i = 0; i < PM_MAX_CPUS / 64; i++)
		d->w[i] |= a->w[i];
}

bool pm_cpuset_equal(const struct pm_cpuset *a, const struct pm_cpuset *b)
{
	return !memcmp(a->w, b->w, sizeof(a->w));
}

bool pm_cpuset_subset(const struct pm_cpuset *a, const struct pm_cpuset *b)
{
	for (size_t i = 0; i < PM_MAX_CPUS / 64; i++)
		if (a->w[i] & ~b->w[i])
			return false;
	return true;
}

int pm_parse_index(const char **p, long max, long *out)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)**p))
		return -1;
	errno = 0;
	v = strtol(*p, &end, 10);
	if (errno || v > max)
		return -1;
	*p = end;
	*out = v;
	return 0;
}

int pm_cpuset_parse(struct pm_cpuset *s, const char *list)
{
	const char *p = list;

	pm_cpuset_zero(s);
	if (!p || !*p)
		return -1;
	for (;;) {
		long lo, hi;
		if (pm_parse_index(&p, PM_MAX_CPUS - 1, &lo))
			return -1;
		hi = lo;
		if (*p == '-') {
			p++;
			if (pm_parse_index(&p, PM_MAX_CPUS - 1, &hi) || hi < lo)
				return -1;
		}
		for (long c = lo; c <= hi; c++)
			pm_cpuset_set(s, (int)c);
		if (!*p)
			return 0;
		if (*p++ != ',')
			return -1;
	}
}

/* Append to buf; returns -1 once it does not fit. */
static int append(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*off >= len)
		return -1;
	va_start(ap, fmt);
	n = vsnprintf(buf + *off, len - *off, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len - *off) {
		*off = len;
		return -1;
	}
	*off += (size_t)n;
	return 0;
}

static int format_ranges(bool (*isset)(const void *, int), const void *set, int max,
			 char *buf, size_t len)
{
	size_t off = 0;
	int c = 0;

	if (len)
		buf[0] = '\0';
	while (c < max) {
		int lo;
		if (!isset(set, c)) {
			c++;
			continue;
		}
		lo = c;
		while (c + 1 < max && isset(set, c + 1))
			c++;
		if (append(buf, len, &off, "%s%d", off ? "," : "", lo) ||
		    (c > lo && append(buf, len, &off, "-%d", c)))
			return -1;
		c++;
	}
	return 0;
}

static bool cpuset_isset_v(const void *s, int c)
{
	return pm_cpuset_isset(s, c);
}

static bool mask_isset_v(const void *m, int c)
{
	return (*(const uint64_t *)m >> c) & 1;
}

int pm_cpuset_format(const struct pm_cpuset *s, char *buf, size_t len)
{
	return format_ranges(cpuset_isset_v, s, PM_MAX_CPUS, buf, len);
}

int pm_nodemask_format(uint64_t mask, char *buf, size_t len)
{
	return format_ranges(mask_isset_v, &mask, PM_MAX_NUMA, buf, len);
}
