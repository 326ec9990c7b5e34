/*
 * test_txn.c - transactions through the public API: read-your-writes,
 * isolation anomalies (write-write, lost update, write skew, phantoms,
 * read-only validation), snapshots, multi-table commits and mrtx_run.
 * Commit paths are in test_txn_commit.c, bad input in test_txn_input.c.
 */
#include "txn_fixture.h"

/* ------------------------------------------------------ read your writes */

static void test_ryw_get(void **state)
{
	fx *f = *state;
	mrtx_txn *txn;

	assert_int_equal(tu_put_str(f->db, "t1", "r", "f:a", "A0"), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t1", "r", "f:b", "B0"), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t1", "r", "g:", "G0"), MRTX_OK);

	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	/* put then get; put twice: the last wins */
	assert_int_equal(mrtx_put(txn, "t1", B("r"), "f", B("a"), B("A1")), MRTX_OK);
	assert_true(get_eq(txn, "t1", "r", "f", "a", "A1"));
	assert_int_equal(mrtx_put(txn, "t1", B("r"), "f", B("a"), B("A2")), MRTX_OK);
	assert_true(get_eq(txn, "t1", "r", "f", "a", "A2"));
	/* a new cell */
	assert_int_equal(mrtx_put(txn, "t1", B("new"), "g", B("q"), B("N")), MRTX_OK);
	assert_true(get_eq(txn, "t1", "new", "g", "q", "N"));
	/* delete then get hides the stored value */
	assert_true(get_eq(txn, "t1", "r", "f", "b", "B0"));
	assert_int_equal(mrtx_delete(txn, "t1", B("r"), "f", B("b")), MRTX_OK);
	assert_true(get_eq(txn, "t1", "r", "f", "b", NULL));
	/* deleting a missing cell is fine */
	assert_int_equal(mrtx_delete(txn, "t1", B("r"), "f", B("nope")), MRTX_OK);
	/* put after delete revives */
	assert_int_equal(mrtx_delete(txn, "t1", B("new"), "g", B("q")), MRTX_OK);
	assert_true(get_eq(txn, "t1", "new", "g", "q", NULL));
	assert_int_equal(mrtx_put(txn, "t1", B("new"), "g", B("q"), B("N2")), MRTX_OK);
	assert_true(get_eq(txn, "t1", "new", "g", "q", "N2"));
	/* nothing is visible to others before commit */
	expect_cell(f->db, "t1", "r", "f", "a", "A0");
	expect_cell(f->db, "t1", "new", "g", "q", NULL);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);

	expect_cell(f->db, "t1", "r", "f", "a", "A2");
	expect_cell(f->db, "t1", "r", "f", "b", NULL);
	expect_cell(f->db, "t1", "r", "g", "", "G0");
	expect_cell(f->db, "t1", "new", "g", "q", "N2");
}

static void test_ryw_delete_row(void **state)
{
	fx *f = *state;
	mrtx_txn *txn;

	assert_int_equal(tu_put_str(f->db, "t1", "r", "f:a", "A0"), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t1", "r", "f:b", "B0"), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t1", "r", "g:c", "C0"), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t1", "other", "f:a", "O"), MRTX_OK);

	/* delete_row then get: every stored and buffered cell is gone */
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t1", B("r"), "f", B("z"), B("Z")), MRTX_OK);
	assert_int_equal(mrtx_delete_row(txn, "t1", B("r")), MRTX_OK);
	assert_true(get_eq(txn, "t1", "r", "f", "a", NULL));
	assert_true(get_eq(txn, "t1", "r", "g", "c", NULL));
	assert_true(get_eq(txn, "t1", "r", "f", "z", NULL));
	assert_true(get_eq(txn, "t1", "other", "f", "a", "O"));
	/* delete_row then put: only the new cell survives */
	assert_int_equal(mrtx_put(txn, "t1", B("r"), "f", B("b"), B("B1")), MRTX_OK);
	assert_true(get_eq(txn, "t1", "r", "f", "b", "B1"));
	assert_true(get_eq(txn, "t1", "r", "f", "a", NULL));
	assert_int_equal(mrtx_commit(txn), MRTX_OK);

	expect_cell(f->db, "t1", "r", "f", "a", NULL);
	expect_cell(f->db, "t1", "r", "f", "b", "B1");
	expect_cell(f->db, "t1", "r", "g", "c", NULL);
	expect_cell(f->db, "t1", "r", "f", "z", NULL);
	expect_cell(f->db, "t1", "other", "f", "a", "O");

	/* delete_row alone removes the row; the next txn sees nothing */
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	assert_int_equal(mrtx_delete_row(txn, "t1", B("r")), MRTX_OK);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	expect_cell(f->db, "t1", "r", "f", "b", NULL);
}

/*
 * The buffer of one row under any order of writes: ascending runs (which
 * append after the greatest cell without a search), descending ones,
 * rewrites of the greatest cell, deletes, and delete_row, checked against a
 * model after every write by gets, by a scan (cells in key order), and after
 * commit.  Families f and g, qualifiers "q00".."q23".
 */
#define ORD_NQ 24
static void check_row_model(mrtx_txn *txn, const int model[2][ORD_NQ], const char *when)
{
	static const char *const fams[2] = { "f", "g" };
	mrtx_scan_spec sp = { .table = "t1", .start = B("ord"), .end = B("ord\x01") };
	int want[2 * ORD_NQ][2], nwant = 0, k = 0, rc;
	mrtx_scanner *sc;
	mrtx_cell c;
	char q[8], v[16];

	for (int a = 0; a < 2; a++)
		for (int i = 0; i < ORD_NQ; i++) {
			snprintf(q, sizeof(q), "q%02d", i);
			snprintf(v, sizeof(v), "v%d", model[a][i]);
			if (!get_eq(txn, "t1", "ord", fams[a], q, model[a][i] ? v : NULL))
				fail_msg("%s: get %s:%s, want %s", when, fams[a], q,
				         model[a][i] ? v : "absent");
			if (model[a][i]) {
				want[nwant][0] = a;
				want[nwant++][1] = i;
			}
		}
	/* the scan returns exactly the model's cells, in key order */
	assert_int_equal(mrtx_scan_open(txn, &sp, &sc), MRTX_OK);
	while ((rc = mrtx_scan_next(sc, &c)) == MRTX_OK) {
		int a = strcmp(c.family, "g") == 0;
		const uint8_t *d = c.qualifier.data; /* "qNN", not NUL-terminated */
		int i = c.qualifier.size == 3 ? (d[1] - '0') * 10 + (d[2] - '0') : -1;

		if (k == nwant)
			fail_msg("%s: scan gave %s:q%02d after the last cell", when, c.family, i);
		if (a != want[k][0] || i != want[k][1])
			fail_msg("%s: scan gave %s:q%02d, want %s:q%02d", when, c.family, i,
			         fams[want[k][0]], want[k][1]);
		snprintf(v, sizeof(v), "v%d", model[a][i]);
		assert_int_equal(c.value.size, strlen(v));
		assert_memory_equal(c.value.data, v, c.value.size);
		k++;
	}
	assert_int_equal(rc, MRTX_NOTFOUND);
	if (k != nwant)
		fail_msg("%s: scan gave %d cells, want %d", when, k, nwant);
	mrtx_scan_close(sc);
}

static void test_ryw_cell_order(void **state)
{
	fx *f = *state;
	int model[2][ORD_NQ] = { { 0 } }, gen = 0;
	unsigned seed = 12345;
	mrtx_txn *txn;
	char q[8], v[16], when[64];

	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	for (int step = 0; step < 400; step++) {
		int kind = (int)(rand_r(&seed) % 10), a = (int)(rand_r(&seed) % 2);
		int i = (int)(rand_r(&seed) % ORD_NQ), run = 1 + (int)(rand_r(&seed) % 6);

		for (int k = 0; k < run; k++) {
			/* kinds 0-3: ascending run, 4-5: descending, 6: rewrite the
			 * greatest cell, 7-8: delete, 9 (rarely): delete_row */
			int j = kind <= 3 ? i + k : kind <= 5 ? i - k : i;

			if (kind == 6) { /* the greatest: g's last, else f's */
				for (a = 1, j = -1; a >= 0 && j < 0; a -= j < 0)
					for (j = ORD_NQ - 1; j >= 0 && !model[a][j]; j--)
						;
			}
			if (j < 0 || j >= ORD_NQ)
				break;
			snprintf(q, sizeof(q), "q%02d", j);
			if (kind == 9 && rand_r(&seed) % 4 == 0) {
				assert_int_equal(mrtx_delete_row(txn, "t1", B("ord")), MRTX_OK);
				memset(model, 0, sizeof(model));
				break;
			} else if (kind >= 7) {
				assert_int_equal(mrtx_delete(txn, "t1", B("ord"), a ? "g" : "f", B(q)),
				                 MRTX_OK);
				model[a][j] = 0;
			} else {
				snprintf(v, sizeof(v), "v%d", ++gen);
				assert_int_equal(mrtx_put(txn, "t1", B("ord"), a ? "g" : "f", B(q),
				                          B(v)), MRTX_OK);
				model[a][j] = gen;
			}
		}
		snprintf(when, sizeof(when), "step %d (kind %d)", step, kind);
		check_row_model(txn, (const int (*)[ORD_NQ])model, when);
	}
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	check_row_model(txn, (const int (*)[ORD_NQ])model, "after commit");
	mrtx_abort(txn);
}

/*
 * A committed row rewritten by one-row commits, each putting a random set
 * of its cells in a random order: cells it holds (overwritten where the
 * store's cursor walks back to them from the row's lock), new ones between,
 * before and after them, values that grow, shrink and outgrow a page, and
 * now and then a commit with deletes too.  Rows "orc" and "ore" around it
 * hold cells of their own.  After every commit the row is read back whole
 * and its neighbours are unchanged.
 */
#define RW_NQ 16
static void rw_value(char *buf, int gen, size_t len)
{
	for (size_t j = 0; j < len; j++)
		buf[j] = (char)('a' + (gen + (int)j) % 26);
}

static void check_rw_row(mrtx_db *db, const int gen[2][RW_NQ], const size_t len[2][RW_NQ],
                         int step)
{
	static const char *const fams[2] = { "f", "g" };
	char q[8], want[6000];
	mrtx_txn *txn;
	mrtx_bytes v;
	int rc;

	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	for (int a = 0; a < 2; a++)
		for (int i = 0; i < RW_NQ; i++) {
			snprintf(q, sizeof(q), "q%02d", i);
			rc = mrtx_get(txn, "t1", B("ord"), fams[a], B(q), &v);
			if (!gen[a][i]) {
				if (rc != MRTX_NOTFOUND)
					fail_msg("commit %d: %s:%s present, want absent", step, fams[a], q);
				continue;
			}
			rw_value(want, gen[a][i], len[a][i]);
			if (rc != MRTX_OK || v.size != len[a][i] || memcmp(v.data, want, v.size))
				fail_msg("commit %d: %s:%s rc %d size %zu, want %zu bytes of gen %d",
				         step, fams[a], q, rc, rc ? (size_t)0 : v.size, len[a][i], gen[a][i]);
		}
	assert_true(get_eq(txn, "t1", "orc", "g", "z", "before"));
	assert_true(get_eq(txn, "t1", "ore", "f", "", "after"));
	mrtx_abort(txn);
}

static void test_rewrite_committed_row(void **state)
{
	fx *f = *state;
	int gen[2][RW_NQ] = { { 0 } }, g = 0;
	size_t len[2][RW_NQ] = { { 0 } };
	unsigned seed = 777;
	char q[8], val[6000];
	mrtx_txn *txn;

	assert_int_equal(tu_put_str(f->db, "t1", "orc", "g:z", "before"), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t1", "ore", "f:", "after"), MRTX_OK);
	for (int step = 0; step < 300; step++) {
		int order[2 * RW_NQ], n = 0, dels = rand_r(&seed) % 8 == 0;

		/* a random subset, shuffled */
		for (int k = 0; k < 2 * RW_NQ; k++)
			if (rand_r(&seed) % 3 == 0)
				order[n++] = k;
		for (int k = n - 1; k > 0; k--) {
			int j = (int)(rand_r(&seed) % (unsigned)(k + 1)), t = order[k];

			order[k] = order[j];
			order[j] = t;
		}
		assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
		for (int k = 0; k < n; k++) {
			int a = order[k] / RW_NQ, i = order[k] % RW_NQ;
			unsigned r = rand_r(&seed) % 10;
			/* mostly small values; now and then one past a page */
			size_t l = r < 6 ? 1 + r * 3 : r < 9 ? 100 + (unsigned)rand_r(&seed) % 900 :
			                                       4100 + (unsigned)rand_r(&seed) % 1500;

			snprintf(q, sizeof(q), "q%02d", i);
			if (dels && rand_r(&seed) % 2) {
				assert_int_equal(mrtx_delete(txn, "t1", B("ord"), a ? "g" : "f", B(q)),
				                 MRTX_OK);
				gen[a][i] = 0;
				continue;
			}
			rw_value(val, ++g, l);
			assert_int_equal(mrtx_put(txn, "t1", B("ord"), a ? "g" : "f", B(q),
			                          MRTX_BYTES(val, l)), MRTX_OK);
			gen[a][i] = g;
			len[a][i] = l;
		}
		assert_int_equal(mrtx_commit(txn), MRTX_OK);
		check_rw_row(f->db, (const int (*)[RW_NQ])gen, (const size_t (*)[RW_NQ])len, step);
	}
}

/* ------------------------------------------------------------ conflicts */

static void test_write_write_conflict(void **state)
{
	fx *f = *state;
	mrtx_txn *t1, *t2;

	assert_int_equal(tu_put_str(f->db, "t1", "x", "f:", "0"), MRTX_OK);
	/* Blind writes: both put the same row, neither reads it. */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(mrtx_begin(f->db, &t2), MRTX_OK);
	assert_int_equal(mrtx_put(t1, "t1", B("x"), "f", B(""), B("one")), MRTX_OK);
	assert_int_equal(mrtx_put(t2, "t1", B("x"), "f", B(""), B("two")), MRTX_OK);
	assert_int_equal(mrtx_put(t2, "t2", B("y"), "f", B(""), B("two")), MRTX_OK);
	assert_int_equal(mrtx_put(t2, "t1", B("w"), "g", B(""), B("two")), MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_OK);
	assert_int_equal(mrtx_commit(t2), MRTX_CONFLICT);
	expect_cell(f->db, "t1", "x", "f", "", "one");
	expect_cell(f->db, "t2", "y", "f", "", NULL);
	expect_cell(f->db, "t1", "w", "g", "", NULL);

	/* Single-row blind writes too. */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(mrtx_begin(f->db, &t2), MRTX_OK);
	assert_int_equal(mrtx_put(t1, "t1", B("x"), "f", B(""), B("three")), MRTX_OK);
	assert_int_equal(mrtx_put(t2, "t1", B("x"), "f", B(""), B("four")), MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_OK);
	assert_int_equal(mrtx_commit(t2), MRTX_CONFLICT);
	expect_cell(f->db, "t1", "x", "f", "", "three");

	/* A row that does not exist yet: both insert it. */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(mrtx_begin(f->db, &t2), MRTX_OK);
	assert_int_equal(mrtx_put(t1, "t1", B("fresh"), "f", B(""), B("1")), MRTX_OK);
	assert_int_equal(mrtx_put(t2, "t1", B("fresh"), "f", B(""), B("2")), MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_OK);
	assert_int_equal(mrtx_commit(t2), MRTX_CONFLICT);
	expect_cell(f->db, "t1", "fresh", "f", "", "1");
}

static int read_int(mrtx_txn *txn, const char *t, const char *row, long *out)
{
	char buf[32];
	mrtx_bytes v;
	int rc = mrtx_get(txn, t, B(row), "f", B("n"), &v);

	if (rc == MRTX_NOTFOUND) {
		*out = 0;
		return 0;
	}
	if (rc)
		return rc;
	if (v.size >= sizeof(buf))
		return MRTX_ECORRUPT;
	memcpy(buf, v.data, v.size);
	buf[v.size] = '\0';
	*out = strtol(buf, NULL, 10);
	return 0;
}

static int write_int(mrtx_txn *txn, const char *t, const char *row, long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld", v);
	return mrtx_put(txn, t, B(row), "f", B("n"), B(buf));
}

static void test_lost_update(void **state)
{
	fx *f = *state;
	mrtx_txn *t1, *t2;
	long a = 0, b = 0;

	assert_int_equal(tu_put_str(f->db, "t1", "ctr", "f:n", "10"), MRTX_OK);
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(mrtx_begin(f->db, &t2), MRTX_OK);
	assert_int_equal(read_int(t1, "t1", "ctr", &a), 0);
	assert_int_equal(read_int(t2, "t1", "ctr", &b), 0);
	assert_int_equal(a, 10);
	assert_int_equal(b, 10);
	assert_int_equal(write_int(t1, "t1", "ctr", a + 1), 0);
	assert_int_equal(write_int(t2, "t1", "ctr", b + 1), 0);
	assert_int_equal(mrtx_commit(t1), MRTX_OK);
	assert_int_equal(mrtx_commit(t2), MRTX_CONFLICT);
	expect_cell(f->db, "t1", "ctr", "f", "n", "11");

	/* Interleaved the other way: the second committer still loses. */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(mrtx_begin(f->db, &t2), MRTX_OK);
	assert_int_equal(read_int(t1, "t1", "ctr", &a), 0);
	assert_int_equal(read_int(t2, "t1", "ctr", &b), 0);
	assert_int_equal(write_int(t2, "t1", "ctr", b + 5), 0);
	assert_int_equal(mrtx_commit(t2), MRTX_OK);
	assert_int_equal(write_int(t1, "t1", "ctr", a + 1), 0);
	assert_int_equal(mrtx_commit(t1), MRTX_CONFLICT);
	expect_cell(f->db, "t1", "ctr", "f", "n", "16");
}

static void test_write_skew(void **state)
{
	fx *f = *state;
	mrtx_txn *t1, *t2;
	long x1 = 0, y1 = 0, x2 = 0, y2 = 0;
	int rc1, rc2;

	/* Constraint: x + y >= 1.  Both on call; each takes one off if the other is on. */
	assert_int_equal(tu_put_str(f->db, "t1", "x", "f:n", "1"), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t2", "y", "f:n", "1"), MRTX_OK);
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(mrtx_begin(f->db, &t2), MRTX_OK);
	assert_int_equal(read_int(t1, "t1", "x", &x1), 0);
	assert_int_equal(read_int(t1, "t2", "y", &y1), 0);
	assert_int_equal(read_int(t2, "t1", "x", &x2), 0);
	assert_int_equal(read_int(t2, "t2", "y", &y2), 0);
	assert_true(x1 + y1 >= 2 && x2 + y2 >= 2);
	assert_int_equal(write_int(t1, "t1", "x", 0), 0);
	assert_int_equal(write_int(t2, "t2", "y", 0), 0);
	rc1 = mrtx_commit(t1);
	rc2 = mrtx_commit(t2);
	assert_int_equal(rc1, MRTX_OK);
	assert_int_equal(rc2, MRTX_CONFLICT);
	expect_cell(f->db, "t1", "x", "f", "n", "0");
	expect_cell(f->db, "t2", "y", "f", "n", "1");
}

static void test_phantom(void **state)
{
	fx *f = *state;
	mrtx_txn *t1;
	int n;

	assert_int_equal(tu_put_str(f->db, "t1", "a", "f:", "1"), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t1", "b", "f:", "1"), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t1", "d", "f:", "1"), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t1", "e", "f:", "1"), MRTX_OK);

	/* T1 scans [a, m) and writes elsewhere; T2 inserts c; T1 must fail. */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(scan_count(t1, "t1", "a", "m", 0, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(mrtx_put(t1, "t2", B("sum"), "f", B(""), B("4")), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t1", "c", "f:", "1"), MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_CONFLICT);
	expect_cell(f->db, "t2", "sum", "f", "", NULL);

	/* Same with a read-only T1 and an insert at the range's very start:
	 * T1 reads a snapshot and commits -- a second scan still sees 5 rows
	 * (DESIGN §9: LMDB's view, a RADOS store's live snapshot). */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(scan_count(t1, "t1", "a", "m", 0, &n), 0);
	assert_int_equal(n, 5);
	assert_int_equal(tu_put_str(f->db, "t1", "a\x01", "f:", "1"), MRTX_OK);
	assert_int_equal(scan_count(t1, "t1", "a", "m", 0, &n), 0);
	assert_int_equal(n, 5);
	assert_int_equal(mrtx_commit(t1), MRTX_OK);

	/* A deleted row inside the scanned range is a change too. */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(scan_count(t1, "t1", "", "", 0, &n), 0);
	assert_int_equal(n, 6);
	{
		mrtx_txn *t2;

		assert_int_equal(mrtx_begin(f->db, &t2), MRTX_OK);
		assert_int_equal(mrtx_delete_row(t2, "t1", B("d")), MRTX_OK);
		assert_int_equal(mrtx_commit(t2), MRTX_OK);
	}
	assert_int_equal(mrtx_put(t1, "t2", B("sum"), "f", B(""), B("6")), MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_CONFLICT);

	/* Rows: a a\1 b c e.  A scan that stopped early at limit 2 read a, a\1
	 * only: an insert beyond them does not conflict ... */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(scan_count(t1, "t1", "a", "m", 2, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(tu_put_str(f->db, "t1", "bb", "f:", "1"), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t1", "z", "f:", "1"), MRTX_OK);
	assert_int_equal(mrtx_put(t1, "t2", B("sum"), "f", B(""), B("2")), MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_OK);
	expect_cell(f->db, "t2", "sum", "f", "", "2");

	/* ... but one inside what it read does. */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(scan_count(t1, "t1", "a", "m", 2, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(tu_put_str(f->db, "t1", "a\x00", "f:", "1"), MRTX_OK);
	assert_int_equal(mrtx_put(t1, "t2", B("sum"), "f", B(""), B("3")), MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_CONFLICT);

	/* Reverse scan with a limit: covered [last, end) only. */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	{
		mrtx_scan_spec sp;
		mrtx_scanner *s;
		mrtx_cell c;
		int k = 0;

		memset(&sp, 0, sizeof(sp));
		sp.table = "t1";
		sp.end = B("m");
		sp.reverse = 1;
		sp.limit_rows = 1; /* reads "e" only */
		assert_int_equal(mrtx_scan_open(t1, &sp, &s), MRTX_OK);
		while (mrtx_scan_next(s, &c) == MRTX_OK) {
			assert_memory_equal(c.row.data, "e", 1);
			k++;
		}
		mrtx_scan_close(s);
		assert_int_equal(k, 1);
	}
	assert_int_equal(tu_put_str(f->db, "t1", "a2", "f:", "1"), MRTX_OK);
	assert_int_equal(mrtx_put(t1, "t2", B("sum"), "f", B(""), B("r")), MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_OK);
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(scan_count(t1, "t1", "", "m", 0, &n), 0);
	assert_int_equal(tu_put_str(f->db, "t1", "l", "f:", "1"), MRTX_OK);
	assert_int_equal(mrtx_put(t1, "t2", B("sum"), "f", B(""), B("r2")), MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_CONFLICT);
}

static void test_phantom_empty_range(void **state)
{
	fx *f = *state;
	mrtx_txn *t1;
	int n;

	/* An empty scanned range: the first insert is the phantom. */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(scan_count(t1, "t1", "p", "q", 0, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(tu_put_str(f->db, "t1", "p1", "f:", "1"), MRTX_OK);
	assert_int_equal(mrtx_put(t1, "t1", B("zz"), "f", B(""), B("x")), MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_CONFLICT);
	expect_cell(f->db, "t1", "zz", "f", "", NULL);

	/* Inserting into a range one scanned itself (no phantom): commits. */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(scan_count(t1, "t1", "p", "q", 0, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(mrtx_put(t1, "t1", B("p2"), "f", B(""), B("x")), MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_OK);
	expect_cell(f->db, "t1", "p2", "f", "", "x");

	/* A row inserted concurrently into a scanned range that this txn then
	 * writes blindly: still a phantom for the scan. */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(scan_count(t1, "t1", "s", "t", 0, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(tu_put_str(f->db, "t1", "s1", "f:", "other"), MRTX_OK);
	assert_int_equal(mrtx_put(t1, "t1", B("s1"), "f", B(""), B("mine")), MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_CONFLICT);
	expect_cell(f->db, "t1", "s1", "f", "", "other");
}

/*
 * A scan that stops on one of its own buffered rows has still covered the
 * store up to that row: a concurrent insert before it is a phantom
 * (write skew through a range: each saw the other's row missing).
 */
static void test_phantom_buffered_rows(void **state)
{
	fx *f = *state;
	mrtx_scan_spec sp;
	mrtx_scanner *s;
	mrtx_cell c;
	mrtx_txn *t1;

	assert_int_equal(tu_put_str(f->db, "t1", "b", "f:", "1"), MRTX_OK);
	/* stored b, own m: read two rows and stop */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(mrtx_put(t1, "t1", B("m"), "f", B(""), B("T1")), MRTX_OK);
	memset(&sp, 0, sizeof(sp));
	sp.table = "t1";
	sp.start = B("a");
	sp.end = B("z");
	sp.limit_rows = 2;
	assert_int_equal(mrtx_scan_open(t1, &sp, &s), MRTX_OK);
	assert_int_equal(mrtx_scan_next(s, &c), MRTX_OK);
	assert_int_equal(mrtx_scan_next(s, &c), MRTX_OK);
	assert_memory_equal(c.row.data, "m", 1);
	mrtx_scan_close(s);
	assert_int_equal(tu_put_str(f->db, "t1", "c", "f:", "T2"), MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_CONFLICT);
	expect_cell(f->db, "t1", "m", "f", "", NULL);

	/* only buffered rows returned, forward and reverse */
	for (int rev = 0; rev < 2; rev++) {
		assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
		assert_int_equal(mrtx_put(t1, "t1", B(rev ? "w" : "d"), "f", B(""), B("T1")),
		                 MRTX_OK);
		sp.start = B(rev ? "v" : "c1");
		sp.end = B(rev ? "x" : "e");
		sp.limit_rows = 1;
		sp.reverse = rev;
		assert_int_equal(mrtx_scan_open(t1, &sp, &s), MRTX_OK);
		assert_int_equal(mrtx_scan_next(s, &c), MRTX_OK);
		mrtx_scan_close(s);
		assert_int_equal(tu_put_str(f->db, "t1", rev ? "wa" : "c2", "f:", "T2"), MRTX_OK);
		assert_int_equal(mrtx_commit(t1), MRTX_CONFLICT);
	}
}

/* A scanner left open past its transaction's end is detached, not dangling. */
static void test_scanner_outlives_txn(void **state)
{
	fx *f = *state;
	mrtx_scan_spec sp;
	mrtx_scanner *s1, *s2;
	mrtx_cell c;
	mrtx_txn *t;

	assert_int_equal(tu_put_str(f->db, "t1", "a", "f:", "1"), MRTX_OK);
	memset(&sp, 0, sizeof(sp));
	sp.table = "t1";
	assert_int_equal(mrtx_begin(f->db, &t), MRTX_OK);
	assert_int_equal(mrtx_scan_open(t, &sp, &s1), MRTX_OK);
	assert_int_equal(mrtx_scan_open(t, &sp, &s2), MRTX_OK);
	assert_int_equal(mrtx_scan_next(s1, &c), MRTX_OK);
	mrtx_scan_close(s1);
	assert_int_equal(mrtx_commit(t), MRTX_OK);
	assert_int_equal(mrtx_scan_next(s2, &c), MRTX_EBADTXN);
	mrtx_scan_close(s2);
	assert_int_equal(mrtx_begin(f->db, &t), MRTX_OK);
	assert_int_equal(mrtx_scan_open(t, &sp, &s1), MRTX_OK);
	mrtx_abort(t);
	assert_int_equal(mrtx_scan_next(s1, &c), MRTX_EBADTXN);
	mrtx_scan_close(s1);
}

static void test_readonly_validation(void **state)
{
	fx *f = *state;
	mrtx_txn *t1;
	mrtx_bytes v;

	assert_int_equal(tu_put_str(f->db, "t1", "x", "f:", "1"), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t2", "y", "f:", "1"), MRTX_OK);

	/* read, concurrent change, commit: a read-write transaction is
	 * validated -> CONFLICT.  A read-only one reads from its snapshot
	 * (DESIGN §9) and commits. */
	for (int ro = 0; ro < 2; ro++) {
		char val[2] = { (char)('2' + ro), 0 };

		assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
		assert_int_equal(mrtx_get(t1, "t1", B("x"), "f", B(""), &v), MRTX_OK);
		assert_int_equal(mrtx_get(t1, "t2", B("y"), "f", B(""), &v), MRTX_OK);
		assert_int_equal(tu_put_str(f->db, "t2", "y", "f:", val), MRTX_OK);
		if (!ro)
			assert_int_equal(mrtx_put(t1, "t1", B("x"), "f", B(""), B("w")), MRTX_OK);
		assert_int_equal(mrtx_commit(t1), ro ? MRTX_OK : MRTX_CONFLICT);
	}
	expect_cell(f->db, "t1", "x", "f", "", "1");

	/* a read of a missing cell is validated too (a later insert conflicts) */
	for (int ro = 0; ro < 2; ro++) {
		assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
		assert_int_equal(mrtx_get(t1, "t1", B(ro ? "nothere2" : "nothere"), "f", B(""), &v),
		                 MRTX_NOTFOUND);
		assert_int_equal(tu_put_str(f->db, "t1", ro ? "nothere2" : "nothere", "f:", "1"),
		                 MRTX_OK);
		if (!ro)
			assert_int_equal(mrtx_put(t1, "t1", B("x"), "f", B(""), B("w")), MRTX_OK);
		assert_int_equal(mrtx_commit(t1), ro ? MRTX_OK : MRTX_CONFLICT);
	}

	/* re-reading a changed row reads the snapshot again, and the write's
	 * commit fails */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(mrtx_get(t1, "t1", B("x"), "f", B(""), &v), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t1", "x", "f:", "3"), MRTX_OK);
	assert_int_equal(mrtx_get(t1, "t1", B("x"), "f", B(""), &v), MRTX_OK);
	assert_int_equal(v.size, 1);
	assert_memory_equal(v.data, "1", 1);
	assert_int_equal(mrtx_put(t1, "t1", B("x"), "f", B(""), B("4")), MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_CONFLICT);
	expect_cell(f->db, "t1", "x", "f", "", "3");

	/* unchanged: read-only commit succeeds */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(mrtx_get(t1, "t1", B("x"), "f", B(""), &v), MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_OK);
	/* an empty txn commits */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_OK);
}

/* The value of (t, row, f:"") read by txn, as a C string ("-" if absent). */
static const char *get_in(mrtx_txn *txn, const char *t, const char *row)
{
	static char buf[4][32];
	static int k;
	char *out = buf[k++ % 4];
	mrtx_bytes v;
	int rc = mrtx_get(txn, t, B(row), "f", B(""), &v);

	if (rc == MRTX_NOTFOUND)
		return "-";
	assert_int_equal(rc, MRTX_OK);
	assert_true(v.size < 32);
	memcpy(out, v.data, v.size);
	out[v.size] = 0;
	return out;
}

/*
 * Snapshot reads (DESIGN §9): every read of a transaction comes from the
 * snapshot its first read took (LMDB: a view; RADOS: a timestamp from the
 * store's oracle, every read at it).  A commit of two rows made between two
 * reads is seen by neither (never half of it), by gets and scans alike; a
 * read-only transaction then commits; a read-write one fails validation.
 * The view opens at the first read, not at begin.
 */
static void test_snapshot_reads(void **state)
{
	fx *f = *state;
	mrtx_txn *t1, *t2;
	mrtx_scanner *sc;
	mrtx_cell c;
	mrtx_scan_spec sp;

	assert_int_equal(tu_put_str(f->db, "t1", "x", "f:", "0"), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t2", "y", "f:", "0"), MRTX_OK);
	for (int writer = 0; writer < 2; writer++) {
		char v[2] = { (char)('1' + writer), 0 };

		assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
		assert_string_equal(get_in(t1, "t1", "x"), writer ? "1" : "0");
		/* another transaction commits both rows, and a new one */
		assert_int_equal(mrtx_begin(f->db, &t2), MRTX_OK);
		assert_int_equal(mrtx_put(t2, "t1", B("x"), "f", B(""), B(v)), MRTX_OK);
		assert_int_equal(mrtx_put(t2, "t2", B("y"), "f", B(""), B(v)), MRTX_OK);
		assert_int_equal(mrtx_put(t2, "t2", B(writer ? "y3" : "y2"), "f", B(""), B(v)),
		                 MRTX_OK);
		assert_int_equal(mrtx_commit(t2), MRTX_OK);
		/* t1 sees none of it: y as it was, no new row, x unchanged */
		assert_string_equal(get_in(t1, "t2", "y"), writer ? "1" : "0");
		assert_string_equal(get_in(t1, "t2", writer ? "y3" : "y2"), "-");
		assert_string_equal(get_in(t1, "t1", "x"), writer ? "1" : "0");
		memset(&sp, 0, sizeof(sp));
		sp.table = "t2";
		assert_int_equal(mrtx_scan_open(t1, &sp, &sc), MRTX_OK);
		assert_int_equal(mrtx_scan_next(sc, &c), MRTX_OK); /* y, as it was */
		assert_int_equal(c.row.size, 1);
		assert_memory_equal(c.row.data, "y", 1);
		assert_memory_equal(c.value.data, writer ? "1" : "0", 1);
		if (writer) { /* y2, of the first round; not y3 */
			assert_int_equal(mrtx_scan_next(sc, &c), MRTX_OK);
			assert_int_equal(c.row.size, 2);
			assert_memory_equal(c.row.data, "y2", 2);
		}
		assert_int_equal(mrtx_scan_next(sc, &c), MRTX_NOTFOUND);
		mrtx_scan_close(sc);
		if (writer)
			assert_int_equal(mrtx_put(t1, "t1", B("z"), "f", B(""), B("w")), MRTX_OK);
		assert_int_equal(mrtx_commit(t1), writer ? MRTX_CONFLICT : MRTX_OK);
	}
	expect_cell(f->db, "t1", "z", "f", "", NULL);
	/* the view opens at the first read, not at begin */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(tu_put_str(f->db, "t1", "x", "f:", "9"), MRTX_OK);
	assert_string_equal(get_in(t1, "t1", "x"), "9");
	assert_int_equal(mrtx_commit(t1), MRTX_OK);
	/* a table created after the view is not in it: read as it is now, and
	 * the transaction validates -- also under the name of one dropped since,
	 * where the view would have shown it empty beside rows read from the
	 * old table.  (RADOS: a table made after the snapshot is read at it --
	 * empty -- and tables are not dropped there.) */
	if (tu_rados()) {
		const char *fams[] = { "f" };

		assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
		assert_string_equal(get_in(t1, "t2", "y"), "2");
		assert_int_equal(mrtx_create_table(f->db, "t9", fams, 1), MRTX_OK);
		assert_int_equal(tu_put_str(f->db, "t9", "n", "f:", "1"), MRTX_OK);
		assert_string_equal(get_in(t1, "t9", "n"), "-");
		assert_int_equal(mrtx_commit(t1), MRTX_OK);
	} else {
		const char *fams[] = { "f" };

		assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
		assert_string_equal(get_in(t1, "t2", "y"), "2");
		assert_int_equal(mrtx_create_table(f->db, "t9", fams, 1), MRTX_OK);
		assert_int_equal(tu_put_str(f->db, "t9", "n", "f:", "1"), MRTX_OK);
		assert_string_equal(get_in(t1, "t9", "n"), "1");
		assert_int_equal(mrtx_commit(t1), MRTX_OK); /* validated: nothing changed */

		assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
		assert_string_equal(get_in(t1, "t2", "y"), "2");
		assert_int_equal(mrtx_drop_table(f->db, "t2"), MRTX_OK);
		assert_int_equal(mrtx_create_table(f->db, "t2", fams, 1), MRTX_OK);
		assert_int_equal(tu_put_str(f->db, "t2", "y", "f:", "new"), MRTX_OK);
		/* the new table, as it is now (the old one is gone) */
		assert_string_equal(get_in(t1, "t2", "y"), "new");
		assert_int_not_equal(mrtx_commit(t1), MRTX_OK); /* it saw two tables */
	}
}

/* Readers holding a snapshot now (LMDB's reader table). */
static unsigned active_readers(mrtx_db *db)
{
	store_info info;

	assert_int_equal(store_get_info(mrtx__db_store(db), &info), 0);
	return info.num_readers;
}

/* A child that ends a transaction it inherited with an open view leaves the
 * parent's reader slot alone (LMDB: a forked child must not touch the
 * parent's transactions; resetting it would let writers reuse pages the
 * parent still reads). */
static void test_view_fork(void **state)
{
	fx *f = *state;
	mrtx_txn *t1;
	unsigned before;
	pid_t pid;

	if (tu_rados())
		skip();
	assert_int_equal(tu_put_str(f->db, "t1", "x", "f:", "0"), MRTX_OK);
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_string_equal(get_in(t1, "t1", "x"), "0");
	before = active_readers(f->db);
	assert_true(before >= 1);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		mrtx_abort(t1);
		_exit(0);
	}
	assert_int_equal(tu_wait(pid), 0);
	assert_int_equal(active_readers(f->db), before);
	assert_int_equal(tu_put_str(f->db, "t1", "x", "f:", "1"), MRTX_OK);
	assert_string_equal(get_in(t1, "t1", "x"), "0");
	assert_int_equal(mrtx_commit(t1), MRTX_OK);
	assert_int_equal(active_readers(f->db), before - 1);
}

/* A thread's transaction object is reused, keeping the table its last
 * transaction named on the same handle; a transaction on another handle
 * (here one opened after the first was closed, perhaps at the same
 * address) must look its table up afresh, never through a freed one. */
static void test_txn_object_reuse(void **state)
{
	fx *f = *state;
	char *p1, *p2;
	mrtx_db *a, *b;
	mrtx_txn *t;

	(void)f;
	assert_non_null(a = tu_open_fresh("reuse1", &p1, NULL));
	assert_int_equal(tu_table(a, "only_a", "f", NULL), 0);
	assert_int_equal(tu_put_str(a, "only_a", "x", "f:", "A"), MRTX_OK);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(mrtx_begin(a, &t), MRTX_OK);
		assert_string_equal(get_in(t, "only_a", "x"), "A");
		assert_int_equal(mrtx_commit(t), MRTX_OK);
	}
	mrtx_close(a);
	assert_non_null(b = tu_open_fresh("reuse2", &p2, NULL));
	assert_int_equal(tu_table(b, "only_a", "f", "g", NULL), 0); /* same name, other store */
	assert_int_equal(tu_put_str(b, "only_a", "x", "g:", "B"), MRTX_OK);
	assert_int_equal(mrtx_begin(b, &t), MRTX_OK);
	{
		mrtx_bytes v;

		assert_int_equal(mrtx_get(t, "only_a", B("x"), "g", B(""), &v), MRTX_OK);
		assert_int_equal(v.size, 1);
		assert_memory_equal(v.data, "B", 1);
		assert_int_equal(mrtx_get(t, "only_a", B("x"), "f", B(""), &v), MRTX_NOTFOUND);
	}
	assert_int_equal(mrtx_commit(t), MRTX_OK);
	mrtx_close(b);
	tu_rmrf(p1);
	tu_rmrf(p2);
	free(p1);
	free(p2);
}

static void test_multi_table(void **state)
{
	fx *f = *state;
	mrtx_txn *t1, *t2;
	mrtx_bytes v;

	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(mrtx_put(t1, "t1", B("k"), "f", B("q"), B("v1")), MRTX_OK);
	assert_int_equal(mrtx_put(t1, "t1", B("k"), "g", B("q"), B("v2")), MRTX_OK);
	assert_int_equal(mrtx_put(t1, "t2", B("k"), "f", B("q"), B("v3")), MRTX_OK);
	assert_int_equal(mrtx_put(t1, "t2", B("k2"), "f", B("q"), B("v4")), MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_OK);
	expect_cell(f->db, "t1", "k", "f", "q", "v1");
	expect_cell(f->db, "t1", "k", "g", "q", "v2");
	expect_cell(f->db, "t2", "k", "f", "q", "v3");
	expect_cell(f->db, "t2", "k2", "f", "q", "v4");
	/* same row key in two tables is two rows */
	expect_cell(f->db, "t2", "k", "f", "nope", NULL);

	/* a conflict on one table's row keeps the other table's writes out */
	assert_int_equal(mrtx_begin(f->db, &t1), MRTX_OK);
	assert_int_equal(mrtx_begin(f->db, &t2), MRTX_OK);
	assert_int_equal(mrtx_get(t1, "t2", B("k2"), "f", B("q"), &v), MRTX_OK);
	assert_int_equal(mrtx_put(t1, "t1", B("k"), "f", B("q"), B("lost")), MRTX_OK);
	assert_int_equal(mrtx_put(t1, "t2", B("k2"), "f", B("q"), B("lost")), MRTX_OK);
	assert_int_equal(mrtx_put(t2, "t2", B("k2"), "f", B("q"), B("won")), MRTX_OK);
	assert_int_equal(mrtx_commit(t2), MRTX_OK);
	assert_int_equal(mrtx_commit(t1), MRTX_CONFLICT);
	expect_cell(f->db, "t1", "k", "f", "q", "v1");
	expect_cell(f->db, "t2", "k2", "f", "q", "won");
}

static int run_incr(mrtx_txn *txn, void *payload)
{
	long v;
	int rc;

	(void)payload;
	if ((rc = read_int(txn, "t1", "runctr", &v)))
		return rc;
	return write_int(txn, "t1", "runctr", v + 1);
}

static int run_fail(mrtx_txn *txn, void *payload)
{
	(void)payload;
	mrtx_put(txn, "t1", B("runfail"), "f", B(""), B("x"));
	return -12345;
}

static void test_run(void **state)
{
	fx *f = *state;

	for (int i = 0; i < 5; i++)
		assert_int_equal(mrtx_run(f->db, run_incr, NULL, 0), MRTX_OK);
	expect_cell(f->db, "t1", "runctr", "f", "n", "5");
	assert_int_equal(mrtx_run(f->db, run_fail, NULL, 3), -12345);
	expect_cell(f->db, "t1", "runfail", "f", "", NULL);
	assert_int_equal(mrtx_run(NULL, run_incr, NULL, 0), MRTX_EINVAL);
	assert_int_equal(mrtx_run(f->db, NULL, NULL, 0), MRTX_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ryw_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ryw_delete_row, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ryw_cell_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rewrite_committed_row, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_write_conflict, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_update, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_skew, setup, teardown),
		cmocka_unit_test_setup_teardown(test_phantom, setup, teardown),
		cmocka_unit_test_setup_teardown(test_phantom_empty_range, setup, teardown),
		cmocka_unit_test_setup_teardown(test_phantom_buffered_rows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scanner_outlives_txn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readonly_validation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_reads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_view_fork, setup, teardown),
		cmocka_unit_test_setup_teardown(test_txn_object_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_multi_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
