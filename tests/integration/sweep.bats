#!/usr/bin/env bats
# Sweeps (--procmgr-sweep=FILE): many trials on one step's task slots,
# 4 nodes x 4 slots (-O: the testbed's nodes have 2 CPUs).
load helpers

sweep() { # trials-file srun-options...
	local f=$1; shift
	srun -N4 -n16 -O --procmgr-sweep="$f" "$@" true
}

# Rows of the results file in state S.
rows() { awk -F'\t' -v s="$2" 'NR > 1 && $2 == s' "$1" | wc -l; }

# A crash: node I's (1-based) slurmd, slurmstepd and all below, at once;
# found through this testbed's files, never another's.
crash() {
	local pids
	pids=$(tb pids "$1" | sort -u)
	echo "$1" >>"$W/crashed"
	kill -9 $pids 2>/dev/null || true # some exit as their parents die
}
all_idle() { nodes_idle 4; }
# The crashed node back for the next test: its slurmd again, resumed.
revive() {
	local i pid
	[ -e "$W/crashed" ] || return 0
	for i in $(cat "$W/crashed"); do
		pid=$(cat "$PM_TESTBED_DIR/slurmd-$P$i.pid" 2>/dev/null) || true
		if [ -z "$pid" ] || ! alive "$pid"; then
			slurmd -N "$P$i" -f "$SLURM_CONF"
		fi
	done
	scontrol update nodename="$P[1-4]" state=resume 2>/dev/null || true
	wait_until 60 all_idle
	# A crashed node's run directory went with its disk.
	for i in $(cat "$W/crashed"); do rm -rf "$STATE"/*/*.$((i - 1)).run; done
}
teardown() {
	scancel --quiet -u root 2>/dev/null || true
	revive
	pm_teardown
}

@test "200 short trials on 4 nodes x 4 slots all run exactly once" {
	for i in $(seq 1 200); do echo "[t$i] echo \"\$PROCMGR_TRIAL \$RANK \$WORLD_SIZE\" >>$W/ran"; done >trials.txt
	run sweep trials.txt
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(wc -l <ran)" -eq 200 ]
	[ "$(cut -d' ' -f1 ran | sort -u | wc -l)" -eq 200 ]
	[ "$(grep -c ' 0 1$' ran)" -eq 200 ]
	[ "$(wc -l <trials.txt.results)" -eq 201 ]
	[ "$(rows trials.txt.results done)" -eq 200 ]
	# Each ran once: no restart, and one start event each.
	[ "$(awk -F'\t' 'NR > 1 && $4 != 0' trials.txt.results | wc -l)" -eq 0 ]
	[ "$(events "$(last_job)" 0 | grep -c '"event":"trial_start"')" -eq 200 ]
	[[ "$output" == *"procmgr: sweep of 200 trials: 200 done, 0 failed; results in $W/trials.txt.results"* ]]
}

@test "trials of 1, 2 and 6 ranks: each its own world, ranks, local ranks and master" {
	line='echo "$PROCMGR_TRIAL rank=$RANK world=$WORLD_SIZE local=$LOCAL_RANK lws=$LOCAL_WORLD_SIZE master=$MASTER_ADDR:$MASTER_PORT host=$SLURMD_NODENAME"'
	{
		for i in 1 2 3; do echo "[one$i ranks=1] $line"; echo "[two$i ranks=2] $line"; echo "[six$i ranks=6] $line"; done
		echo "$line"
	} >trials.txt
	run sweep trials.txt --procmgr-trial-ranks=2
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(rows trials.txt.results done)" -eq 10 ]
	# One python for every check (a shell loop forks hundreds of times).
	python3 - trials.txt.out <<-'PY'
	import collections, os, sys
	want = {"one%d" % i: 1 for i in (1, 2, 3)}
	want.update({"two%d" % i: 2 for i in (1, 2, 3)})
	want.update({"six%d" % i: 6 for i in (1, 2, 3)})
	want["10"] = 2  # no ranks=: the sweep's default; named by its line number
	for t, n in want.items():
	    rows = {}
	    for r in range(n):
	        line = open(os.path.join(sys.argv[1], "%s.%d.out" % (t, r))).read().strip()
	        d = dict(w.split("=", 1) for w in line.split()[1:])
	        assert line.split()[0] == t and d["rank"] == str(r) and d["world"] == str(n), line
	        rows[r] = d
	    # One master per trial, on rank 0's node.
	    assert len({d["master"] for d in rows.values()}) == 1, (t, rows)
	    assert rows[0]["master"].split(":")[0] == rows[0]["host"], (t, rows)
	    # Local ranks 0..k-1 and LOCAL_WORLD_SIZE k on each node it spans.
	    by = collections.defaultdict(list)
	    for d in rows.values():
	        by[d["host"]].append(d)
	    for h, ds in by.items():
	        assert sorted(int(d["local"]) for d in ds) == list(range(len(ds))), (t, h, ds)
	        assert all(d["lws"] == str(len(ds)) for d in ds), (t, h, ds)
	    # A 6-rank trial spans more than one node of 4 slots (two when two
	    # nodes have the room then; more when only scattered slots are free).
	    if n == 6:
	        assert len(by) >= 2, (t, by.keys())
	PY
}

@test "a trial that fails once restarts alone; the others run undisturbed" {
	# flaky fails once everyone else has started; the others wait for that.
	cat >trials.txt <<-EOF
	[flaky ranks=2] if [ "\$PROCMGR_RESTART_COUNT" = 0 ]; then while [ \$(ls $W/started.* | wc -l) -lt 12 ]; do sleep 0.1; done; echo "flaky fails on purpose" >&2; exit 3; fi; echo ok
	EOF
	for i in 1 2 3 4 5 6; do
		echo "[calm$i ranks=2] touch $W/started.\$PROCMGR_TRIAL.\$RANK.\$PROCMGR_RESTART_COUNT; while [ ! -e $W/flaky-done ]; do sleep 0.1; done" >>trials.txt
	done
	# The calm trials end once flaky's second try ran.
	echo "[watch] while ! grep -qx ok $W/trials.txt.out/flaky.0.out 2>/dev/null; do sleep 0.1; done; touch $W/flaky-done" >>trials.txt
	run sweep trials.txt --procmgr-restart=on-failure:2
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(rows trials.txt.results done)" -eq 8 ]
	[ "$(awk -F'\t' '$1 == "flaky" {print $4}' trials.txt.results)" -eq 1 ]
	[[ "$output" == *"procmgr: trial flaky exited with code 3 (flaky fails on purpose); restarting it alone"* ]]
	# Every calm rank started once, in its first try; none restarted.
	[ "$(ls started.calm* | wc -l)" -eq 12 ]
	[ "$(ls started.calm*.0 | wc -l)" -eq 12 ]
	[ "$(awk -F'\t' '$1 ~ /^calm/ && $4 == 0' trials.txt.results | wc -l)" -eq 6 ]
	run events "$(last_job)" 0
	[ "$(grep -c '"event":"trial_start","trial":"flaky"' <<<"$output")" -eq 2 ]
	[ "$(grep -c '"event":"trial_start","trial":"calm' <<<"$output")" -eq 6 ]
	[[ "$output" == *'"event":"trial_end","trial":"flaky","attempt":1,"state":"restarting","exit_code":3'*'"error":"flaky fails on purpose"'* ]]
}

@test "a trial that always fails is marked failed, the rest complete, srun exits non-zero" {
	{
		echo '[bad ranks=3] echo "loss is NaN at step $RANK" >&2; exit 7'
		for i in $(seq 1 20); do echo "[ok$i] echo fine"; done
	} >trials.txt
	run sweep trials.txt --procmgr-restart=on-failure:1
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(rows trials.txt.results done)" -eq 20 ]
	[ "$(rows trials.txt.results failed)" -eq 1 ]
	awk -F'\t' '$1 == "bad"' trials.txt.results | grep -q $'\tfailed\t7\t1\t'
	[[ "$output" == *"procmgr: sweep of 21 trials: 20 done, 1 failed; results in $W/trials.txt.results"* ]]
	[[ "$output" == *"procmgr: trial bad failed after 1 restart"*"loss is NaN at step"* ]]
	[ "$(grep -c 'procmgr: trial bad exited with code 7 (loss is NaN at step [0-2]); restarting it alone' <<<"$output")" -eq 1 ]
	[ "$(grep -c 'procmgr: trial bad exited with code 7 (loss is NaN at step [0-2]); no restart left: failed' <<<"$output")" -eq 1 ]
	# Its stderr is in its own files: the rank that failed first said why in
	# its own (any rank may be first; the others may be stopped before their
	# supervisors even started them: under load rank 0 once never ran), and
	# no file holds another rank's line.
	r=$(sed -n 's/.*trial bad exited with code 7 (loss is NaN at step \([0-2]\)); restarting.*/\1/p' \
		<<<"$output")
	grep -q "loss is NaN at step $r" "trials.txt.out/bad.$r.err"
	for r in 0 1 2; do
		if [ -e "trials.txt.out/bad.$r.err" ] &&
			grep -v "step $r\$" "trials.txt.out/bad.$r.err" | grep -q "loss is NaN"; then
			echo "bad.$r.err holds another rank's line"; false
		fi
	done
}

@test "bad trials files: a clear error before anything starts" {
	printf '# only a comment\n\n' >empty.txt
	printf '[x] true\n[x] true\n' >dup.txt
	printf '[big ranks=17] true\n' >big.txt
	printf '[bad/name] true\n' >name.txt
	run sweep nofile.txt
	[ "$status" -ne 0 ]
	[[ "$output" == *"--procmgr-sweep=nofile.txt: cannot read the trials file: No such file or directory"* ]]
	run sweep empty.txt
	[ "$status" -ne 0 ]
	[[ "$output" == *"empty.txt: no trials"* ]]
	run sweep dup.txt
	[ "$status" -ne 0 ]
	[[ "$output" == *"dup.txt:2: duplicate trial name 'x' (line 1 has it too)"* ]]
	run sweep big.txt
	[ "$status" -ne 0 ]
	[[ "$output" == *"big.txt:1: the trial asks for 17 ranks, but the step has 16"* ]]
	run sweep name.txt
	[ "$status" -ne 0 ]
	[[ "$output" == *"name.txt:1"* ]]
	run srun -N4 -n6 -O --procmgr-sweep=dup.txt true
	[ "$status" -ne 0 ]
	run srun -N4 -n8 --procmgr-trial-ranks=2 true
	[ "$status" -ne 0 ]
	[[ "$output" == *"--procmgr-trial-ranks=2 needs --procmgr-sweep=FILE"* ]]
	# No trial ran, nothing was written.
	[ ! -e big.txt.out ] && [ ! -e big.txt.results ] && [ ! -e dup.txt.out ]
}

@test "scancel of a running sweep leaves nothing behind" {
	mark=pmsweep$$
	for i in $(seq 1 40); do echo "[s$i] touch $W/run.\$PROCMGR_TRIAL; exec sleep 300 # $mark"; done >trials.txt
	job=$(sbatch -N4 -n16 -O --parsable --wrap "srun --procmgr-sweep=$W/trials.txt true")
	wait_until 60 bash -c "[ \$(ls $W/run.* 2>/dev/null | wc -l) -ge 16 ]"
	[ "$(ls run.* | wc -l)" -eq 16 ] # 16 slots: the rest wait
	scancel "$job"
	wait_until 30 bash -c "! squeue -h -j $job 2>/dev/null | grep -q ."
	# (a function: a bash -c with the mark in its own command line would
	# find itself)
	gone() { ! pgrep -f "$mark" >/dev/null; }
	wait_until 15 gone
}

@test "procmgr status during a sweep: one table of trials and a summary line" {
	{
		echo "[broken] echo 'cannot open data.csv' >&2; exit 4"
		for i in $(seq 1 19); do echo "[w$i] touch $W/up.\$PROCMGR_TRIAL; while [ ! -e $W/go ]; do sleep 0.1; done"; done
		echo "[pair ranks=2] touch $W/up.\$PROCMGR_TRIAL.\$RANK; while [ ! -e $W/go ]; do sleep 0.1; done"
	} >trials.txt
	sweep trials.txt >out 2>&1 &
	local pid=$!
	# 16 slots: broken ends at once, then 16 ranks wait for go.
	wait_until 60 bash -c "[ \$(ls $W/up.* 2>/dev/null | wc -l) -ge 16 ]"
	job=$(squeue -h -o %i | head -n 1)
	run "$PROCMGR" status "$job.0"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"a sweep on 16 task slots of 4 nodes"* ]]
	[[ "$output" == *"sweep: 21 trials: 0 done, 15 running, 5 queued, 1 failed"* ]] ||
		[[ "$output" == *"sweep: 21 trials: 0 done, 16 running, 4 queued, 1 failed"* ]]
	[[ "$output" == *"TRIAL"*"STATE"*"SLOTS"*"RESTARTS"*"RUNTIME"*"EXIT"*"ERROR"* ]]
	grep -E '^broken +failed +- +0 +[0-9.]+s +4 +- +cannot open data.csv$' <<<"$output"
	grep -E "^w1 +running +${P}[1-4]:[0-3] " <<<"$output"
	run "$PROCMGR" status "$job.0" --json
	[ "$status" -eq 0 ]
	python3 -c 'import json, sys
d = json.loads(sys.argv[1])
assert d["sweep"]["trials"] == 21 and d["sweep"]["failed"] == 1, d["sweep"]
t = {x["trial"]: x for x in d["trials"]}
assert t["broken"]["state"] == "failed" and t["broken"]["exit"] == 4, t["broken"]
assert t["broken"]["error"] == "cannot open data.csv", t["broken"]
assert t["w1"]["state"] == "running" and t["w1"]["exit"] is None, t["w1"]' "$output"
	touch go
	# Its own pid: a bare wait would also wait for bats' timeout watchdog.
	local rc=0
	wait "$pid" || rc=$?
	cat out
	[ "$rc" -ne 0 ] # a trial failed
	grep -q "procmgr: sweep of 21 trials: 20 done, 1 failed" out
}

@test "--procmgr-bind: each trial's ranks are bound as their slots are, a rank of a trial per slot" {
	line='echo "$PROCMGR_TRIAL $RANK $(sed -n "s/^Cpus_allowed_list:\t//p" /proc/self/status) $OMP_NUM_THREADS $SLURMD_NODENAME"'
	{ echo "[a] $line"; echo "[b ranks=2] $line"; echo "[c] $line"; } >trials.txt
	# 2 slots on each node's 2 CPUs: no oversubscription, a CPU per slot.
	run srun -N2 --ntasks-per-node=2 --procmgr-sweep=trials.txt --procmgr-bind=cpu true
	echo "$output"
	[ "$status" -eq 0 ]
	cat trials.txt.out/*.out
	[ "$(cat trials.txt.out/*.out | wc -l)" -eq 4 ]
	# Every trial rank on one CPU, with OpenMP told so.
	[ "$(awk '$3 ~ /^[0-9]+$/ && $4 == 1' trials.txt.out/*.out | wc -l)" -eq 4 ]
	# b's two ranks hold a node's two slots: two CPUs, not one shared.
	[ "$(cut -d' ' -f3,5 trials.txt.out/b.*.out | sort -u | wc -l)" -eq 2 ]
	[ "$(cut -d' ' -f5 trials.txt.out/b.*.out | sort -u | wc -l)" -eq 1 ]
}

@test "a node crash (--no-kill) requeues its trials on the other nodes; every trial runs to its end once" {
	# Every rank says where it started (and its pid), then waits for go.
	cat >trial.sh <<-EOF
	#!/bin/sh
	echo "\$PROCMGR_TRIAL \$RANK \$SLURMD_NODENAME \$\$" >>$W/started
	while [ ! -e $W/go ]; do sleep 0.1; done
	echo "\$PROCMGR_TRIAL \$RANK" >>$W/ran
	EOF
	chmod 0755 trial.sh
	{ echo "[wide ranks=6] $W/trial.sh"; for i in $(seq 1 30); do echo "[t$i] $W/trial.sh"; done; } >trials.txt
	srun --no-kill -N4 -n16 -O --procmgr-sweep=trials.txt --procmgr-restart=on-failure:1 true >out 2>&1 &
	wait_until 60 bash -c "[ \$(wc -l <$W/started 2>/dev/null || echo 0) -ge 16 ]"
	job=$(squeue -h -o %i | head -n 1)
	# A node that wide (6 ranks: two nodes at least) runs on, not the root's.
	victim=$(awk '$1 == "wide" { print $3 }' started | sort -u | grep -vx "${P}1" | head -n 1)
	[ -n "$victim" ]
	on_victim=$(awk -v v="$victim" '$3 == v { print $1 }' started | sort -u)
	crash "${victim#"$P"}"
	# Once the root knows and wide's ranks elsewhere were stopped, the
	# trials that survived may end.
	wait_until 60 grep -q '"event":"trial_requeued","trial":"wide"' "$STATE/$job/0.events.jsonl"
	wide_gone() { local p; for p in $(awk '$1 == "wide" { print $4 }' "$W/started"); do ! kill -0 "$p" 2>/dev/null || return 1; done; }
	wait_until 30 wide_gone
	touch go
	wait_until 120 grep -q "procmgr: sweep of 31 trials" out || { cat out; false; }
	cat out
	[ "$(rows trials.txt.results done)" -eq 31 ]
	# Each trial's ranks ran to their end once: 30 + wide's 6, none twice.
	[ "$(wc -l <ran)" -eq 36 ]
	[ "$(sort -u ran | wc -l)" -eq 36 ]
	# Those on the lost node started again elsewhere, requeued (not restarted).
	run events "$job" 0
	for t in $on_victim; do
		grep -q "\"event\":\"trial_requeued\",\"trial\":\"$t\"" <<<"$output"
		[ "$(awk -v t="$t" -v v="$victim" '$1 == t && $3 != v' started | wc -l)" -ge 1 ]
		[ "$(awk -F'\t' -v t="$t" '$1 == t { print $4 }' trials.txt.results)" -eq 0 ]
	done
	[ "$(grep -c '"event":"trial_requeued"' <<<"$output")" -eq "$(wc -w <<<"$on_victim")" ]
	[[ "$output" == *'"event":"node_lost"'*"\"node\":\"$victim\""*'"sweep":"requeue"'* ]]
	# wide started twice: its second 6 ranks all on the nodes left.
	[ "$(awk '$1 == "wide"' started | wc -l)" -eq 12 ]
	[ "$(awk '$1 == "wide"' started | tail -n 6 | grep -c " $victim ")" -eq 0 ]
	grep -q "procmgr: lost node $victim (.*); its [0-9]* trials* go.* to the other nodes: .*wide" out
	grep -q "procmgr: sweep of 31 trials: 31 done, 0 failed" out
	scancel "$job"
}

@test "procmgr stop and restart of one trial by its name; an unknown name is refused" {
	for t in a b c; do
		echo "[$t] touch $W/up.\$PROCMGR_TRIAL.\$PROCMGR_RESTART_COUNT; while [ ! -e $W/go ]; do sleep 0.1; done; touch $W/end.\$PROCMGR_TRIAL"
	done >trials.txt
	echo "[q ranks=16] touch $W/up.q" >>trials.txt # waits: a, b and c hold slots
	sweep trials.txt >out 2>&1 &
	local pid=$!
	wait_until 60 bash -c "[ -e $W/up.a.0 ] && [ -e $W/up.b.0 ] && [ -e $W/up.c.0 ]"
	job=$(squeue -h -o %i | head -n 1)
	run "$PROCMGR" stop "$job.0" --trial nosuch
	[ "$status" -eq 1 ]
	[[ "$output" == *"procmgr: step $job.0 has no trial 'nosuch' (procmgr status $job.0 lists its 4 trials)"* ]]
	run "$PROCMGR" restart "$job.0" --trial q
	[ "$status" -eq 1 ]
	[[ "$output" == *"cannot restart trial q of step $job.0 now: it is queued; only a running trial restarts"* ]]
	run "$PROCMGR" stop "$job.0" --trial 'b/x'
	[ "$status" -eq 2 ]
	[[ "$output" == *"trial name 'b/x' has '/'"* ]]
	run "$PROCMGR" restart "$job.0" --trial a
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"procmgr: step $job.0: restarting trial a (restart 1)"* ]]
	wait_until 30 test -e up.a.1
	run "$PROCMGR" stop "$job.0" --trial b
	[ "$status" -eq 0 ]
	[[ "$output" == *"procmgr: step $job.0: stopping trial b"* ]]
	run "$PROCMGR" stop "$job.0" --trial q
	[ "$status" -eq 0 ]
	[[ "$output" == *"procmgr: step $job.0: not running trial q"* ]]
	run "$PROCMGR" stop "$job.0" --trial b
	[ "$status" -eq 1 ]
	[[ "$output" == *"cannot stop trial b of step $job.0: it has ended (failed)"* ]]
	touch go
	wait_until 60 grep -q "procmgr: sweep of 4 trials" out
	local rc=0
	wait "$pid" || rc=$?
	cat out
	[ "$rc" -ne 0 ] # two trials failed
	grep -q "procmgr: sweep of 4 trials: 2 done, 2 failed" out
	grep -q "trial a: .* asked for a restart; restarting it alone (restart 1)" out
	grep -q "asked to stop trial b; stopping its ranks" out
	grep -q "asked to stop trial q; it will not run" out
	[ "$(awk -F'\t' '$1 == "a" { print $2, $4 }' trials.txt.results)" = "done 1" ]
	[ "$(awk -F'\t' '$1 == "c" { print $2, $4 }' trials.txt.results)" = "done 0" ]
	[ "$(awk -F'\t' '$1 == "b" { print $2, $6 }' trials.txt.results)" = "failed stopped" ]
	[ "$(awk -F'\t' '$1 == "q" { print $2, $6 }' trials.txt.results)" = "failed stopped" ]
	# b's command was ended, c's never touched, q never ran.
	[ ! -e end.b ] && [ -e end.a ] && [ -e end.c ] && [ ! -e up.q ]
	[ "$(ls up.c.* | wc -l)" -eq 1 ]
	run events "$job" 0
	[[ "$output" == *'"event":"trial_restart_requested","trial":"a"'* ]]
	[[ "$output" == *'"event":"trial_stop_requested","trial":"b"'* ]]
}

# Issue 32 item 7: with the trials file in a shared directory, another user
# (daemon) had the journal sent into their FIFO and the results into their
# 0666 file. Each kind of plant at the journal's name is refused, said on
# srun's stderr and never written through; the results, whose final name
# daemon holds in this sticky directory, stay in a file of the user's own,
# which the summary names: nothing is lost.
@test "another user's plants beside a shared trials file (a FIFO, a link, a 0666 file, a hard link, a directory; their outputs directory) are never written through; said on srun's stderr; every trial's result kept" {
	local d=$W/shared plant daemon_uid out
	daemon_uid=$(id -u daemon)
	mkdir -m 1777 "$d"
	cd "$d"
	printf '[a] echo A\n[b] echo B\n[c] echo C\n' >trials.txt
	chown nobody trials.txt
	echo "the user's own" >victim && chown nobody victim
	runuser -u daemon -- sh -c 'umask 0; echo planted >theirs; echo planted >trials.txt.results; echo planted >trials.txt.results.tmp'
	for plant in fifo link file hardlink dir; do
		case $plant in
		fifo)
			runuser -u daemon -- mkfifo -m 0666 trials.txt.journal
			# daemon holds the FIFO open, as a reader waiting for lines.
			# (setpriv execs: $! is the holder itself, for kill.)
			setpriv --reuid=daemon --regid=daemon --clear-groups \
				sh -c 'exec 3<>trials.txt.journal; exec sleep 120' &
			holder=$!
			what="a FIFO" ;;
		link) runuser -u daemon -- ln -s "$d/victim" trials.txt.journal; what="a link" ;;
		file) runuser -u daemon -- sh -c 'umask 0; : >trials.txt.journal'; what="another user's file" ;;
		hardlink) runuser -u daemon -- ln theirs trials.txt.journal; what="another user's file" ;;
		dir) runuser -u daemon -- mkdir -m 0777 trials.txt.journal; what="a directory" ;;
		esac
		run as_user srun -N2 -n2 --procmgr-sweep=trials.txt true
		echo "$output"
		[ "$status" -eq 0 ]
		[[ "$output" == *"procmgr: sweep: no journal: $d/trials.txt.journal is $what (owner uid $daemon_uid"*"not written through"*"the sweep goes on without it"* ]]
		# Nothing reached the plant or what it points at.
		if [ "$plant" = fifo ]; then
			/usr/bin/python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
try:
    data = os.read(fd, 4096)
except BlockingIOError:
    data = b""
sys.exit(1 if data else 0)' trials.txt.journal
			kill "$holder"; wait "$holder" || true
		fi
		[ "$(cat victim)" = "the user's own" ]
		[ "$(cat theirs)" = planted ]
		[ "$(stat -c %U trials.txt.journal)" = daemon ]
		[ "$plant" != file ] || [ ! -s trials.txt.journal ]
		[ "$plant" != dir ] || [ -z "$(ls -A trials.txt.journal)" ]
		# daemon's results file is theirs to keep (sticky): the results
		# stay in the user's own temporary file, named in the summary.
		[ "$(cat trials.txt.results)" = planted ]
		[ "$(cat trials.txt.results.tmp)" = planted ]
		[[ "$output" == *"procmgr: sweep: cannot replace $d/trials.txt.results (Operation not permitted: another user's file?); the results stay in $d/trials.txt.results."*".tmp"* ]]
		out=$(sed -n 's/.*: 3 done, 0 failed; results in \(.*\.tmp\)$/\1/p' <<<"$output")
		[ -n "$out" ] && [ "$(stat -c %U "$out")" = nobody ]
		[ "$(rows "$out" done)" -eq 3 ]
		rm -rf trials.txt.journal "$out"
	done
	# Another user's directory under the outputs' name: no trial runs into
	# it; each fails saying why, nothing written there.
	rm -rf trials.txt.out trials.txt.results
	runuser -u daemon -- mkdir -m 0777 trials.txt.out
	run as_user srun -N2 -n2 --procmgr-sweep=trials.txt true
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"procmgr: trial a "*"$d/trials.txt.out belongs to uid $daemon_uid, not to you"* ]]
	[ "$(rows trials.txt.results failed)" -eq 3 ]
	[ -z "$(ls -A trials.txt.out)" ]
	rm -rf trials.txt.out
	# The user's own journal of an earlier run: replaced, the sweep keeps one.
	runuser -u nobody -- sh -c 'echo "old run" >trials.txt.journal'
	run as_user srun -N2 -n2 --procmgr-sweep=trials.txt true
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *"no journal"* ]]
	! grep -q "old run" trials.txt.journal
	[ "$(grep -c . trials.txt.journal)" -eq 3 ]
	[ "$(rows trials.txt.results done)" -eq 3 ]
}

@test "a sweep's summary: results reported and sortable, failures worded once, stdout quoted, one srun line" {
	top=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	{
		# Python through procmgr.report, a shell by hand; rank 0's counts.
		echo "[py] env PYTHONPATH=$top/python python3 -c 'import procmgr; procmgr.report(loss=0.125)'"
		echo '[sh ranks=2] echo "loss=9" >"$PROCMGR_RESULT_FILE"; echo "loss=0.5$RANK" >>"$PROCMGR_RESULT_FILE"'
		echo '[quiet] echo "epoch 3"; echo "accuracy 0.1 below 0.5"; exit 4'
		echo '[silent] sh -c "exit 5"'
		echo '[junk] echo "loss 0.3" >"$PROCMGR_RESULT_FILE"'
		echo '[none] true'
	} >trials.txt
	run sweep trials.txt
	echo "$output"
	[ "$status" -eq 1 ]
	cat trials.txt.results
	head -n 1 trials.txt.results | grep -qx $'trial\tstate\texit\trestarts\truntime_s\terror\tmetric\tvalue'
	[ "$(awk -F'\t' '$1 == "py" { print $2, $7, $8 }' trials.txt.results)" = "done loss 0.125" ]
	[ "$(awk -F'\t' '$1 == "sh" { print $2, $7, $8 }' trials.txt.results)" = "done loss 0.50" ]
	[ "$(awk -F'\t' '$1 == "none" { print $7, $8 }' trials.txt.results)" = "- -" ]
	[ "$(awk -F'\t' '$1 == "junk" { print $2, $7, $8 }' trials.txt.results)" = "done - -" ]
	grep -q "procmgr: trial junk: no result: PROCMGR_RESULT_FILE=.*: 'loss 0.3' is not NAME=VALUE" trials.txt.out/junk.0.err
	# The best trial without a grep: sort on the value column.
	[ "$(awk -F'\t' 'NR > 1 && $8 != "-"' trials.txt.results | sort -t$'\t' -k8,8g | head -n 1 | cut -f1)" = py ]
	# Failures: the code once; stdout's last line quoted when stderr is empty.
	[[ "$output" == *'procmgr: trial quiet exited with code 4 (no error output; stdout'"'"'s last line: "accuracy 0.1 below 0.5"); no restart left: failed'* ]]
	[[ "$output" == *"procmgr: trial silent exited with code 5; no restart left: failed"* ]]
	[[ "$output" != *"(exit code"* ]]
	[ "$(awk -F'\t' '$1 == "quiet" { print $6 }' trials.txt.results)" = 'no error output; stdout'"'"'s last line: "accuracy 0.1 below 0.5"' ]
	# srun's own word on the sweep's exit code: one line, for task 0.
	[ "$(grep -c '^srun: error:' <<<"$output")" -eq 1 ]
	grep -q "^srun: error: ${P}1: task 0: Exited with exit code 1" <<<"$output"
}

@test "procmgr status --sort result: a sweep's trials by the result they reported" {
	for i in 3 1 2; do echo "[t$i] echo \"loss=$i\" >\"\$PROCMGR_RESULT_FILE\""; done >trials.txt
	echo "[hold] while [ ! -e $W/go ]; do sleep 0.1; done" >>trials.txt
	sweep trials.txt >out 2>&1 &
	local pid=$!
	wait_until 60 bash -c "[ \$(awk -F'\t' '\$2 == \"done\"' $W/trials.txt.journal 2>/dev/null | wc -l) -ge 3 ]"
	job=$(squeue -h -o %i | head -n 1)
	run "$PROCMGR" status "$job.0" --sort result
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"RESULT"* ]]
	[ "$(grep -E '^(t[123]|hold) ' <<<"$output" | awk '{ print $1 }' | tr '\n' ' ')" = "t1 t2 t3 hold " ]
	grep -E '^t1 +done .* loss=1 *$' <<<"$output"
	run "$PROCMGR" status "$job.0" --sort -result
	[ "$(grep -E '^(t[123]|hold) ' <<<"$output" | awk '{ print $1 }' | tr '\n' ' ')" = "t3 t2 t1 hold " ]
	run "$PROCMGR" status "$job.0" --json
	python3 -c 'import json, sys
d = json.loads(sys.argv[1])
t = {x["trial"]: x for x in d["trials"]}
assert t["t2"]["metric"] == "loss" and t["t2"]["value"] == 2, t["t2"]
assert t["hold"]["metric"] is None and t["hold"]["value"] is None, t["hold"]' "$output"
	run "$PROCMGR" status "$job.0" --sort loss
	[ "$status" -eq 2 ]
	[[ "$output" == *"unknown sort key 'loss': result (the lowest value first) or -result (the highest first)"* ]]
	touch go
	local rc=0
	wait "$pid" || rc=$?
	cat out
	[ "$rc" -eq 0 ]
}

# Issue 32: a trial's state (procmgr.save) is its run's own. trial_state.py
# says in $W/seen what each run found ("TRIAL RANK RESTART FOUND").
TS=$top/tests/integration/trial_state.py
ts() { echo "/usr/bin/python3 $TS $1 $W"; }
seen_of() { awk -v t="$1" -v r="$2" '$1 == t && $3 == r { print $2, $4 }' "$W/seen" | sort; }
state_bytes() { # job: the step's state held on its nodes, from procmgr status
	"$PROCMGR" status "$1.0" --json |
		/usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["summary"].get("state_bytes", "-"))'
}

@test "state: a new trial sees nothing an earlier trial saved on its slots; a restart sees its own (1 and 4 ranks)" {
	# One slot: a, b and c one after the other, c failing once.
	{ echo "[a] $(ts once)"; echo "[b] $(ts once)"; echo "[c] $(ts failonce)"; } >one.txt
	run srun -N1 -n1 --procmgr-sweep=one.txt --procmgr-restart=on-failure:1 true
	echo "$output"
	cat seen
	[ "$status" -eq 0 ]
	[ "$(seen_of a 0)" = "0 none" ]
	[ "$(seen_of b 0)" = "0 none" ]
	[ "$(seen_of c 0)" = "0 none" ]
	[ "$(seen_of c 1)" = "0 c:0:0" ]
	# Four ranks on two nodes: w2 on the slots w1 saved on, each rank's
	# restart finding its own rank's save.
	mv seen seen.one
	{ echo "[w1 ranks=4] $(ts once)"; echo "[w2 ranks=4] $(ts failonce)"; } >four.txt
	run srun -N2 -n4 -O --procmgr-sweep=four.txt --procmgr-restart=on-failure:1 true
	echo "$output"
	cat seen
	[ "$status" -eq 0 ]
	[ "$(seen_of w1 0)" = "$(printf '%s none\n' 0 1 2 3)" ]
	[ "$(seen_of w2 0)" = "$(printf '%s none\n' 0 1 2 3)" ]
	[ "$(seen_of w2 1)" = "$(printf '%s w2:%s:0\n' 0 0 1 1 2 2 3 3)" ]
	grep -q "procmgr: sweep of 2 trials: 2 done, 0 failed" <<<"$output"
}

@test "state: a trial's state and its replicas at the buddy node are freed when the trial ends" {
	# big saves 1 MiB per rank and ends once the buddy holds it; h then
	# runs on one of its slots and saves nothing.
	{ echo "[big ranks=2] $(ts safe)"; echo "[h] $(ts hold)"; } >trials.txt
	srun -N2 -n2 --procmgr-sweep=trials.txt true >out 2>&1 &
	local pid=$!
	wait_until 60 test -s up || { cat out; false; }
	job=$(squeue -h -o %i | head -n 1)
	cat seen
	[ "$(seen_of big 0)" = "$(printf '%s none\n' 0 1)" ]
	[ "$(seen_of h 0 | cut -d' ' -f2)" = none ]
	# Nothing held on either node: big's copies and, once the drop
	# reached the buddy on the replication stream, the replicas.
	zero() { [ "$(state_bytes "$job")" = 0 ]; }
	wait_until 20 zero || { echo "state_bytes: $(state_bytes "$job")"; false; }
	touch go
	wait "$pid"
	cat out
	grep -q "procmgr: sweep of 2 trials: 2 done, 0 failed" out
}

@test "state: a lost node's trial requeued starts from nothing; what it and the slots' earlier trials saved is freed, replicas too" {
	# wide (8 ranks, two nodes) saves 1 MiB per rank on its first run and
	# holds; s1..s8 save on the other 8 slots and end.
	{ echo "[wide ranks=8] $(ts holdsave)"; for i in $(seq 1 8); do echo "[s$i] $(ts once)"; done; } >trials.txt
	srun --no-kill -N4 -n16 -O --procmgr-sweep=trials.txt true >out 2>&1 &
	local pid=$!
	wait_until 60 bash -c "[ \$(wc -l <$W/up 2>/dev/null || echo 0) -ge 8 ] && [ \$(grep -c '^s' $W/seen) -ge 8 ]" || { cat out; false; }
	job=$(squeue -h -o %i | head -n 1)
	victim=$(awk '$1 == "wide" { print $3 }' up | sort -u | grep -vx "${P}1" | head -n 1)
	[ -n "$victim" ]
	crash "${victim#"$P"}"
	# wide's second run: 8 ranks up again on the 12 slots left, every
	# one of which held a save of wide's first run or of an s trial.
	wait_until 120 bash -c "[ \$(wc -l <$W/up) -ge 16 ]" || { cat out; false; }
	cat seen
	[ "$(awk '$1 == "wide"' seen | wc -l)" -eq 16 ]
	[ "$(awk '$1 == "wide"' seen | tail -n 8 | awk '$4 != "none"' | wc -l)" -eq 0 ]
	[ "$(awk '$1 == "wide"' up | tail -n 8 | grep -c " $victim$")" -eq 0 ]
	# Nothing is held any more: the s trials' and wide's first run's
	# copies on the nodes left, their replicas at the buddies, and the
	# lost node's replicas at its buddy.
	zero() { [ "$(state_bytes "$job")" = 0 ]; }
	wait_until 30 zero || { echo "state_bytes: $(state_bytes "$job")"; false; }
	touch go
	wait_until 120 grep -q "procmgr: sweep of 9 trials" out || { cat out; false; }
	cat out
	grep -q "procmgr: sweep of 9 trials: 9 done, 0 failed" out
	scancel "$job"
	wait "$pid" || true
}
