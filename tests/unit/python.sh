#!/bin/sh
# The procmgr Python module's unit tests (standard library unittest), run by
# the Python the module is installed for (configure's PYTHON3).
py=${PYTHON3:-/usr/bin/python3}
[ -x "$py" ] || py=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
src=${top_srcdir:-.}
# procmgrd's own state socket code, served (tests/unit/statesrv_main.c).
PM_TEST_STATESRV=${PM_TEST_STATESRV:-$(pwd)/tests/unit/pm-statesrv} export PM_TEST_STATESRV
# The fork server's command line as procmgr-rank builds it (tests/unit/warmargv_main.c).
PM_TEST_WARMARGV=${PM_TEST_WARMARGV:-$(pwd)/tests/unit/pm-warmargv} export PM_TEST_WARMARGV
PYTHONPATH="$src/python" exec "$py" -m unittest discover -s "$src/tests/python" -p 'test_*.py' -v
