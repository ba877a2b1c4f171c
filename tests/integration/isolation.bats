#!/usr/bin/env bats
# Tests stay on their own testbed. A decoy testbed of the same build runs
# beside ours ($PM_TESTBED_DIR-decoy, NET+3, nodes ${PM_TESTBED_PREFIX}dcI)
# with a step of the same job id and node ids as ours: every way the tests
# find a victim (procmgrd_of, testbed pids, our_procs) finds ours only, and
# one testbed's `down` leaves the other's whole.
load helpers

# Each may be set (PM_DECOY_DIR, _NET, _PREFIX); derived once: bats sources
# this file again for every test, with what the first time exported.
export PM_DECOY_DIR=${PM_DECOY_DIR:-$PM_TESTBED_DIR-decoy}
export PM_DECOY_NET=${PM_DECOY_NET:-$((${PM_TESTBED_NET:-10} + 3))}
export PM_DECOY_PREFIX=${PM_DECOY_PREFIX:-${PM_TESTBED_PREFIX:-pmnode}dc}
# A second one, briefly, whose directory's name starts with the decoy's.
export PM_DECOY_B_NET=${PM_DECOY_B_NET:-$((PM_DECOY_NET + 1))}
decoy() {
	PM_TESTBED_DIR=$PM_DECOY_DIR PM_TESTBED_NET=$PM_DECOY_NET PM_TESTBED_PREFIX=$PM_DECOY_PREFIX \
		"$top/tests/cluster/testbed" "$@"
}
# A command run against the decoy's Slurm.
in_decoy() { SLURM_CONF=$PM_DECOY_DIR/slurm.conf "$@"; }

setup_file() {
	decoy down
	decoy up 4 >/dev/null
}

teardown_file() {
	decoy down
	PM_DECOY_DIR=$PM_DECOY_DIR-b decoy down
}

teardown() {
	kill -CONT $(our_procs) 2>/dev/null || true
	in_decoy scancel --quiet -u root 2>/dev/null || true
	pm_teardown
}

# A step of 4 nodes x 2 ranks in the decoy, its job id $1: held jobs take
# the ids before it.
decoy_step() { # job
	local j=0
	while [ "$j" -lt $(($1 - 1)) ]; do
		j=$(in_decoy sbatch --parsable --hold -N1 -o /dev/null --wrap true)
	done
	in_decoy scancel --quiet -u root --state=PENDING
	touch "$W/decoy.log"
	in_decoy env PM_LOG="$W/decoy.log" timeout 200 srun -N4 -n8 --procmgr-restart=never \
		--export=ALL,RUN=150 "$WORKER" >"$W/decoy.out" 2>&1 &
	dpid=$!
	wait_until 30 bash -c "[ \$(grep -c ^start '$W/decoy.log') -ge 8 ]" ||
		{ cat "$W/decoy.out" "$W/decoy.log"; in_decoy squeue; in_decoy sinfo; false; }
	[ "$(ls -1t "$PM_DECOY_DIR/state" | head -n 1)" = "$1" ]
}

# Every pid of the list is alive and not stopped.
running() {
	local p s
	for p in "$@"; do
		s=$(ps -o stat= -p "$p") && [[ $s != T* && $s != Z* ]] || { echo "pid $p: '$s'"; return 1; }
	done
}

@test "faults injected through the testbed hit our step only, never a decoy's of the same job id" {
	timeout 200 srun -N4 -n8 --procmgr-restart=on-failure:3 --export=ALL,RUN=150 "$WORKER" >"$W/out" 2>&1 &
	pid=$!
	wait_until 30 started 8
	job=$(last_job)
	decoy_step "$job"
	# Both steps have 4 procmgrd and 8 procmgr-rank; none is in both lists.
	ours=$(our_procs | sort) theirs=$(decoy procs | sort)
	[ "$(wc -l <<<"$ours")" -eq 12 ]
	[ "$(wc -l <<<"$theirs")" -eq 12 ]
	[ -z "$(comm -12 <(echo "$ours") <(echo "$theirs"))" ]
	# Node index 2's procmgrd: one each, and ours is ours.
	victim=$(procmgrd_of "$job" 2) dvictim=$(decoy procmgrd "$job" 2)
	[ "$(wc -w <<<"$victim")" -eq 1 ]
	[ "$(wc -w <<<"$dvictim")" -eq 1 ]
	[ "$victim" != "$dvictim" ]
	tr '\0' ' ' <"/proc/$victim/cmdline" | grep -qF -- "--rundir $STATE/$job/0.2.run "
	# A crash of the decoy's node 4 (its slurmd, slurmstepd and all below)
	# is none of ours.
	crashed=$(decoy pids 4 | sort)
	[ "$(wc -l <<<"$crashed")" -ge 7 ] # slurmd, slurmstepd, procmgrd, 2 x (procmgr-rank, worker)
	[ -z "$(comm -12 <(echo "$crashed") <(tb pids 4 | sort))" ]
	[ -z "$(comm -12 <(echo "$crashed") <(echo "$ours"))" ]
	# The crash first: every process of ours runs on.
	kill -9 $crashed || true # a worker's short-lived child may be gone
	for p in $crashed; do wait_until 10 bash -c "s=\$(ps -o stat= -p $p); [ -z \"\$s\" ] || [[ \$s == Z* ]]"; done
	running $ours
	# Then our node index 2's procmgrd stopped: the decoy's of the same job
	# and node index is not (it may have ended: its step lost node 4).
	kill -STOP "$victim"
	[[ $(ps -o stat= -p "$victim") == T* ]]
	s=$(ps -o stat= -p "$dvictim" || true)
	[[ $s != T* ]]
	# Our step loses that node (which of the two says it first is a race
	# of procmgr's own on a loaded machine).
	wait "$pid" && st=0 || st=$?
	cat "$W/out"
	[ "$st" -ne 0 ]
	[ "$st" -ne 124 ] # not the bound
	grep -E -q "procmgr: (lost node ${P}3 \(no heartbeat for 5 s\)|rank [45] on ${P}3: its node's procmgrd stopped answering)" "$W/out"
	# The decoy's slurmd of node 4 comes back, for the next test.
	in_decoy slurmd -N "${PM_DECOY_PREFIX}4" -f "$PM_DECOY_DIR/slurm.conf"
	in_decoy scancel --quiet -u root
	wait "$dpid" || true
}

@test "each testbed has its own reserved ports, and one testbed's down leaves another's hosts lines" {
	# Ours, as tests/integration/run exported it, and the decoy's.
	ours=$PM_TESTBED_MPI_PORTS
	theirs=$(decoy env | sed -n 's/.* PM_TESTBED_MPI_PORTS=\([0-9]*-[0-9]*\).*/\1/p')
	echo "ours $ours, the decoy's $theirs"
	[ -n "$ours" ]
	[ -n "$theirs" ]
	[ "${theirs%-*}" -gt "${ours#*-}" ] || [ "${theirs#*-}" -lt "${ours%-*}" ]
	grep -qx "MpiParams=ports=$PM_TESTBED_MPI_PORTS" "$PM_TESTBED_DIR/slurm.conf"
	# A testbed whose directory's name starts with the decoy's.
	PM_DECOY_DIR=$PM_DECOY_DIR-b PM_DECOY_NET=$PM_DECOY_B_NET PM_DECOY_PREFIX=${PM_DECOY_PREFIX}b decoy up 1
	[ "$(getent hosts "${PM_DECOY_PREFIX}b1" | awk '{ print $1 }')" = "127.$PM_DECOY_B_NET.0.1" ]
	decoy down
	[ -z "$(getent hosts "${PM_DECOY_PREFIX}1")" ]
	[ "$(getent hosts "${PM_DECOY_PREFIX}b1" | awk '{ print $1 }')" = "127.$PM_DECOY_B_NET.0.1" ]
	# A testbed with our node names is refused before it starts.
	run env PM_TESTBED_DIR="$PM_DECOY_DIR-c" PM_TESTBED_PREFIX="$P" PM_TESTBED_NET=$PM_DECOY_NET \
		"$top/tests/cluster/testbed" up 1
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"testbed: the testbed in /"*": node "*"this one's nodes (${P}<i> at 127.$PM_DECOY_NET.x.y) need another PM_TESTBED_PREFIX and PM_TESTBED_NET"* ]]
	[ ! -e "$PM_DECOY_DIR-c" ]
	PM_DECOY_DIR=$PM_DECOY_DIR-b decoy down
	[ -z "$(getent hosts "${PM_DECOY_PREFIX}b1")" ]
}
