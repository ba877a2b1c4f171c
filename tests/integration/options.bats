#!/usr/bin/env bats
# Options are checked in srun/sbatch/salloc, before anything starts.
load helpers

next_job_id() { scontrol show config | awk '/^NEXT_JOB_ID/ {print $3}'; }

@test "srun --help lists every procmgr option, README's option list is the same, and one slow default" {
	run srun --help
	[ "$status" -eq 0 ]
	help=$(grep -o -- '--procmgr[a-z-]*' <<<"$output" | sort -u)
	# README's list: from "Options (" to "Commands:".
	readme=$(sed -n '/^Options (/,/^Commands:/p' "$BATS_TEST_DIRNAME/../../README.md" |
		grep -o -- '--procmgr[a-z-]*' | sort -u)
	[ "$(wc -l <<<"$help")" -ge 17 ] || { echo "srun --help lists too few: $help"; return 1; }
	[ "$help" = "$readme" ] || { echo "srun --help and README differ:"; diff <(echo "$help") <(echo "$readme"); return 1; }
	# The help names the default that the step runs with (options.h).
	pct=$(sed -n 's/^#define PM_DEFAULT_SLOW_THRESHOLD_PCT \([0-9]*\)$/\1/p' \
		"$BATS_TEST_DIRNAME/../../runtime/common/options.h")
	flat=$(tr -s ' \n' '  ' <<<"$output") # srun wraps the help's lines
	[ -n "$pct" ] && [[ "$flat" == *"(on: $pct%)"* ]] || { echo "slow's default $pct% not in: $output"; return 1; }
	run srun -N1 -n1 --procmgr-slow=on --procmgr-verbose true
	[[ "$output" == *"slow=5,$pct%"* ]] || { echo "$output"; return 1; }
	# Eviction alone turns detection on: the step runs with it, and says so.
	run srun -N1 -n1 --procmgr-evict-slow --procmgr-verbose printenv PROCMGR_STEP_OPTIONS
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == *"slow=5,$pct%"* && "$output" != *"slow=off"* ]] || { echo "$output"; return 1; }
}

@test "durations in Slurm's forms reach the ranks resolved to seconds; --help says so" {
	run srun --help
	[[ "$output" == *"TIME: seconds, 90s, 5m"* ]] || { echo "$output"; return 1; }
	run srun -N1 -n1 --procmgr-grace=1:30 --procmgr-restart-delay=0.5s \
		--procmgr-hang-timeout=0-0:10 --procmgr-health-interval=2m \
		printenv PROCMGR_STEP_OPTIONS
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	for want in restart-delay=0.5 grace=90 health-interval=120 hang-timeout=600; do
		[[ " $output " == *" $want "* ]] || { echo "no $want in: $output"; return 1; }
	done
}

@test "sbatch and salloc list the options too" {
	run sbatch --help
	[[ "$output" == *"--procmgr-restart"* ]]
	run salloc --help
	[[ "$output" == *"--procmgr-restart"* ]]
}

@test "srun -N4 -n8 --procmgr true succeeds, as root and as an ordinary user" {
	run srun -N4 -n8 --procmgr true
	[ "$status" -eq 0 ]
	run as_user srun -N4 -n8 --procmgr true
	[ "$status" -eq 0 ]
}

@test "each bad option value is refused by srun with one clear message, nothing launched" {
	local before after
	before=$(next_job_id)
	while read -r opt val allowed; do
		run srun -N1 "--procmgr-$opt=$val" true
		[ "$status" -ne 0 ] || { echo "--procmgr-$opt=$val was accepted"; return 1; }
		[[ "$output" == *"procmgr: invalid value '$val' for --procmgr-$opt"* ]] ||
			{ echo "$output"; return 1; }
		[[ "$output" == *"$allowed"* ]] || { echo "no '$allowed' in: $output"; return 1; }
	done <<-'LIST'
	restart sometimes never, on-failure[:N] or always[:N]
	restart on-failure:x never, on-failure[:N] or always[:N]
	restart-delay -1 a duration from 0 to 60 s
	restart-delay 61 a duration from 0 to 60 s
	restart-delay 2m a duration from 0 to 60 s
	grace 1.2345 a duration from 0 to 3600 s
	grace 1:60 M:S, H:M:S, D-H, D-H:M, D-H:M:S
	bind gpu,disk none, closest, or a comma-separated list
	health gpu,bogus unknown check
	health-interval 0.5 0 (off) or a duration from 1 s
	hang-timeout abc 0 (off) or a duration from 0.1 s
	warm yes on, off or python:MOD[,MOD...]
	warm no on, off or python:MOD[,MOD...]
	slow 5s,0% on, off (or 0), or an interval
	LIST
	after=$(next_job_id)
	[ "$before" = "$after" ] || { echo "jobs were created: $before -> $after"; return 1; }
	# Two options that contradict each other: refused the same way.
	run srun -N1 --procmgr-slow=off --procmgr-evict-slow true
	[ "$status" -ne 0 ] && [[ "$output" == *"--procmgr-evict-slow needs slow-node detection"* ]] ||
		{ echo "$output"; return 1; }
}

@test "sbatch and salloc refuse a bad value before a job exists" {
	local before=$(next_job_id)
	run sbatch --procmgr-grace=forever --wrap true
	[ "$status" -ne 0 ]
	[[ "$output" == *"invalid value 'forever' for --procmgr-grace"* ]]
	run salloc --procmgr-restart=often true
	[ "$status" -ne 0 ]
	[[ "$output" == *"invalid value 'often' for --procmgr-restart"* ]]
	[ "$(next_job_id)" = "$before" ]
}

@test "a request over the site's max_restarts is refused, naming the cap" {
	run srun -N1 --procmgr-restart=on-failure:11 true
	[ "$status" -ne 0 ]
	[[ "$output" == *"max_restarts=10"* ]]
}

@test "#SBATCH options apply to the script's srun steps; an srun flag overrides them" {
	cat >job.sh <<-'EOS'
	#!/bin/bash
	#SBATCH --procmgr-restart=on-failure:2
	#SBATCH --procmgr-verbose
	#SBATCH -N2 -n2
	srun -N2 -n2 true
	srun -N2 -n2 --procmgr-restart=never true
	EOS
	run sbatch --wait -o "$W/out" job.sh
	[ "$status" -eq 0 ]
	run cat "$W/out"
	echo "$output"
	# The first step gets the script's policy, on both sides of Slurm.
	[[ "${lines[0]}" == *"step options: procmgr restart=on-failure:2 "* ]]
	[[ "$output" == *"rank 0 runs with: procmgr restart=on-failure:2 "* ]]
	[[ "$output" == *"step options: procmgr restart=never "* ]]
	[[ "$output" == *"rank 0 runs with: procmgr restart=never "* ]]
}

# A copy of the cluster's configuration with another plugstack.conf: srun
# reads it itself (local side); slurmstepd reads the cluster's (remote side).
conf_with_plugstack() {
	sed "s#^PlugStackConfig=.*#PlugStackConfig=$W/plugstack.conf#" "$SLURM_CONF" >"$W/slurm.conf"
	echo "required $top/.libs/procmgr.so runtime=$top/procmgrd state_dir=$STATE $1" >"$W/plugstack.conf"
	chmod 0644 "$W/slurm.conf" "$W/plugstack.conf"
}

@test "a bad plugstack.conf argument is refused in srun, naming file, key and value" {
	local before=$(next_job_id)
	for arg in fanout=1 colour=blue drain=maybe ports=3000 max_restarts=-2 runtime=relative; do
		conf_with_plugstack "$arg"
		run env SLURM_CONF="$W/slurm.conf" srun -N1 --procmgr true
		[ "$status" -ne 0 ] || { echo "$arg accepted"; return 1; }
		[[ "$output" == *"procmgr: $W/plugstack.conf: "* ]] || { echo "$output"; return 1; }
		[[ "$output" == *"'${arg%%=*}'"* && "$output" == *"${arg#*=}"* ]] ||
			{ echo "$output"; return 1; }
	done
	[ "$(next_job_id)" = "$before" ]
}

@test "a bad plugstack.conf argument on the nodes fails the step with the reason, and is in the slurmd log" {
	# srun sees a good file; the nodes' slurmstepd see a bad one.
	conf_with_plugstack ""
	cp "$PM_TESTBED_DIR/plugstack.conf" "$W/good"
	sed -i 's/$/ fanout=zero/' "$PM_TESTBED_DIR/plugstack.conf"
	run env SLURM_CONF="$W/slurm.conf" srun -N1 --procmgr true
	cp "$W/good" "$PM_TESTBED_DIR/plugstack.conf"
	[ "$status" -ne 0 ]
	[[ "$output" == *"bad value 'zero' for key 'fanout'"* ]]
	grep -q "bad value 'zero' for key 'fanout'" "$PM_TESTBED_DIR"/log/slurmd-*.log
}

@test "without any procmgr option, a step is not touched" {
	run srun -N2 -n2 bash -c 'echo "${PROCMGR_SOCK:-none} ${RANK:-none}"'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "none none" ]
}

# Slurm's PMIx/PMI2 server serves one launch per step: a restarted rank's
# MPI_Init would fail, so srun refuses the combination before any job exists.
@test "restarts with --mpi=pmi2 (or SLURM_MPI_TYPE) are refused before launch, saying why; MPI without restarts runs" {
	# 22.05 refuses before a job exists, 24.11 (which resolves --mpi after
	# the options' callback) before the step launches: no task ever runs.
	run srun -N1 -n1 --mpi=pmi2 --procmgr-restart=on-failure:2 touch "$W/ran"
	[ "$status" -ne 0 ] || { echo "accepted: $output"; return 1; }
	[[ "$output" == *"--mpi=pmi2"*"one launch per step"*"--procmgr-restart=never"* ]] ||
		{ echo "$output"; return 1; }
	SLURM_MPI_TYPE=pmi2 run srun -N1 -n1 --procmgr-restart=always:1 touch "$W/ran"
	[ "$status" -ne 0 ] || { echo "accepted with SLURM_MPI_TYPE: $output"; return 1; }
	[[ "$output" == *"--mpi=pmi2"* ]] || { echo "$output"; return 1; }
	[ ! -e "$W/ran" ] || { echo "a task ran"; return 1; }
	# Supervision without restarts, and restarts without Slurm's MPI server.
	run srun -N1 -n1 --mpi=pmi2 --procmgr-restart=never printenv PMI_FD
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run srun -N1 -n1 --mpi=none --procmgr-restart=on-failure:2 true
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}
