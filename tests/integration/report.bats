#!/usr/bin/env bats
# What a user sees when a rank fails: the restart line with the rank's own
# error (torch's error file, or its stderr's last lines), the root cause
# after a give-up, which task failed, where each generation begins.
load helpers

# Debian's python3 has torch 1.13 (the first python3 on PATH may not).
PY=/usr/bin/python3

@test "a rank raising under torch's @record: its message is in the restart line, its traceback in the event" {
	cat >"$W/train.py" <<'PYEOF'
import os, sys
rank, gen = int(os.environ["RANK"]), int(os.environ["PROCMGR_RESTART_COUNT"])
if rank == 1 and gen == 0:
    from torch.distributed.elastic.multiprocessing.errors import record
    @record
    def main():
        raise ValueError("loss is nan at step %d" % 41)
    main()
print("trained rank=%d gen=%d" % (rank, gen), flush=True)
PYEOF
	run timeout 120 srun -N2 -n2 --procmgr-restart=on-failure:2 "$PY" "$W/train.py"
	echo "$output"
	[ "$status" -eq 0 ]
	srun=$output
	# Without --procmgr-verbose: one line for the decision, with the error.
	[[ "$output" == *"procmgr: generation 0: rank 1 on ${P}2 exited with code 1 (ValueError: loss is nan at step 41); restarting all 2 ranks (restart 1 of 2)"* ]]
	[[ "$output" != *"starting generation"* ]]
	# The traceback still reaches srun's stderr as the command wrote it.
	[[ "$output" == *"Traceback (most recent call last):"* ]]
	[ "$(grep -c "trained rank=. gen=1" <<<"$output")" -eq 2 ]
	run events "$(last_job)" 0
	echo "$output"
	line=$(grep '"event":"rank_failed"' <<<"$output")
	[[ "$line" == *'"rank":1,"node":"'"${P}"'2","status":"exited with code 1 (ValueError: loss is nan at step 41)","error":"ValueError: loss is nan at step 41\u000aTraceback (most recent call last):\u000a'* ]]
	[[ "$line" == *'raise ValueError(\"loss is nan at step %d\" % 41)'* ]]
	# A program that never heartbeats: procmgr's part is all it knows, and
	# it says so, and how to have the time to training again (on stderr
	# too, checked above through $srun).
	grep -q '"event":"running","gen":1,"ranks":2,"since_start_ms":[0-9]*,"since_failure_ms":[0-9]*,"process_ms":[0-9]*,"heartbeats":false}' <<<"$output"
	! grep -q '"event":"heartbeating","gen":1' <<<"$output"
	[[ "$srun" == *"procmgr: generation 1: every rank running again "*" s after the failure (procmgr's part only, not the time to training again: the program sent no heartbeat; call procmgr.heartbeat(step) once per step to have it)"* ]]
}

@test "after a restart: every rank training again, from the failure to the last first heartbeat, on stderr, in the events, procmgr status and the timeline" {
	# Generation 1 takes 1.5 s to start (as imports, a rendezvous and a
	# checkpoint would) before its first heartbeat, through the module.
	cat >"$W/train.py" <<'PYEOF'
import os, sys, time
sys.path.insert(0, os.environ["PM_PYDIR"])
import procmgr
rank, gen = procmgr.rank(), procmgr.restart_count()
if rank == 1 and gen == 0:
    sys.exit(4)
if gen == 1:
    time.sleep(1.5)
step = 0
while not os.path.exists(os.environ["GO"]):
    procmgr.heartbeat(step)
    step += 1
    time.sleep(0.1)
PYEOF
	before=$(last_job)
	PM_PYDIR=$top/python GO=$W/go timeout 120 srun -N2 -n2 --procmgr-restart=on-failure:1 \
		--procmgr-hang-timeout=30 "$PY" "$W/train.py" >"$W/srun.out" 2>&1 &
	srun_pid=$!
	heartbeating() {
		job=$(last_job)
		[ "$job" != "$before" ] && grep -qs '"event":"heartbeating","gen":1' "$STATE/$job/0.events.jsonl"
	}
	wait_until 60 heartbeating || { cat "$W/srun.out"; return 1; }
	run "$PROCMGR" status "$job.0"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[1]}" =~ ^"last restart: generation 1, every rank training again "([0-9.]+)" s after the failure (procmgr's part "([0-9.]+)" s)"$ ]]
	run "$PROCMGR" status "$job.0" --json
	grep -q '"last_restart":{"gen":1,"process_ms":[0-9]*,"recovery_ms":[0-9]*}' <<<"$output"
	touch "$W/go"
	wait "$srun_pid"
	cat "$W/srun.out"
	ev=$(grep '"event":"heartbeating","gen":1' "$STATE/$job/0.events.jsonl")
	echo "$ev"
	rec=$(sed -n 's/.*"recovery_ms":\([0-9]*\).*/\1/p' <<<"$ev")
	proc=$(sed -n 's/.*"process_ms":\([0-9]*\).*/\1/p' <<<"$ev")
	# The program's 1.5 s are in the recovery, not in procmgr's part.
	[ "$rec" -ge $((proc + 1500)) ]
	grep -q "\"process_ms\":$proc,\"heartbeats\":true" "$STATE/$job/0.events.jsonl"
	# One line, always (no --procmgr-verbose), with the event's figures.
	[ "$(grep -c 'every rank training again' "$W/srun.out")" -eq 1 ]
	said=$(sed -n "s/.*procmgr: generation 1: every rank training again \([0-9.]*\) s after the failure (procmgr's part \([0-9.]*\) s, the program's start [0-9.]* s)$/\1 \2/p" "$W/srun.out")
	echo "said: $said; events: $rec $proc"
	awk -v s="$said" -v r="$rec" -v p="$proc" 'BEGIN { split(s, x, " ");
		exit !(x[1] * 1000 - r <= 5 && r - x[1] * 1000 <= 5 && x[2] * 1000 - p <= 5 && p - x[2] * 1000 <= 5) }'
	"$PROCMGR" timeline "$job" --svg "$W/t.svg"
	grep -q '>recovery [0-9.]* s</text>' "$W/t.svg"
}

@test "without an error file: stderr's last line says why; the give-up names the root cause and only the failing task exits non-zero" {
	run timeout 60 srun -N2 -n4 --procmgr-restart=on-failure:1 bash -c '
		if [ "$RANK" = 2 ]; then
			echo "loading shard $PROCMGR_RESTART_COUNT" >&2
			echo "RuntimeError: shard $PROCMGR_RESTART_COUNT is corrupt" >&2
			exit 3
		fi
		sleep 30'
	echo "$output"
	[ "$status" -eq 3 ]
	[[ "$output" == *"procmgr: generation 0: rank 2 on ${P}2 exited with code 3 (RuntimeError: shard 0 is corrupt); restarting all 4 ranks (restart 1 of 1)"* ]]
	[[ "$output" == *"procmgr: rank 2 on ${P}2 exited with code 3 (RuntimeError: shard 1 is corrupt) in generation 1; giving up after 1 restart (restart=on-failure:1)"* ]]
	[[ "$output" == *"procmgr: root cause: rank 2 on ${P}2:"$'\n'"  loading shard 1"$'\n'"  RuntimeError: shard 1 is corrupt"* ]]
	# What the command wrote was passed on, once per generation.
	[ "$(grep -c '^loading shard' <<<"$output")" -eq 2 ]
	# srun's per-task lines name task 2 only: the others were stopped.
	grep -q "srun: error: ${P}2: task 2: Exited with exit code 3" <<<"$output"
	[ "$(grep -c 'srun: error: .*Exited with exit code' <<<"$output")" -eq 1 ]
	run events "$(last_job)" 0
	[[ "$output" == *'"event":"rank_failed","gen":1,"rank":2,"node":"'"${P}"'2","status":"exited with code 3 (RuntimeError: shard 1 is corrupt)","error":"RuntimeError: shard 1 is corrupt\u000aloading shard 1\u000aRuntimeError: shard 1 is corrupt"'* ]]
}

@test "a segfault under faulthandler: the restart line quotes the fatal error and the top Python frame, not the extension modules" {
	cat >"$W/crash.py" <<-'EOS'
	import ctypes, faulthandler, os, time
	faulthandler.enable()
	def crash():
	    ctypes.string_at(0)
	if os.environ["RANK"] == "1":
	    crash()
	time.sleep(30)
	EOS
	chmod 0644 "$W/crash.py"
	run timeout 60 srun -N2 -n2 --procmgr-restart=never /usr/bin/python3 "$W/crash.py"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"procmgr: rank 1 on "*" (Fatal Python error: Segmentation fault, in string_at ("*"ctypes/__init__.py, line "*"))"* ]]
	[[ "$output" != *"(Extension modules"* ]]
}

@test "each generation's start is marked in every task's output file" {
	run timeout 60 srun -N2 -n4 --procmgr-restart=on-failure:1 --output="$W/out.%t" bash -c '
		echo "work gen=$PROCMGR_RESTART_COUNT"
		echo "err gen=$PROCMGR_RESTART_COUNT" >&2
		echo "up $RANK $PROCMGR_RESTART_COUNT" >>"$PM_LOG"
		if [ "$RANK$PROCMGR_RESTART_COUNT" = 30 ]; then
			# Once every rank has written its lines: a stop would cut them.
			for _ in $(seq 400); do
				[ "$(grep -c " 0$" "$PM_LOG")" -ge 4 ] && break
				sleep 0.05
			done
			exit 1
		fi
		[ "$PROCMGR_RESTART_COUNT" = 1 ] || sleep 30'
	[ "$status" -eq 0 ] || { echo "$output"; cat "$W"/out.*; return 1; }
	for t in 0 1 2 3; do
		cat "$W/out.$t"
		# Generation 1's lines come after its marker, generation 0's before.
		[ "$(grep -n -x "procmgr: rank $t: generation 1 starts" "$W/out.$t" | cut -d: -f1)" -gt \
			"$(grep -n -x 'work gen=0' "$W/out.$t" | cut -d: -f1)" ]
		[ "$(grep -n -x 'err gen=1' "$W/out.$t" | cut -d: -f1)" -gt \
			"$(grep -n -x "procmgr: rank $t: generation 1 starts" "$W/out.$t" | cut -d: -f1)" ]
		[ "$(grep -c "generation 0 starts" "$W/out.$t")" -eq 0 ]
	done
}

@test "procmgr timeline draws a step with a failure, a hang and a restart; rsvg-convert renders it" {
	run timeout 60 srun -N4 -n8 --procmgr-restart=on-failure:2 --procmgr-hang-timeout=1 \
		--export=ALL,FAIL_RANK=5,FAIL_AFTER_ALL=1,HANG_RANK=2 bash -c '
		if [ "$RANK$PROCMGR_RESTART_COUNT" = 21 ]; then touch "$PROCMGR_HEARTBEAT"; sleep 300 & wait; fi
		[ "$PROCMGR_RESTART_COUNT" = 0 ] || exec env -u FAIL_RANK -u HANG_RANK "$0"
		exec env -u HANG_RANK "$0"' "$WORKER"
	echo "$output"
	[ "$status" -eq 0 ]
	job=$(last_job)
	# The step found through the testbed's plugstack.conf (its state_dir).
	run "$PROCMGR" timeline "$job" --svg "$W/t.svg"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '>gen 2</text>' "$W/t.svg"
	grep -q '<title>+[0-9.]* s: rank_failed gen 0 rank 5 on '"${P}"'3: exited with code 7</title>' "$W/t.svg"
	grep -q '<title>+[0-9.]* s: hang gen 1 rank 2 on '"${P}"'2</title>' "$W/t.svg"
	# A row for each node something happened on.
	grep -q ">${P}2</text>" "$W/t.svg"
	grep -q ">${P}3</text>" "$W/t.svg"
	rsvg-convert "$W/t.svg" -o "$W/t.png"
	[ "$(head -c 8 "$W/t.png" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ]
	[ "$(stat -c %s "$W/t.png")" -gt 10000 ]
	[ -z "${PM_TIMELINE_PNG:-}" ] || cp "$W/t.png" "$PM_TIMELINE_PNG"
	# HTML too, and clear errors.
	"$PROCMGR" timeline --events "$STATE/$job/0.events.jsonl" --html "$W/t.html"
	grep -q '^<!DOCTYPE html>' "$W/t.html"
	run "$PROCMGR" timeline "$job"
	[ "$status" -eq 2 ]
	[[ "$output" == *"say where the picture goes: --svg FILE or --html FILE"* ]]
	run "$PROCMGR" timeline 12x --svg "$W/x.svg"
	[ "$status" -eq 2 ]
	[[ "$output" == *"'12x' is not JOBID or JOBID.STEP"* ]]
	run "$PROCMGR" timeline 999999.3 --svg "$W/x.svg"
	[ "$status" -eq 1 ]
	[[ "$output" == *"/999999/3.events.jsonl: No such file or directory"* ]]
}

@test "a rank's stderr passes through whole, however much, and its last line still says why" {
	# Each task's stderr to its own file: srun merges the tasks' streams in
	# chunks, and another task's line (the restart line) can land inside one
	# of rank 1's lines there (seen: "noiseprocmgr: rank 1 ...").
	run timeout 60 srun -N2 -n2 --procmgr-restart=never --error="$W/err.%t" bash -c '
		if [ "$RANK" = 1 ]; then
			seq -f "noise line %g" 1 50000 >&2
			echo "FatalError: after 50000 lines" >&2
			exit 2
		fi
		sleep 30'
	[ "$status" -eq 2 ]
	[ "$(grep -c '^noise line ' "$W/err.1")" -eq 50000 ]
	grep -qx 'noise line 50000' "$W/err.1"
	output=$(cat "$W"/err.* && echo "$output")
	[[ "$output" == *"procmgr: rank 1 on ${P}2 exited with code 2 (FatalError: after 50000 lines) in generation 0; not restarting (restart=never)"* ]]
	# The root cause is the last lines only, not the whole stream.
	[ "$(sed -n '/^procmgr: root cause:/,$p' <<<"$output" | grep -c '^  noise line ')" -eq 19 ]
}

@test "an srun whose stderr is not read for longer than the peer timeout does not make a supervisor look lost" {
	mkfifo "$W/err.fifo"
	# The reader opens the FIFO at once but reads nothing for 8 s (the
	# peer timeout is 5 s): srun, then slurmstepd, then the task's stderr
	# fill up behind it.
	(exec 3<"$W/err.fifo"; sleep 8; exec cat <&3 >"$W/err") &
	reader=$!
	rc=0
	timeout 90 srun -N1 -n1 --procmgr-restart=never bash -c '
		head -c 20000000 /dev/zero | tr "\0" x | fold -w 99 >&2
		echo >&2
		echo "end of the flood" >&2' 2>"$W/err.fifo" >"$W/out" || rc=$?
	wait "$reader"
	echo "srun exited $rc"; tail -n 3 "$W/err" | cut -c1-120
	[ "$rc" -eq 0 ]
	[ "$(grep -c '^x\{99\}$' "$W/err")" -eq 202020 ]
	grep -qx "end of the flood" "$W/err"
	! grep -q "lost\|stopped answering" "$W/err"
}
