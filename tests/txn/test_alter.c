/*
 * test_alter.c - mrtx_alter_family: a family's version policy changed on
 * an existing table, what reads and writes keep under the new one, bad
 * input, and a handle in another process that learns of the change; and
 * mrtx_restore_versions, which writes a cell's versions back at their
 * timestamps; and mrtx_drop_family (cells and name gone, a transaction
 * that wrote the family conflicts, another process follows).  On RADOS
 * mrtx_alter_family (test_rados_alter) and mrtx_restore_versions work,
 * and mrtx_drop_family is MRTX_ENOTSUP.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "testutil.h"

#include "txn/admin.h"
#include "txn/txn_test.h"

static mrtx_db *fresh(char **path, uint32_t versions)
{
	mrtx_family_spec f[2] = { { "f", versions, 0, 0 }, { "g", 1, 0, 0 } };
	mrtx_db *db = tu_open_fresh("alter", path, NULL);

	assert_non_null(db);
	assert_int_equal(mrtx_create_table2(db, "t", f, 2), 0);
	return db;
}

static void done(mrtx_db *db, char *path)
{
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* How many versions of t/r/f:q a read shows (-1 on an error). */
static int nversions(mrtx_db *db)
{
	mrtx_version v[16];
	mrtx_txn *txn;
	size_t n = 0;
	int rc;

	if (mrtx_begin(db, &txn))
		return -1;
	rc = mrtx_get_versions(txn, "t", MRTX_BYTES("r", 1), "f", MRTX_BYTES("q", 1), v, 16, &n);
	mrtx_abort(txn);
	return rc == 0 || rc == MRTX_NOTFOUND ? (int)n : -1;
}

static void put_n(mrtx_db *db, int from, int n)
{
	for (int i = from; i < from + n; i++) {
		char v[16];

		snprintf(v, sizeof(v), "v%d", i);
		assert_int_equal(tu_put_str(db, "t", "r", "f:q", v), 0);
	}
}

static int alter(mrtx_db *db, const char *fam, uint32_t max, uint32_t min, uint64_t ttl)
{
	mrtx_family_spec s = { fam, max, min, ttl };

	return mrtx_alter_family(db, "t", &s);
}

static void test_rados_enotsup(void **state)
{
	char *path;
	mrtx_db *db;

	(void)state;
	if (!tu_rados())
		skip();
	db = fresh(&path, 3);
	assert_int_equal(mrtx_drop_family(db, "t", "g"), MRTX_ENOTSUP);
	assert_non_null(strstr(mrtx_errmsg(), "dropping a family"));
	done(db, path);
}

/*
 * RADOS: the policy is one metadata record; changing it raises the
 * metadata generation, so another handle's next write conflicts once and
 * its retry writes under the new policy (rados_store_alter_family).
 */
static void test_rados_alter(void **state)
{
	mrtx_family_spec got;
	char *path;
	mrtx_db *db, *db2;
	int rc;

	(void)state;
	if (!tu_rados())
		skip();
	db = fresh(&path, 3);
	put_n(db, 1, 4);
	assert_int_equal(nversions(db), 3);
	assert_non_null(db2 = tu_open(path, NULL));
	assert_int_equal(nversions(db2), 3); /* (db2 has the table, policy 3) */
	/* fewer: this handle reads under the new policy at once */
	assert_int_equal(alter(db, "f", 1, 0, 0), 0);
	assert_int_equal(nversions(db), 1);
	assert_int_equal(admin_family_policy(db, "t", 0, &got), 0);
	assert_int_equal(got.max_versions, 1);
	/* the other handle's next write meets the new generation once */
	rc = tu_put_str(db2, "t", "r", "f:q", "w1");
	assert_true(rc == MRTX_CONFLICT || rc == 0);
	if (rc == MRTX_CONFLICT)
		assert_int_equal(tu_put_str(db2, "t", "r", "f:q", "w1"), 0);
	assert_int_equal(admin_family_policy(db2, "t", 0, &got), 0);
	assert_int_equal(got.max_versions, 1);
	assert_int_equal(nversions(db2), 1);
	/* more again, and a family added later */
	assert_int_equal(alter(db, "f", 4, 1, 0), 0);
	assert_int_equal(mrtx_add_family(db, "t", "h"), 0);
	assert_int_equal(alter(db, "h", 5, 0, 60000), 0);
	assert_int_equal(admin_family_policy(db, "t", 2, &got), 0);
	assert_int_equal(got.max_versions, 5);
	assert_int_equal(got.ttl_ms, 60000);
	/* (db2's first write conflicts once more: the generation moved again) */
	rc = tu_put_str(db2, "t", "r", "f:q", "w2");
	assert_true(rc == MRTX_CONFLICT || rc == 0);
	put_n(db2, 10, 6);
	assert_int_equal(nversions(db2), 4);
	assert_int_equal(admin_family_policy(db2, "t", 0, &got), 0);
	assert_int_equal(got.max_versions, 4);
	/* bad input */
	assert_int_equal(alter(db, "nope", 2, 0, 0), MRTX_ENOFAMILY);
	{
		mrtx_family_spec s = { "f", 2, 0, 0 };

		assert_int_equal(mrtx_alter_family(db, "none", &s), MRTX_ENOTABLE);
	}
	mrtx_close(db2);
	done(db, path);
}

static void test_shrink_grow(void **state)
{
	mrtx_family_spec got;
	char *path;
	mrtx_db *db;

	(void)state;
	if (tu_rados())
		skip();
	db = fresh(&path, 3);
	put_n(db, 1, 4);
	assert_int_equal(nversions(db), 3);
	/* fewer: hidden at once, before any write */
	assert_int_equal(alter(db, "f", 1, 0, 0), 0);
	assert_int_equal(nversions(db), 1);
	assert_int_equal(admin_family_policy(db, "t", 0, &got), 0);
	assert_int_equal(got.max_versions, 1);
	/* growing again before any write shows what was not collected yet */
	assert_int_equal(alter(db, "f", 3, 0, 0), 0);
	assert_int_equal(nversions(db), 3);
	assert_int_equal(alter(db, "f", 1, 0, 0), 0);
	/* the next write collects; growing again shows only what was left
	 * and what is written from then on */
	put_n(db, 5, 1);
	assert_int_equal(alter(db, "f", 4, 1, 0), 0);
	assert_int_equal(nversions(db), 1);
	put_n(db, 6, 2);
	assert_int_equal(nversions(db), 3);
	put_n(db, 8, 3);
	assert_int_equal(nversions(db), 4);
	assert_int_equal(admin_family_policy(db, "t", 0, &got), 0);
	assert_int_equal(got.max_versions, 4);
	assert_int_equal(got.min_versions, 1);
	/* shrunk, collected by mrtx_gc without a write */
	{
		uint64_t got_n = 0;

		assert_int_equal(alter(db, "f", 2, 0, 0), 0);
		assert_int_equal(mrtx_gc(db, 0, &got_n), 0);
		assert_true(got_n >= 2);
		assert_int_equal(alter(db, "f", 4, 1, 0), 0);
		assert_int_equal(nversions(db), 2);
	}
	/* a family with no policy record entry of its own, and a TTL */
	assert_int_equal(alter(db, "g", 2, 1, 60000), 0);
	assert_int_equal(admin_family_policy(db, "t", 1, &got), 0);
	assert_int_equal(got.max_versions, 2);
	assert_int_equal(got.ttl_ms, 60000);
	/* 0 versions means 1, as at creation */
	assert_int_equal(alter(db, "g", 0, 0, 0), 0);
	assert_int_equal(admin_family_policy(db, "t", 1, &got), 0);
	assert_int_equal(got.max_versions, 1);
	/* and a family added later */
	assert_int_equal(mrtx_add_family(db, "t", "h"), 0);
	assert_int_equal(alter(db, "h", 5, 0, 0), 0);
	assert_int_equal(admin_family_policy(db, "t", 2, &got), 0);
	assert_int_equal(got.max_versions, 5);
	done(db, path);
}

static void test_bad_input(void **state)
{
	mrtx_family_spec s = { "f", 2, 0, 0 };
	char *path;
	mrtx_db *db;

	(void)state;
	if (tu_rados())
		skip();
	db = fresh(&path, 2);
	assert_int_equal(mrtx_alter_family(NULL, "t", &s), MRTX_EINVAL);
	assert_int_equal(mrtx_alter_family(db, NULL, &s), MRTX_EINVAL);
	assert_int_equal(mrtx_alter_family(db, "t", NULL), MRTX_EINVAL);
	s.name = NULL;
	assert_int_equal(mrtx_alter_family(db, "t", &s), MRTX_EINVAL);
	assert_int_equal(alter(db, "f", 2, 3, 0), MRTX_EINVAL);
	assert_non_null(strstr(mrtx_errmsg(), "MIN_VERSIONS"));
	assert_int_equal(alter(db, "f", 2, 0, UINT64_MAX), MRTX_EINVAL);
	assert_int_equal(alter(db, "nope", 2, 0, 0), MRTX_ENOFAMILY);
	s.name = "f";
	assert_int_equal(mrtx_alter_family(db, "none", &s), MRTX_ENOTABLE);
	mrtx_close(db);
	/* read-only */
	{
		mrtx_options o = MRTX_OPTIONS_INIT;

		o.read_only = 1;
		assert_int_equal(mrtx_open(&db, path, &o), 0);
		assert_int_equal(alter(db, "f", 1, 0, 0), MRTX_EREADONLY);
	}
	done(db, path);
}

/* Another process keeps the table attached while this one alters it. */
static void test_other_process(void **state)
{
	int down[2], up[2];
	char *path, c;
	mrtx_db *db;
	pid_t pid;

	(void)state;
	if (tu_rados())
		skip();
	db = fresh(&path, 3);
	put_n(db, 1, 3);
	assert_int_equal(pipe(down), 0);
	assert_int_equal(pipe(up), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		mrtx_db *cdb;
		mrtx_family_spec got;

		close(down[1]);
		close(up[0]);
		cdb = tu_open(path, NULL);
		if (!cdb || nversions(cdb) != 3)
			_exit(30);
		c = 0;
		if (write(up[1], &c, 1) != 1 || read(down[0], &c, 1) != 1)
			_exit(31);
		/* shrunk to 1 by the parent: this handle's next read knows, and
		 * its write collects the rest */
		c = nversions(cdb) == 1 ? 0 : 1;
		if (c == 0 && (admin_family_policy(cdb, "t", 0, &got) || got.max_versions != 1))
			c = 2;
		if (c == 0)
			put_n(cdb, 9, 1);
		if (write(up[1], &c, 1) != 1 || read(down[0], &c, 1) != 1)
			_exit(32);
		/* grown to 5 by the parent: this handle's writes keep them */
		if (nversions(cdb) != 1)
			c = 3;
		else {
			put_n(cdb, 10, 4);
			c = nversions(cdb) == 5 ? 0 : 4;
		}
		if (write(up[1], &c, 1) != 1)
			_exit(33);
		mrtx_close(cdb);
		_exit(0);
	}
	close(down[0]);
	close(up[1]);
	assert_int_equal(read(up[0], &c, 1), 1); /* the child read 3 versions */
	assert_int_equal(alter(db, "f", 1, 0, 0), 0);
	assert_int_equal(write(down[1], "1", 1), 1);
	assert_int_equal(read(up[0], &c, 1), 1);
	assert_int_equal(c, 0);
	assert_int_equal(alter(db, "f", 5, 0, 0), 0);
	assert_int_equal(write(down[1], "2", 1), 1);
	assert_int_equal(read(up[0], &c, 1), 1);
	assert_int_equal(c, 0);
	assert_int_equal(tu_wait(pid), 0);
	assert_int_equal(nversions(db), 5);
	done(db, path);
}

static int restore(mrtx_db *db, const char *row, const mrtx_version *v, size_t n)
{
	return mrtx_restore_versions(db, "t", MRTX_BYTES(row, strlen(row)), "f",
	                             MRTX_BYTES("q", 1), v, n);
}

static void test_restore(void **state)
{
	mrtx_version v[4], got[8];
	mrtx_txn *txn, *other;
	uint64_t now, ts;
	char *path;
	mrtx_db *db;
	size_t n;

	(void)state;
	db = fresh(&path, 3);
	/* timestamps below the store's newest: a commit's */
	put_n(db, 1, 1);
	assert_int_equal(mrtx_begin(db, &txn), 0);
	assert_int_equal(mrtx_get_versions(txn, "t", MRTX_BYTES("r", 1), "f", MRTX_BYTES("q", 1),
	                                   got, 8, &n), 0);
	mrtx_abort(txn);
	now = got[0].ts;
	for (size_t i = 0; i < 4; i++) {
		v[i].ts = now - 1000 * (i + 1);
		v[i].value = MRTX_BYTES(i == 0 ? "d" : i == 1 ? "c" : i == 2 ? "b" : "a", 1);
	}
	/* bad input */
	assert_int_equal(restore(db, "x", v, 0), MRTX_EINVAL);
	assert_int_equal(mrtx_restore_versions(db, "t", MRTX_BYTES("x", 1), "f",
	                                       MRTX_BYTES("q", 1), NULL, 1), MRTX_EINVAL);
	{
		mrtx_version up[2] = { v[1], v[0] };

		assert_int_equal(restore(db, "x", up, 2), MRTX_EINVAL);
		assert_non_null(strstr(mrtx_errmsg(), "newest first"));
		up[0].ts = 0;
		assert_int_equal(restore(db, "x", up, 1), MRTX_EINVAL);
	}
	assert_int_equal(mrtx_restore_versions(db, "t", MRTX_BYTES("x", 1), "nope",
	                                       MRTX_BYTES("q", 1), v, 1), MRTX_ENOFAMILY);
	assert_int_equal(mrtx_restore_versions(db, "none", MRTX_BYTES("x", 1), "f",
	                                       MRTX_BYTES("q", 1), v, 1), MRTX_ENOTABLE);
	/* a cell with a version: refused, untouched */
	assert_int_equal(restore(db, "r", v, 4), MRTX_EEXIST);
	assert_int_equal(nversions(db), 1);
	/* a transaction that read row x before the restore conflicts */
	assert_int_equal(mrtx_begin(db, &other), 0);
	assert_int_equal(mrtx_get_versions(other, "t", MRTX_BYTES("x", 1), "f",
	                                   MRTX_BYTES("q", 1), got, 8, &n), MRTX_NOTFOUND);
	assert_int_equal(mrtx_put(other, "t", MRTX_BYTES("y", 1), "f", MRTX_BYTES("q", 1),
	                          MRTX_BYTES("o", 1)), 0);
	/* a row with a (STABLE) lock: another cell of it */
	assert_int_equal(mrtx_restore_versions(db, "t", MRTX_BYTES("r", 1), "f",
	                                       MRTX_BYTES("q2", 2), v, 2), 0);
	assert_int_equal(tu_get_str(db, "t", "r", "f:q2", (char[4]){ 0 }, 4), 0);
	/* a deleted cell has a version (its deletion) */
	{
		char b[4];

		assert_int_equal(tu_put_str(db, "t", "d", "f:q", "x"), 0);
		assert_int_equal(mrtx_begin(db, &txn), 0);
		assert_int_equal(mrtx_delete(txn, "t", MRTX_BYTES("d", 1), "f", MRTX_BYTES("q", 1)),
		                 0);
		assert_int_equal(mrtx_commit(txn), 0);
		assert_int_equal(restore(db, "d", v, 1), MRTX_EEXIST);
		assert_int_equal(tu_get_str(db, "t", "d", "f:q", b, sizeof(b)), MRTX_NOTFOUND);
	}
	/* four versions into a family that keeps three: the newest three */
	assert_int_equal(restore(db, "x", v, 4), 0);
	assert_int_equal(mrtx_commit(other), MRTX_CONFLICT);
	assert_int_equal(mrtx_begin(db, &txn), 0);
	assert_int_equal(mrtx_get_versions(txn, "t", MRTX_BYTES("x", 1), "f", MRTX_BYTES("q", 1),
	                                   got, 8, &n), 0);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(got[i].ts, v[i].ts);
		assert_memory_equal(got[i].value.data, v[i].value.data, 1);
	}
	mrtx_abort(txn);
	/* read at a past snapshot: the version of then */
	assert_int_equal(mrtx_begin_at(db, v[1].ts + 1, &txn), 0);
	assert_int_equal(mrtx_get_versions(txn, "t", MRTX_BYTES("x", 1), "f", MRTX_BYTES("q", 1),
	                                   got, 1, &n), 0);
	assert_int_equal(got[0].ts, v[1].ts);
	mrtx_abort(txn);
	/* timestamps above the store's: later commits are stamped above */
	{
		mrtx_version f[1] = { { now + 5000000, MRTX_BYTES("z", 1) } };

		assert_int_equal(restore(db, "w", f, 1), 0);
		assert_int_equal(mrtx_begin(db, &txn), 0);
		assert_int_equal(mrtx_put(txn, "t", MRTX_BYTES("w", 1), "f", MRTX_BYTES("q", 1),
		                          MRTX_BYTES("n", 1)), 0);
		assert_int_equal(mrtx_commit_ts(txn, &ts), 0);
		assert_true(ts > now + 5000000);
	}
	done(db, path);
}

static int nfams(mrtx_db *db, const char *want)
{
	const char *const *f;
	char got[64] = "";
	size_t n;

	if (mrtx_table_families(db, "t", &f, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		strcat(got, i ? " " : "");
		strcat(got, f[i]);
	}
	return strcmp(got, want) == 0;
}

static void test_drop_family(void **state)
{
	mrtx_family_spec got;
	int down[2], up[2];
	mrtx_txn *txn;
	char *path, b[8], c;
	mrtx_db *db;
	pid_t pid;

	(void)state;
	if (tu_rados())
		skip();
	db = fresh(&path, 3);
	assert_int_equal(mrtx_add_family(db, "t", "h"), 0);
	assert_int_equal(alter(db, "h", 4, 0, 0), 0);
	put_n(db, 1, 3);
	assert_int_equal(tu_put_str(db, "t", "r", "g:q", "g1"), 0);
	assert_int_equal(tu_put_str(db, "t", "r", "h:q", "h1"), 0);
	assert_int_equal(tu_put_str(db, "t", "s", "g:z", "g2"), 0);
	assert_int_equal(pipe(down), 0);
	assert_int_equal(pipe(up), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		mrtx_db *cdb = tu_open(path, NULL);

		close(down[1]);
		close(up[0]);
		c = !cdb || tu_get_str(cdb, "t", "r", "g:q", b, sizeof(b)) ? 1 : 0;
		if (write(up[1], &c, 1) != 1 || read(down[0], &c, 1) != 1)
			_exit(31);
		/* g dropped by the parent: gone here too, h kept */
		c = tu_get_str(cdb, "t", "r", "g:q", b, sizeof(b)) != MRTX_ENOFAMILY ? 2 :
		    tu_put_str(cdb, "t", "r", "g:q", "x") != MRTX_ENOFAMILY ? 3 :
		    tu_get_str(cdb, "t", "r", "h:q", b, sizeof(b)) || strcmp(b, "h1") ? 4 :
		    !nfams(cdb, "f h") ? 5 : 0;
		if (write(up[1], &c, 1) != 1)
			_exit(32);
		mrtx_close(cdb);
		_exit(0);
	}
	close(down[0]);
	close(up[1]);
	assert_int_equal(read(up[0], &c, 1), 1);
	assert_int_equal(c, 0);
	/* a transaction that wrote g before the drop */
	assert_int_equal(mrtx_begin(db, &txn), 0);
	assert_int_equal(mrtx_put(txn, "t", MRTX_BYTES("n", 1), "g", MRTX_BYTES("q", 1),
	                          MRTX_BYTES("late", 4)), 0);
	{
		/* and one committing in two phases, through another handle */
		mrtx__knobs k = { 0, 1, 0 };
		mrtx_db *db2 = tu_open_k(path, NULL, &k);
		mrtx_txn *t2;

		assert_non_null(db2);
		assert_int_equal(mrtx_begin(db2, &t2), 0);
		assert_int_equal(mrtx_put(t2, "t", MRTX_BYTES("m", 1), "g", MRTX_BYTES("q", 1),
		                          MRTX_BYTES("late", 4)), 0);
		assert_int_equal(mrtx_put(t2, "t", MRTX_BYTES("m2", 2), "f", MRTX_BYTES("q", 1),
		                          MRTX_BYTES("late", 4)), 0);
		assert_int_equal(mrtx_drop_family(db, "t", "g"), 0);
		assert_int_equal(mrtx_commit(txn), MRTX_CONFLICT);
		assert_int_equal(mrtx_commit(t2), MRTX_CONFLICT);
		assert_non_null(strstr(mrtx_errmsg(), "dropped"));
		assert_int_equal(tu_get_str(db2, "t", "m2", "f:q", b, sizeof(b)), MRTX_NOTFOUND);
		mrtx_close(db2);
	}
	assert_int_equal(write(down[1], "1", 1), 1);
	assert_int_equal(read(up[0], &c, 1), 1);
	assert_int_equal(c, 0);
	assert_int_equal(tu_wait(pid), 0);
	/* here: the name gone, the other families and their policies kept */
	assert_true(nfams(db, "f h"));
	assert_int_equal(tu_get_str(db, "t", "r", "g:q", b, sizeof(b)), MRTX_ENOFAMILY);
	assert_int_equal(tu_get_str(db, "t", "n", "h:q", b, sizeof(b)), MRTX_NOTFOUND);
	assert_int_equal(nversions(db), 3);
	assert_int_equal(admin_family_policy(db, "t", 1, &got), 0);
	assert_string_equal(got.name, "h");
	assert_int_equal(got.max_versions, 4);
	/* a scan of the whole table meets no cell of g */
	{
		mrtx_scan_spec spec;
		mrtx_scanner *sc;
		mrtx_cell cell;
		int rc, n = 0;

		memset(&spec, 0, sizeof(spec));
		spec.table = "t";
		assert_int_equal(mrtx_begin(db, &txn), 0);
		assert_int_equal(mrtx_scan_open(txn, &spec, &sc), 0);
		while ((rc = mrtx_scan_next(sc, &cell)) == 0) {
			assert_string_not_equal(cell.family, "g");
			n++;
		}
		assert_int_equal(rc, MRTX_NOTFOUND);
		assert_int_equal(n, 2); /* r f:q, r h:q */
		mrtx_scan_close(sc);
		mrtx_abort(txn);
	}
	/* twice, the last family, and the name added again: a new family */
	assert_int_equal(mrtx_drop_family(db, "t", "g"), MRTX_ENOFAMILY);
	assert_int_equal(mrtx_drop_family(db, "t", "h"), 0);
	assert_int_equal(mrtx_drop_family(db, "t", "f"), MRTX_EINVAL);
	assert_non_null(strstr(mrtx_errmsg(), "last"));
	assert_int_equal(mrtx_add_family(db, "t", "g"), 0);
	assert_true(nfams(db, "f g"));
	assert_int_equal(tu_get_str(db, "t", "r", "g:q", b, sizeof(b)), MRTX_NOTFOUND);
	assert_int_equal(tu_put_str(db, "t", "r", "g:q", "new"), 0);
	assert_int_equal(tu_get_str(db, "t", "r", "g:q", b, sizeof(b)), 0);
	assert_string_equal(b, "new");
	assert_int_equal(mrtx_drop_family(db, "t", NULL), MRTX_EINVAL);
	assert_int_equal(mrtx_drop_family(db, "none", "f"), MRTX_ENOTABLE);
	/* the store opens again with its dropped families */
	mrtx_close(db);
	assert_non_null(db = tu_open(path, NULL));
	assert_true(nfams(db, "f g"));
	assert_int_equal(tu_get_str(db, "t", "r", "g:q", b, sizeof(b)), 0);
	assert_int_equal(tu_get_str(db, "t", "r", "h:q", b, sizeof(b)), MRTX_ENOFAMILY);
	done(db, path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rados_enotsup),
		cmocka_unit_test(test_rados_alter),
		cmocka_unit_test(test_shrink_grow),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_other_process),
		cmocka_unit_test(test_restore),
		cmocka_unit_test(test_drop_family),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
