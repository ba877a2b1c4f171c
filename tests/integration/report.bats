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
	# Without --procmgr-verbose: one line for the decision, with the error.
	[[ "$output" == *"procmgr: generation 0: rank 1 on pmnode2 exited with code 1 (ValueError: loss is nan at step 41); restarting all 2 ranks (restart 1 of 2)"* ]]
	[[ "$output" != *"starting generation"* ]]
	# The traceback still reaches srun's stderr as the command wrote it.
	[[ "$output" == *"Traceback (most recent call last):"* ]]
	[ "$(grep -c "trained rank=. gen=1" <<<"$output")" -eq 2 ]
	run events "$(last_job)" 0
	echo "$output"
	line=$(grep '"event":"rank_failed"' <<<"$output")
	[[ "$line" == *'"rank":1,"node":"pmnode2","status":"exited with code 1 (ValueError: loss is nan at step 41)","error":"ValueError: loss is nan at step 41\u000aTraceback (most recent call last):\u000a'* ]]
	[[ "$line" == *'raise ValueError(\"loss is nan at step %d\" % 41)'* ]]
	# The recovery a user counts ends once every rank runs again.
	grep -q '"event":"running","gen":1,"ranks":2,"since_start_ms":[0-9]*,"since_failure_ms":[0-9]*}' <<<"$output"
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
	[[ "$output" == *"procmgr: generation 0: rank 2 on pmnode2 exited with code 3 (RuntimeError: shard 0 is corrupt); restarting all 4 ranks (restart 1 of 1)"* ]]
	[[ "$output" == *"procmgr: rank 2 on pmnode2 exited with code 3 (RuntimeError: shard 1 is corrupt) in generation 1; giving up after 1 restart (restart=on-failure:1)"* ]]
	[[ "$output" == *"procmgr: root cause: rank 2 on pmnode2:"$'\n'"  loading shard 1"$'\n'"  RuntimeError: shard 1 is corrupt"* ]]
	# What the command wrote was passed on, once per generation.
	[ "$(grep -c '^loading shard' <<<"$output")" -eq 2 ]
	# srun's per-task lines name task 2 only: the others were stopped.
	grep -q "srun: error: pmnode2: task 2: Exited with exit code 3" <<<"$output"
	[ "$(grep -c 'srun: error: .*Exited with exit code' <<<"$output")" -eq 1 ]
	run events "$(last_job)" 0
	[[ "$output" == *'"event":"rank_failed","gen":1,"rank":2,"node":"pmnode2","status":"exited with code 3 (RuntimeError: shard 1 is corrupt)","error":"RuntimeError: shard 1 is corrupt\u000aloading shard 1\u000aRuntimeError: shard 1 is corrupt"'* ]]
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
