#!/usr/bin/env bats
# torchrun's whole worker environment, as a rank sees it.
load helpers

# One line per rank and generation: the variables torchrun sets, and whether
# the rank's error file is there when it starts.
envline='echo "env rank=$RANK gen=$PROCMGR_RESTART_COUNT role=$ROLE_NAME rrank=$ROLE_RANK rws=$ROLE_WORLD_SIZE gws=$GROUP_WORLD_SIZE trc=$TORCHELASTIC_RESTART_COUNT tmax=$TORCHELASTIC_MAX_RESTARTS run=$TORCHELASTIC_RUN_ID tnccl=$TORCH_NCCL_ASYNC_ERROR_HANDLING nccl=$NCCL_ASYNC_ERROR_HANDLING omp=${OMP_NUM_THREADS-unset} errfile=$TORCHELASTIC_ERROR_FILE stale=$([ -e "$TORCHELASTIC_ERROR_FILE" ] && echo yes || echo no) job=$SLURM_JOB_ID.$SLURM_STEP_ID node=$SLURM_NODEID local=$LOCAL_RANK" >>"$PM_LOG"'

@test "ranks get torchrun's worker environment; an error file does not outlive its generation" {
	# Rank 1 leaves an error file in generation 0 and fails: generation 1
	# must start without it.
	run srun -N2 -n4 --procmgr-restart=on-failure:1 bash -c "$envline"'
		if [ "$RANK" = 1 ] && [ "$PROCMGR_RESTART_COUNT" = 0 ]; then
			# Only once every rank has said its line: a stop would cut it.
			for _ in $(seq 400); do
				[ "$(grep -c "^env .* gen=0 " "$PM_LOG")" -ge 4 ] && break
				sleep 0.05
			done
			echo "{\"message\": \"boom\"}" >"$TORCHELASTIC_ERROR_FILE"; exit 1
		fi'
	echo "$output"; cat "$PM_LOG"
	[ "$status" -eq 0 ]
	[ "$(count '^env ')" -eq 8 ]
	for g in 0 1; do
		for r in 0 1 2 3; do
			line=$(grep "^env rank=$r gen=$g " "$PM_LOG")
			[[ "$line" == *" role=default rrank=$r rws=4 gws=2 trc=$g tmax=1 "* ]] ||
				{ echo "bad: $line"; return 1; }
			[[ "$line" == *" tnccl=1 nccl=1 omp=1 "* ]] || { echo "bad: $line"; return 1; }
			[[ "$line" == *" stale=no "* ]] || { echo "stale error file: $line"; return 1; }
			# The run id is the step's; the error file is in the node's run
			# directory, one per local rank and generation.
			id=$(sed 's/.* job=\([^ ]*\) .*/\1/' <<<"$line")
			[[ "$line" == *" run=$id "* ]] || { echo "bad run id: $line"; return 1; }
			node=$(sed 's/.* node=\([^ ]*\) .*/\1/' <<<"$line")
			lr=$(sed 's/.* local=\([^ ]*\)$/\1/' <<<"$line")
			[[ "$line" == *" errfile=$STATE/${id%.*}/${id#*.}.$node.run/error.$lr.$g.json "* ]] ||
				{ echo "bad error file: $line"; return 1; }
		done
	done
}

@test "torchrun's defaults give way to the user's values; one rank per node keeps OpenMP's" {
	run env NCCL_ASYNC_ERROR_HANDLING=0 TORCH_NCCL_ASYNC_ERROR_HANDLING=0 ROLE_NAME=trainer \
		srun -N2 -n2 --procmgr bash -c "$envline"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	cat "$PM_LOG"
	[ "$(count '^env ')" -eq 2 ]
	[ "$(count ' role=trainer .* tnccl=0 nccl=0 omp=unset ')" -eq 2 ]
	run env OMP_NUM_THREADS=3 srun -N1 -n2 --procmgr bash -c "$envline"
	[ "$status" -eq 0 ]
	[ "$(count ' omp=3 ')" -eq 2 ]
}
