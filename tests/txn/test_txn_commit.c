/*
 * test_txn_commit.c - the commit paths: a one-row transaction is one
 * conditional write, a multi-row one of blind writes reads no lock, LMDB's
 * one-phase commit against the two-phase protocol (their store calls and
 * failpoints), tails drained by close, and the store's point reads.
 */
#include "txn_fixture.h"

/* A one-row transaction is one conditional write: a blind write reads no
 * row first (the row's lock is checked inside the write), a row it read
 * reads nothing more at commit.  On RADOS the timestamps come from the
 * oracle object (DESIGN §9.1): a blind transaction reads it at its first
 * write (its start), and every commit reserves its stamp there; nothing
 * else is sent. */
static void test_one_row_one_write(void **state)
{
	fx *f = *state;

	/* LMDB checks the predicate in the write; RADOS (format 3) in an
	 * omap_cmp LT guard on the lock value's order key */
	assert_true(store_has(mrtx__db_store(f->db), STORE_CAP_COND));
	store *st = mrtx__db_store(f->db);
	store_counters c0, c1;
	mrtx_txn *txn;
	mrtx_bytes v;

	assert_int_equal(tu_put_str(f->db, "t1", "solo", "f:a", "0"), MRTX_OK); /* lock exists */
	for (int round = 0; round < 3; round++) {
		assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
		if (round == 2)
			assert_int_equal(mrtx_get(txn, "t1", B("solo"), "f", B("a"), &v), MRTX_OK);
		/* (earlier commits' trims, run by the handle's worker, before;
		 * this one's with it) */
		assert_int_equal(mrtx_flush(f->db), MRTX_OK);
		store_counters_get(st, &c0);
		assert_int_equal(mrtx_put(txn, "t1", B(round ? "solo" : "new-row"), "f", B("a"),
		                          B("1")), MRTX_OK);
		assert_int_equal(mrtx_put(txn, "t1", B(round ? "solo" : "new-row"), "f", B("b"),
		                          B("2")), MRTX_OK);
		assert_int_equal(mrtx_commit(txn), MRTX_OK);
		assert_int_equal(mrtx_flush(f->db), MRTX_OK);
		store_counters_get(st, &c1);
		unsigned long oracle_reads = tu_rados() && round < 2, oracle_writes = tu_rados();

		if (c1.write_calls - c0.write_calls != 1 ||
		    c1.write_txns - c0.write_txns != 1 + oracle_writes ||
		    c1.read_txns - c0.read_txns != oracle_reads)
			fail_msg("round %d: %lu write calls, %lu write txns, %lu read txns", round,
			         c1.write_calls - c0.write_calls, c1.write_txns - c0.write_txns,
			         c1.read_txns - c0.read_txns);
	}
	expect_cell(f->db, "t1", "solo", "f", "b", "2");
	expect_cell(f->db, "t1", "new-row", "f", "a", "1");
}

/* Every lock of table name is STABLE (none left PREWRITTEN or COMMITTED),
 * on want_rows rows. */
static void expect_all_stable(mrtx_db *db, const char *name, size_t want_rows)
{
	const store_table *t;

	assert_int_equal(store_table_find(mrtx__db_store(db), name, &t), MRTX_OK);
	assert_int_equal(tu_expect_settled(db, t), want_rows);
}

/*
 * A multi-row transaction of rows written blindly reads no lock: each row
 * is prewritten on "no lock, or STABLE before my first write" (commit_plan.c
 * plan_blind).  When that fails on one row -- here a commit after
 * our first write to it, a write-write conflict -- the rows that did apply
 * are rolled back, the commit reads the locks and reports the conflict,
 * and nothing of it shows; either row (primary or secondary) in turn.
 * Checks I15 (DESIGN §10).
 */
static void test_multi_row_blind(void **state)
{
	fx *f = *state;
	store *st = mrtx__db_store(f->db);
	store_counters c0, c1;
	mrtx_txn *txn, *other;

	assert_int_equal(tu_put_str(f->db, "t1", "m1", "f:a", "0"), MRTX_OK);
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t1", B("m1"), "f", B("a"), B("x")), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t2", B("m2"), "f", B("a"), B("y")), MRTX_OK);
	assert_int_equal(mrtx_flush(f->db), MRTX_OK); /* (earlier commits' trims) */
	store_counters_get(st, &c0);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	assert_int_equal(mrtx_flush(f->db), MRTX_OK);
	store_counters_get(st, &c1);
	if (c1.read_txns != c0.read_txns)
		fail_msg("a blind two-row commit read %lu times", c1.read_txns - c0.read_txns);
	expect_cell(f->db, "t1", "m1", "f", "a", "x");
	expect_cell(f->db, "t2", "m2", "f", "a", "y");

	for (int hit = 0; hit < 2; hit++) {
		const char *t = hit ? "t2" : "t1", *row = hit ? "m2" : "m1";

		assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
		assert_int_equal(mrtx_put(txn, "t1", B("m1"), "f", B("a"), B("lost")), MRTX_OK);
		assert_int_equal(mrtx_put(txn, "t2", B("m2"), "f", B("a"), B("lost")), MRTX_OK);
		assert_int_equal(mrtx_begin(f->db, &other), MRTX_OK);
		assert_int_equal(mrtx_put(other, t, B(row), "f", B("a"), B("first")), MRTX_OK);
		assert_int_equal(mrtx_commit(other), MRTX_OK);
		assert_int_equal(mrtx_commit(txn), MRTX_CONFLICT);
		assert_int_equal(mrtx_flush(f->db), MRTX_OK);
		expect_cell(f->db, "t1", "m1", "f", "a", hit ? "x" : "first");
		expect_cell(f->db, "t2", "m2", "f", "a", hit ? "first" : "y");
		expect_all_stable(f->db, "t1", 1);
		expect_all_stable(f->db, "t2", 1);
		/* and the rows take the next write */
		assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
		assert_int_equal(mrtx_put(txn, "t1", B("m1"), "f", B("a"), B("x")), MRTX_OK);
		assert_int_equal(mrtx_put(txn, "t2", B("m2"), "f", B("a"), B("y")), MRTX_OK);
		assert_int_equal(mrtx_commit(txn), MRTX_OK);
		assert_int_equal(mrtx_flush(f->db), MRTX_OK);
		expect_cell(f->db, "t1", "m1", "f", "a", "x");
		expect_cell(f->db, "t2", "m2", "f", "a", "y");
	}
}

/* Write calls, write txns and read txns that a commit costs. */
static void commit_cost(mrtx_db *db, mrtx_txn *txn, int want_rc, unsigned long *calls,
                        unsigned long *wtxns, unsigned long *reads)
{
	store *st = mrtx__db_store(db);
	store_counters c0, c1;

	assert_int_equal(mrtx_flush(db), MRTX_OK); /* (earlier commits' trims) */
	store_counters_get(st, &c0);
	assert_int_equal(mrtx_commit(txn), want_rc);
	assert_int_equal(mrtx_flush(db), MRTX_OK);
	store_counters_get(st, &c1);
	*calls = c1.write_calls - c0.write_calls;
	*wtxns = c1.write_txns - c0.write_txns;
	*reads = c1.read_txns - c0.read_txns;
}

/*
 * On LMDB (batched) a multi-row commit is one conditional write (DESIGN
 * §5.3): no lock is ever PREWRITTEN, nothing is read before it when the
 * rows were written blind, and a read row or scanned range that changed
 * fails it whole.  A handle opened with the two_phase knob runs the two-phase
 * protocol on the same store.
 * Checks I12 (DESIGN §10).
 */
static void test_one_phase(void **state)
{
	fx *f = *state;
	mrtx_options o = MRTX_OPTIONS_INIT;
	unsigned long calls, wtxns, reads;
	mrtx_txn *txn;
	mrtx_db *two;
	mrtx_bytes v;
	int n;

	if (tu_rados()) {
		assert_false(store_has(mrtx__db_store(f->db), STORE_CAP_ATOMIC));
		skip();
	}
	assert_true(store_has(mrtx__db_store(f->db), STORE_CAP_ATOMIC));
	assert_int_equal(tu_put_str(f->db, "t1", "a", "f:q", "0"), MRTX_OK);
	/* blind: one write, no read */
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t1", B("a"), "f", B("q"), B("1")), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t2", B("b"), "f", B("q"), B("1")), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t2", B("c"), "f", B("q"), B("1")), MRTX_OK);
	commit_cost(f->db, txn, MRTX_OK, &calls, &wtxns, &reads);
	if (calls != 1 || wtxns != 1 || reads != 0)
		fail_msg("blind 3-row commit: %lu write calls, %lu write txns, %lu reads", calls,
		         wtxns, reads);
	expect_cell(f->db, "t2", "c", "f", "q", "1");
	expect_all_stable(f->db, "t1", 1);
	expect_all_stable(f->db, "t2", 2);
	/* a read row unchanged: still one write */
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	assert_int_equal(mrtx_get(txn, "t1", B("a"), "f", B("q"), &v), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t2", B("b"), "f", B("q"), B("2")), MRTX_OK);
	commit_cost(f->db, txn, MRTX_OK, &calls, &wtxns, &reads);
	if (calls != 1 || wtxns != 1)
		fail_msg("read + write commit: %lu write calls, %lu write txns", calls, wtxns);
	expect_cell(f->db, "t2", "b", "f", "q", "2");
	/* a read row changed meanwhile: nothing written */
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	assert_int_equal(mrtx_get(txn, "t1", B("a"), "f", B("q"), &v), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t2", B("b"), "f", B("q"), B("lost")), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t2", B("c"), "f", B("q"), B("lost")), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t1", "a", "f:q", "9"), MRTX_OK);
	assert_int_equal(mrtx_commit(txn), MRTX_CONFLICT);
	assert_non_null(strstr(mrtx_errmsg(), "read"));
	expect_cell(f->db, "t2", "b", "f", "q", "2");
	expect_cell(f->db, "t2", "c", "f", "q", "1");
	/* a scanned range that gained a row: nothing written */
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	assert_int_equal(scan_count(txn, "t2", "a", "z", 0, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(mrtx_put(txn, "t1", B("a"), "f", B("q"), B("lost")), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t1", B("sum"), "f", B("q"), B("2")), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t2", "bb", "f:q", "1"), MRTX_OK);
	assert_int_equal(mrtx_commit(txn), MRTX_CONFLICT);
	assert_non_null(strstr(mrtx_errmsg(), "scanned range"));
	expect_cell(f->db, "t1", "a", "f", "q", "9");
	expect_cell(f->db, "t1", "sum", "f", "q", NULL);
	/* ... and the same range unchanged commits in one write */
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	assert_int_equal(scan_count(txn, "t2", "a", "z", 0, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(mrtx_put(txn, "t1", B("sum"), "f", B("q"), B("3")), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t2", B("bc"), "f", B("q"), B("1")), MRTX_OK);
	commit_cost(f->db, txn, MRTX_OK, &calls, &wtxns, &reads);
	if (calls != 1 || wtxns != 1)
		fail_msg("scan + write commit: %lu write calls, %lu write txns", calls, wtxns);
	expect_cell(f->db, "t1", "sum", "f", "q", "3");
	expect_all_stable(f->db, "t1", 2);
	expect_all_stable(f->db, "t2", 4);
	/* the two_phase knob: prewrite, commit point, apply, release */
	o.durability = MRTX_NOSYNC; /* as f->db's (the environment is shared) */
	assert_non_null(two = tu_open_k(f->path, &o, &(mrtx__knobs){ 0, 1, 0 }));
	assert_int_equal(mrtx_begin(two, &txn), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t1", B("a"), "f", B("q"), B("2p")), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t2", B("b"), "f", B("q"), B("2p")), MRTX_OK);
	commit_cost(two, txn, MRTX_OK, &calls, &wtxns, &reads);
	if (calls < 3)
		fail_msg("two-phase commit: %lu write calls", calls);
	mrtx_close(two);
	expect_cell(f->db, "t2", "b", "f", "q", "2p");
	expect_all_stable(f->db, "t1", 2);
	/* older option structs, read in their own layout: version 3 ends at
	 * two_phase, which is honoured; version 2 ends before it (never read) */
	for (int version = 3; version >= 2; version--) {
		tu_options_v3 old = { version, MRTX_NOSYNC, 0, 0, 0, 0, 0, 0, 1 };

		assert_non_null(two = tu_open(f->path, TU_OPTIONS_V3(&old)));
		assert_int_equal(mrtx_begin(two, &txn), MRTX_OK);
		assert_int_equal(mrtx_put(txn, "t1", B("a"), "f", B("q"), B("old")), MRTX_OK);
		assert_int_equal(mrtx_put(txn, "t2", B("b"), "f", B("q"), B("old")), MRTX_OK);
		commit_cost(two, txn, MRTX_OK, &calls, &wtxns, &reads);
		if (version == 3 && calls < 3)
			fail_msg("version-3 options with two_phase: %lu write calls", calls);
		if (version == 2 && calls != 1)
			fail_msg("version-2 options: %lu write calls (two_phase was read)", calls);
		mrtx_close(two);
		expect_cell(f->db, "t2", "b", "f", "q", "old");
	}
	/* a malformed MRTX_TWO_PHASE fails the open */
	setenv("MRTX_TWO_PHASE", "maybe", 1);
	assert_int_equal(mrtx_open(&two, f->path, &o), MRTX_EINVAL);
	assert_non_null(strstr(mrtx_errmsg(), "MRTX_TWO_PHASE"));
	setenv("MRTX_TWO_PHASE", "1", 1);
	assert_int_equal(mrtx_open(&two, f->path, &o), MRTX_OK);
	unsetenv("MRTX_TWO_PHASE");
	assert_int_equal(mrtx_begin(two, &txn), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t1", B("a"), "f", B("q"), B("env")), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t2", B("b"), "f", B("q"), B("env")), MRTX_OK);
	commit_cost(two, txn, MRTX_OK, &calls, &wtxns, &reads);
	if (calls < 3)
		fail_msg("MRTX_TWO_PHASE=1: %lu write calls", calls);
	mrtx_close(two);
}

/*
 * A one-phase commit keeps the failpoints' meaning: a writer that dies at
 * commit.after_prewrite or after_validate leaves nothing, one that dies at
 * after_point or after_secondaries has committed every row; either way no
 * lock is left to settle, and each failpoint fires.
 * Checks I12 (DESIGN §10).
 */
static void test_one_phase_failpoints(void **state)
{
	static const char *const fps[] = { "commit.after_prewrite", "commit.after_validate",
	                                   "commit.after_point", "commit.after_secondaries" };
	fx *f = *state;

	if (tu_rados())
		skip();
	for (size_t i = 0; i < 4; i++) {
		char spec[64], val[8];
		pid_t pid;

		snprintf(val, sizeof(val), "v%zu", i);
		assert_int_equal(tu_put_str(f->db, "t1", "p", "f:q", "old"), MRTX_OK);
		assert_int_equal(tu_put_str(f->db, "t2", "s", "f:q", "old"), MRTX_OK);
		snprintf(spec, sizeof(spec), "%s=exit", fps[i]);
		if ((pid = fork()) == 0) {
			mrtx_db *db = tu_open(f->path, NULL);
			mrtx_txn *txn;
			mrtx_bytes v;

			if (!db || mrtx_failpoints_set(spec) || mrtx_begin(db, &txn) ||
			    mrtx_get(txn, "t1", B("p"), "f", B("q"), &v) ||
			    mrtx_put(txn, "t1", B("p"), "f", B("q"), B(val)) ||
			    mrtx_put(txn, "t2", B("s"), "f", B("q"), B(val)) ||
			    mrtx_put(txn, "t2", B("new"), "f", B("q"), B(val)))
				_exit(2);
			mrtx_commit(txn);
			_exit(3); /* the failpoint did not fire */
		}
		assert_int_equal(tu_wait(pid), 99);
		expect_cell(f->db, "t1", "p", "f", "q", i < 2 ? "old" : val);
		expect_cell(f->db, "t2", "s", "f", "q", i < 2 ? "old" : val);
		expect_cell(f->db, "t2", "new", "f", "q", i < 2 ? NULL : val);
		expect_all_stable(f->db, "t1", 1);
		expect_all_stable(f->db, "t2", i < 2 ? 1 : 2);
	}
}

/*
 * A multi-row commit returns once its commit point is written; over RADOS
 * the rest (apply the secondaries, release the primary) runs on the
 * handle's worker thread (txn/tail.h).  Reads on the same handle right
 * after see every write, and mrtx_close finishes every queued tail: the
 * next handle finds no lock but STABLE ones, with no recovery run.
 */
static void test_commit_tail_drained(void **state)
{
	fx *f = *state;
	char row[3][16];
	mrtx_txn *txn;

	for (int i = 0; i < 40; i++) {
		assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
		for (int k = 0; k < 3; k++) {
			snprintf(row[k], sizeof(row[k]), "r%02d-%d", i, k);
			assert_int_equal(mrtx_put(txn, k == 2 ? "t2" : "t1", B(row[k]), "f", B("q"),
			                          B(row[k])), MRTX_OK);
		}
		assert_int_equal(mrtx_commit(txn), MRTX_OK);
		if (i % 8 == 0) /* read its own just-committed rows through the handle */
			for (int k = 0; k < 3; k++)
				expect_cell(f->db, k == 2 ? "t2" : "t1", row[k], "f", "q", row[k]);
		if (i == 19) { /* mrtx_flush: every tail so far is done */
			assert_int_equal(mrtx_flush(f->db), MRTX_OK);
			expect_all_stable(f->db, "t1", 40);
			expect_all_stable(f->db, "t2", 20);
		}
	}
	assert_int_equal(mrtx_flush(NULL), MRTX_EINVAL);
	mrtx_close(f->db); /* flushes the rest */
	assert_non_null(f->db = tu_open(f->path, NULL));
	expect_all_stable(f->db, "t1", 80);
	expect_all_stable(f->db, "t2", 40);
	expect_cell(f->db, "t1", "r39-0", "f", "q", "r39-0");
	expect_cell(f->db, "t2", "r39-2", "f", "q", "r39-2");
}

/* store_read_row's point read (one cell and the lock) straight from the store. */
static int point_read(store *st, const store_table *t, const char *row, uint8_t fid,
                      const char *q, mrtx_arena *a, store_row *out)
{
	store_filter fl = STORE_FILTER_ALL;

	fl.family = fid;
	fl.qs = B(q);
	fl.qual_exact = 1;
	return store_read_row(st, t, B(row), &fl, a, out);
}

/*
 * A point read finds the cell and then steps forward to the row's lock key
 * (its last), or looks the lock up directly after a few steps.  Every
 * qualifier of a wide row, absent ones before, between and after, rows
 * that do not exist, and rows with cells but no lock key next to rows whose
 * lock keys have the same or a different length.
 */
static void test_point_reads(void **state)
{
	fx *f = *state;
	store *st = mrtx__db_store(f->db);
	const store_table *t;
	mrtx_txn *txn;
	mrtx_arena a;
	store_row sr;
	char q[16], v[16];

	for (int i = 0; i < 20; i++) {
		snprintf(q, sizeof(q), "f:q%02d", 2 * i + 1);
		snprintf(v, sizeof(v), "v%02d", 2 * i + 1);
		assert_int_equal(tu_put_str(f->db, "t1", "wide", q, v), MRTX_OK);
	}
	assert_int_equal(tu_put_str(f->db, "t1", "wide", "g:x", "G"), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t1", "widf", "f:q01", "next-row"), MRTX_OK);
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	for (int i = 0; i <= 40; i++) {
		snprintf(q, sizeof(q), "q%02d", i);
		snprintf(v, sizeof(v), "v%02d", i);
		if (!get_eq(txn, "t1", "wide", "f", q, i % 2 ? v : NULL))
			fail_msg("wide/f:%s: wrong result", q);
	}
	assert_true(get_eq(txn, "t1", "wide", "g", "x", "G"));
	assert_true(get_eq(txn, "t1", "wide", "g", "", NULL));
	assert_true(get_eq(txn, "t1", "wid", "f", "q01", NULL));
	assert_true(get_eq(txn, "t1", "widd", "f", "q01", NULL));
	assert_true(get_eq(txn, "t1", "widez", "f", "q01", NULL));
	assert_true(get_eq(txn, "t1", "zzz", "f", "q01", NULL));
	assert_int_equal(mrtx_commit(txn), MRTX_OK); /* every read's lock was seen */

	/* Store level: each read reports the row's own lock, or none. */
	assert_int_equal(store_table_find(st, "t1", &t), MRTX_OK);
	arena_init(&a);
	assert_int_equal(point_read(st, t, "wide", 0, "q01", &a, &sr), MRTX_OK);
	assert_true(sr.has_lock && sr.ncells == 1);
	assert_int_equal(point_read(st, t, "wide", 0, "q00", &a, &sr), MRTX_OK);
	assert_true(sr.has_lock && sr.ncells == 0);
	assert_int_equal(point_read(st, t, "wide", 1, "x", &a, &sr), MRTX_OK);
	assert_true(sr.has_lock && sr.ncells == 1);
	assert_int_equal(point_read(st, t, "wida", 0, "q01", &a, &sr), MRTX_OK);
	assert_true(!sr.has_lock && sr.ncells == 0);

	/* Cells without a lock key (not written through a transaction): "bare"
	 * is followed by "barf", whose lock key has the same length, and
	 * "bare0", whose keys continue past "bare" without its prefix. */
	{
		store_mut m[8];
		store_op op;

		for (int i = 0; i < 8; i++) {
			m[i].kind = STORE_MUT_PUT;
			m[i].fid = 0;
			m[i].qual = MRTX_BYTES(&"abcdefgh"[i], 1);
			m[i].value = B("bare");
		}
		memset(&op, 0, sizeof(op));
		op.table = t;
		op.row = B("bare");
		op.cond.absent = 1;
		op.delete_lock = 1;
		op.muts = m;
		op.nmuts = 8;
		op.ts = 1; /* (cells are versions: written at a timestamp) */
		assert_int_equal(store_write_rows(st, &op, 1), MRTX_OK);
		assert_int_equal(op.result, 0);
	}
	assert_int_equal(tu_put_str(f->db, "t1", "barf", "f:a", "1"), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t1", "bare0", "f:a", "1"), MRTX_OK);
	for (int i = 0; i < 8; i++) {
		char qq[2] = { (char)('a' + i), 0 };

		assert_int_equal(point_read(st, t, "bare", 0, qq, &a, &sr), MRTX_OK);
		if (sr.has_lock || sr.ncells != 1 || sr.cells[0].value.size != 4)
			fail_msg("bare/%s: lock %d cells %zu", qq, sr.has_lock, sr.ncells);
	}
	assert_int_equal(point_read(st, t, "bare", 0, "z", &a, &sr), MRTX_OK);
	assert_true(!sr.has_lock && sr.ncells == 0);
	assert_int_equal(point_read(st, t, "barf", 0, "a", &a, &sr), MRTX_OK);
	assert_true(sr.has_lock && sr.ncells == 1);
	arena_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_one_row_one_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_point_reads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_multi_row_blind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_phase, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_phase_failpoints, setup, teardown),
		cmocka_unit_test_setup_teardown(test_commit_tail_drained, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
