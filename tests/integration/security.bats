#!/usr/bin/env bats
# Attacks on the control tree by an ordinary user (nobody) on the same
# nodes. Each asserts that nothing the attacker says is obeyed or shown.
load helpers

teardown() {
	[ -z "${imp:-}" ] || kill "$imp" 2>/dev/null || true
	[ -z "${mounted:-}" ] || umount "$STATE"
	# A test that opened state_dir to other users closes it again.
	chown root:root "$STATE"
	chmod 0755 "$STATE"
	[ ! -f "$W/plugstack.orig" ] || cp "$W/plugstack.orig" "$PM_TESTBED_DIR/plugstack.conf"
	[ -z "${R:-}" ] || rm -rf "$R"
	pm_teardown
}

@test "an impostor holding node 0's control ports: the step fails at once naming node and port, nothing obeys the impostor" {
	# nobody takes every port Slurm may reserve (the testbed's MpiParams=ports)
	# on node 1's address before the step starts, and answers each child
	# with a forged WELCOME (its own credential, the child's nonce copied),
	# START, and an ABORT.
	touch "$W/imp.log"
	chmod 0666 "$W/imp.log"
	runuser -u nobody -- /usr/bin/python3 "$top/tests/integration/impostor.py" "$("$top/tests/cluster/testbed" addr 1)" \
		"${PM_TESTBED_MPI_PORTS%-*}" "${PM_TESTBED_MPI_PORTS#*-}" "$PM_TESTBED_DIR/munge/munge.socket" "$W/imp.log" &
	imp=$!
	wait_until 20 grep -q listening "$W/imp.log"
	run timeout 60 srun -N4 -n8 --procmgr-restart=on-failure:3 --export=ALL,RUN=1 "$WORKER"
	echo "$output"; cat "$W/imp.log"
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
	[[ "$output" == *"cannot listen on the step's control port ${P}1:"*"Address already in use (another process holds it)"* ]]
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

# A step of nobody's that runs RUN seconds; its job id in $job.
nobody_step() {
	as_user timeout 60 srun -N4 -n8 --procmgr --export=ALL,RUN=$1 "$WORKER" >"$W/out" 2>&1 &
	pid=$!
	wait_until 30 started 8
	job=$(last_job)
}

@test "a FIFO planted as the health report: root never blocks on it, the job completes, the node is not left completing" {
	nobody_step 2
	as_user mkfifo "$STATE/$job/0.1.unhealthy"
	wait "$pid"
	wait_until 20 bash -c "! squeue -h -j $job 2>/dev/null | grep -q ."
	! sinfo -h -o '%T' | grep -q -i comp
	grep -q "ignoring $STATE/$job/0.1.unhealthy: not a regular file of the job's user" \
		"$PM_TESTBED_DIR"/log/slurmd-${P}2.log
}

@test "a symlink planted as the health report is not followed: its target is neither read nor removed" {
	echo "secret: do not drain" >"$W/target"
	chmod 0644 "$W/target"
	nobody_step 2
	as_user ln -s "$W/target" "$STATE/$job/0.2.unhealthy"
	wait "$pid"
	wait_until 20 bash -c "! squeue -h -j $job 2>/dev/null | grep -q ."
	[ "$(cat "$W/target")" = "secret: do not drain" ]
	! sinfo -h -R | grep -q secret
}

@test "a flood of connections that never say hello is bounded and logged in summary; a restart during it works" {
	srun -N4 -n8 --procmgr-restart=on-failure:1 --export=ALL,RUN=4 "$WORKER" >"$W/out" 2>&1 &
	pid=$!
	wait_until 30 started 8
	job=$(last_job)
	port=$(grep -o 'ports=[0-9]*' "$PM_LOG" | head -n1 | cut -d= -f2)
	# nobody opens 200 connections to node 0's control port and says nothing.
	runuser -u nobody -- /usr/bin/python3 - "$port" "${P}1" >"$W/flood" 2>&1 <<-'PY' &
	import select, socket, sys, time
	port = int(sys.argv[1])
	socks = [socket.create_connection((sys.argv[2], port), timeout=5) for _ in range(200)]
	print("open", len(socks), flush=True)
	t0, left = time.time(), set(socks)
	while left and time.time() - t0 < 10:
	    r, _, _ = select.select(list(left), [], [], 0.5)
	    for s in r:
	        if not s.recv(100):
	            left.discard(s)
	print("closed %d of %d in %.1f s" % (len(socks) - len(left), len(socks), time.time() - t0))
	PY
	flood=$!
	wait_until 10 grep -q "^open" "$W/flood"
	# A real failure during the flood: the restart must go through.
	kill -9 "$(sed -n 's/^start rank=1 gen=0 .* pid=\([0-9]*\) .*/\1/p' "$PM_LOG" | head -n 1)"
	wait "$pid" && st=0 || st=$?
	wait "$flood" || true
	cat "$W/out" "$W/flood"
	[ "$st" -eq 0 ]
	[ "$(count 'done .*gen=1')" -eq 8 ]
	grep -q "^closed 200 of 200" "$W/flood"
	# At most 10 refusals a window in full, not one line a connection.
	n=$(grep -c "refused tree connection" "$STATE/$job/0.0.log")
	echo "refusal lines: $n"
	[ "$n" -ge 1 ] && [ "$n" -le 11 ]
	grep -q "refused tree connection: too many connections that have not said hello" \
		"$STATE/$job/0.0.log"
	events "$job" 0 | grep '"event":"start"' | sed 's/^/# /' >&3
}

# PATH kind: what nobody plants at PATH (the name root will touch at the
# step's end): a FIFO, a symlink or a hard link to a file of W, or a
# directory.
plant() {
	local path=$1 kind=$2
	as_user rm -rf "$path" 2>/dev/null || mv "$path" "$W/moved.$RANDOM"
	case $kind in
	fifo) as_user mkfifo "$path" ;;
	symlink) as_user ln -s "$W/target" "$path" ;;
	hardlink) as_user ln "$W/own" "$path" ;;
	directory) as_user mkdir "$path" && as_user touch "$path/inside" ;;
	esac
}

@test "every name root touches in the user's job directory, replaced by a FIFO, a symlink, a hard link or a directory: nothing blocks, nothing is followed" {
	echo "root's file" >"$W/target"
	chmod 0644 "$W/target"
	as_user sh -c "echo 'the user s file' >$W/own"
	for what in report log rundir; do
		for kind in fifo symlink hardlink directory; do
			nobody_step 1
			case $what in
			report) path=$STATE/$job/0.1.unhealthy ;;
			log) path=$STATE/$job/0.1.log ;;
			rundir) path=$STATE/$job/0.1.run ;;
			esac
			plant "$path" "$kind"
			wait "$pid" || true
			wait_until 20 bash -c "! squeue -h -j $job 2>/dev/null | grep -q ." ||
				{ echo "$what as $kind: job $job did not end"; return 1; }
			! sinfo -h -o '%T' | grep -q -i comp || { echo "$what as $kind: node completing"; return 1; }
			[ "$(cat "$W/target")" = "root's file" ] || { echo "$what as $kind: target changed"; return 1; }
			[ "$(cat "$W/own")" = "the user s file" ] || { echo "$what as $kind: own file changed"; return 1; }
			echo "# $what as $kind: job ended, nothing followed" >&3
			: >"$PM_LOG"
		done
	done
}

# Issue 20 item 7: root creates, chmods and renames its files in state_dir
# (the topology cache), so another user who may write there could plant a
# link or a FIFO under their names (which made root chmod a root-only file
# 0644). Such a state_dir is refused, judged without following a link.
@test "a state_dir that another user may write or owns is refused on every node, saying what is wrong and what is allowed; root creates nothing in it" {
	local mode owner
	for how in 1777 0775 nobody; do
		case $how in
		nobody) chown nobody "$STATE"; chmod 0755 "$STATE"; mode=0755; owner=65534 ;;
		*) chmod "$how" "$STATE"; mode=$how; owner=0 ;;
		esac
		run timeout 60 srun -N2 -n2 --cpu-bind=none --procmgr-bind=cpu,mem true
		echo "$output"
		[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
		[[ "$output" == *"$STATE "*" (owner uid $owner, mode $mode): it must be a directory of uid 0 that only its owner may write (chown 0; chmod go-w)"* ]]
		# No job directory, no topology cache, no temporary file.
		[ -z "$(find "$STATE" -mindepth 1 -newer "$W" -print -quit)" ]
		chown root "$STATE"; chmod 0755 "$STATE"
	done
	# A link in its place is not followed.
	mv "$STATE" "$STATE.real"
	ln -s "$STATE.real" "$STATE"
	run timeout 60 srun -N1 --procmgr true
	rm "$STATE"; mv "$STATE.real" "$STATE"
	echo "$output"
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
	[[ "$output" == *"$STATE is not a directory (a link is not followed)"* ]]
	# Root's own, private: the steps run again.
	run timeout 60 srun -N2 -n2 --procmgr true
	[ "$status" -eq 0 ]
}

# Issue 32 item 8: with state_dir below a user's link to a root-only
# directory, root made the state directory, the topology cache and job
# directories there. Every directory above state_dir is judged, from "/".
@test "a state_dir below another user's link, or below a directory other users may write or own, is refused on every node naming that directory; root creates nothing through it" {
	local c sub want before
	# Not below $W: every user may write it.
	R=$(mktemp -d /tmp/pm-it-r.XXXXXX)
	chmod 0755 "$R"
	mkdir -m 0700 "$R/rootonly"
	mkdir -m 0755 "$R/x" "$R/users"
	ln -s "$R/rootonly" "$R/x/link"
	chown -h nobody "$R/x/link"
	mkdir -m 0777 "$R/open"
	chown nobody "$R/users"
	mkdir -m 1777 "$R/sticky"
	cp "$PM_TESTBED_DIR/plugstack.conf" "$W/plugstack.orig"
	for c in "x/link|$R/x/link above it is a link of another user's (owner uid $(id -u nobody)" \
		"open|$R/open above it may be written by other users (owner uid 0, mode 0777)" \
		"users|$R/users above it belongs to another user (owner uid $(id -u nobody)"; do
		sub=${c%%|*} want=${c#*|}
		sed "s|state_dir=[^ ]*|state_dir=$R/$sub/state|" "$W/plugstack.orig" >"$PM_TESTBED_DIR/plugstack.conf"
		before=$(find "$R" | sort)
		run timeout 60 srun -N2 -n2 --procmgr true
		echo "$output"
		[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
		[[ "$output" == *"procmgr: $R/$sub/state: $want"*"): every directory above it must be root's"* ]]
		# No state_dir, job directory or topology cache, there or beyond.
		[ "$(find "$R" | sort)" = "$before" ]
		run "$PROCMGR" check-config "$PM_TESTBED_DIR/plugstack.conf"
		[ "$status" -eq 1 ]
		[[ "$output" == *"state_dir: $R/$sub/state: $want"* ]]
	done
	# Root's own directories, a sticky one of root's above: the steps run.
	sed "s|state_dir=[^ ]*|state_dir=$R/sticky/state|" "$W/plugstack.orig" >"$PM_TESTBED_DIR/plugstack.conf"
	run timeout 60 srun -N2 -n2 --procmgr true
	echo "$output"
	[ "$status" -eq 0 ]
	[ -d "$R/sticky/state" ]
}

# Issue 20 item 10: the event log's first write failed before rank 0's
# supervisor had come, so the warning reached no one.
@test "a full state_dir at the step's start: srun's stderr says the event log cannot be written" {
	mount -t tmpfs -o size=64k,mode=0755 tmpfs "$STATE"
	mounted=1
	dd if=/dev/zero of="$STATE/fill" bs=4k 2>/dev/null || true
	run timeout 60 srun -N2 -n2 --procmgr true
	umount "$STATE"
	mounted=
	echo "$output"
	[[ "$output" == *"procmgr: the step's event log cannot be written (No space left on device): events from now on are lost (is state_dir full?)"* ]]
	[ "$(grep -c "event log cannot be written" <<<"$output")" -eq 1 ]
}

# Issue 20 item 8: the procmgr command gave its signed request to whoever
# listened on node 0's control port and showed what it said. Once the root
# has moved (spares: node 0's procmgrd killed), nobody holds that port, and
# another user (nobody) binds it: it relays the first request to the real
# root and forges its answer, keeps the next ones and answers them itself.
@test "an impostor on the old root's port after the root moved: the command shows nothing it says; its relayed and its kept credentials are refused by the real root" {
	srun --no-kill -N4 --ntasks-per-node=1 --procmgr-spares=1 --procmgr-restart=on-failure:3 \
		--export=ALL,RUN=60 "$WORKER" >"$W/out" 2>&1 &
	pid=$!
	wait_until 30 started 3
	job=$(last_job)
	port=$(scontrol show step -o "$job.0" | grep -o 'ResvPorts=[0-9]*' | cut -d= -f2)
	kill -9 "$(procmgrd_of "$job" 0)"
	wait_until 40 bash -c "[ \$(grep -c '^start .* gen=1 ' '$PM_LOG') -ge 3 ]" || { cat "$W/out"; false; }
	grep -q '"event":"root_moved"' "$STATE/$job/0.events.jsonl"
	mkdir "$W/imp"
	chmod 0777 "$W/imp"
	runuser -u nobody -- /usr/bin/python3 "$top/tests/integration/impostor_cli.py" "$(tb addr 1)" \
		"$port" "${P}2" "$PM_TESTBED_DIR/munge/munge.socket" "$W/imp" &
	imp=$!
	wait_until 20 grep -q listening "$W/imp/imp.log"
	proof="the process on ${P}1:$port could not prove it is step $job.0's procmgrd: its credential is of uid 65534, neither the job's user (uid 0) nor root (its answer is not shown)"
	signed="procmgr: the request was signed for ${P}1:$port, not for this node (${P}2:$port)"

	# (a) Relayed to the real root and forged (every rank "failed", every
	# node FORGED): not shown; the real root, asked next, answers.
	run timeout 30 "$PROCMGR" status "$job"
	echo "$output"; cat "$W/imp/imp.log"
	[ "$status" -eq 0 ]
	[[ "$output" != *FORGED* ]] && [[ "$output" != *failed* ]]
	[[ "$output" == *"procmgr: warning: $proof"* ]]
	grep -q "^step $job.0: 3 ranks on 3 nodes: 3 running; generation 1" <<<"$output"
	# The real root did not answer the relayed request.
	grep -q "^root said 7: $signed" "$W/imp/imp.log"
	! grep -q "^root said 2[34]" "$W/imp/imp.log"

	# (b) A request kept by the impostor, replayed to the real root.
	run timeout 30 "$PROCMGR" status "$job"
	[ "$status" -eq 0 ] && [[ "$output" != *FORGED* ]]
	[ -s "$W/imp/cred.2" ]
	run runuser -u nobody -- /usr/bin/python3 "$top/tests/integration/impostor_cli.py" --send \
		"${P}2" "$port" "$W/imp/cred.2"
	echo "$output"
	[[ "$output" == "7 $signed"* ]]

	# A forged "stopping every rank" is not believed; the real root stops.
	run timeout 30 "$PROCMGR" stop "$job"
	echo "$output"
	[ "$status" -eq 0 ] && [[ "$output" != *FORGED* ]]
	[[ "$output" == *"procmgr: warning: $proof"* ]]
	[[ "$output" == *"procmgr: step $job.0: stopping every rank"* ]]
	grep -q "^request 3: procmgr-client v2 stop job=$job step=0 to=${P}1:$port nonce=" "$W/imp/imp.log"
	wait "$pid" || true
	[ "$(grep -c '"event":"stop_requested"' "$STATE/$job/0.events.jsonl")" -eq 1 ]
}
