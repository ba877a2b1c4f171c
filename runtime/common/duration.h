/* Durations as users write them: plain seconds, as procmgr always took
 * them, a number with a unit, or Slurm's time forms (sbatch --time).
 * Pure. */
#ifndef PM_DURATION_H
#define PM_DURATION_H

/* What pm_duration_parse accepts, for messages and help texts. */
#define PM_DURATION_FORMS \
	"seconds (10, 0.5), a number with a unit s, m, h or d (90s, 5m, 1.5h, 1d) " \
	"or Slurm's M:S, H:M:S, D-H, D-H:M, D-H:M:S"

/* The most any duration may be: a week. Anything longer is a typo. */
#define PM_DURATION_MAX_MS 604800000u

/* s into milliseconds:
 *   "10", "0.5"          seconds, up to 3 decimals. Unlike Slurm, where a
 *                        bare number is minutes: procmgr's options always
 *                        were seconds, and scripts written for that keep
 *                        their meaning.
 *   "90s" "5m" "1.5h" "1d"  a unit; up to 3 decimals
 *   "M:S" "H:M:S"        the first field any size, the others below 60
 *   "D-H" "D-H:M" "D-H:M:S"  hours below 24
 * No sign, no white space, at most PM_DURATION_MAX_MS. -1 for anything
 * else, and *ms is left alone. */
int pm_duration_parse(const char *s, unsigned *ms);

#endif
