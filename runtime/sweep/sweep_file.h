/* The trials file of a sweep: one trial per line. Pure (pm_sweep_parse);
 * pm_sweep_read is the one function that touches the file system.
 *
 * Grammar, line by line (a line ends at '\n'; a '\r' before it is dropped):
 *   - blank (only spaces and tabs), or first non-blank character '#':
 *     not a trial;
 *   - otherwise one trial:  [ '[' PREFIX ']' ] COMMAND
 *     leading blanks are skipped. A prefix starts with '[' directly followed
 *     by a non-blank character: "[ -f x ] && run" is the shell's test
 *     command, not a prefix. PREFIX is words separated by blanks, no
 *     quoting: at most one bare NAME, and key=value words; the one key is
 *     ranks=N (N decimal, 1..the step's ranks). COMMAND is the rest of the
 *     line after the blanks that follow ']', unchanged: it runs as
 *     `sh -c COMMAND`, so the shell does its own quoting.
 *   - NAME: 1..PM_SWEEP_NAME_MAX characters of [A-Za-z0-9._-], not starting
 *     with '.' or '-': it becomes part of file names (output, results), so no
 *     '/', no "..", no hidden files, nothing an option parser takes for a
 *     flag. The default name is the line number ("7"); names, given or
 *     default, are unique.
 *   - COMMAND: 1..PM_SWEEP_CMD_MAX bytes (it travels to a node in one
 *     message), no NUL byte, not starting with '#' (sh would run nothing).
 * Every refusal says which line, what is wrong and what is allowed. */
#ifndef PM_SWEEP_FILE_H
#define PM_SWEEP_FILE_H

#include <stddef.h>

#define PM_SWEEP_NAME_MAX 64
#define PM_SWEEP_CMD_MAX 4096
#define PM_SWEEP_TRIALS_MAX 1000000
/* pm_sweep_read refuses larger files before reading them. */
#define PM_SWEEP_FILE_MAX (64u << 20)

struct pm_trial {
	char name[PM_SWEEP_NAME_MAX + 1];
	int ranks;
	int line;        /* 1-based line in the file */
	const char *cmd; /* NUL-terminated, inside pm_sweep.text */
};

struct pm_sweep {
	int n;
	struct pm_trial *trials;
	char *text; /* the parsed copy the commands point into */
};

/* Parses len bytes of buf (need not be NUL-terminated). what names the
 * input in messages (the file's name). A trial without ranks= gets
 * default_ranks; step_ranks is the most any trial may ask for. On success
 * fills *out (free with pm_sweep_free) and returns 0; on refusal returns -1
 * with one line in err and *out empty. */
int pm_sweep_parse(const char *buf, size_t len, const char *what, int default_ranks,
		   int step_ranks, struct pm_sweep *out, char *err, size_t errlen);
/* Reads the file at path and parses it; refuses what cannot be opened or
 * read, what is not a regular file, and files over PM_SWEEP_FILE_MAX. */
int pm_sweep_read(const char *path, int default_ranks, int step_ranks, struct pm_sweep *out,
		  char *err, size_t errlen);
void pm_sweep_free(struct pm_sweep *s);
/* 0 if name is a valid trial name, else -1 with the reason in err. */
int pm_sweep_name_check(const char *name, size_t len, char *err, size_t errlen);
/* A trial's command line that needs no shell: words of letters, digits and
 * _-./=:,+@% separated by blanks, the first without '='. Splits it into
 * buf (its copy, buflen bytes) and argv (at most max - 1 words, then
 * NULL): the word count, or 0 if the line needs sh -c (quotes, $, globs,
 * redirections, ';', an assignment, too many words) or is empty. A
 * builtin (exit 3) is no program: exec fails and sh -c runs it still. */
int pm_sweep_simple_argv(const char *cmd, char *buf, size_t buflen, char **argv, int max);

#endif
