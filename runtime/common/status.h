/* A node's answer to a status query: one line for the node, one per local
 * rank, as key=value words; and the summary of many such answers. The
 * same lines travel the tree and are read by the procmgr command, which
 * prints them as a table or as JSON. Pure. */
#ifndef PM_STATUS_H
#define PM_STATUS_H

#include <stddef.h>

#define PM_ST_WORD 64

struct pm_st_node {
	int node;
	char name[PM_ST_WORD];
	char phase[16]; /* procmgrd's: starting running stopping delay finished aborted,
			 * "spare" (a hot spare in reserve), or "absent" (never
			 * joined) / "lost" (its link went away) */
	unsigned gen;
	int ranks;      /* local ranks */
	char health[16]; /* ok, failed, unknown */
	/* The root's only, after a restart (optional words): its generation,
	 * ms from the failure to every rank running (procmgr's part) and to
	 * every rank's first heartbeat (-1: none yet, or no hang timeout). */
	unsigned rec_gen; /* 0: none */
	long long process_ms, recovery_ms;
	/* Found slow by the root (optional word): "EVIDENCE:RATIO", such as
	 * "compute:1.52" or "phase:0.90"; "" when not. */
	char slow[32];
	/* The ranks' state procmgrd holds in memory and its limit (optional
	 * words, both or none, said when state_max > 0; -1: not said). */
	long long state_bytes, state_max;
	/* --procmgr-warm (optional word): the resident memory of the node's
	 * standbys, their process groups summed; 0: none, or not said */
	long long standby_kb;
};

struct pm_st_rank {
	int rank, local, node; /* rank -1: its supervisor has not come yet */
	int pid;        /* the command's, 0 when none runs */
	char state[16]; /* absent idle running done failed gone; spare (rank -1) */
	unsigned gen;
	long long beat_ms; /* age of the last heartbeat, -1 without a hang timeout */
	long long cpu_ms;  /* the command's user+system time, -1 unknown */
	long long rss_kb;  /* its resident memory, -1 unknown */
	/* --procmgr-warm (optional words, both or none): the next generation's
	 * standby, "none" "starting" "ready" ("" not said), and its resident
	 * memory (its process group; -1 unknown) */
	char standby[16];
	long long standby_kb;
};

/* One line each, no newline. -1 if it does not fit or a word has a space. */
int pm_st_node_format(const struct pm_st_node *n, char *buf, size_t len);
int pm_st_rank_format(const struct pm_st_rank *r, char *buf, size_t len);
/* One line (no newline): 'N' (n filled), 'R' (r filled), -1 malformed. */
int pm_st_parse(const char *line, struct pm_st_node *n, struct pm_st_rank *r);

struct pm_st_summary {
	int nodes, nodes_up, ranks;
	int running, done, failed, other; /* ranks by state */
	unsigned gen_min, gen_max;
	int spares; /* rows of spares in reserve (state "spare"): no rank of the step */
	unsigned rec_gen; /* the last restart's figures, rec_gen 0: none */
	long long process_ms, recovery_ms;
	long long state_bytes; /* held by every node that said, -1: none said */
	/* --procmgr-warm: ranks whose standby is ready / starting / none, and
	 * the memory every node's standbys hold */
	int sb_ready, sb_starting, sb_none;
	long long standby_kb;
};
void pm_st_summarize(const struct pm_st_node *n, int nn, const struct pm_st_rank *r, int nr,
		     struct pm_st_summary *s);
/* "8 ranks on 4 nodes: 8 running; generation 1" and what differs (with
 * warm: "; standbys 8 ready, 1.8 GiB"). */
void pm_st_summary_line(const struct pm_st_summary *s, char *buf, size_t len);
/* "last restart: generation 2, every rank training again 9.29 s after the
 * failure (procmgr's part 0.29 s)"; 0, or -1 (and "") without a restart. */
int pm_st_recovery_line(const struct pm_st_summary *s, char *buf, size_t len);

#endif
