/*
 * test_hostile.c - a damaged store must give MRTX_ECORRUPT, never a crash:
 * lock-family keys too long to encode as cell keys, and lock records whose
 * redo names a family the table does not have (both beyond what the API
 * can write, so written here through the storage seam).
 */
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "lockcf/lockio.h"
#include "txn/admin_test.h"
#include "storage/lmdb/lmdb_int.h"

static const char *const FAMS[] = { "f" };

/* Reopen an existing store with the test defaults. */
static mrtx_db *reopen(const char *dir)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db = NULL;

	o.durability = MRTX_NOSYNC;
	return mrtx_open(&db, dir, &o) == MRTX_OK ? db : NULL;
}

static mrtx_db *fresh(char **dir, const store_table **t)
{
	mrtx_db *db = tu_open_fresh("hostile", dir, NULL);

	assert_non_null(db);
	assert_int_equal(mrtx_create_table(db, "t", FAMS, 1), MRTX_OK);
	assert_int_equal(store_table_find(mrtx__db_store(db), "t", t), MRTX_OK);
	return db;
}

static int scan_first(mrtx_db *db)
{
	mrtx_scan_spec sp;
	mrtx_scanner *s;
	mrtx_cell c;
	mrtx_txn *txn;
	int rc;

	memset(&sp, 0, sizeof(sp));
	sp.table = "t";
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	assert_int_equal(mrtx_scan_open(txn, &sp, &s), MRTX_OK);
	rc = mrtx_scan_next(s, &c);
	mrtx_scan_close(s);
	mrtx_abort(txn);
	return rc;
}

/*
 * A row too long to encode as a key (400 NUL bytes: enc() is 802 bytes)
 * cannot be written, and a key that does not decode (written behind
 * mrtx's back) makes scans fail with ECORRUPT.
 */
static void bad_keys(void **state)
{
	static uint8_t row[400];
	/* table prefix, then a bad escape (storage/lmdb/lmdb_read.c: P . enc(row) ...) */
	uint8_t garbage[] = { 0, 0, 'r', 0x00, 0x07, 'x' };
	const store_table *t;
	uint8_t id[16] = { 1 };
	mrtx_arena a;
	store_op op;
	MDB_val k = { sizeof(garbage), (void *)(uintptr_t)garbage }, v = { 1, "v" };
	char *dir;
	mrtx_db *db = fresh(&dir, &t);
	store *st = mrtx__db_store(db);

	(void)state;
	garbage[0] = (uint8_t)(LT(t)->kp >> 8);
	garbage[1] = (uint8_t)LT(t)->kp;
	arena_init(&a);
	memset(&op, 0, sizeof(op));
	op.table = t;
	op.row = MRTX_BYTES(row, sizeof(row));
	op.cond.absent = 1;
	assert_int_equal(lockio_stable(st, id, 5, &a, &op.new_lock), MRTX_OK);
	assert_int_not_equal(store_write_rows(st, &op, 1), MRTX_OK);
	assert_int_not_equal(op.result, 0);
	assert_int_equal(scan_first(db), MRTX_NOTFOUND);
	arena_free(&a);
	mrtx_close(db);

	tu_lmdb_put(dir, k.mv_data, k.mv_size, v.mv_data, v.mv_size, 1);

	assert_non_null(db = reopen(dir));
	assert_int_equal(scan_first(db), MRTX_ECORRUPT);
	mrtx_close(db);
	tu_rmrf(dir);
	free(dir);
}

/*
 * A timestamp ceiling record damaged past any timestamp, with the
 * timestamp page gone (made anew from the record): the store says the
 * record is damaged, as MRTX_ECORRUPT -- not a failed stamp's EINVAL
 * printed as an unknown errno.
 */
static void bad_ceiling(void **state)
{
	uint8_t ceil[8] = { 0, 0, 0, 0, 0, 0, 0, 0x7f };
	MDB_val k = { 7, (void *)(uintptr_t)"\0tsceil" }, v = { sizeof(ceil), ceil };
	const store_table *t;
	char *dir, shm[4096];
	mrtx_db *db = fresh(&dir, &t);
	int rc;

	(void)state;
	assert_int_equal(tu_put_str(db, "t", "r", "f:q", "v"), MRTX_OK);
	mrtx_close(db);
	tu_lmdb_put(dir, k.mv_data, k.mv_size, v.mv_data, v.mv_size, 1);
	snprintf(shm, sizeof(shm), "%s/ts.shm", dir);
	assert_int_equal(unlink(shm), 0);

	db = NULL;
	{
		mrtx_options o = MRTX_OPTIONS_INIT;

		o.durability = MRTX_NOSYNC;
		rc = mrtx_open(&db, dir, &o);
	}
	if (rc == MRTX_OK)
		rc = tu_put_str(db, "t", "r", "f:q", "w");
	if (rc != MRTX_ECORRUPT || !strstr(mrtx_errmsg(), "timestamp ceiling"))
		fail_msg("a damaged timestamp ceiling: %s (%s)", mrtx_strerror(rc), mrtx_errmsg());
	mrtx_close(db);
	tu_rmrf(dir);
	free(dir);
}

/* A redo naming family id 200 of a one-family table. */
static void redo_bad_family(void **state)
{
	store_mut m = { STORE_MUT_PUT, 200, { "q", 1 }, { "v", 1 }, 0 };
	const store_table *t;
	uint8_t id[16] = { 2 };
	mrtx_arena a;
	lock_rec r, d;
	store_op op;
	mrtx_txn *txn;
	mrtx_bytes v;
	char *dir;
	mrtx_db *db = fresh(&dir, &t);
	store *st = mrtx__db_store(db);

	(void)state;
	arena_init(&a);
	memset(&r, 0, sizeof(r));
	r.state = LOCK_PREWRITTEN;
	r.flags = LOCK_F_PREV_ABSENT;
	memcpy(r.tag, store_id(st), LOCK_TAG_SIZE);
	memcpy(r.txn, id, sizeof(id));
	r.commit_ts = 5;
	r.expiry_ms = 1; /* long expired */
	r.redo = &m;
	r.nredo = 1;
	memset(&op, 0, sizeof(op));
	op.table = t;
	op.row = MRTX_CSTR("row");
	op.cond.absent = 1;
	assert_int_equal(lock_encode(&r, &a, &op.new_lock), MRTX_OK);
	assert_int_equal(lockio_decode(st, t, op.row, op.new_lock, &a, &d), MRTX_ECORRUPT);
	/* the seam refuses to apply it, too */
	op.muts = &m;
	op.nmuts = 1;
	assert_int_not_equal(store_write_rows(st, &op, 1), MRTX_OK);
	/* written as a lock only: a reader must not roll it forward */
	op.muts = NULL;
	op.nmuts = 0;
	assert_int_equal(store_write_rows(st, &op, 1), MRTX_OK);
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	assert_int_equal(mrtx_get(txn, "t", MRTX_CSTR("row"), "f", MRTX_CSTR("q"), &v),
	                 MRTX_ECORRUPT);
	mrtx_abort(txn);
	assert_int_equal(scan_first(db), MRTX_ECORRUPT);
	arena_free(&a);
	mrtx_close(db);
	tu_rmrf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bad_keys),
		cmocka_unit_test(redo_bad_family),
		cmocka_unit_test(bad_ceiling),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
