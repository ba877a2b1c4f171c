#include "hostlist.h"

#include <ctype.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* The end of a bracketed list "N[-M][,N[-M]]...]" that starts at p (just
 * after the '['): the character after the ']', or NULL if malformed. */
static const char *range_list_end(const char *p)
{
	for (;;) {
		if (!isdigit((unsigned char)*p))
			return NULL;
		while (isdigit((unsigned char)*p))
			p++;
		if (*p == '-') {
			p++;
			if (!isdigit((unsigned char)*p))
				return NULL;
			while (isdigit((unsigned char)*p))
				p++;
		}
		if (*p == ']')
			return p + 1;
		if (*p != ',')
			return NULL;
		p++;
	}
}

int pm_hostlist_first(const char *list, char *buf, size_t len)
{
	size_t o = 0;
	const char *p = list, *end;

	if (!list || !*list)
		return -1;
	while (*p && *p != ',' && *p != '[') {
		if (o + 1 >= len)
			return -1;
		buf[o++] = *p++;
	}
	if (*p == '[') {
		/* "[1-2]" has no host name; the range must be well formed to
		 * its ']', not just up to its first number. */
		if (o == 0)
			return -1;
		p++;
		end = range_list_end(p);
		if (!end)
			return -1;
		while (isdigit((unsigned char)*p)) {
			if (o + 1 >= len)
				return -1;
			buf[o++] = *p++;
		}
		p = end;
		/* A suffix after the range ("n[1-2]-ib") belongs to every host. */
		while (*p && *p != ',') {
			if (*p == '[' || o + 1 >= len)
				return -1;
			buf[o++] = *p++;
		}
	}
	if (o == 0)
		return -1;
	buf[o] = '\0';
	return 0;
}

/* A port at s, digits only, 1 to 65535: the character after it, or NULL. */
static const char *port(const char *s, unsigned *v)
{
	unsigned n = 0;

	if (!isdigit((unsigned char)*s))
		return NULL;
	while (isdigit((unsigned char)*s)) {
		n = n * 10 + (unsigned)(*s++ - '0');
		if (n > 65535)
			return NULL;
	}
	if (n == 0)
		return NULL;
	*v = n;
	return s;
}

int pm_ports_parse(const char *s, unsigned *first, unsigned *count)
{
	unsigned n = 0, a, b;

	if (!s)
		return -1;
	for (;;) {
		s = port(s, &a);
		if (!s)
			return -1;
		b = a;
		if (*s == '-') {
			s = port(s + 1, &b);
			if (!s || b < a)
				return -1;
		}
		if (n == 0)
			*first = a;
		n += b - a + 1;
		if (n > UINT_MAX - 65536)
			return -1;
		if (*s == '\0')
			break;
		if (*s != ',')
			return -1;
		s++;
	}
	*count = n;
	return 0;
}

void pm_hostlist_free(char **names, int n)
{
	int i;
	if (!names)
		return;
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static int push(char ***v, int *n, int *cap, int max, char *name)
{
	if (!name)
		return -1;
	if (*n >= max) {
		free(name);
		return -1;
	}
	if (*n == *cap) {
		int ncap = *cap ? *cap * 2 : 16;
		char **nv = realloc(*v, (size_t)ncap * sizeof(**v));
		if (!nv) {
			free(name);
			return -1;
		}
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = name;
	return 0;
}

/* One item: "prefix", or "prefix[ranges]suffix". */
static int expand_item(const char *item, size_t len, char ***v, int *n, int *cap,
		       int max)
{
	const char *lb = memchr(item, '[', len), *rb, *p;
	size_t plen, slen;

	if (!lb) {
		if (!len || memchr(item, ']', len))
			return -1;
		return push(v, n, cap, max, strndup(item, len));
	}
	rb = memchr(lb, ']', len - (size_t)(lb - item));
	if (!rb || lb == item || memchr(rb + 1, '[', len - (size_t)(rb + 1 - item)) ||
	    memchr(rb + 1, ']', len - (size_t)(rb + 1 - item)))
		return -1;
	plen = (size_t)(lb - item);
	slen = len - (size_t)(rb + 1 - item);
	for (p = lb + 1; p < rb;) {
		const char *q = p;
		unsigned long a, b;
		int width;
		while (q < rb && isdigit((unsigned char)*q))
			q++;
		if (q == p || q - p > 9)
			return -1;
		width = (int)(q - p);
		a = strtoul(p, NULL, 10);
		b = a;
		if (*q == '-') {
			const char *r = ++q;
			while (q < rb && isdigit((unsigned char)*q))
				q++;
			if (q == r || q - r > 9)
				return -1;
			b = strtoul(r, NULL, 10);
			if (b < a)
				return -1;
		}
		if (q < rb && *q != ',')
			return -1;
		if (*q == ',' && q + 1 == rb)
			return -1;
		for (; a <= b; a++) {
			char *name = malloc(plen + slen + 16);
			if (!name)
				return -1;
			snprintf(name, plen + slen + 16, "%.*s%0*lu%.*s", (int)plen, item,
				 width, a, (int)slen, rb + 1);
			if (push(v, n, cap, max, name))
				return -1;
		}
		p = q < rb ? q + 1 : q;
	}
	return 0;
}

int pm_hostlist_expand(const char *list, int max, char ***out)
{
	char **v = NULL;
	int n = 0, cap = 0, depth = 0;
	const char *start = list, *p;

	if (!list || !*list)
		return -1;
	for (p = list;; p++) {
		if (*p == '[')
			depth++;
		else if (*p == ']')
			depth--;
		if (depth < 0 || depth > 1)
			goto bad;
		if ((*p == ',' && depth == 0) || *p == '\0') {
			if (expand_item(start, (size_t)(p - start), &v, &n, &cap, max))
				goto bad;
			if (!*p)
				break;
			start = p + 1;
		}
	}
	if (depth)
		goto bad;
	*out = v;
	return n;
bad:
	pm_hostlist_free(v, n);
	return -1;
}
