/* Unit tests of runtime/common/topotree.c: topology.conf's leaf switches
 * as the buddy choice's failure domains, and the buddy they give
 * (statestore.c's pm_state_buddy), by tables. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/statestore.h"
#include "common/topotree.h"

static char *const eight[] = { "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8" };

struct row {
	const char *conf;
	uint32_t n;
	int rc;
	uint32_t dom[8];
	const char *err; /* a part of it, rc -1 */
};

static const struct row rows[] = {
	/* two leaf switches under a spine; Slurm's syntax as its docs give it */
	{ "# a comment\nSwitchName=s0 Nodes=n[1-4] LinkSpeed=100\n"
	  "SwitchName=s1 Nodes=n[5-8]\nSwitchName=spine Switches=s[0-1]\n",
	  8, 2, { 0, 0, 0, 0, 1, 1, 1, 1 }, NULL },
	/* keys in any case, tabs, a trailing comment, CRLF */
	{ "switchname=a\tnodes=n[1,3,5,7] # odd\r\nSWITCHNAME=b NODES=n2,n4,n6,n8\r\n",
	  8, 2, { 0, 1, 0, 1, 0, 1, 0, 1 }, NULL },
	/* the step on one switch of several: nothing to keep apart */
	{ "SwitchName=s0 Nodes=n[1-4]\nSwitchName=s1 Nodes=x[1-4]\n", 4, 1, { 0, 0, 0, 0 }, NULL },
	/* a switch of nodes outside the step in between: domains by file index */
	{ "SwitchName=s0 Nodes=x1\nSwitchName=s1 Nodes=n[1-2]\nSwitchName=s2 Nodes=n[3-4]\n",
	  4, 2, { 1, 1, 2, 2 }, NULL },
	/* no leaf switch at all */
	{ "", 4, 0, { 0 }, NULL },
	{ "SwitchName=spine Switches=s[0-1]\n", 4, 0, { 0 }, NULL },
	/* a node on none, on two, a malformed list */
	{ "SwitchName=s0 Nodes=n[1-3]\n", 4, -1, { 0 }, "node n4 is on no leaf switch" },
	{ "SwitchName=s0 Nodes=n[1-4]\nSwitchName=s1 Nodes=n4\n", 4, -1, { 0 },
	  "node n4 is on two leaf switches" },
	{ "SwitchName=s0 Nodes=n[1-\n", 4, -1, { 0 }, "malformed Nodes= list" },
};

static void test_domains(void **state)
{
	(void)state;
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		uint32_t dom[8];
		char err[256] = "";
		int rc = pm_topotree_domains(rows[r].conf, eight, rows[r].n, dom, err, sizeof(err));
		print_message("row %zu: %d %s\n", r, rc, err);
		assert_int_equal(rc, rows[r].rc);
		if (rc > 0)
			assert_memory_equal(dom, rows[r].dom, rows[r].n * sizeof(uint32_t));
		if (rows[r].err)
			assert_non_null(strstr(err, rows[r].err));
	}
}

/* The buddy of each node of two switches is on the other one, and every
 * node is one node's buddy; Slurm's node order interleaving the switches
 * gives the same. */
static void test_buddy_on_the_other_switch(void **state)
{
	static const char *confs[] = {
		"SwitchName=s0 Nodes=n[1-4]\nSwitchName=s1 Nodes=n[5-8]\n",
		"SwitchName=s0 Nodes=n[1,3,5,7]\nSwitchName=s1 Nodes=n[2,4,6,8]\n",
		"SwitchName=s0 Nodes=n[1-6]\nSwitchName=s1 Nodes=n[7-8]\n",
	};
	(void)state;
	for (size_t c = 0; c < 3; c++) {
		uint32_t dom[8];
		int seen[8] = { 0 };
		char err[256];
		assert_int_equal(pm_topotree_domains(confs[c], eight, 8, dom, err, sizeof(err)), 2);
		for (uint32_t i = 0; i < 8; i++) {
			long b = pm_state_buddy(i, 8, dom);
			assert_true(b >= 0 && b < 8);
			assert_int_not_equal(dom[b], dom[i]);
			seen[b]++;
		}
		if (c < 2) /* even switches: a bijection */
			for (int i = 0; i < 8; i++)
				assert_int_equal(seen[i], 1);
	}
	/* Interleaved, the ring's half-way node (i + 4) shares i's switch: the
	 * topology moves the buddy off it. */
	{
		uint32_t dom[8];
		char err[256];
		pm_topotree_domains(confs[1], eight, 8, dom, err, sizeof(err));
		assert_int_equal(dom[pm_state_buddy(0, 8, NULL)], dom[0]);
		assert_int_not_equal(dom[pm_state_buddy(0, 8, dom)], dom[0]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_domains),
		cmocka_unit_test(test_buddy_on_the_other_switch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
