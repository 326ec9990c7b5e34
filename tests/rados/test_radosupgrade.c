/*
 * test_radosupgrade.c - `mrtx upgrade` of a RADOS store of an older layout
 * format (storage/rados/rados_upgrade.c).
 *
 * Needs a cluster (MRTX_TEST_RADOS_CONF, set by tests/rados/rados_suite.sh);
 * skipped without one.  A store of format 1 (before splits: plain lock
 * values) and one of format 3 (before versions) are written key by key the
 * way those formats laid rows out (this mrtx opens neither: only the
 * upgrade reads them), with rows of several commits, a deleted cell, a
 * deleted row and qualifiers that need escaping.  What is checked:
 *   - mrtx_open refuses the old store and names `mrtx upgrade`;
 *   - a row locked by a transaction in flight (a prewritten primary and
 *     its secondary) makes the upgrade refuse, changing nothing;
 *   - an upgrade cut short after a batch (failpoint upgrade.after_batch)
 *     leaves a store mrtx_open refuses as interrupted, and the next run
 *     finishes it;
 *   - then every value reads as it was (gets, scans both ways), each cell
 *     is one version at its row's commit, a snapshot below the upgrade
 *     says MRTX_ESNAPSHOT, new writes add versions, no lock is left, the
 *     tablet splits (no key of the upgrade is left behind), collection
 *     runs, and a second upgrade has nothing to do.
 */
#include "testutil.h"
#include "storage/store_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lockcf/lock.h"
#include "storage/rados/rados_int.h"
#include "storage/rados/rados_store.h"
#include "storage/store.h"
#include "txn/admin_test.h"

#define B(s) MRTX_BYTES(s, strlen(s))
#define NROWS 300
#define WROWS 3
#define WCELLS 600

static const char *conf;

static char *addr_new(const char *tag)
{
	static unsigned long n;
	char *p;

	if (asprintf(&p, "rados://mrtx/upgrade-%s-%d-%lu-%08x?conf=%s&split_rows=0", tag,
	             (int)getpid(), ++n, (unsigned)rand(), conf) < 0)
		return NULL;
	return p;
}

static mrtx_db *open_at(const char *addr)
{
	mrtx_db *db = tu_open(addr, NULL);

	if (!db)
		fail_msg("open %s: %s", addr, mrtx_errmsg());
	return db;
}

static char format_of(mrtx_db *db)
{
	static const char *const keys[1] = { "format" };
	mrtx_arena ar;
	mrtx_bytes v;
	char f;

	arena_init(&ar);
	assert_int_equal(rados_meta_read(RS(mrtx__db_store(db)), keys, 1, &ar, &v), MRTX_OK);
	assert_int_equal(v.size, 1);
	f = *(const char *)v.data;
	arena_free(&ar);
	return f;
}

static void rowname(char *buf, int i)
{
	snprintf(buf, 16, "r%03d", i);
}

/* A qualifier with bytes rqual and rkey escape differently. */
static const uint8_t oddq[] = { 'q', 0x00, 0x01, 0xFE, 0xFF, 0x02 };

/* ---- a store of an older format, as such a release wrote it ---- */

/* The sets of one compound write of a tablet, kept in an arena. */
typedef struct oldw {
	rstore *rs;
	char fmt;          /* '1' (plain lock values) or '3' (after the order key) */
	rkv *sets;
	size_t n, cap;
	mrtx_arena *a;
} oldw;

static void oldw_set(oldw *w, mrtx_bytes k, mrtx_bytes v)
{
	if (w->n == w->cap) {
		rkv *ns = arena_alloc(w->a, (w->cap * 2 + 64) * sizeof(*ns));

		assert_non_null(ns);
		if (w->n)
			memcpy(ns, w->sets, w->n * sizeof(*ns));
		w->sets = ns;
		w->cap = w->cap * 2 + 64;
	}
	w->sets[w->n++] = (rkv){ k, v };
}

/* A lock record as stored at the old format: the record alone (1), or
 * after its order key (3). */
static mrtx_bytes old_value(oldw *w, mrtx_bytes rec)
{
	uint8_t *v;

	if (w->fmt != '3')
		return rec;
	v = arena_alloc(w->a, STORE_ORDER_SIZE + rec.size);
	assert_non_null(v);
	lock_order_key(rec.data, rec.size, v);
	memcpy(v + STORE_ORDER_SIZE, rec.data, rec.size);
	return MRTX_BYTES(v, STORE_ORDER_SIZE + rec.size);
}

/* A STABLE lock record of the store, committed at ts. */
static mrtx_bytes stable_rec(oldw *w, uint64_t ts)
{
	lock_rec r;
	mrtx_bytes enc;

	memset(&r, 0, sizeof(r));
	r.state = LOCK_STABLE;
	memcpy(r.tag, w->rs->id, LOCK_TAG_SIZE);
	for (size_t i = 0; i < LOCK_TXNID_SIZE; i++)
		r.txn[i] = (uint8_t)rand();
	r.commit_ts = ts;
	assert_int_equal(lock_encode(&r, w->a, &enc), MRTX_OK);
	return enc;
}

static mrtx_bytes key_of(oldw *w, size_t (*build)(uint8_t *, mrtx_bytes), mrtx_bytes row)
{
	uint8_t *k = arena_alloc(w->a, RCELL_MAX);

	assert_non_null(k);
	return MRTX_BYTES(k, build(k, row));
}

/* A row committed at ts: its lock (the record alone, or after its order
 * key) and its descending-order marker. */
static void old_row(oldw *w, const char *row, uint64_t ts)
{
	oldw_set(w, key_of(w, rados_lock_key, B(row)), old_value(w, stable_rec(w, ts)));
	oldw_set(w, key_of(w, rados_desc_key, B(row)), MRTX_BYTES("", 0));
}

/* A cell as the old formats keyed it: 0x03 . rkey(row) . fid+1 . rqual(q),
 * one version, its value alone. */
static void old_cell(oldw *w, const char *row, uint8_t fid, mrtx_bytes q, const char *v)
{
	uint8_t *k = arena_alloc(w->a, RCELL_MAX);
	size_t n;

	assert_non_null(k);
	n = rados_cell_prefix(k, B(row));
	k[n++] = (uint8_t)(fid + 1);
	n += rqual_put(k + n, q.data, q.size);
	oldw_set(w, MRTX_BYTES(k, n), MRTX_BYTES(arena_dup(w->a, v, strlen(v)), strlen(v)));
}

/* The table's (single) tablet object. */
static const char *tablet_of(rstore *rs, const char *table)
{
	const store_table *t;

	assert_int_equal(store_table_find((store *)rs, table, &t), MRTX_OK);
	assert_int_equal(rados_map(t)->n, 1);
	return rados_map(t)->t[0].oid;
}

static void old_write(oldw *w, const char *table)
{
	rwrite wr;

	memset(&wr, 0, sizeof(wr));
	wr.oid = tablet_of(w->rs, table);
	wr.create = 1;
	wr.sets = w->sets;
	wr.nsets = w->n;
	assert_int_equal(rconn_write(w->rs->conn, &wr, 1), MRTX_OK);
	assert_int_equal(wr.result, 0);
	w->n = 0;
}

/* The upgrade's own open of the store at addr (any format): its format. */
static store *open_any(const char *addr, char *format)
{
	store_opts so = { .durability = MRTX_SYNC, .lock_order = lock_order_key };
	store *st;

	assert_int_equal(rados_store_open_any(&st, addr, &so, 1, format), MRTX_OK);
	return st;
}

/* A writer of the store at addr, its keys and values in a. */
static void oldw_open(oldw *w, const char *addr, mrtx_arena *a)
{
	char fmt;

	memset(w, 0, sizeof(*w));
	arena_init(a);
	w->rs = RS(open_any(addr, &fmt));
	w->fmt = fmt;
	w->a = a;
}

static void oldw_close(oldw *w)
{
	rados_store_close((store *)w->rs);
	arena_free(w->a);
}

/*
 * The fixture, at the store's old format: what these commits left there
 * (rows r000..r299 in three commits, r000 overwritten, r001's cell deleted
 * and a second family's cell with an odd qualifier, r002 deleted; three
 * wide rows of WCELLS cells in one commit, past 1024 cells a row batch).
 */
static void fill_old(const char *addr)
{
	uint64_t ts = mrtx__now_us();
	mrtx_arena a;
	oldw w;

	oldw_open(&w, addr, &a);
	for (int i = 0; i < NROWS; i++) {
		char r[16], v[16];

		rowname(r, i);
		snprintf(v, sizeof(v), "v%d", i);
		if (i == 0) { /* overwritten by a later one-row commit */
			old_row(&w, r, ts + 10);
			old_cell(&w, r, 0, B("v"), "new0");
		} else if (i == 1) { /* its cell deleted, another family's put */
			old_row(&w, r, ts + 11);
			old_cell(&w, r, 1, MRTX_BYTES(oddq, sizeof(oddq)), "odd");
		} else if (i == 2) { /* deleted: its lock alone */
			old_row(&w, r, ts + 12);
		} else {
			old_row(&w, r, ts + 1 + (uint64_t)i / 100);
			old_cell(&w, r, 0, B("v"), v);
		}
	}
	old_write(&w, "t");
	for (int r = 0; r < WROWS; r++) {
		char row[8];

		snprintf(row, sizeof(row), "w%d", r);
		old_row(&w, row, ts + 20);
		for (int q = 0; q < WCELLS; q++) {
			char qual[8];

			snprintf(qual, sizeof(qual), "q%03d", q);
			old_cell(&w, row, 0, B(qual), qual);
		}
	}
	old_write(&w, "w");
	oldw_close(&w);
}

/*
 * A transaction in flight, as a writer that died after its prewrite
 * leaves it: r010 (primary) and r020 (its secondary) PREWRITTEN (on = 1);
 * on = 0 puts back the STABLE locks they had (what recovery's roll-back
 * does), saved in keep.
 */
static void in_flight(const char *addr, int on, mrtx_bytes keep[2], mrtx_arena *ka)
{
	static const char *const rows[2] = { "r010", "r020" };
	lock_ref sec = { { "t", 1 }, { "r020", 4 } };
	mrtx_arena a;
	oldw w;

	oldw_open(&w, addr, &a);
	for (int i = 0; i < 2; i++) {
		mrtx_bytes k = key_of(&w, rados_lock_key, B(rows[i]));

		if (on) {
			mrtx_bytes have = MRTX_BYTES(k.data, k.size), enc;
			rread rd;
			lock_rec r;

			memset(&rd, 0, sizeof(rd));
			rd.oid = tablet_of(w.rs, "t");
			rd.keys = &have;
			rd.nkeys = 1;
			assert_int_equal(rconn_read(w.rs->conn, &rd, 1, ka), MRTX_OK);
			assert_int_equal(rd.nkvs, 1);
			keep[i] = rd.kvs[0].value;
			memset(&r, 0, sizeof(r));
			r.state = LOCK_PREWRITTEN;
			memcpy(r.tag, w.rs->id, LOCK_TAG_SIZE);
			memset(r.txn, 0x5a, LOCK_TXNID_SIZE);
			r.commit_ts = mrtx__now_us();
			r.expiry_ms = mrtx__now_ms() + 3600 * 1000;
			r.owner.pid = (uint32_t)getpid();
			if (i) {
				r.flags = LOCK_F_SECONDARY;
				r.primary = (lock_ref){ { "t", 1 }, { "r010", 4 } };
			} else {
				r.secondaries = &sec;
				r.nsecondaries = 1;
			}
			assert_int_equal(lock_encode(&r, &a, &enc), MRTX_OK);
			oldw_set(&w, k, old_value(&w, enc));
		} else {
			oldw_set(&w, k, keep[i]);
		}
	}
	old_write(&w, "t");
	oldw_close(&w);
}

/* The wide rows, whole. */
static void expect_wide(mrtx_db *db)
{
	mrtx_scan_spec sp = { 0 };
	mrtx_scanner *sc;
	mrtx_txn *txn;
	mrtx_cell c;
	int n = 0, rc;

	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	sp.table = "w";
	assert_int_equal(mrtx_scan_open(txn, &sp, &sc), MRTX_OK);
	while ((rc = mrtx_scan_next(sc, &c)) == MRTX_OK) {
		char want[8];

		snprintf(want, sizeof(want), "q%03d", n % WCELLS);
		assert_true(c.value.size == 4 && memcmp(c.value.data, want, 4) == 0);
		n++;
	}
	mrtx_scan_close(sc);
	assert_int_equal(rc, MRTX_NOTFOUND);
	assert_int_equal(n, WROWS * WCELLS);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
}

/* Every row's value, by gets and by scans both ways. */
static void expect_rows(mrtx_db *db, const char *what)
{
	mrtx_txn *txn;
	mrtx_bytes got;

	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	for (int i = 0; i < NROWS; i++) {
		char r[16], v[16];
		int rc;

		rowname(r, i);
		snprintf(v, sizeof(v), i == 0 ? "new0" : "v%d", i);
		rc = mrtx_get(txn, "t", B(r), "f", B("v"), &got);
		if (i == 1 || i == 2) {
			if (rc != MRTX_NOTFOUND)
				fail_msg("%s: %s: rc %s, want NOTFOUND", what, r, mrtx_strerror(rc));
			continue;
		}
		if (rc != MRTX_OK || got.size != strlen(v) || memcmp(got.data, v, got.size))
			fail_msg("%s: %s: rc %s (%s)", what, r, mrtx_strerror(rc), mrtx_errmsg());
	}
	assert_int_equal(mrtx_get(txn, "t", B("r001"), "g", MRTX_BYTES(oddq, sizeof(oddq)), &got),
	                 MRTX_OK);
	assert_true(got.size == 3 && memcmp(got.data, "odd", 3) == 0);
	for (int rev = 0; rev < 2; rev++) {
		mrtx_scan_spec sp = { 0 };
		mrtx_scanner *sc;
		mrtx_cell c;
		int n = 0, rc;

		sp.table = "t";
		sp.reverse = rev;
		assert_int_equal(mrtx_scan_open(txn, &sp, &sc), MRTX_OK);
		while ((rc = mrtx_scan_next(sc, &c)) == MRTX_OK) {
			if (c.row.size == 4 && memcmp(c.row.data, "r002", 4) == 0)
				fail_msg("%s: the deleted row r002 scans", what);
			n++;
		}
		mrtx_scan_close(sc);
		if (rc != MRTX_NOTFOUND || n != NROWS - 1) /* r001: g only; r002: gone */
			fail_msg("%s: %s scan: %d cells, rc %s", what, rev ? "reverse" : "forward", n,
			         mrtx_strerror(rc));
	}
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
}

static void upgrade_from(const char *fmt)
{
	char *addr = addr_new(fmt);
	mrtx_db *db = open_at(addr);
	mrtx_version v[4];
	mrtx_txn *txn;
	uint64_t cells = 0, cells2 = 0, snap, m;
	static const char *const fams[] = { "f", "g" };
	mrtx_bytes keep[2];
	mrtx_arena ka;
	size_t n;
	int applied;
	char was;

	/* an empty format-4 store with its tables, made older by its format
	 * record (what the older release made, as its layout is the same while
	 * empty), then its rows as that format laid them out */
	assert_int_equal(mrtx_create_table(db, "t", fams, 2), MRTX_OK);
	assert_int_equal(tu_table(db, "w", "g", NULL), MRTX_OK);
	assert_int_equal(rados_meta_cas(RS(mrtx__db_store(db)), "format", MRTX_BYTES("4", 1),
	                                MRTX_BYTES(fmt, 1), &applied), MRTX_OK);
	assert_true(applied);
	mrtx_close(db);
	assert_int_equal(mrtx_open(&db, addr, NULL), MRTX_ENOTSTORE);
	assert_non_null(strstr(mrtx_errmsg(), "mrtx upgrade"));
	fill_old(addr);

	/* in flight: refused, nothing changed */
	arena_init(&ka);
	in_flight(addr, 1, keep, &ka);
	assert_int_equal(mrtx_upgrade(addr, &cells), MRTX_ELOCKED);
	assert_non_null(strstr(mrtx_errmsg(), "mrtx recover"));
	store_close(open_any(addr, &was));
	assert_int_equal(was, fmt[0]);
	in_flight(addr, 0, keep, &ka);
	arena_free(&ka);

	/* cut short after its first batch; the open says so; resumed */
	assert_int_equal(mrtx_failpoints_set("upgrade.after_batch=error@1"), MRTX_OK);
	assert_int_equal(mrtx_upgrade(addr, &cells), MRTX_ESTORE);
	assert_int_equal(mrtx_failpoints_set(""), MRTX_OK);
	assert_int_equal(mrtx_open(&db, addr, NULL), MRTX_ENOTSTORE);
	assert_non_null(strstr(mrtx_errmsg(), "interrupted"));
	assert_int_equal(mrtx_upgrade(addr, &cells), MRTX_OK);
	/* (the first run converted some) */
	assert_true(cells > 0 && cells < NROWS + WROWS * WCELLS);

	db = open_at(addr);
	assert_int_equal(format_of(db), '4');
	assert_true(store_has(mrtx__db_store(db), STORE_CAP_VERSIONS));
	expect_rows(db, "upgraded");
	expect_wide(db);
	/* one version at its commit; below the upgrade: not known */
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	assert_int_equal(mrtx_get_versions(txn, "t", B("r005"), "f", B("v"), v, 4, &n), MRTX_OK);
	assert_int_equal(n, 1);
	snap = mrtx_txn_snapshot_ts(txn);
	assert_true(v[0].ts > 0 && v[0].ts < snap);
	mrtx_abort(txn);
	/* (g/safe is the upgrade's timestamp: mrtx_begin_at refuses below it,
	 * and at it reads the converted versions) */
	assert_int_equal(mrtx_begin_at(db, v[0].ts, &txn), MRTX_ESNAPSHOT);
	{
		static const char *const keys[1] = { STORE_GC_SAFE_KEY };
		mrtx_arena ar;
		mrtx_bytes sv;
		mrtx_bytes got;

		arena_init(&ar);
		assert_int_equal(rados_meta_read(RS(mrtx__db_store(db)), keys, 1, &ar, &sv), MRTX_OK);
		assert_int_equal(sv.size, 8);
		m = mrtx__le64_get(sv.data);
		arena_free(&ar);
		assert_true(m > v[0].ts && m < snap);
		assert_int_equal(mrtx_begin_at(db, m, &txn), MRTX_OK);
		assert_int_equal(mrtx_get(txn, "t", B("r005"), "f", B("v"), &got), MRTX_OK);
		assert_true(got.size == 2 && memcmp(got.data, "v5", 2) == 0);
		mrtx_abort(txn);
	}
	/* a new write adds a version: a snapshot taken before it still reads
	 * the converted one */
	{
		mrtx_txn *old;
		mrtx_bytes got;

		assert_int_equal(mrtx_begin(db, &old), MRTX_OK);
		assert_int_equal(mrtx_get(old, "t", B("r005"), "f", B("v"), &got), MRTX_OK);
		assert_int_equal(tu_put_str(db, "t", "r005", "f:v", "w5"), MRTX_OK);
		assert_int_equal(mrtx_get(old, "t", B("r005"), "f", B("v"), &got), MRTX_OK);
		assert_true(got.size == 2 && memcmp(got.data, "v5", 2) == 0);
		mrtx_abort(old);
	}
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	assert_int_equal(mrtx_get_versions(txn, "t", B("r005"), "f", B("v"), v, 4, &n), MRTX_OK);
	assert_true(n == 1 && v[0].value.size == 2 && memcmp(v[0].value.data, "w5", 2) == 0);
	mrtx_abort(txn);
	assert_int_equal(tu_put_str(db, "t", "r005", "f:v", "v5"), MRTX_OK);
	/* the prewritten rows were settled: no lock left, r010 as before */
	assert_int_equal(tu_open_locks(db), 0);
	/* a split meets no key it does not know; collection runs */
	{
		const store_table *t;

		assert_int_equal(store_table_find(mrtx__db_store(db), "t", &t), MRTX_OK);
		assert_int_equal(rados_store_split(mrtx__db_store(db), t, B("r150")), MRTX_OK);
	}
	expect_rows(db, "upgraded, split");
	assert_int_equal(mrtx_gc(db, 0, NULL), MRTX_OK);
	expect_rows(db, "upgraded, collected");
	mrtx_close(db);
	assert_int_equal(mrtx_upgrade(addr, &cells2), MRTX_OK);
	assert_int_equal(cells2, 0);
	free(addr);
}

static void test_upgrade_format3(void **state)
{
	(void)state;
	upgrade_from("3");
}

static void test_upgrade_format1(void **state)
{
	(void)state;
	upgrade_from("1");
}

/* An address with no store: the upgrade makes none. */
static void test_upgrade_nothing(void **state)
{
	char *addr = addr_new("none");
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db;

	(void)state;
	assert_int_equal(mrtx_upgrade(addr, NULL), MRTX_ENOTSTORE);
	o.read_only = 1; /* (still nothing there) */
	if (mrtx_open(&db, addr, &o) != MRTX_ENOTSTORE)
		fail_msg("read-only open: %s", mrtx_errmsg());
	free(addr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_upgrade_format3),
		cmocka_unit_test(test_upgrade_format1),
		cmocka_unit_test(test_upgrade_nothing),
	};

	conf = getenv("MRTX_TEST_RADOS_CONF");
	if (!conf || !*conf) {
		print_message("MRTX_TEST_RADOS_CONF unset: skipped\n");
		return 77;
	}
	srand((unsigned)getpid());
	return cmocka_run_group_tests(tests, NULL, NULL);
}
