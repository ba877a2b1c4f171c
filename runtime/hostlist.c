#include "hostlist.h"

#include <ctype.h>
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
