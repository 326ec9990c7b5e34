/*
 * test_drop.c - mrtx_add_family, mrtx_drop_table, mrtx_truncate_table:
 * data and names, bad input, transactions caught mid-commit by a drop
 * (all or nothing across tables), and handles in other processes whose
 * view of the table is stale; on both backends (RADOS: rados_ddl.c).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "storage/store.h"
#include "txn/txn_int.h"

#define HUGE_TTL 600000u

static mrtx_db *fresh(char **path)
{
	mrtx_db *db = tu_open_fresh("drop", path, NULL);

	assert_non_null(db);
	assert_int_equal(tu_table(db, "a", "f", NULL), 0);
	assert_int_equal(tu_table(db, "b", "f", NULL), 0);
	return db;
}

static void done(mrtx_db *db, char *path)
{
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

static int has(mrtx_db *db, const char *table, const char *row, const char *want)
{
	char buf[64];
	int rc = tu_get_str(db, table, row, "f:q", buf, sizeof(buf));

	if (!want)
		return rc == MRTX_NOTFOUND;
	return rc == 0 && strcmp(buf, want) == 0;
}

/* Does table's row hold a lock record (a prewrite, say)?  Read from the
 * store: a transaction's read would read past a live writer on RADOS. */
static int locked(mrtx_db *db, const char *table, const char *row)
{
	store_filter f = STORE_FILTER_ALL;
	const store_table *t;
	store_row out;
	mrtx_arena a;
	int rc;

	f.lock_only = 1;
	arena_init(&a);
	rc = store_table_find(db->st, table, &t);
	if (rc == 0)
		rc = store_read_row(db->st, t, MRTX_CSTR(row), &f, &a, &out);
	rc = rc == 0 && out.has_lock;
	arena_free(&a);
	return rc;
}

/* Y of test_overlapping: rows in a (primary) and b, held after its
 * prewrite by the wait failpoint. */
typedef struct {
	mrtx_db *db;
	int rc;
} ytxn;

static void *y_commit(void *arg)
{
	ytxn *y = arg;
	mrtx_txn *t;

	if ((y->rc = mrtx_begin(y->db, &t)))
		return NULL;
	if ((y->rc = mrtx_put(t, "a", MRTX_BYTES("r1", 2), "f", MRTX_BYTES("q", 1),
	                      MRTX_BYTES("y", 1))) ||
	    (y->rc = mrtx_put(t, "b", MRTX_BYTES("r1", 2), "f", MRTX_BYTES("q", 1),
	                      MRTX_BYTES("y", 1)))) {
		mrtx_abort(t);
		return NULL;
	}
	y->rc = mrtx_commit(t);
	return NULL;
}

/* Two truncates of one table overlap: B froze it (steps 1-2 done), A ran a
 * whole truncate (the table LIVE again), Y prewrote into it.  B's step 3
 * must not clear: its freeze no longer holds, Y's lock is newer than its
 * settle.  (The freeze carries a token for this: without it B would remove
 * Y's secondary and Y, committed, would be half applied.)  Then: a drop whose process died
 * after freezing is taken over by the next drop.
 * Checks I25 (DESIGN §10). */
static void test_overlapping(void **state)
{
	char *path, go[300];
	const store_table *tb;
	uint64_t tok_b, tok_dead;
	pthread_t th;
	ytxn y;
	mrtx_db *db;

	(void)state;
	db = fresh(&path);
	{
		char *dir = tu_fsdir("drop-go"); /* (a file, whatever the store) */

		assert_non_null(dir);
		snprintf(go, sizeof(go), "%s/go", dir);
		free(dir);
	}
	unlink(go);
	assert_int_equal(store_table_find(db->st, "b", &tb), 0);
	assert_int_equal(store_table_freeze(db->st, tb, 1, &tok_b), 0);  /* B: 1 */
	assert_int_equal(mrtx_truncate_table(db, "b"), 0);               /* A */
	{
		char spec[400];

		snprintf(spec, sizeof(spec), "commit.after_prewrite=wait:%s", go);
		assert_int_equal(mrtx_failpoints_set(spec), 0);
	}
	y.db = db;
	y.rc = -1;
	assert_int_equal(pthread_create(&th, NULL, y_commit, &y), 0);
	while (!locked(db, "b", "r1"))
		usleep(1000); /* Y's prewrite is in place */
	assert_int_equal(store_table_clear(db->st, tb, 0, tok_b), MRTX_ELOCKED); /* B: 3 */
	assert_non_null(strstr(mrtx_errmsg(), "another drop or truncate"));
	fclose(fopen(go, "w"));
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(mrtx_failpoints_set(""), 0);
	unlink(go);
	assert_int_equal(y.rc, 0);
	assert_true(has(db, "a", "r1", "y"));
	assert_true(has(db, "b", "r1", "y")); /* all of Y */
	/* B failed at 3 with someone else's mark gone: the table is LIVE */
	assert_int_equal(tu_put_str(db, "b", "r2", "f:q", "w"), 0);

	/* a drop dies after its freeze: writes conflict until a drop takes over
	 * (RADOS: the truncate gave the name a new table object) */
	assert_int_equal(store_table_find(db->st, "b", &tb), 0);
	assert_int_equal(store_table_freeze(db->st, tb, 1, &tok_dead), 0);
	assert_int_equal(tu_put_str(db, "b", "r3", "f:q", "w"), MRTX_CONFLICT);
	assert_non_null(strstr(mrtx_errmsg(), "table 'b' is frozen by a drop or truncate"));
	{
		/* and with rows of two tables: the message names the frozen one */
		mrtx_txn *txn;

		assert_int_equal(mrtx_begin(db, &txn), 0);
		assert_int_equal(mrtx_put(txn, "a", MRTX_CSTR("r3"), "f", MRTX_CSTR("q"),
		                          MRTX_CSTR("w")), 0);
		assert_int_equal(mrtx_put(txn, "b", MRTX_CSTR("r3"), "f", MRTX_CSTR("q"),
		                          MRTX_CSTR("w")), 0);
		assert_int_equal(mrtx_commit(txn), MRTX_CONFLICT);
		assert_non_null(strstr(mrtx_errmsg(), "table 'b' is frozen"));
	}
	assert_true(has(db, "b", "r2", "w")); /* readable */
	assert_int_equal(mrtx_drop_table(db, "b"), 0);
	assert_int_equal(store_table_clear(db->st, tb, 1, tok_dead), MRTX_ENOTABLE);
	assert_true(has(db, "a", "r1", "y"));
	done(db, path);
}

/* Checks I25 (DESIGN §10). */
static void test_drop_truncate(void **state)
{
	const char *const *fams;
	size_t n;
	char *path;
	mrtx_db *db;

	(void)state;
	db = fresh(&path);
	/* empty tables */
	assert_int_equal(mrtx_truncate_table(db, "a"), 0);
	assert_int_equal(mrtx_drop_table(db, "a"), 0);
	assert_int_equal(tu_put_str(db, "a", "r", "f:q", "v"), MRTX_ENOTABLE);
	assert_int_equal(mrtx_drop_table(db, "a"), MRTX_ENOTABLE);
	/* name reuse: a new, empty table */
	assert_int_equal(tu_table(db, "a", "x", "f", NULL), 0);
	assert_int_equal(mrtx_table_families(db, "a", &fams, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(fams[0], "x");
	/* non-empty: truncate keeps the table and the neighbours' rows */
	for (int i = 0; i < 50; i++) {
		char row[16];

		snprintf(row, sizeof(row), "r%02d", i);
		assert_int_equal(tu_put_str(db, "a", row, "f:q", "va"), 0);
		assert_int_equal(tu_put_str(db, "b", row, "f:q", "vb"), 0);
	}
	assert_int_equal(mrtx_truncate_table(db, "a"), 0);
	assert_true(has(db, "a", "r07", NULL));
	assert_true(has(db, "b", "r07", "vb"));
	assert_int_equal(tu_put_str(db, "a", "r07", "f:q", "again"), 0);
	assert_true(has(db, "a", "r07", "again"));
	/* non-empty drop; then the same name holds none of the old rows */
	assert_int_equal(mrtx_drop_table(db, "b"), 0);
	assert_int_equal(tu_get_str(db, "b", "r07", "f:q", (char[8]){ 0 }, 8), MRTX_ENOTABLE);
	assert_int_equal(tu_table(db, "b", "f", NULL), 0);
	assert_true(has(db, "b", "r07", NULL));
	assert_true(has(db, "a", "r07", "again"));
	done(db, path);
}

/* A read at a snapshot from before a truncate, a drop or (LMDB) a family's
 * drop: MRTX_ESNAPSHOT, from mrtx_begin_at or from the read, never the
 * rows missing (mrtx_begin_at: "never as a newer or missing value"). */
static int get_at(mrtx_db *db, uint64_t ts, const char *table, const char *row,
                  const char *family)
{
	mrtx_txn *txn;
	mrtx_bytes v;
	int rc = mrtx_begin_at(db, ts, &txn);

	if (rc == 0) {
		rc = mrtx_get(txn, table, MRTX_CSTR(row), family, MRTX_CSTR("q"), &v);
		mrtx_abort(txn);
	}
	return rc;
}

static uint64_t put_ts(mrtx_db *db, const char *table, const char *row, const char *family,
                       const char *value)
{
	mrtx_txn *txn;
	uint64_t ts = 0;

	assert_int_equal(mrtx_begin(db, &txn), 0);
	assert_int_equal(mrtx_put(txn, table, MRTX_CSTR(row), family, MRTX_CSTR("q"),
	                          MRTX_CSTR(value)), 0);
	assert_int_equal(mrtx_commit_ts(txn, &ts), 0);
	return ts;
}

static void test_past_snapshots(void **state)
{
	const char *const fg[] = { "f", "g" };
	char *path;
	mrtx_db *db;
	uint64_t ts;
	int rc;

	(void)state;
	db = fresh(&path);
	ts = put_ts(db, "a", "r", "f", "v");
	assert_int_equal(get_at(db, ts, "a", "r", "f"), 0);
	assert_int_equal(mrtx_truncate_table(db, "a"), 0);
	assert_int_equal(get_at(db, ts, "a", "r", "f"), MRTX_ESNAPSHOT);
	(void)put_ts(db, "a", "r", "f", "after");

	ts = put_ts(db, "b", "r", "f", "v");
	assert_int_equal(mrtx_drop_table(db, "b"), 0);
	rc = get_at(db, ts, "b", "r", "f"); /* (the name names no table now) */
	assert_true(rc == MRTX_ESNAPSHOT || rc == MRTX_ENOTABLE);
	assert_int_equal(mrtx_create_table(db, "b", fg, 1), 0);
	assert_int_equal(get_at(db, ts, "b", "r", "f"), MRTX_ESNAPSHOT);

	assert_int_equal(mrtx_create_table(db, "c", fg, 2), 0);
	ts = put_ts(db, "c", "r", "g", "v");
	rc = mrtx_drop_family(db, "c", "g");
	if (rc == MRTX_ENOTSUP) { /* (RADOS) */
		done(db, path);
		return;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(mrtx_add_family(db, "c", "g"), 0);
	assert_int_equal(get_at(db, ts, "c", "r", "g"), MRTX_ESNAPSHOT);
	/* what came after is read as ever */
	ts = put_ts(db, "c", "r", "g", "new");
	assert_int_equal(get_at(db, ts, "c", "r", "g"), 0);
	done(db, path);
}

static void test_bad_input(void **state)
{
	char *path;
	mrtx_db *db;

	(void)state;
	db = fresh(&path);
	assert_int_equal(mrtx_drop_table(NULL, "a"), MRTX_EINVAL);
	assert_int_equal(mrtx_drop_table(db, NULL), MRTX_EINVAL);
	assert_int_equal(mrtx_truncate_table(db, NULL), MRTX_EINVAL);
	assert_int_equal(mrtx_drop_table(db, "nope"), MRTX_ENOTABLE);
	assert_int_equal(mrtx_truncate_table(db, "nope"), MRTX_ENOTABLE);
	assert_int_equal(mrtx_add_family(db, "a", NULL), MRTX_EINVAL);
	assert_int_equal(mrtx_add_family(NULL, "a", "g"), MRTX_EINVAL);
	assert_int_equal(mrtx_add_family(db, "nope", "g"), MRTX_ENOTABLE);
	assert_int_equal(mrtx_add_family(db, "a", "f"), MRTX_EEXIST);
	assert_int_equal(mrtx_add_family(db, "a", ""), MRTX_EINVAL);
	assert_int_equal(mrtx_add_family(db, "a", "a b"), MRTX_EINVAL);
	assert_int_equal(mrtx_add_family(db, "a", "x/y"), MRTX_EINVAL);
	{
		char big[MRTX_MAX_NAME + 2];

		memset(big, 'g', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		assert_int_equal(mrtx_add_family(db, "a", big), MRTX_ETOOBIG);
	}
	/* an index's tables cannot be dropped */
	{
		mrtx_index_spec s;

		memset(&s, 0, sizeof(s));
		s.version = MRTX_INDEX_SPEC_VERSION;
		s.name = "ix";
		s.table = "a";
		s.family = "f";
		s.qualifier = MRTX_CSTR("q");
		s.index_table = "ixt";
		assert_int_equal(mrtx_create_index(db, &s), 0);
		assert_int_equal(mrtx_drop_table(db, "a"), MRTX_EINVAL);
		assert_int_equal(mrtx_truncate_table(db, "ixt"), MRTX_EINVAL);
	}
	assert_int_equal(tu_put_str(db, "a", "r", "f:q", "v"), 0);
	done(db, path);
}

/* A child commits a=r1, b=r1 (primary: a, created first) with failpoint fp
 * armed and dies there. */
static void crash_writer(const char *path, const char *fp)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		mrtx_options o = MRTX_OPTIONS_INIT;
		mrtx_db *db;
		mrtx_txn *txn;

		o.durability = MRTX_NOSYNC;
		o.lock_ttl_ms = HUGE_TTL;
		if (mrtx_open(&db, path, &o) || mrtx_failpoints_set(fp) || mrtx_begin(db, &txn) ||
		    mrtx_put(txn, "a", MRTX_CSTR("r1"), "f", MRTX_CSTR("q"), MRTX_CSTR("new")) ||
		    mrtx_put(txn, "b", MRTX_CSTR("r1"), "f", MRTX_CSTR("q"), MRTX_CSTR("new")))
			_exit(2);
		mrtx_commit(txn);
		_exit(3); /* the failpoint did not fire */
	}
	assert_int_equal(tu_wait(pid), 99);
}

/* drop `victim` after a writer died at fp: the survivor table holds the
 * writer's row iff it committed. */
static void crashed(const char *fp, const char *victim, int committed)
{
	const char *other = strcmp(victim, "a") == 0 ? "b" : "a";
	char *path;
	mrtx_db *db = fresh(&path);

	assert_int_equal(tu_put_str(db, "a", "r1", "f:q", "old"), 0);
	assert_int_equal(tu_put_str(db, "b", "r1", "f:q", "old"), 0);
	crash_writer(path, fp);
	assert_int_equal(mrtx_drop_table(db, victim), 0);
	assert_true(has(db, other, "r1", committed ? "new" : "old"));
	assert_int_equal(tu_table(db, victim, "f", NULL), 0);
	assert_true(has(db, victim, "r1", NULL));
	assert_true(has(db, other, "r1", committed ? "new" : "old"));
	done(db, path);
}

/* Checks I25 (DESIGN §10). */
static void test_crashed_writers(void **state)
{
	(void)state;
	crashed("commit.after_prewrite=exit", "a", 0); /* primary in the dropped table */
	crashed("commit.after_prewrite=exit", "b", 0); /* a secondary in it */
	crashed("commit.after_point=exit", "a", 1);
	crashed("commit.after_point=exit", "b", 1);
}

/*
 * A live writer, stopped after its prewrite (a sleep failpoint; the pipe
 * says when it is there), while the parent drops table b.  Whatever the
 * interleaving, the writer either committed entirely (its a row is new)
 * or failed (MRTX_CONFLICT, a is old): never its a row without its b row.
 * Checks I25 (DESIGN §10).
 */
static void test_live_writer(void **state)
{
	char *path;
	mrtx_db *db;
	int pfd[2], st;
	pid_t pid;
	char c;

	(void)state;
	db = fresh(&path);
	assert_int_equal(tu_put_str(db, "a", "r1", "f:q", "old"), 0);
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		mrtx_options o = MRTX_OPTIONS_INIT;
		mrtx_db *cdb;
		mrtx_txn *txn;
		int rc;

		close(pfd[0]);
		o.durability = MRTX_NOSYNC;
		o.lock_ttl_ms = HUGE_TTL;
		if (mrtx_open(&cdb, path, &o) || mrtx_begin(cdb, &txn) ||
		    mrtx_put(txn, "a", MRTX_CSTR("r1"), "f", MRTX_CSTR("q"), MRTX_CSTR("new")) ||
		    mrtx_put(txn, "b", MRTX_CSTR("r1"), "f", MRTX_CSTR("q"), MRTX_CSTR("new")))
			_exit(2);
		/* the parent may drop as soon as our locks are there */
		if (mrtx_failpoints_set("commit.after_prewrite=sleep:300") ||
		    write(pfd[1], "x", 1) != 1)
			_exit(2);
		rc = mrtx_commit(txn);
		if (rc && rc != MRTX_CONFLICT && rc != MRTX_ENOTABLE)
			fprintf(stderr, "writer: %s\n", mrtx_errmsg());
		_exit(rc == 0 ? 0 : rc == MRTX_CONFLICT || rc == MRTX_ENOTABLE ? 1 : 10);
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &c, 1), 1);
	close(pfd[0]);
	assert_int_equal(mrtx_drop_table(db, "b"), 0);
	st = tu_wait(pid);
	if (st != 0 && st != 1)
		print_error("writer exit status %d\n", st);
	assert_true(st == 0 || st == 1);
	assert_true(has(db, "a", "r1", st == 0 ? "new" : "old"));
	done(db, path);
}

/*
 * A second process keeps the store open with tables a and b attached
 * while this one drops b, re-creates it and adds a family to a.  Steps
 * are paced by pipes: parent writes a step number, child answers.
 */
static void child_step(int in, int out, int (*fn)(mrtx_db *), mrtx_db *db)
{
	char c;

	if (read(in, &c, 1) != 1)
		_exit(20);
	c = (char)fn(db);
	if (write(out, &c, 1) != 1)
		_exit(21);
}

static int s1_stale_drop(mrtx_db *db)
{
	/* b was dropped: a stale handle neither reads nor writes it */
	if (tu_put_str(db, "b", "r9", "f:q", "stale") != MRTX_ENOTABLE)
		return 1;
	if (tu_get_str(db, "b", "r1", "f:q", (char[8]){ 0 }, 8) != MRTX_ENOTABLE)
		return 2;
	return 0;
}

static int s2_recreated(mrtx_db *db)
{
	char buf[16];

	/* b re-created with row r2: the new table, not the old one */
	if (tu_get_str(db, "b", "r2", "g:q", buf, sizeof(buf)) != 0 || strcmp(buf, "nb"))
		return 3;
	if (tu_get_str(db, "b", "r1", "g:q", buf, sizeof(buf)) != MRTX_NOTFOUND)
		return 4;
	return 0;
}

static int s3_family(mrtx_db *db)
{
	char buf[16];
	mrtx_txn *txn;
	mrtx_scanner *sc;
	mrtx_scan_spec spec;
	mrtx_cell cell;
	int rc, seen = 0;

	/* family g was added to a by the other process: read it, write it */
	if (tu_get_str(db, "a", "r1", "g:q", buf, sizeof(buf)) != 0 || strcmp(buf, "ng"))
		return 5;
	if (tu_put_str(db, "a", "r3", "g:q", "cg"))
		return 6;
	/* a scan over every family returns the new family's cells */
	memset(&spec, 0, sizeof(spec));
	spec.table = "a";
	if (mrtx_begin(db, &txn) || mrtx_scan_open(txn, &spec, &sc))
		return 7;
	while ((rc = mrtx_scan_next(sc, &cell)) == 0)
		seen += strcmp(cell.family, "g") == 0;
	mrtx_scan_close(sc);
	mrtx_abort(txn);
	return rc == MRTX_NOTFOUND && seen == 2 ? 0 : 8;
}

/* Checks I25 (DESIGN §10). */
static void test_stale_process(void **state)
{
	int down[2], up[2];
	char *path, c;
	mrtx_db *db;
	pid_t pid;

	(void)state;
	db = fresh(&path);
	assert_int_equal(tu_put_str(db, "a", "r1", "f:q", "va"), 0);
	assert_int_equal(tu_put_str(db, "b", "r1", "f:q", "vb"), 0);
	assert_int_equal(pipe(down), 0);
	assert_int_equal(pipe(up), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		mrtx_db *cdb;
		char buf[16];

		close(down[1]);
		close(up[0]);
		cdb = tu_open(path, NULL);
		/* attach both tables before the parent changes them */
		if (!cdb || tu_get_str(cdb, "a", "r1", "f:q", buf, sizeof(buf)) ||
		    tu_get_str(cdb, "b", "r1", "f:q", buf, sizeof(buf)))
			_exit(30);
		/* and the last write before the drop is the child's: the drop's
		 * LMDB txn directly follows it, so the table generation it read
		 * must not be trusted for the next write (lmdb_txn_begin) */
		if (tu_put_str(cdb, "a", "r5", "f:q", "c5"))
			_exit(32);
		if (write(up[1], "", 1) != 1)
			_exit(31);
		child_step(down[0], up[1], s1_stale_drop, cdb);
		child_step(down[0], up[1], s2_recreated, cdb);
		child_step(down[0], up[1], s3_family, cdb);
		mrtx_close(cdb);
		_exit(0);
	}
	close(down[0]);
	close(up[1]);
	assert_int_equal(read(up[0], &c, 1), 1); /* the child has both tables */
	assert_int_equal(mrtx_drop_table(db, "b"), 0);
	assert_int_equal(write(down[1], "1", 1), 1);
	assert_int_equal(read(up[0], &c, 1), 1);
	if (c)
		print_error("child step failed: %d\n", c);
	assert_int_equal(c, 0);
	assert_int_equal(tu_table(db, "b", "g", NULL), 0);
	assert_int_equal(tu_put_str(db, "b", "r2", "g:q", "nb"), 0);
	assert_int_equal(write(down[1], "2", 1), 1);
	assert_int_equal(read(up[0], &c, 1), 1);
	if (c)
		print_error("child step failed: %d\n", c);
	assert_int_equal(c, 0);
	assert_int_equal(mrtx_add_family(db, "a", "g"), 0);
	assert_int_equal(tu_put_str(db, "a", "r1", "g:q", "ng"), 0);
	assert_int_equal(write(down[1], "3", 1), 1);
	assert_int_equal(read(up[0], &c, 1), 1);
	if (c)
		print_error("child step failed: %d\n", c);
	assert_int_equal(c, 0);
	assert_int_equal(tu_wait(pid), 0);
	/* and this handle reads what the other one wrote in the new family */
	assert_true(tu_get_str(db, "a", "r3", "g:q", (char[8]){ 0 }, 8) == 0);
	done(db, path);
}

static int count_kv(const char *key, mrtx_bytes value, void *payload)
{
	(void)key;
	(void)value;
	++*(int *)payload;
	return 0;
}

/* How many z/ records (tablets of finished drops and truncates whose rows
 * are not removed yet) the store holds (RADOS). */
static int garbage(mrtx_db *db)
{
	mrtx_arena a;
	int n = 0;

	arena_init(&a);
	assert_int_equal(store_meta_list(db->st, "z/", &a, count_kv, &n, NULL), 0);
	arena_free(&a);
	return n;
}

/* A child runs `what` on table b of the store at path, with failpoint fp
 * armed, and dies there (status 99). */
static void crash_ddl(const char *path, const char *what, const char *fp)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		mrtx_db *cdb = tu_open(path, NULL);

		if (!cdb || mrtx_failpoints_set(fp))
			_exit(2);
		if (strcmp(what, "drop") == 0)
			mrtx_drop_table(cdb, "b");
		else
			mrtx_truncate_table(cdb, "b");
		_exit(3); /* the failpoint did not fire */
	}
	assert_int_equal(tu_wait(pid), 99);
}

/*
 * RADOS: a drop or truncate is a chain of one-object steps around one
 * switch of the table's record (rados_ddl.c).  One that dies with every
 * tablet closed leaves the table unreadable (MRTX_ELOCKED) and unwritable
 * until a drop or truncate runs again, which finishes it from there; one
 * that dies after its switch has done its work, and leaves only rows in
 * closed tablets, which the next drop or truncate of any table removes.
 * A truncated table's fresh tablets refuse a read at a snapshot from
 * before the truncate (MRTX_ESNAPSHOT), never showing it empty.
 * Checks I25 (DESIGN §10).
 */
static void test_rados_cut_short(void **state)
{
	static const char *const fams[] = { "f" };
	const mrtx_bytes splits[2] = { MRTX_CSTR("r10"), MRTX_CSTR("r20") };
	char *path, buf[16];
	mrtx_txn *old;
	mrtx_bytes v;
	mrtx_db *db;

	(void)state;
	if (!tu_rados())
		skip();
	db = fresh(&path);
	assert_int_equal(mrtx_create_table_split(db, "s", fams, 1, splits, 2), 0);
	for (int i = 0; i < 30; i += 7) {
		char row[8];

		snprintf(row, sizeof(row), "r%02d", i);
		assert_int_equal(tu_put_str(db, "b", row, "f:q", "vb"), 0);
		assert_int_equal(tu_put_str(db, "s", row, "f:q", "vs"), 0);
	}
	/* a truncate dies with the table closed */
	crash_ddl(path, "truncate", "ddl.after_close=exit");
	assert_int_equal(tu_get_str(db, "b", "r07", "f:q", buf, sizeof(buf)), MRTX_ELOCKED);
	assert_non_null(strstr(mrtx_errmsg(), "being dropped or truncated"));
	assert_int_not_equal(tu_put_str(db, "b", "r99", "f:q", "w"), 0);
	assert_true(has(db, "a", "r07", NULL)); /* the other tables work */
	assert_int_equal(tu_put_str(db, "a", "r07", "f:q", "va"), 0);
	/* running it again finishes it */
	assert_int_equal(mrtx_truncate_table(db, "b"), 0);
	assert_true(has(db, "b", "r07", NULL));
	assert_int_equal(tu_put_str(db, "b", "r07", "f:q", "again"), 0);
	assert_true(has(db, "b", "r07", "again"));
	assert_int_equal(garbage(db), 0);
	/* a drop dies after its switch: done, but the old rows remain */
	crash_ddl(path, "drop", "ddl.after_switch=exit");
	assert_int_equal(tu_get_str(db, "b", "r07", "f:q", buf, sizeof(buf)), MRTX_ENOTABLE);
	assert_int_equal(garbage(db), 1);
	/* a snapshot from before a truncate of a pre-split table */
	assert_int_equal(mrtx_begin(db, &old), 0);
	assert_int_equal(mrtx_get(old, "a", MRTX_CSTR("r07"), "f", MRTX_CSTR("q"), &v), 0);
	assert_int_equal(mrtx_truncate_table(db, "s"), 0);
	assert_int_equal(garbage(db), 0); /* (the drop's rows went too) */
	for (int i = 0; i < 30; i += 7) {
		char row[8];

		snprintf(row, sizeof(row), "r%02d", i);
		assert_true(has(db, "s", row, NULL));
	}
	assert_int_equal(tu_put_str(db, "s", "r21", "f:q", "new"), 0);
	assert_int_equal(mrtx_get(old, "s", MRTX_CSTR("r21"), "f", MRTX_CSTR("q"), &v),
	                 MRTX_ESNAPSHOT);
	mrtx_abort(old);
	assert_true(has(db, "s", "r21", "new"));
	assert_true(has(db, "a", "r07", "va"));
	done(db, path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drop_truncate),
		cmocka_unit_test(test_past_snapshots),
		cmocka_unit_test(test_rados_cut_short),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_crashed_writers),
		cmocka_unit_test(test_live_writer),
		cmocka_unit_test(test_stale_process),
		cmocka_unit_test(test_overlapping),
	};

	/* These tests stop writers between the steps of the two-phase protocol
	 * (DESIGN §5.2) and look at the locks they leave: every handle opened
	 * here uses it (the two_phase knob, txn_test.h).  One-phase commits on LMDB
	 * (§5.3) have their own crash tests in test_txn. */
	setenv("MRTX_TWO_PHASE", "1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
