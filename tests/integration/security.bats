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

# Issue 32 item 4: a rank opened 12,000 connections to its node's state
# socket and held procmgrd at its descriptor limit; the step hung. Here
# rank 0 (on the root's node, whose procmgrd's limit is made 512) opens
# 3,000 to the state socket and 3,000 to the supervisors' socket: procmgrd
# holds only its bounds of them, the step's status answers, a restart
# works, and once the rank closes them procmgrd holds what it held before.
@test "a rank opening thousands of connections to its node's sockets cannot wedge procmgrd: status answers, a restart works, nothing leaks" {
	srun -N2 -n4 --procmgr-restart=on-failure:1 --export=ALL,FLOOD_DIR="$W" \
		/usr/bin/python3 "$top/tests/integration/flood_rank.py" 3000 >"$W/out" 2>&1 &
	pid=$!
	wait_until 30 test -f "$W/pid.0.0" -a -f "$W/pid.1.0" -a -f "$W/pid.2.0" -a -f "$W/pid.3.0"
	job=$(last_job)
	pd=$(procmgrd_of "$job" 0)
	before=$(ls "/proc/$pd/fd" | wc -l)
	prlimit --pid "$pd" --nofile=512:512
	touch "$W/go.flood"
	wait_until 90 test -f "$W/flooded" || { cat "$W/out"; false; }
	during=$(ls "/proc/$pd/fd" | wc -l)
	# Not spinning on a full descriptor table: under half a CPU over 2 s.
	t0=$(awk '{print $14 + $15}' "/proc/$pd/stat")
	sleep 2
	t1=$(awk '{print $14 + $15}' "/proc/$pd/stat")
	run timeout 30 "$PROCMGR" status "$job.0"
	echo "status during the flood: $output"
	[ "$status" -eq 0 ]
	touch "$W/go.close"
	wait_until 20 grep -q "saved after the flood" "$W/out" || { cat "$W/out"; false; }
	# A rank's failure: the restart goes through.
	kill -9 "$(cat "$W/pid.1.0")"
	wait "$pid" && st=0 || st=$?
	cat "$W/out"
	echo "procmgrd's descriptors: $before before, $during during the flood; CPU $((t1 - t0)) ticks in 2 s"
	[ "$st" -eq 0 ]
	[ "$(grep -c "gen 1\] done" "$W/out")" -eq 4 ]
	# procmgrd held its bounds, not the flood: 32 of the rank's and 16
	# refused state connections, 4 of one process on the supervisors'.
	line=$(grep "flood: state socket" "$W/out")
	held_state=$(sed -n 's/.*closed by procmgrd, \([0-9]*\) held; supervisors.*/\1/p' <<<"$line")
	held_sup=$(sed -n 's/.* \([0-9]*\) held$/\1/p' <<<"$line")
	[ "$held_state" -le 48 ] && [ "$held_sup" -le 4 ]
	[ "$during" -le $((before + 60)) ]
	[ $((t1 - t0)) -lt 100 ]
	grep -q "state socket: refused: rank 0 holds 32 connections to the state socket, at most 32" \
		"$STATE/$job/0.0.log"
}

# Issue 32 item 6: another user's flood of silent connections to the
# root's control port (reopening each one closed) locked the owner out:
# procmgr status was told busy 3 times out of 3. The owner's request is
# read early and has room of its own.
@test "another user's flood of silent connections to the control port: the owner's procmgr status answers every time" {
	srun -N2 -n2 --procmgr --export=ALL,RUN=60 "$WORKER" >"$W/out" 2>&1 &
	pid=$!
	wait_until 30 started 2
	job=$(last_job)
	port=$(grep -o 'ports=[0-9]*' "$PM_LOG" | head -n1 | cut -d= -f2)
	runuser -u nobody -- /usr/bin/python3 - "${P}1" "$port" "$W/flood.stop" >"$W/flood" 2>&1 <<-'PY' &
	import os, select, socket, sys, time
	host, port, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3]
	socks, opened, said = set(), 0, False
	t0 = time.time()
	while not os.path.exists(stop) and time.time() - t0 < 90:
	    while len(socks) < 200:
	        try:
	            socks.add(socket.create_connection((host, port), timeout=2))
	            opened += 1
	        except OSError:
	            break
	        if not said and len(socks) >= 100:
	            print("open", len(socks), flush=True)
	            said = True
	    r, _, _ = select.select(list(socks), [], [], 0.05)
	    for s in r:
	        try:
	            gone = not s.recv(100)
	        except OSError:
	            gone = True
	        if gone:
	            socks.discard(s)
	            s.close()
	print("opened %d in %.1f s" % (opened, time.time() - t0), flush=True)
	PY
	flood=$!
	wait_until 20 grep -q "^open" "$W/flood"
	ok=0
	for i in 1 2 3; do
		run timeout 30 "$PROCMGR" status "$job.0"
		echo "status $i during the flood: $status: $output"
		[ "$status" -eq 0 ] && ok=$((ok + 1))
	done
	touch "$W/flood.stop"
	wait "$flood" || true
	cat "$W/flood"
	scancel "$job"
	wait "$pid" || true
	[ "$ok" -eq 3 ]
	# The flood went on all along: the port turned its silent connections away.
	grep -q "refused tree connection: too many connections that have not said hello" \
		"$STATE/$job/0.0.log"
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
