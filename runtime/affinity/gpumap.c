#include "gpumap.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXG 1024

/* "0,2,5" -> numbers; -1 for anything else. */
static int parse(const char *s, int *v)
{
	int n = 0;

	if (!s || !*s)
		return -1;
	for (;;) {
		char *end;
		long x;
		if (!isdigit((unsigned char)*s) || n == MAXG)
			return -1;
		x = strtol(s, &end, 10);
		if (x > 100000)
			return -1;
		v[n++] = (int)x;
		if (*end == '\0')
			return n;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
}

bool pm_gpus_renumbered(const char *step_gpus, const char *visible)
{
	int a[MAXG], b[MAXG], na = parse(step_gpus, a), nb = parse(visible, b), i;
	bool same = true;

	if (na <= 0 || na != nb)
		return false;
	for (i = 0; i < nb; i++) {
		if (b[i] != i)
			return false;
		same = same && a[i] == b[i];
	}
	return !same;
}

int pm_gpus_to_task(const char *step_gpus, const char *node_list, char *out,
		    size_t len)
{
	int a[MAXG], b[MAXG], na = parse(step_gpus, a), nb = parse(node_list, b);
	size_t off = 0;
	int i, j;

	if (na <= 0 || nb <= 0)
		return -1;
	for (i = 0; i < nb; i++) {
		int w;
		for (j = 0; j < na && a[j] != b[i]; j++)
			;
		if (j == na)
			return -1;
		w = snprintf(out + off, len - off, "%s%d", i ? "," : "", j);
		if (w < 0 || (size_t)w >= len - off)
			return -1;
		off += (size_t)w;
	}
	return 0;
}
