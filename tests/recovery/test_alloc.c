/*
 * test_alloc.c - allocation failure (SQLite's "the N-th malloc fails"):
 * every allocation of the library goes through mrtx__malloc and friends
 * (storage/common.c), whose hook mrtx__alloc_fail_at makes the N-th fail.
 * For every N over a whole transaction (begin, gets, scan, puts, delete,
 * commit), over recovery, and over open + create_table, the call returns
 * MRTX_ENOMEM (or succeeds), nothing leaks (run under ASan/LSan), and the
 * store holds either the state before or the state after the transaction.
 *
 * LMDB's own allocations are outside the hook; that is by design.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "txn/admin_test.h"

#define NROWS 4
static const char *const FAMS[] = { "f", "g" };

/* Open with the two_phase knob (txn_test.h): the prewrite/commit-point protocol,
 * whose steps after the commit point allocate too (one-phase commits end
 * at their single write). */
static int two_phase;

static mrtx_db *open_at(const char *path)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db = NULL;

	o.durability = MRTX_NOSYNC;
	o.create = MRTX_CREATE_IF_MISSING; /* (a fresh RADOS address too) */
	if (mrtx__open_knobs(&db, path, &o, &(mrtx__knobs){ 0, two_phase, 0 }) != MRTX_OK)
		fail_msg("mrtx_open(%s): %s", path, mrtx_errmsg());
	return db;
}

static mrtx_db *fresh(char **path)
{
	mrtx_db *db;
	mrtx_txn *txn;

	assert_non_null(*path = tu_tmpdir("alloc"));
	db = open_at(*path);
	assert_int_equal(mrtx_create_table(db, "t", FAMS, 2), MRTX_OK);
	assert_int_equal(mrtx_create_table(db, "u", FAMS, 1), MRTX_OK);
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	for (int i = 0; i < NROWS; i++) {
		char r[8];

		snprintf(r, sizeof(r), "r%d", i);
		assert_int_equal(mrtx_put(txn, "t", MRTX_CSTR(r), "f", MRTX_CSTR("q"),
		                          MRTX_CSTR("0")), MRTX_OK);
	}
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	return db;
}

static void done(mrtx_db *db, char *path)
{
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* begin; get r0 and a missing cell; scan; put r0..r2 = "1" (a 200-byte value
 * on r1, so buffers grow); delete r3; read back a buffered write; write table u;
 * commit. */
static int run_txn(mrtx_db *db)
{
	mrtx_scan_spec spec = { "t", { NULL, 0 }, { NULL, 0 }, NULL, { NULL, 0 },
	                        { NULL, 0 }, 0, 0 };
	static char big[200];
	mrtx_scanner *s = NULL;
	mrtx_txn *txn = NULL;
	mrtx_bytes v;
	mrtx_cell c;
	int rc;

	memset(big, '1', sizeof(big));
	if ((rc = mrtx_begin(db, &txn)))
		return rc;
	if ((rc = mrtx_get(txn, "t", MRTX_CSTR("r0"), "f", MRTX_CSTR("q"), &v)))
		goto fail;
	rc = mrtx_get(txn, "t", MRTX_CSTR("r9"), "f", MRTX_CSTR("q"), &v);
	if (rc != MRTX_NOTFOUND)
		goto fail;
	if ((rc = mrtx_scan_open(txn, &spec, &s)))
		goto fail;
	while ((rc = mrtx_scan_next(s, &c)) == MRTX_OK)
		;
	mrtx_scan_close(s);
	if (rc != MRTX_NOTFOUND)
		goto fail;
	for (int i = 0; i < 3; i++) {
		char r[8];

		snprintf(r, sizeof(r), "r%d", i);
		if ((rc = mrtx_put(txn, "t", MRTX_CSTR(r), "f", MRTX_CSTR("q"),
		                   i == 1 ? MRTX_BYTES(big, sizeof(big)) : MRTX_CSTR("1"))))
			goto fail;
	}
	if ((rc = mrtx_delete(txn, "t", MRTX_CSTR("r3"), "f", MRTX_CSTR("q"))) ||
	    (rc = mrtx_put(txn, "u", MRTX_CSTR("x"), "f", MRTX_CSTR("q"), MRTX_CSTR("1"))) ||
	    (rc = mrtx_get(txn, "t", MRTX_CSTR("r1"), "f", MRTX_CSTR("q"), &v)))
		goto fail;
	if (v.size != sizeof(big))
		fail_msg("read-your-writes returned %zu bytes", v.size);
	return mrtx_commit(txn);
fail:
	mrtx_abort(txn);
	return rc;
}

/* 0 before, 1 after, -1 neither (read with the allocator healthy). */
static int txn_state(mrtx_db *db)
{
	int before = 1, after = 1, rc;
	mrtx_txn *txn;
	mrtx_bytes v;

	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	for (int i = 0; i < NROWS; i++) {
		char r[8];

		snprintf(r, sizeof(r), "r%d", i);
		rc = mrtx_get(txn, "t", MRTX_CSTR(r), "f", MRTX_CSTR("q"), &v);
		if (rc != MRTX_OK && rc != MRTX_NOTFOUND)
			fail_msg("get %s: %s", r, mrtx_errmsg());
		before &= rc == MRTX_OK && v.size == 1 && *(const char *)v.data == '0';
		after &= i == 3 ? rc == MRTX_NOTFOUND :
		         rc == MRTX_OK && *(const char *)v.data == '1' &&
		         v.size == (i == 1 ? 200u : 1u);
	}
	rc = mrtx_get(txn, "u", MRTX_CSTR("x"), "f", MRTX_CSTR("q"), &v);
	before &= rc == MRTX_NOTFOUND;
	after &= rc == MRTX_OK;
	mrtx_abort(txn);
	return before ? 0 : after ? 1 : -1;
}

static void settle(mrtx_db *db)
{
	recover_opts ro = { 0, 1, 0 };
	recover_stats stats;

	assert_int_equal(recover_sweep(mrtx__db_store(db), &ro, &stats, NULL, NULL), MRTX_OK);
	assert_int_equal(stats.errors, 0);
}

static void txn_alloc_loop(int exact)
{
	unsigned long n, total = 0;
	int enomem = 0, ok_after_point = 0;

	mrtx__arena_exact(exact);
	for (n = 1;; n++) {
		unsigned long count;
		char *path;
		mrtx_db *db = fresh(&path);
		int rc, st;

		mrtx__alloc_fail_at(n);
		rc = run_txn(db);
		count = mrtx__alloc_fail_at(0);
		if (count < n) {
			assert_int_equal(rc, MRTX_OK);
			settle(db);
			assert_int_equal(txn_state(db), 1);
			total = count;
			done(db, path);
			break;
		}
		if (rc != MRTX_OK && rc != MRTX_ENOMEM)
			fail_msg("allocation %lu failed: got %s (%s), want MRTX_ENOMEM", n,
			         mrtx_strerror(rc), mrtx_errmsg());
		enomem += rc == MRTX_ENOMEM;
		ok_after_point += rc == MRTX_OK;
		settle(db);
		st = txn_state(db);
		if (st != (rc == MRTX_OK ? 1 : 0))
			fail_msg("allocation %lu failed: rc %s but the store is %s", n,
			         mrtx_strerror(rc), st == 0 ? "unchanged" : st == 1 ? "committed" :
			         "half written");
		done(db, path);
	}
	mrtx__arena_exact(0);
	assert_true(total >= 3);
	assert_true(enomem > 0);
	if (exact && two_phase)
		assert_true(ok_after_point > 0);
	print_message("# %s, %s: %lu allocations in the transaction: %d MRTX_ENOMEM, %d OK "
	              "(failure after the commit point)\n",
	              exact ? "arena chunk per allocation" : "default arena",
	              two_phase ? "two-phase" : "one-phase", total, enomem,
	              ok_after_point);
}

static void txn_every_allocation(void **state)
{
	(void)state;
	for (two_phase = 0; two_phase < 2; two_phase++)
		txn_alloc_loop(0);
	two_phase = 0;
}

/* Every arena allocation its own malloc: reaches each allocation site. */
static void txn_every_arena_allocation(void **state)
{
	(void)state;
	for (two_phase = 0; two_phase < 2; two_phase++)
		txn_alloc_loop(1);
	two_phase = 0;
}

/* A half-done committed transaction; recovery with the N-th allocation failing. */
static void recovery_every_allocation(void **state)
{
	unsigned long n, total = 0;

	(void)state;
	mrtx__arena_exact(1);
	two_phase = 1; /* a committed transaction with locks left to settle */
	for (n = 1;; n++) {
		recover_opts ro = { 0, 1, 0 };
		recover_stats stats;
		unsigned long count;
		char *path;
		mrtx_db *db = fresh(&path);
		int rc;

		assert_int_equal(mrtx_failpoints_set("commit.after_point=error"), MRTX_OK);
		assert_int_equal(run_txn(db), MRTX_OK);
		assert_int_equal(mrtx_failpoints_set(NULL), MRTX_OK);
		mrtx__alloc_fail_at(n);
		rc = recover_sweep(mrtx__db_store(db), &ro, &stats, NULL, NULL);
		count = mrtx__alloc_fail_at(0);
		if (rc != MRTX_OK && rc != MRTX_ENOMEM)
			fail_msg("allocation %lu: recover_sweep returned %s", n, mrtx_strerror(rc));
		settle(db);
		assert_int_equal(txn_state(db), 1);
		done(db, path);
		if (count < n) {
			total = count;
			break;
		}
	}
	mrtx__arena_exact(0);
	two_phase = 0;
	assert_true(total > 3);
	print_message("# %lu allocations in recovery (arena chunk per allocation)\n", total);
}

/*
 * A read-only scan's observations wait until something compares against
 * them (txn/scan.c); the next call puts them into the row tree.  With its
 * N-th allocation failing that call returns MRTX_ENOMEM, and none is lost:
 * the transaction then writes and commits, as nothing changed the store.
 */
static void scan_settle_every_allocation(void **state)
{
	unsigned long n, total = 0;
	int enomem = 0;

	(void)state;
	for (n = 1;; n++) {
		mrtx_scan_spec spec = { .table = "t" };
		unsigned long count;
		mrtx_scanner *s;
		mrtx_txn *txn;
		mrtx_cell cell;
		mrtx_bytes v;
		char *path;
		mrtx_db *db = fresh(&path);
		int rc, rows = 0;

		assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
		assert_int_equal(mrtx_scan_open(txn, &spec, &s), MRTX_OK);
		while ((rc = mrtx_scan_next(s, &cell)) == MRTX_OK)
			rows++;
		assert_int_equal(rc, MRTX_NOTFOUND);
		assert_int_equal(rows, NROWS);
		mrtx__arena_exact(1);
		mrtx__alloc_fail_at(n);
		rc = mrtx_get(txn, "t", MRTX_CSTR("zz"), "f", MRTX_CSTR("q"), &v);
		count = mrtx__alloc_fail_at(0);
		mrtx__arena_exact(0);
		if (rc != MRTX_NOTFOUND && rc != MRTX_ENOMEM)
			fail_msg("allocation %lu failed: get returned %s (%s)", n, mrtx_strerror(rc),
			         mrtx_errmsg());
		enomem += rc == MRTX_ENOMEM;
		rc = mrtx_put(txn, "u", MRTX_CSTR("x"), "f", MRTX_CSTR("q"), MRTX_CSTR("1"));
		if (rc == MRTX_OK)
			rc = mrtx_commit(txn);
		else
			mrtx_abort(txn);
		if (rc != MRTX_OK)
			fail_msg("allocation %lu failed in the get: the commit after it returned %s "
			         "(%s)", n, mrtx_strerror(rc), mrtx_errmsg());
		mrtx_scan_close(s);
		done(db, path);
		if (count < n) {
			total = count;
			break;
		}
	}
	assert_true(enomem > 0);
	print_message("# %lu allocations putting a scan's rows in and reading\n", total);
}

/* mrtx_open of a new store and create_table, the N-th allocation failing. */
static void open_every_allocation(void **state)
{
	unsigned long n, total = 0;

	(void)state;
	for (n = 1;; n++) {
		char *path = tu_tmpdir("allocopen");
		mrtx_options o = MRTX_OPTIONS_INIT;
		mrtx_db *db = NULL;
		unsigned long count;
		int rc;

		assert_non_null(path);
		o.durability = MRTX_NOSYNC;
		o.create = MRTX_CREATE_IF_MISSING;
		mrtx__alloc_fail_at(n);
		rc = mrtx_open(&db, path, &o);
		if (rc == MRTX_OK)
			rc = mrtx_create_table(db, "t", FAMS, 2);
		if (rc == MRTX_OK) {
			const char *const *fams;
			size_t nf;

			rc = mrtx_table_families(db, "t", &fams, &nf);
		}
		count = mrtx__alloc_fail_at(0);
		if (rc != MRTX_OK && rc != MRTX_ENOMEM)
			fail_msg("allocation %lu: %s (%s)", n, mrtx_strerror(rc), mrtx_errmsg());
		if (rc != MRTX_OK && db == NULL) {
			/* Open failed: a retry must work. */
			db = open_at(path);
		}
		assert_int_equal(mrtx_create_table(db, "t", FAMS, 2), MRTX_OK);
		mrtx_close(db);
		/* And the store reopens from the file. */
		db = open_at(path);
		assert_int_equal(tu_put_str(db, "t", "r", "f:q", "v"), MRTX_OK);
		mrtx_close(db);
		tu_rmrf(path);
		free(path);
		if (count < n) {
			total = count;
			break;
		}
	}
	print_message("# %lu allocations in open + create_table\n", total);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(txn_every_allocation),
		cmocka_unit_test(txn_every_arena_allocation),
		cmocka_unit_test(scan_settle_every_allocation),
		cmocka_unit_test(recovery_every_allocation),
		cmocka_unit_test(open_every_allocation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
