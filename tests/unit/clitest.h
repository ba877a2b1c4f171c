/* The procmgr command's unit tests (test_cli_*.c): a command (a cmd_*.c
 * entry point) run in-process with its standard output and error
 * captured, and the programs it asks (Slurm's scontrol and squeue, gdb on
 * a root) replaced on PATH by a script that prints what the test wrote
 * for exactly those arguments. */
#ifndef PM_TEST_CLITEST_H
#define PM_TEST_CLITEST_H

struct cli_out {
	int rc;
	char out[65536];
	char err[16384]; /* the command's own lines ("procmgr ...") */
	char log[16384]; /* procmgrd's log lines of an in-process root ("procmgrd[...") */
};

/* Called around each cli_run (NULL by default): a test serving a root from
 * a thread starts it before and stops it after the command. */
extern void (*cli_before)(void);
extern void (*cli_after)(void);

/* A fresh directory of fake tools first on PATH (scontrol, squeue, gdb);
 * cli_tools_gone removes it and puts PATH back. */
void cli_tools(void);
void cli_tools_gone(void);
const char *cli_dir(void);
/* What the fake tool prints for the command line cmd ("scontrol show step
 * -o 77.3") and its exit status; any other line prints "Invalid job id
 * specified" and exits 1. text NULL: no answer any more. */
void cli_answer(const char *cmd, const char *text, int rc);
/* A fake gdb: a stack per pid (pid 4103's differs from the others'). */
void cli_fake_gdb(void);

/* fn(argv) with the NULL-terminated arguments after arg0, captured. */
void cli_run(struct cli_out *o, int (*fn)(int, char **), const char *arg0, ...);
/* What the running command has written on stdout so far (another thread's
 * view, for a root that reacts to it). */
const char *cli_out_now(void);
/* cmocka's failure unless what is in text. */
void cli_has(const char *text, const char *what);

#endif
