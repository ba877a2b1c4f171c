/* procmgr --version: the package's version (configure.ac's AC_INIT), the
 * one the plugin logs in slurmd, to tell which build a node runs. */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "cmd.h"

int pm_cmd_version(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "-h") && strcmp(argv[1], "--help")) {
		fprintf(stderr, "usage: procmgr version\n");
		return 2;
	}
	if (argc > 1) {
		printf("usage: procmgr version (or procmgr --version)\n"
		       "  prints procmgr's version\n");
		return 0;
	}
	printf("procmgr %s\n", PACKAGE_VERSION);
	return 0;
}
