/*
 * bench_sqlite.c - the SQLite baseline of `mrtx bench` (multi_row and
 * interactive), in the same rounds as mrtx and LMDB (bench_main.c).
 *
 * One database file per side, fresh, under the bench directory, in WAL
 * mode, with one key/value table as LMDB's: kv(k TEXT PRIMARY KEY, v BLOB)
 * WITHOUT ROWID (one B-tree, keyed as LMDB's "row/q0" keys), holding the
 * same 16-byte values.  Durability as mrtx's: MRTX_SYNC is
 * synchronous=FULL (the WAL is synced at every commit), MRTX_NOSYNC
 * synchronous=OFF.  Every thread or process has its own connection, with
 * a busy timeout of 5 s (SQLite's own busy handler, which sleeps).
 *
 * interactive (8 processes, after fork): BEGIN, read both balances, think
 * 200 us, write both, COMMIT; as BEGIN IMMEDIATE (the write lock is taken
 * at BEGIN, so the transfers are serialised, think time included, as
 * LMDB's) or BEGIN DEFERRED (reads in a snapshot; the first UPDATE must
 * take the write lock, and fails at once with SQLITE_BUSY when another
 * connection holds it, or SQLITE_BUSY_SNAPSHOT when one committed since
 * the snapshot: the busy handler is not called for such an upgrade).
 * A busy failure anywhere rolls the transaction back and runs it again
 * from BEGIN (counted as a retry).
 *
 * multi_row (8 threads): BEGIN IMMEDIATE, the 4 rows' upserts, COMMIT;
 * retried likewise.
 */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_int.h"

#define BUSY_MS 5000
#define MAX_RETRIES 100000

static void sq_die(sqlite3 *db, const char *step)
{
	die(step, db ? sqlite3_errmsg(db) : "cannot allocate a connection");
}

static void sq_exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		char msg[256];

		snprintf(msg, sizeof(msg), "%s: %s", sql, err ? err : sqlite3_errmsg(db));
		die("sqlite", msg);
	}
}

/* A connection for one thread or process, durability as mrtx's. */
static sqlite3 *sq_open(const char *path, int durability)
{
	sqlite3 *db = NULL;

	/* one connection per thread: no mutex on it (multi-thread mode) */
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK)
		sq_die(db, "sqlite open");
	sqlite3_extended_result_codes(db, 1);
	sqlite3_busy_timeout(db, BUSY_MS);
	sq_exec(db, durability == MRTX_SYNC ? "PRAGMA synchronous=FULL" :
	                                      "PRAGMA synchronous=OFF");
	return db;
}

static sqlite3_stmt *sq_prep(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK)
		sq_die(db, "sqlite prepare");
	return st;
}

char *sqlite_create(bcfg *c)
{
	char *dir = fresh_dir(c, "sqlite"), *path;
	sqlite3 *db = NULL;
	sqlite3_stmt *st;

	if (asprintf(&path, "%s/bench.db", dir) < 0)
		die("alloc", "out of memory");
	free(dir);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK)
		sq_die(db, "sqlite create");
	/* WAL is a property of the file: every later connection uses it */
	st = sq_prep(db, "PRAGMA journal_mode=WAL");
	if (sqlite3_step(st) != SQLITE_ROW ||
	    strcmp((const char *)sqlite3_column_text(st, 0), "wal") != 0)
		die("sqlite create", "the database would not go to WAL mode");
	sqlite3_finalize(st);
	sq_exec(db, "CREATE TABLE kv (k TEXT PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID");
	if (sqlite3_close(db) != SQLITE_OK)
		die("sqlite create", "close failed");
	return path;
}

void sqlite_load_accounts(const char *path)
{
	sqlite3 *db = sq_open(path, MRTX_SYNC);
	sqlite3_stmt *st = sq_prep(db, "INSERT INTO kv (k, v) VALUES (?1, ?2)");
	char key[32], v[16];

	bal_encode(v, BAL_INIT);
	sq_exec(db, "BEGIN IMMEDIATE");
	for (int i = 0; i < BAL_ACCOUNTS; i++) {
		snprintf(key, sizeof(key), "r%08d/q0", i);
		sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
		sqlite3_bind_blob(st, 2, v, 16, SQLITE_TRANSIENT);
		if (sqlite3_step(st) != SQLITE_DONE)
			sq_die(db, "sqlite load");
		sqlite3_reset(st);
	}
	sq_exec(db, "COMMIT");
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* ------------------------------------------------------- interactive */

static int is_busy(int rc)
{
	return (rc & 0xff) == SQLITE_BUSY;
}

/* Undo a failed attempt (a busy COMMIT leaves the transaction open). */
static void sq_rollback(sqlite3 *db)
{
	if (!sqlite3_get_autocommit(db))
		(void)sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

static void child_fail(sqlite3 *db, const char *msg)
{
	fprintf(stderr, "mrtx: bench: interactive (sqlite): %s%s%s\n", msg, db ? ": " : "",
	        db ? sqlite3_errmsg(db) : "");
	_exit(4);
}

typedef struct istmts {
	sqlite3_stmt *begin, *sel, *upd, *commit;
} istmts;

/* One attempt at a transfer: SQLITE_OK, a busy code (retry), or dies. */
static int transfer_once(sqlite3 *db, istmts *s, const char *ka, const char *kb, int x)
{
	const char *keys[2] = { ka, kb };
	long long bal[2];
	char v[16];
	int rc;

	if ((rc = sqlite3_step(s->begin)) != SQLITE_DONE)
		goto out;
	sqlite3_reset(s->begin);
	for (int i = 0; i < 2; i++) {
		sqlite3_bind_text(s->sel, 1, keys[i], -1, SQLITE_STATIC);
		if ((rc = sqlite3_step(s->sel)) != SQLITE_ROW) {
			if (rc == SQLITE_DONE)
				child_fail(NULL, "an account is missing");
			goto out;
		}
		if (bal_decode(sqlite3_column_blob(s->sel, 0),
		               (size_t)sqlite3_column_bytes(s->sel, 0), &bal[i]))
			child_fail(NULL, "an account holds no balance");
		sqlite3_reset(s->sel);
	}
	usleep(200); /* think time */
	for (int i = 0; i < 2; i++) {
		bal_encode(v, i == 0 ? bal[0] - x : bal[1] + x);
		sqlite3_bind_blob(s->upd, 1, v, 16, SQLITE_TRANSIENT);
		sqlite3_bind_text(s->upd, 2, keys[i], -1, SQLITE_STATIC);
		if ((rc = sqlite3_step(s->upd)) != SQLITE_DONE)
			goto out;
		if (sqlite3_changes(db) != 1)
			child_fail(NULL, "an update changed no row");
		sqlite3_reset(s->upd);
	}
	if ((rc = sqlite3_step(s->commit)) == SQLITE_DONE)
		rc = SQLITE_OK;
out:
	sqlite3_reset(s->begin);
	sqlite3_reset(s->sel);
	sqlite3_reset(s->upd);
	sqlite3_reset(s->commit);
	if (rc != SQLITE_OK && !is_busy(rc))
		child_fail(db, "transfer");
	if (rc != SQLITE_OK)
		sq_rollback(db);
	return rc;
}

void sqlite_inter_child(const char *path, int immediate, int durability, int id,
                        volatile long *ops, volatile long *retries, volatile int *stop)
{
	unsigned seed = 99u + (unsigned)id;
	sqlite3 *db = sq_open(path, durability);
	istmts s;

	s.begin = sq_prep(db, immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
	s.sel = sq_prep(db, "SELECT v FROM kv WHERE k = ?1");
	s.upd = sq_prep(db, "UPDATE kv SET v = ?1 WHERE k = ?2");
	s.commit = sq_prep(db, "COMMIT");
	while (!*stop) {
		char ka[32], kb[32];
		int a, b, x, n = 0;

		inter_pick(&seed, &a, &b, &x);
		snprintf(ka, sizeof(ka), "r%08d/q0", a);
		snprintf(kb, sizeof(kb), "r%08d/q0", b);
		while (transfer_once(db, &s, ka, kb, x) != SQLITE_OK) {
			__atomic_add_fetch(retries, 1, __ATOMIC_RELAXED);
			if (++n == MAX_RETRIES)
				child_fail(NULL, "a transfer stayed busy through 100000 attempts");
		}
		__atomic_add_fetch(ops, 1, __ATOMIC_RELAXED);
	}
	sqlite3_finalize(s.begin);
	sqlite3_finalize(s.sel);
	sqlite3_finalize(s.upd);
	sqlite3_finalize(s.commit);
	sqlite3_close(db);
	_exit(0);
}

/* --------------------------------------------------------- multi_row */

typedef struct sthr {
	sqlite3 *db;
	sqlite3_stmt *begin, *put, *commit;
	mthr *t;
	int id;
	volatile int *stop;
	long retries;
} sthr;

static int multi_once(sthr *p, char rows[4][32], const char *v)
{
	char key[48];
	int rc;

	if ((rc = sqlite3_step(p->begin)) != SQLITE_DONE)
		goto out;
	for (int r = 0; r < 4; r++) {
		snprintf(key, sizeof(key), "%.31s/q0", rows[r]);
		sqlite3_bind_text(p->put, 1, key, -1, SQLITE_TRANSIENT);
		sqlite3_bind_blob(p->put, 2, v, 16, SQLITE_STATIC);
		if ((rc = sqlite3_step(p->put)) != SQLITE_DONE)
			goto out;
		sqlite3_reset(p->put);
	}
	if ((rc = sqlite3_step(p->commit)) == SQLITE_DONE)
		rc = SQLITE_OK;
out:
	sqlite3_reset(p->begin);
	sqlite3_reset(p->put);
	sqlite3_reset(p->commit);
	if (rc != SQLITE_OK && !is_busy(rc))
		sq_die(p->db, "multi_row (sqlite)");
	if (rc != SQLITE_OK)
		sq_rollback(p->db);
	return rc;
}

static void *multi_thread(void *arg)
{
	sthr *p = arg;
	char rows[4][32], v[17];

	while (!*p->stop) {
		int g = multi_pick(p->t, p->id, rows, v), n = 0;

		while (multi_once(p, rows, v) != SQLITE_OK) {
			p->retries++;
			if (++n == MAX_RETRIES)
				die("multi_row (sqlite)", "a transaction stayed busy through 100000 "
				    "attempts");
		}
		multi_done(p->t, g);
	}
	return NULL;
}

double sqlite_run_threads(const char *path, double secs, mlog *lg)
{
	pthread_t th[MULTI_THREADS];
	sthr p[MULTI_THREADS];
	volatile int stop = 0;
	double t0, t;

	if (!sqlite3_threadsafe())
		die("multi_row (sqlite)", "this SQLite library was built single-threaded");
	for (int i = 0; i < MULTI_THREADS; i++) {
		p[i] = (sthr){ sq_open(path, MRTX_SYNC), NULL, NULL, NULL, &lg->th[i], i, &stop, 0 };
		p[i].begin = sq_prep(p[i].db, "BEGIN IMMEDIATE");
		p[i].put = sq_prep(p[i].db, "INSERT INTO kv (k, v) VALUES (?1, ?2) "
		                            "ON CONFLICT (k) DO UPDATE SET v = excluded.v");
		p[i].commit = sq_prep(p[i].db, "COMMIT");
	}
	t0 = now_s();
	for (int i = 0; i < MULTI_THREADS; i++)
		pthread_create(&th[i], NULL, multi_thread, &p[i]);
	while (now_s() - t0 < secs)
		usleep(10000);
	stop = 1;
	for (int i = 0; i < MULTI_THREADS; i++)
		pthread_join(th[i], NULL);
	t = now_s() - t0;
	for (int i = 0; i < MULTI_THREADS; i++) {
		lg->retries += p[i].retries;
		sqlite3_finalize(p[i].begin);
		sqlite3_finalize(p[i].put);
		sqlite3_finalize(p[i].commit);
		sqlite3_close(p[i].db);
	}
	return t;
}

/* ------------------------------------------------------------ checks */

typedef struct sreader {
	sqlite3 *db;
	sqlite3_stmt *sel;
} sreader;

static int read_sqlite(void *ctx, const char *row, char v[16])
{
	sreader *r = ctx;
	char key[48];
	int rc;

	snprintf(key, sizeof(key), "%s/q0", row);
	sqlite3_bind_text(r->sel, 1, key, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(r->sel);
	if (rc == SQLITE_ROW) {
		if (sqlite3_column_bytes(r->sel, 0) != 16)
			die("check", "a sqlite value is not 16 bytes");
		memcpy(v, sqlite3_column_blob(r->sel, 0), 16);
	} else if (rc != SQLITE_DONE) {
		sq_die(r->db, "sqlite check");
	}
	sqlite3_reset(r->sel);
	return rc == SQLITE_ROW;
}

static void reader_open(sreader *r, const char *path)
{
	r->db = sq_open(path, MRTX_SYNC);
	r->sel = sq_prep(r->db, "SELECT v FROM kv WHERE k = ?1");
	sq_exec(r->db, "BEGIN"); /* one snapshot for the whole check */
}

static void reader_close(sreader *r)
{
	sq_exec(r->db, "COMMIT");
	sqlite3_finalize(r->sel);
	sqlite3_close(r->db);
}

void sqlite_check_balances(const char *path, const char *side)
{
	sreader r;

	reader_open(&r, path);
	check_balances(side, read_sqlite, &r);
	reader_close(&r);
}

long sqlite_check_groups(const char *path, const mlog *lg)
{
	sreader r;
	long n;

	reader_open(&r, path);
	n = check_groups("sqlite", read_sqlite, &r, lg);
	reader_close(&r);
	return n;
}
