#!/bin/sh
# A node list too long for one command-line argument (Linux: 128 KiB) reaches
# procmgrd in a descriptor (--nodes fd:N, as the plugin passes it): 20,000
# names that no range compresses (about 280 KiB), read whole. Node 19999's
# parent (node 624 at fanout 32) is then looked up: an unknown host, so
# procmgrd stops there, having read the list to its last name.
b=${top_builddir:-.}
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
i=0
while [ $i -lt 20000 ]; do printf 'h%dq%d,' $i $((i * 7919 % 10007)); i=$((i + 1)); done |
	sed 's/,$//' >"$t/list"
[ "$(wc -c <"$t/list")" -gt 131072 ] || { echo "FAIL: list only $(wc -c <"$t/list") bytes"; exit 1; }
run() { # node-id, then how --nodes is given
	id=$1; shift
	"$b/procmgrd" --job 1 --step 0 --node-id "$id" "$@" --ntasks-local 1 --ntasks 20000 \
		--port 29999 --rundir "$t/run" --peer-timeout 0 >"$t/out" 2>&1
}
fail=0
run 19999 --nodes fd:3 3<"$t/list"
grep -q "cannot resolve node h624q" "$t/out" && echo "ok   20,000 names through fd:3" ||
	{ echo "FAIL fd:3:"; cat "$t/out"; fail=1; }
run 20000 --nodes fd:3 3<"$t/list"
grep -q "node id 20000 outside the node list" "$t/out" && echo "ok   node id past the list" ||
	{ echo "FAIL past the list:"; cat "$t/out"; fail=1; }
run 1 --nodes fd:9
grep -q "cannot read the node list from descriptor 9" "$t/out" && echo "ok   a closed descriptor" ||
	{ echo "FAIL closed fd:"; cat "$t/out"; fail=1; }
[ ! -e "$t/run" ] || { echo "FAIL: run directory left behind"; fail=1; }
exit $fail
