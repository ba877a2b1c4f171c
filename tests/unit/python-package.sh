#!/bin/sh
# The procmgr module as a package: `pip install` of python/ into a fresh
# venv, offline (no index, no links, no pip.conf: pip may fetch nothing, not even setuptools;
# python/_build is the backend), from a copy of the source that the build
# must leave as it was (the .deb's copy under /usr/share/procmgr/python is
# read-only to its users); then the venv's python imports it, from the venv,
# with every module and py.typed, and a call works outside a step. Its
# version is configure.ac's. PYTHON3 (configure's) makes the venv.
py=${PYTHON3:-/usr/bin/python3}
[ -x "$py" ] || py=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
src=${top_srcdir:-.}
"$py" -c 'import ensurepip, venv' 2>/dev/null ||
	{ echo "SKIP: $py has no venv with pip (Debian: python3-venv)"; exit 77; }
ver=$(sed -n 's/^AC_INIT(\[procmgr\], \[\([^]]*\)\].*/\1/p' "$src/configure.ac")
pver=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$src/python/pyproject.toml")
[ -n "$ver" ] && [ "$ver" = "$pver" ] ||
	{ echo "FAIL: python/pyproject.toml's version '$pver', configure.ac's '$ver'"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cp -R "$src/python" "$tmp/src" && rm -rf "$tmp/src/_build/__pycache__" "$tmp/src/procmgr/__pycache__"
chmod -R a-w "$tmp/src"
# Python's own import cache of the build backend (_build/__pycache__,
# written by the interpreter wherever the source is writable: for root
# always, a-w or not; seen in the Debian 13 root) is no build output.
sums() { (cd "$tmp/src" && find . -name __pycache__ -prune -o -print | sort &&
	find . -name __pycache__ -prune -o -type f -print | sort | xargs cat | cksum); }
before=$(sums)
t0=$(date +%s)
"$py" -m venv "$tmp/v" || { echo "FAIL: $py -m venv"; exit 1; }
t1=$(date +%s)
env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null PIP_NO_INDEX=1 \
	PIP_DISABLE_PIP_VERSION_CHECK=1 "$tmp/v/bin/pip" install --no-cache-dir "$tmp/src" \
	>"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; echo "FAIL: pip install offline"; exit 1; }
echo "venv $((t1 - t0)) s, pip install $(($(date +%s) - t1)) s ($py)"
[ "$(sums)" = "$before" ] || { echo "FAIL: the build wrote into the source"; exit 1; }
chmod -R u+w "$tmp/src"
mods=$(cd "$src/python/procmgr" && ls *.py py.typed | tr '\n' ' ')
cd / && env -u PYTHONPATH -u PROCMGR_RESTART_COUNT -u TORCHELASTIC_RESTART_COUNT \
	-u PROCMGR_STATE_SOCK -u PROCMGR_HEARTBEAT "$tmp/v/bin/python" -I - "$tmp/v" "$ver" $mods <<'PY' || exit 1
import importlib.metadata, os, sys
import procmgr
venv, ver, files = sys.argv[1], sys.argv[2], sys.argv[3:]
here = os.path.dirname(procmgr.__file__)
assert here.startswith(venv + "/"), "procmgr imported from %s, not the venv" % here
missing = [f for f in files if not os.path.exists(os.path.join(here, f))]
assert not missing, "not installed: %s" % missing
assert importlib.metadata.version("procmgr") == ver, importlib.metadata.version("procmgr")
assert procmgr.restart_count() == 0 and not procmgr.under_procmgr()
assert procmgr.save("x", b"1") is None and procmgr.load("x") is None  # outside a step
print("ok: procmgr %s from %s, %d files" % (ver, here, len(files)))
PY
