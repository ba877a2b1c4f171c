#!/bin/sh
# procmgrd's main (runtime/procmgrd/main.c) as the plugin starts it, with no
# Slurm: bad or partial arguments refused with one clear line on stderr and
# on the ready pipe, nothing left behind; a root that starts (ready "ok"),
# writes its event log and result, and ends on SIGTERM or when the process
# it watches (slurmstepd) goes; a failed pre-launch check said on the ready
# pipe and in the report; a port another process holds; a leaf whose parent
# never listens; a stranger on the tree port dropped.
b=${top_builddir:-.}
d=$(cd "$b" && pwd)/procmgrd
t=$(mktemp -d) || exit 1
bg=
trap 'for p in $bg; do kill -9 "$p" 2>/dev/null; done; rm -rf "$t"' EXIT
fail=0
# Under make check-sanitize: procmgrd's exits on a refusal leave what it
# allocated to the exit, which LeakSanitizer would count (exit status 23).
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export ASAN_OPTIONS
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; echo "--- stderr:"; cat "$t/err"; echo "--- ready:"; cat "$t/ready" 2>/dev/null; fail=1; }
# Awaits a file's first bytes (or a process's end): a bound, not a sleep.
await() { i=0; while [ $i -lt 400 ] && ! eval "$1"; do sleep 0.05; i=$((i + 1)); done; eval "$1"; }

# procmgrd ARGS...: a root of one node with two ranks unless ARGS say
# otherwise; its exit status in $rc, the ready line in $t/ready.
run() {
	rm -f "$t/ready"
	"$d" --job 7 --step 1 --ntasks 2 --port "$port" "$@" --ready-fd 3 3>"$t/ready" 2>"$t/err"
	rc=$?
}
# Refused with exit status want and text on stderr, said exactly once, and
# (exit 1: the ready fd was taken) on the ready pipe as "error: TEXT"; its
# run directory ($rdir) not left behind.
rdir=$t/run
refused() {
	what=$1 want=$2 text=$3
	shift 3
	run "$@"
	if [ "$rc" != "$want" ] || [ "$(grep -cF -- "$text" "$t/err")" != 1 ]; then
		bad "$what: exit $rc, want $want and '$text' once"
	elif [ "$want" = 1 ] && ! grep -qF -- "error: $text" "$t/ready"; then
		bad "$what: ready line"
	elif [ -e "$rdir" ]; then
		bad "$what: run directory left behind"
	else
		ok "$what"
	fi
}
one="--node-id 0 --nodes 127.0.0.1 --ntasks-local 2 --rundir $t/run"

"$d" >/dev/null 2>"$t/err"
[ $? = 2 ] && grep -qF "procmgrd: missing --job" "$t/err" && grep -qF "usage: procmgrd --job ID" "$t/err" &&
	ok "no arguments: usage" || bad "no arguments"
refused "a bad number" 2 "bad value 'x' for --job: allowed 0..4294967295" --job x $one
refused "a connect timeout below a second" 2 "bad value '300' for --connect-timeout" \
	$one --connect-timeout 300
refused "bad options" 1 "--opts: invalid value 'bogus' for --procmgr-restart" \
	$one --opts "restart=bogus"
refused "a bad node list" 1 "bad node list 'a[1-'" \
	--node-id 0 --nodes 'a[1-' --ntasks-local 2 --rundir "$t/run"
refused "a node id past the list" 1 "node id 2 outside the node list" \
	--node-id 2 --nodes '127.0.0.[1-2]' --ntasks-local 1 --rundir "$t/run"
refused "a node name that does not resolve" 1 "cannot resolve node nosuchhost.invalid" \
	--node-id 0 --nodes nosuchhost.invalid --ntasks-local 2 --rundir "$t/run"
refused "a sweep without its trials file" 1 \
	"cannot open the trials file $t/none: No such file or directory" \
	$one --opts "sweep=$t/none"
refused "an event log that cannot be opened" 1 "event log $t/no/ev: No such file" \
	$one --events "$t/no/ev"
refused "a run directory that cannot be made" 1 "mkdir $t/no/run: No such file" \
	--node-id 0 --nodes 127.0.0.1 --ntasks-local 2 --rundir "$t/no/run"
long=$t/run/$(printf '%0120d' 0)
mkdir "$t/run"
run --node-id 0 --nodes 127.0.0.1 --ntasks-local 2 --rundir "$long"
[ "$rc" = 1 ] && grep -qF "socket path too long: $long/sock" "$t/err" &&
	grep -qF "error: cannot listen on $long/sock (see the procmgrd log)" "$t/ready" &&
	[ ! -e "$long" ] && ok "a socket path too long: said, its run directory removed" ||
	bad "socket path too long"
rm -rf "$t/run"

# A root that starts: ready, then the plugin's SIGTERM ends the step as
# cancelled, its result in the output directory, its run directory gone.
mkdir "$t/out"
rm -f "$t/ready"
"$d" --job 7 --step 1 --ntasks 2 --port "$port" $one --events "$t/ev" --srun-node 127.0.0.1 \
	--opts "output-dir=$t/out health=disk:/:1K health-interval=60000" \
	--ready-fd 3 3>"$t/ready" 2>"$t/err" &
pid=$!
bg="$bg $pid"
if await '[ -s "$t/ready" ]' && [ "$(cat "$t/ready")" = ok ] && [ -S "$t/run/sock" ]; then
	ok "a root starts: ready 'ok', its socket in the run directory"
else
	bad "a root starts"
fi
# Another on the same port: refused, with who holds it.
rdir=$t/run2
refused "the control port held by another process" 1 \
	"cannot listen on the step's control port 127.0.0.1:$port: Address already in use (another process holds it)" \
	--node-id 0 --nodes 127.0.0.1 --ntasks-local 2 --rundir "$t/run2"
rdir=$t/run
# A stranger on the tree port that speaks no procmgr: dropped.
python3 - "$port" <<'EOF' >"$t/py" 2>&1
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET / HTTP/1.0\r\n\r\n" * 8)
s.settimeout(10)
print("closed" if s.recv(64) == b"" else "answered")
EOF
grep -qx closed "$t/py" && ok "a stranger on the tree port dropped" || { cat "$t/py"; bad "stranger"; }
kill -TERM "$pid"
wait "$pid"
rc=$?
if [ "$rc" = 0 ] && [ ! -e "$t/run" ] && grep -qF "stopped by signal 15" "$t/err" &&
   grep -qF "refused tree connection: not a procmgr frame" "$t/err" &&
   grep -qF '"event":"launch","gen":0,"nodes":1,"ranks":2' "$t/ev" &&
   grep -qF '"event":"cancelled"' "$t/ev" &&
   grep -qx "result=cancelled" "$t/out/result.7.1" && grep -qx "exit_code=143" "$t/out/result.7.1" &&
   grep -qx "srun=on node 127.0.0.1" "$t/out/result.7.1"; then
	ok "SIGTERM: cancelled, its event log and result written, its run directory removed"
else
	bad "SIGTERM (exit $rc)"; cat "$t/ev" "$t/out/result.7.1"
fi

# slurmstepd (here a sleep) goes: the step ends with it.
sleep 1000 &
w=$!
bg="$bg $w"
rm -f "$t/ready"
"$d" --job 7 --step 1 --ntasks 2 --port "$port" $one --watch-pid "$w" \
	--ready-fd 3 3>"$t/ready" 2>"$t/err" &
pid=$!
bg="$bg $pid"
await '[ -s "$t/ready" ]'
kill "$w"
wait "$pid"
rc=$?
[ "$rc" = 0 ] && grep -qF "procmgr: slurmstepd of this node went away; ending the step" "$t/err" &&
	[ ! -e "$t/run" ] && ok "the watched process gone: the step ends" || bad "watch-pid (exit $rc)"

# A pre-launch check fails: the ready line says which and why, the report
# is written for the plugin's drain; procmgrd then waits for its SIGTERM.
printf '#!/bin/sh\necho "fan 3 stopped"; exit 1\n' >"$t/fan.sh"
chmod +x "$t/fan.sh"
rm -f "$t/ready"
"$d" --job 7 --step 1 --ntasks 2 --port "$port" $one --opts "health=script:$t/fan.sh" \
	--health-report "$t/report" --ready-fd 3 3>"$t/ready" 2>"$t/err" &
pid=$!
bg="$bg $pid"
await '[ -s "$t/ready" ]'
printf 'health\t127.0.0.1\tscript:%s/fan.sh: fan 3 stopped\n' "$t" >"$t/want"
if cmp -s "$t/ready" "$t/want" && [ "$(cat "$t/report")" = "script:$t/fan.sh: fan 3 stopped" ]; then
	ok "a failed check: said on the ready pipe and in the report"
else
	bad "failed check"; cat -A "$t/want"
fi
kill -TERM "$pid"
wait "$pid"
[ ! -e "$t/run" ] && ok "... and gone at the plugin's SIGTERM" || bad "failed check: run directory"

# A leaf whose parent never listens: it gives up after connect_timeout,
# then (no supervisor ever came) waits for the plugin's SIGTERM.
rm -f "$t/ready"
"$d" --job 7 --step 1 --ntasks 2 --port "$port" --node-id 1 --nodes '127.0.0.[1-2]' \
	--ntasks-local 1 --rundir "$t/run" --connect-timeout 1000 --ready-fd 3 3>"$t/ready" 2>"$t/err" &
pid=$!
bg="$bg $pid"
if await 'grep -qF "procmgr: cannot reach node 127.0.0.1" "$t/err"' && [ "$(cat "$t/ready")" = ok ] &&
   grep -qF "procmgr: cannot reach node 127.0.0.1's procmgrd on port $port within 1 s (site key connect_timeout): Connection refused" "$t/err"; then
	ok "a parent that never listens: given up after connect_timeout"
else
	bad "leaf without parent"
fi
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" = 0 ] && [ ! -e "$t/run" ] && ok "... and gone at the plugin's SIGTERM" ||
	bad "leaf: exit $rc"

# A root whose child never joins: lost at the join deadline (connect and
# peer timeouts); with a failed check, the plugin is told once the tree was
# (here: never, so after a peer timeout).
root2() { # text to await, then the plugin's SIGTERM
	text=$1
	shift
	rm -f "$t/ready" "$t/err"
	"$d" --job 7 --step 1 --ntasks 2 --port "$port" --node-id 0 --nodes '127.0.0.[1-2]' \
		--ntasks-local 1 --rundir "$t/run" --connect-timeout 1000 --peer-timeout 1000 "$@" \
		--ready-fd 3 3>"$t/ready" 2>"$t/err" &
	pid=$!
	bg="$bg $pid"
	await 'grep -qF "$text" "$t/err"'
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
}
root2 "did not join the step"
[ "$rc" = 0 ] && [ "$(cat "$t/ready")" = ok ] &&
	grep -qF "child node 127.0.0.2: its procmgrd did not join the step within 2.0 s" "$t/err" &&
	[ ! -e "$t/run" ] && ok "a child that never joins: lost at the join deadline" ||
	bad "join deadline (exit $rc)"
root2 "the tree was not told" --opts "health=script:$t/fan.sh"
printf 'health\t127.0.0.1\tscript:%s/fan.sh: fan 3 stopped\n' "$t" >"$t/want"
[ "$rc" = 0 ] && cmp -s "$t/ready" "$t/want" &&
	grep -qF "the tree was not told of the failed check within 1000 ms; telling the plugin anyway" "$t/err" &&
	ok "a failed check, the tree never told: the plugin told after a peer timeout" ||
	bad "held check (exit $rc)"
exit $fail
