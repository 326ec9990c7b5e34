/*
 * test_txn.c - transactions through the public API: read-your-writes,
 * isolation anomalies (write-write, lost update, write skew, phantoms,
 * read-only validation), multi-table commits, and bad input.
 */
#include "testutil.h"
#include "storage/keyenc.h"
#include "txn/admin_test.h"
#include "storage/lmdb/lmdb_seal.h"

#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define B(s) MRTX_CSTR(s)
#define NONE MRTX_BYTES(NULL, 0)

typedef struct fx {
	mrtx_db *db;
	char *path;
} fx;

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));

	if (!f || !(f->db = tu_open_fresh("txn", &f->path, NULL)))
		return -1;
	if (tu_table(f->db, "t1", "f", "g", NULL) || tu_table(f->db, "t2", "f", NULL))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;

	mrtx_close(f->db);
	tu_rmrf(f->path);
	free(f->path);
	free(f);
	return 0;
}

static void expect_cell(mrtx_db *db, const char *t, const char *row, const char *fam,
                        const char *q, const char *want)
{
	int rc;

	if (!tu_cell_is(db, t, B(row), fam, B(q), want ? B(want) : NONE, &rc))
		fail_msg("%s/%s %s:%s: rc %d (%s), want %s", t, row, fam, q, rc,
		         mrtx_strerror(rc), want ? want : "absent");
}

static int get_eq(mrtx_txn *txn, const char *t, const char *row, const char *fam,
                  const char *q, const char *want)
{
	mrtx_bytes v;
	int rc = mrtx_get(txn, t, B(row), fam, B(q), &v);

	if (!want)
		return rc == MRTX_NOTFOUND;
	return rc == MRTX_OK && v.size == strlen(want) && memcmp(v.data, want, v.size) == 0;
}

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
		store_counters_get(st, &c0);
		assert_int_equal(mrtx_put(txn, "t1", B(round ? "solo" : "new-row"), "f", B("a"),
		                          B("1")), MRTX_OK);
		assert_int_equal(mrtx_put(txn, "t1", B(round ? "solo" : "new-row"), "f", B("b"),
		                          B("2")), MRTX_OK);
		assert_int_equal(mrtx_commit(txn), MRTX_OK);
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

static int scan_count(mrtx_txn *txn, const char *t, const char *start, const char *end,
                      size_t limit, int *rows_out);

/* Write calls, write txns and read txns that a commit costs. */
static void commit_cost(mrtx_db *db, mrtx_txn *txn, int want_rc, unsigned long *calls,
                        unsigned long *wtxns, unsigned long *reads)
{
	store *st = mrtx__db_store(db);
	store_counters c0, c1;

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
	assert_non_null(two = tu_open_k(f->path, &o, &(mrtx__knobs){ 0, 1 }));
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

static int scan_count(mrtx_txn *txn, const char *t, const char *start, const char *end,
                      size_t limit, int *rows_out)
{
	mrtx_scan_spec sp;
	mrtx_scanner *s;
	mrtx_cell c;
	int rc, n = 0;

	memset(&sp, 0, sizeof(sp));
	sp.table = t;
	sp.start = B(start);
	sp.end = B(end);
	sp.limit_rows = limit;
	if ((rc = mrtx_scan_open(txn, &sp, &s)))
		return rc;
	while ((rc = mrtx_scan_next(s, &c)) == MRTX_OK)
		n++;
	mrtx_scan_close(s);
	*rows_out = n;
	return rc == MRTX_NOTFOUND ? 0 : rc;
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

/* ------------------------------------------------------------ bad input */

static void test_bad_names(void **state)
{
	fx *f = *state;
	mrtx_txn *txn;
	mrtx_bytes v;
	mrtx_scanner *s = NULL;
	mrtx_scan_spec sp;

	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	assert_int_equal(mrtx_get(txn, "nosuch", B("r"), "f", B(""), &v), MRTX_ENOTABLE);
	assert_non_null(strstr(mrtx_errmsg(), "nosuch"));
	assert_int_equal(mrtx_put(txn, "nosuch", B("r"), "f", B(""), B("v")), MRTX_ENOTABLE);
	assert_non_null(strstr(mrtx_errmsg(), "nosuch"));
	assert_int_equal(mrtx_delete(txn, "nosuch", B("r"), "f", B("")), MRTX_ENOTABLE);
	assert_int_equal(mrtx_delete_row(txn, "nosuch", B("r")), MRTX_ENOTABLE);
	assert_int_equal(mrtx_get(txn, "t2", B("r"), "g", B(""), &v), MRTX_ENOFAMILY);
	assert_non_null(strstr(mrtx_errmsg(), "t2"));
	assert_non_null(strstr(mrtx_errmsg(), "'g'"));
	assert_int_equal(mrtx_put(txn, "t1", B("r"), "nofam", B(""), B("v")), MRTX_ENOFAMILY);
	assert_non_null(strstr(mrtx_errmsg(), "t1"));
	assert_non_null(strstr(mrtx_errmsg(), "nofam"));
	assert_int_equal(mrtx_delete(txn, "t1", B("r"), "nofam", B("")), MRTX_ENOFAMILY);
	memset(&sp, 0, sizeof(sp));
	sp.table = "nosuch";
	assert_int_equal(mrtx_scan_open(txn, &sp, &s), MRTX_ENOTABLE);
	sp.table = "t1";
	sp.family = "nofam";
	assert_int_equal(mrtx_scan_open(txn, &sp, &s), MRTX_ENOFAMILY);
	sp.family = NULL;
	sp.qual_start = B("a");
	assert_int_equal(mrtx_scan_open(txn, &sp, &s), MRTX_EINVAL);
	assert_null(s);
	/* the failed calls did not doom the txn */
	assert_int_equal(mrtx_put(txn, "t1", B("ok"), "f", B(""), B("v")), MRTX_OK);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	expect_cell(f->db, "t1", "ok", "f", "", "v");
	/* error messages are never empty */
	assert_true(strlen(mrtx_strerror(MRTX_ENOTABLE)) > 0);
	assert_true(strlen(mrtx_strerror(12345)) > 0);
}

static void test_key_limits(void **state)
{
	fx *f = *state;
	static uint8_t row[MRTX_MAX_ROW + 2];
	static uint8_t qual[MRTX_MAX_KEY + 2];
	mrtx_txn *txn;
	mrtx_bytes v;

	memset(row, 'r', sizeof(row));
	memset(qual, 'q', sizeof(qual));
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	/* a row of exactly MRTX_MAX_ROW bytes with an empty qualifier fits */
	assert_int_equal(mrtx_put(txn, "t1", MRTX_BYTES(row, MRTX_MAX_ROW), "f", B(""), B("max")),
	                 MRTX_OK);
	/* one more byte does not */
	assert_int_equal(mrtx_put(txn, "t1", MRTX_BYTES(row, MRTX_MAX_ROW + 1), "f", B(""),
	                          B("x")), MRTX_ETOOBIG);
	assert_non_null(strstr(mrtx_errmsg(), "t1"));
	assert_int_equal(mrtx_get(txn, "t1", MRTX_BYTES(row, MRTX_MAX_ROW + 1), "f", B(""), &v),
	                 MRTX_ETOOBIG);
	assert_int_equal(mrtx_delete_row(txn, "t1", MRTX_BYTES(row, MRTX_MAX_ROW + 1)),
	                 MRTX_ETOOBIG);
	/* a max row plus a 1-byte qualifier does not fit either */
	assert_int_equal(mrtx_put(txn, "t1", MRTX_BYTES(row, MRTX_MAX_ROW), "f", B("q"), B("x")),
	                 MRTX_ETOOBIG);
	/* NUL bytes count double: a max-size row holding one NUL is over */
	row[7] = 0;
	assert_int_equal(mrtx_put(txn, "t1", MRTX_BYTES(row, MRTX_MAX_ROW), "f", B(""), B("x")),
	                 MRTX_ETOOBIG);
	assert_int_equal(mrtx_put(txn, "t1", MRTX_BYTES(row, MRTX_MAX_ROW - 1), "f", B(""),
	                          B("nul")), MRTX_OK);
	row[7] = 'r';
	/* the qualifier budget: 1-byte row + 16 + qual <= MRTX_MAX_KEY */
	assert_int_equal(mrtx_put(txn, "t1", B("k"), "f", MRTX_BYTES(qual, MRTX_MAX_KEY - 17),
	                          B("q")), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t1", B("k"), "f", MRTX_BYTES(qual, MRTX_MAX_KEY - 16),
	                          B("x")), MRTX_ETOOBIG);
	/* a size that would wrap the key-size sum is refused before any copy */
	assert_int_equal(mrtx_get(txn, "t1", B("k"), "f", MRTX_BYTES(qual, SIZE_MAX - 2), &v),
	                 MRTX_ETOOBIG);
	assert_int_equal(mrtx_put(txn, "t1", B("k"), "f", MRTX_BYTES(qual, SIZE_MAX - 2), B("x")),
	                 MRTX_ETOOBIG);
	/* empty row */
	assert_int_equal(mrtx_put(txn, "t1", B(""), "f", B(""), B("x")), MRTX_EINVAL);
	assert_int_equal(mrtx_get(txn, "t1", B(""), "f", B(""), &v), MRTX_EINVAL);
	assert_int_equal(mrtx_delete_row(txn, "t1", B("")), MRTX_EINVAL);
	assert_int_equal(mrtx_delete(txn, "t1", B(""), "f", B("")), MRTX_EINVAL);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);

	expect_cell(f->db, "t1", "k", "f", "", NULL);
	{
		int rc;

		assert_true(tu_cell_is(f->db, "t1", MRTX_BYTES(row, MRTX_MAX_ROW), "f", B(""),
		                       B("max"), &rc));
		row[7] = 0;
		assert_true(tu_cell_is(f->db, "t1", MRTX_BYTES(row, MRTX_MAX_ROW - 1), "f", B(""),
		                       B("nul"), &rc));
		assert_true(tu_cell_is(f->db, "t1", B("k"), "f",
		                       MRTX_BYTES(qual, MRTX_MAX_KEY - 17), B("q"), &rc));
	}
}

static void test_null_handles(void **state)
{
	fx *f = *state;
	mrtx_txn *txn = NULL;
	mrtx_scanner *s = NULL;
	mrtx_scan_spec sp;
	mrtx_cell c;
	mrtx_bytes v;
	mrtx_db *db = NULL;

	assert_int_equal(mrtx_open(NULL, f->path, NULL), MRTX_EINVAL);
	assert_int_equal(mrtx_open(&db, NULL, NULL), MRTX_EINVAL);
	assert_int_equal(mrtx_begin(NULL, &txn), MRTX_EINVAL);
	assert_int_equal(mrtx_begin(f->db, NULL), MRTX_EINVAL);
	assert_int_equal(mrtx_create_table(NULL, "x", (const char *const[]){ "f" }, 1),
	                 MRTX_EINVAL);
	assert_int_equal(mrtx_get(NULL, "t1", B("r"), "f", B(""), &v), MRTX_EINVAL);
	assert_int_equal(mrtx_put(NULL, "t1", B("r"), "f", B(""), B("v")), MRTX_EINVAL);
	assert_int_equal(mrtx_delete(NULL, "t1", B("r"), "f", B("")), MRTX_EINVAL);
	assert_int_equal(mrtx_delete_row(NULL, "t1", B("r")), MRTX_EINVAL);
	assert_int_equal(mrtx_commit(NULL), MRTX_EINVAL);
	memset(&sp, 0, sizeof(sp));
	sp.table = "t1";
	assert_int_equal(mrtx_scan_open(NULL, &sp, &s), MRTX_EINVAL);
	assert_int_equal(mrtx_scan_next(NULL, &c), MRTX_EINVAL);
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	assert_int_equal(mrtx_get(txn, NULL, B("r"), "f", B(""), &v), MRTX_EINVAL);
	assert_int_equal(mrtx_get(txn, "t1", B("r"), NULL, B(""), &v), MRTX_EINVAL);
	assert_int_equal(mrtx_get(txn, "t1", B("r"), "f", B(""), NULL), MRTX_EINVAL);
	assert_int_equal(mrtx_get(txn, "t1", MRTX_BYTES(NULL, 3), "f", B(""), &v), MRTX_EINVAL);
	assert_int_equal(mrtx_put(txn, NULL, B("r"), "f", B(""), B("v")), MRTX_EINVAL);
	assert_int_equal(mrtx_put(txn, "t1", B("r"), NULL, B(""), B("v")), MRTX_EINVAL);
	assert_int_equal(mrtx_put(txn, "t1", B("r"), "f", MRTX_BYTES(NULL, 2), B("v")),
	                 MRTX_EINVAL);
	assert_int_equal(mrtx_put(txn, "t1", B("r"), "f", B(""), MRTX_BYTES(NULL, 2)),
	                 MRTX_EINVAL);
	assert_int_equal(mrtx_delete_row(txn, NULL, B("r")), MRTX_EINVAL);
	assert_int_equal(mrtx_scan_open(txn, NULL, &s), MRTX_EINVAL);
	assert_int_equal(mrtx_scan_open(txn, &sp, NULL), MRTX_EINVAL);
	sp.table = NULL;
	assert_int_equal(mrtx_scan_open(txn, &sp, &s), MRTX_EINVAL);
	sp.table = "t1";
	assert_int_equal(mrtx_scan_open(txn, &sp, &s), MRTX_OK);
	assert_int_equal(mrtx_scan_next(s, NULL), MRTX_EINVAL);
	mrtx_scan_close(s);
	/* empty value with NULL data is a valid empty value */
	assert_int_equal(mrtx_put(txn, "t1", B("ev"), "f", B(""), MRTX_BYTES(NULL, 0)), MRTX_OK);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	assert_true(tu_cell_is(f->db, "t1", B("ev"), "f", B(""), MRTX_BYTES("", 0), NULL));
	/* the no-ops */
	mrtx_abort(NULL);
	mrtx_close(NULL);
	mrtx_scan_close(NULL);
	assert_non_null(mrtx_errmsg());
}

/* Names are found through a hash of the store's tables: all of them, the
 * limit, unknown names, in this handle and after a real reopen. */
static void test_many_tables(void **state)
{
	fx *f = *state;
	const char *const fams[] = { "f" };
	char name[32];
	mrtx_txn *txn;
	mrtx_bytes v;

	/* t1 and t2 exist: MRTX_MAX_TABLES - 2 more reach the limit */
	for (unsigned i = 0; i < MRTX_MAX_TABLES - 2; i++) {
		snprintf(name, sizeof(name), "m%u", i);
		assert_int_equal(mrtx_create_table(f->db, name, fams, 1), MRTX_OK);
	}
	assert_int_equal(mrtx_create_table(f->db, "one-too-many", fams, 1), MRTX_ETOOBIG);
	for (int pass = 0; pass < 2; pass++) {
		assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
		for (unsigned i = 0; i < MRTX_MAX_TABLES - 2; i++) {
			snprintf(name, sizeof(name), "m%u", i);
			if (pass == 0)
				assert_int_equal(mrtx_put(txn, name, B("r"), "f", B("q"), B(name)),
				                 MRTX_OK);
			else if (!get_eq(txn, name, "r", "f", "q", name))
				fail_msg("table %s: not found by name after reopening", name);
		}
		assert_int_equal(mrtx_get(txn, "m", B("r"), "f", B("q"), &v), MRTX_ENOTABLE);
		assert_int_equal(mrtx_get(txn, "m4980", B("r"), "f", B("q"), &v), MRTX_ENOTABLE);
		assert_int_equal(mrtx_get(txn, "one-too-many", B("r"), "f", B("q"), &v),
		                 MRTX_ENOTABLE);
		assert_int_equal(mrtx_commit(txn), MRTX_OK);
		if (pass == 0) {
			mrtx_close(f->db);
			assert_non_null(f->db = tu_open(f->path, NULL));
		}
	}
}

static void test_create_table(void **state)
{
	fx *f = *state;
	const char *const fams[] = { "f", "g" };
	const char *const other[] = { "g", "f" };
	const char *const dup[] = { "f", "f" };
	const char *const bad[] = { "a b" };
	const char *const *got;
	size_t n;

	assert_int_equal(mrtx_create_table(f->db, "t1", fams, 2), MRTX_OK);
	assert_int_equal(mrtx_create_table(f->db, "t1", fams, 2), MRTX_OK);
	assert_int_equal(mrtx_create_table(f->db, "t1", other, 2), MRTX_EEXIST);
	assert_non_null(strstr(mrtx_errmsg(), "t1"));
	assert_int_equal(mrtx_create_table(f->db, "t1", fams, 1), MRTX_EEXIST);
	assert_int_equal(mrtx_create_table(f->db, "t3", dup, 2), MRTX_EINVAL);
	assert_int_equal(mrtx_create_table(f->db, "t3", bad, 1), MRTX_EINVAL);
	assert_int_equal(mrtx_create_table(f->db, "t3", fams, 0), MRTX_EINVAL);
	assert_int_equal(mrtx_create_table(f->db, "", fams, 1), MRTX_EINVAL);
	assert_int_equal(mrtx_create_table(f->db, "a/b", fams, 1), MRTX_EINVAL);
	assert_int_equal(mrtx_table_families(f->db, "t1", &got, &n), MRTX_OK);
	assert_int_equal(n, 2);
	assert_string_equal(got[0], "f");
	assert_string_equal(got[1], "g");
	assert_int_equal(mrtx_table_families(f->db, "t3", &got, &n), MRTX_ENOTABLE);

	/* a table survives reopening, and reopening shares the environment */
	{
		mrtx_db *db2 = tu_open(f->path, NULL);

		assert_non_null(db2);
		assert_int_equal(mrtx_create_table(db2, "t1", fams, 2), MRTX_OK);
		assert_int_equal(tu_put_str(db2, "t1", "via2", "g:", "x"), MRTX_OK);
		mrtx_close(db2);
		expect_cell(f->db, "t1", "via2", "g", "", "x");
	}
}

static void test_open_not_a_store(void **state)
{
	if (tu_rados())
		skip(); /* about LMDB files */
	char *dir = tu_tmpdir("notstore"), file[512];
	mrtx_db *db = NULL;
	int fd;

	(void)state;
	assert_non_null(dir);
	snprintf(file, sizeof(file), "%s/plain", dir);
	fd = open(file, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hello", 5), 5);
	close(fd);
	assert_int_equal(mrtx_open(&db, file, NULL), MRTX_ENOTSTORE);
	assert_null(db);
	assert_true(strlen(mrtx_errmsg()) > 0);
	tu_rmrf(dir);
	free(dir);
}

static void test_open_foreign_lmdb(void **state)
{
	if (tu_rados())
		skip(); /* about LMDB files */
	char *dir = tu_tmpdir("foreign");
	MDB_env *env;
	MDB_txn *t;
	MDB_dbi dbi;
	MDB_val k = { 7, "foreign" }, v = { 5, "value" };
	mrtx_db *db = NULL;

	(void)state;
	assert_non_null(dir);
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_open(env, dir, 0, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &t), 0);
	assert_int_equal(mdb_dbi_open(t, NULL, 0, &dbi), 0);
	assert_int_equal(mdb_put(t, dbi, &k, &v, 0), 0);
	assert_int_equal(mdb_txn_commit(t), 0);
	mdb_env_close(env);

	assert_int_equal(mrtx_open(&db, dir, NULL), MRTX_ENOTSTORE);
	assert_null(db);
	assert_non_null(strstr(mrtx_errmsg(), dir));

	/* untouched */
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_open(env, dir, MDB_RDONLY, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &t), 0);
	assert_int_equal(mdb_dbi_open(t, NULL, 0, &dbi), 0);
	assert_int_equal(mdb_get(t, dbi, &k, &v), 0);
	assert_int_equal(v.mv_size, 5);
	assert_memory_equal(v.mv_data, "value", 5);
	{
		MDB_stat ms;

		assert_int_equal(mdb_stat(t, dbi, &ms), 0);
		assert_int_equal(ms.ms_entries, 1);
	}
	mdb_txn_abort(t);
	mdb_env_close(env);
	tu_rmrf(dir);
	free(dir);
}

/* Both opens must fail with MRTX_ESTORE: a store to be created in a
 * directory we cannot write, and an existing store whose files we cannot
 * open.  Returns 0, or which check failed. */
static int unwritable_checks(const char *dir)
{
	char sub[512];
	mrtx_db *db = NULL;

	snprintf(sub, sizeof(sub), "%s/new", dir);
	if (mrtx_open(&db, sub, NULL) != MRTX_ESTORE || db)
		return 1;
	snprintf(sub, sizeof(sub), "%s/existing", dir);
	if (mrtx_open(&db, sub, NULL) != MRTX_ESTORE || db)
		return 2;
	if (!strlen(mrtx_errmsg()))
		return 3;
	return 0;
}

static void test_open_unwritable(void **state)
{
	if (tu_rados())
		skip(); /* about LMDB files */
	char *dir = tu_tmpdir("unwritable"), sub[512];
	mrtx_db *db;

	(void)state;
	assert_non_null(dir);
	snprintf(sub, sizeof(sub), "%s/existing", dir);
	assert_non_null(db = tu_open(sub, NULL));
	mrtx_close(db);
	assert_int_equal(chmod(dir, 0555), 0);
	if (geteuid() != 0) {
		assert_int_equal(unwritable_checks(dir), 0);
	} else {
		/* root ignores permissions: check as an unprivileged user */
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			if (setgid(65534) || setuid(65534))
				_exit(20);
			_exit(unwritable_checks(dir));
		}
		assert_int_equal(tu_wait(pid), 0);
	}
	chmod(dir, 0700);
	tu_rmrf(dir);
	free(dir);
}

static void test_bad_options(void **state)
{
	fx *f = *state;
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db = NULL;

	o.version = 99;
	assert_int_equal(mrtx_open(&db, f->path, &o), MRTX_EINVAL);
	o.version = MRTX_OPTIONS_VERSION;
	o.durability = 7;
	assert_int_equal(mrtx_open(&db, f->path, &o), MRTX_EINVAL);
	assert_null(db);
}

/* Write raw bytes as a row's lock record -- key P . enc(row) . 0xFF, with
 * P the table's prefix from its record 0x00 "t/<table>" (storage/lmdb/lmdb_rw.c,
 * lmdb_meta.c) -- while mrtx is closed. */
static void raw_lock_put(const char *path, const char *table, mrtx_bytes row,
                         const void *bytes, size_t n)
{
	uint8_t key[MRTX_MAX_KEY + 1];
	size_t kl;
	char name[128];
	MDB_env *env;
	MDB_txn *t;
	MDB_dbi dbi;
	MDB_val k, v = { n, (void *)(uintptr_t)bytes }, rec;

	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_mapsize(env, (size_t)1 << 30), 0);
	assert_int_equal(mdb_env_open(env, path, 0, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &t), 0);
	assert_int_equal(mdb_dbi_open(t, NULL, 0, &dbi), 0);
	k.mv_size = (size_t)snprintf(name, sizeof(name), "%ct/%s", 0, table);
	k.mv_data = name;
	assert_int_equal(mdb_get(t, dbi, &k, &rec), 0);
	assert_true(rec.mv_size > 2);
	memcpy(key, rec.mv_data, 2);
	kl = 2 + keyenc_put(key + 2, row.data, row.size);
	key[kl++] = 0xFF;
	k = (MDB_val){ kl, key };
	assert_int_equal(lmdb_put(t, dbi, &k, &v, 0), 0);
	assert_int_equal(mdb_txn_commit(t), 0);
	mdb_env_close(env);
}

static void test_corrupt_lock(void **state)
{
	if (tu_rados())
		skip(); /* about LMDB files */
	fx *f = *state;
	static const uint8_t garbage[][12] = {
		{ 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8 },
		{ 1 },
		{ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 },
		{ 0 },
	};
	mrtx_txn *txn;
	mrtx_bytes v;

	assert_int_equal(tu_put_str(f->db, "t1", "good", "f:", "fine"), MRTX_OK);
	for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
		char row[16];

		snprintf(row, sizeof(row), "bad%zu", i);
		assert_int_equal(tu_put_str(f->db, "t1", row, "f:", "v"), MRTX_OK);
	}
	mrtx_close(f->db);
	f->db = NULL;
	for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
		char row[16];

		snprintf(row, sizeof(row), "bad%zu", i);
		raw_lock_put(f->path, "t1", B(row), garbage[i], i == 1 || i == 3 ? 1 : 12);
	}
	raw_lock_put(f->path, "t1", B("nodata"), garbage[0], 12);
	assert_non_null(f->db = tu_open(f->path, NULL));

	for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
		char row[16];

		snprintf(row, sizeof(row), "bad%zu", i);
		assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
		assert_int_equal(mrtx_get(txn, "t1", B(row), "f", B(""), &v), MRTX_ECORRUPT);
		assert_non_null(strstr(mrtx_errmsg(), "t1"));
		mrtx_abort(txn);
		/* a write to the row reports it as well, and writes nothing */
		assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
		assert_int_equal(mrtx_put(txn, "t1", B(row), "f", B(""), B("new")), MRTX_OK);
		assert_int_equal(mrtx_put(txn, "t1", B("other"), "f", B(""), B("new")), MRTX_OK);
		assert_int_equal(mrtx_commit(txn), MRTX_ECORRUPT);
		expect_cell(f->db, "t1", "other", "f", "", NULL);
	}
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	assert_int_equal(mrtx_get(txn, "t1", B("nodata"), "f", B(""), &v), MRTX_ECORRUPT);
	/* other rows still work */
	assert_int_equal(mrtx_get(txn, "t1", B("good"), "f", B(""), &v), MRTX_OK);
	mrtx_abort(txn);
	/* a scan over the bad rows reports it too */
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	assert_int_equal(tu_scan_all(txn, "t1"), MRTX_ECORRUPT);
	mrtx_abort(txn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ryw_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ryw_delete_row, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ryw_cell_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rewrite_committed_row, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_row_one_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_point_reads, setup, teardown),
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
		cmocka_unit_test_setup_teardown(test_multi_row_blind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_phase, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_phase_failpoints, setup, teardown),
		cmocka_unit_test_setup_teardown(test_commit_tail_drained, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_null_handles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_tables, setup, teardown),
		cmocka_unit_test(test_open_not_a_store),
		cmocka_unit_test(test_open_foreign_lmdb),
		cmocka_unit_test(test_open_unwritable),
		cmocka_unit_test_setup_teardown(test_bad_options, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_lock, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
