/* procmgr-rank, the built program, against a fake procmgrd end
 * (ranksup.c): a hang's stack taken before the stop, with a fake debugger
 * on PATH that the test controls (its output, none at all, one that
 * overruns its time, one whose target ends first), the heartbeat and the
 * steps it carries, a warm standby that becomes the next generation,
 * --procmgr-output-dir's files, and a sweep's trials on the slot. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "sweep/sweep_metric.h"

#include "ranksup.h"

/* Each test's supervisor and run directory, ended and removed whatever
 * the test's outcome. */
static struct rsup s;

static int rs_setup(void **state)
{
	(void)state;
	rsup_init(&s);
	return 0;
}

static int rs_teardown(void **state)
{
	(void)state;
	rsup_free(&s);
	return 0;
}


static void finish(struct rsup *s)
{
	rsup_send(s, PM_MSG_FINISH, 0, -1, -1, 0, 0, NULL);
	assert_int_equal(rsup_exit_code(s), 0);
}

/* PATH: the test's bin/ first (its fake debugger), then the system's. */
static void path_with_bin(struct rsup *s, char *buf, size_t len, bool system)
{
	snprintf(buf, len, "%s/bin%s", s->dir, system ? ":/usr/bin:/bin" : "");
}

static void stack_file(struct rsup *s, char *buf, size_t len)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/hang-stack.0", s->dir);
	rsup_slurp(path, buf, len);
}

/* No first heartbeat in time: said, the stack taken by the debugger,
 * then the command stopped, its end reported as a hang with its times. */
static void test_first_heartbeat_missed(void **state)
{
	char path[128], want[128], stack[4096];
	struct rsup_cfg c = { .opts = "hang-timeout=60,0.2", .heartbeat = true };
	unsigned long long beat = 0, since = 0;
	struct pm_msg m;
	pid_t pid;
	(void)state;

	path_with_bin(&s, path, sizeof(path), true);
	c.path = path;
	rsup_script(&s, "gdb", "echo \"fake-gdb $*\"");
	pid = rsup_start_gen0(&s, &c, RSUP_SH("exec sleep 1000"));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_true(m.count & PM_FLAG_HUNG);
	assert_true(WIFSIGNALED(m.status) && WTERMSIG(m.status) == SIGTERM);
	assert_int_equal(sscanf(m.text, "%llu %llu", &beat, &since), 2);
	assert_true(beat > 0);
	assert_true(rsup_pid_gone(pid));
	assert_non_null(strstr(s.errtext, "procmgr: rank 0 on n0 hung: no first heartbeat "
				      "within 0.2 s of its start"));
	stack_file(&s, stack, sizeof(stack));
	snprintf(want, sizeof(want), "fake-gdb -q -batch -nx -p %d -ex", (int)pid);
	assert_non_null(strstr(stack, want));
	finish(&s);
}

/* The heartbeat: its first beat said (RUN with BEAT), its step to the
 * slow-node detector; STOP_HUNG from procmgrd: stack, then stop. */
static void test_beat_then_stop_hung(void **state)
{
	char path[128], want[128], stack[4096];
	struct rsup_cfg c = { .opts = "hang-timeout=60 slow=on", .heartbeat = true };
	struct pm_msg m;
	pid_t pid;
	(void)state;

	path_with_bin(&s, path, sizeof(path), true);
	c.path = path;
	rsup_script(&s, "gdb", "echo \"fake-gdb $*\"");
	pid = rsup_start_gen0(&s, &c, RSUP_SH("echo '41 12.5' > \"$PROCMGR_HEARTBEAT\"; exec sleep 1000"));
	assert_true(rsup_expect(&s, PM_MSG_RANK_RUN, &m));
	assert_int_equal(m.count, PM_FLAG_BEAT);
	assert_int_equal(m.status, pid);
	assert_true(rsup_expect(&s, PM_MSG_RANK_STEP, &m));
	assert_int_equal(m.gen, 0);
	assert_true(!strncmp(m.text, "41 ", 3));
	assert_non_null(strstr(m.text, " 12.500"));
	rsup_send(&s, PM_MSG_STOP, 0, -1, -1, 0, PM_FLAG_HUNG, NULL);
	assert_true(rsup_expect(&s, PM_MSG_RANK_STOPPED, &m));
	assert_true(WIFSIGNALED(m.status) && WTERMSIG(m.status) == SIGTERM);
	stack_file(&s, stack, sizeof(stack));
	snprintf(want, sizeof(want), "fake-gdb -q -batch -nx -p %d", (int)pid);
	assert_non_null(strstr(stack, want));
	assert_true(rsup_pid_gone(pid));
	finish(&s);
}

/* No debugger on PATH: why, on stderr and in the stack file; the stop
 * goes on. */
static void test_no_stack_tool(void **state)
{
	char path[128], stack[4096];
	struct rsup_cfg c = { .opts = "hang-timeout=60,0.2", .heartbeat = true };
	struct pm_msg m;
	pid_t pid;
	(void)state;

	path_with_bin(&s, path, sizeof(path), false);
	c.path = path;
	pid = rsup_start_gen0(&s, &c, RSUP_SH("exec /bin/sleep 1000"));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_true(m.count & PM_FLAG_HUNG);
	assert_true(rsup_pid_gone(pid));
	assert_non_null(strstr(s.errtext, "procmgr: rank 0 on n0: no stack at the hang: no stack "
				      "tool: install gdb"));
	stack_file(&s, stack, sizeof(stack));
	assert_non_null(strstr(stack, "procmgr: no stack: no stack tool: install gdb"));
	finish(&s);
}

/* A debugger still running at the stack timeout is killed, said. */
static void test_stack_tool_overruns(void **state)
{
	char path[128], body[512], pidfile[128], txt[64], stack[4096];
	struct rsup_cfg c = { .opts = "hang-timeout=60,0.2 stack-timeout=1", .heartbeat = true };
	struct pm_msg m;
	pid_t pid;
	(void)state;

	path_with_bin(&s, path, sizeof(path), true);
	c.path = path;
	snprintf(pidfile, sizeof(pidfile), "%s/gdb.pid", s.dir);
	snprintf(body, sizeof(body), "echo $$ > %s.tmp; mv %s.tmp %s; exec sleep 1000", pidfile,
		 pidfile, pidfile);
	rsup_script(&s, "gdb", body);
	pid = rsup_start_gen0(&s, &c, RSUP_SH("exec sleep 1000"));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_true(m.count & PM_FLAG_HUNG);
	assert_true(rsup_pid_gone(pid));
	rsup_slurp(pidfile, txt, sizeof(txt));
	assert_true(atoi(txt) > 1);
	assert_true(rsup_pid_gone(atoi(txt)));
	stack_file(&s, stack, sizeof(stack));
	assert_non_null(strstr(stack, "procmgr: no stack: "));
	/* The bound and the node's load, said. */
	assert_non_null(strstr(stack, "/bin/gdb did not finish within 1.0 s (node load "));
	assert_non_null(strstr(stack, " CPU"));
	assert_non_null(strstr(stack, "; --procmgr-stack-timeout raises the bound)"));
	finish(&s);
}

/* The command ends while its stack is taken: the debugger is ended, the
 * file says why no stack came, and the end is the command's own. */
static void test_command_ends_during_capture(void **state)
{
	char path[128], stack[4096];
	struct rsup_cfg c = { .opts = "hang-timeout=60", .heartbeat = true };
	struct pm_msg m;
	pid_t pid;
	(void)state;

	path_with_bin(&s, path, sizeof(path), true);
	c.path = path;
	rsup_script(&s, "gdb", "kill -9 $5; exec sleep 1000");
	pid = rsup_start_gen0(&s, &c, RSUP_SH("exec sleep 1000"));
	rsup_send(&s, PM_MSG_STOP, 0, -1, -1, 0, PM_FLAG_HUNG, NULL);
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_true(WIFSIGNALED(m.status) && WTERMSIG(m.status) == SIGKILL);
	assert_false(m.count & PM_FLAG_HUNG);
	assert_true(rsup_pid_gone(pid));
	stack_file(&s, stack, sizeof(stack));
	assert_non_null(strstr(stack, "procmgr: no stack: its command ended before the stack "
				      "tool finished"));
	finish(&s);
}

/* --procmgr-warm=on: the command says ready (and is told to start); a
 * standby waits behind it, says ready, and becomes the next generation
 * with that generation's environment. */
static const char warm_cmd[] =
	"fd=$PROCMGR_WARM_FD; echo \"up rc=${PROCMGR_RESTART_COUNT:-none} pid=$$\"; "
	"echo ready >&$fd; "
	"while IFS= read -r l <&$fd; do case $l in "
	"\"env \"*) export \"${l#env }\";; \"start \"*) g=${l#start }; break;; esac; done; "
	"echo \"run gen=$g rc=$PROCMGR_RESTART_COUNT pid=$$\"; "
	"[ \"$g\" = 0 ] && exit 1; exec sleep 1000";

static void test_warm_standby_takes_over(void **state)
{
	struct rsup_cfg c = { .opts = "warm=on" };
	char want[128];
	struct pm_msg m;
	pid_t pid, sb = 0, next = 0;
	(void)state;

	pid = rsup_start_gen0(&s, &c, (char *const[]){ "/bin/bash", "-c", (char *)warm_cmd, NULL });
	snprintf(want, sizeof(want), "run gen=0 rc=0 pid=%d\n", (int)pid);
	assert_true(rsup_out_has(&s, want));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(WEXITSTATUS(m.status), 1);
	while (rsup_expect(&s, PM_MSG_RANK_STANDBY, &m) && m.count != 2)
		sb = m.status;
	assert_int_equal(m.count, 2);
	assert_int_equal(m.status, sb);
	snprintf(want, sizeof(want), "up rc=none pid=%d\n", (int)sb);
	assert_true(rsup_out_has(&s, want));

	rsup_send(&s, PM_MSG_START, 1, -1, -1, 0, 0, NULL);
	assert_true(rsup_expect(&s, PM_MSG_RANK_RUN, &m));
	assert_int_equal(m.status, sb); /* the standby is the generation */
	assert_true(rsup_err_has(&s, "procmgr: rank 0: generation 1 starts (warm)\n"));
	snprintf(want, sizeof(want), "run gen=1 rc=1 pid=%d\n", (int)sb);
	assert_true(rsup_out_has(&s, want));
	/* and the next standby waits behind it */
	while (rsup_expect(&s, PM_MSG_RANK_STANDBY, &m) && m.count != 2)
		;
	next = m.status;
	assert_int_equal(m.count, 2);
	assert_true(next > 1 && next != sb);
	finish(&s);
	assert_true(rsup_pid_gone(sb));
	assert_true(rsup_pid_gone(next));
}

/* --procmgr-warm=python on a command that is no python: said, cold. */
static void test_warm_python_needs_python(void **state)
{
	struct rsup_cfg c = { .opts = "warm=python:json" };
	struct pm_msg m;
	(void)state;

	rsup_start_gen0(&s, &c, RSUP_SH("exit 0"));
	assert_true(rsup_err_has(&s, "procmgr: rank 0 on n0: --procmgr-warm=python: the command "
				     "is not a python interpreter (/bin/sh); every generation "
				     "starts cold"));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(m.status, 0);
	finish(&s);
}

/* Every stack-tool slot of the node (rank_stack.c's lock files in the run
 * directory) held, as by other ranks' captures: their number. */
static int hold_slots(int *fds)
{
	char path[128];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int i, n = cpus > 4 ? (int)(cpus / 2) : 2;

	if (n > 4)
		n = 4;
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/stack.slot.%d", s.dir, i);
		fds[i] = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
		assert_true(fds[i] >= 0);
		assert_int_equal(flock(fds[i], LOCK_EX | LOCK_NB), 0);
	}
	return n;
}

/* All slots held: the capture waits its turn within the stack timeout,
 * then says why no stack came, and the stop goes on. (It found take_slot
 * looking for slot i in the i-th parent of the run directory: dirname
 * again on its own result.) */
static void test_stack_waits_for_a_slot(void **state)
{
	char path[128], stack[4096];
	struct rsup_cfg c = { .opts = "hang-timeout=60 stack-timeout=1", .heartbeat = true };
	int i, n, fds[4];
	struct pm_msg m;
	pid_t pid;
	(void)state;

	n = hold_slots(fds);
	path_with_bin(&s, path, sizeof(path), true);
	c.path = path;
	rsup_script(&s, "gdb", "echo \"fake-gdb $*\"");
	pid = rsup_start_gen0(&s, &c, RSUP_SH("exec sleep 1000"));
	rsup_send(&s, PM_MSG_STOP, 0, -1, -1, 0, PM_FLAG_HUNG, NULL);
	assert_true(rsup_expect(&s, PM_MSG_RANK_STOPPED, &m));
	assert_true(WIFSIGNALED(m.status) && WTERMSIG(m.status) == SIGTERM);
	assert_true(rsup_pid_gone(pid));
	stack_file(&s, stack, sizeof(stack));
	assert_null(strstr(stack, "fake-gdb"));
	assert_non_null(strstr(stack, "procmgr: no stack: waiting: no turn among this node's "
				      "stack tools within 1.0 s (node load "));
	for (i = 0; i < n; i++)
		close(fds[i]);
	finish(&s);
}

/* A slot freed while the capture waits for one: taken, the stack comes. */
static void test_stack_gets_a_freed_slot(void **state)
{
	char path[128], last[32], stack[4096], ev[4096]
		__attribute__((aligned(__alignof__(struct inotify_event))));
	struct rsup_cfg c = { .opts = "hang-timeout=60 stack-timeout=60", .heartbeat = true };
	int i, n, fds[4], ino, tries;
	bool tried = false;
	struct pm_msg m;
	pid_t pid;
	(void)state;

	n = hold_slots(fds);
	snprintf(last, sizeof(last), "stack.slot.%d", n - 1);
	ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	assert_true(ino >= 0);
	assert_true(inotify_add_watch(ino, s.dir, IN_OPEN) >= 0);
	path_with_bin(&s, path, sizeof(path), true);
	c.path = path;
	rsup_script(&s, "gdb", "echo \"fake-gdb $*\"");
	pid = rsup_start_gen0(&s, &c, RSUP_SH("exec sleep 1000"));
	rsup_send(&s, PM_MSG_STOP, 0, -1, -1, 0, PM_FLAG_HUNG, NULL);
	/* It tried the last slot: every one was busy, it waits. */
	for (tries = 0; !tried && tries < RS_WAIT_MS / 10; tries++) {
		struct pollfd p = { .fd = ino, .events = POLLIN };
		ssize_t k;
		poll(&p, 1, 10);
		while ((k = read(ino, ev, sizeof(ev))) > 0) {
			char *q = ev;
			while (q < ev + k) {
				struct inotify_event *ie = (struct inotify_event *)q;
				if (ie->len && !strcmp(ie->name, last))
					tried = true;
				q += sizeof(*ie) + ie->len;
			}
		}
	}
	assert_true(tried);
	close(ino);
	close(fds[0]);
	assert_true(rsup_expect(&s, PM_MSG_RANK_STOPPED, &m));
	assert_true(WIFSIGNALED(m.status) && WTERMSIG(m.status) == SIGTERM);
	assert_true(rsup_pid_gone(pid));
	stack_file(&s, stack, sizeof(stack));
	assert_non_null(strstr(stack, "fake-gdb -q -batch -nx -p "));
	for (i = 1; i < n; i++)
		close(fds[i]);
	finish(&s);
}

/* --procmgr-warm=python: the command's interpreter runs procmgr's fork
 * server (python/procmgr/standby.py), which forks generation 1 (a process
 * of its own, not the server) to run the script with that generation's
 * environment, the preloaded module already there. */
static void test_warm_python_standby(void **state)
{
	char script[128], want[128];
	struct rsup_cfg c = { .opts = "warm=python:json" };
	struct pm_msg m;
	pid_t sb = 0, gen1;
	FILE *f;
	(void)state;

	if (access("/usr/bin/python3", X_OK))
		skip();
	snprintf(script, sizeof(script), "%s/train.py", s.dir);
	f = fopen(script, "w");
	assert_non_null(f);
	fputs("import os, sys\n"
	      "g = os.environ.get('PROCMGR_RESTART_COUNT')\n"
	      "print('py gen=%s pid=%d json=%s' % (g, os.getpid(), 'json' in sys.modules), "
	      "flush=True)\n"
	      "sys.exit(1 if g == '0' else 0)\n", f);
	assert_int_equal(fclose(f), 0);
	rsup_start_gen0(&s, &c, (char *const[]){ "/usr/bin/python3", script, NULL });
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(WEXITSTATUS(m.status), 1);
	while (rsup_expect(&s, PM_MSG_RANK_STANDBY, &m) && m.count != 2)
		sb = m.status;
	assert_int_equal(m.count, 2);
	assert_true(sb > 1 && m.status == sb);
	rsup_send(&s, PM_MSG_START, 1, -1, -1, 0, 0, NULL);
	assert_true(rsup_expect(&s, PM_MSG_RANK_RUN, &m));
	gen1 = m.status;
	assert_true(gen1 > 1 && gen1 != sb);
	snprintf(want, sizeof(want), "py gen=1 pid=%d json=True\n", (int)gen1);
	assert_true(rsup_out_has(&s, want));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(m.gen, 1);
	assert_int_equal(m.status, 0);
	finish(&s);
	assert_true(rsup_pid_gone(gen1));
	assert_true(rsup_pid_gone(sb));
}

/* What a warm program gets wrong, said: a line it may not send, a
 * standby that ends before it is ready (the next generation starts cold,
 * said why). */
static const char warm_bad_cmd[] =
	"fd=$PROCMGR_WARM_FD; [ -z \"$PROCMGR_RESTART_COUNT\" ] && exit 3; "
	"echo hello >&$fd; echo 'start 5' >&$fd; echo ready >&$fd; read -r l <&$fd; "
	"echo \"told $l\"; exit 1";

static void test_warm_said_why(void **state)
{
	struct rsup_cfg c = { .opts = "warm=on" };
	struct pm_msg m;
	(void)state;

	rsup_start_gen0(&s, &c, (char *const[]){ "/bin/bash", "-c", (char *)warm_bad_cmd, NULL });
	assert_true(rsup_out_has(&s, "told start 0\n"));
	assert_true(rsup_err_has(&s, "procmgr: rank 0 on n0: the warm channel of its command: "
				     "unknown line 'hello' (allowed: ready, env NAME=VALUE, start "
				     "GEN) (a program says only: ready)"));
	assert_true(rsup_err_has(&s, "procmgr: rank 0 on n0: the warm channel of its command: not "
				     "a program's line (a program says only: ready)"));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(WEXITSTATUS(m.status), 1);
	/* the standby said it started (1), then that it is gone (0) */
	assert_true(rsup_expect(&s, PM_MSG_RANK_STANDBY, &m));
	assert_int_equal(m.count, 1);
	assert_true(rsup_expect(&s, PM_MSG_RANK_STANDBY, &m));
	assert_int_equal(m.count, 0);
	assert_int_equal(m.status, 0);
	rsup_send(&s, PM_MSG_START, 1, -1, -1, 0, 0, NULL);
	assert_true(rsup_expect(&s, PM_MSG_RANK_RUN, &m));
	assert_true(rsup_err_has(&s, "procmgr: rank 0 on n0: generation 1 starts cold: its "
				     "standby ended before it was ready (exit 3)"));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(m.gen, 1);
	finish(&s);
}

/* --procmgr-output-dir: the rank's stdout and stderr in files too, each
 * generation's start marked, procmgr's own lines in the stderr file. */
static void test_output_dir(void **state)
{
	char opts[128], path[128], text[4096];
	struct rsup_cfg c = { 0 };
	struct pm_msg m;
	(void)state;

	snprintf(opts, sizeof(opts), "output-dir=%s/out", s.dir);
	c.opts = opts;
	rsup_start_gen0(&s, &c, RSUP_SH("echo to-out; echo to-err >&2; exit 0"));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(m.status, 0);
	assert_true(rsup_out_has(&s, "to-out\n"));
	rsup_send(&s, PM_MSG_PRINT, 0, -1, -1, 0, 0, "procmgr: said by procmgrd");
	assert_true(rsup_err_has(&s, "procmgr: said by procmgrd\n"));
	finish(&s);
	snprintf(path, sizeof(path), "%s/out/rank.0.out", s.dir);
	rsup_slurp(path, text, sizeof(text));
	assert_non_null(strstr(text, "procmgr: generation 0 of rank 0 starts on n0 at "));
	assert_non_null(strstr(text, "to-out\n"));
	snprintf(path, sizeof(path), "%s/out/rank.0.err", s.dir);
	rsup_slurp(path, text, sizeof(text));
	assert_non_null(strstr(text, "to-err\n"));
	assert_non_null(strstr(text, "procmgr: said by procmgrd\n"));
}

/* An output directory that cannot be one: said, the rank runs on. */
static void test_output_dir_refused(void **state)
{
	struct rsup_cfg c = { .opts = "output-dir=/dev/null/x" };
	struct pm_msg m;
	(void)state;

	rsup_start_gen0(&s, &c, RSUP_SH("echo still-here"));
	assert_true(rsup_out_has(&s, "still-here\n"));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(m.status, 0);
	assert_true(rsup_err_has(&s, "procmgr: rank 0 on n0: --procmgr-output-dir: "));
	assert_true(rsup_err_has(&s, "this rank's output goes to srun only"));
	finish(&s);
}

/* A sweep's slot: each trial's numbering and files; a malformed start and
 * one on a busy slot are answered (the root waits for every attempt). */
static void test_sweep_trials(void **state)
{
	char opts[128], path[160], text[4096], want[256];
	struct rsup_cfg c = { 0 };
	struct pm_msg m;
	(void)state;

	char efvar[160];

	snprintf(opts, sizeof(opts), "sweep=%s/trials", s.dir);
	c.opts = opts;
	snprintf(efvar, sizeof(efvar), "TORCHELASTIC_ERROR_FILE=%s/error.0.json", s.dir);
	c.env[0] = efvar;
	rsup_exec(&s, &c, RSUP_SH("exit 9"));
	rsup_hello(&s, 0);
	rsup_send(&s, PM_MSG_TRIAL_START, 0, 1, 0, 0, 2,
		  "t1 4 0 2 hostm 29500 7\necho trial=$PROCMGR_TRIAL rank=$RANK world=$WORLD_SIZE "
		  "master=$MASTER_ADDR:$MASTER_PORT rc=$PROCMGR_RESTART_COUNT; "
		  "echo ef=$TORCHELASTIC_ERROR_FILE; echo trial-err >&2");
	assert_true(rsup_expect(&s, PM_MSG_RANK_RUN, &m));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(m.status, 0);
	snprintf(path, sizeof(path), "%s/trials.out/t1.1.out", s.dir);
	rsup_slurp(path, text, sizeof(text));
	snprintf(want, sizeof(want), "trial=t1 rank=1 world=4 master=hostm:29500 rc=2\n"
		 "ef=%s/error.0.0.json\n", s.dir);
	assert_string_equal(text, want);
	snprintf(path, sizeof(path), "%s/trials.out/t1.1.err", s.dir);
	rsup_slurp(path, text, sizeof(text));
	assert_string_equal(text, "trial-err\n");

	rsup_send(&s, PM_MSG_TRIAL_START, 1, 0, 0, 0, 0, "t2 1 0\nexit 0");
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(m.gen, 1);
	assert_int_equal(WEXITSTATUS(m.status), 126);
	assert_string_equal(m.text, "malformed trial start from procmgrd");

	rsup_send(&s, PM_MSG_TRIAL_START, 2, 0, 0, 0, 0, "t3 1 0 1 h 1 1\nsleep 1000");
	assert_true(rsup_expect(&s, PM_MSG_RANK_RUN, &m));
	rsup_send(&s, PM_MSG_TRIAL_START, 3, 0, 0, 0, 0, "t4 1 0 1 h 1 1\nexit 0");
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(m.gen, 3);
	assert_int_equal(WEXITSTATUS(m.status), 126);
	assert_string_equal(m.text, "procmgr: slot of rank 0 is busy (running)");
	rsup_send(&s, PM_MSG_TRIAL_STOP, 2, -1, 0, 0, 0, NULL);
	assert_true(rsup_expect(&s, PM_MSG_RANK_STOPPED, &m));
	assert_int_equal(m.gen, 2);
	assert_true(WIFSIGNALED(m.status) && WTERMSIG(m.status) == SIGTERM);
	finish(&s);
}

/* Issue 32 (12), the supervisor's side: rank 0 reads its trial's
 * PROCMGR_RESULT_FILE at the end and sends it through the codec (a stale
 * one of the attempt before is gone first); a last line that is no result
 * is said in the trial's .err file; a failure with nothing on stderr
 * quotes stdout's last line. */
static void test_trial_result(void **state)
{
	char opts[128], path[160], text[4096];
	struct rsup_cfg c = { 0 };
	struct pm_metric res;
	const char *err;
	struct pm_msg m;
	(void)state;

	snprintf(opts, sizeof(opts), "sweep=%s/trials", s.dir);
	c.opts = opts;
	rsup_exec(&s, &c, RSUP_SH("exit 9"));
	rsup_hello(&s, 0);
	rsup_send(&s, PM_MSG_TRIAL_START, 1, 0, 0, 0, 0,
		  "a 1 0 1 h 1 1\necho loss=3 >$PROCMGR_RESULT_FILE; echo loss=0.25 >>$PROCMGR_RESULT_FILE");
	assert_true(rsup_expect(&s, PM_MSG_RANK_RUN, &m));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(m.status, 0);
	assert_int_equal(pm_metric_decode(&m, &res, &err), 1);
	assert_string_equal(res.name, "loss");
	assert_string_equal(res.value, "0.25");
	/* The next attempt of a: the file it left is no longer its result. */
	rsup_send(&s, PM_MSG_TRIAL_START, 2, 0, 0, 0, 0, "a 1 0 1 h 1 2\necho epoch 7; exit 4");
	assert_true(rsup_expect(&s, PM_MSG_RANK_RUN, &m));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(WEXITSTATUS(m.status), 4);
	assert_int_equal(pm_metric_decode(&m, &res, &err), 0);
	assert_string_equal(err, "no error output; stdout's last line: \"epoch 7\"");
	rsup_send(&s, PM_MSG_TRIAL_START, 3, 0, 0, 0, 0, "b 1 0 1 h 1 3\necho loss 0.3 >$PROCMGR_RESULT_FILE");
	assert_true(rsup_expect(&s, PM_MSG_RANK_RUN, &m));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(pm_metric_decode(&m, &res, &err), 0);
	snprintf(path, sizeof(path), "%s/trials.out/b.0.err", s.dir);
	rsup_slurp(path, text, sizeof(text));
	assert_non_null(strstr(text, "procmgr: trial b: no result: PROCMGR_RESULT_FILE="));
	assert_non_null(strstr(text, "/trials.out/b.0.result: 'loss 0.3' is not NAME=VALUE"));
	/* A plain line whose first word is a builtin runs in sh, as the user
	 * guide says (it was "cannot run exit", code 127). */
	rsup_send(&s, PM_MSG_TRIAL_START, 4, 0, 0, 0, 0, "c 1 0 1 h 1 4\nexit 5");
	assert_true(rsup_expect(&s, PM_MSG_RANK_RUN, &m));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(WEXITSTATUS(m.status), 5);
	assert_false(m.count & PM_FLAG_EXEC);
	finish(&s);
}

static void test_trial_outside_sweep(void **state)
{
	struct rsup_cfg c = { 0 };
	struct pm_msg m;
	(void)state;

	rsup_exec(&s, &c, RSUP_SH("exit 0"));
	rsup_hello(&s, 0);
	rsup_send(&s, PM_MSG_TRIAL_START, 0, 0, 0, 0, 0, "t1 1 0 1 h 1 1\nexit 0");
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(WEXITSTATUS(m.status), 126);
	assert_string_equal(m.text, "a trial outside a sweep step");
	finish(&s);
}

/* A sweep whose output directory cannot be made: the trial is answered
 * with why. */
static void test_trial_dir_refused(void **state)
{
	struct rsup_cfg c = { .opts = "sweep=/dev/null/trials" };
	struct pm_msg m;
	(void)state;

	rsup_exec(&s, &c, RSUP_SH("exit 0"));
	rsup_hello(&s, 0);
	rsup_send(&s, PM_MSG_TRIAL_START, 0, 0, 0, 0, 0, "t1 1 0 1 h 1 1\nexit 0");
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(WEXITSTATUS(m.status), 126);
	assert_string_equal(m.text, "cannot open /dev/null/trials.out: Not a directory (it must "
			    "be a directory)");
	finish(&s);
}

/* Another user's directory under the trials' outputs' name, beside a
 * trials file in a shared directory (issue 32 item 7): no trial's output
 * goes there, the trial is answered why. */
static void test_trial_dir_theirs(void **state)
{
	char dir[] = "/tmp/pm-test-trialdir.XXXXXX", out[64], opts[96], cmd[192];
	struct rsup_cfg c = { 0 };
	struct pm_msg m;
	(void)state;

	if (geteuid() != 0)
		skip(); /* another user's directory: chown */
	assert_non_null(mkdtemp(dir));
	snprintf(out, sizeof(out), "%s/trials.out", dir);
	assert_int_equal(mkdir(out, 0777), 0);
	assert_int_equal(chmod(out, 0777), 0);
	assert_int_equal(chown(out, 65534, 65534), 0);
	snprintf(opts, sizeof(opts), "sweep=%s/trials", dir);
	c.opts = opts;
	rsup_exec(&s, &c, RSUP_SH("exit 0"));
	rsup_hello(&s, 0);
	rsup_send(&s, PM_MSG_TRIAL_START, 0, 0, 0, 0, 0, "t1 1 0 1 h 1 0\nexit 0");
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(WEXITSTATUS(m.status), 126);
	assert_non_null(strstr(m.text, "/trials.out belongs to uid 65534, not to you"));
	finish(&s);
	snprintf(cmd, sizeof(cmd), "rmdir '%s' && rmdir '%s'", out, dir);
	assert_int_equal(system(cmd), 0); /* empty: nothing written there */
}

/* A spare's supervisor (procmgrd's RANK_STANDBY down, warm on) keeps a
 * standby with no command of its own; given a lost rank's slot, the
 * standby runs it as that rank. A message it has no use for is ignored. */
static void test_spare_keeps_a_standby(void **state)
{
	struct rsup_cfg c = { .opts = "warm=on", .rank = 6 };
	char want[128];
	struct pm_msg m;
	pid_t sb;
	(void)state;

	rsup_exec(&s, &c, (char *const[]){ "/bin/bash", "-c", (char *)warm_cmd, NULL });
	rsup_hello(&s, 6);
	rsup_send(&s, PM_MSG_WELCOME, 0, -1, -1, 0, 0, NULL);
	rsup_send(&s, PM_MSG_RANK_STANDBY, 0, -1, -1, 0, 0, NULL);
	while (rsup_expect(&s, PM_MSG_RANK_STANDBY, &m) && m.count != 2)
		;
	assert_int_equal(m.count, 2);
	sb = m.status;
	assert_true(sb > 1);
	rsup_send(&s, PM_MSG_START, 3, 1, 0, 0, 0, "node-a");
	assert_true(rsup_expect(&s, PM_MSG_RANK_RUN, &m));
	assert_int_equal(m.gen, 3);
	assert_int_equal(m.status, sb);
	snprintf(want, sizeof(want), "run gen=3 rc=3 pid=%d\n", (int)sb);
	assert_true(rsup_out_has(&s, want));
	assert_true(rsup_err_has(&s, "procmgr: rank 1: generation 3 starts (warm)\n"));
	finish(&s);
	assert_true(rsup_pid_gone(sb));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_first_heartbeat_missed, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_beat_then_stop_hung, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_no_stack_tool, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_stack_tool_overruns, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_command_ends_during_capture, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_warm_standby_takes_over, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_warm_python_needs_python, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_warm_said_why, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_stack_waits_for_a_slot, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_stack_gets_a_freed_slot, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_warm_python_standby, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_output_dir, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_output_dir_refused, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_sweep_trials, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_trial_result, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_trial_outside_sweep, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_trial_dir_refused, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_trial_dir_theirs, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_spare_keeps_a_standby, rs_setup, rs_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
