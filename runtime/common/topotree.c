/* topology.conf's leaf switches: see topotree.h. */
#include "topotree.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hostlist.h"

/* Slurm allows node lists of any length; a leaf switch rarely has more. */
#define PM_TOPO_HOSTS_MAX 65536

static bool key_is(const char *tok, const char *key, const char **val)
{
	size_t k = strlen(key);
	if (strncasecmp(tok, key, k) || tok[k] != '=')
		return false;
	*val = tok + k + 1;
	return true;
}

/* One line, comment cut: its Nodes= value (NULL: not a leaf switch). */
static const char *leaf_nodes(char *line)
{
	const char *nodes = NULL, *sw = NULL, *v;
	char *save = NULL;

	for (char *tok = strtok_r(line, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
		if (key_is(tok, "SwitchName", &v))
			sw = v;
		else if (key_is(tok, "Nodes", &v))
			nodes = v;
	}
	return sw && nodes && nodes[0] ? nodes : NULL;
}

int pm_topotree_domains(const char *text, char *const *names, uint32_t n, uint32_t *dom,
			char *err, size_t errlen)
{
	char *copy = strdup(text ? text : ""), *save = NULL;
	uint32_t leaves = 0, distinct = 0;
	int rc = 0;

	if (!copy)
		return snprintf(err, errlen, "out of memory"), -1;
	for (uint32_t i = 0; i < n; i++)
		dom[i] = UINT32_MAX;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *hash = strchr(line, '#'), **hosts = NULL;
		const char *nodes;
		int nh;
		bool used = false;
		if (hash)
			*hash = '\0';
		if (!(nodes = leaf_nodes(line)))
			continue;
		nh = pm_hostlist_expand(nodes, PM_TOPO_HOSTS_MAX, &hosts);
		if (nh < 0) {
			snprintf(err, errlen, "topology.conf: a malformed Nodes= list: %.100s", nodes);
			rc = -1;
			break;
		}
		for (int h = 0; h < nh && rc == 0; h++)
			for (uint32_t i = 0; i < n; i++) {
				if (strcmp(hosts[h], names[i]))
					continue;
				if (dom[i] != UINT32_MAX && dom[i] != leaves) {
					snprintf(err, errlen, "topology.conf: node %.64s is on two leaf switches",
						 names[i]);
					rc = -1;
					break;
				}
				dom[i] = leaves;
				used = true;
			}
		pm_hostlist_free(hosts, nh);
		distinct += used;
		leaves++;
		if (rc)
			break;
	}
	free(copy);
	if (rc)
		return -1;
	if (!leaves)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		if (dom[i] == UINT32_MAX)
			return snprintf(err, errlen, "topology.conf: node %.64s is on no leaf switch",
					names[i]),
			       -1;
	return (int)distinct;
}
