/* The facts check_rules.c judges: procmgr.so's plugin_version read from the
 * file (not dlopen: the package is linked with -z now, and its Slurm
 * symbols exist only inside Slurm's programs), Slurm's settings from
 * `scontrol show config` (else slurm.conf as written), each node's version
 * from `scontrol show node`, the directories and scripts on this node. */
#include "check_cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_rules.h"
#include "common/checkspec.h"
#include "io/safefile.h"

#define PLUGIN_MAX (64u << 20)
/* scontrol retries an unreachable slurmctld for MessageTimeout and more. */
#define SCONTROL "timeout 30 scontrol "

struct conf {
	char version[64];   /* slurmctld's, or the installed scontrol's */
	char who[64];       /* which of the two */
	char mpiparams[256];
	char slurmd_user[64];
	char slurm_user[64];
	int asked;          /* slurmctld answered */
};

static int read_vernum(const char *so, uint32_t *v, char *err, size_t errlen)
{
	unsigned char *buf;
	struct stat st;
	ssize_t n;
	size_t off = 0;
	int fd = open(so, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > (off_t)PLUGIN_MAX) {
		snprintf(err, errlen, "cannot read %s: %s", so,
			 fd < 0 || errno ? strerror(errno) : "not a regular file under 64 MiB");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	buf = malloc((size_t)st.st_size + 1);
	while (buf && off < (size_t)st.st_size &&
	       ((n = read(fd, buf + off, (size_t)st.st_size - off)) > 0 || (n < 0 && errno == EINTR)))
		if (n > 0)
			off += (size_t)n;
	close(fd);
	if (!buf) {
		snprintf(err, errlen, "cannot read %s: out of memory", so);
		return -1;
	}
	rc = pm_elf_u32(buf, off, "plugin_version", v, err, errlen);
	free(buf);
	return rc;
}

/* "Key = value" (scontrol) or "Key=value" (slurm.conf): key's value. */
static void take(const char *line, const char *key, char *val, size_t len)
{
	size_t k = strlen(key);
	const char *p = line;
	size_t n;

	while (*p == ' ' || *p == '\t')
		p++;
	if (strncasecmp(p, key, k) || (p[k] != ' ' && p[k] != '='))
		return;
	p += k;
	while (*p == ' ' || *p == '=')
		p++;
	n = strcspn(p, " \t\n#");
	snprintf(val, len, "%.*s", (int)n, p);
}

static void parse_conf(FILE *f, struct conf *c)
{
	char *l = NULL;
	size_t cap = 0;

	while (getline(&l, &cap, f) >= 0) {
		take(l, "SLURM_VERSION", c->version, sizeof(c->version));
		take(l, "MpiParams", c->mpiparams, sizeof(c->mpiparams));
		take(l, "SlurmdUser", c->slurmd_user, sizeof(c->slurmd_user));
		take(l, "SlurmUser", c->slurm_user, sizeof(c->slurm_user));
	}
	free(l);
}

/* The last word of cmd's first line, if it is a Slurm version. */
static bool installed_version(const char *cmd, char *v, size_t len)
{
	char line[256], *w;
	unsigned a, b;
	FILE *f = popen(cmd, "r");
	bool ok = false;

	if (!f)
		return false;
	if (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		w = strrchr(line, ' ');
		w = w ? w + 1 : line;
		if (pm_slurm_release(w, &a, &b) == 0) {
			snprintf(v, len, "%.63s", w);
			ok = true;
		}
	}
	pclose(f);
	return ok;
}

static void read_conf(struct conf *c)
{
	const char *path = getenv("SLURM_CONF");
	char def[4096];
	FILE *f;

	memset(c, 0, sizeof(*c));
	if ((f = popen(SCONTROL "show config 2>/dev/null", "r"))) {
		parse_conf(f, c);
		c->asked = pclose(f) == 0 && c->version[0];
	}
	if (c->asked) {
		snprintf(c->who, sizeof(c->who), "slurmctld");
		return;
	}
	/* No answer: the installed Slurm, and slurm.conf as written. */
	memset(c, 0, sizeof(*c));
	/* "slurm 22.05.8"; scontrol needs a configuration, slurmd -V none
	 * ("slurm-wlm 22.05.8"). */
	if (installed_version(SCONTROL "--version 2>/dev/null", c->version, sizeof(c->version)))
		snprintf(c->who, sizeof(c->who), "the installed Slurm (scontrol)");
	else if (installed_version("slurmd -V 2>/dev/null", c->version, sizeof(c->version)))
		snprintf(c->who, sizeof(c->who), "the installed Slurm (slurmd)");
	if (!path || !*path) {
		snprintf(def, sizeof(def), "%s/slurm.conf", PM_SLURMCONFDIR);
		path = def;
	}
	if ((f = fopen(path, "r"))) {
		parse_conf(f, c);
		fclose(f);
	}
}

/* Each node slurmctld knows whose release differs from the plugin's. */
static int check_nodes(const char *where, uint32_t vernum)
{
	char *l = NULL, node[128], ver[64], who[160], err[1024];
	size_t cap = 0;
	int bad = 0, nodes = 0;
	FILE *f = popen(SCONTROL "-o show node 2>/dev/null", "r");

	if (!f)
		return 0;
	while (getline(&l, &cap, f) >= 0) {
		const char *p;

		node[0] = ver[0] = '\0';
		take(l, "NodeName", node, sizeof(node));
		for (p = l; (p = strstr(p, " Version=")); p++)
			take(p, "Version", ver, sizeof(ver));
		if (!node[0])
			continue;
		nodes++;
		/* A node that never registered has no version yet. */
		if (!ver[0] || !strcmp(ver, "(null)") || !strcmp(ver, "N/A"))
			continue;
		/* who apart from err: snprintf must not read what it writes. */
		snprintf(who, sizeof(who), "node %s", node);
		if (pm_judge_release(vernum, ver, who, err, sizeof(err)) && bad++ < 10)
			fprintf(stderr, "%s: %s\n", where, err);
	}
	free(l);
	pclose(f);
	if (bad > 10)
		fprintf(stderr, "%s: %d more nodes run another Slurm release\n", where, bad - 10);
	if (!bad && nodes)
		printf("%s: %d node%s run%s the plugin's Slurm release\n", where, nodes,
		       nodes == 1 ? "" : "s", nodes == 1 ? "s" : "");
	return bad;
}

/* state_dir and metrics_dir by the plugin's own rule (io/safefile.h):
 * what pm_privdir_open refuses there, said here; a missing last directory
 * is fine, the plugin makes it. */
static int check_dir(const char *where, const char *key, const char *path, const char *cost)
{
	char err[PM_ERRLEN];

	if (pm_privdir_find(path, 0, NULL, err, sizeof(err)) >= 0)
		return 0;
	fprintf(stderr, "%s: %s: %s: %s\n", where, key, err, cost);
	return 1;
}

/* The site's script: checks exist and can run (as root: X_OK). */
static int check_scripts(const char *where, const struct pm_site *s)
{
	struct pm_check checks[64];
	char err[PM_ERRLEN];
	struct stat st;
	int n, i, bad = 0;

	if (!s->health[0])
		return 0;
	n = pm_checks_parse(s->health, checks, 64, err, sizeof(err));
	for (i = 0; i < n; i++) {
		if (checks[i].kind != PM_CHECK_SCRIPT)
			continue;
		const char *why = NULL;

		if (stat(checks[i].arg, &st))
			why = errno == ENOENT ? "does not exist" : strerror(errno);
		else if (!S_ISREG(st.st_mode))
			why = "is not a file";
		else if (!(st.st_mode & 0111))
			why = "is not executable";
		if (why) {
			fprintf(stderr, "%s: health script %s %s: every step would fail its "
				"check on this node\n", where, checks[i].arg, why);
			bad++;
		}
	}
	return bad;
}

int pm_check_cluster(const char *where, const char *so, const struct pm_site *s)
{
	struct conf c;
	char err[1024];
	uint32_t vernum = 0;
	int bad = 0, have_ver;

	read_conf(&c);
	have_ver = read_vernum(so, &vernum, err, sizeof(err)) == 0;
	if (!have_ver) {
		fprintf(stderr, "%s: the plugin's Slurm release: %s\n", where, err);
		bad++;
	} else if (!c.version[0]) {
		printf("%s: no Slurm to compare with (neither scontrol nor slurmd said its version); "
		       "the plugin is built "
		       "for Slurm %u.%02u\n", where, (vernum >> 16) & 255, (vernum >> 8) & 255);
	} else if (pm_judge_release(vernum, c.version, c.who, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", where, err);
		bad++;
	} else {
		printf("%s: the plugin is built for Slurm %u.%02u; %s runs %s\n", where,
		       (vernum >> 16) & 255, (vernum >> 8) & 255, c.who, c.version);
	}
	if (have_ver && c.asked)
		bad += check_nodes(where, vernum);
	if (!c.asked)
		printf("%s: slurmctld did not answer: Slurm's settings read from slurm.conf, "
		       "the nodes' versions not checked\n", where);

	if (!s->port_lo && !pm_mpiparams_ports(c.mpiparams)) {
		fprintf(stderr, "%s: no port range for the control tree: Slurm's MpiParams has no "
			"ports= (%s) and the line no ports=: every supervised step would fail; "
			"set MpiParams=ports=LO-HI in slurm.conf or ports=LO-HI here\n", where,
			c.mpiparams[0] ? c.mpiparams : "unset");
		bad++;
	}
	bad += check_dir(where, "state_dir", s->state_dir, "every step would fail on this node");
	if (s->metrics_dir[0])
		bad += check_dir(where, "metrics_dir", s->metrics_dir,
				 "no step's metrics would be written on this node");
	bad += check_scripts(where, s);
	if (s->drain && !s->health[0]) {
		fprintf(stderr, "%s: drain=yes drains nothing without the site's health= checks "
			"(a user's own checks never drain a node)\n", where);
		bad++;
	}
	if (s->drain && pm_judge_drain(c.slurmd_user, c.slurm_user, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", where, err);
		bad++;
	}
	return bad;
}
