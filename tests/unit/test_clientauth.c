/* The procmgr command and a step's root proving themselves to each other
 * (runtime/common/clientauth.c): the replayed nonce, the request for
 * another node, port or step, the proof of another user or another
 * request; each refusal says why. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/clientauth.h"

static const char NONCE[] = "0123456789abcdef0123456789abcdef";

static struct pm_request req(void)
{
	struct pm_request r = { .kind = PM_Q_STATUS, .job = 12, .step = 1, .port = 20001 };

	snprintf(r.args, sizeof(r.args), "-");
	snprintf(r.host, sizeof(r.host), "pa1");
	snprintf(r.nonce, sizeof(r.nonce), "%s", NONCE);
	return r;
}

static void nonce_of(int i, char out[PM_REQ_NONCE_HEX + 1])
{
	snprintf(out, PM_REQ_NONCE_HEX + 1, "%032x", i);
}

static void test_nonces(void **state)
{
	struct pm_nonces *set = calloc(1, sizeof(*set));
	char n[PM_REQ_NONCE_HEX + 1];
	int i;
	(void)state;

	assert_non_null(set);
	assert_int_equal(pm_nonces_seen(set, NONCE, 1000), 0);
	/* The same nonce again within its lifetime: a replay. */
	assert_int_equal(pm_nonces_seen(set, NONCE, 2000), 1);
	assert_int_equal(pm_nonces_seen(set, NONCE, 1000 + PM_NONCES_KEEP_MS - 1), 1);
	/* Another nonce is not. */
	nonce_of(1, n);
	assert_int_equal(pm_nonces_seen(set, n, 3000), 0);
	/* After its lifetime the credential itself has expired: forgotten. */
	assert_int_equal(pm_nonces_seen(set, NONCE, 1000 + PM_NONCES_KEEP_MS), 0);
	assert_int_equal(set->n, 2);
	/* Bounded: a full set forgets its oldest, never grows. */
	for (i = 2; i < PM_NONCES_MAX + 10; i++) {
		nonce_of(i, n);
		assert_int_equal(pm_nonces_seen(set, n, 5000 + (uint64_t)i), 0);
		assert_true(set->n <= PM_NONCES_MAX);
	}
	assert_int_equal(set->n, PM_NONCES_MAX);
	/* The newest are still known. */
	nonce_of(PM_NONCES_MAX + 9, n);
	assert_int_equal(pm_nonces_seen(set, n, 6000 + PM_NONCES_MAX), 1);
	nonce_of(PM_NONCES_MAX, n);
	assert_int_equal(pm_nonces_seen(set, n, 6000 + PM_NONCES_MAX), 1);
	free(set);
}

static void test_target(void **state)
{
	struct pm_request r = req();
	char why[256];
	(void)state;

	assert_int_equal(pm_clientauth_target(&r, 12, 1, "pa1", 20001, why, sizeof(why)), 0);
	/* Sent to another node (the root moved, someone took the old port). */
	assert_int_equal(pm_clientauth_target(&r, 12, 1, "pa2", 20001, why, sizeof(why)), -1);
	assert_string_equal(why, "the request was signed for pa1:20001, not for this node "
			    "(pa2:20001): a request is answered only where its user sent it");
	/* Another port of the same node (another step's root). */
	assert_int_equal(pm_clientauth_target(&r, 12, 1, "pa1", 20003, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "not for this node (pa1:20003)"));
	/* Another step, or another job. */
	assert_int_equal(pm_clientauth_target(&r, 12, 2, "pa1", 20001, why, sizeof(why)), -1);
	assert_string_equal(why, "this is step 12.2, not 12.1");
	assert_int_equal(pm_clientauth_target(&r, 13, 1, "pa1", 20001, why, sizeof(why)), -1);
	assert_string_equal(why, "this is step 13.1, not 12.1");
	/* A name that only starts the same. */
	assert_int_equal(pm_clientauth_target(&r, 12, 1, "pa10", 20001, why, sizeof(why)), -1);
}

static void test_proof(void **state)
{
	struct pm_request r = req();
	char why[256], good[PM_REQ_MAX], other[PM_REQ_MAX];
	(void)state;

	assert_int_equal(pm_request_proof(&r, good, sizeof(good)), 0);
	/* The job's user's procmgrd, or root. */
	assert_int_equal(pm_clientauth_proof(&r, 1000, 1000, good, why, sizeof(why)), 0);
	assert_int_equal(pm_clientauth_proof(&r, 1000, 0, good, why, sizeof(why)), 0);
	/* Another user's (the impostor's own credential). */
	assert_int_equal(pm_clientauth_proof(&r, 1000, 65534, good, why, sizeof(why)), -1);
	assert_string_equal(why, "its credential is of uid 65534, neither the job's user "
			    "(uid 1000) nor root");
	assert_int_equal(pm_clientauth_proof(&r, 0, 65534, good, why, sizeof(why)), -1);
	/* The job user's proof of another request: another nonce, node, port,
	 * step; or not a proof at all (the user's own request relayed). */
	r.nonce[0] = '1';
	assert_int_equal(pm_request_proof(&r, other, sizeof(other)), 0);
	r = req();
	assert_int_equal(pm_clientauth_proof(&r, 1000, 1000, other, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "its credential answers another request ('procmgr-root v1 "));
	r.port = 20003;
	assert_int_equal(pm_clientauth_proof(&r, 1000, 1000, good, why, sizeof(why)), -1);
	r = req();
	snprintf(r.host, sizeof(r.host), "pa2");
	assert_int_equal(pm_clientauth_proof(&r, 1000, 1000, good, why, sizeof(why)), -1);
	r = req();
	r.step = 2;
	assert_int_equal(pm_clientauth_proof(&r, 1000, 1000, good, why, sizeof(why)), -1);
	r = req();
	assert_int_equal(pm_request_format(&r, other, sizeof(other)), 0);
	assert_int_equal(pm_clientauth_proof(&r, 1000, 1000, other, why, sizeof(why)), -1);
	assert_int_equal(pm_clientauth_proof(&r, 1000, 1000, "", why, sizeof(why)), -1);
	/* A request that cannot be said cannot be proven. */
	r.nonce[0] = 'X';
	assert_int_equal(pm_clientauth_proof(&r, 1000, 1000, good, why, sizeof(why)), -1);
	assert_string_equal(why, "the request cannot be proven (bad target or nonce)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nonces),
		cmocka_unit_test(test_target),
		cmocka_unit_test(test_proof),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
