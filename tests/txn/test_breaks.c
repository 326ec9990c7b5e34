/*
 * test_breaks.c - the simulator's safeguard switches (storage/breaks.h) do
 * switch their safeguard off, and only while set: with validation of read
 * rows off a lost update commits, with validation of scanned ranges off a
 * phantom does; with both on, each conflicts.  (The other switches need
 * dead or slow writers and snapshots across handles: the simulator's.)
 */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "storage/breaks.h"

#define B(s) MRTX_CSTR(s)

static mrtx_db *fresh(char **path)
{
	const char *const fams[] = { "f" };
	mrtx_db *db = tu_open_fresh("breaks", path, NULL);
	mrtx_txn *txn;

	assert_non_null(db);
	assert_int_equal(mrtx_create_table(db, "t", fams, 1), MRTX_OK);
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t", B("x"), "f", B("q"), B("0")), MRTX_OK);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	return db;
}

/* A reads x; B writes x and commits; A writes y: the commit's result. */
static int lost_update(mrtx_db *db)
{
	mrtx_txn *a, *b;
	mrtx_bytes v;

	assert_int_equal(mrtx_begin(db, &a), MRTX_OK);
	assert_int_equal(mrtx_get(a, "t", B("x"), "f", B("q"), &v), MRTX_OK);
	assert_int_equal(mrtx_begin(db, &b), MRTX_OK);
	assert_int_equal(mrtx_put(b, "t", B("x"), "f", B("q"), B("1")), MRTX_OK);
	assert_int_equal(mrtx_commit(b), MRTX_OK);
	assert_int_equal(mrtx_put(a, "t", B("y"), "f", B("q"), B("a")), MRTX_OK);
	return mrtx_commit(a);
}

/* A scans [lo, hi) and finds nothing; B inserts ins there and commits; A
 * writes z: the commit's result. */
static int phantom(mrtx_db *db, const char *lo, const char *hi, const char *ins)
{
	mrtx_scan_spec sp = { 0 };
	mrtx_scanner *s;
	mrtx_cell c;
	mrtx_txn *a, *b;

	sp.table = "t";
	sp.start = B(lo);
	sp.end = B(hi);
	assert_int_equal(mrtx_begin(db, &a), MRTX_OK);
	assert_int_equal(mrtx_scan_open(a, &sp, &s), MRTX_OK);
	assert_int_equal(mrtx_scan_next(s, &c), MRTX_NOTFOUND);
	mrtx_scan_close(s);
	assert_int_equal(mrtx_begin(db, &b), MRTX_OK);
	assert_int_equal(mrtx_put(b, "t", B(ins), "f", B("q"), B("b")), MRTX_OK);
	assert_int_equal(mrtx_commit(b), MRTX_OK);
	assert_int_equal(mrtx_put(a, "t", B("z"), "f", B("q"), B("a")), MRTX_OK);
	return mrtx_commit(a);
}

static void test_reads(void **state)
{
	char *path;
	mrtx_db *db = fresh(&path);

	(void)state;
	assert_int_equal(mrtx__break_of("reads"), MRTX_BREAK_READS);
	assert_int_equal(lost_update(db), MRTX_CONFLICT);
	atomic_store(&mrtx__breaks, MRTX_BREAK_READS);
	assert_int_equal(lost_update(db), MRTX_OK); /* the anomaly */
	atomic_store(&mrtx__breaks, 0);
	assert_int_equal(lost_update(db), MRTX_CONFLICT);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

static void test_ranges(void **state)
{
	char *path;
	mrtx_db *db = fresh(&path);

	(void)state;
	assert_int_equal(mrtx__break_of("ranges"), MRTX_BREAK_RANGES);
	assert_int_equal(mrtx__break_of("no-such"), 0);
	assert_int_equal(phantom(db, "p", "q", "p1"), MRTX_CONFLICT);
	atomic_store(&mrtx__breaks, MRTX_BREAK_RANGES);
	assert_int_equal(phantom(db, "r", "s", "r1"), MRTX_OK); /* the anomaly */
	atomic_store(&mrtx__breaks, 0);
	assert_int_equal(phantom(db, "u", "v", "u1"), MRTX_CONFLICT);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reads),
		cmocka_unit_test(test_ranges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
