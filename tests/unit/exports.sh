#!/bin/sh
# procmgr.so shows srun, sbatch and slurmstepd its SPANK entry points and
# the symbols Slurm's loader reads, nothing else; and it loads no munge.
so=${top_builddir:-.}/.libs/procmgr.so
[ -f "$so" ] || { echo "no $so: build first"; exit 1; }
bad=$(nm -D --defined-only "$so" | awk '{print $3}' |
	grep -v -E '^(slurm_spank_[a-z_]+|plugin_name|plugin_type|plugin_version|spank_plugin_version)$')
if [ -n "$bad" ]; then
	echo "procmgr.so exports symbols beyond its SPANK entry points:"; echo "$bad"
	exit 1
fi
nm -D --defined-only "$so" | grep -q ' T slurm_spank_init$' || { echo "slurm_spank_init not exported"; exit 1; }
if objdump -p "$so" | grep NEEDED | grep -q -E 'libmunge|libslurm'; then
	echo "procmgr.so links munge or libslurm:"; objdump -p "$so" | grep NEEDED
	exit 1
fi
echo "procmgr.so exports $(nm -D --defined-only "$so" | wc -l) symbols, all SPANK's"
