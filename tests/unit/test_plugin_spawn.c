/* procmgr.so starting the real procmgrd from slurmstepd's hooks, in-process,
 * Slurm faked (fake_spank.c): fork, the drop to the job's user, exec of the
 * built ./procmgrd (the site's runtime=), its ready line, each task's
 * command swapped for procmgr-rank, and its stop at the last task's exit,
 * leaving no process and no file; a procmgrd that cannot start or fails a
 * health check, said at user_init (plugin/spawn.c, plugin/remote.c). Also
 * root's files in state_dir and metrics_dir: the topology cache
 * (plugin/topocache.c) and the step's metrics file (plugin/metricsdir.c).
 * As root (CI runs the unit tests so); skipped otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <slurm/slurm.h>

#include "fake_spank.h"
#include "metricsdir.h"
#include "plugin.h"
#include "spawn.h"
#include "topocache.h"

#define JOB_UID 65534 /* nobody: procmgrd runs as the job's user */

/* slurmstepd's configuration, which the plugin reads weakly. */
slurm_conf_t slurm_conf;

static int drains;
void pm_drain_maybe(const struct pm_node *n)
{
	(void)n;
	drains++;
}

static char tmp[64], sd[128], md[128];
static char sd_arg[PATH_MAX + 16], md_arg[PATH_MAX + 16], rt_arg[PATH_MAX + 16];
static char procmgrd[PATH_MAX];
static unsigned port, want_port; /* want_port: the step's, if not 0 */
static const char *step_req; /* srun's request, as slurmstepd gets it */
static uid_t job_uid;
static gid_t gids[] = { 65534 }; /* the job's supplementary groups */

static int setup(void **state)
{
	const char *b = getenv("top_builddir");
	(void)state;

	if (geteuid() != 0)
		skip();
	fake_spank_reset();
	drains = 0;
	want_port = 0;
	job_uid = JOB_UID;
	step_req = "procmgr restart=on-failure:1";
	snprintf(procmgrd, sizeof(procmgrd), "%s/procmgrd", b ? b : ".");
	if (access(procmgrd, X_OK))
		fail_msg("no built procmgrd at %s", procmgrd);
	snprintf(tmp, sizeof(tmp), "/tmp/pm-spawn.XXXXXX");
	assert_non_null(mkdtemp(tmp));
	assert_int_equal(chmod(tmp, 0755), 0); /* the job's user goes through */
	snprintf(sd, sizeof(sd), "%s/sd", tmp);
	snprintf(md, sizeof(md), "%s/md", tmp);
	assert_int_equal(mkdir(md, 0755), 0);
	snprintf(sd_arg, sizeof(sd_arg), "state_dir=%s", sd);
	snprintf(md_arg, sizeof(md_arg), "metrics_dir=%s", md);
	snprintf(rt_arg, sizeof(rt_arg), "runtime=%s", procmgrd);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];
	(void)state;

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* A port free now, for the step's control tree (procmgrd listens there). */
static unsigned free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static void said(const char *text)
{
	if (!strstr(fake_spank.error, text))
		fail_msg("error '%s' does not say '%s'", fake_spank.error, text);
}

static bool there(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool there(const char *fmt, ...)
{
	char path[PATH_MAX];
	struct stat st;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return lstat(path, &st) == 0;
}

/* slurmstepd's init and init_post_opt for job 77 step 3, alone on node 0
 * ("localhost") with two tasks, run by nobody. */
static int start(const char *runtime_arg, const char *extra)
{
	char *av[] = { sd_arg, md_arg, (char *)runtime_arg, (char *)extra, NULL };
	char ports[32];

	fake_spank.ctx = S_CTX_REMOTE;
	fake_spank.nopts = 0;
	assert_int_equal(slurm_spank_init(NULL, extra ? 4 : 3, av), 0);
	assert_string_equal(pm_g.error, "");
	fake_spank_item(S_JOB_ID, 77);
	fake_spank_item(S_JOB_STEPID, 3);
	fake_spank_item(S_JOB_NODEID, 0);
	fake_spank_item(S_JOB_NNODES, 1);
	fake_spank_item(S_JOB_LOCAL_TASK_COUNT, 2);
	fake_spank_item(S_JOB_TOTAL_TASK_COUNT, 2);
	fake_spank_item(S_JOB_UID, job_uid);
	fake_spank_item(S_JOB_GID, job_uid);
	fake_spank.gids = gids;
	fake_spank.ngids = 1;
	fake_spank.have[S_JOB_SUPPLEMENTARY_GIDS] = true;
	port = want_port ? want_port : free_port();
	snprintf(ports, sizeof(ports), "%u-%u", port, port + 1);
	spank_setenv(NULL, "SLURM_STEP_NODELIST", "localhost", 1);
	spank_setenv(NULL, "SLURM_STEP_RESV_PORTS", ports, 1);
	spank_setenv(NULL, PM_ENV_STEP_REQ, step_req, 1);
	return slurm_spank_init_post_opt(NULL, 0, NULL);
}

static bool child_running(void)
{
	return waitpid(-1, NULL, WNOHANG) == 0;
}

static bool no_child(void)
{
	return waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD;
}

static int task_init(int lrank, char **argv)
{
	fake_spank_item(S_TASK_ID, (uint32_t)lrank);
	fake_spank_item(S_TASK_GLOBAL_ID, (uint32_t)lrank);
	fake_spank.argc = 2;
	fake_spank.argv = argv;
	return slurm_spank_task_init(NULL, 0, NULL);
}

static void env_is(const char *name, const char *value)
{
	const char *v = fake_spank_env(name);

	if (!v)
		fail_msg("%s is not set", name);
	assert_string_equal(v, value);
}

/* The whole life of a supervised step on a node, with the real procmgrd. */
static void test_procmgrd_life(void **state)
{
	char shim[PATH_MAX + 16], mport[16], prom[PATH_MAX + 64];
	char *argv[] = { "/bin/train", "--epochs=1", NULL };
	char table[PATH_MAX], *mp[] = { table, "0 /bin/a\n1 /bin/b\n", NULL };
	struct stat st;
	FILE *f;
	(void)state;

	assert_int_equal(start(rt_arg, NULL), 0);
	assert_int_equal(fake_spank.nerrors, 0);
	/* As root before it: the job's directory, the metrics file. */
	assert_int_equal(stat(sd, &st), 0);
	assert_int_equal(st.st_uid, 0);
	snprintf(prom, sizeof(prom), "%s/procmgr-77.3.prom", md);
	assert_int_equal(stat(prom, &st), 0);
	assert_int_equal(st.st_uid, JOB_UID);
	assert_true(child_running());

	assert_int_equal(slurm_spank_user_init(NULL, 0, NULL), 0);
	assert_int_equal(fake_spank.nerrors, 0);
	assert_string_equal(pm_g.error, "");
	/* Ready means listening: its run directory is there, the user's. */
	assert_true(there("%s/77/3.0.run", sd));
	assert_int_equal(stat(sd, &st), 0);
	assert_true(there("%s/77", sd));

	snprintf(shim, sizeof(shim), "%.*s/procmgr-rank",
		 (int)(strrchr(procmgrd, '/') - procmgrd), procmgrd);
	snprintf(mport, sizeof(mport), "%u", port + 1);
	assert_int_equal(task_init(0, argv), 0);
	assert_string_equal(argv[0], shim);
	free(argv[0]);
	argv[0] = "/bin/train";
	env_is("RANK", "0");
	env_is("WORLD_SIZE", "2");
	env_is("MASTER_ADDR", "localhost");
	env_is("MASTER_PORT", mport);
	env_is(PM_ENV_ARGV0, "/bin/train");
	assert_int_equal(task_init(1, argv), 0);
	free(argv[0]);
	argv[0] = "/bin/train";
	env_is("RANK", "1");
	env_is("LOCAL_RANK", "1");
	/* What task_init refuses, each said: no rank from Slurm, srun
	 * --multi-prog's table (its commands would run unsupervised), an
	 * environment that cannot be set. */
	fake_spank.have[S_TASK_GLOBAL_ID] = false;
	fake_spank.argc = 2;
	assert_int_equal(slurm_spank_task_init(NULL, 0, NULL), -1);
	said("cannot read the task's rank and command from Slurm");
	snprintf(table, sizeof(table), "%s/multi.conf", tmp);
	f = fopen(table, "w");
	assert_non_null(f);
	fputs(mp[1], f);
	fclose(f);
	assert_int_equal(task_init(0, mp), -1);
	said("--multi-prog is not supported with procmgr");
	assert_string_equal(mp[0], table);
	fake_spank.setenv_fails = PM_ENV_ARGV0;
	assert_int_equal(task_init(0, argv), -1);
	said("cannot set the rank's environment");
	assert_string_equal(argv[0], "/bin/train");
	fake_spank.setenv_fails = NULL;
	fake_spank.nerrors = 0;

	/* The first task's exit ends nothing; the last one's ends procmgrd,
	 * reaped, and its run directory goes. */
	assert_int_equal(slurm_spank_task_exit(NULL, 0, NULL), 0);
	assert_true(child_running());
	assert_int_equal(drains, 0);
	assert_int_equal(slurm_spank_task_exit(NULL, 0, NULL), 0);
	assert_true(no_child());
	assert_false(there("%s/77/3.0.run", sd));
	assert_int_equal(drains, 1);
	assert_int_equal(slurm_spank_exit(NULL, 0, NULL), 0);
	assert_int_equal(fake_spank.nerrors, 0);
	/* The step's end was written: the metrics file stays for scrapes. */
	assert_true(there("%s", prom));
	/* The job's end removes the rest. */
	fake_spank.ctx = S_CTX_JOB_SCRIPT;
	{
		char *av[] = { sd_arg, NULL };
		assert_int_equal(slurm_spank_job_epilog(NULL, 1, av), 0);
	}
	assert_false(there("%s/77", sd));
}

/* A job of root's (srun as root): procmgrd stays root. */
static void test_root_job(void **state)
{
	char *argv[] = { "/bin/train", NULL };
	(void)state;

	job_uid = 0;
	assert_int_equal(start(rt_arg, NULL), 0);
	assert_int_equal(slurm_spank_user_init(NULL, 0, NULL), 0);
	assert_int_equal(fake_spank.nerrors, 0);
	assert_true(there("%s/77/3.0.run", sd));
	assert_int_equal(task_init(0, argv), 0);
	free(argv[0]);
	assert_int_equal(slurm_spank_task_exit(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_task_exit(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_exit(NULL, 0, NULL), 0);
	assert_true(no_child());
	assert_false(there("%s/77/3.0.run", sd));
	/* procmgrd said how it ended: its log stays for the user. */
	assert_true(there("%s/77/3.0.log", sd));
	assert_int_equal(fake_spank.nerrors, 0);
}

/* procmgrd that does not start: said at user_init, where srun shows it;
 * the tasks fail without saying it again; nothing left. */
static void fails_to_start(const char *runtime_arg, const char *extra, const char *text)
{
	char *argv[] = { "/bin/train", NULL };

	fake_spank_reset();
	assert_int_equal(start(runtime_arg, extra), 0);
	assert_int_equal(slurm_spank_user_init(NULL, 0, NULL), 0);
	assert_int_equal(fake_spank.nerrors, 1);
	said(text);
	assert_int_equal(task_init(0, argv), -1);
	assert_string_equal(argv[0], "/bin/train");
	assert_int_equal(fake_spank.nerrors, 1);
	assert_int_equal(slurm_spank_task_exit(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_exit(NULL, 0, NULL), 0);
	assert_true(no_child());
	assert_false(there("%s/77/3.0.run", sd));
}

static void test_procmgrd_fails(void **state)
{
	char arg[PATH_MAX + 32];
	(void)state;

	fails_to_start("runtime=/bin/false", NULL,
		       "procmgrd did not start on node 0: it exited without a word");
	snprintf(arg, sizeof(arg), "runtime=%s/nowhere/procmgrd", tmp);
	fails_to_start(arg, NULL, "/nowhere/procmgrd: No such file or directory");
	/* A site check that fails on this node: the step does not start. */
	fails_to_start(rt_arg, "health=script:/bin/false",
		       "node localhost failed a health check before launch");
	said("the step does not start");
	/* Binding with a site topology that is not there. */
	step_req = "procmgr bind=cpu";
	fails_to_start(rt_arg, "topology=/nonexistent/topo.xml",
		       "cannot plan the binding of node 0's ranks");
}

/* A stand-in for procmgrd at runtime=: a script that writes body's
 * output to the ready pipe after running pre (with $rundir and $fd). */
static void stand_in(char *arg, size_t len, const char *pre, const char *line)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/stand-in", tmp);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n"
		   "while [ $# -gt 0 ]; do\n"
		   "  case \"$1\" in --ready-fd) fd=$2;; --rundir) rundir=$2;; esac; shift\n"
		   "done\n"
		   "%s\n"
		   "%s%s%s"
		   "exec sleep 600\n", pre, line ? "eval \"printf '%s\\n' '" : "",
		line ? line : "", line ? "' >&$fd\"\n" : "");
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
	snprintf(arg, len, "runtime=%s", path);
}

/* What procmgrd says on its ready pipe that the plugin cannot read, or an
 * error of its own (its control port taken). */
static void test_procmgrd_says(void **state)
{
	char arg[PATH_MAX + 16];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd, fd6, one = 1;
	(void)state;

	stand_in(arg, sizeof(arg), "", "ready, sort of");
	fails_to_start(arg, NULL, "procmgrd did not start on node 0: ready, sort of");

	/* The step's port held by another process. */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 1), 0);
	{
		socklen_t alen = sizeof(a);
		assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	}
	want_port = ntohs(a.sin_port);
	/* Where localhost is ::1 too, that one held as well. */
	fd6 = socket(AF_INET6, SOCK_STREAM, 0);
	a6.sin6_port = a.sin_port;
	if (fd6 >= 0 && (setsockopt(fd6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) ||
			 bind(fd6, (struct sockaddr *)&a6, sizeof(a6)) || listen(fd6, 1))) {
		close(fd6);
		fd6 = -1;
	}
	fails_to_start(rt_arg, NULL, "procmgrd did not start on node 0: error: ");
	said("Address already in use");
	close(fd);
	if (fd6 >= 0)
		close(fd6);
}

/* procmgrd's environment is slurmstepd's Slurm configuration and a PATH,
 * nothing of the user's; one that ignores SIGTERM is killed after 5 s,
 * and its run directory removed for it. */
static void test_procmgrd_killed(void **state)
{
	char arg[PATH_MAX + 16], envf[PATH_MAX], line[512], *argv[] = { "/bin/train", NULL };
	bool conf = false, secret = false;
	FILE *f;
	(void)state;

	slurm_conf.slurm_conf = "/etc/slurm-test/slurm.conf";
	setenv("PM_TEST_SECRET", "x", 1);
	/* Its log (its stderr) emptied first: under --coverage the plugin's
	 * child, already the job's user, complains there that it cannot
	 * write its profile before exec. */
	stand_in(arg, sizeof(arg),
		 ": > /dev/stderr; env > \"$rundir.env\"; mkdir \"$rundir\"; trap '' TERM", "ok");
	assert_int_equal(start(arg, NULL), 0);
	assert_int_equal(slurm_spank_user_init(NULL, 0, NULL), 0);
	assert_int_equal(fake_spank.nerrors, 0);
	assert_true(there("%s/77/3.0.run", sd));
	assert_int_equal(task_init(0, argv), 0);
	free(argv[0]);
	assert_int_equal(slurm_spank_task_exit(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_task_exit(NULL, 0, NULL), 0);
	said("ignored SIGTERM for 5 s: killing it");
	assert_true(no_child());
	assert_false(there("%s/77/3.0.run", sd));
	/* It said nothing: its empty log is no clutter left behind. */
	assert_false(there("%s/77/3.0.log", sd));
	assert_int_equal(slurm_spank_exit(NULL, 0, NULL), 0);
	unsetenv("PM_TEST_SECRET");
	slurm_conf.slurm_conf = NULL;

	snprintf(envf, sizeof(envf), "%s/77/3.0.run.env", sd);
	f = fopen(envf, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		conf |= !strcmp(line, "SLURM_CONF=/etc/slurm-test/slurm.conf\n");
		secret |= !strncmp(line, "PM_TEST_SECRET=", 15);
	}
	fclose(f);
	assert_true(conf);
	assert_false(secret);
}

/* pm_spawn_start whole (launch and ready in one), a node list too long
 * for one argument (passed in a memfd), and a ready wait with nothing
 * started. */
static void test_spawn_start_direct(void **state)
{
	struct pm_node n;
	char err[PM_ERRLEN] = "", arg[PATH_MAX + 16];
	size_t len = PM_NODELIST_ARG_MAX + 100, i;
	(void)state;

	memset(&n, 0, sizeof(n));
	n.pid = -1;
	n.pidfd = -1;
	n.ready_fd = -1;
	assert_int_equal(pm_spawn_ready(&n, err, sizeof(err)), -1);
	assert_string_equal(err, "procmgrd was not started on node 0");

	fake_spank.ctx = S_CTX_REMOTE;
	assert_int_equal(slurm_spank_init(NULL, 3, (char *[]){ sd_arg, md_arg, rt_arg, NULL }),
			 0);
	n.job = 78;
	n.nnodes = 1;
	n.ntasks_local = n.ntasks = 1;
	n.uid = n.gid = 0; /* a root job's, as well */
	n.port = free_port();
	n.nodelist = malloc(len + 1);
	assert_non_null(n.nodelist);
	strcpy(n.nodelist, "localhost");
	for (i = strlen(n.nodelist); i + 10 < len; i += 10)
		strcpy(n.nodelist + i, ",localhost");
	snprintf(n.opts, sizeof(n.opts), "procmgr");
	pm_path_jobdir(n.jobdir, sizeof(n.jobdir), sd, 78);
	pm_path_rundir(n.rundir, sizeof(n.rundir), sd, 78, 0, 0);
	pm_path_report(n.report, sizeof(n.report), sd, 78, 0, 0);
	assert_int_equal(pm_spawn_dirs(&n, err, sizeof(err)), 0);
	/* procmgrd reads the whole list, and says where it falls short:
	 * ready, or an error of its own, never the plugin's "cannot pass". */
	if (pm_spawn_start(NULL, &n, err, sizeof(err)))
		assert_null(strstr(err, "cannot pass the node list"));
	assert_true(n.pid > 0);
	pm_spawn_stop(&n);
	assert_int_equal(n.pid, -1);
	assert_true(no_child());
	assert_false(there("%s", n.rundir));
	/* Stopping twice is harmless. */
	pm_spawn_stop(&n);
	/* One that never says it is ready: the wait has its bound. */
	stand_in(arg, sizeof(arg), "", NULL);
	snprintf(pm_g.site.runtime, sizeof(pm_g.site.runtime), "%.4000s", arg + strlen("runtime="));
	assert_int_equal(pm_spawn_launch(NULL, &n, err, sizeof(err)), 0);
	assert_int_equal(n.ready_ms, 30000);
	n.ready_ms = 100;
	assert_int_equal(pm_spawn_ready(&n, err, sizeof(err)), -1);
	assert_string_equal(err, "procmgrd did not start on node 0: error: not ready after 0 s");
	assert_true(n.pid > 0);
	pm_spawn_stop(&n);
	assert_true(no_child());
	free(n.nodelist);
}

/* ---- topocache.c: hwloc's discovery written once per boot, as root ---- */

static void age(const char *path, time_t when)
{
	struct timespec t[2] = { { .tv_sec = when }, { .tv_sec = when } };

	assert_int_equal(utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW), 0);
}

static void test_topocache(void **state)
{
	char buf[PATH_MAX], host[256], path[PATH_MAX + 300];
	struct stat st;
	(void)state;

	fake_spank.ctx = S_CTX_REMOTE;
	assert_int_equal(slurm_spank_init(NULL, 1, (char *[]){ sd_arg, NULL }), 0);
	assert_int_equal(mkdir(sd, 0755), 0);
	assert_null(pm_topocache_xml(buf, sizeof(buf)));
	pm_topocache_refresh();
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	snprintf(path, sizeof(path), "%s/topology.%s.xml", sd, host);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_true(st.st_size > 0);
	assert_string_equal(pm_topocache_xml(buf, sizeof(buf)), path);
	/* Older than the running kernel: not used, and rewritten. */
	age(path, 1000);
	assert_null(pm_topocache_xml(buf, sizeof(buf)));
	pm_topocache_refresh();
	assert_string_equal(pm_topocache_xml(buf, sizeof(buf)), path);
	/* Writable by others: not trusted. */
	assert_int_equal(chmod(path, 0666), 0);
	assert_null(pm_topocache_xml(buf, sizeof(buf)));
	/* state_dir writable by others: no cache written, and said. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(chmod(sd, 0777), 0);
	pm_topocache_refresh();
	assert_false(there("%s", path));
	assert_non_null(strstr(fake_spank.info, "no topology cache"));
	assert_non_null(strstr(fake_spank.info, "may be written by other users"));
	/* The site's file wins, and nothing is written. */
	snprintf(pm_g.site.topology, sizeof(pm_g.site.topology), "/etc/procmgr/topo.xml");
	assert_int_equal(chmod(sd, 0755), 0);
	pm_topocache_refresh();
	assert_false(there("%s", path));
	assert_string_equal(pm_topocache_xml(buf, sizeof(buf)), "/etc/procmgr/topo.xml");
}

/* ---- metricsdir.c: the step's file made for its user, swept later ---- */

static void put(const char *path, const char *text, time_t when)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	if (when)
		age(path, when);
}

static void test_metricsdir(void **state)
{
	struct pm_node n;
	char prom[PATH_MAX + 64], other[PATH_MAX + 64], running[PATH_MAX + 64];
	char fifo[PATH_MAX + 64];
	struct stat st;
	time_t old = time(NULL) - 3600;
	(void)state;

	fake_spank.ctx = S_CTX_REMOTE;
	assert_int_equal(slurm_spank_init(NULL, 2, (char *[]){ sd_arg, md_arg, NULL }), 0);
	memset(&n, 0, sizeof(n));
	n.job = 9;
	n.step = 2;
	n.uid = n.gid = JOB_UID;
	snprintf(prom, sizeof(prom), "%s/procmgr-9.2.prom", md);
	/* Only node 0 has the step's file. */
	n.nodeid = 1;
	pm_metricsdir_prepare(&n);
	assert_false(there("%s", prom));
	n.nodeid = 0;
	/* A leftover of an earlier job 9 is replaced by an empty file. */
	put(prom, "procmgr_step_running{job=\"9\",step=\"2\"} 1\n", 0);
	pm_metricsdir_prepare(&n);
	assert_int_equal(lstat(prom, &st), 0);
	assert_int_equal(st.st_uid, JOB_UID);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(fake_spank.nerrors, 0);

	/* At the end: a file that never said the step ended goes; an old
	 * finished step's goes; a running step's and a FIFO stay. */
	snprintf(other, sizeof(other), "%s/procmgr-8.0.prom", md);
	put(other, "procmgr_step_running{job=\"8\",step=\"0\"} 0\n", old);
	snprintf(running, sizeof(running), "%s/procmgr-7.0.prom", md);
	put(running, "procmgr_step_running{job=\"7\",step=\"0\"} 1\n", old);
	snprintf(fifo, sizeof(fifo), "%s/procmgr-6.0.prom", md);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	pm_metricsdir_end(&n);
	assert_false(there("%s", prom));
	assert_false(there("%s", other));
	assert_true(there("%s", running));
	assert_true(there("%s", fifo));
	/* A finished file stays for the scrapes. */
	put(prom, "x 1\nprocmgr_step_running{job=\"9\",step=\"2\"} 0\n", 0);
	pm_metricsdir_end(&n);
	assert_true(there("%s", prom));
	assert_int_equal(fake_spank.nerrors, 0);

	/* A directory others may write: no metrics, said. */
	assert_int_equal(chmod(md, 0777), 0);
	pm_metricsdir_prepare(&n);
	assert_int_equal(fake_spank.nerrors, 1);
	said("metrics_dir: ");
	said("no metrics for this step");
	pm_metricsdir_end(&n);
	assert_true(there("%s", prom));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_procmgrd_life, setup, teardown),
		cmocka_unit_test_setup_teardown(test_root_job, setup, teardown),
		cmocka_unit_test_setup_teardown(test_procmgrd_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_procmgrd_says, setup, teardown),
		cmocka_unit_test_setup_teardown(test_procmgrd_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spawn_start_direct, setup, teardown),
		cmocka_unit_test_setup_teardown(test_topocache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metricsdir, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
