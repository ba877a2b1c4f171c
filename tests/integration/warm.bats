#!/usr/bin/env bats
# --procmgr-warm: each rank's next generation waits as a standby and a
# restart hands it the generation (issue 22). The contract with a small
# program (no torch: fast), a program that never says ready, an
# unmodified script under the python standby, the DDP example with real
# torch ending with the unbroken run's loss, and no standby left behind at
# the end or at scancel.
load helpers

PY=/usr/bin/python3
PROG=$top/tests/integration/warmprog.py
SCRIPT=$top/tests/integration/plainscript.py

# Pids of this testbed's standbys that wait in ready(): started with a warm
# channel, no generation in their environment, blocked reading it.
waiting_standbys() {
	local i pid
	for i in $(seq 1 "$(cat "$PM_TESTBED_DIR/nodes")"); do
		for pid in $(tb pids "$i"); do
			env_has "$pid" "PM_LOG=$PM_LOG" || continue
			tr "\\0" "\\n" <"/proc/$pid/environ" 2>/dev/null | grep -q "^PROCMGR_WARM_FD=" || continue
			tr "\\0" "\\n" <"/proc/$pid/environ" 2>/dev/null | grep -q "^PROCMGR_RESTART_COUNT=" && continue
			[ "$(cat "/proc/$pid/wchan" 2>/dev/null)" = unix_stream_read_generic ] && echo "$pid"
		done
	done
	return 0
}
n_waiting() { [ "$(waiting_standbys | wc -l)" -ge "$1" ]; }
# Every pid listed is gone.
all_gone() { local p; for p in "$@"; do ! kill -0 "$p" 2>/dev/null || return 1; done; }
standby_pids() { sed -n 's/^up \([0-9]*\) gen=$/\1/p' "$PM_LOG"; }

@test "contract: a crash hands every rank's waiting standby the next generation, with its environment" {
	PYTHONPATH=$top/python CRASH_RANK=1 CRASH_GO=$W/go timeout 60 \
		srun -N2 -n4 --procmgr-restart=on-failure:1 --procmgr-warm=on "$PY" "$PROG" a b \
		2>"$W/err" &
	local srun=$!
	# Generation 0's ranks said ready: a standby each, waiting.
	wait_until 40 n_waiting 4 || { cat "$PM_LOG" "$W/err"; return 1; }
	local sb; sb=$(standby_pids | sort -n | tr '\n' ' ')
	touch "$W/go"
	wait "$srun" || { cat "$PM_LOG" "$W/err"; return 1; }
	cat "$PM_LOG" "$W/err"
	# Generation 1's processes are the standbys of before the crash, each
	# with a generation-1 environment; none started cold.
	local g1; g1=$(sed -n 's/^start \([0-9]*\) gen=1 .*/\1/p' "$PM_LOG" | sort -n | tr '\n' ' ')
	echo "standbys: $sb; generation 1: $g1"
	[ "$(echo $g1 | wc -w)" -eq 4 ]
	for p in $g1; do echo " $sb " | grep -q " $p "; done
	[ "$(grep -c "^start [0-9]* gen=1 rank=[0-3] restart=1 argv=a,b$" "$PM_LOG")" -eq 4 ]
	[ "$(grep -c "generation 1 starts (warm)" "$W/err")" -eq 4 ]
	! grep -q "starts cold" "$W/err"
	# The standbys behind generation 1 went with the step.
	wait_until 15 all_gone $(standby_pids)
}

# procmgr status says, per rank, that its standby is ready; 0 while not.
status_ready() {
	"$PROCMGR" status "$job" --json >"$W/st.json" 2>&1 &&
		[ "$(grep -o '"standby":"ready"' "$W/st.json" | wc -l)" -eq "$1" ]
}

@test "procmgr status: each rank's standby (ready) and the memory the standbys hold, per rank and per node, measured from /proc" {
	PYTHONPATH=$top/python CRASH_RANK=1 CRASH_GO=$W/go timeout 90 \
		srun -N2 -n4 --procmgr-restart=on-failure:1 --procmgr-warm=on "$PY" "$PROG" \
		2>"$W/err" &
	local srun=$!
	wait_until 40 n_waiting 4 || { cat "$PM_LOG" "$W/err"; return 1; }
	job=$(last_job)
	wait_until 20 status_ready 4 || { cat "$W/st.json" "$PM_LOG" "$W/err"; return 1; }
	cat "$W/st.json"
	# Each rank's standby_rss_kb is its standby's own RSS (one process per
	# group here), within what a page or two of drift allows; the nodes'
	# sums add up to the summary's.
	local pids; pids=$(waiting_standbys | tr '\n' ' ')
	/usr/bin/python3 - "$W/st.json" $pids <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rss = {}
for p in sys.argv[2:]:
    with open("/proc/%s/statm" % p) as f:
        rss[int(p)] = int(f.read().split()[1]) * 4
s = d["summary"]["standbys"]
assert s["ready"] == 4 and s["starting"] == 0 and s["none"] == 0, s
assert len(d["ranks"]) == 4
for r in d["ranks"]:
    assert r["standby"] == "ready", r
    kb = r["standby_rss_kb"]
    assert any(abs(kb - v) <= 512 for v in rss.values()), (kb, rss)
assert sum(n["standby_rss_kb"] for n in d["nodes"]) == s["rss_kb"], d["nodes"]
assert s["rss_kb"] == sum(r["standby_rss_kb"] for r in d["ranks"]), s
assert all(n["standby_rss_kb"] > 0 for n in d["nodes"]), d["nodes"]
PY
	run "$PROCMGR" status "$job"
	echo "$output"
	[[ "${lines[0]}" == *"; standbys: 4 ready, holding "*" MiB" ]]
	[ "$(grep -Ec '^[0-3] .* ready [0-9.]+[KM]$' <<<"$output")" -eq 4 ]
	grep -q "STANDBY$" <<<"$output"
	touch "$W/go"
	wait "$srun" || { cat "$PM_LOG" "$W/err"; return 1; }
}

@test "contract: a program that never says ready is started cold, and it is said" {
	PYTHONPATH=$top/python NO_READY=1 CRASH_RANK=1 timeout 60 \
		srun -N2 -n4 --procmgr-restart=on-failure:1 --procmgr-warm=on "$PY" "$PROG" \
		2>"$W/err" || { cat "$PM_LOG" "$W/err"; return 1; }
	cat "$PM_LOG" "$W/err"
	[ "$(grep -c "^start [0-9]* gen=1 " "$PM_LOG")" -eq 4 ]
	[ -z "$(standby_pids)" ]
	[ "$(grep -c "generation 1 starts cold: the program never said ready" "$W/err")" -eq 4 ]
}

@test "no standby is left behind at scancel" {
	PYTHONPATH=$top/python HOLD=$W/never sbatch -N2 -n4 -o "$W/out" --wrap \
		"srun --procmgr-restart=on-failure:1 --procmgr-warm=on $PY $PROG" >"$W/job"
	wait_until 40 n_waiting 4 || { cat "$PM_LOG" "$W/out"; return 1; }
	local pids; pids=$(sed -n 's/^\(up\|start\) \([0-9]*\) .*/\2/p' "$PM_LOG" | sort -u)
	[ "$(echo $pids | wc -w)" -eq 8 ]
	scancel "$(sed -n 's/.* \([0-9]*\)$/\1/p' "$W/job")"
	wait_until 20 all_gone $pids || { ps -o pid,args -p "$(echo $pids | tr ' ' ,)"; return 1; }
}

@test "python: an unmodified script's next generation is a fork of the rank's fork server, which imported its modules once; none is left at the end" {
	CRASH_RANK=2 CRASH_GO=$W/go timeout 60 \
		srun -N2 -n4 --procmgr-restart=on-failure:1 --procmgr-warm=python:json,email.message \
		"$PY" -u "$SCRIPT" x "y z" 2>"$W/err" &
	local srun=$!
	wait_until 40 n_waiting 4 || { cat "$PM_LOG" "$W/err"; return 1; }
	local servers; servers=$(waiting_standbys | tr '\n' ' ')
	touch "$W/go"
	wait "$srun" || { cat "$PM_LOG" "$W/err"; return 1; }
	cat "$PM_LOG" "$W/err"
	echo "fork servers: $servers"
	# Generation 0 cold (plain python), generation 1 forked by the servers:
	# the script saw what python script.py would show it, json already
	# loaded, its command line the server's, its parent the supervisor
	# (double-forked to it), not the server.
	[ "$(grep -c "gen=0 rank=[0-3] preloaded=False forked=False parent=procmgr-rank$" "$PM_LOG")" -eq 4 ]
	[ "$(grep -c "^script [0-9]* name=__main__ argv=$SCRIPT,x,y z path0=$top/tests/integration gen=1 rank=[0-3] preloaded=True forked=True parent=procmgr-rank$" "$PM_LOG")" -eq 4 ]
	[ "$(grep -c "generation 1 starts (warm)" "$W/err")" -eq 4 ]
	! grep -q "starts cold" "$W/err"
	# The step's end took the fork servers with it.
	wait_until 15 all_gone $servers || { ps -o pid,args -p "$(echo $servers | tr ' ' ,)"; return 1; }
}

# As another user, in DIR: a module for every name a python may import
# (the standard library's, what the interpreter loads, the site hooks,
# procmgr, warmnext), each appending its name to MARK when imported.
plant_modules() { # DIR MARK
	as_user /usr/bin/python3 -I - "$1" "$2" <<'EOF'
import os, sys
d, mark = sys.argv[1:3]
names = set(sys.stdlib_module_names) | {m.split(".")[0] for m in sys.modules}
names |= {"sitecustomize", "usercustomize", "procmgr", "warmnext"}
for n in sorted(names):
    if n.isidentifier() and n != "__main__":
        with open(os.path.join(d, n + ".py"), "w") as f:
            f.write("import posix as _p\n"
                    "_fd = _p.open(%r, _p.O_WRONLY | _p.O_APPEND | _p.O_CREAT, 0o666)\n"
                    "_p.write(_fd, b'%s\\n')\n_p.close(_fd)\n" % (mark, n))
EOF
}

@test "python: modules another user planted in the working directory are not imported by the fork server or its generations; the script's own directory comes first, as for python script.py" {
	# The script and a module beside it in a directory of their own; the
	# job's working directory ($W, writable by all) is not it.
	mkdir "$W/app"
	cp "$SCRIPT" "$W/app/"
	echo 'WHERE = "script"' >"$W/app/warmnext.py"
	plant_modules "$W" "$W/planted"
	[ "$(stat -c %U "$W/socket.py")" = nobody ]
	# The plant is live: what python -c imports there.
	(cd "$W" && /usr/bin/python3 -c 'import json' 2>/dev/null) || true
	grep -qx json "$W/planted"
	rm "$W/planted"
	CRASH_RANK=2 CRASH_GO=$W/go SHOW_PATH=1 timeout 60 \
		srun -N2 -n4 --procmgr-restart=on-failure:1 \
		--procmgr-warm=python:json,email.message,warmnext "$PY" -u "$W/app/plainscript.py" \
		2>"$W/err" &
	local srun=$!
	wait_until 40 n_waiting 4 || { cat "$PM_LOG" "$W/err"; ls "$W"/planted && cat "$W/planted"; return 1; }
	touch "$W/go"
	wait "$srun" || { cat "$PM_LOG" "$W/err"; return 1; }
	cat "$PM_LOG" "$W/err"
	[ ! -e "$W/planted" ] || { echo "imported from the working directory:"; sort -u "$W/planted"; return 1; }
	[ "$(grep -c "generation 1 starts (warm)" "$W/err")" -eq 4 ]
	! grep -q "starts cold" "$W/err"
	# Cold (generation 0) and forked (1) alike: the script's directory
	# first, the working directory nowhere; the module beside the script
	# preloaded by the server.
	[ "$(grep -c "^script [0-9]* .* path0=$W/app gen=0 .* forked=False " "$PM_LOG")" -eq 4 ]
	[ "$(grep -c "^script [0-9]* .* path0=$W/app gen=1 .* preloaded=True forked=True " "$PM_LOG")" -eq 4 ]
	[ "$(grep -c "^path [0-9]* gen=0 path0=$W/app cwd_in_path=False warmnext=-$" "$PM_LOG")" -eq 4 ]
	[ "$(grep -c "^path [0-9]* gen=1 path0=$W/app cwd_in_path=False warmnext=script$" "$PM_LOG")" -eq 4 ]
}

@test "python: no fork server and no forked rank is left behind at scancel" {
	sbatch -N2 -n4 -o "$W/out" --wrap "CRASH_RANK=0 CRASH_GO=$W/go HOLD=1 srun \
		--procmgr-restart=on-failure:1 --procmgr-warm=python:json $PY $SCRIPT" >"$W/job"
	wait_until 40 n_waiting 4 || { cat "$PM_LOG" "$W/out"; return 1; }
	touch "$W/go"
	# Generation 1: every rank forked by its server, holding.
	wait_until 40 eval '[ "$(grep -c "gen=1 .* forked=True" "$PM_LOG")" -eq 4 ]' ||
		{ cat "$PM_LOG" "$W/out"; return 1; }
	local pids; pids="$(waiting_standbys | tr '\n' ' ') $(sed -n 's/^script \([0-9]*\) .*gen=1 .*/\1/p' "$PM_LOG" | tr '\n' ' ')"
	[ "$(echo $pids | wc -w)" -eq 8 ]
	all_alive() { local p; for p in "$@"; do kill -0 "$p" || return 1; done; }
	all_alive $pids
	scancel "$(sed -n 's/.* \([0-9]*\)$/\1/p' "$W/job")"
	wait_until 20 all_gone $pids || { ps -o pid,args -p "$(echo $pids | tr ' ' ,)"; return 1; }
}

@test "python: a fork server whose modules start a thread is refused, said on srun's stderr, every generation cold" {
	printf 'import threading, time\nthreading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n' \
		>"$W/threadmod.py"
	PYTHONPATH=$W CRASH_RANK=1 CRASH_GO=$W/go timeout 60 \
		srun -N1 -n2 --procmgr-restart=on-failure:2 --procmgr-warm=python:threadmod \
		"$PY" "$SCRIPT" 2>"$W/err" &
	local srun=$!
	wait_until 40 grep -q "refused: 2 threads run in the fork server" "$W/err" || { cat "$W/err"; return 1; }
	wait_until 40 eval '[ "$(grep -c "refused: 2 threads" "$W/err")" -eq 2 ]' || { cat "$W/err"; return 1; }
	touch "$W/go"
	wait "$srun" || { cat "$PM_LOG" "$W/err"; return 1; }
	cat "$PM_LOG" "$W/err"
	[ "$(grep -c "^procmgr: --procmgr-warm=python: refused: 2 threads run in the fork server after importing threadmod" "$W/err")" -eq 2 ]
	[ "$(grep -c "generation 1 starts cold: its fork server refused to fork (said above)" "$W/err")" -eq 2 ]
	[ "$(grep -c "gen=1 rank=[01] preloaded=False forked=False" "$PM_LOG")" -eq 2 ]
}

@test "python: a command that is not a python interpreter starts cold, said once per rank" {
	timeout 60 srun -N1 -n2 --procmgr-warm=python:json /bin/true 2>"$W/err" ||
		{ cat "$W/err"; return 1; }
	cat "$W/err"
	[ "$(grep -c "procmgr-warm=python: the command is not a python interpreter (/bin/true)" "$W/err")" -eq 2 ]
}

# Issue 32 item 11: with the fork server, procmgr's part of a restart is
# small and the program's own start (its rendezvous, its checkpoint) is
# most of it. A script that heartbeats, without a hang timeout: the
# restart is reported when every rank heartbeats again, not when the fork
# server forked it.
@test "python: fork server, no hang timeout: a heartbeating script's restart is reported when every rank trains again, the program's start included" {
	cat >"$W/hb.py" <<'PYEOF'
import os, sys, time
import procmgr
rank, gen = procmgr.rank(), procmgr.restart_count()
step = 0
if gen == 0:
    procmgr.heartbeat(step)
    while not os.path.exists(os.environ["GO"]):
        time.sleep(0.01)
    if rank == 1:
        sys.exit(1)
    time.sleep(300)
# What a restart costs the program after its fork: its rendezvous, its
# checkpoint; then it trains again.
time.sleep(1.5)
procmgr.heartbeat(step + 1)
PYEOF
	local before; before=$(last_job)
	PYTHONPATH=$top/python GO=$W/go timeout 90 srun -N2 -n2 --procmgr-restart=on-failure:1 \
		--procmgr-warm=python:json "$PY" "$W/hb.py" 2>"$W/err" &
	local srun=$! job
	gen0_beats() {
		job=$(last_job)
		[ "$job" != "$before" ] && grep -qs '"event":"heartbeating","gen":0' "$STATE/$job/0.events.jsonl"
	}
	# Every rank heartbeat in generation 0 and its fork server waits.
	wait_until 60 gen0_beats || { cat "$W/err"; return 1; }
	wait_until 40 n_waiting 2 || { cat "$W/err"; return 1; }
	touch "$W/go"
	wait "$srun" || { cat "$W/err"; return 1; }
	cat "$W/err"
	events "$job" 0 | grep '"event":"running"\|"event":"heartbeating"'
	grep -q '"event":"running","gen":1,.*"heartbeats":true' "$STATE/$job/0.events.jsonl"
	local ev rec proc said
	ev=$(grep '"event":"heartbeating","gen":1' "$STATE/$job/0.events.jsonl")
	rec=$(sed -n 's/.*"recovery_ms":\([0-9]*\).*/\1/p' <<<"$ev")
	proc=$(sed -n 's/.*"process_ms":\([0-9]*\).*/\1/p' <<<"$ev")
	# The program's 1.5 s after its fork are in the figure.
	[ "$rec" -ge $((proc + 1500)) ]
	# One line on srun's stderr, the recovery's; never procmgr's part alone.
	[ "$(grep -c 'procmgr: generation 1: every rank' "$W/err")" -eq 1 ]
	said=$(sed -n "s/.*procmgr: generation 1: every rank training again \([0-9.]*\) s after the failure (procmgr's part \([0-9.]*\) s, the program's start [0-9.]* s)$/\1/p" "$W/err")
	echo "said: $said s; events: recovery $rec ms, procmgr's part $proc ms"
	awk -v s="$said" -v r="$rec" 'BEGIN { exit !(s != "" && s * 1000 - r <= 5 && r - s * 1000 <= 5) }'
	! grep -q "procmgr's part only" "$W/err"
}

# examples/ddp_train.py through examples/train.sbatch, 40 steps, a disk
# checkpoint every 10, its output in $W/NAME.out; bounded by SECONDS.
ddp_train() { # SECONDS NAME SBATCH-OPTIONS VAR=VALUE...
	local secs=$1 name=$2 opt=$3; shift 3
	timeout "$secs" env DDP_TRAIN="$top/examples/ddp_train.py" CKPT_DIR="$W/ckpt.$name" "$@" \
		sbatch --wait --quiet $opt -o "$W/$name.out" "$top/examples/train.sbatch" \
		--steps 40 --ckpt-every 10
}
final_loss() { sed -n 's/^final loss: \([^ ]*\) .*/\1/p' "$W/$1.out"; }

@test "DDP example, warm: a crash at step 25 resumes from the standbys and ends with the unbroken run's loss" {
	"$PY" -c 'import torch' 2>/dev/null ||
		skip "no torch for $PY: apt-get install python3-torch (tests/install-deps)"
	train() { ddp_train 180 "$@"; }
	train plain --procmgr || { cat "$W/plain.out"; return 1; }
	train crash --procmgr-warm=on CRASH_RANK=1 CRASH_STEP=25 CRASH_MARKER="$W/crashed" \
		CRASH_GO="$W/go" &
	local job=$!
	wait_until 120 n_waiting 4 || { cat "$W/crash.out"; return 1; }
	touch "$W/go"
	wait "$job" || { cat "$W/crash.out"; return 1; }
	cat "$W/plain.out" "$W/crash.out"
	echo "# final loss: $(final_loss plain) unbroken, $(final_loss crash) warm after a crash" >&3
	[ -n "$(final_loss plain)" ]
	[ "$(final_loss plain)" = "$(final_loss crash)" ]
	[ "$(grep -c "generation 1 starts (warm)" "$W/crash.out")" -eq 4 ]
	! grep -q "starts cold" "$W/crash.out"
	# With the state store (on by default) the example resumes from
	# procmgr's copy of the crash's step, not the disk checkpoint's 20.
	[ "$(grep -c "gen 1\] resumed from step 25 (procmgr's copy" "$W/crash.out")" -eq 4 ]
}

@test "DDP example, python: fork server: an unmodified script survives a crash with forked ranks and the unbroken run's loss; no server left" {
	"$PY" -c 'import torch' 2>/dev/null ||
		skip "no torch for $PY: apt-get install python3-torch (tests/install-deps)"
	train() { ddp_train 240 "$@"; }
	train plain --procmgr || { cat "$W/plain.out"; return 1; }
	train fork --procmgr-warm=python:torch,torch.distributed,torch.nn.parallel CRASH_RANK=1 \
		CRASH_STEP=25 CRASH_MARKER="$W/crashed" CRASH_GO="$W/go" &
	local job=$!
	wait_until 150 n_waiting 4 || { cat "$W/fork.out"; return 1; }
	local servers; servers=$(waiting_standbys | tr '\n' ' ')
	touch "$W/go"
	wait "$job" || { cat "$W/fork.out"; return 1; }
	cat "$W/plain.out" "$W/fork.out"
	echo "# final loss: $(final_loss plain) unbroken, $(final_loss fork) after a crash, forked" >&3
	[ -n "$(final_loss plain)" ]
	[ "$(final_loss plain)" = "$(final_loss fork)" ]
	[ "$(grep -c "generation 1 starts (warm)" "$W/fork.out")" -eq 4 ]
	! grep -q "starts cold\|refused" "$W/fork.out"
	[ "$(grep -c "gen 1\] resumed from step 25" "$W/fork.out")" -eq 4 ]
	wait_until 15 all_gone $servers || { ps -o pid,args -p "$(echo $servers | tr ' ' ,)"; return 1; }
}

@test "DDP example, warm: a rank stopped for real (SIGSTOP) is judged hung; the restart hands every rank its standby, same loss as unbroken" {
	"$PY" -c 'import torch' 2>/dev/null ||
		skip "no torch for $PY: apt-get install python3-torch (tests/install-deps)"
	train() { ddp_train 240 "$@"; }
	rank1_pid() { "$PROCMGR" status "$(last_job)" --json | /usr/bin/python3 -c \
		'import json,sys; print([r["pid"] for r in json.load(sys.stdin)["ranks"] if r["rank"] == 1][0])'; }
	train plain --procmgr || { cat "$W/plain.out"; return 1; }
	# Every rank waits at step 25, heartbeating (HOLD_GO), until every
	# standby waits; then rank 1's process is stopped and the others go on
	# into the next all-reduce: no heartbeat from rank 1 first, judged hung.
	train hang "--procmgr-warm=on --procmgr-hang-timeout=15" HOLD_STEP=25 HOLD_GO="$W/go" &
	local job=$!
	wait_until 150 n_waiting 4 || { cat "$W/hang.out"; return 1; }
	local pid; pid=$(rank1_pid) || { cat "$W/hang.out"; return 1; }
	echo "stopping rank 1: $pid"
	grep -q "ddp_train.py" "/proc/$pid/cmdline"
	kill -STOP "$pid"
	touch "$W/go.25"
	wait "$job" || { cat "$W/hang.out"; return 1; }
	cat "$W/plain.out" "$W/hang.out"
	echo "# final loss: $(final_loss plain) unbroken, $(final_loss hang) warm after a hang" >&3
	[ -n "$(final_loss plain)" ]
	[ "$(final_loss plain)" = "$(final_loss hang)" ]
	grep -qi "hung\|hang" "$W/hang.out"
	[ "$(grep -c "generation 1 starts (warm)" "$W/hang.out")" -eq 4 ]
	! grep -q "starts cold" "$W/hang.out"
}

@test "DDP example, python: fork server: a forked rank stopped for real (SIGSTOP) is judged hung; every rank is forked again from its server; same loss as unbroken" {
	"$PY" -c 'import torch' 2>/dev/null ||
		skip "no torch for $PY: apt-get install python3-torch (tests/install-deps)"
	train() { ddp_train 300 "$@"; }
	rank1_pid() { "$PROCMGR" status "$(last_job)" --json | /usr/bin/python3 -c \
		'import json,sys; print([r["pid"] for r in json.load(sys.stdin)["ranks"] if r["rank"] == 1][0])'; }
	warm_starts() { [ "$(grep -c "generation $1 starts (warm)" "$W/hang.out")" -eq 4 ]; }
	train plain --procmgr || { cat "$W/plain.out"; return 1; }
	# Generation 0 starts cold: every rank holds at step 10, heartbeating,
	# until every fork server waits; then rank 1 crashes, and generation 1
	# is forked. It holds at step 25 until the servers wait again; then
	# the forked rank 1 is stopped and the others go on into the next
	# all-reduce: rank 1 is the first without a heartbeat, judged hung.
	train hang "--procmgr-warm=python:torch,torch.distributed,torch.nn.parallel --procmgr-hang-timeout=30" \
		HOLD_STEP="10 25" HOLD_GO="$W/go" CRASH_RANK=1 CRASH_STEP=10 CRASH_MARKER="$W/crashed" &
	local job=$!
	wait_until 150 n_waiting 4 || { cat "$W/hang.out"; return 1; }
	touch "$W/go.10"
	wait_until 90 warm_starts 1 || { cat "$W/hang.out"; return 1; }
	wait_until 90 n_waiting 4 || { cat "$W/hang.out"; return 1; }
	local servers; servers=$(waiting_standbys | tr '\n' ' ')
	local pid; pid=$(rank1_pid) || { cat "$W/hang.out"; return 1; }
	echo "stopping rank 1: $pid (servers: $servers)"
	# Generation 1's rank 1 is a fork of its server (its command line is
	# the server's), not the server itself.
	grep -q "procmgr/standby.py" "/proc/$pid/cmdline"
	! echo " $servers " | grep -q " $pid "
	kill -STOP "$pid"
	touch "$W/go.25"
	wait "$job" || { cat "$W/hang.out"; return 1; }
	cat "$W/plain.out" "$W/hang.out"
	echo "# final loss: $(final_loss plain) unbroken, $(final_loss hang) forked after a crash and a hang" >&3
	[ -n "$(final_loss plain)" ]
	[ "$(final_loss plain)" = "$(final_loss hang)" ]
	grep -q "rank 1 on .* hung" "$W/hang.out"
	warm_starts 2
	! grep -q "starts cold\|refused" "$W/hang.out"
	# The stopped rank was killed with its generation, and no server is left.
	wait_until 15 all_gone "$pid" $servers || { ps -o pid,stat,args -p "$pid"; return 1; }
}
