/* plugin/drain.c in-process, libslurm faked here (the node update RPC and
 * hostlists, which slurmstepd's own libslurm gives the plugin): the drain
 * reason's text, and the step-end decision on procmgrd's health report
 * (only a site check, failing again when run here, drains; the report is
 * taken only if it is a plain file of the job's user, and removed). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "drain.h"
#include "fake_spank.h"
#include "plugin.h"
#include "slurm_compat.h"

#include <slurm/slurm_errno.h>

struct pm_plugin pm_g;

/* ---- libslurm, faked ---- */

static struct {
	int calls, fail_errno;
	char node[256], reason[1024];
	uint32_t state, reason_uid;
} upd;

void slurm_init_update_node_msg(update_node_msg_t *m)
{
	memset(m, 0, sizeof(*m));
}

int slurm_update_node(update_node_msg_t *m)
{
	upd.calls++;
	snprintf(upd.node, sizeof(upd.node), "%s", m->node_names);
	snprintf(upd.reason, sizeof(upd.reason), "%s", m->reason);
	upd.state = m->node_state;
#if HAVE_UPDATE_NODE_MSG_T_REASON_UID
	upd.reason_uid = m->reason_uid;
#endif
	if (upd.fail_errno) {
		errno = upd.fail_errno;
		return SLURM_ERROR;
	}
	return SLURM_SUCCESS;
}

char *slurm_strerror(int e)
{
	return e == ESLURM_ACCESS_DENIED ? "Access/permission denied" : "Unexpected error";
}

struct hostlist {
	char buf[1024];
	char *next;
};

pm_hostlist_t slurm_hostlist_create(const char *list)
{
	struct hostlist *h = calloc(1, sizeof(*h));

	snprintf(h->buf, sizeof(h->buf), "%s", list); /* names, comma-separated */
	h->next = h->buf;
	return (pm_hostlist_t)h;
}

char *slurm_hostlist_shift(pm_hostlist_t hl)
{
	struct hostlist *h = (struct hostlist *)hl;
	char *s = h->next, *c;

	if (!s || !*s)
		return NULL;
	c = strchr(s, ',');
	h->next = c ? c + 1 : NULL;
	if (c)
		*c = '\0';
	return strdup(s);
}

void slurm_hostlist_destroy(pm_hostlist_t hl)
{
	free((struct hostlist *)hl);
}

/* ---- the reason's text ---- */

static void test_drain_node(void **state)
{
	char err[256];
	(void)state;

	memset(&upd, 0, sizeof(upd));
	assert_int_equal(pm_drain_node("n3", "gpu: 7 of 8 GPUs", err, sizeof(err)), 0);
	assert_string_equal(upd.node, "n3");
	assert_string_equal(upd.reason, "procmgr: gpu: 7 of 8 GPUs");
	assert_int_equal(upd.state, NODE_STATE_DRAIN);
#if HAVE_UPDATE_NODE_MSG_T_REASON_UID
	/* 26.05 has no such field: slurmctld takes the sender's uid. */
	assert_int_equal(upd.reason_uid, getuid());
#endif
	/* Said once, whoever added the prefix; one line whatever came. */
	assert_int_equal(pm_drain_node("n3", "procmgr: mem:\tlow\nnext", err, sizeof(err)), 0);
	assert_string_equal(upd.reason, "procmgr: mem: low next");
	assert_int_equal(pm_drain_node("n3", NULL, err, sizeof(err)), 0);
	assert_string_equal(upd.reason, "procmgr: health check failed");
	assert_int_equal(pm_drain_node("", "x", err, sizeof(err)), -1);
	assert_string_equal(err, "cannot drain: no node name");
	upd.fail_errno = ESLURM_ACCESS_DENIED;
	assert_int_equal(pm_drain_node("n3", "x", err, sizeof(err)), -1);
	assert_string_equal(err, "cannot drain node n3: Access/permission denied");
}

/* ---- the decision at the step's end ---- */

static char dir[] = "/tmp/pm-drain-XXXXXX";
static char fails[256], passes[256];

static int setup(void **state)
{
	FILE *f;
	(void)state;

	memset(&upd, 0, sizeof(upd));
	fake_spank_reset();
	memset(&pm_g, 0, sizeof(pm_g));
	if (!mkdtemp(dir))
		return -1;
	snprintf(fails, sizeof(fails), "%s/fans.sh", dir);
	snprintf(passes, sizeof(passes), "%s/ok.sh", dir);
	f = fopen(fails, "w");
	fprintf(f, "#!/bin/sh\necho 'fan 3 stopped'\nexit 1\n");
	fclose(f);
	f = fopen(passes, "w");
	fprintf(f, "#!/bin/sh\nexit 0\n");
	fclose(f);
	chmod(fails, 0755);
	chmod(passes, 0755);
	snprintf(pm_g.site.health, sizeof(pm_g.site.health), "mem,script:%s,script:%s", fails,
		 passes);
	pm_g.site.drain = true;
	pm_g.site.health_timeout_ms = 10000;
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];
	(void)state;

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		return -1;
	memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
	return 0;
}

static void node(struct pm_node *n, char *list)
{
	memset(n, 0, sizeof(*n));
	n->nodelist = list;
	n->nodeid = 1;
	n->uid = getuid();
	snprintf(n->report, sizeof(n->report), "%s/health-report", dir);
}

static void report(const struct pm_node *n, const char *check, const char *reason)
{
	char line[PATH_MAX + 1100];
	FILE *f = fopen(n->report, "w");

	assert_non_null(f);
	assert_int_equal(pm_report_format(line, sizeof(line), check, reason), 0);
	fprintf(f, "%s\n", line);
	fclose(f);
}

static void test_site_check_fails_again(void **state)
{
	struct pm_node n;
	char list[] = "a1,b2,c3", item[300];
	(void)state;

	node(&n, list);
	snprintf(item, sizeof(item), "script:%s", fails);
	report(&n, item, "fan 3 stopped");
	pm_drain_maybe(&n);
	assert_int_equal(upd.calls, 1);
	assert_string_equal(upd.node, "b2"); /* node 1 of the step */
	assert_string_equal(upd.reason, "procmgr: fans.sh: fan 3 stopped");
	assert_non_null(strstr(fake_spank.info, "drained node b2"));
	assert_int_equal(access(n.report, F_OK), -1); /* taken */
	assert_string_equal(getenv("SLURMD_NODENAME"), "b2");
	/* No report: nothing. */
	pm_drain_maybe(&n);
	assert_int_equal(upd.calls, 1);
	/* Slurm refuses: said in slurmd's log. */
	report(&n, item, "fan 3 stopped");
	upd.fail_errno = ESLURM_ACCESS_DENIED;
	pm_drain_maybe(&n);
	assert_non_null(strstr(fake_spank.error, "cannot drain node b2"));
}

static void test_not_drained(void **state)
{
	struct pm_node n;
	char list[] = "a1,b2", shortlist[] = "a1", item[300];
	(void)state;

	node(&n, list);
	/* Passes when run here: the user's environment made it fail. */
	snprintf(item, sizeof(item), "script:%s", passes);
	report(&n, item, "it failed for the user");
	pm_drain_maybe(&n);
	assert_int_equal(upd.calls, 0);
	assert_non_null(strstr(fake_spank.info, "passes when run as root"));
	/* The user's own check never drains. */
	report(&n, "script:/home/user/mine.sh", "whatever");
	pm_drain_maybe(&n);
	assert_int_equal(upd.calls, 0);
	assert_non_null(strstr(fake_spank.info, "not one of the site's checks"));
	assert_int_equal(access(n.report, F_OK), -1);
	/* A check that cannot be parsed to run again. */
	snprintf(pm_g.site.health, sizeof(pm_g.site.health), "bogus:1");
	report(&n, "bogus:1", "x");
	pm_drain_maybe(&n);
	assert_int_equal(upd.calls, 0);
	assert_non_null(strstr(fake_spank.error, "cannot re-run 'bogus:1'"));
	/* The site does not drain: the report is still taken. */
	pm_g.site.drain = false;
	snprintf(item, sizeof(item), "script:%s", fails);
	snprintf(pm_g.site.health, sizeof(pm_g.site.health), "%s", item);
	report(&n, item, "x");
	pm_drain_maybe(&n);
	assert_int_equal(upd.calls, 0);
	assert_int_equal(access(n.report, F_OK), -1);
	/* This node's name is not in the list. */
	pm_g.site.drain = true;
	node(&n, shortlist);
	report(&n, item, "x");
	pm_drain_maybe(&n);
	assert_int_equal(upd.calls, 0);
	assert_non_null(strstr(fake_spank.error, "this node's name is unknown"));
}

/* The report is in the user's directory and we are root: a link (to a
 * file the user may not write) is not followed; a directory or a FIFO is
 * not a report. */
static void test_report_not_a_plain_file(void **state)
{
	struct pm_node n;
	char list[] = "a1,b2", target[PATH_MAX], item[300];
	(void)state;

	node(&n, list);
	snprintf(item, sizeof(item), "script:%s", fails);
	snprintf(target, sizeof(target), "%s/elsewhere", dir);
	{
		FILE *f = fopen(target, "w");
		char line[PATH_MAX + 64];
		pm_report_format(line, sizeof(line), item, "x");
		fprintf(f, "%s\n", line);
		fclose(f);
	}
	assert_int_equal(symlink(target, n.report), 0);
	pm_drain_maybe(&n);
	assert_int_equal(upd.calls, 0);
	unlink(n.report);
	assert_int_equal(mkfifo(n.report, 0600), 0);
	pm_drain_maybe(&n); /* does not block on the FIFO */
	assert_int_equal(upd.calls, 0);
	assert_non_null(strstr(fake_spank.error, "not a regular file"));
	unlink(n.report);
	assert_int_equal(link(target, n.report), 0); /* two links */
	pm_drain_maybe(&n);
	assert_int_equal(upd.calls, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drain_node),
		cmocka_unit_test_setup_teardown(test_site_check_fails_again, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_drained, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_not_a_plain_file, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
