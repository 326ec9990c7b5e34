/*
 * test_time.c - one timestamp discipline (DESIGN §9.1): every order of
 * commits, snapshots, write-write windows and collection comes from the
 * store's own source, never from a host's wall clock.  The clock is frozen,
 * stepped back, or offset per handle through test hooks (common.h,
 * store.h), so each tie and each step is deterministic whatever the
 * machine's speed.  Backend-neutral (MRTX_TEST_STORE=rados runs it on
 * RADOS); the tests that need the other backend skip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "storage/store_test.h"
#include "storage/store.h"
#include "txn/txn_int.h"

#define B(s) MRTX_CSTR(s)

static mrtx_db *fresh(char **path, int durability)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db;

	o.durability = durability;
	db = tu_open_fresh("time", path, &o);
	assert_non_null(db);
	assert_int_equal(tu_table(db, "t", "f", NULL), MRTX_OK);
	return db;
}

static void done(mrtx_db *db, char *path)
{
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
	tu_clock_reset();
}

/* After each test, pass or fail: the clock runs free again. */
static int unhook(void **state)
{
	(void)state;
	tu_clock_reset();
	atomic_store(&store__lmdb_inexact_views, 0);
	return 0;
}

static int blind_put(mrtx_db *db, const char *row, const char *val)
{
	mrtx_txn *txn;
	int rc;

	if ((rc = mrtx_begin(db, &txn)))
		return rc;
	if ((rc = mrtx_put(txn, "t", B(row), "f", B("q"), B(val)))) {
		mrtx_abort(txn);
		return rc;
	}
	return mrtx_commit(txn);
}

static int blind_put2(mrtx_db *db, const char *r1, const char *r2, const char *val)
{
	mrtx_txn *txn;
	int rc;

	if ((rc = mrtx_begin(db, &txn)))
		return rc;
	if ((rc = mrtx_put(txn, "t", B(r1), "f", B("q"), B(val))) ||
	    (rc = mrtx_put(txn, "t", B(r2), "f", B("q"), B(val)))) {
		mrtx_abort(txn);
		return rc;
	}
	return mrtx_commit(txn);
}

/* Sequential blind writes of one row from one thread, with the wall clock
 * frozen (every first write and every commit in "the same microsecond"),
 * then stepped back ten seconds: never a conflict.  A write-write window
 * that began at the wall clock of the first write failed the second commit
 * of every frozen microsecond.
 * Checks I15 (DESIGN §10). */
static void test_sequential_blind_writes(void **state)
{
	int n = tu_rados() ? 60 : 3000, conflicts = 0;
	char *path, val[32];
	mrtx_db *db = fresh(&path, MRTX_NOSYNC);

	(void)state;
	atomic_store(&mrtx__clock_frozen_us, mrtx__now_us());
	for (int i = 0; i < n; i++) {
		int rc;

		snprintf(val, sizeof(val), "v%d", i);
		if (i == n / 2) /* the clock steps back */
			atomic_store(&mrtx__clock_step_us, -10000000ll);
		rc = i % 3 == 2 ? blind_put2(db, "r", "s", val) : blind_put(db, "r", val);
		if (rc == MRTX_CONFLICT)
			conflicts++;
		else
			assert_int_equal(rc, MRTX_OK);
	}
	assert_int_equal(conflicts, 0);
	assert_true(tu_cell_is(db, "t", B("r"), "f", B("q"), B(val), NULL));
	done(db, path);
}

/* Two blind writers of one row whose transactions overlap: the second to
 * commit conflicts (first committer wins), whether the wall clock is
 * frozen, stepped back between the two first writes, or was never asked
 * (the source's page rebuilt ahead of it, next test). */
static void overlapping_writers(mrtx_db *db, int step_between)
{
	mrtx_txn *a, *b;

	assert_int_equal(mrtx_begin(db, &a), MRTX_OK);
	assert_int_equal(mrtx_begin(db, &b), MRTX_OK);
	assert_int_equal(mrtx_put(a, "t", B("w"), "f", B("q"), B("a")), MRTX_OK);
	if (step_between)
		atomic_store(&mrtx__clock_step_us, -10000000ll);
	assert_int_equal(mrtx_put(b, "t", B("w"), "f", B("q"), B("b")), MRTX_OK);
	assert_int_equal(mrtx_commit(b), MRTX_OK);
	assert_int_equal(mrtx_commit(a), MRTX_CONFLICT);
	assert_true(tu_cell_is(db, "t", B("w"), "f", B("q"), B("b"), NULL));
	/* a writer that began after the commit does not conflict */
	assert_int_equal(blind_put(db, "w", "c"), MRTX_OK);
}

/* Checks I15 (DESIGN §10). */
static void test_overlapping_blind_writers(void **state)
{
	char *path;
	mrtx_db *db = fresh(&path, MRTX_NOSYNC);

	(void)state;
	assert_int_equal(blind_put(db, "w", "0"), MRTX_OK);
	overlapping_writers(db, 0);
	atomic_store(&mrtx__clock_frozen_us, mrtx__now_us());
	overlapping_writers(db, 0);
	overlapping_writers(db, 1);
	done(db, path);
}

/* LMDB: ts.shm removed while the store is closed (as `mrtx upgrade` does)
 * is rebuilt from the stored ceiling, a second ahead of the clock.  The
 * stamps that follow are ahead of the clock too; a write-write window
 * bounded by the clock read them as a clock stepped back and missed the
 * conflict for that second.
 * Checks I15 (DESIGN §10). */
static void test_rebuilt_page(void **state)
{
	char *path, *ts;
	mrtx_db *db;

	(void)state;
	if (tu_rados())
		skip();
	db = fresh(&path, MRTX_NOSYNC);
	atomic_store(&mrtx__clock_frozen_us, mrtx__now_us());
	assert_int_equal(blind_put(db, "w", "0"), MRTX_OK);
	mrtx_close(db);
	assert_true(asprintf(&ts, "%s/ts.shm", path) > 0);
	assert_int_equal(unlink(ts), 0);
	free(ts);
	db = tu_open(path, NULL);
	assert_non_null(db);
	overlapping_writers(db, 0);
	for (int i = 0; i < 100; i++)
		assert_int_equal(blind_put(db, "w", "x"), MRTX_OK);
	done(db, path);
}

/* Clock skew between handles changes nothing: a handle whose clock runs
 * five seconds ahead and one five seconds behind write the same rows
 * blind, in turn and overlapping, with the same outcomes as without.
 * Checks I15 (DESIGN §10). */
static void test_skewed_handles(void **state)
{
	char *path;
	mrtx_db *fast, *slow;

	(void)state;
	fast = fresh(&path, MRTX_NOSYNC);
	slow = tu_open(path, NULL);
	assert_non_null(slow);
	store__clock_offset(fast->st, 5000000);
	store__clock_offset(slow->st, -5000000);
	for (int i = 0; i < 40; i++) {
		char v[16];

		snprintf(v, sizeof(v), "%d", i);
		/* in turn: the later writer never conflicts (mrtx_commit, no
		 * retry: the first attempt must succeed) ... */
		assert_int_equal(blind_put(i % 2 ? fast : slow, "k", v), MRTX_OK);
		assert_true(tu_cell_is(i % 2 ? slow : fast, "t", B("k"), "f", B("q"), B(v), NULL));
	}
	{
		/* ... overlapping: the second to commit does */
		mrtx_txn *a, *b;

		assert_int_equal(mrtx_begin(fast, &a), MRTX_OK);
		assert_int_equal(mrtx_begin(slow, &b), MRTX_OK);
		assert_int_equal(mrtx_put(a, "t", B("k"), "f", B("q"), B("a")), MRTX_OK);
		assert_int_equal(mrtx_put(b, "t", B("k"), "f", B("q"), B("b")), MRTX_OK);
		assert_int_equal(mrtx_commit(a), MRTX_OK);
		assert_int_equal(mrtx_commit(b), MRTX_CONFLICT);
	}
	mrtx_close(slow);
	done(fast, path);
}

/* A snapshot begun after a commit returned sees it, whichever handle made
 * the commit and whatever the handles' clocks say: the writer's clock
 * five seconds behind, the reader's five ahead, and the other way.
 * Checks I13, I17 (DESIGN §10). */
static void test_snapshot_after_commit(void **state)
{
	char *path;
	mrtx_db *w, *r;

	(void)state;
	w = fresh(&path, MRTX_NOSYNC);
	r = tu_open(path, NULL);
	assert_non_null(r);
	for (int i = 0; i < 40; i++) {
		long long skew = i % 2 ? 5000000 : -5000000;
		char v[16];
		mrtx_txn *txn;
		mrtx_bytes got;

		store__clock_offset(w->st, skew);
		store__clock_offset(r->st, -skew);
		snprintf(v, sizeof(v), "%d", i);
		assert_int_equal(blind_put(w, "k", v), MRTX_OK);
		assert_int_equal(mrtx_begin(r, &txn), MRTX_OK);
		assert_int_equal(mrtx_get(txn, "t", B("k"), "f", B("q"), &got), MRTX_OK);
		assert_int_equal(got.size, strlen(v));
		assert_memory_equal(got.data, v, got.size);
		assert_int_equal(mrtx_commit(txn), MRTX_OK);
	}
	mrtx_close(r);
	done(w, path);
}

/* RADOS: the oracle runs ahead of the clock while handles contend for it.
 * Twelve handles take timestamps as fast as they can; meanwhile one handle
 * commits a row and another begins a snapshot after the commit returned:
 * the snapshot reads it, every time.  A one-row commit stamped from its
 * handle's last value and not raising the oracle was missed 60 times of
 * 60. */
#define CONTENDERS 12
struct contend {
	mrtx_db *db;
	_Atomic int *stop;
};

static void *contender(void *arg)
{
	struct contend *c = arg;

	while (!atomic_load(c->stop)) {
		uint64_t ts;

		if (store_ts_next(c->db->st, 0, &ts))
			break;
	}
	return NULL;
}

/* Checks I17 (DESIGN §10). */
static void test_snapshot_under_contention(void **state)
{
	struct contend c[CONTENDERS];
	pthread_t th[CONTENDERS];
	_Atomic int stop = 0;
	char *path;
	mrtx_db *w, *r;

	(void)state;
	if (!tu_rados())
		skip(); /* (LMDB stamps under its writer lock: no oracle to outrun) */
	w = fresh(&path, MRTX_NOSYNC);
	r = tu_open(path, NULL);
	assert_non_null(r);
	for (int i = 0; i < CONTENDERS; i++) {
		c[i] = (struct contend){ tu_open(path, NULL), &stop };
		assert_non_null(c[i].db);
		store__clock_offset(c[i].db->st, i % 2 ? 5000000 : -5000000);
		assert_int_equal(pthread_create(&th[i], NULL, contender, &c[i]), 0);
	}
	for (int i = 0; i < 60; i++) {
		char v[16];
		mrtx_txn *txn;
		mrtx_bytes got;

		snprintf(v, sizeof(v), "%d", i);
		assert_int_equal(blind_put(w, "k", v), MRTX_OK);
		assert_int_equal(mrtx_begin(r, &txn), MRTX_OK);
		assert_int_equal(mrtx_get(txn, "t", B("k"), "f", B("q"), &got), MRTX_OK);
		assert_int_equal(got.size, strlen(v));
		assert_memory_equal(got.data, v, got.size);
		assert_int_equal(mrtx_commit(txn), MRTX_OK);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < CONTENDERS; i++) {
		pthread_join(th[i], NULL);
		mrtx_close(c[i].db);
	}
	mrtx_close(r);
	done(w, path);
}

/* RADOS collection tests: a store with table v (family h, one version)
 * holding k = "old", written through w; r reads, g collects, ahead pushes
 * the oracle. */
struct gc_world {
	char *path;
	mrtx_db *w, *r, *g, *ahead;
};

static void gc_world_open(struct gc_world *x)
{
	static const mrtx_family_spec fams[] = { { "h", 1, 0, 0 } };

	x->w = fresh(&x->path, MRTX_NOSYNC);
	assert_int_equal(mrtx_create_table2(x->w, "v", fams, 1), MRTX_OK);
	x->r = tu_open(x->path, NULL);
	x->g = tu_open(x->path, NULL);
	x->ahead = tu_open(x->path, NULL);
	assert_true(x->r && x->g && x->ahead);
	assert_int_equal(tu_put(x->w, "v", B("k"), "h", B("q"), B("old")), MRTX_OK);
}

/* The oracle pushed a minute ahead of every clock, by a handle whose clock
 * runs that far ahead. */
static void gc_world_oracle_ahead(struct gc_world *x)
{
	uint64_t ts;

	store__clock_offset(x->ahead->st, 60000000);
	assert_int_equal(store_ts_next(x->ahead->st, 0, &ts), MRTX_OK);
}

static void gc_world_close(struct gc_world *x)
{
	mrtx_close(x->ahead);
	mrtx_close(x->g);
	mrtx_close(x->r);
	done(x->w, x->path);
}

/* RADOS: collection keeps what a running snapshot reads, whatever the
 * oracle's lead.  A control row is overwritten; a snapshot begins and
 * reads; the row is overwritten; a handle whose clock runs a minute ahead
 * pushes the oracle a minute on, and `mrtx_gc` (keep 5 s, from a third
 * handle) runs: it removes the control row's two versions older than the
 * snapshot (so it ran, with a safe point past them), and the snapshot, a
 * moment old, still reads its version.  Publication that waited for the
 * wall clock to pass the snapshot's (oracle) timestamp left it unlisted,
 * and the safe point, oracle time less 5 s, was above it.
 * Checks I19 (DESIGN §10). */
static void test_gc_keeps_young_snapshot(void **state)
{
	struct gc_world x;
	mrtx_db *w, *r, *g;
	mrtx_txn *snap;
	mrtx_bytes got;
	uint64_t n;

	(void)state;
	if (!tu_rados())
		skip(); /* (LMDB: a snapshot is a read transaction, which LMDB keeps) */
	gc_world_open(&x);
	w = x.w;
	r = x.r;
	g = x.g;
	for (int i = 0; i < 3; i++)
		assert_int_equal(tu_put(w, "v", B("c"), "h", B("q"), B("control")), MRTX_OK);
	assert_int_equal(mrtx_begin(r, &snap), MRTX_OK);
	assert_int_equal(mrtx_get(snap, "v", B("k"), "h", B("q"), &got), MRTX_OK);
	for (int i = 0; i < 3; i++)
		assert_int_equal(tu_put(w, "v", B("k"), "h", B("q"), B("new")), MRTX_OK);
	gc_world_oracle_ahead(&x);
	assert_int_equal(mrtx_gc(g, 5000, &n), MRTX_OK);
	assert_int_equal(n, 2);
	assert_int_equal(mrtx_get(snap, "v", B("k"), "h", B("q"), &got), MRTX_OK);
	assert_int_equal(got.size, 3);
	assert_memory_equal(got.data, "old", 3);
	assert_int_equal(mrtx_commit(snap), MRTX_OK);
	gc_world_close(&x);
}

struct held_snap {
	mrtx_db *db;
	int rc;
	char val[16];
};

/* A snapshot that reads row k: its reservation is held at failpoint
 * snap.after_reserve until the test lets it go. */
static void *held_snapshot(void *arg)
{
	struct held_snap *h = arg;
	mrtx_txn *txn;
	mrtx_bytes got;

	if ((h->rc = mrtx_begin(h->db, &txn)))
		return NULL;
	h->rc = mrtx_get(txn, "v", B("k"), "h", B("q"), &got);
	if (h->rc == MRTX_OK)
		snprintf(h->val, sizeof(h->val), "%.*s", (int)got.size, (const char *)got.data);
	if (h->rc == MRTX_OK)
		h->rc = mrtx_commit(txn);
	else
		mrtx_abort(txn);
	return NULL;
}

/* RADOS: a snapshot stays covered by its handle's registry record when
 * another thread of the handle reserves one.  Thread A's snapshot is
 * reserved and held before its first read; the row is overwritten; thread
 * B of the same handle takes a snapshot, whose reservation rewrites the
 * handle's one record; the oracle is pushed a minute on and `mrtx gc`
 * (keep 5 s) runs from another handle.  A, let go, still reads the value
 * of its timestamp.  (A snapshot entered in the handle's set only once its
 * own thread ran again left B's record, the minimum of a set without A,
 * above A: gc took the version, and A's read failed with
 * MRTX_ESNAPSHOT.)
 * Checks I19 (DESIGN §10). */
static void test_registry_covers_reserving_snapshot(void **state)
{
	char go[256];
	struct gc_world x;
	mrtx_db *w, *r, *g;
	struct held_snap a = { 0 };
	mrtx_txn *b;
	mrtx_bytes got;
	pthread_t th;
	uint64_t n;

	(void)state;
	if (!tu_rados())
		skip(); /* (LMDB: a snapshot is a read transaction, which LMDB keeps) */
	gc_world_open(&x);
	w = x.w;
	r = x.r;
	g = x.g;
	tu_fp_hold("snap.after_reserve", 1, "time", go, sizeof(go));
	a.db = r;
	assert_int_equal(pthread_create(&th, NULL, held_snapshot, &a), 0);
	tu_fp_wait("snap.after_reserve", 1);
	assert_int_equal(tu_put(w, "v", B("k"), "h", B("q"), B("new")), MRTX_OK);
	assert_int_equal(mrtx_begin(r, &b), MRTX_OK);
	assert_int_equal(mrtx_get(b, "v", B("k"), "h", B("q"), &got), MRTX_OK);
	assert_true(got.size == 3 && memcmp(got.data, "new", 3) == 0);
	gc_world_oracle_ahead(&x);
	assert_int_equal(mrtx_gc(g, 5000, &n), MRTX_OK);
	tu_fp_release(go, th);
	assert_int_equal(a.rc, MRTX_OK);
	assert_string_equal(a.val, "old");
	assert_int_equal(mrtx_commit(b), MRTX_OK);
	gc_world_close(&x);
}

/* RADOS: a collector of the very handle whose snapshot is being reserved
 * does not pass it.  Thread A's reservation is held after its write, before
 * A's snapshot is in the handle's live set (ts.before_enter); the row is
 * overwritten; the oracle is pushed a minute on; `mrtx gc` (keep 0) runs on
 * A's own handle, which reads its live set instead of its own registry
 * record.  A, let go, reads the value of its timestamp.  (A set that did
 * not hold a reservation under way let gc take the version: A's read
 * failed with MRTX_ESNAPSHOT.)
 * Checks I19 (DESIGN §10). */
static void test_own_collector_covers_reserving_snapshot(void **state)
{
	char go[256];
	struct gc_world x;
	mrtx_db *w, *r;
	struct held_snap a = { 0 };
	pthread_t th;
	uint64_t n;

	(void)state;
	if (!tu_rados())
		skip(); /* (LMDB: a snapshot is a read transaction, which LMDB keeps) */
	gc_world_open(&x);
	w = x.w;
	r = x.r;
	tu_fp_hold("ts.before_enter", 0, "enter", go, sizeof(go));
	a.db = r;
	assert_int_equal(pthread_create(&th, NULL, held_snapshot, &a), 0);
	tu_fp_wait("ts.before_enter", 1);
	assert_int_equal(tu_put(w, "v", B("k"), "h", B("q"), B("new")), MRTX_OK);
	gc_world_oracle_ahead(&x);
	assert_int_equal(mrtx_gc(r, 0, &n), MRTX_OK);
	tu_fp_release(go, th);
	assert_int_equal(a.rc, MRTX_OK);
	assert_string_equal(a.val, "old");
	gc_world_close(&x);
}

/* One read-only transaction of db: read r7, commit.  Returns the
 * fdatasyncs it made. */
static unsigned long ro_read(mrtx_db *db, int read)
{
	unsigned long before = atomic_load(&store__syncs);
	mrtx_txn *txn;
	mrtx_bytes got;

	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	if (read)
		assert_int_equal(mrtx_get(txn, "t", B("r7"), "f", B("q"), &got), MRTX_OK);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	return atomic_load(&store__syncs) - before;
}

/* A thread's read-only transaction of r7 (no cmocka assertion off the
 * test's thread): its rc. */
static void *ro_reader(void *db)
{
	mrtx_txn *txn;
	mrtx_bytes got;
	intptr_t rc;

	if ((rc = mrtx_begin(db, &txn)) == 0 &&
	    (rc = mrtx_get(txn, "t", B("r7"), "f", B("q"), &got)) == 0)
		return (void *)(intptr_t)mrtx_commit(txn);
	mrtx_abort(txn);
	return (void *)rc;
}

/* LMDB, MRTX_SYNC: a read-only commit makes durable only what it could
 * have read unsynced, and once.  Commits of this handle are durable when
 * they return: reading them syncs nothing.  A commit of another handle
 * (another process, as far as this one knows) is read, and synced by the
 * first read-only commit that read it, and by no later one; a transaction
 * that read nothing syncs nothing.
 * Checks I23 (DESIGN §10). */
static void test_readonly_commit_syncs(void **state)
{
	char *path;
	mrtx_db *db;
	unsigned long n = 0;

	(void)state;
	if (tu_rados())
		skip();
	db = fresh(&path, MRTX_SYNC);
	for (int i = 0; i < 20; i++) {
		char row[16];

		snprintf(row, sizeof(row), "r%d", i);
		assert_int_equal(blind_put(db, row, "v"), MRTX_OK);
	}
	for (int i = 0; i < 10000; i++)
		n += ro_read(db, 1);
	assert_int_equal(n, 0);
	for (int round = 0; round < 3; round++) {
		pid_t pid = fork();
		int status;

		assert_true(pid >= 0);
		if (pid == 0) { /* another process commits (and syncs) r7 */
			mrtx_options o = MRTX_OPTIONS_INIT;
			mrtx_db *cdb;

			o.durability = MRTX_SYNC;
			cdb = tu_open(path, &o);
			_exit(!cdb || blind_put(cdb, "r7", round & 1 ? "x" : "w") ? 2 : 0);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		assert_int_equal(ro_read(db, 0), 0);  /* read nothing */
		assert_int_equal(ro_read(db, 1), 1);  /* read other's commit */
		n = 0;
		for (int i = 0; i < 100; i++)
			n += ro_read(db, 1);
		assert_int_equal(n, 0);
	}
	/* eight readers at once of another process's commit: one sync
	 * between them, however they interleave (those that queue behind the
	 * syncing one find it made) */
	for (int round = 0; round < 3; round++) {
		pid_t pid = fork();
		pthread_t th[8];
		unsigned long before;
		int status;

		assert_true(pid >= 0);
		if (pid == 0) {
			mrtx_options o = MRTX_OPTIONS_INIT;
			mrtx_db *cdb;

			o.durability = MRTX_SYNC;
			cdb = tu_open(path, &o);
			_exit(!cdb || blind_put(cdb, "r7", round & 1 ? "y" : "z") ? 2 : 0);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		before = atomic_load(&store__syncs);
		for (int i = 0; i < 8; i++)
			assert_int_equal(pthread_create(&th[i], NULL, ro_reader, db), 0);
		for (int i = 0; i < 8; i++) {
			void *rc;

			assert_int_equal(pthread_join(th[i], &rc), 0);
			assert_int_equal((intptr_t)rc, MRTX_OK);
		}
		assert_int_equal(atomic_load(&store__syncs) - before, 1);
	}
	done(db, path);
}

/* An LMDB view that cannot be pinned to its transaction id (commits kept
 * landing while it was taken: store__lmdb_inexact_views plays them) has
 * timestamp 0, not one that may be below commits it holds; mrtx_gc and
 * mrtx_begin_at, which need the timestamp, take a view again, and fail
 * with MRTX_ENOTSUP only after 16 such views.
 * Checks I16 (DESIGN §10). */
static void test_unpinned_view(void **state)
{
	char *path;
	mrtx_db *db;
	mrtx_txn *txn;
	mrtx_bytes v;
	uint64_t a = 0;

	(void)state;
	if (tu_rados())
		skip();
	db = fresh(&path, MRTX_NOSYNC);
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t", B("r"), "f", B("q"), B("v")), MRTX_OK);
	assert_int_equal(mrtx_commit_ts(txn, &a), MRTX_OK);
	assert_true(a > 0);

	atomic_store(&store__lmdb_inexact_views, 8);
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	assert_int_equal(mrtx_get(txn, "t", B("r"), "f", B("q"), &v), MRTX_OK);
	assert_int_equal(mrtx_txn_snapshot_ts(txn), 0);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	assert_int_equal(atomic_load(&store__lmdb_inexact_views), 0);

	atomic_store(&store__lmdb_inexact_views, 16 * 8);
	assert_int_equal(mrtx_begin_at(db, a, &txn), MRTX_ENOTSUP);
	atomic_store(&store__lmdb_inexact_views, 16 * 8);
	assert_int_equal(mrtx_gc(db, 0, NULL), MRTX_ENOTSUP);

	atomic_store(&store__lmdb_inexact_views, 15 * 8);
	assert_int_equal(mrtx_begin_at(db, a, &txn), MRTX_OK);
	assert_int_equal(mrtx_get(txn, "t", B("r"), "f", B("q"), &v), MRTX_OK);
	assert_true(v.size == 1 && memcmp(v.data, "v", 1) == 0);
	mrtx_abort(txn);
	atomic_store(&store__lmdb_inexact_views, 15 * 8);
	assert_int_equal(mrtx_gc(db, 0, NULL), MRTX_OK);
	assert_int_equal(atomic_load(&store__lmdb_inexact_views), 0);
	done(db, path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_sequential_blind_writes, unhook),
		cmocka_unit_test_teardown(test_overlapping_blind_writers, unhook),
		cmocka_unit_test_teardown(test_rebuilt_page, unhook),
		cmocka_unit_test_teardown(test_skewed_handles, unhook),
		cmocka_unit_test_teardown(test_snapshot_after_commit, unhook),
		cmocka_unit_test_teardown(test_snapshot_under_contention, unhook),
		cmocka_unit_test_teardown(test_gc_keeps_young_snapshot, unhook),
		cmocka_unit_test_teardown(test_registry_covers_reserving_snapshot, unhook),
		cmocka_unit_test_teardown(test_own_collector_covers_reserving_snapshot, unhook),
		cmocka_unit_test_teardown(test_readonly_commit_syncs, unhook),
		cmocka_unit_test_teardown(test_unpinned_view, unhook),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
