#!/bin/sh
# The procmgr module's type annotations hold: Debian's mypy (python3-mypy,
# which tests/install-deps installs) on the package with python/pyproject.toml's
# [tool.mypy] (a function without annotations is refused), then on a
# program that uses the public API as a user's would (tests/python/typed_use.py,
# strict), finding procmgr as an installed package is found: by its py.typed.
src=${top_srcdir:-.}
command -v mypy >/dev/null 2>&1 ||
	{ echo "SKIP: no mypy (apt-get install --no-install-recommends mypy; tests/install-deps installs it)"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# The cache in a directory of its own: nothing written into the source tree.
mypy --version
mypy --cache-dir "$tmp/cache" --config-file "$src/python/pyproject.toml" "$src/python/procmgr" ||
	{ echo "FAIL: mypy on python/procmgr"; exit 1; }
MYPYPATH=$src/python mypy --cache-dir "$tmp/cache" --strict --config-file "$src/python/pyproject.toml" \
	"$src/tests/python/typed_use.py" || { echo "FAIL: mypy on a program using procmgr's API"; exit 1; }
