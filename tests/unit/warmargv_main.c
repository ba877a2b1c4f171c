/* The fork server's command line as procmgr-rank builds it
 * (common/warm.c), for the Python module's tests
 * (tests/python/test_forkserver.py run it for real): each argument on
 * stdout, ended by a NUL.
 *
 *   pm-warmargv SERVER MODS COMMAND [ARG...] */
#include <stdio.h>
#include <string.h>

#include "common/warm.h"

int main(int argc, char **argv)
{
	char *out[256];
	int n, i;

	if (argc < 4) {
		fprintf(stderr, "usage: pm-warmargv SERVER MODS COMMAND [ARG...]\n");
		return 2;
	}
	n = pm_warm_python_argv(argv + 3, argv[2], argv[1], out, 256);
	if (n < 0) {
		fprintf(stderr, "pm-warmargv: the command line does not fit (at most 255)\n");
		return 1;
	}
	for (i = 0; i < n; i++)
		fwrite(out[i], 1, strlen(out[i]) + 1, stdout);
	return fflush(stdout) ? 1 : 0;
}
