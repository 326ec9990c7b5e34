/*
 * test_histcheck.c - the list-append checker must flag hand-built anomalous
 * histories (a checker that cannot fail proves nothing) and pass clean ones.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>

#include "histcheck.h"

static hc_history *H;

static long T(unsigned id, int status)
{
	long t = hc_add_txn(H, HC_ID(0, id), status);

	assert_true(t >= 0);
	return t;
}

static void A(long t, uint32_t k, uint64_t v)
{
	assert_int_equal(hc_add_append(H, t, k, v), 0);
}

/* R(t, k, n, v1, ..., vn) */
static void R(long t, uint32_t k, int n, ...)
{
	uint64_t v[16];
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		v[i] = va_arg(ap, unsigned);
	va_end(ap);
	assert_int_equal(hc_add_read(H, t, k, v, (size_t)n), 0);
}

static void F(uint32_t k, int n, ...)
{
	uint64_t v[16];
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		v[i] = va_arg(ap, unsigned);
	va_end(ap);
	assert_int_equal(hc_set_final(H, k, v, (size_t)n), 0);
}

static int setup(void **state)
{
	(void)state;
	H = hc_new();
	return H ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	hc_free(H);
	H = NULL;
	return 0;
}

/* Run the checker; print what it found; return the report. */
static hc_report check(void)
{
	hc_report r;

	assert_int_equal(hc_check(H, &r), 0);
	for (size_t i = 0; i < r.nanomalies; i++)
		printf("    %s: %s\n", hc_anomaly_name(r.anomalies[i].type), r.anomalies[i].text);
	return r;
}

static void expect_only(hc_report *r, int type)
{
	assert_true(r->counts[type] > 0);
	assert_int_equal(r->total, r->counts[type]);
	hc_report_free(r);
}

static void test_serial_history_is_clean(void **state)
{
	long t1 = T(1, HC_OK), t2 = T(2, HC_OK), t3 = T(3, HC_OK), t4 = T(4, HC_FAIL);
	long t5 = T(5, HC_UNKNOWN), t6 = T(6, HC_UNKNOWN);
	hc_report r;

	(void)state;
	A(t1, 1, 1); A(t1, 2, 1);
	R(t2, 1, 1, 1); A(t2, 1, 2);
	R(t3, 2, 1, 1); R(t3, 1, 2, 1, 2); A(t3, 2, 3);
	A(t4, 1, 4);                 /* failed: invisible */
	A(t5, 1, 5); A(t5, 2, 5);    /* unknown, committed: both visible */
	A(t6, 1, 6); A(t6, 2, 6);    /* unknown, not committed: neither visible */
	F(1, 3, 1, 2, 5);
	F(2, 3, 1, 3, 5);
	r = check();
	assert_int_equal(r.total, 0);
	assert_int_equal(r.ok, 3);
	assert_int_equal(r.failed, 1);
	assert_int_equal(r.unknown, 2);
	assert_int_equal(r.unknown_visible, 1);
	assert_true(r.edges[0] > 0 && r.edges[1] > 0 && r.edges[2] > 0);
	hc_report_free(&r);
}

/* T1 and T2 both read x and y empty, then each appends to a different key. */
/* The checker in mode m: the number of anomalies of each kind found. */
static hc_report check_mode(int m)
{
	hc_report r;

	assert_int_equal(hc_check_mode(H, m, &r), 0);
	assert_int_equal(r.mode, m);
	for (size_t i = 0; i < r.nanomalies; i++)
		printf("    [mode %d] %s: %s\n", m, hc_anomaly_name(r.anomalies[i].type),
		       r.anomalies[i].text);
	return r;
}

/* Write skew: G2 between two writers.  Snapshot isolation allows it;
 * mrtx's promise (writers serializable, readers a snapshot) does not. */
static void write_skew(void);

static void test_si_modes_write_skew(void **state)
{
	hc_report r;

	(void)state;
	write_skew();
	r = check_mode(HC_SNAPSHOT);
	assert_int_equal(r.total, 0);
	hc_report_free(&r);
	r = check_mode(HC_SNAPSHOT_READONLY);
	expect_only(&r, HC_G2);
	assert_int_equal(hc_check_mode(H, 7, &r), -1);
}

/*
 * The read-only anomaly (Fekete, O'Neil and O'Neil): T1 reads x and appends
 * to y; T2 appends to x after T1 read it (T1 -rw-> T2); the read-only T3
 * sees T2's x but not T1's y (T2 -wr-> T3, T3 -rw-> T1).  A G2 cycle that
 * passes through a reader: not serializable, but a snapshot.
 */
static void test_si_modes_read_only_anomaly(void **state)
{
	long t1 = T(1, HC_OK), t2 = T(2, HC_OK), t3 = T(3, HC_OK);
	hc_report r;

	(void)state;
	R(t1, 1, 0); A(t1, 2, 1);
	A(t2, 1, 2);
	R(t3, 1, 1, 2); R(t3, 2, 0);
	F(1, 1, 2);
	F(2, 1, 1);
	r = check();
	expect_only(&r, HC_G2);
	r = check_mode(HC_SNAPSHOT_READONLY);
	assert_int_equal(r.total, 0);
	hc_report_free(&r);
	r = check_mode(HC_SNAPSHOT);
	assert_int_equal(r.total, 0);
	hc_report_free(&r);
}

/* Read skew seen by a read-only transaction: T1 appends to x and y in one
 * transaction; T2, read-only, sees y with it and x without (T1 -wr-> T2,
 * T2 -rw-> T1: one rw edge).  Not a snapshot: an anomaly in every mode. */
static void test_si_modes_torn_read_is_g_single(void **state)
{
	long t1 = T(1, HC_OK), t2 = T(2, HC_OK);
	hc_report r;

	(void)state;
	A(t1, 1, 1); A(t1, 2, 1);
	R(t2, 1, 0); R(t2, 2, 1, 1);
	F(1, 1, 1);
	F(2, 1, 1);
	for (int m = HC_SERIALIZABLE; m <= HC_SNAPSHOT_READONLY; m++) {
		r = check_mode(m);
		expect_only(&r, HC_GSINGLE);
	}
}

static void write_skew(void)
{
	long t1 = T(1, HC_OK), t2 = T(2, HC_OK);

	R(t1, 1, 0); R(t1, 2, 0); A(t1, 1, 1);
	R(t2, 1, 0); R(t2, 2, 0); A(t2, 2, 2);
	F(1, 1, 1);
	F(2, 1, 2);
}

static void test_write_skew_is_g2(void **state)
{
	hc_report r;

	(void)state;
	write_skew();
	r = check();
	assert_non_null(strstr(r.anomalies[0].text, "T0.1"));
	assert_non_null(strstr(r.anomalies[0].text, "T0.2"));
	expect_only(&r, HC_G2);
}

/* Both read x empty and append: one overwrote the other's view. */
static void test_lost_update_is_g_single(void **state)
{
	long t1 = T(1, HC_OK), t2 = T(2, HC_OK);
	hc_report r;

	(void)state;
	R(t1, 1, 0); A(t1, 1, 1);
	R(t2, 1, 0); A(t2, 1, 2);
	F(1, 2, 1, 2);
	r = check();
	expect_only(&r, HC_GSINGLE);
}

/* The same lost update as the store shows it: a read-modify-write lost T1's value. */
static void test_lost_update_in_final_list(void **state)
{
	long t1 = T(1, HC_OK), t2 = T(2, HC_OK);
	hc_report r;

	(void)state;
	A(t1, 1, 1);
	A(t2, 1, 2);
	F(1, 1, 2);
	r = check();
	expect_only(&r, HC_LOST);
}

static void test_aborted_read_is_g1a(void **state)
{
	long t1 = T(1, HC_FAIL), t2 = T(2, HC_OK);
	hc_report r;

	(void)state;
	A(t1, 1, 1);
	R(t2, 1, 1, 1);
	F(1, 0);
	r = check();
	expect_only(&r, HC_G1A);
}

static void test_failed_write_in_final_state_is_g1a(void **state)
{
	long t1 = T(1, HC_FAIL);
	hc_report r;

	(void)state;
	A(t1, 1, 1);
	F(1, 1, 1);
	r = check();
	expect_only(&r, HC_G1A);
}

/* A killed transaction whose append landed on one key but not the other. */
static void test_torn_unknown_transaction(void **state)
{
	long t1 = T(1, HC_UNKNOWN);
	hc_report r;

	(void)state;
	A(t1, 1, 1); A(t1, 2, 1); A(t1, 3, 1);
	F(1, 1, 1);
	F(2, 0);
	F(3, 1, 1);
	r = check();
	assert_non_null(strstr(r.anomalies[0].text, "2 of its 3"));
	expect_only(&r, HC_TORN);
}

static void test_torn_committed_transaction_is_lost(void **state)
{
	long t1 = T(1, HC_OK);
	hc_report r;

	(void)state;
	A(t1, 1, 1); A(t1, 2, 1);
	F(1, 1, 1);
	r = check();
	expect_only(&r, HC_LOST);
}

/* x orders T1 before T2, y orders T2 before T1. */
static void test_dirty_write_is_g0(void **state)
{
	long t1 = T(1, HC_OK), t2 = T(2, HC_OK);
	hc_report r;

	(void)state;
	A(t1, 1, 1); A(t1, 2, 1);
	A(t2, 1, 2); A(t2, 2, 2);
	F(1, 2, 1, 2);
	F(2, 2, 2, 1);
	r = check();
	expect_only(&r, HC_G0);
}

/* Each reads the other's append: circular information flow. */
static void test_circular_flow_is_g1c(void **state)
{
	long t1 = T(1, HC_OK), t2 = T(2, HC_OK);
	hc_report r;

	(void)state;
	A(t1, 1, 1); R(t1, 2, 1, 2);
	A(t2, 2, 2); R(t2, 1, 1, 1);
	F(1, 1, 1);
	F(2, 1, 2);
	r = check();
	expect_only(&r, HC_G1C);
}

static void test_intermediate_read_is_g1b(void **state)
{
	long t1 = T(1, HC_OK), t2 = T(2, HC_OK);
	hc_report r;

	(void)state;
	A(t1, 1, 1); A(t1, 1, 2);
	R(t2, 1, 1, 1);
	F(1, 2, 1, 2);
	r = check();
	assert_true(r.counts[HC_G1B] > 0);
	hc_report_free(&r);
}

static void test_duplicate_and_garbage(void **state)
{
	long t1 = T(1, HC_OK);
	hc_report r;

	(void)state;
	A(t1, 1, 1);
	F(1, 3, 1, 1, 99);
	r = check();
	assert_true(r.counts[HC_DUPLICATE] > 0);
	assert_true(r.counts[HC_GARBAGE] > 0);
	hc_report_free(&r);
}

static void test_read_not_a_prefix(void **state)
{
	long t1 = T(1, HC_OK), t2 = T(2, HC_OK), t3 = T(3, HC_OK);
	hc_report r;

	(void)state;
	A(t1, 1, 1);
	A(t2, 1, 2);
	R(t3, 1, 1, 2);
	F(1, 2, 1, 2);
	r = check();
	assert_true(r.counts[HC_INCOMPATIBLE] > 0);
	hc_report_free(&r);
}

/*
 * A random serial execution (with failed and unknown transactions applied
 * all-or-nothing) is clean; swapping two adjacent values of one final list
 * must then be flagged.
 */
static void test_random_serial_then_corrupted(void **state)
{
	enum { NK = 6, NT = 3000 };
	uint64_t *lists[NK];
	size_t len[NK] = { 0 };
	unsigned seed = 12345;
	hc_report r;

	(void)state;
	for (int k = 0; k < NK; k++)
		assert_non_null(lists[k] = calloc(NT, sizeof(uint64_t)));
	for (unsigned i = 1; i <= NT; i++) {
		int st = (seed = seed * 1103515245u + 12345u) >> 16 & 7;
		int status = st == 0 ? HC_FAIL : st == 1 ? HC_UNKNOWN : HC_OK;
		int applied = status == HC_OK || (status == HC_UNKNOWN && (seed >> 20 & 1));
		long t = T(i, status);

		for (int k = 0; k < NK; k++) {
			int what = (seed = seed * 1103515245u + 12345u) >> 16 & 3;

			if (what == 1 && status == HC_OK)
				assert_int_equal(hc_add_read(H, t, (uint32_t)k, lists[k], len[k]), 0);
			if (what == 2) {
				A(t, (uint32_t)k, HC_ID(0, i));
				if (applied)
					lists[k][len[k]++] = HC_ID(0, i);
			}
		}
	}
	for (int k = 0; k < NK; k++)
		assert_int_equal(hc_set_final(H, (uint32_t)k, lists[k], len[k]), 0);
	r = check();
	assert_int_equal(r.total, 0);
	hc_report_free(&r);

	/* swap the middle pair of key 0's final list */
	{
		size_t m = len[0] / 2;
		uint64_t x = lists[0][m];

		lists[0][m] = lists[0][m + 1];
		lists[0][m + 1] = x;
		assert_int_equal(hc_set_final(H, 0, lists[0], len[0]), 0);
	}
	r = check();
	assert_true(r.total > 0);
	hc_report_free(&r);
	for (int k = 0; k < NK; k++)
		free(lists[k]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_serial_history_is_clean, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_skew_is_g2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_si_modes_write_skew, setup, teardown),
		cmocka_unit_test_setup_teardown(test_si_modes_read_only_anomaly, setup, teardown),
		cmocka_unit_test_setup_teardown(test_si_modes_torn_read_is_g_single, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_update_is_g_single, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_update_in_final_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_aborted_read_is_g1a, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_write_in_final_state_is_g1a, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_torn_unknown_transaction, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn_committed_transaction_is_lost, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_dirty_write_is_g0, setup, teardown),
		cmocka_unit_test_setup_teardown(test_circular_flow_is_g1c, setup, teardown),
		cmocka_unit_test_setup_teardown(test_intermediate_read_is_g1b, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duplicate_and_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_not_a_prefix, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_serial_then_corrupted, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
