/* procmgr-rank, the built program, against a fake procmgrd end
 * (ranksup.c) speaking the wire protocol over its unix socket: HELLO, a
 * generation's START and its EXIT with the wait status and why (stderr's
 * tail, torch's error file), the generation's environment, STOP with and
 * without its grace, FINISH and ABORT's exit codes, a lost or silent
 * procmgrd, Slurm's signals, a command that cannot run, and the refusals
 * of a supervisor started outside a step. The command's fate is checked
 * for real (its pid gone). */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

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


static void test_exit_reported_with_why(void **state)
{
	struct rsup_cfg c = { .rank = 5 };
	struct pm_msg m;
	pid_t pid;
	(void)state;

	pid = rsup_start_gen0(&s, &c, RSUP_SH("echo 'step 1' >&2; echo 'ValueError: loss is nan' >&2; exit 3"));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(m.gen, 0);
	assert_true(WIFEXITED(m.status) && WEXITSTATUS(m.status) == 3);
	assert_int_equal(m.count, 0);
	assert_non_null(strstr(m.text, "ValueError: loss is nan"));
	/* its stderr still reaches Slurm's, whole */
	assert_true(rsup_err_has(&s, "step 1\nValueError: loss is nan\n"));
	assert_true(rsup_pid_gone(pid));
	/* ABORT's code is the rank's (FINISH's is 0: the step succeeded) */
	rsup_send(&s, PM_MSG_ABORT, 0, 5, -1, 3, PM_FLAG_BLAME, NULL);
	assert_int_equal(rsup_exit_code(&s), 3);
}

/* Each generation: its restart count, its own error file (the last one's
 * removed), and after a replacement (spares) its rank, group and master. */
static void test_generations_env_and_error_file(void **state)
{
	char ef[160], efvar[200], want[400], gen1[200];
	struct rsup_cfg c = { .rank = 0 };
	struct pm_msg m;
	(void)state;

	snprintf(ef, sizeof(ef), "%s/error.0.json", s.dir);
	snprintf(efvar, sizeof(efvar), "TORCHELASTIC_ERROR_FILE=%s", ef);
	c.env[0] = efvar;
	rsup_start_gen0(&s, &c,
		   RSUP_SH("echo \"gen=$PROCMGR_RESTART_COUNT te=$TORCHELASTIC_RESTART_COUNT "
		      "rank=$RANK group=${GROUP_RANK:-} master=${MASTER_ADDR:-} "
		      "ef=$TORCHELASTIC_ERROR_FILE\"; "
		      "[ \"$PROCMGR_RESTART_COUNT\" = 1 ] && printf '{\"message\": {\"message\": "
		      "\"RuntimeError: boom\"}}' > \"$TORCHELASTIC_ERROR_FILE\"; "
		      "[ \"$PROCMGR_RESTART_COUNT\" = 2 ] && exit 0; exit 1"));
	snprintf(want, sizeof(want), "gen=0 te=0 rank=0 group= master= ef=%s/error.0.0.json\n",
		 s.dir);
	assert_true(rsup_out_has(&s, want));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(WEXITSTATUS(m.status), 1);

	rsup_send(&s, PM_MSG_START, 1, -1, -1, 0, 0, NULL);
	assert_true(rsup_expect(&s, PM_MSG_RANK_RUN, &m));
	assert_int_equal(m.gen, 1);
	assert_true(rsup_err_has(&s, "procmgr: rank 0: generation 1 starts\n"));
	snprintf(want, sizeof(want), "gen=1 te=1 rank=0 group= master= ef=%s/error.0.1.json\n",
		 s.dir);
	assert_true(rsup_out_has(&s, want));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(m.gen, 1);
	assert_int_equal(WEXITSTATUS(m.status), 1);
	assert_string_equal(m.text, "RuntimeError: boom"); /* torch's file, not the tail */
	snprintf(gen1, sizeof(gen1), "%s/error.0.1.json", s.dir);
	assert_int_equal(access(gen1, F_OK), 0);

	/* A spare's slot: rank 7, group 1, rank 0 on master-host. */
	rsup_send(&s, PM_MSG_START, 2, 7, 1, 0, 0, "master-host");
	assert_true(rsup_expect(&s, PM_MSG_RANK_RUN, &m));
	snprintf(want, sizeof(want), "gen=2 te=2 rank=7 group=1 master=master-host "
		 "ef=%s/error.0.2.json\n", s.dir);
	assert_true(rsup_out_has(&s, want));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(m.gen, 2);
	assert_int_equal(m.status, 0);
	assert_int_equal(m.text_len, 0);
	assert_int_equal(access(gen1, F_OK), -1); /* the last generation's error went */
	rsup_send(&s, PM_MSG_FINISH, 2, -1, -1, 0, 0, NULL);
	assert_int_equal(rsup_exit_code(&s), 0);
}

/* STOP: SIGTERM, SIGKILL after the grace; a STOP for another generation
 * is answered at once and leaves the command alone. */
static void test_stop_after_grace(void **state)
{
	struct rsup_cfg c = { .opts = "grace=0.1" };
	struct pm_msg m;
	pid_t pid;
	(void)state;

	pid = rsup_start_gen0(&s, &c, RSUP_SH("trap '' TERM; echo up; exec sleep 1000"));
	assert_true(rsup_out_has(&s, "up\n"));
	rsup_send(&s, PM_MSG_STOP, 4, -1, -1, 0, 0, NULL);
	assert_true(rsup_recv(&s, &m));
	assert_int_equal(m.type, PM_MSG_RANK_STOPPED);
	assert_int_equal(kill(pid, 0), 0);
	rsup_send(&s, PM_MSG_STOP, 0, -1, -1, 0, 0, NULL);
	assert_true(rsup_expect(&s, PM_MSG_RANK_STOPPED, &m));
	assert_int_equal(m.gen, 0);
	assert_true(WIFSIGNALED(m.status) && WTERMSIG(m.status) == SIGKILL);
	assert_true(rsup_pid_gone(pid));
	rsup_send(&s, PM_MSG_FINISH, 0, -1, -1, 0, 0, NULL);
	assert_int_equal(rsup_exit_code(&s), 0);
}

/* A command that ends at SIGTERM; a hung STOP without a heartbeat file
 * stops without a stack; a STOP with nothing running is answered with
 * the last status; ABORT for this rank says why and ends with its code. */
static void test_stop_term_then_abort(void **state)
{
	struct rsup_cfg c = { 0 };
	struct pm_msg m;
	pid_t pid;
	(void)state;

	pid = rsup_start_gen0(&s, &c, RSUP_SH("exec sleep 1000"));
	rsup_send(&s, PM_MSG_STOP, 0, -1, -1, 0, PM_FLAG_HUNG, NULL);
	assert_true(rsup_expect(&s, PM_MSG_RANK_STOPPED, &m));
	assert_true(WIFSIGNALED(m.status) && WTERMSIG(m.status) == SIGTERM);
	assert_true(rsup_pid_gone(pid));
	rsup_send(&s, PM_MSG_STOP, 0, -1, -1, 0, 0, NULL);
	assert_true(rsup_recv(&s, &m));
	assert_int_equal(m.type, PM_MSG_RANK_STOPPED);
	assert_true(WIFSIGNALED(m.status) && WTERMSIG(m.status) == SIGTERM);
	rsup_send(&s, PM_MSG_PRINT, 0, -1, -1, 0, 0, "procmgr: a line from procmgrd");
	assert_true(rsup_err_has(&s, "procmgr: a line from procmgrd\n"));
	rsup_send(&s, PM_MSG_ABORT, 0, 0, -1, 4, 0, "procmgr: rank 0 failed: why");
	assert_int_equal(rsup_exit_code(&s), 4);
	assert_non_null(strstr(s.errtext, "procmgr: rank 0 failed: why\n"));
}

/* ABORT blaming another rank: the running command is stopped, this rank
 * ends 0 and does not repeat the other's reason. */
static void test_abort_blaming_another(void **state)
{
	struct rsup_cfg c = { .rank = 2 };
	pid_t pid;
	(void)state;

	pid = rsup_start_gen0(&s, &c, RSUP_SH("exec sleep 1000"));
	rsup_send(&s, PM_MSG_ABORT, 0, 3, -1, 9, PM_FLAG_BLAME, "procmgr: rank 3 failed");
	assert_int_equal(rsup_exit_code(&s), 0);
	assert_true(rsup_pid_gone(pid));
	assert_null(strstr(s.errtext, "rank 3 failed"));
}

static void test_link_lost_ends_command(void **state)
{
	struct rsup_cfg c = { 0 };
	pid_t pid;
	(void)state;

	pid = rsup_start_gen0(&s, &c, RSUP_SH("exec sleep 1000"));
	rsup_close_link(&s);
	assert_int_equal(rsup_exit_code(&s), 1);
	assert_true(rsup_pid_gone(pid));
	assert_non_null(strstr(s.errtext, "procmgr: rank 0 on n0 lost its node's procmgrd; ending"));
}

/* procmgrd and the supervisor watch each other: PINGs answered keep it
 * up; a procmgrd that goes silent ends the command and the supervisor. */
static void test_peer_liveness(void **state)
{
	struct rsup_cfg c = { .peer_timeout = "300" };
	pid_t pid;
	(void)state;

	pid = rsup_start_gen0(&s, &c, RSUP_SH("exec sleep 1000"));
	/* Three timeouts' worth of PINGs, answered: still running. */
	assert_true(rsup_await_pings(&s, 9));
	assert_int_equal(kill(pid, 0), 0);
	s.mute = true;
	assert_int_equal(rsup_exit_code(&s), 1);
	assert_true(rsup_pid_gone(pid));
	assert_non_null(strstr(s.errtext, "its node's procmgrd stopped answering (no heartbeat "
				      "for 0.3 s); ending"));
}

/* scancel: the command gets SIGTERM, procmgrd a cancel, and the
 * supervisor ends as killed by it would (128 + 15). */
static void test_sigterm_is_a_cancel(void **state)
{
	struct rsup_cfg c = { 0 };
	struct pm_msg m;
	pid_t pid;
	(void)state;

	pid = rsup_start_gen0(&s, &c, RSUP_SH("exec sleep 1000"));
	assert_int_equal(kill(s.pid, SIGTERM), 0);
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(m.status, SIGTERM);
	assert_true(m.count & PM_FLAG_CANCEL);
	assert_int_equal(rsup_exit_code(&s), 128 + SIGTERM);
	assert_true(rsup_pid_gone(pid));
}

/* srun --signal=USR1: for the command. */
static void test_signal_forwarded(void **state)
{
	struct rsup_cfg c = { 0 };
	struct pm_msg m;
	(void)state;

	rsup_start_gen0(&s, &c, RSUP_SH("trap 'echo got-usr1; exit 7' USR1; echo up; sleep 1000 & wait"));
	assert_true(rsup_out_has(&s, "up\n"));
	assert_int_equal(kill(s.pid, SIGUSR1), 0);
	assert_true(rsup_out_has(&s, "got-usr1\n"));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(WEXITSTATUS(m.status), 7);
	rsup_send(&s, PM_MSG_FINISH, 0, -1, -1, 0, 0, NULL);
	assert_int_equal(rsup_exit_code(&s), 0);
}

/* A command that cannot run: said, and flagged as such (no restart would
 * help); the exit as the shell's 127. */
static void test_exec_failure(void **state)
{
	struct rsup_cfg c = { 0 };
	struct pm_msg m;
	(void)state;

	rsup_exec(&s, &c, (char *const[]){ "/nonexistent/pm-cmd", "x", NULL });
	rsup_hello(&s, 0);
	rsup_send(&s, PM_MSG_START, 0, -1, -1, 0, 0, NULL);
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_true(m.count & PM_FLAG_EXEC);
	assert_int_equal(WEXITSTATUS(m.status), 127);
	assert_true(rsup_err_has(&s, "procmgr: rank 0: cannot run /nonexistent/pm-cmd: No such "
				     "file or directory"));
	rsup_send(&s, PM_MSG_FINISH, 0, -1, -1, 0, 0, NULL);
	assert_int_equal(rsup_exit_code(&s), 0);
}

/* A process the command left outside its group (setsid) comes back to
 * the supervisor, its subreaper, and goes with the generation. */
static void test_strays_end_with_the_generation(void **state)
{
	struct rsup_cfg c = { 0 };
	struct pm_msg m;
	char *nl, cmd[512];
	pid_t stray;
	(void)state;

	/* The command ends once the stray has left its group (a fifo). */
	snprintf(cmd, sizeof(cmd), "mkfifo %s/f; setsid sh -c 'echo $$ > %s/f; exec sleep 1000' & "
		 "read p < %s/f; echo \"stray $p\"; exit 0", s.dir, s.dir, s.dir);
	rsup_start_gen0(&s, &c, RSUP_SH(cmd));
	assert_true(rsup_out_has(&s, "stray "));
	assert_true(rsup_expect(&s, PM_MSG_RANK_EXIT, &m));
	assert_int_equal(m.status, 0);
	nl = strstr(s.outtext, "stray ");
	stray = (pid_t)atoi(nl + 6);
	assert_true(stray > 1);
	assert_true(rsup_pid_gone(stray));
	rsup_send(&s, PM_MSG_FINISH, 0, -1, -1, 0, 0, NULL);
	assert_int_equal(rsup_exit_code(&s), 0);
}

/* Started outside a step, or with a broken environment: refused with
 * what is wrong, nothing connected. */
static void refused(const struct rsup_cfg *c, int code, const char *why)
{
	struct rsup r;

	rsup_init(&r);
	rsup_exec(&r, c, RSUP_SH("exit 0"));
	assert_int_equal(rsup_exit_code(&r), code);
	assert_true(rsup_err_has(&r, why));
	assert_int_equal(r.fd, -1);
	rsup_free(&r);
}

static void test_refusals(void **state)
{
	(void)state;
	refused(&(struct rsup_cfg){ .no_argv0 = true }, 2,
		"procmgr-rank: PROCMGR_ARGV0 is not set: procmgr-rank runs inside a procmgr step");
	refused(&(struct rsup_cfg){ .no_sock = true }, 1,
		"procmgr: rank 0: PROCMGR_SOCK is not set: procmgr-rank runs inside a procmgr "
		"step only");
	refused(&(struct rsup_cfg){ .opts = "grace=soon" }, 1, "PROCMGR_STEP_OPTIONS");
	refused(&(struct rsup_cfg){ .peer_timeout = "soon" }, 1,
		"PROCMGR_PEER_TIMEOUT_MS is not a number of milliseconds");
	refused(&(struct rsup_cfg){ .no_listen = true, .rank = 3 }, 1,
		"procmgr: rank 3: cannot reach procmgrd at /tmp/rsup.");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_exit_reported_with_why, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_generations_env_and_error_file, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_stop_after_grace, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_stop_term_then_abort, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_abort_blaming_another, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_link_lost_ends_command, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_peer_liveness, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_sigterm_is_a_cancel, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_signal_forwarded, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_exec_failure, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_strays_end_with_the_generation, rs_setup, rs_teardown),
		cmocka_unit_test_setup_teardown(test_refusals, rs_setup, rs_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
