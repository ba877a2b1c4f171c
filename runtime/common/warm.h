/* Warm generations: the text protocol between procmgr-rank and a program
 * started ahead of time (a standby), and the --procmgr-warm mode. Pure: no
 * I/O. One line per message, '\n'-terminated, at most PM_WARM_LINE_MAX
 * bytes with the newline:
 *
 *   program -> supervisor   ready
 *   fork server -> supervisor  pid PID   (python: the generation's process,
 *                                          forked, now the supervisor's child)
 *   supervisor -> program   env NAME=VALUE      (zero or more)
 *                           start GEN           (the generation begins)
 *
 * over the descriptor named by PROCMGR_WARM_FD. A line that is not one of
 * these is refused with a reason (the supervisor says it and starts the
 * next generation cold). */
#ifndef PM_WARM_H
#define PM_WARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PM_WARM_LINE_MAX 4096
#define PM_WARM_NAME_MAX 128
#define PM_WARM_MODS_MAX 512

enum pm_warm_mode {
	PM_WARM_OFF = 0,
	PM_WARM_CONTRACT, /* "on": the program says ready itself */
	PM_WARM_PYTHON,   /* "python:MOD,...": procmgr's fork server */
};

enum pm_warm_kind { PM_WARM_READY, PM_WARM_ENV, PM_WARM_START, PM_WARM_PID };

struct pm_warm_line {
	enum pm_warm_kind kind;
	char name[PM_WARM_NAME_MAX]; /* ENV */
	const char *value;           /* ENV: into the parsed line */
	uint32_t gen;                /* START */
	int pid;                     /* PID: > 1 */
};

/* One line without its '\n' (len bytes; it is modified: the value is cut
 * out in place). 0, or -1 with why. */
int pm_warm_parse(char *line, size_t len, struct pm_warm_line *out, char *err, size_t errlen);
/* "env NAME=VALUE\n" / "start GEN\n" / "ready\n" into buf; -1 with why
 * (a bad name, a newline in the value, too long). */
int pm_warm_format_env(char *buf, size_t len, const char *name, const char *value, char *err,
		       size_t errlen);
int pm_warm_format_start(char *buf, size_t len, uint32_t gen);
int pm_warm_format_ready(char *buf, size_t len);

/* Bytes in, whole lines out: the reader's side of the stream. */
struct pm_warm_buf {
	char data[PM_WARM_LINE_MAX];
	size_t len;
};
/* Appends n bytes; -1 (with why) if a line grows past PM_WARM_LINE_MAX or
 * has a NUL byte. */
int pm_warm_buf_add(struct pm_warm_buf *b, const char *p, size_t n, char *err, size_t errlen);
/* The next whole line into line (NUL-terminated, no '\n'): its length, or
 * -1 if no whole line is there yet. */
int pm_warm_buf_line(struct pm_warm_buf *b, char *line, size_t len);

/* A fork server that refuses to fork (a thread, or CUDA, before the
 * fork) says why on stderr and exits with this: no new one is tried. */
#define PM_WARM_REFUSED_EXIT 78

/* --procmgr-warm's value: off, on, or python:MOD[,MOD...] (dotted Python
 * module names). mods gets the list for the python form ("" otherwise). */
int pm_warm_mode_parse(const char *s, enum pm_warm_mode *mode, char *mods, size_t modslen);

/* The fork-server mode runs the command's interpreter on procmgr's
 * server: true if argv[0] is a python interpreter (python, python3,
 * python3.11, a path ending so). */
bool pm_warm_is_python(const char *argv0);

/* The interpreter options, before the script, that the server's
 * interpreter takes too: those that decide where modules are found
 * (-E, -s, -I, -P) or how output goes (-u, -B), as a cold start has them.
 * The server is told them again (after --) and refuses any other. */
bool pm_warm_py_server_opt(const char *arg);

/* The fork server's command line for the rank's python command argv:
 * argv[0], the leading options above, server (the path of procmgr's
 * standby.py), mods, "--", and argv[1...], NULL-terminated into out (max
 * entries with the NULL; the strings are argv's and the arguments', not
 * copied). The count, or -1 if it does not fit.
 *
 * The server runs as a file, never `python -c`: python puts a file's own
 * directory first on sys.path, -c the working directory, from which
 * modules would be imported before any line of procmgr's could drop it
 * (Python 3.13 imports linecache for -c's source), where another user
 * may plant them and `python script.py` never looks. */
int pm_warm_python_argv(char *const *argv, const char *mods, const char *server, char **out,
			size_t max);

#endif
