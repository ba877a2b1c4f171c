#include "envlist.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_var(const char *entry, const char *name, size_t len)
{
	return !strncmp(entry, name, len) && entry[len] == '=';
}

static int grow(struct pm_envlist *e, size_t need)
{
	char **v;
	size_t cap = e->cap ? e->cap : 16;

	if (need <= e->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	v = realloc(e->v, cap * sizeof(*v));
	if (!v)
		return -1;
	e->v = v;
	e->cap = cap;
	return 0;
}

int pm_envlist_init(struct pm_envlist *e, char *const *base)
{
	size_t n = 0;

	memset(e, 0, sizeof(*e));
	while (base && base[n])
		n++;
	if (grow(e, n + 1))
		return -1;
	for (size_t i = 0; i < n; i++)
		e->v[i] = base[i];
	e->n = n;
	e->v[n] = NULL;
	return 0;
}

static int keep(struct pm_envlist *e, char *s)
{
	if (e->nown == e->owncap) {
		size_t cap = e->owncap ? 2 * e->owncap : 8;
		char **o = realloc(e->own, cap * sizeof(*o));
		if (!o)
			return -1;
		e->own = o;
		e->owncap = cap;
	}
	e->own[e->nown++] = s;
	return 0;
}

/* Removes every NAME= from index from on. */
static void drop_from(struct pm_envlist *e, const char *name, size_t len, size_t from)
{
	size_t w = from;

	for (size_t i = from; i < e->n; i++)
		if (!is_var(e->v[i], name, len))
			e->v[w++] = e->v[i];
	e->n = w;
	e->v[w] = NULL;
}

int pm_envlist_set(struct pm_envlist *e, const char *name, const char *value)
{
	size_t len = strlen(name), i;
	char *s;

	if (!len || strchr(name, '=')) {
		errno = EINVAL;
		return -1;
	}
	if (grow(e, e->n + 2))
		return -1;
	s = malloc(len + strlen(value) + 2);
	if (!s)
		return -1;
	sprintf(s, "%s=%s", name, value);
	if (keep(e, s)) {
		free(s);
		return -1;
	}
	for (i = 0; i < e->n; i++)
		if (is_var(e->v[i], name, len))
			break;
	if (i < e->n) {
		e->v[i] = s;
		drop_from(e, name, len, i + 1);
	} else {
		e->v[e->n++] = s;
		e->v[e->n] = NULL;
	}
	return 0;
}

int pm_envlist_setf(struct pm_envlist *e, const char *name, const char *fmt, ...)
{
	char buf[64], *v = buf;
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((size_t)n >= sizeof(buf)) {
		v = malloc((size_t)n + 1);
		if (!v)
			return -1;
		va_start(ap, fmt);
		vsnprintf(v, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	rc = pm_envlist_set(e, name, v);
	if (v != buf)
		free(v);
	return rc;
}

void pm_envlist_unset(struct pm_envlist *e, const char *name)
{
	if (e->v)
		drop_from(e, name, strlen(name), 0);
}

const char *pm_envlist_get(const struct pm_envlist *e, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < e->n; i++)
		if (is_var(e->v[i], name, len))
			return e->v[i] + len + 1;
	return NULL;
}

void pm_envlist_free(struct pm_envlist *e)
{
	for (size_t i = 0; i < e->nown; i++)
		free(e->own[i]);
	free(e->own);
	free(e->v);
	memset(e, 0, sizeof(*e));
}
