/*
 * test_heartbeat.c - a commit that outlives its lock TTL keeps its locks
 * (txn/heartbeat.h) instead of being aborted under it.
 *
 * A writer thread commits two rows with a 300 ms lock TTL (RADOS: 1 s) and
 * is held between its prewrite and its commit point (a failpoint).  The
 * wall clock is frozen and stepped by the test (mrtx__clock_frozen_us), a
 * little over half a TTL at a time, three TTLs in all: after each step the
 * heartbeat's refresh is due, the test waits for it (mrtx__hb_refreshes)
 * and reads the primary.  The writer is alive, so a reader judges it by
 * the lock's expiry alone -- as it must for an owner on another host.
 * Without the heartbeat the lock would be expired from the second step, the
 * reader would abort the transaction, and the writer's commit would fail
 * with MRTX_CONFLICT (a heartbeat that does not run at all fails the wait
 * for its refresh, after a hang guard of 20 s); with it, the reader keeps
 * getting MRTX_ELOCKED and the commit succeeds.  Then the same with an
 * operator's forced recovery in the middle: the heartbeat cannot keep what
 * was taken, the commit fails with MRTX_CONFLICT and nothing of it is
 * visible.  No outcome depends on how fast the machine runs: every wait is
 * for an event.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "recovery/recovery.h"
#include "storage/common.h"
#include "txn/admin_test.h"
#include "txn/txn_test.h"

/* On RADOS a refresh is a network round trip on a loaded machine: longer
 * (the heartbeat's thread waits up to half a TTL of real time before it
 * sees a step of the frozen clock). */
#define TTL_MS (tu_rados() ? 1000u : 300u)
#define STEPS 6 /* of TTL/2 + 1 ms: three TTLs */

typedef struct writer {
	mrtx_db *db;
	const char *value;
	int rc;
} writer;

static void *write_two(void *arg)
{
	writer *w = arg;
	mrtx_txn *txn;

	w->rc = mrtx_begin(w->db, &txn);
	if (w->rc == 0)
		w->rc = mrtx_put(txn, "t", MRTX_CSTR("x"), "f", MRTX_CSTR("v"), MRTX_CSTR(w->value));
	if (w->rc == 0)
		w->rc = mrtx_put(txn, "t", MRTX_CSTR("y"), "f", MRTX_CSTR("v"), MRTX_CSTR(w->value));
	if (w->rc == 0)
		w->rc = mrtx_commit(txn);
	else
		mrtx_abort(txn);
	return NULL;
}

/* Freeze the wall clock where it is (undone by tu_clock_reset). */
static void freeze(void)
{
	atomic_store(&mrtx__clock_frozen_us, mrtx__now_us());
}

/* Wait until the heartbeat has refreshed a lock (*refreshed) or failed to
 * (its retry then comes a quarter TTL on) since the counts n and f: a wait
 * for an event, failing with a message after HANG_GUARD_S seconds of real
 * time (the heartbeat thread sees a step of the frozen clock within half a
 * TTL of real time). */
#define HANG_GUARD_S 20
static void wait_refresh(unsigned long n, unsigned long f, int *refreshed)
{
	for (int i = 0;; i++) {
		if (atomic_load(&mrtx__hb_refreshes) != n) {
			*refreshed = 1;
			return;
		}
		if (atomic_load(&mrtx__hb_refresh_failures) != f) {
			*refreshed = 0;
			return;
		}
		if (i >= HANG_GUARD_S * 200)
			fail_msg("no refresh of the primary lock, nor a failed one, within %d s of "
			         "real time after the clock passed its due time", HANG_GUARD_S);
		usleep(5000);
	}
}

/* Step the frozen clock a little past the next refresh's due time (half a
 * TTL before the expiry) and wait until the heartbeat has refreshed once
 * more.  A refresh that fails (on RADOS a reader's push can change the
 * lock under it) is tried again a quarter TTL later, still before the
 * expiry: the clock steps there once. */
static void step_past_refresh(void)
{
	unsigned long n = atomic_load(&mrtx__hb_refreshes);
	unsigned long f = atomic_load(&mrtx__hb_refresh_failures);
	int refreshed;

	atomic_fetch_add(&mrtx__clock_frozen_us, (TTL_MS / 2 + 1) * 1000ull);
	wait_refresh(n, f, &refreshed);
	if (refreshed)
		return;
	f = atomic_load(&mrtx__hb_refresh_failures);
	atomic_fetch_add(&mrtx__clock_frozen_us, (TTL_MS / 4) * 1000ull);
	wait_refresh(n, f, &refreshed);
	if (!refreshed)
		fail_msg("the heartbeat failed to refresh the primary lock twice in a row");
}

static mrtx_db *open_short_ttl(char **path)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db;

	o.lock_ttl_ms = TTL_MS;
	o.lock_wait_ms = 20;
	o.durability = MRTX_NOSYNC;
	*path = tu_tmpdir("heartbeat");
	db = tu_open(*path, &o);
	assert_non_null(db);
	assert_int_equal(tu_table(db, "t", "f", NULL), 0);
	assert_int_equal(tu_put(db, "t", MRTX_CSTR("x"), "f", MRTX_CSTR("v"), MRTX_CSTR("old")), 0);
	assert_int_equal(tu_put(db, "t", MRTX_CSTR("y"), "f", MRTX_CSTR("v"), MRTX_CSTR("old")), 0);
	return db;
}

/* A read of row r in its own transaction: its rc; the value into buf. */
static int read_row(mrtx_db *db, const char *r, char *buf, size_t n)
{
	return tu_get_str(db, "t", r, "f:v", buf, n);
}

/* A reader thread beside the steps: it reads both rows over and over, so
 * reads race the refreshes at random (each outcome must still be the
 * lock met, or "old"), until stop. */
typedef struct racer {
	mrtx_db *db;
	atomic_int stop;
	unsigned long reads, other;
} racer;

static void *race_reads(void *arg)
{
	racer *r = arg;
	char buf[32];

	while (!atomic_load(&r->stop)) {
		for (int i = 0; i < 2; i++) {
			int rc = read_row(r->db, i ? "y" : "x", buf, sizeof(buf));

			if (rc != MRTX_ELOCKED && (rc != 0 || strcmp(buf, "old") != 0))
				r->other++;
			r->reads++;
		}
	}
	return NULL;
}

/* Checks I9 (DESIGN §10). */
static void slow_commit_keeps_its_locks(void **state)
{
	char *path, buf[32], go[256];
	mrtx_db *db;
	writer w = { NULL, "new", -1 };
	racer rr = { 0 };
	pthread_t th, rth;
	int locked = 0, other = 0;

	(void)state;
	freeze();
	w.db = db = open_short_ttl(&path);
	tu_fp_hold("commit.after_validate", 1, "heartbeat-slow", go, sizeof(go));
	assert_int_equal(pthread_create(&th, NULL, write_two, &w), 0);
	tu_fp_wait("commit.after_validate", 1); /* (its locks in place) */
	rr.db = db;
	assert_int_equal(pthread_create(&rth, NULL, race_reads, &rr), 0);
	/* Read the primary after each refresh, three TTLs in all.  (RADOS: a
	 * read pushes the live writer above its snapshot and reads past the
	 * lock; the lock is counted from the store.  A read that found it
	 * expired would roll it back, and the commit would fail.) */
	for (int step = 0; step < STEPS; step++) {
		int rc;

		step_past_refresh();
		rc = read_row(db, "x", buf, sizeof(buf));
		if (tu_rados() && rc == 0)
			locked += tu_open_locks(db) > 0;
		if (rc == MRTX_ELOCKED)
			locked++;
		else if (rc != 0 || strcmp(buf, "old") != 0)
			other++;
		/* the secondary too: its own expiry is never refreshed, the
		 * primary's liveness counts (RADOS: read past; LMDB: a first
		 * read waits, ELOCKED) */
		rc = read_row(db, "y", buf, sizeof(buf));
		if (!(rc == MRTX_ELOCKED && !tu_rados()) && (rc != 0 || strcmp(buf, "old") != 0))
			other++;
	}
	atomic_store(&rr.stop, 1); /* (before the commit: it would read "new") */
	assert_int_equal(pthread_join(rth, NULL), 0);
	tu_fp_release(go, th);
	print_message("reader: %d of %d reads met the live lock, %d saw anything else but "
	              "'old'; beside them %lu racing reads, %lu anything else\n", locked, STEPS,
	              other, rr.reads, rr.other);
	assert_int_equal(rr.other, 0);
	assert_int_equal(w.rc, MRTX_OK);
	assert_int_equal(locked, STEPS); /* every read met the commit in flight */
	assert_int_equal(other, 0);
	assert_int_equal(read_row(db, "x", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "new");
	assert_int_equal(read_row(db, "y", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "new");
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* Checks I9 (DESIGN §10). */
static void forced_recovery_still_wins(void **state)
{
	char *path, buf[32];
	mrtx_db *db;
	writer w = { NULL, "new", -1 };
	recover_opts ro = { 0, 1, 0 }; /* --force */
	recover_stats st;
	pthread_t th;
	char go[256];

	(void)state;
	freeze();
	w.db = db = open_short_ttl(&path);
	/* the writer held after its validation, its locks in place, until
	 * the sweep is done: whatever the machine's speed, the sweep comes
	 * first */
	tu_fp_hold("commit.after_validate", 1, "heartbeat", go, sizeof(go));
	assert_int_equal(pthread_create(&th, NULL, write_two, &w), 0);
	tu_fp_wait("commit.after_validate", 1);
	step_past_refresh(); /* the heartbeat at work: the lock is live */
	step_past_refresh();
	memset(&st, 0, sizeof(st));
	assert_int_equal(recover_sweep(mrtx__db_store(db), &ro, &st, NULL, NULL), 0);
	tu_fp_release(go, th);
	print_message("forced sweep: %lu locks, %lu rolled back; commit: %s\n", st.locks_seen,
	              st.rolled_back, mrtx_strerror(w.rc));
	assert_true(st.rolled_back >= 1);
	assert_int_equal(w.rc, MRTX_CONFLICT);
	assert_int_equal(read_row(db, "x", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "old");
	assert_int_equal(read_row(db, "y", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "old");
	memset(&st, 0, sizeof(st));
	ro.force = 0;
	assert_int_equal(recover_sweep(mrtx__db_store(db), &ro, &st, NULL, NULL), 0);
	assert_int_equal(st.locks_seen, 0);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/*
 * A refresh that applied but whose reply was lost (MRTX_EUNKNOWN: the
 * unbatched store's store.after_row_write=error fails the call after the
 * write) leaves the heartbeat unsure which bytes the primary holds; the
 * commit re-reads it and commits, instead of failing its commit point on
 * stale bytes with a false MRTX_CONFLICT and leaving the primary locked.
 * Checks I9 (DESIGN §10).
 */
static void lost_refresh_reply(void **state)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	char *path, buf[32], go[256], spec[512];
	writer w = { NULL, "new", -1 };
	recover_opts ro = { 0, 0, 1 };
	recover_stats st;
	pthread_t th;

	(void)state;
	freeze();
	o.lock_ttl_ms = TTL_MS;
	o.durability = MRTX_NOSYNC;
	path = tu_tmpdir("heartbeat-lost");
	w.db = tu_open_k(path, &o, &(mrtx__knobs){ 1, 0, 0 });
	assert_non_null(w.db);
	assert_int_equal(tu_table(w.db, "t", "f", NULL), 0);
	/* hits 1 and 2: the two prewrites; hit 3: the first refresh, which
	 * applies and then fails (its reply lost) */
	tu_fp_hold("commit.after_validate", 1, "heartbeat-lost", go, sizeof(go));
	snprintf(spec, sizeof(spec),
	         "commit.after_validate=wait:%s@1,store.after_row_write=error@3", go);
	assert_int_equal(mrtx_failpoints_set(spec), 0);
	assert_int_equal(pthread_create(&th, NULL, write_two, &w), 0);
	tu_fp_wait("commit.after_validate", 1);
	atomic_fetch_add(&mrtx__clock_frozen_us, (TTL_MS / 2 + 1) * 1000ull);
	tu_fp_wait("store.after_row_write", 3);
	tu_fp_release(go, th);
	assert_int_equal(w.rc, MRTX_OK);
	assert_int_equal(read_row(w.db, "x", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "new");
	memset(&st, 0, sizeof(st));
	assert_int_equal(recover_sweep(mrtx__db_store(w.db), &ro, &st, NULL, NULL), 0);
	assert_int_equal(st.locks_seen, 0);
	mrtx_close(w.db);
	tu_rmrf(path);
	free(path);
}

/* After each test, also one that failed on the way: the real clock, and
 * no failpoint armed. */
static int thaw_after(void **state)
{
	(void)state;
	tu_clock_reset();
	mrtx_failpoints_set(NULL);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(slow_commit_keeps_its_locks, thaw_after),
		cmocka_unit_test_teardown(forced_recovery_still_wins, thaw_after),
		cmocka_unit_test_teardown(lost_refresh_reply, thaw_after),
	};

	/* These tests hold commits between the prewrite and the commit point of the two-phase
	 * protocol (DESIGN §5.2): every handle
	 * opened here uses it (the two_phase knob, txn_test.h).  One-phase commits on
	 * LMDB (§5.3) are covered by test_txn. */
	setenv("MRTX_TWO_PHASE", "1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
