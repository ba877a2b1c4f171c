#!/usr/bin/env bats
# Each rank bound as `procmgr bind --explain` says.
load helpers

teardown() {
	[ -f "$W/plugstack.orig" ] && cp "$W/plugstack.orig" "$PM_TESTBED_DIR/plugstack.conf"
	wait_until 15 no_leftovers
	rm -rf "$W"
}

@test "each rank's CPUs and memory policy are the plan's (live topology)" {
	"$top/procmgr" bind --explain --tasks 2 --bind cpu,mem --json >"$W/plan.json"
	run srun -N1 -n2 --cpu-bind=none --procmgr-bind=cpu,mem bash -c \
		'echo "$RANK $(awk "/Cpus_allowed_list/ {print \$2}" /proc/self/status) $(numactl --show | awk "/^policy/ {print \$2}") ${OMP_NUM_THREADS:-unset}"'
	echo "$output"; cat "$W/plan.json"
	[ "$status" -eq 0 ]
	for r in 0 1; do
		want=$(/usr/bin/python3 -c "import json,sys; p=json.load(open('$W/plan.json')); print(p[$r]['cpus'])")
		line=$(grep "^$r " <<<"$output")
		[ "$(cut -d' ' -f2 <<<"$line")" = "$want" ] || { echo "rank $r: $line, plan $want"; return 1; }
		[ "$(cut -d' ' -f3 <<<"$line")" = preferred ] || [ "$(cut -d' ' -f3 <<<"$line")" = default ]
		[ "$(cut -d' ' -f4 <<<"$line")" != unset ]
	done
}

@test "with the site's topology file, each rank's GPU and NIC variables are the plan's" {
	xml=$top/tests/data/dgx-h100.xml
	cp "$PM_TESTBED_DIR/plugstack.conf" "$W/plugstack.orig"
	sed -i "s|\$| topology=$xml|" "$PM_TESTBED_DIR/plugstack.conf"
	cpus=$(awk '/Cpus_allowed_list/ {print $2}' /proc/self/status)
	"$top/procmgr" bind --explain --topology "$xml" --tasks 2 --cpus "$cpus" --bind gpu,nic --json >"$W/plan.json"
	run srun -N1 -n2 --cpu-bind=none --procmgr-bind=gpu,nic bash -c \
		'echo "$RANK $CUDA_VISIBLE_DEVICES $CUDA_DEVICE_ORDER $NCCL_IB_HCA $UCX_NET_DEVICES"'
	echo "$output"; cat "$W/plan.json"
	[ "$status" -eq 0 ]
	for r in 0 1; do
		read -r gpus nics <<<"$(/usr/bin/python3 -c "
import json; p=json.load(open('$W/plan.json'))[$r]
print(','.join(str(g) for g in p['gpus']), ','.join(p['nics']))")"
		line=$(grep "^$r " <<<"$output")
		[ "$(cut -d' ' -f2 <<<"$line")" = "$gpus" ] || { echo "rank $r: $line; plan gpus $gpus"; return 1; }
		[ "$(cut -d' ' -f3 <<<"$line")" = PCI_BUS_ID ]
		[[ "$(cut -d' ' -f4 <<<"$line")" == *"${nics%%,*}"* ]] || { echo "rank $r: $line; plan nics $nics"; return 1; }
	done
	# Two ranks, two different GPUs.
	[ "$(cut -d' ' -f2 <<<"$output" | sort -u | wc -l)" -eq 2 ]
}
