/*
 * test_radosupgrade.c - `mrtx upgrade` of a RADOS store of an older layout
 * format (storage/rados/rados_upgrade.c).
 *
 * Needs a cluster (MRTX_TEST_RADOS_CONF, set by tests/rados/rados_suite.sh);
 * skipped without one.  A store of format 1 (before splits: plain lock
 * values) and one of format 3 (before versions) are written the way those
 * formats were (the test hook store__rados_old_formats opens them as
 * such), with one-row and multi-row commits, a deleted cell, a deleted
 * row and qualifiers that need escaping.  What is checked:
 *   - mrtx_open refuses the old store and names `mrtx upgrade`;
 *   - a row locked by a transaction in flight (its writer died after
 *     prewrite) makes the upgrade refuse, changing nothing;
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
#include <sys/wait.h>
#include <unistd.h>

#include "recovery/recovery.h"
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

/* Write the fixture at whatever format the store has. */
static void fill(mrtx_db *db)
{
	static const char *const fams[] = { "f", "g" };
	mrtx_txn *txn;

	assert_int_equal(mrtx_create_table(db, "t", fams, 2), MRTX_OK);
	for (int i = 0; i < NROWS; i += 100) {
		assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
		for (int j = i; j < i + 100; j++) {
			char r[16], v[16];

			rowname(r, j);
			snprintf(v, sizeof(v), "v%d", j);
			assert_int_equal(mrtx_put(txn, "t", B(r), "f", B("v"), B(v)), MRTX_OK);
		}
		assert_int_equal(mrtx_commit(txn), MRTX_OK);
	}
	/* one-row commits: an overwrite, a deleted cell, a deleted row, a
	 * second family with an odd qualifier */
	assert_int_equal(tu_put_str(db, "t", "r000", "f:v", "new0"), MRTX_OK);
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	assert_int_equal(mrtx_delete(txn, "t", B("r001"), "f", B("v")), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t", B("r001"), "g", MRTX_BYTES(oddq, sizeof(oddq)),
	                          B("odd")), MRTX_OK);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	assert_int_equal(mrtx_delete_row(txn, "t", B("r002")), MRTX_OK);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	/* wide rows: a batch ends at a row boundary past 1024 cells */
	assert_int_equal(tu_table(db, "w", "g", NULL), MRTX_OK);
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	for (int r = 0; r < WROWS; r++)
		for (int q = 0; q < WCELLS; q++) {
			char row[8], qual[8];

			snprintf(row, sizeof(row), "w%d", r);
			snprintf(qual, sizeof(qual), "q%03d", q);
			assert_int_equal(mrtx_put(txn, "w", B(row), "g", B(qual), B(qual)), MRTX_OK);
		}
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
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

/* A writer that dies after its prewrite: rows r010, r020 locked. */
static void die_after_prewrite(const char *addr)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		mrtx_db *c = tu_open(addr, NULL);
		mrtx_txn *txn;

		if (!c || mrtx_failpoints_set("commit.after_prewrite=exit"))
			_exit(3);
		if (mrtx_begin(c, &txn) || mrtx_put(txn, "t", B("r010"), "f", B("v"), B("x")) ||
		    mrtx_put(txn, "t", B("r020"), "f", B("v"), B("x")))
			_exit(4);
		mrtx_commit(txn);
		_exit(5);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 99);
}

static void upgrade_from(const char *fmt)
{
	char *addr = addr_new(fmt);
	mrtx_db *db = open_at(addr);
	mrtx_version v[4];
	mrtx_txn *txn;
	uint64_t cells = 0, cells2 = 0, snap, m;
	size_t n;
	int applied;

	/* an empty format-4 store made older by its format record: what the
	 * older release made, as its layout is the same while empty */
	assert_int_equal(rados_meta_cas(RS(mrtx__db_store(db)), "format", MRTX_BYTES("4", 1),
	                                MRTX_BYTES(fmt, 1), &applied), MRTX_OK);
	assert_true(applied);
	mrtx_close(db);
	assert_int_equal(mrtx_open(&db, addr, NULL), MRTX_ENOTSTORE);
	assert_non_null(strstr(mrtx_errmsg(), "mrtx upgrade"));

	atomic_store(&store__rados_old_formats, 1);
	db = open_at(addr);
	assert_int_equal(format_of(db), fmt[0]);
	assert_false(store_has(mrtx__db_store(db), STORE_CAP_VERSIONS));
	fill(db);
	expect_rows(db, "old format");
	mrtx_close(db);
	die_after_prewrite(addr);

	/* in flight: refused, nothing changed */
	atomic_store(&store__rados_old_formats, 0);
	assert_int_equal(mrtx_upgrade(addr, &cells), MRTX_ELOCKED);
	assert_non_null(strstr(mrtx_errmsg(), "mrtx recover"));
	atomic_store(&store__rados_old_formats, 1);
	db = open_at(addr);
	assert_int_equal(format_of(db), fmt[0]);
	{
		recover_opts ro = { 0, 1, 0 };
		recover_stats st;

		assert_int_equal(recover_sweep(mrtx__db_store(db), &ro, &st, NULL, NULL), 0);
	}
	mrtx_close(db);
	atomic_store(&store__rados_old_formats, 0);

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
