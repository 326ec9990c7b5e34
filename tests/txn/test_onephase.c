/*
 * test_onephase.c - one-phase commits of several rows (DESIGN §5.3): on
 * LMDB any such commit, on RADOS one whose written and read rows all live
 * in one tablet, is one store_write_atomic; rows in two tablets, a scan,
 * or the two_phase knob take the two-phase protocol.  The commits are
 * atomic, the first committer wins, a changed read row conflicts, and a
 * snapshot reader never sees half of one (RADOS: the tablet's one-phase
 * mark, store_seen).
 */
#include "txn_fixture.h"
#include "txn/txn_test.h"
#include "storage/store.h"

#include <pthread.h>

static const char *const rows4[] = { "r1", "r2", "r3", "r4" };

/* Store write calls of one commit of txn (which wrote already). */
static unsigned long commit_calls(mrtx_db *db, mrtx_txn *txn, int want_rc)
{
	store_counters c0, c1;

	/* (earlier commits' trims, run by the handle's worker, before; this
	 * one's with it) */
	assert_int_equal(mrtx_flush(db), MRTX_OK);
	store_counters_get(mrtx__db_store(db), &c0);
	assert_int_equal(mrtx_commit(txn), want_rc);
	assert_int_equal(mrtx_flush(db), MRTX_OK);
	store_counters_get(mrtx__db_store(db), &c1);
	return c1.write_calls - c0.write_calls;
}

/* Write v to f:a of every row of rows4 in table t, in one transaction;
 * read row `read` first when not NULL. */
static mrtx_txn *write4(mrtx_db *db, const char *t, const char *v, const char *read)
{
	mrtx_txn *txn;
	mrtx_bytes got;

	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	if (read) {
		int rc = mrtx_get(txn, t, B(read), "f", B("a"), &got);

		assert_true(rc == MRTX_OK || rc == MRTX_NOTFOUND);
	}
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(mrtx_put(txn, t, B(rows4[i]), "f", B("a"), B(v)), MRTX_OK);
	return txn;
}

static void expect4(mrtx_db *db, const char *t, const char *want)
{
	for (size_t i = 0; i < 4; i++)
		expect_cell(db, t, rows4[i], "f", "a", want);
}

/* A commit of four rows of one tablet (blind, then after reads) is one
 * store write call, leaves no lock that is not STABLE, and writes every
 * row. */
static void test_one_tablet_one_write(void **state)
{
	fx *f = *state;

	for (int round = 0; round < 2; round++) {
		const char *v = round ? "2" : "1";
		mrtx_txn *txn = write4(f->db, "t1", v, round ? "r2" : NULL);
		unsigned long calls = commit_calls(f->db, txn, MRTX_OK);

		if (calls != 1)
			fail_msg("round %d: %lu store write calls, want 1 (one-phase)", round, calls);
		expect4(f->db, "t1", v);
		assert_int_equal(tu_open_locks(f->db), 0);
	}
}

/* Rows in two tablets (RADOS: a table created split), a scan, and the
 * two_phase knob: the two-phase protocol, more than one write call. */
static void test_two_phase_cases(void **state)
{
	static const char *const fam[] = { "f" };
	const mrtx_bytes at[] = { MRTX_CSTR("r3") };
	fx *f = *state;
	mrtx__knobs k = { 0 };
	mrtx_txn *txn;
	mrtx_db *db2;

	assert_int_equal(mrtx_create_table_split(f->db, "split", fam, 1, at, 1), MRTX_OK);
	txn = write4(f->db, "split", "1", NULL);
	if (tu_rados())
		assert_true(commit_calls(f->db, txn, MRTX_OK) > 1);
	else
		assert_int_equal(commit_calls(f->db, txn, MRTX_OK), 1); /* (one environment) */
	expect4(f->db, "split", "1");

	/* a scan: an omap guard cannot say "no new row in this range" */
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	assert_int_equal(tu_scan_all(txn, "t1"), 0);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(mrtx_put(txn, "t1", B(rows4[i]), "f", B("a"), B("s")), MRTX_OK);
	if (tu_rados())
		assert_true(commit_calls(f->db, txn, MRTX_OK) > 1);
	else
		assert_int_equal(commit_calls(f->db, txn, MRTX_OK), 1);
	expect4(f->db, "t1", "s");

	k.two_phase = 1;
	assert_non_null(db2 = tu_open_k(f->path, NULL, &k));
	txn = write4(db2, "t1", "k", NULL);
	assert_true(commit_calls(db2, txn, MRTX_OK) > 1);
	mrtx_close(db2);
	expect4(f->db, "t1", "k");
	assert_int_equal(tu_open_locks(f->db), 0);
}

/* Two transactions write the same rows: the first to commit wins, the
 * other conflicts and writes nothing -- blind writers (the later commit's
 * rows were committed after its first write, I15) and readers (the rows
 * they read changed). */
static void test_first_committer_wins(void **state)
{
	fx *f = *state;

	for (int reads = 0; reads < 2; reads++) {
		mrtx_txn *a = write4(f->db, "t1", reads ? "A2" : "A", reads ? "r1" : NULL);
		mrtx_txn *b = write4(f->db, "t1", reads ? "B2" : "B", reads ? "r1" : NULL);

		assert_int_equal(mrtx_commit(a), MRTX_OK);
		assert_int_equal(mrtx_commit(b), MRTX_CONFLICT); /* (b freed) */
		expect4(f->db, "t1", reads ? "A2" : "A");
	}
	assert_int_equal(tu_open_locks(f->db), 0);
}

/* A row the transaction only read, in the same tablet, changed by another
 * commit before it commits: MRTX_CONFLICT, nothing written. */
static void test_read_row_changed(void **state)
{
	fx *f = *state;
	mrtx_txn *txn;

	assert_int_equal(tu_put_str(f->db, "t1", "watched", "f:a", "0"), MRTX_OK);
	txn = write4(f->db, "t1", "x", "watched");
	assert_int_equal(tu_put_str(f->db, "t1", "watched", "f:a", "1"), MRTX_OK);
	assert_int_equal(mrtx_commit(txn), MRTX_CONFLICT); /* (txn freed) */
	for (size_t i = 0; i < 4; i++)
		expect_cell(f->db, "t1", rows4[i], "f", "a", NULL);
	expect_cell(f->db, "t1", "watched", "f", "a", "1");
}

/* The writer of test_snapshot_never_half: four rows, one commit. */
struct writer {
	const char *path;
	int rc;
	uint64_t ts;
};

static void *write_held(void *arg)
{
	struct writer *w = arg;
	mrtx_db *db = tu_open(w->path, NULL);
	mrtx_txn *txn;

	w->rc = MRTX_ESTORE;
	if (!db)
		return NULL;
	if (mrtx_begin(db, &txn) == MRTX_OK) {
		for (size_t i = 0; i < 4; i++)
			mrtx_put(txn, "t1", B(rows4[i]), "f", B("a"), B("new"));
		w->rc = mrtx_commit_ts(txn, &w->ts);
	}
	mrtx_close(db);
	return NULL;
}

/*
 * RADOS: a one-phase commit is stamped by the oracle before its write, as
 * a one-row commit is.  Held between its stamp and its write, a reader
 * takes its snapshot (above the stamp) and reads r1 (the old value); the
 * write lands; the reader's read of r4 must not show the new value beside
 * r1's old one: it fails with MRTX_CONFLICT (the tablet's mark moved and
 * r4's version is at or below the snapshot), and a retry sees all four.
 * A snapshot begun after the commit returned sees all of it (I17).
 */
static void test_snapshot_never_half(void **state)
{
	fx *f = *state;
	struct writer w = { f->path, 0, 0 };
	mrtx_txn *reader;
	pthread_t th;
	mrtx_bytes v;
	char go[256];
	int rc;

	if (!tu_rados())
		skip(); /* (LMDB stamps inside its write: views hold all or none) */
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(tu_put_str(f->db, "t1", rows4[i], "f:a", "old"), MRTX_OK);
	tu_fp_hold("store.after_stamp", 0, "onephase", go, sizeof(go));
	assert_int_equal(pthread_create(&th, NULL, write_held, &w), 0);
	tu_fp_wait("store.after_stamp", 1);
	assert_int_equal(mrtx_begin(f->db, &reader), MRTX_OK);
	assert_true(get_eq(reader, "t1", "r1", "f", "a", "old"));
	tu_fp_release(go, th);
	assert_int_equal(w.rc, MRTX_OK);
	assert_true(w.ts <= mrtx_txn_snapshot_ts(reader)); /* (stamped before the snapshot) */
	rc = mrtx_get(reader, "t1", B("r4"), "f", B("a"), &v);
	if (rc == MRTX_OK && !(v.size == 3 && memcmp(v.data, "old", 3) == 0))
		fail_msg("a snapshot saw half of a one-phase commit: r1 old, r4 '%.*s'",
		         (int)v.size, (const char *)v.data);
	assert_int_equal(rc, MRTX_CONFLICT);
	mrtx_abort(reader);
	assert_int_equal(mrtx_begin(f->db, &reader), MRTX_OK);
	for (size_t i = 0; i < 4; i++)
		assert_true(get_eq(reader, "t1", rows4[i], "f", "a", "new"));
	assert_int_equal(mrtx_commit(reader), MRTX_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_one_tablet_one_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_phase_cases, setup, teardown),
		cmocka_unit_test_setup_teardown(test_first_committer_wins, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_row_changed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_never_half, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
