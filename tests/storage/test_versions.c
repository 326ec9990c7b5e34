/*
 * test_versions.c - cell versions (DESIGN §9, storage/lmdb/lmdb_cell.c):
 * family policies (mrtx_create_table2), mrtx_get_versions, reads at a past
 * snapshot (mrtx_begin_at), what a policy drops and how such reads say so
 * (MRTX_ESNAPSHOT), TTLs, deletes and scans.  On RADOS (one version per
 * cell) the calls say MRTX_ENOTSUP.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include <lmdb.h>
#include <signal.h>
#include <sys/wait.h>

#include "testutil.h"
#include "storage/store_test.h"
#include "storage/keyenc.h"
#include "recovery/check.h"
#include "recovery/recovery.h"
#include "storage/store.h"
#include "storage/versions.h"
#include "txn/admin_test.h"
#include "storage/lmdb/lmdb_seal.h"

#define B(s) MRTX_BYTES((s), strlen(s))

static const mrtx_family_spec FAMS[] = {
	{ "h", 3, 0, 0 },      /* three versions */
	{ "one", 0, 0, 0 },    /* one (0 = 1) */
	{ "ttl", 5, 1, 300 },  /* five, older than 300 ms dropped but the newest */
	{ "ttl0", 5, 0, 300 }, /* the same without a minimum: cells expire */
};
#define NFAMS (sizeof(FAMS) / sizeof(FAMS[0]))

/* Put fam:q = val in row r of t in its own transaction; its commit ts. */
static uint64_t put_ts(mrtx_db *db, const char *row, const char *fam, const char *val)
{
	mrtx_txn *txn;
	uint64_t ts = 0;

	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	if (val)
		assert_int_equal(mrtx_put(txn, "t", B(row), fam, B("q"), B(val)), MRTX_OK);
	else
		assert_int_equal(mrtx_delete(txn, "t", B(row), fam, B("q")), MRTX_OK);
	assert_int_equal(mrtx_commit_ts(txn, &ts), MRTX_OK);
	assert_true(ts > 0);
	return ts;
}

/* The versions of fam:q in row at ts (0: now) as "v@i,v@i" with i the
 * index of each version's ts in tss (or '?'), or the error's name. */
static void versions(mrtx_db *db, uint64_t at, const char *row, const char *fam,
                     const uint64_t *tss, size_t nts, char *out, size_t cap)
{
	mrtx_txn *txn;
	mrtx_version v[8];
	size_t n = 99;
	int rc;

	assert_int_equal(at ? mrtx_begin_at(db, at, &txn) : mrtx_begin(db, &txn), MRTX_OK);
	rc = mrtx_get_versions(txn, "t", B(row), fam, B("q"), v, 8, &n);
	out[0] = 0;
	if (rc) {
		assert_int_equal(n, 0);
		snprintf(out, cap, "%s", rc == MRTX_NOTFOUND ? "none" : rc == MRTX_ESNAPSHOT ?
		                          "gone" : mrtx_strerror(rc));
	}
	for (size_t i = 0; i < n; i++) {
		size_t k = 0, len = strlen(out);

		while (k < nts && tss[k] != v[i].ts)
			k++;
		snprintf(out + len, cap - len, "%s%.*s@%c", i ? "," : "", (int)v[i].value.size,
		         (const char *)v[i].value.data, k < nts ? (char)('0' + k) : '?');
	}
	mrtx_abort(txn);
}

#define EXPECT(db, at, row, fam, tss, want)                                   \
	do {                                                                  \
		char got_[256];                                               \
		versions(db, at, row, fam, tss, sizeof(tss) / sizeof(tss[0]), \
		         got_, sizeof(got_));                                 \
		if (strcmp(got_, want) != 0)                                  \
			fail_msg("%s at %d: got %s, want %s", fam, __LINE__,  \
			         got_, want);                                 \
	} while (0)

static mrtx_db *fresh(char **path)
{
	mrtx_db *db = tu_open_fresh("versions", path, NULL);

	assert_non_null(db);
	return db;
}

/* Checks I19 (DESIGN §10). */
static void test_policies_and_past_snapshots(void **state)
{
	char *path;
	mrtx_db *db = fresh(&path);
	uint64_t ts[6], o[2], late;
	mrtx_txn *txn;
	mrtx_bytes v;

	(void)state;
	assert_int_equal(mrtx_create_table2(db, "t", FAMS, NFAMS), MRTX_OK);
	for (int i = 0; i < 4; i++) {
		char val[8];

		snprintf(val, sizeof(val), "v%d", i);
		ts[i] = put_ts(db, "r", "h", val);
		if (i)
			assert_true(ts[i] > ts[i - 1]);
	}
	/* three versions kept, newest first, each at its commit's timestamp */
	EXPECT(db, 0, "r", "h", ts, "v3@3,v2@2,v1@1");
	EXPECT(db, ts[3], "r", "h", ts, "v3@3,v2@2,v1@1");
	EXPECT(db, ts[2], "r", "h", ts, "v2@2,v1@1");
	EXPECT(db, ts[1], "r", "h", ts, "v1@1");
	/* v0 was dropped: the cell's state then is unknown, and said so */
	EXPECT(db, ts[0], "r", "h", ts, "gone");
	/* before the cell existed at all: nothing, not an error -- but on LMDB
	 * the oldest kept version says older ones were dropped (RADOS drops
	 * none of a family that keeps versions yet, and knows) */
	EXPECT(db, ts[0] - 1, "r", "h", ts, tu_rados() ? "none" : "gone");
	/* mrtx_get at a snapshot reads that version */
	assert_int_equal(mrtx_begin_at(db, ts[2], &txn), MRTX_OK);
	assert_int_equal(mrtx_txn_snapshot_ts(txn), ts[2]);
	assert_int_equal(mrtx_get(txn, "t", B("r"), "h", B("q"), &v), MRTX_OK);
	assert_memory_equal(v.data, "v2", 2);
	/* read-only */
	assert_int_equal(mrtx_put(txn, "t", B("r"), "h", B("q"), B("x")), MRTX_EINVAL);
	assert_int_equal(mrtx_delete_row(txn, "t", B("r")), MRTX_EINVAL);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);

	/* a delete: gone now, its older versions still there for earlier
	 * snapshots (the tombstone counts as one of the three) */
	ts[4] = put_ts(db, "r", "h", NULL);
	EXPECT(db, 0, "r", "h", ts, "none");
	EXPECT(db, ts[4], "r", "h", ts, "none");
	EXPECT(db, ts[3], "r", "h", ts, "v3@3,v2@2");
	EXPECT(db, ts[1], "r", "h", ts, "gone");
	/* written again */
	ts[5] = put_ts(db, "r", "h", "v5");
	EXPECT(db, 0, "r", "h", ts, "v5@5");
	EXPECT(db, ts[3], "r", "h", ts, "v3@3");

	/* one version: an overwrite drops the old one */
	o[0] = put_ts(db, "s", "one", "a");
	o[1] = put_ts(db, "s", "one", "b");
	EXPECT(db, 0, "s", "one", o, "b@1");
	EXPECT(db, o[1], "s", "one", o, "b@1");
	EXPECT(db, o[0], "s", "one", o, "gone");
	/* a cell never overwritten reads at any snapshot since its write, and
	 * as absent before it */
	late = put_ts(db, "u", "one", "c");
	EXPECT(db, 0, "u", "one", o, "c@?");
	EXPECT(db, late - 1, "u", "one", o, "none");

	/* a snapshot past the newest commit is refused, as is ts 0 */
	assert_int_equal(mrtx_begin_at(db, late + 3600ull * 1000000u, &txn), MRTX_EINVAL);
	assert_int_equal(mrtx_begin_at(db, 0, &txn), MRTX_EINVAL);

	/* a scan at a snapshot: rows as they were */
	{
		mrtx_scan_spec sp = { "t", { NULL, 0 }, { NULL, 0 }, "one", { NULL, 0 },
		                      { NULL, 0 }, 0, 0 };
		mrtx_scanner *s;
		mrtx_cell c;
		int n = 0, rc;

		assert_int_equal(mrtx_begin_at(db, late - 1, &txn), MRTX_OK);
		assert_int_equal(mrtx_scan_open(txn, &sp, &s), MRTX_OK);
		/* row s: only "b" at o[1] <= late - 1; row u did not exist */
		while ((rc = mrtx_scan_next(s, &c)) == MRTX_OK) {
			assert_memory_equal(c.row.data, "s", 1);
			assert_memory_equal(c.value.data, "b", 1);
			n++;
		}
		assert_int_equal(rc, MRTX_NOTFOUND);
		assert_int_equal(n, 1);
		mrtx_scan_close(s);
		mrtx_abort(txn);
	}

	/* a row deleted and a cell of it put in one transaction: the put is the
	 * version at that timestamp (no deletion beside it), the older ones
	 * stay (the policy keeps three) */
	{
		uint64_t d[3];

		d[0] = put_ts(db, "dr", "h", "d0");
		d[1] = put_ts(db, "dr", "h", "d1");
		assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
		assert_int_equal(mrtx_delete_row(txn, "t", B("dr")), MRTX_OK);
		assert_int_equal(mrtx_put(txn, "t", B("dr"), "h", B("q"), B("d2")), MRTX_OK);
		assert_int_equal(mrtx_commit_ts(txn, &d[2]), MRTX_OK);
		EXPECT(db, 0, "dr", "h", d, "d2@2,d1@1,d0@0");
		EXPECT(db, d[1], "dr", "h", d, "d1@1,d0@0");
		/* and in a one-version family: the put, the old value gone */
		d[0] = put_ts(db, "dr1", "one", "e0");
		assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
		assert_int_equal(mrtx_delete_row(txn, "t", B("dr1")), MRTX_OK);
		assert_int_equal(mrtx_put(txn, "t", B("dr1"), "one", B("q"), B("e1")), MRTX_OK);
		assert_int_equal(mrtx_commit_ts(txn, &d[1]), MRTX_OK);
		EXPECT(db, 0, "dr1", "one", d, "e1@1");
		EXPECT(db, d[0], "dr1", "one", d, "gone");
	}

	/* policies persist; creating again is idempotent only with the same */
	mrtx_close(db);
	db = tu_open(path, NULL);
	assert_non_null(db);
	EXPECT(db, ts[3], "r", "h", ts, "v3@3");
	assert_int_equal(mrtx_create_table2(db, "t", FAMS, NFAMS), MRTX_OK);
	{
		mrtx_family_spec other[NFAMS];

		memcpy(other, FAMS, sizeof(other));
		other[0].max_versions = 4;
		assert_int_equal(mrtx_create_table2(db, "t", other, NFAMS), MRTX_EEXIST);
		other[0].max_versions = 1;
		other[0].min_versions = 2;
		assert_int_equal(mrtx_create_table2(db, "x", other, NFAMS), MRTX_EINVAL);
	}
	/* a table dropped and made again under the name has its own policies
	 * (RADOS drops no table) */
	if (tu_rados()) {
		mrtx_close(db);
		tu_rmrf(path);
		free(path);
		return;
	}
	assert_int_equal(mrtx_drop_table(db, "t"), MRTX_OK);
	{
		const char *f[] = { "h" };

		assert_int_equal(mrtx_create_table(db, "t", f, 1), MRTX_OK);
		(void)put_ts(db, "r", "h", "x1");
		o[0] = put_ts(db, "r", "h", "x2");
		EXPECT(db, 0, "r", "h", o, "x2@0");
	}
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* Stamps follow what a commit read: a two-phase commit that read a row
 * stamps above that row's commit, even when the row's writer ran with a
 * clock a second ahead; a past snapshot between the two sees the first
 * only.
 * Checks I14 (DESIGN §10). */
static void test_stamps_follow_reads(void **state)
{
	static const mrtx_family_spec fams[] = { { "h", 4, 0, 0 } };
	char *path;
	mrtx_db *db = fresh(&path);
	uint64_t a, b;
	mrtx_txn *txn;
	mrtx_bytes v;

	(void)state;
	assert_int_equal(mrtx_create_table2(db, "t", fams, 1), MRTX_OK);
	for (int i = 0; i < 20; i++) {
		char val[16];

		snprintf(val, sizeof(val), "a%d", i);
		/* x's writer runs on a host whose clock is a second ahead */
		atomic_store(&mrtx__clock_step_us, 1000000);
		a = put_ts(db, "x", "h", val);
		atomic_store(&mrtx__clock_step_us, 0);
		assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
		assert_int_equal(mrtx_get(txn, "t", B("x"), "h", B("q"), &v), MRTX_OK);
		assert_int_equal(mrtx_put(txn, "t", B("y"), "h", B("q"), B(val)), MRTX_OK);
		assert_int_equal(mrtx_put(txn, "t", B("z"), "h", B("q"), B(val)), MRTX_OK);
		assert_int_equal(mrtx_commit_ts(txn, &b), MRTX_OK);
		assert_true(b > a);
		/* at a: x written, y and z not yet (at this value) */
		assert_int_equal(mrtx_begin_at(db, a, &txn), MRTX_OK);
		assert_int_equal(mrtx_get(txn, "t", B("x"), "h", B("q"), &v), MRTX_OK);
		assert_true(v.size == strlen(val) && memcmp(v.data, val, v.size) == 0);
		if (mrtx_get(txn, "t", B("y"), "h", B("q"), &v) == MRTX_OK)
			assert_false(v.size == strlen(val) && memcmp(v.data, val, v.size) == 0);
		mrtx_abort(txn);
		assert_int_equal(mrtx_begin_at(db, b, &txn), MRTX_OK);
		assert_int_equal(mrtx_get(txn, "t", B("z"), "h", B("q"), &v), MRTX_OK);
		assert_true(v.size == strlen(val) && memcmp(v.data, val, v.size) == 0);
		mrtx_abort(txn);
	}
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

static void test_ttl(void **state)
{
	char *path;
	mrtx_db *db;
	uint64_t ts[3] = { 0 }, zt;

	(void)state;
	/* the wall clock frozen, then stepped past the TTL: the first check
	 * cannot come after the TTL however slowly the machine runs */
	atomic_store(&mrtx__clock_frozen_us, mrtx__now_us());
	db = fresh(&path);
	assert_int_equal(mrtx_create_table2(db, "t", FAMS, NFAMS), MRTX_OK);
	ts[0] = put_ts(db, "r", "ttl", "a");
	ts[1] = put_ts(db, "r", "ttl", "b");
	zt = put_ts(db, "r", "ttl0", "z");
	EXPECT(db, 0, "r", "ttl", ts, "b@1,a@0");
	atomic_fetch_add(&mrtx__clock_frozen_us, 400000ull);
	/* older than the TTL: only the newest, kept by min_versions */
	EXPECT(db, 0, "r", "ttl", ts, "b@1");
	{
		mrtx_txn *txn;
		mrtx_bytes v;

		assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
		assert_int_equal(mrtx_get(txn, "t", B("r"), "ttl", B("q"), &v), MRTX_OK);
		/* no minimum: the cell expired */
		assert_int_equal(mrtx_get(txn, "t", B("r"), "ttl0", B("q"), &v), MRTX_NOTFOUND);
		mrtx_abort(txn);
		/* and a read at a snapshot when it was alive cannot tell: not
		 * "absent" */
		assert_int_equal(mrtx_begin_at(db, zt, &txn), MRTX_OK);
		assert_int_equal(mrtx_get(txn, "t", B("r"), "ttl0", B("q"), &v), MRTX_ESNAPSHOT);
		mrtx_abort(txn);
		/* nor "a" at ts[0]: not the newest, past the TTL, dropped by the
		 * policy (min_versions keeps only the newest), whether or not
		 * anything removed it yet */
		assert_int_equal(mrtx_begin_at(db, ts[0], &txn), MRTX_OK);
		assert_int_equal(mrtx_get(txn, "t", B("r"), "ttl", B("q"), &v), MRTX_ESNAPSHOT);
		mrtx_abort(txn);
	}
	/* a write drops what expired (b is past the TTL and no longer the
	 * newest) */
	ts[2] = put_ts(db, "r", "ttl", "c");
	EXPECT(db, 0, "r", "ttl", ts, "c@2");
	EXPECT(db, ts[1], "r", "ttl", ts, "gone");
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* ---- mrtx upgrade ---- */

/*
 * Turn a format-4 store into the format-3 image the older mrtx wrote: cell
 * values without their 9-byte version header, no history, format 3, no
 * safe point.  With half set, the cells keep their
 * headers before the middle and the store is left as an upgrade
 * interrupted there leaves it (format "upgrading", the resume key at the
 * first cell not converted); half 2: as an earlier release's upgrade left
 * it when it stopped after its last batch, before its last write -- every
 * cell converted (version and GONE), the resume key still at the middle
 * cell, where that batch began.  extra:
 * one more raw cell key (with an 8-byte value), for keys format 4 refuses.
 */
/* Put the cell the cursor stands on (key kd[0..klen), value *v) back as
 * format 3 wrote it (without its version header) or, converted, as the
 * upgrade's header pass writes it (the header flagged GONE). */
static void rewrite_cell(MDB_cursor *cur, const uint8_t *kd, size_t klen, const MDB_val *v,
                         int converted)
{
	uint8_t key[600], val[256];
	size_t skip = converted ? 0 : 9;
	MDB_val k = { klen, key }, nv;

	assert_true(v->mv_size >= 9 && v->mv_size - skip <= sizeof(val) && klen <= sizeof(key));
	nv = (MDB_val){ v->mv_size - skip, val };
	memcpy(val, (const uint8_t *)v->mv_data + skip, nv.mv_size);
	if (converted)
		val[8] = CELL_GONE;
	memcpy(key, kd, klen);
	assert_int_equal(mdb_cursor_put(cur, &k, &nv, MDB_CURRENT), 0);
}

static void to_format3(const char *path, int half, const MDB_val *extra)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_dbi dbi;
	MDB_val k = { 1, "\1" }, v;
	uint32_t fmt = half ? 0x80000004u : 3;
	size_t ncells = 0, i = 0;
	int rc;

	tu_lmdb_unseal(path); /* (format 5: no seals) */
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_mapsize(env, 0), 0);
	assert_int_equal(mdb_env_open(env, path, 0, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
	assert_int_equal(mdb_cursor_open(txn, dbi, &cur), 0);
	for (int pass = 0; pass < 2; pass++) {
		k = (MDB_val){ 1, "\1" };
		for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;) {
			uint8_t row[600];
			size_t used, klen = k.mv_size;
			const uint8_t *kd = k.mv_data;

			assert_true(keyenc_get(row, kd + 2, klen - 2, &used) != (size_t)-1);
			used += 2;
			if (kd[used] == 0xFF && klen == used + 1) { /* a lock */
				rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
				continue;
			}
			if (kd[used] == 0xFF) { /* history: format 3 had none */
				if (pass == 0)
					assert_int_equal(mdb_cursor_del(cur, 0), 0);
				rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
				continue;
			}
			if (pass == 0) {
				ncells++;
				rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
				continue;
			}
			if (half && (i < ncells / 2 || (half == 2 && i > ncells / 2))) {
				/* converted before the "crash": kept (half 2: as the
				 * earlier release's last batch wrote it) */
				if (half == 2)
					rewrite_cell(cur, kd, klen, &v, 1);
				i++;
				rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
				continue;
			}
			if (half && i++ == ncells / 2) {
				MDB_val rk = { 8, "\0upgrade" };
				uint8_t kc[600];

				memcpy(kc, kd, klen);
				rk.mv_data = "\0upgrade";
				{
					MDB_val kv = { klen, kc };

					assert_int_equal(mdb_put(txn, dbi, &rk, &kv, 0), 0);
				}
				/* (the put moved the cursor: back to this cell) */
				k = (MDB_val){ klen, kc };
				assert_int_equal(mdb_cursor_get(cur, &k, &v, MDB_SET_KEY), 0);
				kd = k.mv_data;
			}
			/* (half 2: the middle cell was converted too) */
			rewrite_cell(cur, kd, klen, &v, half == 2);
			rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
		}
		assert_true(rc == 0 || rc == MDB_NOTFOUND);
	}
	mdb_cursor_close(cur);
	k = (MDB_val){ 7, "\0format" };
	v = (MDB_val){ 4, &fmt };
	assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
	k = (MDB_val){ 7, "\0g/safe" };
	(void)mdb_del(txn, dbi, &k, NULL);
	if (extra) {
		v = (MDB_val){ 8, "12345678" };
		assert_int_equal(mdb_put(txn, dbi, (MDB_val *)extra, &v, 0), 0);
	}
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

/*
 * The seal pass of `mrtx upgrade` (format 6: storage/lmdb/lmdb_seal.h),
 * cut short: the records before the middle sealed, the resume key on the
 * first one not, the format "sealing" -- as a crash after a batch leaves
 * it.  The store is refused, the upgrade seals the rest only, and every
 * row reads back (each read checks the seals of what it reads).
 */
static void test_upgrade_seal_resume(void **state)
{
	enum { ROWS = 40 };
	char *path, row[8], want[16], got[16];
	mrtx_db *db;
	uint64_t cells = 0;
	size_t n = 0, i = 0;
	MDB_env *env;
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_dbi dbi;
	MDB_val k = { 1, "\1" }, v;
	uint32_t fmt = 0x80000006u;
	size_t meta = 0;
	int rc;

	(void)state;
	if (tu_rados())
		skip();
	db = fresh(&path);
	assert_int_equal(mrtx_create_table2(db, "t", &FAMS[1], 1), MRTX_OK);
	for (int r = 0; r < ROWS; r++) {
		snprintf(row, sizeof(row), "r%02d", r);
		snprintf(want, sizeof(want), "v%02d", r);
		assert_int_equal(tu_put_str(db, "t", row, "one:q", want), MRTX_OK);
	}
	mrtx_close(db);
	tu_lmdb_unseal(path); /* (format 5) */
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_open(env, path, MDB_NOTLS, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
	assert_int_equal(mdb_cursor_open(txn, dbi, &cur), 0);
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	     rc == 0 && ((const uint8_t *)k.mv_data)[0] == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
		meta++; /* (the finish seals each) */
	k = (MDB_val){ 1, "\1" };
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
		n++;
	assert_int_equal(n, 2 * ROWS); /* a cell and a lock record per row */
	k = (MDB_val){ 1, "\1" };
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0 && i < n / 2;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT), i++) {
		uint8_t key[64], val[256];
		MDB_val kc = { k.mv_size, key }, vc = { v.mv_size, val };

		memcpy(key, k.mv_data, k.mv_size);
		memcpy(val, v.mv_data, v.mv_size);
		assert_int_equal(lmdb_cput(cur, &kc, &vc, MDB_CURRENT), 0); /* sealed */
		k = kc;
	}
	assert_int_equal(rc, 0);
	{
		uint8_t key[64];
		MDB_val rk = { 8, "\0upgrade" }, kc = { k.mv_size, key }, fk = { 7, "\0format" },
		        fv = { 4, &fmt };

		memcpy(key, k.mv_data, k.mv_size); /* the first record not sealed */
		mdb_cursor_close(cur);
		assert_int_equal(mdb_put(txn, dbi, &rk, &kc, 0), 0);
		assert_int_equal(mdb_put(txn, dbi, &fk, &fv, 0), 0);
	}
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);

	{
		mrtx_options o = MRTX_OPTIONS_INIT;
		mrtx_db *x = NULL;

		assert_int_equal(mrtx_open(&x, path, &o), MRTX_ENOTSTORE);
		assert_non_null(strstr(mrtx_errmsg(), "mrtx upgrade"));
	}
	assert_int_equal(mrtx_upgrade(path, &cells), MRTX_OK);
	assert_int_equal(cells, n - n / 2 + meta); /* the rest only, and the metadata */
	assert_non_null(db = tu_open(path, NULL));
	for (int r = 0; r < ROWS; r++) {
		snprintf(row, sizeof(row), "r%02d", r);
		snprintf(want, sizeof(want), "v%02d", r);
		assert_int_equal(tu_get_str(db, "t", row, "one:q", got, sizeof(got)), MRTX_OK);
		assert_string_equal(got, want);
	}
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* check_file's damage, counted; the first's words kept. */
typedef struct deep_found {
	unsigned long n;
	char first[256];
} deep_found;

static int deep_collect(const store_damage *d, void *payload)
{
	deep_found *f = payload;

	if (f->n++ == 0)
		snprintf(f->first, sizeof(f->first), "%s", d->what);
	return 0;
}

/* Move LMDB record from key `from` to key `to` (bytes as they are). */
static void raw_rename(const char *path, const char *from, size_t fn, const char *to, size_t tn)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = { fn, (void *)from }, v, nk = { tn, (void *)to };
	uint8_t buf[256];

	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_open(env, path, MDB_NOTLS, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
	assert_int_equal(mdb_get(txn, dbi, &k, &v), 0);
	assert_true(v.mv_size <= sizeof(buf));
	memcpy(buf, v.mv_data, v.mv_size);
	v.mv_data = buf;
	assert_int_equal(mdb_del(txn, dbi, &k, NULL), 0);
	assert_int_equal(mdb_put(txn, dbi, &nk, &v, 0), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

/* A fresh store (path into *path) with table t and two versions of r's
 * h:q, v1 then v2; its handle. */
static mrtx_db *two_versions(char **path)
{
	mrtx_db *db = fresh(path);

	assert_int_equal(mrtx_create_table2(db, "t", FAMS, NFAMS), MRTX_OK);
	(void)put_ts(db, "r", "h", "v1");
	(void)put_ts(db, "r", "h", "v2");
	return db;
}

/*
 * A store of format 6 (the data sealed, the metadata bare) is refused,
 * naming the upgrade, which seals its metadata in one transaction; a
 * second upgrade has nothing to do, and every row and policy reads back.
 */
static void test_upgrade_format6(void **state)
{
	char *path, got[16];
	mrtx_db *db;
	uint64_t cells = 0;

	(void)state;
	if (tu_rados())
		skip();
	db = two_versions(&path);
	mrtx_close(db);
	tu_lmdb_format6(path);
	{
		/* a format-6 store whose policy record's key was damaged (no
		 * seal to fail): the deep check names a policy record of no
		 * table, which the upgrade would seal as it is */
		store_file_stats fs;
		deep_found f;

		raw_rename(path, "\0p/t", 4, "\0p/s", 4);
		memset(&f, 0, sizeof(f));
		assert_int_equal(check_file(path, deep_collect, NULL, &f, &fs), MRTX_OK);
		assert_int_equal(f.n, 1);
		assert_non_null(strstr(f.first, "version policies of a table the store does not have"));
		raw_rename(path, "\0p/s", 4, "\0p/t", 4);
		memset(&f, 0, sizeof(f));
		assert_int_equal(check_file(path, deep_collect, NULL, &f, &fs), MRTX_OK);
		assert_int_equal(f.n, 0);
	}
	db = NULL;
	assert_int_equal(mrtx_open(&db, path, NULL), MRTX_ENOTSTORE);
	assert_non_null(strstr(mrtx_errmsg(), "format 6"));
	assert_non_null(strstr(mrtx_errmsg(), "mrtx upgrade"));
	assert_int_equal(mrtx_upgrade(path, &cells), MRTX_OK);
	assert_true(cells >= 5); /* format, store id, next table, t/t, p/t at least */
	assert_true(cells < 20); /* the metadata only */
	assert_int_equal(mrtx_upgrade(path, &cells), MRTX_OK);
	assert_int_equal(cells, 0);
	assert_non_null(db = tu_open(path, NULL));
	assert_int_equal(tu_get_str(db, "t", "r", "h:q", got, sizeof(got)), MRTX_OK);
	assert_string_equal(got, "v2");
	/* the policies read through their seals: the same table again is no
	 * change (other policies would be MRTX_EEXIST) */
	assert_int_equal(mrtx_create_table2(db, "t", FAMS, NFAMS), MRTX_OK);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* A format-7 store (metadata sealed, not counted) is refused at the open
 * with the upgrade named; the upgrade counts the metadata records in one
 * write, and from then on a metadata record lost whole is damage the open
 * names, where format 7 read it as never written. */
static void test_upgrade_format7(void **state)
{
	char *path, got[16];
	mrtx_db *db;
	uint64_t cells = 0;
	uint8_t pol[1024];
	size_t pn;

	(void)state;
	if (tu_rados())
		skip();
	db = two_versions(&path);
	assert_int_equal(mrtx_create_table2(db, "u", FAMS, NFAMS), MRTX_OK);
	mrtx_close(db);
	tu_lmdb_format7(path);
	{
		/* a damaged record of format 7 is refused, not tallied as sound */
		uint8_t pol0[1024];
		size_t n0 = tu_lmdb_get(path, "\0p/t", 4, pol0, sizeof(pol0));

		pol0[n0 - 1] ^= 1;
		tu_lmdb_put(path, "\0p/t", 4, pol0, n0, 0);
		assert_int_equal(mrtx_upgrade(path, &cells), MRTX_ECORRUPT);
		pol0[n0 - 1] ^= 1;
		tu_lmdb_put(path, "\0p/t", 4, pol0, n0, 0);
	}
	db = NULL;
	assert_int_equal(mrtx_open(&db, path, NULL), MRTX_ENOTSTORE);
	assert_non_null(strstr(mrtx_errmsg(), "format 7"));
	assert_non_null(strstr(mrtx_errmsg(), "mrtx upgrade"));
	assert_int_equal(mrtx_upgrade(path, &cells), MRTX_OK);
	assert_int_equal(cells, 1); /* the format record */
	assert_int_equal(mrtx_upgrade(path, &cells), MRTX_OK);
	assert_int_equal(cells, 0);
	assert_non_null(db = tu_open(path, NULL));
	assert_int_equal(tu_get_str(db, "t", "r", "h:q", got, sizeof(got)), MRTX_OK);
	assert_string_equal(got, "v2");
	/* the count follows the writers: a table dropped, one made */
	assert_int_equal(mrtx_drop_table(db, "u"), MRTX_OK);
	assert_int_equal(mrtx_create_table2(db, "w", FAMS, NFAMS), MRTX_OK);
	mrtx_close(db);
	assert_non_null(db = tu_open(path, NULL));
	mrtx_close(db);
	/* t's policies lost whole: the open says so, never the defaults */
	pn = tu_lmdb_get(path, "\0p/t", 4, pol, sizeof(pol));
	tu_lmdb_put(path, "\0p/t", 4, NULL, 0, 0);
	db = NULL;
	assert_int_equal(mrtx_open(&db, path, NULL), MRTX_ECORRUPT);
	assert_non_null(strstr(mrtx_errmsg(), "do not match their count"));
	{
		store_file_stats fs;
		deep_found f;

		memset(&f, 0, sizeof(f));
		assert_int_equal(check_file(path, deep_collect, NULL, &f, &fs), MRTX_OK);
		assert_int_equal(f.n, 1);
		assert_non_null(strstr(f.first, "counts"));
	}
	tu_lmdb_put(path, "\0p/t", 4, pol, pn, 0);
	assert_non_null(db = tu_open(path, NULL));
	assert_int_equal(tu_get_str(db, "t", "r", "h:q", got, sizeof(got)), MRTX_OK);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

static void test_upgrade(void **state)
{
	enum { ROWS = 300 };
	char *path;
	mrtx_db *db;
	mrtx_txn *txn;
	uint64_t ts[ROWS], cells, before;
	int pipefd[2];
	pid_t kid;
	char c;

	(void)state;
	if (tu_rados()) {
		/* (the RADOS upgrade of older layouts: test_radosupgrade) a new
		 * store is at format 4 already: nothing to convert */
		db = fresh(&path);
		mrtx_close(db);
		cells = 1;
		assert_int_equal(mrtx_upgrade(path, &cells), MRTX_OK);
		assert_int_equal(cells, 0);
		free(path);
		return;
	}
	for (int half = 0; half < 3; half++) {
		db = fresh(&path);
		assert_int_equal(mrtx_create_table2(db, "t", FAMS, NFAMS), MRTX_OK);
		for (int i = 0; i < ROWS; i++) {
			char row[16], val[16];

			snprintf(row, sizeof(row), "r%04d", i);
			snprintf(val, sizeof(val), "v%d", i);
			(void)put_ts(db, row, "h", "old");
			ts[i] = put_ts(db, row, "h", val);
		}
		before = put_ts(db, "gone", "h", "x");
		(void)put_ts(db, "gone", "h", NULL);
		mrtx_close(db);
		to_format3(path, half, NULL);

		/* refused, naming the upgrade */
		db = NULL;
		assert_int_equal(mrtx_open(&db, path, NULL), MRTX_ENOTSTORE);
		assert_non_null(strstr(mrtx_errmsg(), "mrtx upgrade"));

		/* not while another process has it open */
		assert_int_equal(pipe(pipefd), 0);
		if ((kid = fork()) == 0) {
			/* (a format-3 store does not open: hold LMDB's files as an
			 * older mrtx would) */
			MDB_env *env;

			if (mdb_env_create(&env) || mdb_env_open(env, path, 0, 0600))
				_exit(2);
			(void)!write(pipefd[1], "x", 1);
			pause();
			_exit(0);
		}
		assert_int_equal(read(pipefd[0], &c, 1), 1);
		assert_int_equal(mrtx_upgrade(path, &cells), MRTX_ELOCKED);
		kill(kid, SIGKILL);
		(void)tu_wait(kid);
		close(pipefd[0]);
		close(pipefd[1]);

		assert_int_equal(mrtx_upgrade(path, &cells), MRTX_OK);
		assert_true(cells >= 2 * ROWS); /* every cell and lock record sealed */
		/* again: nothing to do */
		assert_int_equal(mrtx_upgrade(path, &cells), MRTX_OK);
		assert_int_equal(cells, 0);

		db = tu_open(path, NULL);
		assert_non_null(db);
		for (int i = 0; i < ROWS; i += 37) {
			char row[16], want[24];
			uint64_t one[1] = { ts[i] };

			snprintf(row, sizeof(row), "r%04d", i);
			snprintf(want, sizeof(want), "v%d@0", i);
			/* the version of the commit that wrote it */
			EXPECT(db, 0, row, "h", one, want);
			/* a snapshot from before the upgrade: refused */
			assert_int_equal(mrtx_begin_at(db, ts[i], &txn), MRTX_ESNAPSHOT);
		}
		/* before the upgrade, deleted cells left no trace: refused */
		assert_int_equal(mrtx_begin_at(db, before, &txn), MRTX_ESNAPSHOT);
		/* versions from now on */
		{
			uint64_t n[2];

			n[0] = ts[0];
			n[1] = put_ts(db, "r0000", "h", "new");
			EXPECT(db, 0, "r0000", "h", n, "new@1,v0@0");
		}
		mrtx_close(db);
		tu_rmrf(path);
		free(path);
	}

	/* a transaction in flight (a writer died after its prewrite): refused,
	 * nothing changed -- its redo was written under format 3's rules */
	db = fresh(&path);
	assert_int_equal(mrtx_create_table2(db, "t", FAMS, NFAMS), MRTX_OK);
	mrtx_close(db);
	if ((kid = fork()) == 0) {
		mrtx_options o = MRTX_OPTIONS_INIT;
		mrtx_db *w;
		mrtx_txn *x;

		o.durability = MRTX_NOSYNC;
		o.lock_ttl_ms = 3600000;
		if (mrtx__open_knobs(&w, path, &o, &(mrtx__knobs){ 0, 1, 0 }) || mrtx_failpoints_set("commit.after_prewrite=exit") ||
		    mrtx_begin(w, &x) ||
		    mrtx_put(x, "t", B("p1"), "h", B("q"), B("x")) ||
		    mrtx_put(x, "t", B("p2"), "h", B("q"), B("x")))
			_exit(2);
		(void)mrtx_commit(x);
		_exit(3); /* (the failpoint exits first) */
	}
	assert_int_equal(tu_wait(kid), 99);
	to_format3(path, 0, NULL);
	assert_int_equal(mrtx_upgrade(path, &cells), MRTX_ELOCKED);
	assert_non_null(strstr(mrtx_errmsg(), "in flight"));
	db = NULL;
	assert_int_equal(mrtx_open(&db, path, NULL), MRTX_ENOTSTORE);
	assert_non_null(strstr(mrtx_errmsg(), "format 3"));
	tu_rmrf(path);
	free(path);

	/* a cell whose key leaves no room for versions: nothing is changed */
	db = fresh(&path);
	assert_int_equal(mrtx_create_table2(db, "t", FAMS, NFAMS), MRTX_OK);
	(void)put_ts(db, "a", "h", "x");
	mrtx_close(db);
	{
		uint8_t key[511];
		MDB_val k = { 0, key };
		size_t n = 2;

		key[0] = 0x01; /* the first table's prefix */
		key[1] = 0x00;
		n += keyenc_put(key + 2, (const uint8_t *)"a", 1);
		key[n++] = 0; /* family h */
		memset(key + n, 'q', 505 - n);
		k.mv_size = 505; /* fits format 3 (511), not format 4 (+11) */
		to_format3(path, 0, &k);
	}
	assert_int_equal(mrtx_upgrade(path, &cells), MRTX_ETOOBIG);
	assert_non_null(strstr(mrtx_errmsg(), "nothing was changed"));
	db = NULL;
	assert_int_equal(mrtx_open(&db, path, NULL), MRTX_ENOTSTORE);
	assert_non_null(strstr(mrtx_errmsg(), "format 3"));
	tu_rmrf(path);
	free(path);
}

/* ---- collection ---- */

/* Keys of the store (data and metadata), counted by a child process with
 * LMDB opened read-only and lockless: this process has the environment
 * open, which LMDB allows once per process. */
static long count_keys(const char *path, const char *prefix, size_t plen)
{
	int fd[2];
	long n = -1;
	pid_t kid;

	assert_int_equal(pipe(fd), 0);
	if ((kid = fork()) == 0) {
		MDB_env *env;
		MDB_txn *txn;
		MDB_dbi dbi;
		MDB_cursor *cur;
		MDB_val k, v;
		long c = 0;

		if (mdb_env_create(&env) || mdb_env_set_mapsize(env, 0) ||
		    mdb_env_open(env, path, MDB_RDONLY | MDB_NOLOCK, 0600) ||
		    mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) || mdb_dbi_open(txn, NULL, 0, &dbi) ||
		    mdb_cursor_open(txn, dbi, &cur))
			_exit(2);
		while (mdb_cursor_get(cur, &k, &v, MDB_NEXT) == 0)
			c += k.mv_size >= plen && memcmp(k.mv_data, prefix, plen) == 0;
		(void)!write(fd[1], &c, sizeof(c));
		_exit(0);
	}
	assert_int_equal(read(fd[0], &n, sizeof(n)), (ssize_t)sizeof(n));
	assert_int_equal(tu_wait(kid), 0);
	close(fd[0]);
	close(fd[1]);
	return n;
}

/* A collection cut short after one step of max_rows rows (which removes
 * first versions and stops before row next) is resumed by the next mrtx_gc
 * with the same safe point, which removes the rest (total in all). */
static void gc_cut_short(mrtx_db *db, uint64_t safe, size_t max_rows, uint64_t first,
                         const char *next, uint64_t total)
{
	store *st = mrtx__db_store(db);
	const store_table *t;
	uint8_t row[MRTX_MAX_KEY];
	size_t rowlen = 0;
	int done = 0, tdone;
	uint64_t m = 0, got, s2;
	char table[MRTX_MAX_NAME + 1];

	assert_int_equal(store_table_find(st, "t", &t), 0);
	assert_int_equal(store_gc_mark(st, safe, 0), 0);
	assert_int_equal(store_gc_step(st, t, row, &rowlen, safe, max_rows, &done, &m), 0);
	assert_false(done);
	assert_int_equal(m, first);
	assert_int_equal(store_gc_cursor(st, &s2, table, row, &rowlen, &tdone), 0);
	assert_int_equal(s2, safe);
	assert_string_equal(table, "t");
	assert_false(tdone);
	assert_true(rowlen == strlen(next) && memcmp(row, next, rowlen) == 0);
	assert_int_equal(mrtx_gc(db, 0, &got), MRTX_OK);
	assert_int_equal(m + got, total);
	assert_int_equal(store_gc_cursor(st, &s2, table, row, &rowlen, &tdone), MRTX_NOTFOUND);
}

/* RADOS: writes keep every version of a family of several (reads apply
 * its policy); `mrtx gc` removes what the policy drops and deletions at or
 * below its safe point, marks what it collected, and resumes. */
static void test_gc_rados(void)
{
	static const mrtx_family_spec fams[] = { { "h", 2, 0, 0 }, { "one", 1, 0, 0 } };
	char *path;
	mrtx_db *db = fresh(&path);
	uint64_t ts[8] = { 0 }, n = 99, early;
	mrtx_txn *old, *txn;
	mrtx_bytes v;

	assert_int_equal(mrtx_create_table2(db, "t", fams, 2), MRTX_OK);
	for (int i = 0; i < 5; i++) {
		char val[8];

		snprintf(val, sizeof(val), "v%d", i);
		ts[i] = put_ts(db, "r", "h", val);
	}
	(void)put_ts(db, "d", "h", "x");
	ts[5] = put_ts(db, "d", "h", NULL); /* a deletion */
	(void)put_ts(db, "o", "one", "a");
	(void)put_ts(db, "o", "one", "b");  /* one version: LMDB's write dropped a,
	                                     * RADOS keeps it for running snapshots */
	EXPECT(db, 0, "r", "h", ts, "v4@4,v3@3");
	early = ts[3];
	/* a past snapshot from before the collection */
	assert_int_equal(mrtx_begin_at(db, early, &old), MRTX_OK);
	assert_int_equal(mrtx_get(old, "t", B("r"), "h", B("q"), &v), MRTX_OK);
	assert_memory_equal(v.data, "v3", 2);
	/* r keeps v4, v3 (v0..v2 go); d's deletion and its x go; o's a (RADOS) */
	assert_int_equal(mrtx_gc(db, 0, &n), MRTX_OK);
	assert_int_equal(n, 3 + 2 + (tu_rados() ? 1 : 0));
	assert_int_equal(mrtx_gc(db, 0, &n), MRTX_OK);
	assert_int_equal(n, 0);
	EXPECT(db, 0, "r", "h", ts, "v4@4,v3@3");
	EXPECT(db, 0, "d", "h", ts, "none");
	/* the snapshot begun before: below what was collected there, told so */
	assert_int_equal(mrtx_get(old, "t", B("r"), "h", B("q"), &v), MRTX_ESNAPSHOT);
	mrtx_abort(old);
	/* and none can begin below the safe point any more */
	assert_int_equal(mrtx_begin_at(db, early, &old), MRTX_ESNAPSHOT);
	/* a run cut short after its first step resumes where it stopped */
	for (int i = 0; i < 30; i++) {
		char row[16];

		snprintf(row, sizeof(row), "e%02d", i);
		(void)put_ts(db, row, "h", "x");
		(void)put_ts(db, row, "h", NULL);
	}
	{
		uint64_t safe;

		assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
		assert_int_equal(mrtx_put(txn, "t", B("z"), "h", B("q"), B("z")), MRTX_OK);
		assert_int_equal(mrtx_commit_ts(txn, &safe), MRTX_OK);
		/* rows in order (d has no version left): e00..e09, 2 keys each */
		gc_cut_short(db, safe, 10, 20, "e10", 60);
	}
	/* a deletion that is not the newest version: a snapshot between it
	 * and the next version reads absent after collection.  LMDB keeps the
	 * deletion (older versions go, and it says so: GONE); RADOS, whose
	 * collector keeps every version above the safe point, drops the
	 * deletion too (the cell is absent at the safe point) */
	{
		store *st = mrtx__db_store(db);
		const store_table *t;
		uint8_t row[MRTX_MAX_KEY];
		size_t rowlen = 0;
		int done = 0;
		uint64_t k[3], m = 0;

		k[0] = put_ts(db, "k", "h", "x0");
		k[1] = put_ts(db, "k", "h", NULL);
		k[2] = put_ts(db, "k", "h", "x2");
		assert_int_equal(store_table_find(st, "t", &t), 0);
		assert_int_equal(store_gc_mark(st, k[1], 0), 0);
		while (!done)
			assert_int_equal(store_gc_step(st, t, row, &rowlen, k[1], 256, &done, &m), 0);
		assert_int_equal(store_gc_mark(st, 0, 1), 0);
		assert_int_equal(m, tu_rados() ? 2 : 1); /* x0 (and the deletion) */
		EXPECT(db, k[1], "k", "h", k, "none");
		EXPECT(db, k[2], "k", "h", k, "x2@2");
		assert_int_equal(mrtx_begin_at(db, k[1] - 1, &old), MRTX_ESNAPSHOT);
	}
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/*
 * Commits trim what they wrote (RADOS; LMDB's writes drop it themselves):
 * a hot cell overwritten many times keeps about a trim interval's versions
 * plus those younger than the trim lag, so collecting afterwards finds
 * little -- and with trimming held off (a lag longer than the run) it
 * finds every overwrite, which is what makes this check able to fail.  A
 * running snapshot younger than the lag reads its versions throughout.
 */
static void test_trim_on_commit(void **state)
{
	static const mrtx_family_spec one[] = { { "one", 1, 0, 0 } };
	char *path;
	mrtx_db *db = fresh(&path);
	uint64_t n = 0;
	mrtx_txn *snap;
	mrtx_bytes v;

	(void)state;
	assert_int_equal(mrtx_create_table2(db, "t", one, 1), MRTX_OK);
	(void)put_ts(db, "hot", "one", "v0");
	/* a snapshot taken now reads v0 while the trims (default lag) run */
	assert_int_equal(mrtx_begin(db, &snap), MRTX_OK);
	assert_int_equal(mrtx_get(snap, "t", B("hot"), "one", B("q"), &v), MRTX_OK);
	assert_true(v.size == 2 && memcmp(v.data, "v0", 2) == 0);
	for (int i = 1; i <= 40; i++) {
		char val[16];

		snprintf(val, sizeof(val), "v%d", i);
		(void)put_ts(db, "hot", "one", val);
	}
	assert_int_equal(mrtx_get(snap, "t", B("hot"), "one", B("q"), &v), MRTX_OK);
	assert_true(v.size == 2 && memcmp(v.data, "v0", 2) == 0);
	assert_int_equal(mrtx_commit(snap), MRTX_OK);

	/* a short lag: the commits' trims keep the cell small */
	atomic_store(&store__trim_lag_us, 1000);
	mrtx__sleep_us(2000);
	for (int i = 0; i < 200; i++)
		(void)put_ts(db, "hot", "one", i & 1 ? "odd" : "even");
	mrtx__sleep_us(2000);
	assert_int_equal(mrtx_flush(db), MRTX_OK); /* (the trims the commits queued) */
	assert_int_equal(mrtx_gc(db, 0, &n), MRTX_OK);
	print_message("200 overwrites, trims on: collection found %llu versions\n",
	              (unsigned long long)n);
	if (tu_rados())
		assert_true(n < 40);
	else
		assert_int_equal(n, 0); /* (LMDB: every write dropped its old version) */
	/* trimming held off: collection finds every overwrite */
	atomic_store(&store__trim_lag_us, 3600ll * 1000000);
	for (int i = 0; i < 100; i++)
		(void)put_ts(db, "hot", "one", i & 1 ? "odd" : "even");
	assert_int_equal(mrtx_gc(db, 0, &n), MRTX_OK);
	print_message("100 overwrites, trims held off: collection found %llu versions\n",
	              (unsigned long long)n);
	if (tu_rados())
		assert_true(n >= 100);
	else
		assert_int_equal(n, 0);
	atomic_store(&store__trim_lag_us, STORE_TRIM_LAG_US);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/*
 * Running snapshots older than the trim lag (RADOS): one that keeps
 * reading publishes itself in the store's registry, and the commits'
 * trims and mrtx_gc -- from another handle, which knows it only from
 * there -- keep what it reads; one that stops reading for longer than the
 * lag is not protected, and is told (MRTX_ESNAPSHOT), never shown a newer
 * value -- which is what makes the first half able to fail.
 * Checks I19 (DESIGN §10).
 */
#define LAG_US 300000ull

static void test_snapshot_registry(void **state)
{
	static const mrtx_family_spec one[] = { { "one", 1, 0, 0 } };
	char *path;
	mrtx_db *db, *db2, *db3;
	mrtx_txn *reader, *idle;
	uint64_t n;
	mrtx_bytes v;

	(void)state;
	if (!tu_rados())
		skip(); /* (LMDB: a snapshot is a read transaction, its pages kept) */
	db = fresh(&path);
	assert_non_null(db2 = tu_open(path, NULL));
	assert_non_null(db3 = tu_open(path, NULL)); /* (the idle one's own handle) */
	assert_int_equal(mrtx_create_table2(db, "t", one, 1), MRTX_OK);
	(void)put_ts(db, "hot", "one", "v0");
	(void)put_ts(db, "cold", "one", "c0");
	/*
	 * The wall clock (leases, the oracle's stamps, the collectors' safe
	 * points) is frozen and stepped by the test, a sixth of the lag at a
	 * time; a reader renews its lease on a read once a quarter lag of the
	 * monotonic clock has passed, which a real sleep of that length before
	 * each of its reads makes certain.  So whatever the machine's speed,
	 * the reader's lease is renewed at every read and the idle one's ends
	 * after six steps.
	 */
	atomic_store(&store__trim_lag_us, LAG_US);
	atomic_store(&mrtx__clock_frozen_us, mrtx__now_us());
	/* the idle snapshot first (the reader's, younger, would cover it) */
	assert_int_equal(mrtx_begin(db3, &idle), MRTX_OK);
	assert_int_equal(mrtx_get(idle, "t", B("cold"), "one", B("q"), &v), MRTX_OK);
	(void)put_ts(db, "cold", "one", "c1");
	assert_int_equal(mrtx_begin(db2, &reader), MRTX_OK);
	assert_int_equal(mrtx_get(reader, "t", B("hot"), "one", B("q"), &v), MRTX_OK);
	/* four lags of overwrites of both rows, trimmed as they go; the
	 * reader reads every third of a lag, the idle one not at all */
	for (int i = 1; i <= 24; i++) {
		char val[16];

		snprintf(val, sizeof(val), "v%d", i);
		(void)put_ts(db, "hot", "one", val);
		(void)put_ts(db, "cold", "one", val);
		atomic_fetch_add(&mrtx__clock_frozen_us, LAG_US / 6);
		if (i % 2 == 0) {
			mrtx__sleep_us(LAG_US / 4 + 1000); /* (a renewal is due) */
			assert_int_equal(mrtx_get(reader, "t", B("hot"), "one", B("q"), &v),
			                 MRTX_OK);
			assert_true(v.size == 2 && memcmp(v.data, "v0", 2) == 0);
		}
	}
	assert_int_equal(mrtx_gc(db, 0, &n), MRTX_OK);
	assert_int_equal(mrtx_get(reader, "t", B("hot"), "one", B("q"), &v), MRTX_OK);
	assert_true(v.size == 2 && memcmp(v.data, "v0", 2) == 0);
	assert_int_equal(mrtx_commit(reader), MRTX_OK);
	/* the idle snapshot was not published: its row was trimmed past it */
	assert_int_equal(mrtx_get(idle, "t", B("cold"), "one", B("q"), &v), MRTX_ESNAPSHOT);
	mrtx_abort(idle);
	atomic_store(&store__trim_lag_us, STORE_TRIM_LAG_US);
	mrtx_close(db3);
	mrtx_close(db2);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* The writer of test_read_past_writer: a two-row commit held at
 * commit.after_validate (its locks in place, before its commit point). */
struct held_writer {
	const char *path;
	int rc;
	uint64_t ts;
};

static void *held_write(void *arg)
{
	struct held_writer *w = arg;
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db;
	mrtx_txn *txn;

	mrtx__knobs k = { 0 };

	o.lock_ttl_ms = 600000; /* (held after its stamp, its heartbeat has stopped) */
	k.two_phase = 1; /* (its rows share a tablet: else one atomic write) */
	db = tu_open_k(w->path, &o, &k);

	w->rc = MRTX_ESTORE;
	if (!db)
		return NULL;
	if (mrtx_begin(db, &txn) == MRTX_OK) {
		mrtx_put(txn, "t", B("p"), "one", B("q"), B("1"));
		mrtx_put(txn, "t", B("s"), "one", B("q"), B("1"));
		w->rc = mrtx_commit_ts(txn, &w->ts);
	}
	mrtx_close(db);
	return NULL;
}

/*
 * RADOS: a read at a live snapshot that meets a live two-phase commit's
 * locks (held between its validation and its commit point) reads past
 * them without waiting -- the primary and the secondary, by gets and by a
 * scan -- and the writer then commits above the snapshot (its commit
 * point, pushed, is stamped again).  The reader's handle waits 1.5 s for a
 * live lock: a read that waited would fail with MRTX_ELOCKED, the writer
 * being held until the reads are done.  A read-write transaction that read
 * past the lock conflicts once the writer committed.  fp: where the
 * writer is held.
 */
static void read_past_writer(const char *fp)
{
	static const mrtx_family_spec one[] = { { "one", 1, 0, 0 } };
	struct held_writer w;
	mrtx_options o = MRTX_OPTIONS_INIT;
	char *path, go[256];
	mrtx_db *db, *rd;
	mrtx_txn *reader, *rw;
	pthread_t th;
	mrtx_bytes v;
	uint64_t t;

	db = fresh(&path);
	assert_int_equal(mrtx_create_table2(db, "t", one, 1), MRTX_OK);
	(void)put_ts(db, "p", "one", "0");
	(void)put_ts(db, "s", "one", "0");
	o.lock_wait_ms = 1500;
	assert_non_null(rd = tu_open(path, &o));
	tu_fp_hold(fp, 0, "push", go, sizeof(go));
	w.path = path;
	assert_int_equal(pthread_create(&th, NULL, held_write, &w), 0);
	/* (at the failpoint: its locks in place, and after store.after_stamp
	 * its commit point stamped, below the snapshot the reader takes next) */
	tu_fp_wait(fp, 1);
	assert_int_equal(tu_open_locks(db), 2);
	/* read-only: both rows as before, by gets and by a scan */
	assert_int_equal(mrtx_begin(rd, &reader), MRTX_OK);
	assert_int_equal(mrtx_get(reader, "t", B("p"), "one", B("q"), &v), MRTX_OK);
	assert_true(v.size == 1 && memcmp(v.data, "0", 1) == 0);
	assert_int_equal(mrtx_get(reader, "t", B("s"), "one", B("q"), &v), MRTX_OK);
	assert_true(v.size == 1 && memcmp(v.data, "0", 1) == 0);
	t = mrtx_txn_snapshot_ts(reader);
	{
		mrtx_scan_spec sp = { 0 };
		mrtx_scanner *sc;
		mrtx_cell c;
		int n = 0, rc;

		sp.table = "t";
		assert_int_equal(mrtx_scan_open(reader, &sp, &sc), MRTX_OK);
		while ((rc = mrtx_scan_next(sc, &c)) == MRTX_OK) {
			assert_true(c.value.size == 1 && memcmp(c.value.data, "0", 1) == 0);
			n++;
		}
		assert_int_equal(rc, MRTX_NOTFOUND);
		assert_int_equal(n, 2);
		mrtx_scan_close(sc);
	}
	assert_int_equal(mrtx_commit(reader), MRTX_OK);
	/* a past snapshot reads past it too */
	assert_int_equal(mrtx_begin_at(rd, t, &reader), MRTX_OK);
	assert_int_equal(mrtx_get(reader, "t", B("p"), "one", B("q"), &v), MRTX_OK);
	assert_true(v.size == 1 && memcmp(v.data, "0", 1) == 0);
	assert_int_equal(mrtx_commit(reader), MRTX_OK);
	/* read-write: reads past too, then conflicts with the commit */
	assert_int_equal(mrtx_begin(rd, &rw), MRTX_OK);
	assert_int_equal(mrtx_get(rw, "t", B("s"), "one", B("q"), &v), MRTX_OK);
	assert_true(v.size == 1 && memcmp(v.data, "0", 1) == 0);
	assert_int_equal(mrtx_put(rw, "t", B("r"), "one", B("q"), B("x")), MRTX_OK);
	/* the writer goes on: pushed, it commits above the snapshot */
	tu_fp_release(go, th);
	if (w.rc != MRTX_OK)
		fail_msg("the held writer: %s", mrtx_strerror(w.rc));
	assert_true(w.ts > t);
	assert_int_equal(mrtx_commit(rw), MRTX_CONFLICT);
	{
		char buf[8];

		assert_int_equal(tu_get_str(rd, "t", "p", "one:q", buf, sizeof(buf)), MRTX_OK);
		assert_string_equal(buf, "1");
		assert_int_equal(tu_get_str(rd, "t", "s", "one:q", buf, sizeof(buf)), MRTX_OK);
		assert_string_equal(buf, "1");
	}
	assert_int_equal(tu_open_locks(db), 0);
	mrtx_close(rd);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* Checks I21 (DESIGN §10). */
static void test_read_past_writer(void **state)
{
	(void)state;
	if (!tu_rados())
		skip(); /* (LMDB readers read their view: they never wait) */
	/* held before its commit point is stamped, and after (the stamp is
	 * then below the reader's snapshot: the push makes it stamp again) */
	read_past_writer("commit.after_validate");
	read_past_writer("store.after_stamp");
}

/* The late writer of test_snapshot_late_commit: one row, one write. */
static void *late_write(void *arg)
{
	struct held_writer *w = arg;
	mrtx_db *db = tu_open(w->path, NULL);
	mrtx_txn *txn;

	w->rc = MRTX_ESTORE;
	if (!db)
		return NULL;
	if (mrtx_begin(db, &txn) == MRTX_OK) {
		mrtx_put(txn, "t", B("x"), "one", B("q"), B("b"));
		w->rc = mrtx_commit_ts(txn, &w->ts);
	}
	mrtx_close(db);
	return NULL;
}

/*
 * A live snapshot (RADOS) and a one-row commit stamped below it that lands
 * after the snapshot first read its row (the commit was held between the
 * oracle's stamp and its write, failpoint store.after_stamp, while the
 * snapshot was taken), then a commit above it: a second read of the row
 * must not show the late commit's value (the snapshot would hold two
 * values of one row) -- the transaction is doomed instead (MRTX_CONFLICT),
 * and mrtx_run would retry it.
 * Checks I18 (DESIGN §10).
 */
static void test_snapshot_late_commit(void **state)
{
	static const mrtx_family_spec one[] = { { "one", 1, 0, 0 } };
	struct held_writer w;
	char *path, go[256];
	mrtx_db *db;
	uint64_t t;
	mrtx_txn *reader;
	mrtx_bytes v;
	pthread_t th;

	(void)state;
	if (!tu_rados())
		skip(); /* (LMDB stamps inside the write, under its writer lock) */
	db = fresh(&path);
	assert_int_equal(mrtx_create_table2(db, "t", one, 1), MRTX_OK);
	(void)put_ts(db, "x", "one", "a");
	tu_fp_hold("store.after_stamp", 0, "late", go, sizeof(go));
	w.path = path;
	assert_int_equal(pthread_create(&th, NULL, late_write, &w), 0);
	tu_fp_wait("store.after_stamp", 1);
	assert_int_equal(mrtx_begin(db, &reader), MRTX_OK);
	assert_int_equal(mrtx_get(reader, "t", B("x"), "one", B("q"), &v), MRTX_OK);
	assert_true(v.size == 1 && memcmp(v.data, "a", 1) == 0);
	t = mrtx_txn_snapshot_ts(reader);
	tu_fp_release(go, th);
	assert_int_equal(w.rc, MRTX_OK);
	assert_true(w.ts <= t); /* (the late commit, below the snapshot) */
	assert_true(put_ts(db, "x", "one", "c") > t);
	assert_int_equal(mrtx_get(reader, "t", B("x"), "one", B("q"), &v), MRTX_CONFLICT);
	assert_int_equal(mrtx_commit(reader), MRTX_CONFLICT);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* Scan "h" of table t with up to max versions a cell in txn: "row:v@i,..."
 * with i the index of each cell's ts in tss ('?' if none, '0' for the
 * transaction's own write), rows separated by spaces. */
static void scan_versions(mrtx_txn *txn, uint32_t max, const uint64_t *tss, size_t nts,
                          char *out, size_t cap)
{
	mrtx_scan_spec sp = { "t", { NULL, 0 }, { NULL, 0 }, "h", { NULL, 0 }, { NULL, 0 }, 0, 0 };
	mrtx_scanner *s;
	mrtx_cell c;
	size_t n = 0;
	int rc;

	out[0] = 0;
	assert_int_equal(mrtx_scan_open(txn, &sp, &s), MRTX_OK);
	assert_int_equal(mrtx_scan_versions(s, max), MRTX_OK);
	while ((rc = mrtx_scan_next(s, &c)) == MRTX_OK) {
		uint64_t ts = mrtx_scan_ts(s);
		char ix = ts ? '?' : 'w';

		for (size_t i = 0; i < nts; i++)
			if (tss[i] == ts)
				ix = (char)('0' + i);
		n += (size_t)snprintf(out + n, cap - n, "%s%.*s:%.*s@%c", n ? " " : "",
		                      (int)c.row.size, (const char *)c.row.data,
		                      (int)c.value.size, (const char *)c.value.data, ix);
	}
	assert_int_equal(rc, MRTX_NOTFOUND);
	/* once started, the number of versions is fixed */
	assert_int_equal(mrtx_scan_versions(s, 2), MRTX_EINVAL);
	mrtx_scan_close(s);
}

/* Scans return several versions of a cell (mrtx_scan_versions), newest
 * first, with their timestamps (mrtx_scan_ts), within the policy, at the
 * transaction's snapshot, a write of the transaction first. */
static void test_scan_versions(void **state)
{
	char *path;
	mrtx_db *db = fresh(&path);
	uint64_t ts[4];
	char got[256];
	mrtx_scanner *s;
	mrtx_txn *txn;
	mrtx_scan_spec sp = { "t", { NULL, 0 }, { NULL, 0 }, "h", { NULL, 0 }, { NULL, 0 }, 0, 0 };

	(void)state;
	assert_int_equal(mrtx_create_table2(db, "t", FAMS, NFAMS), MRTX_OK);
	ts[0] = put_ts(db, "a", "h", "a0");
	ts[1] = put_ts(db, "a", "h", "a1");
	ts[2] = put_ts(db, "b", "h", "b2");
	ts[3] = put_ts(db, "a", "h", "a3");
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	scan_versions(txn, 1, ts, 4, got, sizeof(got));
	assert_string_equal(got, "a:a3@3 b:b2@2");
	scan_versions(txn, 5, ts, 4, got, sizeof(got)); /* (the family keeps 3) */
	assert_string_equal(got, "a:a3@3 a:a1@1 a:a0@0 b:b2@2");
	assert_int_equal(mrtx_put(txn, "t", B("a"), "h", B("q"), B("mine")), MRTX_OK);
	scan_versions(txn, 2, ts, 4, got, sizeof(got));
	assert_string_equal(got, "a:mine@w a:a3@3 b:b2@2");
	assert_int_equal(mrtx_delete(txn, "t", B("b"), "h", B("q")), MRTX_OK);
	scan_versions(txn, 3, ts, 4, got, sizeof(got));
	assert_string_equal(got, "a:mine@w a:a3@3 a:a1@1");
	mrtx_abort(txn);
	/* at a past snapshot: the versions at or below it */
	assert_int_equal(mrtx_begin_at(db, ts[2], &txn), MRTX_OK);
	scan_versions(txn, 3, ts, 4, got, sizeof(got));
	assert_string_equal(got, "a:a1@1 a:a0@0 b:b2@2");
	mrtx_abort(txn);
	/* bad calls */
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	assert_int_equal(mrtx_scan_open(txn, &sp, &s), MRTX_OK);
	assert_int_equal(mrtx_scan_versions(s, 0), MRTX_EINVAL);
	assert_int_equal(mrtx_scan_versions(NULL, 1), MRTX_EINVAL);
	assert_int_equal(mrtx_scan_ts(s), 0);
	assert_int_equal(mrtx_scan_ts(NULL), 0);
	/* the last cell's timestamp outlives the transaction (not its arena) */
	{
		mrtx_cell c;

		assert_int_equal(mrtx_scan_next(s, &c), MRTX_OK);
		assert_int_equal(mrtx_scan_ts(s), ts[3]);
		mrtx_abort(txn);
		assert_int_equal(mrtx_scan_ts(s), ts[3]);
		mrtx_scan_close(s);
	}
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* Checks I19 (DESIGN §10). */
static void test_gc(void **state)
{
	char *path;
	mrtx_db *db;
	mrtx_txn *old;
	uint64_t before, n = 0, at[1];
	long keys0, keys1;
	mrtx_bytes v;

	(void)state;
	if (tu_rados()) {
		test_gc_rados();
		return;
	}
	db = fresh(&path);
	assert_int_equal(mrtx_create_table2(db, "t", FAMS, NFAMS), MRTX_OK);
	/* a hot cell: the store does not grow with its writes */
	(void)put_ts(db, "hot", "h", "0");
	(void)put_ts(db, "hot1", "one", "0");
	keys0 = count_keys(path, "", 0);
	for (int i = 0; i < 2000; i++) {
		char val[16];

		snprintf(val, sizeof(val), "%d", i);
		(void)put_ts(db, "hot", "h", val);
		(void)put_ts(db, "hot1", "one", val);
	}
	keys1 = count_keys(path, "", 0);
	/* "hot": 1 current + 2 older versions; "hot1": 1; and the locks */
	assert_int_equal(keys1 - keys0, 2);
	/* deleted cells leave tombstones until collected */
	for (int i = 0; i < 50; i++) {
		char row[16];

		snprintf(row, sizeof(row), "d%02d", i);
		(void)put_ts(db, row, "one", "x");
		(void)put_ts(db, row, "one", NULL);
	}
	before = put_ts(db, "keep", "one", "k");
	at[0] = before;
	/* a transaction at a snapshot before the collection keeps reading */
	assert_int_equal(mrtx_begin_at(db, before, &old), MRTX_OK);
	keys0 = count_keys(path, "\1", 1); /* (data keys: gc adds its safe point) */
	assert_int_equal(mrtx_gc(db, 0, &n), MRTX_OK);
	assert_int_equal(n, 50);
	keys1 = count_keys(path, "\1", 1);
	assert_int_equal(keys0 - keys1, 50);
	assert_int_equal(mrtx_get(old, "t", B("keep"), "one", B("q"), &v), MRTX_OK);
	assert_int_equal(mrtx_get(old, "t", B("d07"), "one", B("q"), &v), MRTX_NOTFOUND);
	mrtx_abort(old);
	/* below the safe point (the newest commit, "keep"'s): refused; at or
	 * above: as before */
	assert_int_equal(mrtx_begin_at(db, before - 1, &old), MRTX_ESNAPSHOT);
	assert_int_equal(mrtx_begin_at(db, before, &old), MRTX_OK);
	assert_int_equal(mrtx_get(old, "t", B("d07"), "one", B("q"), &v), MRTX_NOTFOUND);
	mrtx_abort(old);
	EXPECT(db, 0, "keep", "one", at, "k@0");
	/* nothing left to collect */
	assert_int_equal(mrtx_gc(db, 0, &n), MRTX_OK);
	assert_int_equal(n, 0);

	/* a run cut short after its first step resumes where it stopped */
	for (int i = 0; i < 600; i++) {
		char row[16];

		snprintf(row, sizeof(row), "e%03d", i);
		(void)put_ts(db, row, "one", "x");
		(void)put_ts(db, row, "one", NULL);
	}
	/* rows in order: d00..d49 (collected before), e000..e049 */
	gc_cut_short(db, put_ts(db, "z", "one", "z"), 100, 50, "e050", 600);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* ---- a model of versions and collection ---- */

#define MR 3 /* rows */
#define MQ 2 /* qualifiers */
#define MH 400 /* versions a cell may get in a run */

typedef struct mver {
	uint64_t ts;
	int del;
	char val[24];
} mver;

typedef struct mcell {
	mver v[MH];
	size_t n; /* oldest first */
} mcell;

/* The model's read of cell c at snapshot at: up to k values newest first,
 * stopping at a deletion, each within the family's max versions by its
 * rank among the cell's versions -- those above at counted too (past) or
 * not (a held snapshot, whose view has none of them). */
static size_t model_read(const mcell *c, uint64_t at, uint32_t maxv, size_t k, int past,
                         const mver **out)
{
	size_t n = 0, rank = 0;

	for (size_t i = c->n; i-- > 0 && n < k; rank++) {
		if (c->v[i].ts > at) {
			rank -= !past;
			continue;
		}
		if (c->v[i].del || rank >= maxv)
			break;
		out[n++] = &c->v[i];
	}
	return n;
}

static const char *mfam(int f)
{
	return f ? "h" : "one";
}

/* Compare one read with the model: exact for a snapshot the store must
 * still hold (exact = 1), else a prefix of the model's, present when the
 * model's is (or MRTX_ESNAPSHOT); never a version the model does not show. */
static void model_check(mrtx_txn *txn, mcell cells[2][MR][MQ], int f, int r, int q,
                        uint64_t at, int exact, unsigned seed, int op)
{
	char row[4] = { 'r', (char)('0' + r), 0 }, qual[4] = { 'q', (char)('0' + q), 0 };
	const mver *want[8];
	mrtx_version got[8];
	size_t n = 0, nw = model_read(&cells[f][r][q], at, f ? 3 : 1, 8, !exact, want);
	int rc = mrtx_get_versions(txn, "t", B(row), mfam(f), B(qual), got, 8, &n);

	if (rc == MRTX_ESNAPSHOT && !exact)
		return;
	if (rc != MRTX_OK && rc != MRTX_NOTFOUND)
		fail_msg("seed %u op %d: %s %s:%s at %llu: %s", seed, op, row, mfam(f), qual,
		         (unsigned long long)at, mrtx_errmsg());
	if (exact ? n != nw : (n > nw || (nw && !n))) {
		const mcell *c = &cells[f][r][q];

		for (size_t i = 0; i < n; i++)
			print_message("  got %.*s@%llu\n", (int)got[i].value.size,
			              (const char *)got[i].value.data, (unsigned long long)got[i].ts);
		for (size_t i = c->n; i-- > 0;)
			print_message("  model %s%s@%llu\n", c->v[i].del ? "DEL " : "", c->v[i].val,
			              (unsigned long long)c->v[i].ts);
	}
	if (exact ? n != nw : (n > nw || (nw && !n)))
		fail_msg("seed %u op %d: %s %s:%s at %llu: %zu versions, the model has %zu", seed,
		         op, row, mfam(f), qual, (unsigned long long)at, n, nw);
	for (size_t i = 0; i < n; i++)
		if (got[i].ts != want[i]->ts || got[i].value.size != strlen(want[i]->val) ||
		    memcmp(got[i].value.data, want[i]->val, got[i].value.size) != 0)
			fail_msg("seed %u op %d: %s %s:%s at %llu: version %zu is %.*s@%llu, the model "
			         "says %s@%llu", seed, op, row, mfam(f), qual, (unsigned long long)at,
			         i, (int)got[i].value.size, (const char *)got[i].value.data,
			         (unsigned long long)got[i].ts, want[i]->val,
			         (unsigned long long)want[i]->ts);
}

/* Checks I19 (DESIGN §10). */
static void test_model_versions(void **state)
{
	static const mrtx_family_spec fams[] = { { "one", 1, 0, 0 }, { "h", 3, 0, 0 } };
	static mcell cells[2][MR][MQ];
	const char *env = getenv("MRTX_VERSION_SEEDS");
	unsigned seeds = env ? (unsigned)atoi(env) : 4;

	(void)state;
	for (unsigned seed = 1; seed <= seeds; seed++) {
		char *path;
		mrtx_db *db = fresh(&path);
		mrtx_txn *snap = NULL;
		uint64_t snap_at = 0, safe = 0, last = 0;
		uint64_t hist[1200];
		size_t nhist = 0;

		memset(cells, 0, sizeof(cells));
		tu_rng_seed(seed);
		assert_int_equal(mrtx_create_table2(db, "t", fams, 2), MRTX_OK);
		for (int op = 0; op < 1000; op++) {
			unsigned x = tu_rng() % 100;
			int f = (int)(tu_rng() % 2), r = (int)(tu_rng() % MR), q = (int)(tu_rng() % MQ);

			/* RADOS: no held snapshots: past ones instead */
			if (tu_rados() && x >= 60 && x < 80)
				x = 90;

			if (x < 60) { /* a commit of 1-2 cells */
				mrtx_txn *txn;
				uint64_t ts;
				int n = 1 + (int)(tu_rng() % 2), del[2], cf[2], cr[2], cq[2];
				char val[2][24];

				assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
				for (int i = 0; i < n; i++) {
					char row[4] = { 'r', 0, 0 }, qual[4] = { 'q', 0, 0 };

					cf[i] = i ? (int)(tu_rng() % 2) : f;
					cr[i] = i ? (int)(tu_rng() % MR) : r;
					cq[i] = i ? (int)(tu_rng() % MQ) : q;
					row[1] = (char)('0' + cr[i]);
					qual[1] = (char)('0' + cq[i]);
					del[i] = tu_rng() % 4 == 0;
					snprintf(val[i], sizeof(val[i]), "%d.%d", op, i);
					assert_int_equal(del[i] ? mrtx_delete(txn, "t", B(row), mfam(cf[i]),
					                                      B(qual)) :
					                 mrtx_put(txn, "t", B(row), mfam(cf[i]), B(qual),
					                          B(val[i])), MRTX_OK);
				}
				assert_int_equal(mrtx_commit_ts(txn, &ts), MRTX_OK);
				assert_true(ts > last);
				last = ts;
				for (int i = 0, added = 0; i < n; i++) {
					mcell *c = &cells[cf[i]][cr[i]][cq[i]];

					/* (a cell written twice in one commit: the later wins) */
					if (i == 1 && added && cf[1] == cf[0] && cr[1] == cr[0] &&
					    cq[1] == cq[0])
						c->n--;
					added = 0;
					/* (deleting an absent cell writes nothing) */
					if (del[i] && (c->n == 0 || c->v[c->n - 1].del))
						continue;
					assert_true(c->n < MH);
					c->v[c->n].ts = ts;
					c->v[c->n].del = del[i];
					memcpy(c->v[c->n].val, val[i], sizeof(c->v[c->n].val));
					c->n++;
					added = 1;
				}
				hist[nhist++ % 1200] = ts;
			} else if (x < 70 && !snap) { /* a snapshot, held across later writes */
				assert_int_equal(mrtx_begin(db, &snap), MRTX_OK);
				model_check(snap, cells, f, r, q, UINT64_MAX, 1, seed, op);
				snap_at = mrtx_txn_snapshot_ts(snap);
				assert_true(snap_at >= last);
			} else if (x < 80 && snap) { /* it still reads what it read */
				model_check(snap, cells, f, r, q, snap_at, 1, seed, op);
				if (tu_rng() % 4 == 0) {
					mrtx_abort(snap);
					snap = NULL;
				}
			} else if (x < 95 && nhist) { /* a past snapshot */
				uint64_t at = hist[tu_rng() % MRTX_MIN(nhist, (size_t)1200)] -
				              (tu_rng() % 2);
				mrtx_txn *past;
				int rc = mrtx_begin_at(db, at, &past);

				if (at < safe) {
					assert_int_equal(rc, MRTX_ESNAPSHOT);
					continue;
				}
				assert_int_equal(rc, MRTX_OK);
				model_check(past, cells, f, r, q, at, 0, seed, op);
				mrtx_abort(past);
			} else if (x >= 95) { /* collection */
				uint64_t n;

				assert_int_equal(mrtx_gc(db, tu_rng() % 2 ? 0 : 1, &n), MRTX_OK);
				{
					mrtx_txn *probe;
					/* (RADOS's newest timestamp for the safe point is
					 * the oracle's, which may be above the last commit) */
					uint64_t lo = safe, hi = last, o = 0;

					if (tu_rados()) {
						assert_int_equal(store_ts_now(mrtx__db_store(db), &o), 0);
						hi = MRTX_MAX(hi, o);
					}

					/* the new safe point: the smallest ts begin_at takes */
					while (lo < hi) {
						uint64_t mid = lo + (hi - lo) / 2;

						if (mrtx_begin_at(db, mid, &probe) == MRTX_OK) {
							mrtx_abort(probe);
							hi = mid;
						} else {
							lo = mid + 1;
						}
					}
					safe = lo;
				}
				if (snap) /* the held snapshot is undisturbed */
					model_check(snap, cells, f, r, q, snap_at, 1, seed, op);
			}
		}
		/* at the end, every cell at the newest snapshot: exact */
		{
			mrtx_txn *txn;

			assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
			for (int ff = 0; ff < 2; ff++)
				for (int rr = 0; rr < MR; rr++)
					for (int qq = 0; qq < MQ; qq++)
						model_check(txn, cells, ff, rr, qq, UINT64_MAX, 1, seed, -1);
			mrtx_abort(txn);
		}
		mrtx_abort(snap);
		mrtx_close(db);
		tu_rmrf(path);
		free(path);
	}
}

/* After a test that froze or stepped the clock or shortened the lag, also
 * when it failed on the way: the next test starts with the real ones. */
static int clock_reset(void **state)
{
	(void)state;
	tu_clock_reset();
	atomic_store(&store__trim_lag_us, STORE_TRIM_LAG_US);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policies_and_past_snapshots),
		cmocka_unit_test_teardown(test_ttl, clock_reset),
		cmocka_unit_test_teardown(test_stamps_follow_reads, clock_reset),
		cmocka_unit_test(test_upgrade),
		cmocka_unit_test(test_upgrade_seal_resume),
		cmocka_unit_test(test_upgrade_format6),
		cmocka_unit_test(test_upgrade_format7),
		cmocka_unit_test(test_gc),
		cmocka_unit_test(test_trim_on_commit),
		cmocka_unit_test_teardown(test_snapshot_registry, clock_reset),
		cmocka_unit_test(test_snapshot_late_commit),
		cmocka_unit_test(test_read_past_writer),
		cmocka_unit_test(test_scan_versions),
		cmocka_unit_test(test_model_versions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
