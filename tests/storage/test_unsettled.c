/*
 * test_unsettled.c - the LMDB store's count of unsettled lock records
 * (storage/lmdb/lmdb_unsettled.c, format 5), and the point reads that
 * trust it: a get in a view whose count was 0 does not read the row's
 * lock, and the lock is read from the same view when the transaction
 * commits with writes.
 *
 * Crashed two-phase writers leave unsettled records (PREWRITTEN
 * secondaries after the commit point, whole prewrites before it); the
 * count must follow them through recovery, a drop, `mrtx check` and the
 * upgrade of a format-4 store, and reads must still see every commit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lmdb.h>

#include "testutil.h"
#include "recovery/check.h"
#include "storage/lmdb/lmdb_seal.h"
#include "txn/admin_test.h"

#define B(s) MRTX_CSTR(s)
#define EXIT_FP 99 /* mrtx's failpoint exit status */

static const char *const FAMS[] = { "f" };
static const char *const ROWS[] = { "a", "b", "c" };

static mrtx_db *open_db(const char *path, int two_phase)
{
	mrtx_options o = MRTX_OPTIONS_INIT;

	o.durability = MRTX_NOSYNC;
	return tu_open_k(path, &o, &(mrtx__knobs){ 0, two_phase, 0 });
}

/* Put v in every row of table t in one transaction. */
static int write_all(mrtx_db *db, const char *t, const char *v)
{
	mrtx_txn *txn;
	int rc;

	if ((rc = mrtx_begin(db, &txn)))
		return rc;
	for (int i = 0; i < 3; i++)
		if ((rc = mrtx_put(txn, t, B(ROWS[i]), "f", B("q"), B(v)))) {
			mrtx_abort(txn);
			return rc;
		}
	return mrtx_commit(txn);
}

/* A two-phase writer of "new" in table t that dies at failpoint fp;
 * returns its exit status. */
static int crash_writer(const char *path, const char *t, const char *fp)
{
	pid_t pid = fork();

	if (pid == 0) {
		mrtx_options o = MRTX_OPTIONS_INIT;
		mrtx_db *db;

		o.durability = MRTX_NOSYNC;
		o.lock_ttl_ms = 600000; /* (settled because the owner is dead) */
		if (mrtx__open_knobs(&db, path, &o, &(mrtx__knobs){ 0, 1, 0 }) || mrtx_failpoints_set(fp))
			_exit(2);
		_exit(write_all(db, t, "new") == 0 ? 0 : 3);
	}
	assert_true(pid > 0);
	return tu_wait(pid);
}

/* The stored count, read with LMDB itself (no handle of the store open
 * in this process); -1 when there is none. */
static long long raw_count(const char *path)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = { 10, (void *)"\0unsettled" }, v;
	long long n = -1;

	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_open(env, path, MDB_NOTLS | MDB_RDONLY, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
	if (mdb_get(txn, dbi, &k, &v) == 0 && lmdb_unseal(&k, &v) == 0 && v.mv_size == 8) {
		uint64_t x = 0;

		for (unsigned i = 0; i < 8; i++)
			x |= (uint64_t)((const uint8_t *)v.mv_data)[i] << (8 * i);
		n = (long long)x;
	}
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return n;
}

/* check_store's verdict (0, or MRTX_ECORRUPT about the count). */
static int check(mrtx_db *db)
{
	check_stats s;
	int rc = check_store(mrtx__db_store(db), &s, NULL, NULL);

	if (rc == 0)
		assert_int_equal(s.corrupt, 0);
	return rc;
}

/* Every row of t reads want, in one read-only transaction. */
static void expect_all(mrtx_db *db, const char *t, const char *want)
{
	mrtx_txn *txn;
	mrtx_bytes v;

	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	for (int i = 0; i < 3; i++) {
		int rc = mrtx_get(txn, t, B(ROWS[i]), "f", B("q"), &v);

		if (rc != MRTX_OK)
			fail_msg("%s/%s: %s (%s)", t, ROWS[i], mrtx_strerror(rc), mrtx_errmsg());
		if (v.size != strlen(want) || memcmp(v.data, want, v.size) != 0)
			fail_msg("%s/%s reads '%.*s', want '%s'", t, ROWS[i], (int)v.size,
			         (const char *)v.data, want);
	}
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
}

static int skip_rados(void)
{
	if (tu_rados()) {
		print_message("# LMDB only (RADOS keeps no count)\n");
		return 1;
	}
	return 0;
}

/*
 * A two-phase writer dead after its commit point leaves its secondaries
 * PREWRITTEN: the count says so, reads roll them forward (a read that
 * trusted a stale "no unsettled records" would see the old values), and
 * the count is back at 0.  One dead before its commit point: the rows read
 * as before, and rolling them back brings the count back to 0.
 * Checks I22 (DESIGN §10).
 */
static void test_count_follows_crashes(void **state)
{
	char *path;
	mrtx_db *db;

	(void)state;
	if (skip_rados())
		return;
	assert_non_null(db = tu_open_fresh("unsettled", &path, NULL));
	assert_int_equal(mrtx_create_table(db, "t", FAMS, 1), MRTX_OK);
	assert_int_equal(write_all(db, "t", "old"), MRTX_OK);
	expect_all(db, "t", "old"); /* (a view with the count at 0: lazy gets) */

	assert_int_equal(crash_writer(path, "t", "commit.after_point=exit"), EXIT_FP);
	assert_int_equal(check(db), 0);
	assert_true(tu_open_locks(db) > 0);
	expect_all(db, "t", "new");
	assert_int_equal(tu_open_locks(db), 0);
	assert_int_equal(check(db), 0);

	assert_int_equal(crash_writer(path, "t", "commit.after_prewrite=exit"), EXIT_FP);
	assert_int_equal(check(db), 0);
	expect_all(db, "t", "new"); /* (and the reads roll the prewrites back) */
	assert_int_equal(tu_open_locks(db), 0);
	assert_int_equal(check(db), 0);
	mrtx_close(db);
	assert_int_equal(raw_count(path), 0);
	tu_rmrf(path);
	free(path);
}

/* A transaction reads row `read` (getting read_rc); then, unless foreign
 * is NULL, another commits row foreign; then the first writes row `write`
 * and its commit must return want. */
static void read_write(mrtx_db *db, const char *read, int read_rc, const char *foreign,
                       const char *write, int want)
{
	mrtx_txn *r, *w;
	mrtx_bytes v;

	assert_int_equal(mrtx_begin(db, &r), MRTX_OK);
	assert_int_equal(mrtx_get(r, "t", B(read), "f", B("q"), &v), read_rc);
	if (foreign) {
		assert_int_equal(mrtx_begin(db, &w), MRTX_OK);
		assert_int_equal(mrtx_put(w, "t", B(foreign), "f", B("q"), B("w")), MRTX_OK);
		assert_int_equal(mrtx_commit(w), MRTX_OK);
	}
	assert_int_equal(mrtx_put(r, "t", B(write), "f", B("q"), B("r")), MRTX_OK);
	assert_int_equal(mrtx_commit(r), want);
}

/*
 * A get that did not read its row's lock still validates it: a commit of
 * the row by another transaction after the get makes the reader's writing
 * commit fail, and a read-only one stands on its snapshot.
 * Checks I22 (DESIGN §10).
 */
static void test_lazy_get_validates(void **state)
{
	mrtx_txn *r, *w;
	mrtx_bytes v;
	char *path;
	mrtx_db *db;

	(void)state;
	assert_non_null(db = tu_open_fresh("unsettled-v", &path, NULL));
	assert_int_equal(mrtx_create_table(db, "t", FAMS, 1), MRTX_OK);
	assert_int_equal(write_all(db, "t", "old"), MRTX_OK);

	/* read a row (present, absent), another commits it, write another */
	read_write(db, "a", MRTX_OK, "a", "b", MRTX_CONFLICT);
	read_write(db, "zz", MRTX_NOTFOUND, "zz", "b", MRTX_CONFLICT);

	/* read-only: its snapshot stands, and it commits */
	assert_int_equal(mrtx_begin(db, &r), MRTX_OK);
	assert_int_equal(mrtx_get(r, "t", B("a"), "f", B("q"), &v), MRTX_OK);
	assert_int_equal(mrtx_begin(db, &w), MRTX_OK);
	assert_int_equal(mrtx_put(w, "t", B("a"), "f", B("q"), B("w2")), MRTX_OK);
	assert_int_equal(mrtx_commit(w), MRTX_OK);
	assert_int_equal(mrtx_get(r, "t", B("a"), "f", B("q"), &v), MRTX_OK);
	assert_int_equal(v.size, 1);
	assert_memory_equal(v.data, "w", 1);
	assert_int_equal(mrtx_commit(r), MRTX_OK);

	/* a row read and left alone, another written: the read validates */
	read_write(db, "a", MRTX_OK, NULL, "b", MRTX_OK);
	/* a row read, written by another, then by the reader: a lost update
	 * unless its commit expects the lock it read */
	read_write(db, "c", MRTX_OK, "c", "c", MRTX_CONFLICT);

	/* a row read, then written by the reader itself: its commit expects
	 * the lock it read (from the view) */
	assert_int_equal(mrtx_begin(db, &r), MRTX_OK);
	assert_int_equal(mrtx_get(r, "t", B("c"), "f", B("q"), &v), MRTX_OK);
	assert_int_equal(mrtx_put(r, "t", B("c"), "f", B("q"), B("c2")), MRTX_OK);
	assert_int_equal(mrtx_put(r, "t", B("b"), "f", B("q"), B("b2")), MRTX_OK);
	assert_int_equal(mrtx_commit(r), MRTX_OK);
	assert_int_equal(tu_get_str(db, "t", "c", "f:q", (char[8]){ 0 }, 8), MRTX_OK);
	assert_int_equal(check(db), 0);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* Dropping a table that holds unsettled records keeps the count exact.
 * Checks I22 (DESIGN §10). */
static void test_drop_keeps_count(void **state)
{
	char *path;
	mrtx_db *db;

	(void)state;
	if (skip_rados())
		return;
	assert_non_null(db = tu_open_fresh("unsettled-d", &path, NULL));
	assert_int_equal(mrtx_create_table(db, "t", FAMS, 1), MRTX_OK);
	assert_int_equal(mrtx_create_table(db, "u", FAMS, 1), MRTX_OK);
	assert_int_equal(write_all(db, "t", "old"), MRTX_OK);
	assert_int_equal(crash_writer(path, "u", "commit.after_prewrite=exit"), EXIT_FP);
	assert_int_equal(crash_writer(path, "t", "commit.after_point=exit"), EXIT_FP);
	assert_int_equal(check(db), 0);
	assert_int_equal(mrtx_drop_table(db, "u"), MRTX_OK);
	assert_int_equal(check(db), 0);
	expect_all(db, "t", "new");
	assert_int_equal(check(db), 0);
	mrtx_close(db);
	assert_int_equal(raw_count(path), 0);
	tu_rmrf(path);
	free(path);
}

/*
 * A wrong or missing count is found by check (and reads stop trusting a
 * missing one), and `mrtx upgrade` counts anew; a format-4 store, which has
 * none, is refused at open with the upgrade named, and the upgrade counts
 * what it holds.
 * Checks I22 (DESIGN §10).
 */
static void test_check_and_upgrade(void **state)
{
	uint32_t fmt = 4;
	uint64_t cells = 1;
	uint8_t five[8] = { 5 };
	char *path;
	mrtx_db *db;

	(void)state;
	if (skip_rados())
		return;
	assert_non_null(db = tu_open_fresh("unsettled-u", &path, NULL));
	assert_int_equal(mrtx_create_table(db, "t", FAMS, 1), MRTX_OK);
	assert_int_equal(write_all(db, "t", "old"), MRTX_OK);
	assert_int_equal(crash_writer(path, "t", "commit.after_prewrite=exit"), EXIT_FP);
	assert_int_equal(check(db), 0);
	mrtx_close(db);
	assert_int_equal(raw_count(path), 3); /* a primary and two secondaries */

	tu_lmdb_put(path, "\0unsettled", 10, five, 8, 1);
	assert_non_null(db = open_db(path, 0));
	assert_int_equal(check(db), MRTX_ECORRUPT);
	assert_non_null(strstr(mrtx_errmsg(), "says 5, the store holds 3"));
	assert_non_null(strstr(mrtx_errmsg(), "mrtx upgrade"));
	mrtx_close(db);
	/* the upgrade of a store of this format counts anew (a repair) */
	assert_int_equal(mrtx_upgrade(path, &cells), MRTX_OK);
	assert_int_equal(cells, 0);
	assert_int_equal(raw_count(path), 3);
	assert_non_null(db = open_db(path, 0));
	assert_int_equal(check(db), 0);
	mrtx_close(db);

	/* no count: reads read every lock (and see the commit), check says so */
	tu_lmdb_put(path, "\0unsettled", 10, NULL, 0, 1);
	assert_non_null(db = open_db(path, 0));
	assert_int_equal(check(db), MRTX_ECORRUPT);
	assert_non_null(strstr(mrtx_errmsg(), "missing"));
	mrtx_close(db);

	/* format 4 (before the count and the seals): refused, then upgraded */
	tu_lmdb_unseal(path);
	tu_lmdb_put(path, "\0format", 7, &fmt, 4, 0);
	{
		mrtx_options o = MRTX_OPTIONS_INIT;
		mrtx_db *x = NULL;

		assert_int_equal(mrtx_open(&x, path, &o), MRTX_ENOTSTORE);
		assert_non_null(strstr(mrtx_errmsg(), "mrtx upgrade"));
		assert_null(x);
	}
	assert_int_equal(mrtx_upgrade(path, &cells), MRTX_OK);
	assert_true(cells > 3); /* every data record got its seal */
	assert_int_equal(raw_count(path), 3);
	assert_non_null(db = open_db(path, 0));
	assert_int_equal(check(db), 0);
	expect_all(db, "t", "old"); /* (the dead writer's prewrites roll back) */
	assert_int_equal(tu_open_locks(db), 0);
	assert_int_equal(check(db), 0);
	mrtx_close(db);
	assert_int_equal(raw_count(path), 0);
	/* a store of this format: nothing to do */
	assert_int_equal(mrtx_upgrade(path, &cells), MRTX_OK);
	assert_int_equal(raw_count(path), 0);
	tu_rmrf(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_count_follows_crashes),
		cmocka_unit_test(test_lazy_get_validates),
		cmocka_unit_test(test_drop_keeps_count),
		cmocka_unit_test(test_check_and_upgrade),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
