#!/bin/sh
# procmgr check-config: the plugin's own parser judges procmgr's line, read
# as Slurm reads plugstack.conf (includes, comments, other plugins' lines).
b=${top_builddir:-.}
pm=$b/procmgr
so=$b/.libs/procmgr.so
rt=$b/procmgrd
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail=0
# expect RC LABEL [WORD...]: the last run's exit status and words of its stderr.
expect() {
	rc=$1 label=$2; shift 2
	if [ "$got" != "$rc" ]; then
		echo "FAIL $label: exit $got, expected $rc"; cat "$t/err"; fail=1; return
	fi
	for w; do
		grep -qF -- "$w" "$t/err" || { echo "FAIL $label: no '$w' in:"; cat "$t/err"; fail=1; return; }
	done
	echo "ok   $label"
}
run() { "$pm" check-config "$@" >"$t/out" 2>"$t/err"; got=$?; }

# A good line, through an include, beside another plugin's line whose
# arguments are not procmgr's business.
mkdir "$t/conf.d"
echo "required $so runtime=$rt fanout=8 drain=no # comment" >"$t/conf.d/procmgr.conf"
printf 'optional /other/x.so colour=blue\ninclude conf.d/*.conf\n' >"$t/plugstack.conf"
run "$t/plugstack.conf"; expect 0 "good line through an include"
grep -qx ok "$t/out" || { echo "FAIL good line: no 'ok' line"; fail=1; }

# The same line on standard input.
"$pm" check-config - <"$t/conf.d/procmgr.conf" >"$t/out" 2>"$t/err"; got=$?
expect 0 "good line on stdin"

# Default file: slurm.conf's PlugStackConfig.
echo "PlugStackConfig=$t/plugstack.conf" >"$t/slurm.conf"
SLURM_CONF=$t/slurm.conf "$pm" check-config >"$t/out" 2>"$t/err"; got=$?
expect 0 "default: PlugStackConfig of \$SLURM_CONF"

# An unknown key: named with its file and line, and the keys allowed.
echo "required $so runtime=$rt colour=blue" >"$t/conf.d/procmgr.conf"
run "$t/plugstack.conf"; expect 1 "unknown key" "$t/conf.d/procmgr.conf:1:" "'colour'" "keys: runtime"

# A bad value: what is allowed.
echo "required $so runtime=$rt fanout=1" >"$t/bad"
run "$t/bad"; expect 1 "bad value" "'fanout'" "expected a whole number"

# The site cap the plugin enforces across keys.
echo "required $so runtime=$rt max_restarts=2 default_restart=always:5" >"$t/bad"
run "$t/bad"; expect 1 "default above the cap" "exceeds max_restarts"

# Files the line names.
echo "required $t/gone/procmgr.so runtime=$t/procmgrd" >"$t/bad"
run "$t/bad"; expect 1 "missing files" "$t/gone/procmgr.so" "runtime $t/procmgrd" "procmgr-rank"

# Lines Slurm would refuse, no procmgr line, two procmgr lines.
echo "requird $so" >"$t/bad"
run "$t/bad"; expect 1 "not required/optional" "'requird'"
echo "optional /other/x.so" >"$t/bad"
run "$t/bad"; expect 1 "no procmgr line" "no procmgr.so line"
printf 'required %s runtime=%s\nrequired %s runtime=%s\n' "$so" "$rt" "$so" "$rt" >"$t/bad"
run "$t/bad"; expect 1 "two procmgr lines" ":2: a second"
run "$t/nofile"; expect 1 "unreadable file" "$t/nofile" "No such file"
run -x; expect 2 "usage error"
exit $fail
