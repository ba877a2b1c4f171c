/* tests/unit/clitest.h: the procmgr command run in-process, its tools faked. */
#include "clitest.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

void (*cli_before)(void);
void (*cli_after)(void);

static char dir[64], oldpath[4096];
static int capture_fd = -1;

const char *cli_dir(void)
{
	return dir;
}

static void script(const char *name, const char *body)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s", body);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, 0700), 0);
}

void cli_tools(void)
{
	char body[1024], path[4200];

	snprintf(dir, sizeof(dir), "/tmp/pm-test-cli-XXXXXX");
	assert_non_null(mkdtemp(dir));
	/* The answer's file is named by the whole command line, so that a
	 * command asking for another step than the one meant gets nothing. */
	snprintf(body, sizeof(body),
		 "k=${0##*/}; for a; do k=\"${k}_$a\"; done\n"
		 "if [ -e \"%s/$k\" ]; then /bin/cat \"%s/$k\"; exit $(/bin/cat \"%s/$k.rc\"); fi\n"
		 "echo \"slurm_load_jobs error: Invalid job id specified\"; exit 1\n", dir, dir,
		 dir);
	script("scontrol", body);
	script("squeue", body);
	if (!oldpath[0]) /* a failed test did not put it back */
		snprintf(oldpath, sizeof(oldpath), "%s", getenv("PATH") ? getenv("PATH") : "");
	snprintf(path, sizeof(path), "%s:/usr/bin:/bin", dir);
	setenv("PATH", path, 1);
}

void cli_tools_gone(void)
{
	char cmd[128];

	setenv("PATH", oldpath, 1);
	snprintf(cmd, sizeof(cmd), "/bin/rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

void cli_answer(const char *cmd, const char *text, int rc)
{
	char path[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, cmd);
	for (p = path + strlen(dir) + 1; *p; p++)
		if (*p == ' ')
			*p = '_';
	if (!text) {
		unlink(path);
		return;
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	strcat(path, ".rc");
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%d\n", rc);
	assert_int_equal(fclose(f), 0);
}

void cli_fake_gdb(void)
{
	/* A second thread that differs between ranks 0 and 1 (as gloo's
	 * send and receive threads do): only --native shows it. */
	script("gdb", "while [ $# -gt 0 ] && [ \"$1\" != -p ]; do shift; done\n"
		      "if [ \"$2\" = 4101 ]; then\n"
		      "  echo 'Thread 2 (LWP 2):'\n"
		      "  echo '#0  0x0000 in waitSend () from libgloo.so'\n"
		      "else\n"
		      "  echo 'Thread 2 (LWP 2):'\n"
		      "  echo '#0  0x0000 in waitRecv () from libgloo.so'\n"
		      "fi\n"
		      "if [ \"$2\" = 4103 ]; then\n"
		      "  echo 'Thread 1 (LWP 1):'\n"
		      "  echo '#0  0x0000 in barrier_wait () at sync.c:9'\n"
		      "  printf '#1  0x0000 in main () at train.c:7 \\033[31m\\n'\n"
		      "else\n"
		      "  echo 'Thread 1 (LWP 1):'\n"
		      "  echo '#0  0x0000 in allreduce () at nccl.c:42'\n"
		      "  echo '#1  0x0000 in main () at train.c:7'\n"
		      "fi\n");
}

/* A file's whole text into buf (NUL-terminated, cut to fit). */
static void read_all(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
}

const char *cli_out_now(void)
{
	static char buf[65536];

	if (capture_fd < 0)
		return "";
	read_all(capture_fd, buf, sizeof(buf));
	return buf;
}

/* procmgrd's lines (an in-process root logs on stderr) apart from the
 * command's. */
static void split_log(struct cli_out *o, const char *all)
{
	const char *p = all;

	o->err[0] = o->log[0] = '\0';
	while (*p) {
		size_t n = strcspn(p, "\n") + (p[strcspn(p, "\n")] ? 1 : 0);
		char *to = strncmp(p, "procmgrd[", 9) ? o->err : o->log;
		size_t have = strlen(to), cap = sizeof(o->err);

		if (have + n < cap) {
			memcpy(to + have, p, n);
			to[have + n] = '\0';
		}
		p += n;
	}
}

void cli_run(struct cli_out *o, int (*fn)(int, char **), const char *arg0, ...)
{
	char *argv[32], tmpl[2][64], all[32768];
	int fds[2], saved[2], i, argc = 0;
	va_list ap;

	argv[argc++] = (char *)arg0;
	va_start(ap, arg0);
	while (argc < 31 && (argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	for (i = 0; i < 2; i++) {
		snprintf(tmpl[i], sizeof(tmpl[i]), "/tmp/pm-test-cli-out-XXXXXX");
		fds[i] = mkstemp(tmpl[i]);
		assert_true(fds[i] >= 0);
		unlink(tmpl[i]);
	}
	fflush(stdout);
	fflush(stderr);
	saved[0] = dup(1);
	saved[1] = dup(2);
	assert_true(dup2(fds[0], 1) == 1 && dup2(fds[1], 2) == 2);
	capture_fd = fds[0];
	if (cli_before)
		cli_before();
	o->rc = fn(argc, argv);
	fflush(stdout);
	if (cli_after)
		cli_after();
	capture_fd = -1;
	fflush(stdout);
	fflush(stderr);
	assert_true(dup2(saved[0], 1) == 1 && dup2(saved[1], 2) == 2);
	close(saved[0]);
	close(saved[1]);
	read_all(fds[0], o->out, sizeof(o->out));
	read_all(fds[1], all, sizeof(all));
	split_log(o, all);
	close(fds[0]);
	close(fds[1]);
}

void cli_has(const char *text, const char *what)
{
	if (!strstr(text, what))
		fail_msg("'%s' not in '%s'", what, text);
}
