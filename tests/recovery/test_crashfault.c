/*
 * test_crashfault.c - I/O faults below LMDB.
 *
 * This test links the crash recorder (tools/crashrec/) ahead of libc, so
 * LMDB's own pwrite/writev/fdatasync calls on the store's data.mdb pass
 * through it.  For every N, the N-th sync (EIO, ENOSPC) or the N-th write
 * (EIO, ENOSPC, a short write) of a commit fails, for a multi-row and a
 * one-row transaction in sync and nometasync mode.  Each time:
 *   - the commit returns MRTX_OK, or a clean error: MRTX_EUNKNOWN only from
 *     a commit point (a one-row commit's one write, a multi-row commit's
 *     primary), never before it (the prewrite is not the commit point);
 *   - the process keeps running.  After a failed sync -- or EIO, which a
 *     file system with space left gives for a failed write (a short write
 *     too) and the store cannot tell from a failed sync, or a failed write
 *     of LMDB's meta page -- no later commit returns MRTX_OK until the store
 *     is reopened: the kernel may have dropped the pages it could not
 *     write, so LMDB's later commits, which build on those pages, would be
 *     acknowledged without being durable;
 *   - a page write that fails with ENOSPC (a full disk) committed nothing
 *     (a definite MRTX_EFULL, or MRTX_OK after the commit point) and the
 *     next commit of the same handle succeeds; some N of each case do so;
 *   - after reopening, recovery and check --strict pass, the transaction is
 *     all-or-nothing (all new if it returned MRTX_OK, all old if it
 *     returned a definite error), and new commits succeed.
 * Checks I23 (DESIGN §10).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recovery/check.h"
#include "recovery/recovery.h"
#include "testutil.h"
#include "tools/harness/crashrec/crashrec.h"
#include "txn/admin_test.h"

#define NROWS 3

static crashrec_fault_fn fault;
static crashrec_fault_fired_fn fired;
static crashrec_follow_fn follow;
static int durability = MRTX_SYNC;
static int two_phase; /* the two_phase knob: a multi-row commit's first
                       * sync is a prewrite's, not its commit point's */

static mrtx_db *open_sync(const char *path)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db = NULL;

	o.durability = durability;
	o.lock_wait_ms = 1;
	if (mrtx__open_knobs(&db, path, &o, &(mrtx__knobs){ 0, two_phase, 0 }) != MRTX_OK)
		fail_msg("open %s: %s", path, mrtx_errmsg());
	return db;
}

/* Put value in rows r0..r(n-1), one transaction. */
static int put_rows(mrtx_db *db, int n, const char *value)
{
	mrtx_txn *txn;
	int rc;

	if ((rc = mrtx_begin(db, &txn)))
		return rc;
	for (int i = 0; i < n && rc == 0; i++) {
		char row[16];

		snprintf(row, sizeof(row), "r%d", i);
		rc = mrtx_put(txn, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q"), MRTX_CSTR(value));
	}
	if (rc) {
		mrtx_abort(txn);
		return rc;
	}
	return mrtx_commit(txn);
}

/* The common value of rows r0..r(n-1) into buf, or "" when they differ. */
static void rows_value(mrtx_db *db, int n, char *buf, size_t sz)
{
	char first[32] = "", v[32];

	for (int i = 0; i < n; i++) {
		char row[16], fq[] = "f:q";
		int rc;

		snprintf(row, sizeof(row), "r%d", i);
		rc = tu_get_str(db, "t", row, fq, v, sizeof(v));
		assert_int_equal(rc, MRTX_OK);
		if (i == 0)
			snprintf(first, sizeof(first), "%s", v);
		else if (strcmp(first, v) != 0)
			first[0] = 0;
	}
	snprintf(buf, sz, "%s", first);
}

/* How many faults of the current every_call left the handle writing, and
 * after how many a read-only commit found what it read not known durable. */
static unsigned went_on, unsure_reads;

/*
 * After the failed I/O, in the same handle, a read still works -- unless
 * LMDB stopped on a failed write of its meta page (MDB_PANIC) -- and so
 * does the commit of a read-only transaction, unless what it read is not
 * known to be on disk (a commit whose sync failed).  One-phase only: a
 * two-phase commit may leave its own live locks, which a read waits for.
 */
static void reads_go_on(mrtx_db *db, const char *spec)
{
	mrtx_txn *txn;
	mrtx_bytes v;
	int rc;

	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	rc = mrtx_get(txn, "t", MRTX_CSTR("r0"), "f", MRTX_CSTR("q"), &v);
	if (rc == MRTX_ESTORE && strstr(mrtx_errmsg(), "MDB_PANIC")) {
		mrtx_abort(txn);
		return;
	}
	if (rc != MRTX_OK)
		fail_msg("%s: a read after the failed I/O returned %s (%s)", spec,
		         mrtx_strerror(rc), mrtx_errmsg());
	rc = mrtx_commit(txn);
	if (rc == MRTX_ESTORE && strstr(mrtx_errmsg(), "not known to be on disk"))
		unsure_reads++;
	else if (rc != MRTX_OK)
		fail_msg("%s: a read-only commit after the failed I/O returned %s (%s)", spec,
		         mrtx_strerror(rc), mrtx_errmsg());
}

/* One fault: returns 0 when the N-th call was never reached (done). */
static int one_fault(const char *kind, unsigned n, int nrows)
{
	char *dir = tu_tmpdir("crashfault"), data[4096], spec[64], val[32];
	mrtx_db *db;
	recover_opts ro = { 0, 1, 0 };
	recover_stats rs;
	check_stats cs;
	int rc, rc2, hit;

	snprintf(data, sizeof(data), "%s/data.mdb", dir);
	follow(data);
	db = open_sync(dir);
	assert_int_equal(tu_table(db, "t", "f", NULL), MRTX_OK);
	assert_int_equal(put_rows(db, nrows, "old"), MRTX_OK);

	snprintf(spec, sizeof(spec), "%s", kind);
	snprintf(strchr(spec, '#'), sizeof(spec) - (size_t)(strchr(spec, '#') - spec), "%u%s",
	         n, strchr(kind, '#') + 1);
	assert_int_equal(fault(spec), 0);
	rc = put_rows(db, nrows, "new");
	hit = fired();
	fault(NULL);
	if (!hit) {
		assert_int_equal(rc, MRTX_OK);
		mrtx_close(db);
		tu_rmrf(dir);
		free(dir);
		return 0;
	}
	if (rc != MRTX_OK && rc != MRTX_ESTORE && rc != MRTX_EFULL && rc != MRTX_EUNKNOWN)
		fail_msg("%s, %d rows: commit returned %s (%s)", spec, nrows, mrtx_strerror(rc),
		         mrtx_errmsg());
	if (rc == MRTX_EUNKNOWN && nrows > 1 && two_phase && strncmp(kind, "sync", 4) == 0 &&
	    n == 1)
		fail_msg("%s: EUNKNOWN from a failed prewrite (before the commit point)", spec);

	if (!two_phase)
		reads_go_on(db, spec);
	/* The process keeps running: after a failed sync no later commit may
	 * be acknowledged; after a full disk's failed write it may. */
	rc2 = put_rows(db, nrows, "later");
	if (rc2 == MRTX_OK) {
		if (strcmp(kind, "write:#:ENOSPC") != 0)
			fail_msg("%s, %d rows: a commit after the failed I/O returned MRTX_OK (first "
			         "commit: %s)", spec, nrows, mrtx_strerror(rc));
		if (rc != MRTX_OK && rc != MRTX_EFULL)
			fail_msg("%s, %d rows: a failed write that left the handle writing returned "
			         "%s, not a definite MRTX_EFULL", spec, nrows, mrtx_strerror(rc));
		went_on++;
	/* ELOCKED: our own prewrite locks, left by a failed commit point, are
	 * held by a live owner (us); resolving them would need a write. */
	} else if (rc2 != MRTX_ESTORE && rc2 != MRTX_ELOCKED) {
		fail_msg("%s, %d rows: the commit after the failed I/O returned %s (%s), "
		         "expected MRTX_ESTORE", spec, nrows, mrtx_strerror(rc2), mrtx_errmsg());
	}
	mrtx_close(db);

	db = open_sync(dir);
	memset(&rs, 0, sizeof(rs));
	assert_int_equal(recover_sweep(mrtx__db_store(db), &ro, &rs, NULL, NULL), MRTX_OK);
	assert_int_equal(rs.errors, 0);
	assert_int_equal(check_store(mrtx__db_store(db), &cs, NULL, NULL), MRTX_OK);
	if (cs.corrupt || cs.resolvable)
		fail_msg("%s: check --strict after reopen: %lu corrupt, %lu resolvable", spec,
		         cs.corrupt, cs.resolvable);
	rows_value(db, nrows, val, sizeof(val));
	if (rc2 == MRTX_OK) {
		if (strcmp(val, "later") != 0)
			fail_msg("%s: the later commit returned MRTX_OK but the rows hold '%s'", spec,
			         val);
	} else if (rc == MRTX_OK && strcmp(val, "new") != 0) {
		fail_msg("%s: committed (MRTX_OK) but the rows hold '%s'", spec, val);
	} else if (rc != MRTX_OK && rc != MRTX_EUNKNOWN && strcmp(val, "old") != 0) {
		fail_msg("%s: failed (%s) but the rows hold '%s'", spec, mrtx_strerror(rc), val);
	} else if (strcmp(val, "old") != 0 && strcmp(val, "new") != 0) {
		fail_msg("%s: a partial transaction is visible ('%s')", spec, val);
	}
	assert_int_equal(put_rows(db, nrows, "after"), MRTX_OK);
	mrtx_close(db);
	tu_rmrf(dir);
	free(dir);
	return 1;
}

/* Every call of a multi-row and of a one-row commit, in sync and
 * nometasync mode (nosync makes no sync call and is not durable anyway). */
static void every_call(const char *kind, int nrows)
{
	static const int modes[] = { MRTX_SYNC, MRTX_NOMETASYNC };

	for (size_t m = 0; m < 4; m++) {
		unsigned n;

		durability = modes[m % 2];
		two_phase = m >= 2;
		if (two_phase && nrows == 1)
			break; /* one row: one write either way */
		went_on = unsure_reads = 0;
		for (n = 1; n < 200 && one_fault(kind, n, nrows); n++)
			;
		assert_true(n > 1); /* the commit made at least one such call */
		assert_true(n < 200);
		/* (a full disk's failed page write leaves the handle writing) */
		if (strcmp(kind, "write:#:ENOSPC") == 0 && went_on == 0)
			fail_msg("%s, %d row(s): no failed write left the handle writing", kind, nrows);
		print_message("%s, %d row(s), %s, %s: a fault at each of %u calls (%u left the "
		              "handle writing; after %u a read was not known durable)\n", kind,
		              nrows, m % 2 ? "nometasync" : "sync",
		              two_phase ? "two-phase" : "one-phase", n - 1, went_on, unsure_reads);
	}
}

/* Checks I24 (DESIGN §10). */
static void test_sync_eio(void **state)
{
	(void)state;
	every_call("sync:#:EIO", NROWS);
	every_call("sync:#:EIO", 1);
}

/* (a failed sync in ENOSPC's words, as NFS gives: no less a failed sync)
 * Checks I24 (DESIGN §10). */
static void test_sync_enospc(void **state)
{
	(void)state;
	every_call("sync:#:ENOSPC", NROWS);
	every_call("sync:#:ENOSPC", 1);
}

static void test_write_eio(void **state)
{
	(void)state;
	every_call("write:#:EIO", NROWS);
	every_call("write:#:EIO", 1);
}

static void test_write_enospc(void **state)
{
	(void)state;
	every_call("write:#:ENOSPC", NROWS);
	every_call("write:#:ENOSPC", 1);
}

static void test_write_short(void **state)
{
	(void)state;
	every_call("write:#:short", NROWS);
	every_call("write:#:short", 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sync_eio),
		cmocka_unit_test(test_sync_enospc),
		cmocka_unit_test(test_write_eio),
		cmocka_unit_test(test_write_enospc),
		cmocka_unit_test(test_write_short),
	};

	fault = (crashrec_fault_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "crashrec_fault");
	fired = (crashrec_fault_fired_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "crashrec_fault_fired");
	follow = (crashrec_follow_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "crashrec_follow");
	if (!fault || !fired || !follow) {
		fprintf(stderr, "test_crashfault: the crash recorder is not linked in\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
