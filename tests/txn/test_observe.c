/*
 * test_observe.c - a transaction that saw two states never commits.
 *
 * A scan observes every row it passes over, absent ones included.  Each
 * scenario below makes transaction A observe a range (scan, reverse scan,
 * limited scan, index scan), lets B commit a change into it (an insert, or
 * a delete), then makes A look again (a get of the row, a second scan, a
 * write, an index lookup).  Whatever A saw the second time, it must not
 * commit: the second look returns MRTX_CONFLICT and dooms A, or A's commit
 * does.  Every transaction reads one snapshot (DESIGN §9: LMDB's view, a
 * RADOS store's live snapshot), so A's second look sees what its first
 * did: a read-only A then commits, having seen one state, and a writing A
 * still fails its commit.  Each scenario also runs without B's change, and then A commits:
 * the checks cannot pass by refusing everything.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const char *const FAMS[] = { "f" };

typedef struct fx {
	char *path;
	mrtx_db *db;
} fx;

static void fx_init(fx *f, int with_index)
{
	f->db = tu_open_fresh("observe", &f->path, NULL);
	assert_non_null(f->db);
	assert_int_equal(mrtx_create_table(f->db, "t", FAMS, 1), MRTX_OK);
	assert_int_equal(mrtx_create_table(f->db, "other", FAMS, 1), MRTX_OK);
	if (with_index) {
		mrtx_index_spec spec = { MRTX_INDEX_SPEC_VERSION, "byval", "t", "f",
		                         MRTX_CSTR("q"), "t_byval", NULL, 0 };

		assert_int_equal(mrtx_create_index(f->db, &spec), MRTX_OK);
	}
	/* rows a, c, e; row x holds value "vx" so index scans have a neighbour */
	assert_int_equal(tu_put_str(f->db, "t", "a", "f:q", "va"), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t", "c", "f:q", "vc"), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t", "e", "f:q", "ve"), MRTX_OK);
}

static void fx_done(fx *f)
{
	mrtx_close(f->db);
	tu_rmrf(f->path);
	free(f->path);
}

enum change { NONE, INSERT, DELETE };

/* B: insert row b (and row p of another table, in the same transaction:
 * A must not see half of it) or delete row c. */
static void b_commits_row(fx *f, enum change ch, const char *ins)
{
	mrtx_txn *b;

	if (ch == NONE)
		return;
	assert_int_equal(mrtx_begin(f->db, &b), MRTX_OK);
	if (ch == INSERT) {
		assert_int_equal(mrtx_put(b, "t", MRTX_CSTR(ins), "f", MRTX_CSTR("q"),
		                          MRTX_CSTR("vb")), MRTX_OK);
		assert_int_equal(mrtx_put(b, "other", MRTX_CSTR("p"), "f", MRTX_CSTR("q"),
		                          MRTX_CSTR("1")), MRTX_OK);
	} else {
		assert_int_equal(mrtx_delete_row(b, "t", MRTX_CSTR("c")), MRTX_OK);
	}
	assert_int_equal(mrtx_commit(b), MRTX_OK);
}

static void b_commits(fx *f, enum change ch)
{
	b_commits_row(f, ch, "b");
}

/* Rows a scan returns (distinct), or the error it stopped with. */
static int scan_rows(mrtx_txn *txn, const char *start, const char *end, int reverse,
                     size_t limit, char *rows, size_t cap)
{
	mrtx_scan_spec spec = { "t", MRTX_CSTR(start), MRTX_CSTR(end), NULL, { NULL, 0 },
	                        { NULL, 0 }, reverse, limit };
	mrtx_scanner *s;
	mrtx_cell c;
	size_t n = 0;
	int rc;

	if ((rc = mrtx_scan_open(txn, &spec, &s)))
		return rc;
	while ((rc = mrtx_scan_next(s, &c)) == MRTX_OK)
		if (n + 1 < cap && (n == 0 || rows[n - 1] != *(const char *)c.row.data))
			rows[n++] = *(const char *)c.row.data;
	rows[n] = 0;
	mrtx_scan_close(s);
	return rc == MRTX_NOTFOUND ? 0 : rc;
}

/* A's commit after its second look: OK exactly when nothing changed, or,
 * for a read-only A reading one snapshot, always. */
static void expect_outcome(mrtx_txn *a, int second_rc, enum change ch, const char *what,
                           int readonly)
{
	int rc;

	if (readonly) {
		if (second_rc != MRTX_OK && second_rc != MRTX_NOTFOUND)
			fail_msg("%s: a snapshot read returned %s: %s", what,
			         mrtx_strerror(second_rc), mrtx_errmsg());
		if ((rc = mrtx_commit(a)) != MRTX_OK)
			fail_msg("%s: a read-only snapshot's commit returned %s: %s", what,
			         mrtx_strerror(rc), mrtx_errmsg());
		return;
	}

	if (second_rc != MRTX_OK && second_rc != MRTX_NOTFOUND && second_rc != MRTX_CONFLICT)
		fail_msg("%s: second look returned %s: %s", what, mrtx_strerror(second_rc),
		         mrtx_errmsg());
	if (ch == NONE && second_rc == MRTX_CONFLICT)
		fail_msg("%s: conflict without a concurrent change: %s", what, mrtx_errmsg());
	rc = mrtx_commit(a);
	if (ch == NONE && rc != MRTX_OK)
		fail_msg("%s: nothing changed, yet commit returned %s: %s", what,
		         mrtx_strerror(rc), mrtx_errmsg());
	if (ch != NONE && rc != MRTX_CONFLICT)
		fail_msg("%s (%s): A saw two states and commit returned %s", what,
		         ch == INSERT ? "insert" : "delete", mrtx_strerror(rc));
}

/* Optionally make A a writer too (the same rule holds for both). */
static void maybe_write(mrtx_txn *a, int writer)
{
	if (writer)
		assert_int_equal(mrtx_put(a, "other", MRTX_CSTR("w"), "f", MRTX_CSTR("q"),
		                          MRTX_CSTR("1")), MRTX_OK);
}

static void scan_then_get(int reverse, size_t limit, int writer)
{
	for (enum change ch = NONE; ch <= DELETE; ch++) {
		/* reverse with limit 2 covers [c, end): insert d there */
		const char *ins = reverse && limit ? "d" : "b";
		const char *row = ch == DELETE ? "c" : ins;
		char rows[8], what[96];
		mrtx_bytes v;
		mrtx_txn *a;
		int rc;
		fx f;

		snprintf(what, sizeof(what), "scan%s%s then get, %s", reverse ? " reverse" : "",
		         limit ? " limited" : "", writer ? "read-write" : "read-only");
		fx_init(&f, 0);
		assert_int_equal(mrtx_begin(f.db, &a), MRTX_OK);
		maybe_write(a, writer);
		/* forward limit 2 covers [a, c]; reverse limit 2 covers [c, e] */
		assert_int_equal(scan_rows(a, "", "", reverse, limit, rows, sizeof(rows)), MRTX_OK);
		assert_string_equal(rows, limit ? (reverse ? "ec" : "ac") : (reverse ? "eca" : "ace"));
		b_commits_row(&f, ch, ins);
		rc = mrtx_get(a, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q"), &v);
		/* the snapshot: b absent, c present */
		assert_int_equal(rc, ch == DELETE ? MRTX_OK : MRTX_NOTFOUND);
		expect_outcome(a, rc, ch, what, !writer);
		fx_done(&f);
	}
}

static void scan_get(void **state)
{
	(void)state;
	for (int writer = 0; writer < 2; writer++) {
		scan_then_get(0, 0, writer);
		scan_then_get(1, 0, writer);
		scan_then_get(0, 2, writer);
		scan_then_get(1, 2, writer);
	}
}

/* Two count-style scans over one range may not both be accepted when
 * they differ. */
static void scan_scan(void **state)
{
	(void)state;
	for (int reverse = 0; reverse < 2; reverse++)
		for (enum change ch = NONE; ch <= DELETE; ch++) {
			char rows1[8], rows2[8];
			mrtx_txn *a;
			int rc;
			fx f;

			fx_init(&f, 0);
			assert_int_equal(mrtx_begin(f.db, &a), MRTX_OK);
			assert_int_equal(scan_rows(a, "", "", reverse, 0, rows1, sizeof(rows1)),
			                 MRTX_OK);
			b_commits(&f, ch);
			rc = scan_rows(a, "", "", reverse, 0, rows2, sizeof(rows2));
			if (rc == MRTX_OK)
				assert_string_equal(rows1, rows2);
			expect_outcome(a, rc, ch, reverse ? "scan then scan (reverse)" :
			                                    "scan then scan", 1);
			fx_done(&f);
		}
}

/* The scan had read its batch before B inserted b; a get of b in the
 * middle of the scan sees it; the scan then passes over b as absent. */
static void get_inside_scan(void **state)
{
	(void)state;
	for (enum change ch = NONE; ch <= INSERT; ch++) {
		mrtx_scan_spec spec = { "t", { NULL, 0 }, { NULL, 0 }, NULL, { NULL, 0 },
		                        { NULL, 0 }, 0, 0 };
		mrtx_scanner *s;
		mrtx_cell c;
		mrtx_bytes v;
		mrtx_txn *a;
		int rc, n = 1;
		fx f;

		fx_init(&f, 0);
		assert_int_equal(mrtx_begin(f.db, &a), MRTX_OK);
		assert_int_equal(mrtx_scan_open(a, &spec, &s), MRTX_OK);
		assert_int_equal(mrtx_scan_next(s, &c), MRTX_OK); /* row a */
		b_commits(&f, ch);
		rc = mrtx_get(a, "t", MRTX_CSTR("b"), "f", MRTX_CSTR("q"), &v);
		assert_int_equal(rc, MRTX_NOTFOUND);
		while ((rc = mrtx_scan_next(s, &c)) == MRTX_OK)
			n++;
		mrtx_scan_close(s);
		assert_int_equal(n, 3);
		expect_outcome(a, rc == MRTX_NOTFOUND ? MRTX_OK : rc, ch, "get inside a scan", 1);
		fx_done(&f);
	}
}

/* A write after the scan: blind, or read first. */
static void scan_write(void **state)
{
	(void)state;
	for (int read_first = 0; read_first < 2; read_first++)
		for (enum change ch = NONE; ch <= DELETE; ch++) {
			const char *row = ch == DELETE ? "c" : "b";
			char rows[8];
			mrtx_bytes v;
			mrtx_txn *a;
			int rc = MRTX_OK;
			fx f;

			fx_init(&f, 0);
			assert_int_equal(mrtx_begin(f.db, &a), MRTX_OK);
			assert_int_equal(scan_rows(a, "", "", 0, 0, rows, sizeof(rows)), MRTX_OK);
			b_commits(&f, ch);
			if (read_first)
				rc = mrtx_get(a, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q"), &v);
			if (rc == MRTX_OK || rc == MRTX_NOTFOUND)
				rc = mrtx_put(a, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q"),
				              MRTX_CSTR("mine"));
			/* after a doom the put says EBADTXN */
			expect_outcome(a, rc == MRTX_EBADTXN ? MRTX_CONFLICT : rc, ch,
			               read_first ? "scan, get, then put" : "scan then blind put", 0);
			fx_done(&f);
		}
}

static int count_hit(const mrtx_index_hit *hit, void *payload)
{
	(void)hit;
	++*(int *)payload;
	return 0;
}

/* An index scan over every value, then a lookup of the inserted or
 * deleted row's value. */
static void index_scan_lookup(void **state)
{
	(void)state;
	for (enum change ch = NONE; ch <= DELETE; ch++) {
		const char *val = ch == DELETE ? "vc" : "vb";
		mrtx_txn *a;
		int n = 0, m = 0, rc;
		fx f;

		fx_init(&f, 1);
		assert_int_equal(mrtx_begin(f.db, &a), MRTX_OK);
		assert_int_equal(mrtx_index_scan(a, "byval", MRTX_BYTES(NULL, 0),
		                                 MRTX_BYTES(NULL, 0), 0, 0, count_hit, &n),
		                 MRTX_OK);
		assert_int_equal(n, 3);
		b_commits(&f, ch);
		rc = mrtx_index_lookup(a, "byval", MRTX_CSTR(val), count_hit, &m);
		if (rc == MRTX_OK && ch == NONE)
			assert_int_equal(m, 0);
		/* the snapshot: vb absent, vc present */
		assert_int_equal(rc, MRTX_OK);
		assert_int_equal(m, ch == DELETE ? 1 : 0);
		/* the index was backfilled before A's view: a read-only A reads it
		 * from its snapshot, as any table (index.c backfilled_in_view) */
		expect_outcome(a, rc, ch, "index scan then lookup", 1);
		fx_done(&f);
	}
}

/* A scan that stopped early covered only what it passed: a row inserted
 * past that point is no conflict (the counterpart of the cases above). */
static void limited_scan_uncovered(void **state)
{
	char rows[8];
	mrtx_bytes v;
	mrtx_txn *a, *b;
	fx f;

	(void)state;
	fx_init(&f, 0);
	assert_int_equal(mrtx_begin(f.db, &a), MRTX_OK);
	assert_int_equal(scan_rows(a, "", "", 0, 2, rows, sizeof(rows)), MRTX_OK);
	assert_string_equal(rows, "ac");
	assert_int_equal(mrtx_begin(f.db, &b), MRTX_OK);
	assert_int_equal(mrtx_put(b, "t", MRTX_CSTR("d"), "f", MRTX_CSTR("q"), MRTX_CSTR("vd")),
	                 MRTX_OK);
	assert_int_equal(mrtx_commit(b), MRTX_OK);
	/* (d is not in A's snapshot) */
	assert_int_equal(mrtx_get(a, "t", MRTX_CSTR("d"), "f", MRTX_CSTR("q"), &v),
	                 MRTX_NOTFOUND);
	assert_int_equal(mrtx_commit(a), MRTX_OK);
	fx_done(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(scan_get),
		cmocka_unit_test(scan_scan),
		cmocka_unit_test(get_inside_scan),
		cmocka_unit_test(scan_write),
		cmocka_unit_test(index_scan_lookup),
		cmocka_unit_test(limited_scan_uncovered),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
