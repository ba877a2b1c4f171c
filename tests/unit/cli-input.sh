#!/bin/sh
# The procmgr command with no step: its dispatch (usage, help, version) and
# its refusals of bad input, clear,
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

# procmgr's dispatch: usage, help, version, an unknown command.
# expect LABEL RC STREAM TEXT [ARG...]: exit RC and TEXT in stdout or stderr.
expect() {
	label=$1 rc=$2 stream=$3 text=$4; shift 4
	"$pm" "$@" >"$t/out" 2>"$t/err"
	got=$?
	if [ "$got" != "$rc" ] || ! grep -qF -- "$text" "$t/$stream"; then
		echo "FAIL $label: exit $got"; cat "$t/out" "$t/err"; fail=1
	else
		echo "ok   $label"
	fi
}
expect "no command: usage on stderr" 2 err "usage: procmgr COMMAND [ARGS]"
expect "-h: usage on stdout" 0 out "  status        every rank and node of a step" -h
expect "--help" 0 out "  help          this list" --help
expect "--version" 0 out "procmgr " --version
expect "-V" 0 out "procmgr " -V
expect "version" 0 out "procmgr " version
expect "unknown command" 2 err "procmgr: unknown command 'stat'" stat
expect "help" 0 out "usage: procmgr COMMAND" help
expect "help help" 0 out "usage: procmgr COMMAND" help help
expect "help COMMAND: its usage" 0 out "usage: procmgr status [JOBID[.STEP]] [--json]" help status
expect "help of an unknown command" 2 err "procmgr: unknown command 'nope'" help nope
expect "help with two words" 2 err "usage: procmgr help [COMMAND]" help status events
expect "stop with no step" 2 err "procmgr stop: which step? JOBID[.STEP] is needed" stop
expect "restart with a bad step" 2 err "procmgr restart: bad step '1x'" restart 1x
exit $fail
