#!/usr/bin/env bats
# Attacks on the control tree by an ordinary user (nobody) on the same
# nodes. Each asserts that nothing the attacker says is obeyed or shown.
load helpers

teardown() {
	[ -z "${imp:-}" ] || kill "$imp" 2>/dev/null || true
	pm_teardown
}

@test "an impostor holding node 0's control ports: the step fails at once naming node and port, nothing obeys the impostor" {
	# nobody takes every port Slurm may reserve (MpiParams=ports=20000-20999)
	# on pmnode1's address before the step starts, and answers each child
	# with a forged WELCOME (its own credential, the child's nonce copied),
	# START, and an ABORT.
	touch "$W/imp.log"
	chmod 0666 "$W/imp.log"
	runuser -u nobody -- /usr/bin/python3 "$top/tests/integration/impostor.py" 127.0.0.11 \
		20000 20999 "$PM_TESTBED_DIR/munge/munge.socket" "$W/imp.log" &
	imp=$!
	wait_until 20 grep -q listening "$W/imp.log"
	run timeout 60 srun -N4 -n8 --procmgr-restart=on-failure:3 --export=ALL,RUN=1 "$WORKER"
	echo "$output"; cat "$W/imp.log"
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
	[[ "$output" == *"cannot listen on the step's control port pmnode1:"*"Address already in use (another process holds it)"* ]]
	[[ "$output" != *FORGED* ]]
	[ "$(count start)" -eq 0 ]
	echo "# $(grep -c "^answered" "$W/imp.log") children reached the impostor; $(grep -c . "$W/imp.log") lines: $(tr "\n" "|" <"$W/imp.log" | head -c 300)" >&3
	# A child that reached the impostor refused its proof, and said so.
	job=$(last_job)
	if grep -q "^answered node" "$W/imp.log"; then
		grep -h "did not prove it is this step's procmgrd (credential of uid 65534, not the job's user (uid 0))" \
			"$STATE/$job"/*.log
	fi
}
