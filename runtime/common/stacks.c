#include "stacks.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct out {
	char *p;
	size_t len, off;
	int full;
};

/* Whole lines only: a stack cut in the middle of a frame would compare
 * different from the same stack cut elsewhere. */
static void put_line(struct out *o, const char *s, size_t n)
{
	if (o->full || o->off + n + 2 > o->len) {
		o->full = 1;
		return;
	}
	memcpy(o->p + o->off, s, n);
	o->off += n;
	o->p[o->off++] = '\n';
	o->p[o->off] = '\0';
}

/* "#3  0x00005555 in foo (a=1, b=0x2) at x.c:7" -> "  foo at x.c:7" */
static void native_frame(struct out *o, const char *l)
{
	char buf[512];
	const char *p = l + 1, *fn, *fe, *rest;
	int n;

	while (isdigit((unsigned char)*p))
		p++;
	while (*p == ' ')
		p++;
	if (!strncmp(p, "0x", 2)) {
		const char *in = strstr(p, " in ");
		if (!in)
			return;
		p = in + 4;
	}
	fn = p;
	fe = strchr(fn, ' ');
	if (!fe)
		fe = fn + strlen(fn);
	rest = "";
	/* The last ") at " or ") from ": argument values may hold either. */
	{
		const char *p2, *at = NULL, *from = NULL;
		for (p2 = fe; (p2 = strstr(p2, ") at ")); p2++)
			at = p2;
		for (p2 = fe; (p2 = strstr(p2, ") from ")); p2++)
			from = p2;
		if (at && (!from || at > from))
			rest = at + 2;
		else if (from)
			rest = from + 2;
	}
	n = snprintf(buf, sizeof(buf), "  %.*s%s%s", (int)(fe - fn), fn, *rest ? " " : "", rest);
	if (n > 0)
		put_line(o, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

size_t pm_stack_normalize(const char *raw, char *out, size_t len)
{
	struct out o = { out, len, 0, 0 };
	const char *l = raw;

	if (len)
		out[0] = '\0';
	while (*l) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		char line[1024];
		const char *t;

		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, l, n);
		line[n] = '\0';
		t = line;
		while (*t == ' ')
			t++;
		if (!strncmp(line, "Thread ", 7)) {
			int id;
			char b[32];
			if (sscanf(line + 7, "%d", &id) == 1) {
				int k = snprintf(b, sizeof(b), "thread %d:", id);
				put_line(&o, b, (size_t)k);
			}
		} else if (line[0] == '#' && isdigit((unsigned char)line[1])) {
			native_frame(&o, line);
		} else if (!strncmp(line, "Traceback (most recent call first):", 35)) {
			put_line(&o, "python:", 7);
		} else if (!strncmp(t, "File \"", 6)) {
			char b[1100];
			int k = snprintf(b, sizeof(b), "  %s", t);
			put_line(&o, b, (size_t)k < sizeof(b) ? (size_t)k : sizeof(b) - 1);
		}
		l += e ? (size_t)(e - l) + 1 : strlen(l);
	}
	return o.off;
}

void pm_stack_top(const char *norm, char *out, size_t len)
{
	const char *py = strstr(norm, "python:\n"), *l;
	size_t n;

	out[0] = '\0';
	if (!len)
		return;
	if (py) {
		l = strstr(py, ", in ");
		if (l) {
			l += 5;
			n = strcspn(l, "\n");
			snprintf(out, len, "%.*s", (int)n, l);
			return;
		}
	}
	for (l = norm; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] ? 1 : 0)) {
		if (!strncmp(l, "  ", 2)) {
			n = strcspn(l + 2, " \n");
			snprintf(out, len, "%.*s", (int)n, l + 2);
			return;
		}
	}
}

int pm_stack_group(const char *const *stacks, const int *ranks, int n, int *group)
{
	int i, j, ng = 0;
	int *size, *first, *order, *rename;

	if (n <= 0)
		return 0;
	size = calloc((size_t)n, sizeof(int));
	first = calloc((size_t)n, sizeof(int));
	order = calloc((size_t)n, sizeof(int));
	rename = calloc((size_t)n, sizeof(int));
	if (!size || !first || !order || !rename) {
		for (i = 0; i < n; i++)
			group[i] = i;
		free(size), free(first), free(order), free(rename);
		return n;
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < i && strcmp(stacks[i], stacks[j]); j++)
			;
		if (j < i) {
			group[i] = group[j];
		} else {
			group[i] = ng;
			first[ng] = ranks[i];
			ng++;
		}
		size[group[i]]++;
		if (ranks[i] < first[group[i]])
			first[group[i]] = ranks[i];
	}
	/* Biggest first: the outliers come last, where the eye ends. */
	for (i = 0; i < ng; i++)
		order[i] = i;
	for (i = 1; i < ng; i++)
		for (j = i; j > 0; j--) {
			int a = order[j - 1], b = order[j];
			if (size[b] > size[a] || (size[b] == size[a] && first[b] < first[a])) {
				order[j - 1] = b;
				order[j] = a;
			} else {
				break;
			}
		}
	for (i = 0; i < ng; i++)
		rename[order[i]] = i;
	for (i = 0; i < n; i++)
		group[i] = rename[group[i]];
	free(size), free(first), free(order), free(rename);
	return ng;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

int pm_ranks_format(int *ranks, int n, char *buf, size_t len)
{
	size_t off = 0;
	int i = 0, k;

	if (!len)
		return -1;
	buf[0] = '\0';
	qsort(ranks, (size_t)n, sizeof(int), cmp_int);
	while (i < n) {
		int lo = ranks[i], hi = lo;
		while (i < n && ranks[i] <= hi + 1) {
			if (ranks[i] > hi)
				hi = ranks[i];
			i++;
		}
		k = lo == hi ? snprintf(buf + off, len - off, "%s%d", off ? "," : "", lo) :
			       snprintf(buf + off, len - off, "%s%d-%d", off ? "," : "", lo, hi);
		if (k < 0 || (size_t)k >= len - off)
			return -1;
		off += (size_t)k;
	}
	return 0;
}

/* Each item "N" or "N-M" (N <= M), comma-separated; calls fn for each. */
static int walk(const char *list, int rank, int *hit, char *why, size_t len)
{
	const char *p = list;

	if (!*p) {
		snprintf(why, len, "an empty rank list");
		return -1;
	}
	while (*p) {
		char *end;
		long lo, hi;
		errno = 0;
		if (!isdigit((unsigned char)*p))
			goto bad;
		lo = strtol(p, &end, 10);
		hi = lo;
		if (*end == '-') {
			if (!isdigit((unsigned char)end[1]))
				goto bad;
			hi = strtol(end + 1, &end, 10);
		}
		if (errno || lo > hi || hi > 0x7fffffffL || (*end && *end != ','))
			goto bad;
		if (rank >= lo && rank <= hi)
			*hit = 1;
		p = *end ? end + 1 : end;
		if (*end == ',' && !*p)
			goto bad;
	}
	return 0;
bad:
	snprintf(why, len, "bad rank list '%.64s' (allowed: ranks and ranges such as 0-3,7)",
		 list);
	return -1;
}

int pm_ranks_contains(const char *list, int rank)
{
	char why[128];
	int hit = 0;

	return walk(list, rank, &hit, why, sizeof(why)) ? -1 : hit;
}

int pm_ranks_check(const char *list, char *why, size_t len)
{
	int hit = 0;

	return walk(list, -1, &hit, why, len);
}
