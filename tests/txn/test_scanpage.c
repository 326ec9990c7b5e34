/*
 * test_scanpage.c - scans over wide rows and their pages (on RADOS a
 * forward scan reads a page of a tablet's locks and cells in one op and
 * reads again only the rows the page cut: storage/rados/rados_read.c).
 *
 *   - every row a scan returns, at every batch size and filter (all cells,
 *     a past timestamp, several versions, one family, a qualifier range,
 *     row bounds), is exactly what a read of that row alone returns: its
 *     lock, cells, values, timestamps -- rows of 1 to 1,500 cell versions,
 *     with overwritten and deleted cells and a deleted row, so that pages
 *     end inside rows and one row is wider than a page;
 *   - a commit that lands between two store calls of a scan, and (RADOS,
 *     failpoint scan.after_page) between a page and the read of the rows
 *     it cut, leaves the scan a snapshot at its timestamp: what a scan
 *     showed before that commit, cell for cell.
 */
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/store.h"
#include "txn/admin_test.h"

#define B(s) MRTX_CSTR(s)
#define NR 60  /* rows of table t */
#define NS 300 /* rows of table s: more than a scanner's batch */

static char *path;
static mrtx_db *db;
static uint64_t ts_mid; /* a timestamp between the first writes and the rest */

static size_t ncells_of(int i)
{
	if (i == 13)
		return 1500; /* wider than a page by itself */
	return i % 7 == 0 ? 300 : 1 + (size_t)(i % 5);
}

static const char *fam_of(size_t q)
{
	return q % 3 == 0 ? "g" : "f";
}

static void put_row(const char *table, const char *row, size_t nc, const char *tag,
                    uint64_t *ts)
{
	mrtx_txn *txn;

	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	for (size_t q = 0; q < nc; q++) {
		char qual[32], v[64];

		snprintf(qual, sizeof(qual), "q%04zu", q);
		snprintf(v, sizeof(v), "%s-%s-%zu", tag, row, q);
		assert_int_equal(mrtx_put(txn, table, B(row), fam_of(q), B(qual), B(v)), MRTX_OK);
	}
	assert_int_equal(mrtx_commit_ts(txn, ts), MRTX_OK);
}

static int setup(void **state)
{
	static const mrtx_family_spec fams[] = { { "f", 3, 0, 0 }, { "g", 1, 0, 0 } };

	(void)state;
	assert_non_null(db = tu_open_fresh("scanpage", &path, NULL));
	/* f keeps three versions, g one */
	assert_int_equal(mrtx_create_table2(db, "t", fams, 2), MRTX_OK);
	assert_int_equal(tu_table(db, "s", "f", "g", NULL), MRTX_OK);
	for (int i = 0; i < NR; i++) {
		char row[16];

		snprintf(row, sizeof(row), "r%03d", i);
		put_row("t", row, ncells_of(i), "v1", &ts_mid);
	}
	/* newer versions of some cells, deletions, a deleted row */
	for (int i = 0; i < NR; i += 3) {
		char row[16];
		uint64_t ts;

		snprintf(row, sizeof(row), "r%03d", i);
		put_row("t", row, MRTX_MIN(ncells_of(i), (size_t)40), "v2", &ts);
	}
	for (int i = 1; i < NR; i += 4) {
		mrtx_txn *txn;
		char row[16];

		snprintf(row, sizeof(row), "r%03d", i);
		assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
		if (i == 21)
			assert_int_equal(mrtx_delete_row(txn, "t", B(row)), MRTX_OK);
		else
			assert_int_equal(mrtx_delete(txn, "t", B(row), "f", B("q0001")), MRTX_OK);
		assert_int_equal(mrtx_commit(txn), MRTX_OK);
	}
	for (int i = 0; i < NS; i++) {
		char row[16];
		uint64_t ts;

		snprintf(row, sizeof(row), "s%03d", i);
		put_row("s", row, i % 25 == 0 ? 200 : 2, "v1", &ts);
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
	return 0;
}

static void same_row(const store_row *a, const store_row *b)
{
	assert_int_equal(a->row.size, b->row.size);
	assert_memory_equal(a->row.data, b->row.data, a->row.size);
	assert_int_equal(a->has_lock, b->has_lock);
	assert_int_equal(a->lock.size, b->lock.size);
	if (a->lock.size)
		assert_memory_equal(a->lock.data, b->lock.data, a->lock.size);
	if (a->ncells != b->ncells)
		fail_msg("row %.*s: the scan shows %zu cells, a read of the row %zu",
		         (int)a->row.size, (const char *)a->row.data, a->ncells, b->ncells);
	for (size_t i = 0; i < a->ncells; i++) {
		const store_cell *x = &a->cells[i], *y = &b->cells[i];

		assert_int_equal(x->fid, y->fid);
		assert_int_equal(x->ts, y->ts);
		assert_int_equal(x->qual.size, y->qual.size);
		assert_memory_equal(x->qual.data, y->qual.data, x->qual.size);
		assert_int_equal(x->value.size, y->value.size);
		if (x->value.size)
			assert_memory_equal(x->value.data, y->value.data, x->value.size);
	}
	assert_int_equal(a->vmax, b->vmax);
}

/* Scan r of t in batches of max_rows (0: one call) and check every row
 * against a read of it alone; returns the rows seen. */
static size_t scan_check(const store_table *t, store_range r, const store_filter *f,
                         size_t max_rows)
{
	store *st = mrtx__db_store(db);
	uint8_t lo[64];
	size_t seen = 0;
	int more = 1;

	while (more) {
		mrtx_arena a;
		store_row *rows;
		size_t n;

		arena_init(&a);
		if (store_scan_rows(st, t, &r, 0, f, max_rows, &a, &rows, &n, &more))
			fail_msg("scan of %zu rows: %s", max_rows, mrtx_errmsg());
		if (max_rows)
			assert_true(n <= max_rows);
		for (size_t i = 0; i < n; i++) {
			store_row one;

			memset(&one, 0, sizeof(one));
			if (store_read_row(st, t, rows[i].row, f, &a, &one))
				fail_msg("read of a row: %s", mrtx_errmsg());
			same_row(&rows[i], &one);
		}
		seen += n;
		if (n) {
			/* the next batch starts after the last row */
			assert_true(rows[n - 1].row.size <= sizeof(lo));
			memcpy(lo, rows[n - 1].row.data, rows[n - 1].row.size);
			r.lo = MRTX_BYTES(lo, rows[n - 1].row.size);
			r.lo_excl = 1;
		} else {
			assert_false(more);
		}
		arena_free(&a);
	}
	return seen;
}

static void test_scan_rows_match_reads(void **state)
{
	static const size_t batches[] = { 0, 1, 3, 7, 128 };
	const store_table *t;
	store_filter f;
	store_range all = { { NULL, 0 }, 0, { NULL, 0 } }, part = all;

	(void)state;
	assert_int_equal(store_table_find(mrtx__db_store(db), "t", &t), MRTX_OK);
	for (size_t b = 0; b < sizeof(batches) / sizeof(batches[0]); b++) {
		f = (store_filter)STORE_FILTER_ALL;
		assert_int_equal(scan_check(t, all, &f, batches[b]), NR);
		/* at a timestamp between the first writes and the rest, in f
		 * (three versions kept; g's overwritten ones are trimmed) */
		f.at = ts_mid;
		f.family = 0;
		f.live = 1; /* a running snapshot */
		assert_int_equal(scan_check(t, all, &f, batches[b]), NR);
		f.live = 0; /* a past one */
		assert_int_equal(scan_check(t, all, &f, batches[b]), NR);
		f = (store_filter)STORE_FILTER_ALL;
		f.versions = 4;
		assert_int_equal(scan_check(t, all, &f, batches[b]), NR);
		f = (store_filter)STORE_FILTER_ALL;
		f.family = 1; /* g */
		assert_int_equal(scan_check(t, all, &f, batches[b]), NR);
		f.family = 0;
		f.qs = B("q0010");
		f.qe = B("q0200");
		assert_int_equal(scan_check(t, all, &f, batches[b]), NR);
	}
	/* row bounds: from a row inclusive to another exclusive */
	part.lo = B("r013");
	part.hi = B("r042");
	f = (store_filter)STORE_FILTER_ALL;
	assert_int_equal(scan_check(t, part, &f, 5), 42 - 13);
	part.lo_excl = 1;
	assert_int_equal(scan_check(t, part, &f, 0), 42 - 14);
}

/* Every cell scanner s shows, as "row fam qual value" lines. */
static char *digest(mrtx_scanner *s, size_t *cells)
{
	size_t cap = 1 << 16, len = 0;
	char *out = malloc(cap);
	mrtx_cell c;
	int rc;

	assert_non_null(out);
	out[0] = '\0';
	*cells = 0;
	while ((rc = mrtx_scan_next(s, &c)) == MRTX_OK) {
		size_t need = c.row.size + strlen(c.family) + c.qualifier.size + c.value.size + 8;

		if (len + need >= cap) {
			cap = 2 * (len + need);
			assert_non_null(out = realloc(out, cap));
		}
		len += (size_t)sprintf(out + len, "%.*s %s %.*s %.*s\n", (int)c.row.size,
		                       (const char *)c.row.data, c.family, (int)c.qualifier.size,
		                       (const char *)c.qualifier.data, (int)c.value.size,
		                       (const char *)c.value.data);
		++*cells;
	}
	assert_int_equal(rc, MRTX_NOTFOUND);
	return out;
}

static char *snapshot_now(size_t *cells)
{
	mrtx_scan_spec spec;
	mrtx_scanner *s;
	mrtx_txn *txn;
	char *d;

	memset(&spec, 0, sizeof(spec));
	spec.table = "s";
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	assert_int_equal(mrtx_scan_open(txn, &spec, &s), MRTX_OK);
	d = digest(s, cells);
	mrtx_scan_close(s);
	mrtx_abort(txn);
	return d;
}

/* A commit into rows both behind and ahead of a running scan: overwrites,
 * a new cell in a wide row, an insert, a deleted row; n: its number. */
static void interfere(int n)
{
	mrtx_txn *txn;
	char v[32], row[16];

	snprintf(v, sizeof(v), "w%d", n);
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "s", B("s010"), "f", B("q0001"), B(v)), MRTX_OK);
	for (int i = 30; i < 128; i += 15) { /* (wherever a page cut the first batch) */
		snprintf(row, sizeof(row), "s%03d", i);
		assert_int_equal(mrtx_put(txn, "s", B(row), "f", B("q0001"), B(v)), MRTX_OK);
	}
	assert_int_equal(mrtx_put(txn, "s", B("s200"), "f", B("q0001"), B(v)), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "s", B("s250"), "g", B("zz"), B(v)), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "s", B("s275"), "f", B("q0100"), B(v)), MRTX_OK);
	snprintf(row, sizeof(row), "s150x%d", n);
	assert_int_equal(mrtx_put(txn, "s", B(row), "f", B("q"), B(v)), MRTX_OK);
	snprintf(row, sizeof(row), "s%03d", 260 + n);
	assert_int_equal(mrtx_delete_row(txn, "s", B(row)), MRTX_OK);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
}

/* Between two store calls of a scan (a scanner reads in batches). */
static void test_commit_between_batches(void **state)
{
	mrtx_scan_spec spec;
	mrtx_scanner *s;
	mrtx_txn *txn;
	mrtx_cell c;
	size_t n0, n1, head = 0;
	char *before, *after, *rest;

	(void)state;
	before = snapshot_now(&n0);
	memset(&spec, 0, sizeof(spec));
	spec.table = "s";
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	assert_int_equal(mrtx_scan_open(txn, &spec, &s), MRTX_OK);
	/* into the first batch: the cells of rows s000..s049 */
	for (;;) {
		assert_int_equal(mrtx_scan_next(s, &c), MRTX_OK);
		head++;
		if (c.row.size == 4 && memcmp(c.row.data, "s049", 4) == 0)
			break;
	}
	interfere(1);
	rest = digest(s, &n1);
	mrtx_scan_close(s);
	mrtx_abort(txn);
	assert_int_equal(head + n1, n0);
	/* the lines after the head are the snapshot's */
	{
		const char *p = before;

		for (size_t i = 0; i < head; i++) {
			assert_non_null(p = strchr(p, '\n'));
			p++;
		}
		assert_string_equal(rest, p);
	}
	after = snapshot_now(&n1);
	assert_true(strcmp(before, after) != 0); /* (the commit did land) */
	free(before);
	free(after);
	free(rest);
}

struct held_scan {
	char *d;
	size_t cells;
};

static void *scan_thread(void *arg)
{
	struct held_scan *h = arg;

	h->d = snapshot_now(&h->cells);
	return NULL;
}

/* Between a page and the read of the rows it cut (RADOS). */
static void test_commit_between_pages(void **state)
{
	struct held_scan h = { NULL, 0 };
	char go[512], *before;
	size_t n0;
	pthread_t th;

	(void)state;
	if (!tu_rados())
		skip(); /* (LMDB reads a scan from one view: no pages) */
	before = snapshot_now(&n0);
	tu_fp_hold("scan.after_page", 0, "scanpage", go, sizeof(go));
	assert_int_equal(pthread_create(&th, NULL, scan_thread, &h), 0);
	tu_fp_wait("scan.after_page", 1);
	interfere(2);
	tu_fp_release(go, th);
	assert_int_equal(h.cells, n0);
	assert_string_equal(h.d, before);
	free(h.d);
	free(before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan_rows_match_reads),
		cmocka_unit_test(test_commit_between_batches),
		cmocka_unit_test(test_commit_between_pages),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
