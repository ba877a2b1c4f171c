/* Health check specifications: the grammar of --procmgr-health=LIST and of
 * the site's health= argument. Pure parsing; running them is health.c's job. */
#ifndef PM_CHECKSPEC_H
#define PM_CHECKSPEC_H

#include <stddef.h>
#include <stdint.h>
#include <limits.h>

enum pm_check_kind {
	PM_CHECK_GPU,    /* gpu[:COUNT]            */
	PM_CHECK_MEM,    /* mem[:MIN]              */
	PM_CHECK_DISK,   /* disk:PATH[:MIN]        */
	PM_CHECK_NIC,    /* nic[:NAME[+NAME...]]   */
	PM_CHECK_SCRIPT, /* script:PATH            */
};

struct pm_check {
	enum pm_check_kind kind;
	char arg[PATH_MAX]; /* disk/script path; nic names joined by '+' */
	uint64_t min_bytes; /* mem, disk: 0 = the default threshold */
	int count;          /* gpu: expected devices, -1 = all visible */
};

#define PM_CHECK_GRAMMAR \
	"gpu[:COUNT], mem[:MIN], disk:PATH[:MIN], nic[:NAME[+NAME...]], script:PATH " \
	"(MIN in bytes with an optional K, M, G or T suffix)"

/* Parse one item of a list. */
int pm_check_parse(const char *item, struct pm_check *out, char *err,
		   size_t errlen);
/* Parse a comma-separated list into out[0..max); returns the count or -1. */
int pm_checks_parse(const char *list, struct pm_check *out, int max,
		    char *err, size_t errlen);
/* "10G" -> bytes. */
int pm_parse_size(const char *s, uint64_t *out);
const char *pm_check_name(enum pm_check_kind k);
/* A check item as an admin reads it in sinfo -R, NHC-like: a script by its
 * file name ("script:/etc/nhc/fans.sh" -> "fans.sh"), any other item as
 * written. A pointer into item. */
const char *pm_check_short(const char *item);

/* How long a check script may run, unless the site says otherwise. */
#define PM_HEALTH_DEFAULT_TIMEOUT_MS 30000u

#endif
