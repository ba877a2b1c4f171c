#!/bin/sh
# The procmgr command's refusals of bad input that need no step: clear,
# exit 2, nothing written.
b=${top_builddir:-.}
pm=$b/procmgr
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail=0
printf '{"time":1796282925.2,"step":"1.0","event":"start","gen":0}\n{"time":1796282926.2,"step":"1.0","event":"finished","gen":0}\n' >"$t/ev.jsonl"

# --svg with --html: refused, not one of them written silently.
"$pm" timeline --events "$t/ev.jsonl" --svg "$t/a.svg" --html "$t/a.html" 2>"$t/err"
got=$?
if [ "$got" != 2 ] || ! grep -qF -- "--svg and --html: one picture at a time" "$t/err" ||
   [ -e "$t/a.svg" ] || [ -e "$t/a.html" ]; then
	echo "FAIL timeline --svg --html: exit $got"; cat "$t/err"; ls "$t"; fail=1
else
	echo "ok   timeline --svg --html refused, nothing written"
fi
exit $fail
