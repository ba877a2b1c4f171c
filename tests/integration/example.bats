#!/usr/bin/env bats
# examples/: ddp_train.py through train.sbatch on the testbed, once
# unbroken and once with a rank crashing mid-training: procmgr restarts
# every rank, they resume from the newest checkpoint, and the run ends
# with the very same loss. The disk's checkpoints alone (--state-every 0):
# procmgr's copy of the state is state.bats'.
load helpers

PY=/usr/bin/python3

setup() {
	W=$(mktemp -d /tmp/pm-it.XXXXXX)
	chmod 0777 "$W"
	export PM_LOG=$W/log
	touch "$PM_LOG"
	cd "$W"
	"$PY" -c 'import torch' 2>/dev/null ||
		skip "no torch for $PY: apt-get install python3-torch (tests/install-deps)"
}

# sbatch the example and wait; its output in $W/$1.out.
train() {
	local name=$1; shift
	stacks_before_timeout 120 env DDP_TRAIN="$top/examples/ddp_train.py" CKPT_DIR="$W/ckpt.$name" "$@" \
		sbatch --wait --quiet -o "$W/$name.out" "$top/examples/train.sbatch" \
		--steps 40 --ckpt-every 10 --state-every 0
}

final_loss() { sed -n 's/^final loss: \([^ ]*\) .*/\1/p' "$W/$1.out"; }

@test "DDP example: a crash at step 25 restarts all ranks from step 20 and ends with the same loss" {
	SECONDS=0
	train plain || { cat "$W/plain.out"; return 1; }
	cat "$W/plain.out"
	train crash CRASH_RANK=1 CRASH_STEP=25 CRASH_MARKER="$W/crashed" ||
		{ cat "$W/crash.out"; return 1; }
	cat "$W/crash.out"
	# In the TAP output, for whoever compares runs or machines.
	echo "# final loss: $(final_loss plain) unbroken, $(final_loss crash) after a crash; $SECONDS s" >&3
	[ -n "$(final_loss plain)" ]
	[ "$(final_loss plain)" = "$(final_loss crash)" ]
	# The unbroken run never restarted; the other did, once, from step 20.
	grep -q "generation 0$" "$W/plain.out"
	! grep -q "resumed from" "$W/plain.out"
	[ -e "$W/crashed" ]
	grep -q "^\[rank 1 gen 0\] crashing at step 25" "$W/crash.out"
	[ "$(grep -c "gen 1\] resumed from step 20 " "$W/crash.out")" -eq 4 ]
	grep -q "generation 1$" "$W/crash.out"
	# Whole checkpoints only, the last two kept, and no temporary file left
	# (a complete step-*.pt.tmp.PID never renamed came from the example
	# before its all_gather fix).
	ls -la "$W/ckpt.plain" "$W/ckpt.crash"
	[ -z "$(find "$W"/ckpt.* -name '*.tmp*')" ]
	[ "$(ls "$W/ckpt.crash")" = "$(printf 'step-00000020.pt\nstep-00000030.pt')" ]
}
