/* runtime/io/auth.c against a real munged: a private one started here (its
 * own key, socket and files in a temporary directory; stopped with
 * munged --stop, which returns once it is gone). What the control tree's
 * handshake relies on: a credential round-trips with its payload and the
 * encoder's uid; one of another user, for another payload, replayed,
 * garbled, carrying a NUL or too long is refused with the reason; a socket
 * with no munged behind it is said. Needs root and munged; skipped
 * otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/auth.h"

#define OTHER_UID 65534

static char dir[64], sock[128];
static pid_t munged_pid;

/* munged, run and waited for: it returns once the daemon listens. */
static int run(char *const argv[])
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static int group_setup(void **state)
{
	char key[128], log[128], pidf[128], seed[128], buf[1024];
	char sock_arg[160], key_arg[160], log_arg[160], pid_arg[160], seed_arg[160];
	char *argv[] = { "munged", "--force", sock_arg, key_arg, log_arg, pid_arg, seed_arg,
			 NULL };
	FILE *f;
	size_t i;
	(void)state;

	if (geteuid() != 0)
		return 0;
	snprintf(dir, sizeof(dir), "/tmp/pm-auth.XXXXXX");
	if (!mkdtemp(dir) || chmod(dir, 0755))
		return -1;
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(key, sizeof(key), "%s/key", dir);
	snprintf(log, sizeof(log), "%s/log", dir);
	snprintf(pidf, sizeof(pidf), "%s/pid", dir);
	snprintf(seed, sizeof(seed), "%s/seed", dir);
	f = fopen(key, "w");
	if (!f)
		return -1;
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(rand() ^ (int)i);
	fwrite(buf, 1, sizeof(buf), f);
	fclose(f);
	chmod(key, 0400);
	snprintf(sock_arg, sizeof(sock_arg), "--socket=%s", sock);
	snprintf(key_arg, sizeof(key_arg), "--key-file=%s", key);
	snprintf(log_arg, sizeof(log_arg), "--log-file=%s", log);
	snprintf(pid_arg, sizeof(pid_arg), "--pid-file=%s", pidf);
	snprintf(seed_arg, sizeof(seed_arg), "--seed-file=%s", seed);
	if (run(argv) != 0) {
		sock[0] = '\0'; /* no munged here: the tests skip */
		return 0;
	}
	f = fopen(pidf, "r");
	if (!f || fscanf(f, "%d", &munged_pid) != 1)
		munged_pid = 0;
	if (f)
		fclose(f);
	return 0;
}

static int group_teardown(void **state)
{
	char sock_arg[160], cmd[128];
	char *argv[] = { "munged", "--stop", sock_arg, NULL };
	int rc = 0;
	(void)state;

	if (!dir[0])
		return 0;
	if (sock[0]) {
		snprintf(sock_arg, sizeof(sock_arg), "--socket=%s", sock);
		if (run(argv) != 0)
			rc = -1;
		/* Gone, not just told to go. */
		if (munged_pid > 0 && (kill(munged_pid, 0) == 0 || errno != ESRCH))
			rc = -1;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		rc = -1;
	return rc;
}

static int setup(void **state)
{
	(void)state;
	if (!sock[0])
		skip();
	return 0;
}

static void test_round_trip(void **state)
{
	char *cred = NULL, err[256] = "", got[128];
	uid_t uid = 12345;
	(void)state;

	assert_int_equal(pm_auth_encode(sock, "job=7 step=0 node=1 nonce=abc", &cred, err,
					sizeof(err)), 0);
	assert_non_null(cred);
	assert_int_equal(pm_auth_decode_uid(sock, cred, &uid, got, sizeof(got), err,
					    sizeof(err)), 0);
	assert_int_equal(uid, 0);
	assert_string_equal(got, "job=7 step=0 node=1 nonce=abc");
	/* munged remembers it: the same credential twice is a replay. */
	assert_int_equal(pm_auth_decode(sock, cred, 0, got, sizeof(got), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "invalid munge credential: "));
	assert_non_null(strstr(err, "eplayed"));
	free(cred);

	/* verify: the payload exactly, from the user. */
	assert_int_equal(pm_auth_encode(sock, "nonce=1", &cred, err, sizeof(err)), 0);
	assert_int_equal(pm_auth_verify(sock, cred, 0, "nonce=1", err, sizeof(err)), 0);
	free(cred);
	assert_int_equal(pm_auth_encode(sock, "nonce=1", &cred, err, sizeof(err)), 0);
	assert_int_equal(pm_auth_verify(sock, cred, 0, "nonce=2", err, sizeof(err)), -1);
	assert_string_equal(err, "credential for another job, step, link or nonce ('nonce=1')");
	free(cred);
}

/* A credential made by another user (a forked child as nobody). */
static void test_other_user(void **state)
{
	char cred[4096] = "", err[256] = "", got[64];
	int p[2], st;
	ssize_t n;
	size_t off = 0;
	pid_t pid;
	(void)state;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *c = NULL, e[256];
		close(p[0]);
		if (setresgid(OTHER_UID, OTHER_UID, OTHER_UID) ||
		    setresuid(OTHER_UID, OTHER_UID, OTHER_UID) ||
		    pm_auth_encode(sock, "hello", &c, e, sizeof(e)))
			_exit(1);
		_exit(write(p[1], c, strlen(c)) == (ssize_t)strlen(c) ? 0 : 1);
	}
	close(p[1]);
	while ((n = read(p[0], cred + off, sizeof(cred) - 1 - off)) > 0)
		off += (size_t)n;
	close(p[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cred[off] = '\0';
	assert_int_equal(pm_auth_decode(sock, cred, 0, got, sizeof(got), err, sizeof(err)), -1);
	assert_string_equal(err, "credential of uid 65534, not the job's user (uid 0)");
}

/* What a credential carries must fit and be text. */
static void test_payload_refused(void **state)
{
	char *cred = NULL, err[256] = "", got[8];
	uid_t uid;
	(void)state;

	assert_int_equal(pm_auth_encode(sock, "twelve chars", &cred, err, sizeof(err)), 0);
	assert_int_equal(pm_auth_decode_uid(sock, cred, &uid, got, sizeof(got), err,
					    sizeof(err)), -1);
	assert_string_equal(err, "credential carries no procmgr handshake");
	free(cred);
	assert_int_equal(pm_auth_decode_uid(sock, "MUNGE:garbage:", &uid, got, sizeof(got), err,
					    sizeof(err)), -1);
	assert_non_null(strstr(err, "invalid munge credential: "));
}

static void test_no_munged(void **state)
{
	char *cred = NULL, err[256] = "", path[160];
	(void)state;

	snprintf(path, sizeof(path), "%s/none", dir);
	assert_int_equal(pm_auth_encode(path, "x", &cred, err, sizeof(err)), -1);
	assert_null(cred);
	assert_non_null(strstr(err, "munge_encode: "));
	assert_int_equal(pm_auth_verify(path, "MUNGE:x:", 0, "x", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "invalid munge credential: "));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_round_trip, setup),
		cmocka_unit_test_setup(test_other_user, setup),
		cmocka_unit_test_setup(test_payload_refused, setup),
		cmocka_unit_test_setup(test_no_munged, setup),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
