#!/bin/sh
# No circle among the files of procmgrd (runtime/procmgrd) nor of
# procmgr-rank (runtime/rank): from each program's objects, the graph "X
# uses a symbol Y defines" (nm: defined T/D/B/R..., undefined U) must have
# no strongly connected component of more than one file, so that every
# file can be read, tested and changed knowing only the floors under it.
# Each circle is printed with the symbols that tie it.
build=${top_builddir:-.}
command -v nm >/dev/null 2>&1 || { echo "SKIP: no nm"; exit 77; }

# check DIR PREFIX: the objects DIR/PREFIX-*.o of one program.
check() {
dir=$build/$1
set -- "$dir"/"$2"-*.o
[ -f "$1" ] || { echo "SKIP: the objects are not built in $dir"; return 77; }
for o in "$@"; do
	f=${o##*/"$prefix"-}
	nm "$o" | awk -v f="${f%.o}.c" '
		$1 == "U" && NF == 2 { print "U", f, $2; next }
		NF == 3 && $2 ~ /^[TDBRCGSVW]$/ { print "D", f, $3 }'
done | awk -v where="$where" '
	$1 == "D" { def[$3] = $2; files[$2] = 1; next }
	{ use[++nu] = $2 " " $3; files[$2] = 1 }
	END {
		for (i = 1; i <= nu; i++) {
			split(use[i], u, " ")
			y = def[u[2]]
			if (y == "" || y == u[1])
				continue
			k = u[1] SUBSEP y
			if (!(k in sym)) {
				nadj[u[1]]++
				adj[u[1], nadj[u[1]]] = y
			}
			sym[k] = sym[k] " " u[2]
		}
		idx = 0
		for (v in files)
			if (!(v in num))
				tarjan(v)
		if (!bad) {
			print "no circle among " where "'"'"'s " length(files) " files"
			exit 0
		}
		exit 1
	}
	# Tarjan: recursive, locals after the extra spaces.
	function tarjan(v,    i, w, n, list, j, x, y) {
		num[v] = low[v] = ++idx
		stack[++sp] = v
		on[v] = 1
		for (i = 1; i <= nadj[v]; i++) {
			w = adj[v, i]
			if (!(w in num)) {
				tarjan(w)
				if (low[w] < low[v])
					low[v] = low[w]
			} else if (on[w] && num[w] < low[v])
				low[v] = num[w]
		}
		if (low[v] != num[v])
			return
		n = 0
		do {
			w = stack[sp--]
			on[w] = 0
			scc[++n] = w
		} while (w != v)
		if (n < 2)
			return
		bad = 1
		# sorted, for a stable report
		for (i = 1; i <= n; i++)
			for (j = i + 1; j <= n; j++)
				if (scc[j] < scc[i]) { x = scc[i]; scc[i] = scc[j]; scc[j] = x }
		list = ""
		for (i = 1; i <= n; i++) {
			list = list " " scc[i]
		}
		print "FAIL: a circle of " n " files in " where ":" list
		for (i = 1; i <= n; i++)
			for (j = 1; j <= n; j++) {
				x = scc[i]; y = scc[j]
				if ((x SUBSEP y) in sym)
					print "  " x " -> " y ":" sym[x, y]
			}
	}'
}

fail=0 ran=0
for spec in "runtime/procmgrd procmgrd" "runtime/rank procmgr_rank"; do
	set -- $spec
	where=$1 prefix=$2
	check "$1" "$2"
	r=$?
	[ "$r" -eq 0 ] && ran=1
	[ "$r" -ne 0 ] && [ "$r" -ne 77 ] && fail=1
done
[ "$fail" -eq 1 ] && exit 1
[ "$ran" -eq 1 ] && exit 0
exit 77
