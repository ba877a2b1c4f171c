#!/bin/sh
# spank-procmgr(8) documents every site key the plugin's parser knows and
# every srun option it registers: the keys as the built procmgr lists them
# in its unknown-key message, the options from their table in options.c.
src=${top_srcdir:-.}
b=${top_builddir:-.}
man=$b/docs/man/spank-procmgr.8
[ -f "$man" ] || { echo "no $man: build first"; exit 1; }
fail=0
keys=$(echo "required procmgr.so no_such_key=1" | "$b/procmgr" check-config - 2>&1 |
	sed -n 's/.*; keys: //p' | tr -d ',')
[ -n "$keys" ] || { echo "FAIL: no key list from procmgr check-config"; exit 1; }
for k in $keys; do
	# A key's entry starts a .TP paragraph: ".BI key=" or "\fBkey=".
	grep -qE "^(\.BI $k=|\\\\fB$k=)" "$man" || { echo "FAIL: site key $k not in $man"; fail=1; }
done
opts=$(sed -n '/pm_optdescs\[\] = {/,/^};/s/^	{ "\([a-z-]*\)",.*/\1/p' "$src/runtime/common/options.c")
[ -n "$opts" ] || { echo "FAIL: no option table in options.c"; exit 1; }
n=0
for o in "" $opts; do
	n=$((n + 1))
	name="procmgr${o:+-$o}"
	esc=$(echo "$name" | sed 's/-/\\\\-/g')
	grep -qE "^(\.BI? \\\\-\\\\-$esc( |=|\$)|\\\\fB\\\\-\\\\-$esc=)" "$man" ||
		{ echo "FAIL: option --$name not in $man"; fail=1; }
done
[ $fail = 1 ] || echo "ok: $(echo $keys | wc -w) site keys and $n options in spank-procmgr(8)"
exit $fail
