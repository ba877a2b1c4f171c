/* An environment for execve, built before the child exists. procmgr-rank
 * starts its commands with a child that shares its memory until exec
 * (vfork's way: no page tables copied, no copy-on-write faults, which cost
 * more than the trial itself in a sweep of short trials). Such a child may
 * not call setenv, which allocates in memory it shares; so the parent
 * builds the whole environment here and the child only calls execve.
 *
 * The base is never changed: the list holds its pointers and owns only
 * the "NAME=value" strings set through it. */
#ifndef PM_ENVLIST_H
#define PM_ENVLIST_H

#include <stddef.h>

struct pm_envlist {
	char **v;    /* NULL-terminated, n entries */
	size_t n, cap;
	char **own;  /* the strings this list allocated */
	size_t nown, owncap;
};

/* A copy of base (NULL-terminated; NULL: empty). 0, or -1 (ENOMEM). */
int pm_envlist_init(struct pm_envlist *e, char *const *base);
/* NAME=value in place of any NAME there was (at the first one's place; any
 * later duplicate of the base goes), else at the end. name must be a
 * valid name: non-empty, no '='. 0, or -1 (EINVAL, ENOMEM). */
int pm_envlist_set(struct pm_envlist *e, const char *name, const char *value);
/* printf-style value. */
int pm_envlist_setf(struct pm_envlist *e, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Every NAME=... removed. */
void pm_envlist_unset(struct pm_envlist *e, const char *name);
/* The value of NAME, or NULL. */
const char *pm_envlist_get(const struct pm_envlist *e, const char *name);
void pm_envlist_free(struct pm_envlist *e);

#endif
