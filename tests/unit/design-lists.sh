#!/bin/sh
# docs/design.md's lists of what procmgr's processes share agree with the
# code: procmgrd's arguments with contract.c's flag table (both ways), the
# environment names with contract.h's PM_ENV_* (both ways), and the task
# environment procmgr-rank reads or sets with runtime/rank/*.c.
src=${top_srcdir:-.}
doc=$src/docs/design.md
fail=0
# One bullet of "Contracts between processes": from its "- **TITLE" line to
# the next bullet or section.
bullet() {
	awk -v t="$1" 'index($0, "- **" t) == 1 { on = 1; print; next }
		on && (/^- \*\*/ || /^#/) { exit } on { print }' "$doc"
}
args=$(bullet "procmgrd's arguments")
[ -n "$args" ] || { echo "FAIL: no \"procmgrd's arguments\" bullet in $doc"; exit 1; }
flags=$(sed -n 's/^	{ "\([a-z-]*\)", \(UINT\|INT\|STR\|PID\), F(.*/\1/p' "$src/runtime/common/contract.c")
[ -n "$flags" ] || { echo "FAIL: no flag table in contract.c"; exit 1; }
for f in $flags; do
	echo "$args" | grep -q -- "--$f\b" || { echo "FAIL: procmgrd's --$f not in design.md"; fail=1; }
done
for f in $(echo "$args" | grep -o -- '--[a-z][a-z-]*' | sort -u); do
	echo "$flags" | grep -qx -- "${f#--}" ||
		{ echo "FAIL: design.md lists $f, which procmgrd does not take"; fail=1; }
done
# PM_ENV_NAME "VALUE" in contract.h.
envs=$(sed -n 's/^#define \(PM_ENV_[A-Z0-9_]*\) "\([A-Z0-9_]*\)".*/\1=\2/p' "$src/runtime/common/contract.h")
[ -n "$envs" ] || { echo "FAIL: no PM_ENV_ names in contract.h"; exit 1; }
for e in $envs; do
	grep -q "\`${e#*=}\`" "$doc" || { echo "FAIL: ${e#*=} (${e%%=*}) not in design.md"; fail=1; }
done
for v in $(grep -o '[A-Z_]*PROCMGR_[A-Z0-9_]*' "$doc" | sort -u); do
	echo "$envs" | grep -q "=$v\$" ||
		{ echo "FAIL: design.md names $v, which contract.h does not define"; fail=1; }
done
task=$(bullet "The task environment")
[ -n "$task" ] || { echo "FAIL: no \"The task environment\" bullet in $doc"; exit 1; }
for n in $(cat "$src"/runtime/rank/*.c | grep -o 'PM_ENV_[A-Z0-9_]*' | sort -u); do
	v=$(echo "$envs" | sed -n "s/^$n=//p")
	[ -n "$v" ] || { echo "FAIL: procmgr-rank uses $n, not in contract.h"; fail=1; continue; }
	echo "$task" | grep -q "\`$v\`" ||
		{ echo "FAIL: procmgr-rank uses $v; design.md's task environment omits it"; fail=1; }
done
[ $fail = 1 ] || echo "ok: $(echo $flags | wc -w) arguments, $(echo $envs | wc -w) environment names in design.md"
exit $fail
