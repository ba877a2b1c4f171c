#include "hostlist.h"

#include <ctype.h>
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

int pm_ports_parse(const char *s, unsigned *first, unsigned *count)
{
	unsigned n = 0, lo;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -1;
	lo = (unsigned)strtoul(s, &end, 10);
	*first = lo;
	while (1) {
		unsigned a = (unsigned)strtoul(s, &end, 10), b = a;
		if (end == s || a == 0 || a > 65535)
			return -1;
		if (*end == '-') {
			s = end + 1;
			b = (unsigned)strtoul(s, &end, 10);
			if (end == s || b < a || b > 65535)
				return -1;
		}
		n += b - a + 1;
		if (*end == '\0')
			break;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
	*count = n;
	return 0;
}
