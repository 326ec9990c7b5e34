/*
 * test_tool_check.c - recovery/check.c, the logic behind `mrtx check`:
 * hand-made lock records for each kind of finding, their severity, and
 * that `recover` clears exactly the resolvable ones.
 *
 * One table per scenario, so every finding can be attributed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recovery/check.h"
#include "recovery/recovery.h"
#include "testutil.h"
#include "storage/store_test.h"
#include "txn/admin_test.h"

typedef struct finding {
	char table[32];
	char kind[32];
	check_severity sev;
} finding;

typedef struct findings {
	finding f[64];
	size_t n;
} findings;

static int collect(const check_issue *is, void *payload)
{
	findings *fs = payload;

	if (fs->n < 64) {
		snprintf(fs->f[fs->n].table, sizeof(fs->f[0].table), "%s", is->table->name);
		snprintf(fs->f[fs->n].kind, sizeof(fs->f[0].kind), "%s", is->kind);
		fs->f[fs->n].sev = is->severity;
		fs->n++;
	}
	return 0;
}

/* Number of findings in table of this kind and severity. */
static size_t count(const findings *fs, const char *table, const char *kind,
                    check_severity sev)
{
	size_t n = 0;

	for (size_t i = 0; i < fs->n; i++)
		n += strcmp(fs->f[i].table, table) == 0 && strcmp(fs->f[i].kind, kind) == 0 &&
		     fs->f[i].sev == sev;
	return n;
}

static void base_rec(store *st, lock_rec *r, uint8_t state, uint8_t txn_byte)
{
	memset(r, 0, sizeof(*r));
	r->state = state;
	memcpy(r->tag, store_id(st), LOCK_TAG_SIZE);
	memset(r->txn, txn_byte, LOCK_TXNID_SIZE);
	r->commit_ts = 1000;
	if (state != LOCK_STABLE) {
		r->owner = *lock_self_owner(); /* alive ... */
		r->expiry_ms = 1;               /* ... but long expired: stale */
		r->flags |= LOCK_F_PREV_ABSENT;
	}
}

/* Write raw lock bytes to (table, row), which must have no lock yet. */
static void put_raw(store *st, const char *table, const char *row, mrtx_bytes bytes)
{
	const store_table *t;
	store_op op;

	assert_int_equal(store_table_find(st, table, &t), 0);
	memset(&op, 0, sizeof(op));
	op.table = t;
	op.row = MRTX_CSTR(row);
	op.cond.absent = 1;
	op.new_lock = bytes;
	assert_int_equal(store_write_rows(st, &op, 1), 0);
	assert_int_equal(op.result, 0);
}

static void put_rec(store *st, const char *table, const char *row, const lock_rec *r)
{
	mrtx_arena a;
	mrtx_bytes b;

	arena_init(&a);
	assert_int_equal(lock_encode(r, &a, &b), 0);
	put_raw(st, table, row, b);
	arena_free(&a);
}

static void secondary_of(lock_rec *r, const char *ptable, const char *prow)
{
	r->flags |= LOCK_F_SECONDARY;
	r->primary.table = MRTX_CSTR(ptable);
	r->primary.row = MRTX_CSTR(prow);
}

static void run_check(store *st, findings *fs, check_stats *s)
{
	memset(fs, 0, sizeof(*fs));
	assert_int_equal(check_store(st, s, collect, fs), 0);
}

/* A fresh store with table "o" (family "f"). */
static mrtx_db *fresh_o(const char *name, char **path)
{
	const char *fams[] = { "f" };
	mrtx_db *db = tu_open_fresh(name, path, NULL);

	assert_non_null(db);
	assert_int_equal(mrtx_create_table(db, "o", fams, 1), 0);
	return db;
}

static void test_healthy_store_has_no_findings(void **state)
{
	char *path;
	mrtx_db *db = tu_open_fresh("check-healthy", &path, NULL);
	const char *fams[] = { "f" };
	check_stats s;
	findings fs;

	(void)state;
	assert_int_equal(mrtx_create_table(db, "t", fams, 1), 0);
	assert_int_equal(tu_put_str(db, "t", "a", "f:q", "1"), 0);
	assert_int_equal(tu_put_str(db, "t", "b", "f:q", "2"), 0);
	run_check(mrtx__db_store(db), &fs, &s);
	assert_int_equal(fs.n, 0);
	assert_int_equal(s.tables, 1);
	assert_int_equal(s.locks, 2);
	assert_int_equal(s.by_state[LOCK_STABLE], 2);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* Checks I2, I4, I8 (DESIGN §10). */
static void test_each_kind_of_finding(void **state)
{
	static const char *const tables[] = { "dangling", "notlisted", "orphan", "garbage",
	                                      "foreign", "badstate", "stale", "missing" };
	const char *fams[] = { "f" };
	recover_opts ro = { 0, 0, 0 };
	recover_stats rs;
	check_stats s;
	findings fs;
	lock_rec p, sec;
	lock_ref listed;
	char *path;
	mrtx_db *db = tu_open_fresh("check-kinds", &path, NULL);
	store *st = mrtx__db_store(db);
	int droppable = store_has(st, STORE_CAP_SCHEMA);

	(void)state;
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		assert_int_equal(mrtx_create_table(db, tables[i], fams, 1), 0);

	/* dangling: primary STABLE(txn 1), secondary PREWRITTEN(txn 1) */
	base_rec(st, &p, LOCK_STABLE, 1);
	put_rec(st, "dangling", "p", &p);
	base_rec(st, &sec, LOCK_PREWRITTEN, 1);
	secondary_of(&sec, "dangling", "p");
	put_rec(st, "dangling", "s", &sec);

	/* not-listed: primary PREWRITTEN(2) listing nothing; secondary points at it */
	base_rec(st, &p, LOCK_PREWRITTEN, 2);
	put_rec(st, "notlisted", "p", &p);
	base_rec(st, &sec, LOCK_PREWRITTEN, 2);
	secondary_of(&sec, "notlisted", "p");
	put_rec(st, "notlisted", "s", &sec);

	/* orphan: secondary PREWRITTEN(3) whose primary row has no lock */
	base_rec(st, &sec, LOCK_PREWRITTEN, 3);
	secondary_of(&sec, "orphan", "p");
	put_rec(st, "orphan", "s", &sec);

	/* undecodable */
	put_raw(st, "garbage", "g", MRTX_CSTR("not a lock record"));

	/* foreign tag */
	base_rec(st, &p, LOCK_STABLE, 5);
	memset(p.tag, 0xAB, LOCK_TAG_SIZE);
	put_rec(st, "foreign", "x", &p);

	/* a secondary in COMMITTED */
	base_rec(st, &sec, LOCK_COMMITTED, 6);
	secondary_of(&sec, "badstate", "p");
	put_rec(st, "badstate", "s", &sec);

	/* stale: an expired PREWRITTEN primary with one listed, prewritten secondary */
	base_rec(st, &p, LOCK_PREWRITTEN, 7);
	listed.table = MRTX_CSTR("stale");
	listed.row = MRTX_CSTR("s");
	p.secondaries = &listed;
	p.nsecondaries = 1;
	put_rec(st, "stale", "p", &p);
	base_rec(st, &sec, LOCK_PREWRITTEN, 7);
	secondary_of(&sec, "stale", "p");
	put_rec(st, "stale", "s", &sec);

	/* a secondary pointing at a table that does not exist */
	base_rec(st, &sec, LOCK_PREWRITTEN, 8);
	secondary_of(&sec, "no-such-table", "p");
	put_rec(st, "missing", "s", &sec);

	run_check(st, &fs, &s);
	assert_int_equal(count(&fs, "dangling", "dangling", CHECK_CORRUPT), 1);
	assert_int_equal(count(&fs, "notlisted", "not-listed", CHECK_CORRUPT), 1);
	assert_int_equal(count(&fs, "notlisted", "stale", CHECK_RESOLVABLE), 1);
	assert_int_equal(count(&fs, "orphan", "orphan", CHECK_RESOLVABLE), 1);
	assert_int_equal(count(&fs, "garbage", "undecodable", CHECK_CORRUPT), 1);
	assert_int_equal(count(&fs, "foreign", "foreign-tag", CHECK_CORRUPT), 1);
	assert_int_equal(count(&fs, "badstate", "bad-state", CHECK_CORRUPT), 1);
	assert_int_equal(count(&fs, "stale", "stale", CHECK_RESOLVABLE), 1);
	if (droppable) {
		/* resolvable: a drop leaves such orphans (recovery rolls them back) */
		assert_int_equal(count(&fs, "missing", "missing-table", CHECK_RESOLVABLE), 1);
	} else {
		/* no table of a RADOS store is ever dropped: the record is damaged */
		assert_int_equal(count(&fs, "missing", "missing-table", CHECK_CORRUPT), 1);
	}
	assert_int_equal(fs.n, 9);
	assert_int_equal(s.corrupt, droppable ? 5 : 6);
	assert_int_equal(s.resolvable, droppable ? 4 : 3);
	assert_int_equal(s.live, 0);

	/* recover settles the resolvable ones and leaves the corruption alone */
	recover_sweep(st, &ro, &rs, NULL, NULL);
	run_check(st, &fs, &s);
	assert_int_equal(count(&fs, "orphan", "orphan", CHECK_RESOLVABLE), 0);
	assert_int_equal(count(&fs, "stale", "stale", CHECK_RESOLVABLE), 0);
	assert_int_equal(count(&fs, "dangling", "dangling", CHECK_CORRUPT), 1);
	assert_int_equal(count(&fs, "garbage", "undecodable", CHECK_CORRUPT), 1);
	assert_int_equal(count(&fs, "foreign", "foreign-tag", CHECK_CORRUPT), 1);
	assert_int_equal(s.resolvable, count(&fs, "notlisted", "stale", CHECK_RESOLVABLE));
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

static void test_live_txn_is_not_a_finding(void **state)
{
	const char *fams[] = { "f" };
	check_stats s;
	findings fs;
	lock_rec p, sec;
	lock_ref listed;
	char *path;
	mrtx_db *db = tu_open_fresh("check-live", &path, NULL);
	store *st = mrtx__db_store(db);

	(void)state;
	assert_int_equal(mrtx_create_table(db, "t", fams, 1), 0);
	/* this process owns it and it expires in an hour: a txn in flight */
	base_rec(st, &p, LOCK_PREWRITTEN, 9);
	p.expiry_ms = mrtx__now_ms() + 3600 * 1000;
	listed.table = MRTX_CSTR("t");
	listed.row = MRTX_CSTR("s");
	p.secondaries = &listed;
	p.nsecondaries = 1;
	put_rec(st, "t", "p", &p);
	base_rec(st, &sec, LOCK_PREWRITTEN, 9);
	sec.expiry_ms = p.expiry_ms;
	secondary_of(&sec, "t", "p");
	put_rec(st, "t", "s", &sec);
	/* and a live orphan (its primary lost a conflict; the writer cleans up) */
	base_rec(st, &sec, LOCK_PREWRITTEN, 10);
	sec.expiry_ms = p.expiry_ms;
	secondary_of(&sec, "t", "p");
	put_rec(st, "t", "o", &sec);

	run_check(st, &fs, &s);
	assert_int_equal(fs.n, 0);
	assert_int_equal(s.live, 2);
	assert_int_equal(s.by_state[LOCK_PREWRITTEN], 3);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* The lock record of (table, row), read into *cur (memory from a). */
static void read_lock(store *st, const char *table, const char *row, mrtx_arena *a,
                      store_row *cur)
{
	const store_table *t;
	store_rowref ref;

	assert_int_equal(store_table_find(st, table, &t), 0);
	ref = (store_rowref){ t, MRTX_CSTR(row) };
	assert_int_equal(store_read_locks(st, &ref, 1, a, cur), 0);
}

/* What a reader's mrtx_get of (table, row) f:q returns. */
static int get_rc(mrtx_db *db, const char *table, const char *row)
{
	mrtx_txn *txn;
	mrtx_bytes v;
	int rc;

	assert_int_equal(mrtx_begin(db, &txn), 0);
	rc = mrtx_get(txn, table, MRTX_CSTR(row), "f", MRTX_CSTR("q"), &v);
	mrtx_abort(txn);
	return rc;
}

/* A fresh store with table "t" (family "f"), opened with lock_wait_ms. */
static mrtx_db *open_with_wait(const char *name, char **path, uint32_t wait_ms)
{
	const char *fams[] = { "f" };
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db;

	o.lock_wait_ms = wait_ms;
	db = tu_open_fresh(name, path, &o);
	assert_non_null(db);
	assert_int_equal(mrtx_create_table(db, "t", fams, 1), 0);
	return db;
}

/* A PREWRITTEN record of txn txn_byte, this process's and unexpired: live. */
static void live_rec(store *st, lock_rec *r, uint8_t txn_byte)
{
	base_rec(st, r, LOCK_PREWRITTEN, txn_byte);
	r->expiry_ms = mrtx__now_ms() + 3600 * 1000;
}

/*
 * A secondary whose primary row holds nothing, its owner alive and its lock
 * unexpired, is what a reader meets while a writer's prewrite of the
 * primary is still in flight (RADOS writes a prewrite's rows one by one).
 * `recover` waits for it, as for a live primary, and so does a reader on
 * LMDB (RADOS readers read past it: the commit, if any, is stamped after
 * the primary's prewrite lands, above their snapshot); fencing the
 * primary would abort the live writer.  Only --force (or the owner's
 * death, or the expiry: test_each_kind_of_finding) takes it.
 * Checks I9 (DESIGN §10).
 */
static void test_live_orphan_is_left_alone(void **state)
{
	recover_opts ro = { 0, 0, 0 };
	recover_stats rs;
	store_row cur;
	mrtx_arena a;
	lock_rec sec;
	char *path;
	mrtx_db *db = open_with_wait("check-live-orphan", &path, 20);
	store *st = mrtx__db_store(db);

	(void)state;
	live_rec(st, &sec, 11);
	secondary_of(&sec, "t", "p");
	put_rec(st, "t", "s", &sec);
	arena_init(&a);

	/* (RADOS: a read at the snapshot reads past it, as before it) */
	assert_int_equal(get_rc(db, "t", "s"), tu_rados() ? MRTX_NOTFOUND : MRTX_ELOCKED);
	assert_int_equal(recover_sweep(st, &ro, &rs, NULL, NULL), 0);
	assert_int_equal(rs.skipped_live, 1);
	assert_int_equal(rs.rolled_back, 0);
	/* the primary was not fenced: the writer's prewrite of it can land */
	read_lock(st, "t", "p", &a, &cur);
	assert_false(cur.has_lock);

	ro.force = 1;
	assert_int_equal(recover_sweep(st, &ro, &rs, NULL, NULL), 0);
	assert_int_equal(rs.rolled_back, 1);
	read_lock(st, "t", "p", &a, &cur);
	assert_true(cur.has_lock); /* the fence */
	assert_int_equal(get_rc(db, "t", "s"), MRTX_NOTFOUND);
	arena_free(&a);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/*
 * A live orphan whose primary row is held by another live transaction
 * waits for that one (backing off as for any live owner): a reader gets
 * MRTX_ELOCKED after its lock_wait_ms, having made a few dozen store calls
 * (not a spin of hundreds of thousands), and the sweep counts it live.
 * Counted in store calls, not timed.
 * Checks I9 (DESIGN §10).
 */
static void test_orphan_behind_live_primary_waits(void **state)
{
	recover_opts ro = { 0, 0, 0 };
	recover_stats rs;
	unsigned long calls;
	lock_rec p, sec;
	char *path;
	mrtx_db *db = open_with_wait("check-orphan-behind", &path, 100);
	store *st = mrtx__db_store(db);

	(void)state;
	live_rec(st, &p, 12); /* another txn's live primary */
	put_rec(st, "t", "p", &p);
	live_rec(st, &sec, 13); /* our orphan, live too */
	secondary_of(&sec, "t", "p");
	put_rec(st, "t", "s", &sec);

	store__fail_at(ULONG_MAX, 0);
	/* (RADOS: a read at the snapshot reads past it without waiting) */
	assert_int_equal(get_rc(db, "t", "s"), tu_rados() ? MRTX_NOTFOUND : MRTX_ELOCKED);
	calls = store__fail_at(0, 0);
	if (calls > 2000)
		fail_msg("%lu store calls to wait 100 ms for a live transaction", calls);
	assert_int_equal(recover_sweep(st, &ro, &rs, NULL, NULL), 0);
	assert_int_equal(rs.rolled_back + rs.forwarded, 0);
	assert_int_equal(rs.skipped_live, 2);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/*
 * One stale transaction of `n` rows, its primary first or last in row
 * order; written in one store call (rows "r00000".., primary "p" or "z").
 */
static void put_big_txn(store *st, size_t n, const char *prow)
{
	const store_table *t;
	mrtx_arena a;
	store_op *ops = calloc(n + 1, sizeof(*ops));
	lock_ref *refs = calloc(n, sizeof(*refs));
	char (*rows)[24] = calloc(n, sizeof(*rows));
	lock_rec p, sec;

	assert_non_null(ops);
	assert_non_null(refs);
	assert_non_null(rows);
	arena_init(&a);
	assert_int_equal(store_table_find(st, "t", &t), 0);
	for (size_t i = 0; i < n; i++) {
		snprintf(rows[i], sizeof(rows[i]), "r%05zu", i);
		refs[i].table = MRTX_CSTR("t");
		refs[i].row = MRTX_CSTR(rows[i]);
		base_rec(st, &sec, LOCK_PREWRITTEN, 7);
		secondary_of(&sec, "t", prow);
		ops[i].table = t;
		ops[i].row = refs[i].row;
		ops[i].cond.absent = 1;
		assert_int_equal(lock_encode(&sec, &a, &ops[i].new_lock), 0);
	}
	base_rec(st, &p, LOCK_PREWRITTEN, 7);
	p.secondaries = refs;
	p.nsecondaries = n;
	ops[n].table = t;
	ops[n].row = MRTX_CSTR(prow);
	ops[n].cond.absent = 1;
	assert_int_equal(lock_encode(&p, &a, &ops[n].new_lock), 0);
	assert_int_equal(store_write_rows(st, ops, n + 1), 0);
	for (size_t i = 0; i <= n; i++)
		assert_int_equal(ops[i].result, 0);
	arena_free(&a);
	free(rows);
	free(refs);
	free(ops);
}

/*
 * `mrtx check` and `mrtx recover --dry-run` on one transaction of n rows
 * must not read the primary (which lists all n rows) once per secondary:
 * that made both quadratic.  Counted in store calls, not timed: a walk
 * reads 512 (check) or 1024 (sweep) locks per call, so a few dozen calls
 * cover the store; one call per lock would be thousands.
 */
static void test_cost_is_linear_in_txn_size(void **state)
{
	const size_t n = 4000;
	const char *const prows[] = { "a", "z" }; /* primary walked first, last */

	(void)state;
	for (size_t k = 0; k < 2; k++) {
		const char *fams[] = { "f" };
		recover_opts ro = { 0, 0, 1 };
		recover_stats rs;
		unsigned long calls;
		check_stats s;
		findings fs;
		char *path;
		mrtx_db *db = tu_open_fresh("check-linear", &path, NULL);
		store *st = mrtx__db_store(db);

		assert_int_equal(mrtx_create_table(db, "t", fams, 1), 0);
		put_big_txn(st, n, prows[k]);

		memset(&fs, 0, sizeof(fs));
		store__fail_at(ULONG_MAX, 0);
		assert_int_equal(check_store(st, &s, collect, &fs), 0);
		calls = store__fail_at(0, 0);
		assert_int_equal(s.locks, n + 1);
		assert_int_equal(s.corrupt, 0);
		assert_int_equal(s.resolvable, 1); /* the stale primary, once */
		assert_int_equal(count(&fs, "t", "stale", CHECK_RESOLVABLE), 1);
		if (calls > n / 512 + 8)
			fail_msg("check: %lu store calls for %zu locks (primary %s)", calls, n + 1,
			         prows[k]);

		store__fail_at(ULONG_MAX, 0);
		assert_int_equal(recover_sweep(st, &ro, &rs, NULL, NULL), 0);
		calls = store__fail_at(0, 0);
		assert_int_equal(rs.locks_seen, n + 1);
		assert_int_equal(rs.rolled_back, 1);
		assert_int_equal(rs.forwarded + rs.skipped_live + rs.errors, 0);
		if (calls > n / 1024 + 8)
			fail_msg("recover --dry-run: %lu store calls for %zu locks (primary %s)",
			         calls, n + 1, prows[k]);

		/* and the real sweep still settles it all */
		ro.dry_run = 0;
		assert_int_equal(recover_sweep(st, &ro, &rs, NULL, NULL), 0);
		assert_int_equal(rs.rolled_back, 1);
		assert_int_equal(check_store(st, &s, NULL, NULL), 0);
		assert_int_equal(s.by_state[LOCK_PREWRITTEN], 0);
		assert_int_equal(s.resolvable + s.corrupt, 0);
		mrtx_close(db);
		tu_rmrf(path);
		free(path);
	}
}

/*
 * Resolving an orphan fences its primary so that a late prewrite of the
 * primary by the orphan's transaction fails -- also a blind one, whose
 * condition is "no lock, or STABLE committed before my first write" (all
 * of which precede the transaction's commit_ts): the fence carries a
 * commit_ts no lower than the orphan's.
 * Checks I10 (DESIGN §10).
 */
static void test_orphan_fence_stops_blind_prewrite(void **state)
{
	char *path;
	mrtx_db *db = fresh_o("check-fence", &path);
	store *st = mrtx__db_store(db);
	store_row cur;
	mrtx_arena a;
	lock_rec sec;

	(void)state;
	base_rec(st, &sec, LOCK_PREWRITTEN, 9); /* commit_ts 1000, first writes before */
	secondary_of(&sec, "o", "p");
	put_rec(st, "o", "s", &sec);
	/* a reader meets the orphan: fence, roll back */
	assert_int_equal(get_rc(db, "o", "s"), MRTX_NOTFOUND);
	arena_init(&a);
	read_lock(st, "o", "p", &a, &cur);
	assert_true(cur.has_lock);
	assert_false(lock_is_stable_before(cur.lock, store_id(st), sec.commit_ts));
	arena_free(&a);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/*
 * Two orphans, each under the other: s holds A's secondary whose primary is
 * p, and p holds B's secondary whose primary is s, both expired.  Settling
 * either cannot wait for the other first; a reader of s settles both, and
 * each row is left fenced against the other transaction: a later prewrite
 * of p by A or of s by B, exact or blind, fails its condition.
 * Checks I10 (DESIGN §10).
 */
static void test_orphan_cycle_is_broken(void **state)
{
	char *path;
	mrtx_db *db = fresh_o("check-cycle", &path);
	store *st = mrtx__db_store(db);
	store_row cur;
	mrtx_arena a;
	lock_rec ra, rb;

	(void)state;
	base_rec(st, &ra, LOCK_PREWRITTEN, 9);
	secondary_of(&ra, "o", "p");
	put_rec(st, "o", "s", &ra);
	base_rec(st, &rb, LOCK_PREWRITTEN, 7);
	rb.commit_ts = 900;
	secondary_of(&rb, "o", "s");
	put_rec(st, "o", "p", &rb);
	/* a reader of either row settles both */
	assert_int_equal(get_rc(db, "o", "s"), MRTX_NOTFOUND);
	assert_int_equal(get_rc(db, "o", "p"), MRTX_NOTFOUND);
	arena_init(&a);
	read_lock(st, "o", "s", &a, &cur); /* fenced against B */
	assert_true(cur.has_lock);
	assert_false(lock_is_stable_before(cur.lock, store_id(st), rb.commit_ts));
	read_lock(st, "o", "p", &a, &cur); /* fenced against A */
	assert_true(cur.has_lock);
	assert_false(lock_is_stable_before(cur.lock, store_id(st), ra.commit_ts));
	arena_free(&a);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/*
 * k orphans in a cycle: row cI holds transaction I's secondary whose
 * primary is c(I+1 mod k), all expired.  Row names and transactions from
 * `first` on.
 */
static void put_cycle(store *st, size_t k, unsigned first, lock_rec *recs)
{
	char rows[16][8];

	assert_true(k <= 16);
	for (size_t i = 0; i < k; i++)
		snprintf(rows[i], sizeof(rows[i]), "c%02u", (unsigned)(first + i));
	for (size_t i = 0; i < k; i++) {
		base_rec(st, &recs[i], LOCK_PREWRITTEN, (uint8_t)(first + i));
		recs[i].commit_ts = 900 + 10 * (uint64_t)i;
		secondary_of(&recs[i], "o", rows[(i + 1) % k]);
		put_rec(st, "o", rows[i], &recs[i]);
	}
}

/* Each row of the cycle put_cycle wrote is settled and fenced against the
 * transaction whose primary it is: that one's prewrite of it, exact or
 * blind, fails. */
static void assert_cycle_fenced(store *st, size_t k, unsigned first, const lock_rec *recs)
{
	mrtx_arena a;

	arena_init(&a);
	for (size_t i = 0; i < k; i++) {
		char row[8];
		store_row cur;
		lock_rec r;

		snprintf(row, sizeof(row), "c%02u", (unsigned)(first + (i + 1) % k));
		read_lock(st, "o", row, &a, &cur);
		assert_true(cur.has_lock);
		assert_int_equal(lock_decode(&r, cur.lock, &a), 0);
		assert_int_equal(r.state, LOCK_STABLE);
		assert_false(lock_is_stable_before(cur.lock, store_id(st), recs[i].commit_ts));
	}
	arena_free(&a);
}

/* A reader of each row of the cycle put_cycle wrote, in turn, finds it
 * absent (each orphan rolled back), and each row ends fenced. */
static void read_cycle_fenced(mrtx_db *db, size_t k, unsigned first, const lock_rec *recs)
{
	for (size_t i = 0; i < k; i++) {
		char row[8];

		snprintf(row, sizeof(row), "c%02u", (unsigned)(first + i));
		assert_int_equal(get_rc(db, "o", row), MRTX_NOTFOUND);
	}
	assert_cycle_fenced(mrtx__db_store(db), k, first, recs);
}

/*
 * Cycles of three to eight orphans are broken as a cycle of two is: a
 * reader of each row in turn settles them, and so does a sweep alone
 * (counting every transaction it settled); every row ends STABLE, fenced
 * against the transaction whose primary it is.
 * Checks I10 (DESIGN §10).
 */
static void test_longer_orphan_cycles_are_broken(void **state)
{
	static const size_t ks[] = { 3, 5, 8 };
	recover_opts ro = { 0, 0, 0 };
	recover_stats rs;
	check_stats s;
	char *path;
	mrtx_db *db = fresh_o("check-cycles", &path);
	store *st = mrtx__db_store(db);
	lock_rec recs[16];
	unsigned first = 20;

	(void)state;
	for (size_t j = 0; j < sizeof(ks) / sizeof(ks[0]); j++, first += 10) {
		put_cycle(st, ks[j], first, recs);
		/* a reader of the first row, then of each row */
		read_cycle_fenced(db, ks[j], first, recs);
	}
	/* the sweep alone, a cycle of four */
	put_cycle(st, 4, first, recs);
	assert_int_equal(recover_sweep(st, &ro, &rs, NULL, NULL), 0);
	assert_int_equal(rs.skipped_live + rs.errors, 0);
	assert_int_equal(rs.rolled_back, 4); /* (also those settled on the way) */
	assert_int_equal(check_store(st, &s, NULL, NULL), 0);
	assert_int_equal(s.by_state[LOCK_PREWRITTEN], 0);
	assert_cycle_fenced(st, 4, first, recs);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/*
 * A fence of a reader's own settling hides no commit: a transaction takes
 * its snapshot, another commits to p above it, and the transaction's own
 * settling then fences p twice (two orphans of p, the second's commit_ts
 * above the first fence's).  It reads p and writes: its commit fails with
 * MRTX_CONFLICT, as p was committed after its snapshot whatever fences
 * stand over that commit.
 */
static void test_own_fences_hide_no_commit(void **state)
{
	char *path;
	mrtx_db *db = fresh_o("check-own-fence", &path);
	store *st = mrtx__db_store(db);
	lock_rec r;
	mrtx_txn *txn;
	mrtx_bytes v;
	int rc;

	(void)state;
	assert_int_equal(tu_put_str(db, "o", "zz", "f:q", "v"), 0);
	assert_int_equal(tu_put_str(db, "o", "p", "f:q", "old"), 0);
	assert_int_equal(mrtx_begin(db, &txn), 0);
	assert_int_equal(mrtx_get(txn, "o", MRTX_CSTR("zz"), "f", MRTX_CSTR("q"), &v), 0);
	assert_int_equal(tu_put_str(db, "o", "p", "f:q", "new"), 0); /* above the snapshot */
	/* (commit_ts above p's commit, then above the first fence: each
	 * settling fences p, the second over the first) */
	base_rec(st, &r, LOCK_PREWRITTEN, 71);
	r.commit_ts = (uint64_t)1 << 59;
	secondary_of(&r, "o", "p");
	put_rec(st, "o", "s1", &r);
	base_rec(st, &r, LOCK_PREWRITTEN, 72);
	r.commit_ts = (uint64_t)1 << 60;
	secondary_of(&r, "o", "p");
	put_rec(st, "o", "s2", &r);
	assert_int_equal(mrtx_get(txn, "o", MRTX_CSTR("s1"), "f", MRTX_CSTR("q"), &v),
	                 MRTX_NOTFOUND);
	assert_int_equal(mrtx_get(txn, "o", MRTX_CSTR("s2"), "f", MRTX_CSTR("q"), &v),
	                 MRTX_NOTFOUND);
	rc = mrtx_get(txn, "o", MRTX_CSTR("p"), "f", MRTX_CSTR("q"), &v);
	assert_true(rc == MRTX_OK || rc == MRTX_CONFLICT || rc == MRTX_ESNAPSHOT);
	if (rc == MRTX_OK)
		rc = mrtx_put(txn, "o", MRTX_CSTR("w"), "f", MRTX_CSTR("q"), MRTX_CSTR("x"));
	if (rc == MRTX_OK)
		rc = mrtx_commit(txn);
	else
		mrtx_abort(txn);
	if (rc == MRTX_OK)
		fail_msg("a writing transaction read p as of its snapshot and committed over "
		         "a later commit to p");
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* n orphans in a chain: row <p>NN holds transaction first+NN's secondary
 * whose primary is <p>(NN+1), the last one's a row without a lock, all
 * expired. */
static void put_chain(store *st, const char *p, size_t n, unsigned first)
{
	for (size_t i = 0; i < n; i++) {
		char row[32], prow[32];
		lock_rec r;

		snprintf(row, sizeof(row), "%s%02zu", p, i);
		snprintf(prow, sizeof(prow), "%s%02zu", p, i + 1);
		base_rec(st, &r, LOCK_PREWRITTEN, (uint8_t)(first + i));
		secondary_of(&r, "o", prow);
		put_rec(st, "o", row, &r);
	}
}

static unsigned long pending_locks(store *st)
{
	check_stats s;

	assert_int_equal(check_store(st, &s, NULL, NULL), 0);
	return s.by_state[LOCK_PREWRITTEN];
}

/*
 * Chains and cycles of orphans longer than the recursion goes (eight
 * links) are settled all the same, and counted: a chain of twenty by one
 * sweep (its dry run deciding every lock, none live) or by one reader; a
 * cycle of nine or sixteen by readers, of twelve by a sweep.  A cycle of
 * twelve with one live lock in it waits: counted live, nothing written.
 * Checks I9, I10 (DESIGN §10).
 */
static void test_long_chains_and_cycles_are_settled(void **state)
{
	static const size_t ks[] = { 9, 16 };
	const char *fams[] = { "f" };
	recover_opts ro = { 0, 0, 1 };
	recover_stats rs;
	lock_rec recs[16];
	char *path;
	mrtx_db *db = open_with_wait("check-long-chains", &path, 20);
	store *st = mrtx__db_store(db);

	(void)state;
	assert_int_equal(mrtx_create_table(db, "o", fams, 1), 0);
	/* a chain of twenty: the dry run, then the sweep */
	put_chain(st, "h", 20, 100);
	assert_int_equal(recover_sweep(st, &ro, &rs, NULL, NULL), 0);
	assert_int_equal(rs.locks_seen, 20);
	assert_int_equal(rs.rolled_back, 20);
	assert_int_equal(rs.skipped_live + rs.errors, 0);
	assert_int_equal(pending_locks(st), 20);
	ro.dry_run = 0;
	assert_int_equal(recover_sweep(st, &ro, &rs, NULL, NULL), 0);
	assert_int_equal(rs.rolled_back, 20);
	assert_int_equal(rs.skipped_live + rs.errors, 0);
	assert_int_equal(pending_locks(st), 0);
	/* a reader of the chain's first row */
	put_chain(st, "g", 20, 130);
	assert_int_equal(get_rc(db, "o", "g00"), MRTX_NOTFOUND);
	assert_int_equal(pending_locks(st), 0);
	/* cycles, by readers */
	for (size_t j = 0; j < sizeof(ks) / sizeof(ks[0]); j++) {
		unsigned first = j ? 60 : 40;

		put_cycle(st, ks[j], first, recs);
		read_cycle_fenced(db, ks[j], first, recs);
	}
	/* a cycle of twelve, by a sweep */
	put_cycle(st, 12, 80, recs);
	assert_int_equal(recover_sweep(st, &ro, &rs, NULL, NULL), 0);
	assert_int_equal(rs.rolled_back, 12);
	assert_int_equal(rs.skipped_live + rs.errors, 0);
	assert_int_equal(pending_locks(st), 0);
	assert_cycle_fenced(st, 12, 80, recs);
	/* a cycle of twelve, one lock of it live */
	for (size_t i = 0; i < 12; i++) {
		char row[32], prow[32];
		lock_rec r;

		snprintf(row, sizeof(row), "l%02zu", i);
		snprintf(prow, sizeof(prow), "l%02zu", (i + 1) % 12);
		if (i == 7)
			live_rec(st, &r, (uint8_t)(200 + i));
		else
			base_rec(st, &r, LOCK_PREWRITTEN, (uint8_t)(200 + i));
		secondary_of(&r, "o", prow);
		put_rec(st, "o", row, &r);
	}
	assert_int_equal(recover_sweep(st, &ro, &rs, NULL, NULL), 0);
	assert_int_equal(rs.rolled_back + rs.forwarded + rs.errors, 0);
	assert_int_equal(rs.skipped_live, 12);
	assert_int_equal(pending_locks(st), 12);
	assert_int_equal(get_rc(db, "o", "l00"), MRTX_ELOCKED);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/*
 * A transaction that meets a cycle of orphans after its first read reads
 * past the locks and breaks the cycle on its way; the fences that writes
 * are its own, not a conflict: it commits, read-only or writing, whether
 * it read one row of the cycle or each of them.
 * Checks I10, I11 (DESIGN §10).
 */
static void test_reader_breaking_cycle_commits(void **state)
{
	static const size_t ks[] = { 2, 3, 8 };
	char *path;
	mrtx_db *db = fresh_o("check-cycle-reader", &path);
	store *st = mrtx__db_store(db);
	lock_rec recs[16];
	unsigned first = 20;

	(void)state;
	assert_int_equal(tu_put_str(db, "o", "zz", "f:q", "v"), 0);
	for (size_t j = 0; j < sizeof(ks) / sizeof(ks[0]); j++) {
		for (int shape = 0; shape < 4; shape++, first += 10) {
			int writes = shape & 1, all = shape & 2;
			mrtx_txn *txn;
			mrtx_bytes v;
			char row[8];

			put_cycle(st, ks[j], first, recs);
			assert_int_equal(mrtx_begin(db, &txn), 0);
			assert_int_equal(mrtx_get(txn, "o", MRTX_CSTR("zz"), "f", MRTX_CSTR("q"),
			                          &v), 0);
			for (size_t i = 0; i < (all ? ks[j] : 1); i++) {
				snprintf(row, sizeof(row), "c%02u", (unsigned)(first + i));
				assert_int_equal(mrtx_get(txn, "o", MRTX_CSTR(row), "f",
				                          MRTX_CSTR("q"), &v), MRTX_NOTFOUND);
			}
			if (writes)
				assert_int_equal(mrtx_put(txn, "o", MRTX_CSTR("w"), "f",
				                          MRTX_CSTR("q"), MRTX_CSTR("x")), 0);
			if (mrtx_commit(txn) != MRTX_OK)
				fail_msg("a cycle of %zu, %s, reading %s: %s", ks[j],
				         writes ? "writing" : "read-only",
				         all ? "every row" : "one row", mrtx_errmsg());
			/* (the rest of the cycle, settled by readers) */
			read_cycle_fenced(db, ks[j], first, recs);
		}
	}
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/*
 * A cycle of orphans with one live lock in it is not broken: its owner may
 * still land its prewrite of its primary once that row is free.  The sweep
 * counts it live and writes nothing.
 * Checks I9 (DESIGN §10).
 */
static void test_cycle_with_live_orphan_waits(void **state)
{
	recover_opts ro = { 0, 0, 0 };
	recover_stats rs;
	mrtx_arena a;
	lock_rec recs[3];
	mrtx_bytes before[3];
	char *path;
	mrtx_db *db = open_with_wait("check-cycle-live", &path, 20);
	store *st = mrtx__db_store(db);

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		char row[8], prow[8];

		snprintf(row, sizeof(row), "c%zu", i);
		snprintf(prow, sizeof(prow), "c%zu", (i + 1) % 3);
		if (i == 1)
			live_rec(st, &recs[i], (uint8_t)(40 + i));
		else
			base_rec(st, &recs[i], LOCK_PREWRITTEN, (uint8_t)(40 + i));
		secondary_of(&recs[i], "t", prow);
		put_rec(st, "t", row, &recs[i]);
	}
	arena_init(&a);
	for (size_t i = 0; i < 3; i++) {
		char row[8];
		store_row cur;

		snprintf(row, sizeof(row), "c%zu", i);
		read_lock(st, "t", row, &a, &cur);
		before[i] = cur.lock;
	}
	assert_int_equal(recover_sweep(st, &ro, &rs, NULL, NULL), 0);
	assert_int_equal(rs.rolled_back + rs.forwarded, 0);
	assert_int_equal(rs.skipped_live, 3);
	for (size_t i = 0; i < 3; i++) {
		char row[8];
		store_row cur;

		snprintf(row, sizeof(row), "c%zu", i);
		read_lock(st, "t", row, &a, &cur);
		assert_true(cur.has_lock);
		assert_int_equal(cur.lock.size, before[i].size);
		assert_memory_equal(cur.lock.data, before[i].data, cur.lock.size);
	}
	/* --force takes the live one too */
	ro.force = 1;
	assert_int_equal(recover_sweep(st, &ro, &rs, NULL, NULL), 0);
	assert_int_equal(rs.skipped_live, 0);
	assert_int_equal(get_rc(db, "t", "c1"), MRTX_NOTFOUND);
	arena_free(&a);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/*
 * A dry run over a chain of orphans -- a holds A's secondary whose primary
 * p holds B's secondary whose primary q holds nothing, both expired --
 * decides each lock in a few store calls and writes nothing; the real
 * sweep then settles both, B on its way to A (a is walked first), and
 * counts both.
 */
static void test_dry_run_over_orphan_chain(void **state)
{
	recover_opts ro = { 0, 0, 1 };
	recover_stats rs;
	unsigned long calls;
	check_stats s;
	lock_rec ra, rb;
	char *path;
	mrtx_db *db = open_with_wait("check-dry-chain", &path, 0);
	store *st = mrtx__db_store(db);

	(void)state;
	base_rec(st, &ra, LOCK_PREWRITTEN, 50);
	secondary_of(&ra, "t", "p");
	put_rec(st, "t", "a", &ra);
	base_rec(st, &rb, LOCK_PREWRITTEN, 51);
	secondary_of(&rb, "t", "q");
	put_rec(st, "t", "p", &rb);

	store__fail_at(ULONG_MAX, 0);
	assert_int_equal(recover_sweep(st, &ro, &rs, NULL, NULL), 0);
	calls = store__fail_at(0, 0);
	if (calls > 100)
		fail_msg("recover --dry-run: %lu store calls for a chain of two orphans", calls);
	assert_int_equal(rs.locks_seen, 2);
	assert_int_equal(rs.rolled_back, 2);
	assert_int_equal(rs.skipped_live + rs.errors, 0);
	assert_int_equal(check_store(st, &s, NULL, NULL), 0);
	assert_int_equal(s.by_state[LOCK_PREWRITTEN], 2); /* nothing written */

	ro.dry_run = 0;
	assert_int_equal(recover_sweep(st, &ro, &rs, NULL, NULL), 0);
	assert_int_equal(rs.rolled_back, 2); /* (B settled on the way to A) */
	assert_int_equal(check_store(st, &s, NULL, NULL), 0);
	assert_int_equal(s.by_state[LOCK_PREWRITTEN], 0);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/*
 * Settling a chain of orphans reads each link a bounded number of times:
 * the walk that looks for a cycle from the chain's first lock, having
 * reached the chain's end, is not made again from every link after it
 * (which made a sweep quadratic in the chain's length: a round trip per
 * read on RADOS).  Counted in store calls, not timed.
 */
static void test_chain_cost_is_linear(void **state)
{
	static const size_t ns[] = { 50, 200 };
	const char *fams[] = { "f" };

	(void)state;
	for (size_t k = 0; k < 2; k++) {
		unsigned long calls;
		recover_opts ro = { 0, 0, 0 };
		recover_stats rs;
		char *path;
		mrtx_db *db = open_with_wait("check-chain-cost", &path, 20);
		store *st = mrtx__db_store(db);
		char p[2] = { (char)('a' + k), 0 };

		assert_int_equal(mrtx_create_table(db, "o", fams, 1), 0);
		put_chain(st, p, ns[k], 0);
		store__fail_at(ULONG_MAX, 0);
		assert_int_equal(recover_sweep(st, &ro, &rs, NULL, NULL), 0);
		calls = store__fail_at(0, 0);
		assert_int_equal(rs.rolled_back, ns[k]);
		assert_int_equal(rs.skipped_live + rs.errors, 0);
		assert_int_equal(pending_locks(st), 0);
		/* (about 12 a link, on both backends; one walk a link made it
		 * 47 a link at 50, 124 at 200) */
		if (calls > 20 * ns[k])
			fail_msg("a chain of %zu orphans: %lu store calls", ns[k], calls);
		mrtx_close(db);
		tu_rmrf(path);
		free(path);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthy_store_has_no_findings),
		cmocka_unit_test(test_each_kind_of_finding),
		cmocka_unit_test(test_orphan_fence_stops_blind_prewrite),
		cmocka_unit_test(test_orphan_cycle_is_broken),
		cmocka_unit_test(test_longer_orphan_cycles_are_broken),
		cmocka_unit_test(test_reader_breaking_cycle_commits),
		cmocka_unit_test(test_own_fences_hide_no_commit),
		cmocka_unit_test(test_long_chains_and_cycles_are_settled),
		cmocka_unit_test(test_cycle_with_live_orphan_waits),
		cmocka_unit_test(test_dry_run_over_orphan_chain),
		cmocka_unit_test(test_live_txn_is_not_a_finding),
		cmocka_unit_test(test_live_orphan_is_left_alone),
		cmocka_unit_test(test_orphan_behind_live_primary_waits),
		cmocka_unit_test(test_cost_is_linear_in_txn_size),
		cmocka_unit_test(test_chain_cost_is_linear),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
