/*
 * test_txn_input.c - bad input to the public API: names, key limits, NULL
 * handles, tables, options, opening what is not a store, and a corrupt
 * lock record.
 */
#include "txn_fixture.h"

/* ------------------------------------------------------------ bad input */

static void test_bad_names(void **state)
{
	fx *f = *state;
	mrtx_txn *txn;
	mrtx_bytes v;
	mrtx_scanner *s = NULL;
	mrtx_scan_spec sp;

	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	assert_int_equal(mrtx_get(txn, "nosuch", B("r"), "f", B(""), &v), MRTX_ENOTABLE);
	assert_non_null(strstr(mrtx_errmsg(), "nosuch"));
	assert_int_equal(mrtx_put(txn, "nosuch", B("r"), "f", B(""), B("v")), MRTX_ENOTABLE);
	assert_non_null(strstr(mrtx_errmsg(), "nosuch"));
	assert_int_equal(mrtx_delete(txn, "nosuch", B("r"), "f", B("")), MRTX_ENOTABLE);
	assert_int_equal(mrtx_delete_row(txn, "nosuch", B("r")), MRTX_ENOTABLE);
	assert_int_equal(mrtx_get(txn, "t2", B("r"), "g", B(""), &v), MRTX_ENOFAMILY);
	assert_non_null(strstr(mrtx_errmsg(), "t2"));
	assert_non_null(strstr(mrtx_errmsg(), "'g'"));
	assert_int_equal(mrtx_put(txn, "t1", B("r"), "nofam", B(""), B("v")), MRTX_ENOFAMILY);
	assert_non_null(strstr(mrtx_errmsg(), "t1"));
	assert_non_null(strstr(mrtx_errmsg(), "nofam"));
	assert_int_equal(mrtx_delete(txn, "t1", B("r"), "nofam", B("")), MRTX_ENOFAMILY);
	memset(&sp, 0, sizeof(sp));
	sp.table = "nosuch";
	assert_int_equal(mrtx_scan_open(txn, &sp, &s), MRTX_ENOTABLE);
	sp.table = "t1";
	sp.family = "nofam";
	assert_int_equal(mrtx_scan_open(txn, &sp, &s), MRTX_ENOFAMILY);
	sp.family = NULL;
	sp.qual_start = B("a");
	assert_int_equal(mrtx_scan_open(txn, &sp, &s), MRTX_EINVAL);
	assert_null(s);
	/* the failed calls did not doom the txn */
	assert_int_equal(mrtx_put(txn, "t1", B("ok"), "f", B(""), B("v")), MRTX_OK);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	expect_cell(f->db, "t1", "ok", "f", "", "v");
	/* error messages are never empty */
	assert_true(strlen(mrtx_strerror(MRTX_ENOTABLE)) > 0);
	assert_true(strlen(mrtx_strerror(12345)) > 0);
}

static void test_key_limits(void **state)
{
	fx *f = *state;
	static uint8_t row[MRTX_MAX_ROW + 2];
	static uint8_t qual[MRTX_MAX_KEY + 2];
	mrtx_txn *txn;
	mrtx_bytes v;

	memset(row, 'r', sizeof(row));
	memset(qual, 'q', sizeof(qual));
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	/* a row of exactly MRTX_MAX_ROW bytes with an empty qualifier fits */
	assert_int_equal(mrtx_put(txn, "t1", MRTX_BYTES(row, MRTX_MAX_ROW), "f", B(""), B("max")),
	                 MRTX_OK);
	/* one more byte does not */
	assert_int_equal(mrtx_put(txn, "t1", MRTX_BYTES(row, MRTX_MAX_ROW + 1), "f", B(""),
	                          B("x")), MRTX_ETOOBIG);
	assert_non_null(strstr(mrtx_errmsg(), "t1"));
	assert_int_equal(mrtx_get(txn, "t1", MRTX_BYTES(row, MRTX_MAX_ROW + 1), "f", B(""), &v),
	                 MRTX_ETOOBIG);
	assert_int_equal(mrtx_delete_row(txn, "t1", MRTX_BYTES(row, MRTX_MAX_ROW + 1)),
	                 MRTX_ETOOBIG);
	/* a max row plus a 1-byte qualifier does not fit either */
	assert_int_equal(mrtx_put(txn, "t1", MRTX_BYTES(row, MRTX_MAX_ROW), "f", B("q"), B("x")),
	                 MRTX_ETOOBIG);
	/* NUL bytes count double: a max-size row holding one NUL is over */
	row[7] = 0;
	assert_int_equal(mrtx_put(txn, "t1", MRTX_BYTES(row, MRTX_MAX_ROW), "f", B(""), B("x")),
	                 MRTX_ETOOBIG);
	assert_int_equal(mrtx_put(txn, "t1", MRTX_BYTES(row, MRTX_MAX_ROW - 1), "f", B(""),
	                          B("nul")), MRTX_OK);
	row[7] = 'r';
	/* the qualifier budget: 1-byte row + 16 + qual <= MRTX_MAX_KEY */
	assert_int_equal(mrtx_put(txn, "t1", B("k"), "f", MRTX_BYTES(qual, MRTX_MAX_KEY - 17),
	                          B("q")), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t1", B("k"), "f", MRTX_BYTES(qual, MRTX_MAX_KEY - 16),
	                          B("x")), MRTX_ETOOBIG);
	/* a size that would wrap the key-size sum is refused before any copy */
	assert_int_equal(mrtx_get(txn, "t1", B("k"), "f", MRTX_BYTES(qual, SIZE_MAX - 2), &v),
	                 MRTX_ETOOBIG);
	assert_int_equal(mrtx_put(txn, "t1", B("k"), "f", MRTX_BYTES(qual, SIZE_MAX - 2), B("x")),
	                 MRTX_ETOOBIG);
	/* empty row */
	assert_int_equal(mrtx_put(txn, "t1", B(""), "f", B(""), B("x")), MRTX_EINVAL);
	assert_int_equal(mrtx_get(txn, "t1", B(""), "f", B(""), &v), MRTX_EINVAL);
	assert_int_equal(mrtx_delete_row(txn, "t1", B("")), MRTX_EINVAL);
	assert_int_equal(mrtx_delete(txn, "t1", B(""), "f", B("")), MRTX_EINVAL);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);

	expect_cell(f->db, "t1", "k", "f", "", NULL);
	{
		int rc;

		assert_true(tu_cell_is(f->db, "t1", MRTX_BYTES(row, MRTX_MAX_ROW), "f", B(""),
		                       B("max"), &rc));
		row[7] = 0;
		assert_true(tu_cell_is(f->db, "t1", MRTX_BYTES(row, MRTX_MAX_ROW - 1), "f", B(""),
		                       B("nul"), &rc));
		assert_true(tu_cell_is(f->db, "t1", B("k"), "f",
		                       MRTX_BYTES(qual, MRTX_MAX_KEY - 17), B("q"), &rc));
	}
}

static void test_null_handles(void **state)
{
	fx *f = *state;
	mrtx_txn *txn = NULL;
	mrtx_scanner *s = NULL;
	mrtx_scan_spec sp;
	mrtx_cell c;
	mrtx_bytes v;
	mrtx_db *db = NULL;

	assert_int_equal(mrtx_open(NULL, f->path, NULL), MRTX_EINVAL);
	assert_int_equal(mrtx_open(&db, NULL, NULL), MRTX_EINVAL);
	assert_int_equal(mrtx_begin(NULL, &txn), MRTX_EINVAL);
	assert_int_equal(mrtx_begin(f->db, NULL), MRTX_EINVAL);
	assert_int_equal(mrtx_create_table(NULL, "x", (const char *const[]){ "f" }, 1),
	                 MRTX_EINVAL);
	assert_int_equal(mrtx_get(NULL, "t1", B("r"), "f", B(""), &v), MRTX_EINVAL);
	assert_int_equal(mrtx_put(NULL, "t1", B("r"), "f", B(""), B("v")), MRTX_EINVAL);
	assert_int_equal(mrtx_delete(NULL, "t1", B("r"), "f", B("")), MRTX_EINVAL);
	assert_int_equal(mrtx_delete_row(NULL, "t1", B("r")), MRTX_EINVAL);
	assert_int_equal(mrtx_commit(NULL), MRTX_EINVAL);
	memset(&sp, 0, sizeof(sp));
	sp.table = "t1";
	assert_int_equal(mrtx_scan_open(NULL, &sp, &s), MRTX_EINVAL);
	assert_int_equal(mrtx_scan_next(NULL, &c), MRTX_EINVAL);
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	assert_int_equal(mrtx_get(txn, NULL, B("r"), "f", B(""), &v), MRTX_EINVAL);
	assert_int_equal(mrtx_get(txn, "t1", B("r"), NULL, B(""), &v), MRTX_EINVAL);
	assert_int_equal(mrtx_get(txn, "t1", B("r"), "f", B(""), NULL), MRTX_EINVAL);
	assert_int_equal(mrtx_get(txn, "t1", MRTX_BYTES(NULL, 3), "f", B(""), &v), MRTX_EINVAL);
	assert_int_equal(mrtx_put(txn, NULL, B("r"), "f", B(""), B("v")), MRTX_EINVAL);
	assert_int_equal(mrtx_put(txn, "t1", B("r"), NULL, B(""), B("v")), MRTX_EINVAL);
	assert_int_equal(mrtx_put(txn, "t1", B("r"), "f", MRTX_BYTES(NULL, 2), B("v")),
	                 MRTX_EINVAL);
	assert_int_equal(mrtx_put(txn, "t1", B("r"), "f", B(""), MRTX_BYTES(NULL, 2)),
	                 MRTX_EINVAL);
	assert_int_equal(mrtx_delete_row(txn, NULL, B("r")), MRTX_EINVAL);
	assert_int_equal(mrtx_scan_open(txn, NULL, &s), MRTX_EINVAL);
	assert_int_equal(mrtx_scan_open(txn, &sp, NULL), MRTX_EINVAL);
	sp.table = NULL;
	assert_int_equal(mrtx_scan_open(txn, &sp, &s), MRTX_EINVAL);
	sp.table = "t1";
	assert_int_equal(mrtx_scan_open(txn, &sp, &s), MRTX_OK);
	assert_int_equal(mrtx_scan_next(s, NULL), MRTX_EINVAL);
	mrtx_scan_close(s);
	/* empty value with NULL data is a valid empty value */
	assert_int_equal(mrtx_put(txn, "t1", B("ev"), "f", B(""), MRTX_BYTES(NULL, 0)), MRTX_OK);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	assert_true(tu_cell_is(f->db, "t1", B("ev"), "f", B(""), MRTX_BYTES("", 0), NULL));
	/* the no-ops */
	mrtx_abort(NULL);
	mrtx_close(NULL);
	mrtx_scan_close(NULL);
	assert_non_null(mrtx_errmsg());
}

/* Names are found through a hash of the store's tables: all of them, the
 * limit, unknown names, in this handle and after a real reopen. */
static void test_many_tables(void **state)
{
	fx *f = *state;
	const char *const fams[] = { "f" };
	char name[32];
	mrtx_txn *txn;
	mrtx_bytes v;

	/* t1 and t2 exist: MRTX_MAX_TABLES - 2 more reach the limit */
	for (unsigned i = 0; i < MRTX_MAX_TABLES - 2; i++) {
		snprintf(name, sizeof(name), "m%u", i);
		assert_int_equal(mrtx_create_table(f->db, name, fams, 1), MRTX_OK);
	}
	assert_int_equal(mrtx_create_table(f->db, "one-too-many", fams, 1), MRTX_ETOOBIG);
	for (int pass = 0; pass < 2; pass++) {
		assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
		for (unsigned i = 0; i < MRTX_MAX_TABLES - 2; i++) {
			snprintf(name, sizeof(name), "m%u", i);
			if (pass == 0)
				assert_int_equal(mrtx_put(txn, name, B("r"), "f", B("q"), B(name)),
				                 MRTX_OK);
			else if (!get_eq(txn, name, "r", "f", "q", name))
				fail_msg("table %s: not found by name after reopening", name);
		}
		assert_int_equal(mrtx_get(txn, "m", B("r"), "f", B("q"), &v), MRTX_ENOTABLE);
		assert_int_equal(mrtx_get(txn, "m4980", B("r"), "f", B("q"), &v), MRTX_ENOTABLE);
		assert_int_equal(mrtx_get(txn, "one-too-many", B("r"), "f", B("q"), &v),
		                 MRTX_ENOTABLE);
		assert_int_equal(mrtx_commit(txn), MRTX_OK);
		if (pass == 0) {
			mrtx_close(f->db);
			assert_non_null(f->db = tu_open(f->path, NULL));
		}
	}
}

typedef struct {
	size_t n;
} seen_tables;

static int count_table(const char *table, void *payload)
{
	(void)table;
	((seen_tables *)payload)->n++;
	return 0;
}

static void test_create_table(void **state)
{
	fx *f = *state;
	const char *const fams[] = { "f", "g" };
	const char *const other[] = { "g", "f" };
	const char *const dup[] = { "f", "f" };
	const char *const bad[] = { "a b" };
	const char *const *got;
	size_t n;

	assert_int_equal(mrtx_create_table(f->db, "t1", fams, 2), MRTX_OK);
	assert_int_equal(mrtx_create_table(f->db, "t1", fams, 2), MRTX_OK);
	assert_int_equal(mrtx_create_table(f->db, "t1", other, 2), MRTX_EEXIST);
	assert_non_null(strstr(mrtx_errmsg(), "t1"));
	assert_int_equal(mrtx_create_table(f->db, "t1", fams, 1), MRTX_EEXIST);
	assert_int_equal(mrtx_create_table(f->db, "t3", dup, 2), MRTX_EINVAL);
	assert_int_equal(mrtx_create_table(f->db, "t3", bad, 1), MRTX_EINVAL);
	assert_int_equal(mrtx_create_table(f->db, "t3", fams, 0), MRTX_EINVAL);
	assert_int_equal(mrtx_create_table(f->db, "", fams, 1), MRTX_EINVAL);
	assert_int_equal(mrtx_create_table(f->db, "a/b", fams, 1), MRTX_EINVAL);
	/* a NULL or over-long name is refused before anything is built from
	 * it, by every creating call (a name of 200,000 bytes once overran a
	 * key buffer on LMDB) */
	{
		const mrtx_family_spec spec[] = { { "f", 2, 0, 0 } };
		size_t sizes[] = { MRTX_MAX_NAME + 1, 399, 200000 };
		seen_tables seen = { 0 };

		assert_int_equal(mrtx_create_table(f->db, NULL, fams, 1), MRTX_EINVAL);
		assert_int_equal(mrtx_create_table2(f->db, NULL, spec, 1), MRTX_EINVAL);
		assert_int_equal(mrtx_create_table_split(f->db, NULL, fams, 1, NULL, 0),
		                 MRTX_EINVAL);
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			char *name = malloc(sizes[i] + 1);

			assert_non_null(name);
			memset(name, 'n', sizes[i]);
			name[sizes[i]] = '\0';
			assert_int_equal(mrtx_create_table(f->db, name, fams, 1), MRTX_ETOOBIG);
			assert_int_equal(mrtx_create_table2(f->db, name, spec, 1), MRTX_ETOOBIG);
			assert_int_equal(mrtx_create_table_split(f->db, name, fams, 1, NULL, 0),
			                 MRTX_ETOOBIG);
			assert_non_null(strstr(mrtx_errmsg(), "limit"));
			free(name);
		}
		assert_int_equal(mrtx_tables(f->db, count_table, &seen), MRTX_OK);
		assert_int_equal(seen.n, 2); /* the fixture's t1 and t2 alone */
	}
	assert_int_equal(mrtx_table_families(f->db, "t1", &got, &n), MRTX_OK);
	assert_int_equal(n, 2);
	assert_string_equal(got[0], "f");
	assert_string_equal(got[1], "g");
	assert_int_equal(mrtx_table_families(f->db, "t3", &got, &n), MRTX_ENOTABLE);

	/* a table survives reopening, and reopening shares the environment */
	{
		mrtx_db *db2 = tu_open(f->path, NULL);

		assert_non_null(db2);
		assert_int_equal(mrtx_create_table(db2, "t1", fams, 2), MRTX_OK);
		assert_int_equal(tu_put_str(db2, "t1", "via2", "g:", "x"), MRTX_OK);
		mrtx_close(db2);
		expect_cell(f->db, "t1", "via2", "g", "", "x");
	}
}

static void test_open_not_a_store(void **state)
{
	if (tu_rados())
		skip(); /* about LMDB files */
	char *dir = tu_tmpdir("notstore"), file[512];
	mrtx_db *db = NULL;
	int fd;

	(void)state;
	assert_non_null(dir);
	snprintf(file, sizeof(file), "%s/plain", dir);
	fd = open(file, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hello", 5), 5);
	close(fd);
	assert_int_equal(mrtx_open(&db, file, NULL), MRTX_ENOTSTORE);
	assert_null(db);
	assert_true(strlen(mrtx_errmsg()) > 0);
	tu_rmrf(dir);
	free(dir);
}

static void test_open_foreign_lmdb(void **state)
{
	if (tu_rados())
		skip(); /* about LMDB files */
	char *dir = tu_tmpdir("foreign");
	MDB_env *env;
	MDB_txn *t;
	MDB_dbi dbi;
	MDB_val k = { 7, "foreign" }, v = { 5, "value" };
	mrtx_db *db = NULL;

	(void)state;
	assert_non_null(dir);
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_open(env, dir, 0, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &t), 0);
	assert_int_equal(mdb_dbi_open(t, NULL, 0, &dbi), 0);
	assert_int_equal(mdb_put(t, dbi, &k, &v, 0), 0);
	assert_int_equal(mdb_txn_commit(t), 0);
	mdb_env_close(env);

	assert_int_equal(mrtx_open(&db, dir, NULL), MRTX_ENOTSTORE);
	assert_null(db);
	assert_non_null(strstr(mrtx_errmsg(), dir));

	/* untouched */
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_open(env, dir, MDB_RDONLY, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &t), 0);
	assert_int_equal(mdb_dbi_open(t, NULL, 0, &dbi), 0);
	assert_int_equal(mdb_get(t, dbi, &k, &v), 0);
	assert_int_equal(v.mv_size, 5);
	assert_memory_equal(v.mv_data, "value", 5);
	{
		MDB_stat ms;

		assert_int_equal(mdb_stat(t, dbi, &ms), 0);
		assert_int_equal(ms.ms_entries, 1);
	}
	mdb_txn_abort(t);
	mdb_env_close(env);
	tu_rmrf(dir);
	free(dir);
}

/* Both opens must fail with MRTX_ESTORE: a store to be created in a
 * directory we cannot write, and an existing store whose files we cannot
 * open.  Returns 0, or which check failed. */
static int unwritable_checks(const char *dir)
{
	char sub[512];
	mrtx_db *db = NULL;

	snprintf(sub, sizeof(sub), "%s/new", dir);
	if (mrtx_open(&db, sub, NULL) != MRTX_ESTORE || db)
		return 1;
	snprintf(sub, sizeof(sub), "%s/existing", dir);
	if (mrtx_open(&db, sub, NULL) != MRTX_ESTORE || db)
		return 2;
	if (!strlen(mrtx_errmsg()))
		return 3;
	return 0;
}

static void test_open_unwritable(void **state)
{
	if (tu_rados())
		skip(); /* about LMDB files */
	char *dir = tu_tmpdir("unwritable"), sub[512];
	mrtx_db *db;

	(void)state;
	assert_non_null(dir);
	snprintf(sub, sizeof(sub), "%s/existing", dir);
	assert_non_null(db = tu_open(sub, NULL));
	mrtx_close(db);
	assert_int_equal(chmod(dir, 0555), 0);
	if (geteuid() != 0) {
		assert_int_equal(unwritable_checks(dir), 0);
	} else {
		/* root ignores permissions: check as an unprivileged user */
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			if (setgid(65534) || setuid(65534))
				_exit(20);
			_exit(unwritable_checks(dir));
		}
		assert_int_equal(tu_wait(pid), 0);
	}
	chmod(dir, 0700);
	tu_rmrf(dir);
	free(dir);
}

static void test_bad_options(void **state)
{
	fx *f = *state;
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db = NULL;

	o.version = 99;
	assert_int_equal(mrtx_open(&db, f->path, &o), MRTX_EINVAL);
	o.version = MRTX_OPTIONS_VERSION;
	o.durability = 7;
	assert_int_equal(mrtx_open(&db, f->path, &o), MRTX_EINVAL);
	assert_null(db);
}

/* Write raw bytes as a row's lock record -- key P . enc(row) . 0xFF, with
 * P the table's prefix from its record 0x00 "t/<table>" (storage/lmdb/lmdb_read.c,
 * lmdb_meta.c) -- while mrtx is closed. */
static void raw_lock_put(const char *path, const char *table, mrtx_bytes row,
                         const void *bytes, size_t n)
{
	uint8_t key[MRTX_MAX_KEY + 1];
	size_t kl;
	char name[128];
	MDB_env *env;
	MDB_txn *t;
	MDB_dbi dbi;
	MDB_val k, v = { n, (void *)(uintptr_t)bytes }, rec;

	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_mapsize(env, (size_t)1 << 30), 0);
	assert_int_equal(mdb_env_open(env, path, 0, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &t), 0);
	assert_int_equal(mdb_dbi_open(t, NULL, 0, &dbi), 0);
	k.mv_size = (size_t)snprintf(name, sizeof(name), "%ct/%s", 0, table);
	k.mv_data = name;
	assert_int_equal(mdb_get(t, dbi, &k, &rec), 0);
	assert_true(rec.mv_size > 2);
	memcpy(key, rec.mv_data, 2);
	kl = 2 + keyenc_put(key + 2, row.data, row.size);
	key[kl++] = 0xFF;
	k = (MDB_val){ kl, key };
	assert_int_equal(lmdb_put(t, dbi, &k, &v, 0), 0);
	assert_int_equal(mdb_txn_commit(t), 0);
	mdb_env_close(env);
}

static void test_corrupt_lock(void **state)
{
	if (tu_rados())
		skip(); /* about LMDB files */
	fx *f = *state;
	static const uint8_t garbage[][12] = {
		{ 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8 },
		{ 1 },
		{ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 },
		{ 0 },
	};
	mrtx_txn *txn;
	mrtx_bytes v;

	assert_int_equal(tu_put_str(f->db, "t1", "good", "f:", "fine"), MRTX_OK);
	for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
		char row[16];

		snprintf(row, sizeof(row), "bad%zu", i);
		assert_int_equal(tu_put_str(f->db, "t1", row, "f:", "v"), MRTX_OK);
	}
	mrtx_close(f->db);
	f->db = NULL;
	for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
		char row[16];

		snprintf(row, sizeof(row), "bad%zu", i);
		raw_lock_put(f->path, "t1", B(row), garbage[i], i == 1 || i == 3 ? 1 : 12);
	}
	raw_lock_put(f->path, "t1", B("nodata"), garbage[0], 12);
	assert_non_null(f->db = tu_open(f->path, NULL));

	for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
		char row[16];

		snprintf(row, sizeof(row), "bad%zu", i);
		assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
		assert_int_equal(mrtx_get(txn, "t1", B(row), "f", B(""), &v), MRTX_ECORRUPT);
		assert_non_null(strstr(mrtx_errmsg(), "t1"));
		mrtx_abort(txn);
		/* a write to the row reports it as well, and writes nothing */
		assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
		assert_int_equal(mrtx_put(txn, "t1", B(row), "f", B(""), B("new")), MRTX_OK);
		assert_int_equal(mrtx_put(txn, "t1", B("other"), "f", B(""), B("new")), MRTX_OK);
		assert_int_equal(mrtx_commit(txn), MRTX_ECORRUPT);
		expect_cell(f->db, "t1", "other", "f", "", NULL);
	}
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	assert_int_equal(mrtx_get(txn, "t1", B("nodata"), "f", B(""), &v), MRTX_ECORRUPT);
	/* other rows still work */
	assert_int_equal(mrtx_get(txn, "t1", B("good"), "f", B(""), &v), MRTX_OK);
	mrtx_abort(txn);
	/* a scan over the bad rows reports it too */
	assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
	assert_int_equal(tu_scan_all(txn, "t1"), MRTX_ECORRUPT);
	mrtx_abort(txn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bad_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_null_handles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_tables, setup, teardown),
		cmocka_unit_test(test_open_not_a_store),
		cmocka_unit_test(test_open_foreign_lmdb),
		cmocka_unit_test(test_open_unwritable),
		cmocka_unit_test_setup_teardown(test_bad_options, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_lock, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
