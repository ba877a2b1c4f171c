/* The nodes' leaf switches from Slurm's topology.conf (topology/tree):
 * the failure domains the buddy choice keeps a node and its buddy apart
 * by (issue 23). Pure: the file's text in, a domain per node out. */
#ifndef PM_TOPOTREE_H
#define PM_TOPOTREE_H

#include <stddef.h>
#include <stdint.h>

/* The file's lines "SwitchName=S Nodes=HOSTLIST" (case-insensitive keys,
 * '#' comments, other keys such as Switches= and LinkSpeed= ignored):
 * dom[i] gets the index, in the file, of the leaf switch whose Nodes
 * names names[i]. Returns how many distinct leaf switches the n nodes
 * are on (1: one switch, nothing to keep apart); 0 if the text has no
 * leaf switch; -1 with err if a node is on none or on two, or a Nodes=
 * list is malformed (the caller then keeps the ring order). */
int pm_topotree_domains(const char *text, char *const *names, uint32_t n, uint32_t *dom,
			char *err, size_t errlen);

#endif
