/*
 * test_safety.c - safe defaults and hostile environments:
 *   - a full store (small LMDB map): clean MRTX_EFULL that says how to grow,
 *     nothing committed lost, work continues after reopening with a larger
 *     map_size (and the map never shrinks);
 *   - created files are 0600 by default, file_mode is honoured;
 *   - mrtx_open refuses what is not an mrtx store (a regular file, another
 *     LMDB database, a newer format, a garbage data file) and touches nothing;
 *   - lock records are bound to their store (store id tag);
 *   - reader slots of killed processes are cleared at open, so the file
 *     stays bounded across kill cycles.
 *
 * Raw LMDB is used to forge hostile files; LMDB forbids one environment
 * open twice in a process, so the store is always closed first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pthread.h>

#include <lmdb.h>

#include "testutil.h"
#include "storage/lmdb/lmdb_int.h"
#include "storage/lmdb/lmdb_seal.h"
#include "txn/admin.h"
#include "txn/admin_test.h"

static const char *const FAMS[] = { "f" };

static mrtx_db *open_opts(const char *path, size_t map_size, unsigned mode, int *rc_out)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db = NULL;
	int rc;

	o.durability = MRTX_NOSYNC;
	o.map_size = map_size;
	o.file_mode = mode;
	rc = mrtx_open(&db, path, &o);
	if (rc_out)
		*rc_out = rc;
	else if (rc != MRTX_OK)
		fail_msg("mrtx_open(%s): %s", path, mrtx_errmsg());
	return db;
}

static void join(char *out, size_t n, const char *dir, const char *file)
{
	int k = snprintf(out, n, "%s/%s", dir, file);

	assert_true(k > 0 && (size_t)k < n);
}

/* ------------------------------------------------------------ raw LMDB */

static MDB_env *raw_open(const char *path, unsigned flags)
{
	MDB_env *env;

	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 1002), 0);
	assert_int_equal(mdb_env_open(env, path, flags | MDB_NOTLS, 0600), 0);
	return env;
}

static void raw_put(const char *path, const char *dbname, const void *k, size_t kn,
                    const void *v, size_t vn)
{
	MDB_env *env = raw_open(path, 0);
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val key = { kn, (void *)(uintptr_t)k }, val = { vn, (void *)(uintptr_t)v };

	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, dbname, MDB_CREATE, &dbi), 0);
	assert_int_equal(mdb_put(txn, dbi, &key, &val, 0), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

/* ---------------------------------------------------------- full disk */

#define VAL 1000

static int commit_pair(mrtx_db *db, int i, char fill)
{
	char val[VAL], r[32];
	mrtx_txn *txn;
	int rc;

	memset(val, fill, sizeof(val));
	if ((rc = mrtx_begin(db, &txn)))
		return rc;
	for (int k = 0; k < 2; k++) {
		snprintf(r, sizeof(r), "k%05d-%d", i, k);
		if ((rc = mrtx_put(txn, "t", MRTX_CSTR(r), "f", MRTX_CSTR("v"),
		                   MRTX_BYTES(val, sizeof(val))))) {
			mrtx_abort(txn);
			return rc;
		}
	}
	return mrtx_commit(txn);
}

/*
 * Both rows of pair i hold fill.  allow_full: a row whose transaction
 * committed but was not rolled forward before the map filled needs a write
 * to be read (recovery), so on a full store it may read as MRTX_EFULL -
 * never as a wrong value or as missing.  Returns the number of such rows.
 */
static int check_pair_ex(mrtx_db *db, int i, char fill, int allow_full)
{
	char r[32];
	mrtx_txn *txn;
	mrtx_bytes v;
	int full = 0;

	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	for (int k = 0; k < 2; k++) {
		int rc;

		snprintf(r, sizeof(r), "k%05d-%d", i, k);
		rc = mrtx_get(txn, "t", MRTX_CSTR(r), "f", MRTX_CSTR("v"), &v);
		if (rc == MRTX_EFULL && allow_full) {
			full++;
			continue;
		}
		if (rc != MRTX_OK)
			fail_msg("committed row %s: %s (%s)", r, mrtx_strerror(rc), mrtx_errmsg());
		assert_int_equal(v.size, VAL);
		assert_int_equal(((const char *)v.data)[VAL - 1], fill);
	}
	mrtx_abort(txn);
	return full;
}

static void check_pair(mrtx_db *db, int i, char fill)
{
	check_pair_ex(db, i, fill, 0);
}

static void full_store(void **state)
{
	enum { MAXI = 4000 };
	static unsigned char committed[MAXI];
	int i, first_full = -1, nok = 0;
	recover_opts ro = { 0, 1, 0 };
	recover_stats stats;
	store_info info;
	char *path = tu_tmpdir("full");
	mrtx_db *db;

	(void)state;
	assert_non_null(path);
	db = open_opts(path, 1u << 20, 0, NULL);
	assert_int_equal(store_get_info(mrtx__db_store(db), &info), MRTX_OK);
	assert_int_equal(info.map_size, 1u << 20);
	assert_int_equal(mrtx_create_table(db, "t", FAMS, 1), MRTX_OK);
	for (i = 0; i < MAXI; i++) {
		int rc = commit_pair(db, i, 'a');

		if (rc == MRTX_OK) {
			committed[i] = 1;
			nok++;
			continue;
		}
		if (rc == MRTX_EUNKNOWN)
			continue; /* the commit point hit the wall: either way is fine */
		if (rc != MRTX_EFULL)
			fail_msg("commit %d: %s (%s), want MRTX_EFULL", i, mrtx_strerror(rc),
			         mrtx_errmsg());
		if (!strstr(mrtx_errmsg(), "full") || !strstr(mrtx_errmsg(), "map_size"))
			fail_msg("EFULL message does not say how to grow: %s", mrtx_errmsg());
		if (first_full < 0)
			first_full = i;
		if (i >= first_full + 5)
			break;
	}
	assert_true(first_full > 0);
	assert_true(nok > 50);
	print_message("# 1 MiB map: %d two-row commits before MRTX_EFULL: %s\n", nok,
	              mrtx_errmsg());
	/* Reads of settled rows still work on a full store. */
	check_pair(db, 0, 'a');
	mrtx_close(db);

	/* Same small map: everything committed is there (or needs room to be
	 * rolled forward first: MRTX_EFULL, never a wrong answer). */
	db = open_opts(path, 1u << 20, 0, NULL);
	{
		int full = 0;

		for (int k = 0; k < i; k++)
			if (committed[k])
				full += check_pair_ex(db, k, 'a', 1);
		print_message("# reopened full: %d committed rows need a roll-forward to read\n",
		              full);
	}
	mrtx_close(db);

	/* Grow the map: recovery cleans up, work continues. */
	db = open_opts(path, 8u << 20, 0, NULL);
	assert_int_equal(store_get_info(mrtx__db_store(db), &info), MRTX_OK);
	assert_int_equal(info.map_size, 8u << 20);
	assert_int_equal(recover_sweep(mrtx__db_store(db), &ro, &stats, NULL, NULL), MRTX_OK);
	assert_int_equal(stats.errors, 0);
	for (int k = 0; k < i; k++)
		if (committed[k])
			check_pair(db, k, 'a');
	for (int k = 0; k < 50; k++) {
		assert_int_equal(commit_pair(db, MAXI + k, 'b'), MRTX_OK);
		check_pair(db, MAXI + k, 'b');
	}
	mrtx_close(db);

	/* A smaller map_size later never shrinks the map. */
	db = open_opts(path, 1u << 20, 0, NULL);
	assert_int_equal(store_get_info(mrtx__db_store(db), &info), MRTX_OK);
	assert_int_equal(info.map_size, 8u << 20);
	check_pair(db, MAXI + 49, 'b');
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* ---------------------------------------------------------- file modes */

static unsigned mode_of(const char *dir, const char *file)
{
	char p[4096];
	struct stat sb;

	join(p, sizeof(p), dir, file);
	assert_int_equal(stat(p, &sb), 0);
	return sb.st_mode & 07777;
}

static void file_modes(void **state)
{
	mode_t old = umask(022);
	char *base = tu_tmpdir("modes"), p[4096];
	mrtx_db *db;

	(void)state;
	assert_non_null(base);
	/* Default: the directory is created 0700, files 0600. */
	join(p, sizeof(p), base, "default");
	db = open_opts(p, 0, 0, NULL);
	mrtx_close(db);
	assert_int_equal(mode_of(base, "default"), 0700);
	assert_int_equal(mode_of(p, "data.mdb"), 0600);
	assert_int_equal(mode_of(p, "lock.mdb"), 0600);
	/* file_mode is honoured (minus the umask, like open(2)). */
	join(p, sizeof(p), base, "shared");
	db = open_opts(p, 0, 0640, NULL);
	mrtx_close(db);
	assert_int_equal(mode_of(p, "data.mdb"), 0640);
	assert_int_equal(mode_of(p, "lock.mdb"), 0640);
	/* Bits outside 0777 are refused. */
	{
		int rc;

		join(p, sizeof(p), base, "bad");
		db = open_opts(p, 0, 04600, &rc);
		assert_int_equal(rc, MRTX_EINVAL);
		assert_null(db);
	}
	umask(old);
	tu_rmrf(base);
	free(base);
}

/* ------------------------------------------------------ not-a-store */

typedef struct snap {
	struct stat sb;
	size_t n;
	unsigned char *bytes;
} snap;

static void snap_take(snap *s, const char *file)
{
	FILE *f = fopen(file, "rb");

	assert_non_null(f);
	assert_int_equal(fstat(fileno(f), &s->sb), 0);
	s->n = (size_t)s->sb.st_size;
	assert_non_null(s->bytes = malloc(s->n ? s->n : 1));
	assert_int_equal(fread(s->bytes, 1, s->n, f), s->n);
	fclose(f);
}

/* The file is byte-for-byte and mtime-for-mtime what it was. */
static void snap_same(snap *s, const char *file)
{
	snap now;

	snap_take(&now, file);
	assert_int_equal(now.n, s->n);
	assert_memory_equal(now.bytes, s->bytes, s->n);
	assert_int_equal(now.sb.st_mtim.tv_sec, s->sb.st_mtim.tv_sec);
	assert_int_equal(now.sb.st_mtim.tv_nsec, s->sb.st_mtim.tv_nsec);
	assert_int_equal(now.sb.st_mode, s->sb.st_mode);
	free(now.bytes);
	free(s->bytes);
}

static void refuse(const char *path, const char *file, const char *what, const char *needle)
{
	snap s;
	mrtx_db *db;
	int rc;

	snap_take(&s, file);
	usleep(20000); /* so a write would show in the mtime */
	db = open_opts(path, 0, 0, &rc);
	if (rc != MRTX_ENOTSTORE)
		fail_msg("%s: mrtx_open returned %s (%s), want MRTX_ENOTSTORE", what,
		         mrtx_strerror(rc), mrtx_errmsg());
	assert_null(db);
	if (!strstr(mrtx_errmsg(), needle))
		fail_msg("%s: message '%s' lacks '%s'", what, mrtx_errmsg(), needle);
	print_message("# %s: %s\n", what, mrtx_errmsg());
	snap_same(&s, file);
	/* Refusing twice is as clean (no half-open environment left behind). */
	db = open_opts(path, 0, 0, &rc);
	assert_int_equal(rc, MRTX_ENOTSTORE);
}

static void not_a_store(void **state)
{
	char *base = tu_tmpdir("notstore"), p[4096], f[4096];
	uint32_t fmt = 9;
	uint8_t fmtrec[64];
	size_t fmtn;
	FILE *fp;
	mrtx_db *db;

	(void)state;
	assert_non_null(base);

	/* A regular file. */
	join(p, sizeof(p), base, "plain");
	assert_non_null(fp = fopen(p, "w"));
	fputs("not a store\n", fp);
	fclose(fp);
	refuse(p, p, "regular file", "not a directory");

	/* Someone else's LMDB database. */
	join(p, sizeof(p), base, "other");
	assert_int_equal(mkdir(p, 0700), 0);
	raw_put(p, NULL, "hello", 5, "world", 5);
	join(f, sizeof(f), p, "data.mdb");
	refuse(p, f, "foreign LMDB", "not an mrtx store");

	/* A directory whose data.mdb is not LMDB at all. */
	join(p, sizeof(p), base, "garbage");
	assert_int_equal(mkdir(p, 0700), 0);
	join(f, sizeof(f), p, "data.mdb");
	assert_non_null(fp = fopen(f, "wb"));
	for (int i = 0; i < 16384; i++)
		fputc((i * 7919) & 0xff, fp);
	fclose(fp);
	refuse(p, f, "garbage data.mdb", "not an mrtx store");

	/* A store of format 2 (one named LMDB database per table). */
	join(p, sizeof(p), base, "format2");
	assert_int_equal(mkdir(p, 0700), 0);
	raw_put(p, "mrtx.meta", "format", 6, "\2\0\0\0", 4);
	join(f, sizeof(f), p, "data.mdb");
	refuse(p, f, "format-2 store", "format 2 or older");

	/* An mrtx store of a newer format.  (Formats 3 to 6 keep the metadata under
	 * key prefix 0x00 of LMDB's unnamed database: storage/lmdb/lmdb_meta.c.) */
	join(p, sizeof(p), base, "newer");
	db = open_opts(p, 0, 0, NULL);
	assert_int_equal(mrtx_create_table(db, "t", FAMS, 1), MRTX_OK);
	assert_int_equal(tu_put_str(db, "t", "r", "f:q", "v"), MRTX_OK);
	mrtx_close(db);
	fmtn = tu_lmdb_get(p, "\0format", 7, fmtrec, sizeof(fmtrec));
	tu_lmdb_put(p, "\0format", 7, &fmt, sizeof(fmt), 1);
	join(f, sizeof(f), p, "data.mdb");
	refuse(p, f, "newer format", "format 9");
	{
		/* the deep check cannot judge its records either: it says so,
		 * not that the store is damaged */
		admin_file_stats fs;

		assert_int_equal(admin_check_file(p, NULL, NULL, NULL, &fs), MRTX_ENOTSTORE);
		assert_non_null(strstr(mrtx_errmsg(), "newer than this mrtx"));
	}
	/* An older one (a bare format record) names the upgrade. */
	fmt = 3;
	raw_put(p, NULL, "\0format", 7, &fmt, sizeof(fmt));
	refuse(p, f, "format 3", "mrtx upgrade");
	fmt = 4; /* (no count of unsettled locks: lmdb_unsettled.c) */
	raw_put(p, NULL, "\0format", 7, &fmt, sizeof(fmt));
	refuse(p, f, "format 4", "mrtx upgrade");
	fmt = 5; /* (no checksums: lmdb_seal.h) */
	raw_put(p, NULL, "\0format", 7, &fmt, sizeof(fmt));
	refuse(p, f, "format 5", "mrtx upgrade");
	fmt = 6; /* (no checksums on the metadata) */
	raw_put(p, NULL, "\0format", 7, &fmt, sizeof(fmt));
	refuse(p, f, "format 6", "mrtx upgrade");
	fmt = 7; /* (no tally of the metadata records: lmdb_mcount.c) */
	tu_lmdb_put(p, "\0format", 7, &fmt, sizeof(fmt), 1);
	refuse(p, f, "format 7", "mrtx upgrade");
	/* Put the format back: the store opens and its data is intact. */
	tu_lmdb_put(p, "\0format", 7, fmtrec, fmtn, 0);
	{
		char buf[8];

		db = open_opts(p, 0, 0, NULL);
		assert_int_equal(tu_get_str(db, "t", "r", "f:q", buf, sizeof(buf)), MRTX_OK);
		assert_string_equal(buf, "v");
		mrtx_close(db);
	}
	tu_rmrf(base);
	free(base);
}

/*
 * Damaged format-3 metadata (storage/lmdb/lmdb_meta.c) is reported, never
 * trusted: two tables claiming one key prefix refuse to open; a malformed
 * next-table record, or one naming a prefix in use, fails table creation; a malformed metadata generation
 * fails writes.  Nothing crashes, and the data already there reads back
 * once the record is repaired.
 */
static void damaged_metadata(void **state)
{
	char *base = tu_tmpdir("damaged"), buf[16];
	uint8_t bad[3] = { 1, 2, 3 }, good_next[2] = { 0x01, 0x01 };
	/* table "t" has prefix 0x0100 and one family "f" */
	static const uint8_t twin[] = { 0x01, 0x00, 1, 1, 'f' };
	mrtx_db *db;
	int rc;

	(void)state;
	assert_non_null(base);
	db = open_opts(base, 0, 0, NULL);
	assert_int_equal(mrtx_create_table(db, "t", FAMS, 1), MRTX_OK);
	assert_int_equal(tu_put_str(db, "t", "r", "f:q", "v"), MRTX_OK);
	mrtx_close(db);

	/* a second table record with t's prefix */
	tu_lmdb_put(base, "\0t/twin", 7, twin, sizeof(twin), 1);
	db = open_opts(base, 0, 0, &rc);
	assert_null(db);
	assert_int_equal(rc, MRTX_ECORRUPT);
	assert_non_null(strstr(mrtx_errmsg(), "share key prefix"));
	tu_lmdb_put(base, "\0t/twin", 7, NULL, 0, 1);

	/* a next-table record of the wrong size */
	tu_lmdb_put(base, "\0next_table", 11, bad, sizeof(bad), 1);
	db = open_opts(base, 0, 0, NULL);
	assert_int_equal(mrtx_create_table(db, "u", FAMS, 1), MRTX_ECORRUPT);
	assert_non_null(strstr(mrtx_errmsg(), "next-table"));
	assert_int_equal(tu_get_str(db, "t", "r", "f:q", buf, sizeof(buf)), MRTX_OK);
	mrtx_close(db);
	/* a next-table record naming t's prefix, which holds data */
	tu_lmdb_put(base, "\0next_table", 11, twin, 2, 1);
	db = open_opts(base, 0, 0, NULL);
	assert_int_equal(mrtx_create_table(db, "u", FAMS, 1), MRTX_ECORRUPT);
	assert_non_null(strstr(mrtx_errmsg(), "next-table"));
	mrtx_close(db);
	tu_lmdb_put(base, "\0next_table", 11, good_next, sizeof(good_next), 1);

	/* a metadata generation of the wrong size */
	tu_lmdb_put(base, "\0gen", 4, bad, sizeof(bad), 1);
	db = open_opts(base, 0, 0, NULL);
	assert_int_equal(tu_put_str(db, "t", "r", "f:q", "w"), MRTX_ECORRUPT);
	assert_non_null(strstr(mrtx_errmsg(), "generation record"));
	assert_int_equal(tu_get_str(db, "t", "r", "f:q", buf, sizeof(buf)), MRTX_OK);
	assert_string_equal(buf, "v");
	mrtx_close(db);
	tu_lmdb_put(base, "\0gen", 4, NULL, 0, 1);
	db = open_opts(base, 0, 0, NULL);
	assert_int_equal(mrtx_create_table(db, "u", FAMS, 1), MRTX_OK);
	assert_int_equal(tu_put_str(db, "t", "r", "f:q", "w"), MRTX_OK);
	mrtx_close(db);
	tu_rmrf(base);
	free(base);
}

/* ------------------------------------------------- store-bound locks */

/* Checks I2 (DESIGN §10). */
static void lock_bound_to_store(void **state)
{
	char *a = tu_tmpdir("boundA"), *b = tu_tmpdir("boundB");
	unsigned char lock[512];
	char buf[16];
	size_t n;
	mrtx_db *db;
	mrtx_txn *txn;
	mrtx_scanner *s;
	mrtx_cell c;
	mrtx_scan_spec spec = { "t", { NULL, 0 }, { NULL, 0 }, NULL, { NULL, 0 },
	                        { NULL, 0 }, 0, 0 };

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	db = open_opts(a, 0, 0, NULL);
	assert_int_equal(mrtx_create_table(db, "t", FAMS, 1), MRTX_OK);
	assert_int_equal(tu_put_str(db, "t", "row", "f:q", "from A"), MRTX_OK);
	mrtx_close(db);
	db = open_opts(b, 0, 0, NULL);
	assert_int_equal(mrtx_create_table(db, "t", FAMS, 1), MRTX_OK);
	assert_int_equal(tu_put_str(db, "t", "row", "f:q", "from B"), MRTX_OK);
	assert_int_equal(tu_put_str(db, "t", "other", "f:q", "fine"), MRTX_OK);
	mrtx_close(db);

	/* Copy A's lock record of "row" over B's. */
	/* the lock record's key: P . enc("row") . 0xFF, P = 0x0100 for each
	 * store's first table (storage/lmdb/lmdb_read.c, lmdb_meta.c) */
	n = tu_lmdb_get(a, "\1\0row\0\1\xff", 8, lock, sizeof(lock));
	raw_put(b, NULL, "\1\0row\0\1\xff", 8, lock, n);

	db = open_opts(b, 0, 0, NULL);
	assert_int_equal(tu_get_str(db, "t", "row", "f:q", buf, sizeof(buf)), MRTX_ECORRUPT);
	assert_non_null(strstr(mrtx_errmsg(), "another store"));
	/* A scan meets it too; other rows are unaffected. */
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	assert_int_equal(mrtx_scan_open(txn, &spec, &s), MRTX_OK);
	{
		int rc;

		while ((rc = mrtx_scan_next(s, &c)) == MRTX_OK)
			;
		assert_int_equal(rc, MRTX_ECORRUPT);
	}
	mrtx_scan_close(s);
	mrtx_abort(txn);
	/* Writing the row is refused as well: nothing is built on a foreign lock. */
	assert_int_equal(tu_put_str(db, "t", "row", "f:q", "x"), MRTX_ECORRUPT);
	assert_int_equal(tu_get_str(db, "t", "other", "f:q", buf, sizeof(buf)), MRTX_OK);
	assert_string_equal(buf, "fine");
	mrtx_close(db);
	tu_rmrf(a);
	tu_rmrf(b);
	free(a);
	free(b);
}

/* ------------------------------------------------------ stale readers */

/* A child that opens the store with raw LMDB, begins a read txn, reports,
 * and waits to be killed. */
static pid_t reader_child(const char *path)
{
	int fd[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		MDB_env *env;
		MDB_txn *txn;

		close(fd[0]);
		if (mdb_env_create(&env) || mdb_env_set_maxdbs(env, 1002) ||
		    mdb_env_open(env, path, MDB_NOTLS | MDB_RDONLY, 0600) ||
		    mdb_txn_begin(env, NULL, MDB_RDONLY, &txn))
			_exit(3);
		if (write(fd[1], "r", 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(fd[1]);
	assert_int_equal(read(fd[0], &c, 1), 1);
	close(fd[0]);
	return pid;
}

static void kill_child(pid_t pid)
{
	int status;

	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
}

/* Rewrite 8 rows of 3000 bytes (overflow pages), 10 times. */
static void churn(mrtx_db *db, int round)
{
	static char val[3000];

	for (int k = 0; k < 10; k++) {
		mrtx_txn *txn;

		memset(val, 'a' + (round + k) % 26, sizeof(val));
		assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
		for (int r = 0; r < 8; r++) {
			char row[8];

			snprintf(row, sizeof(row), "r%d", r);
			assert_int_equal(mrtx_put(txn, "t", MRTX_CSTR(row), "f", MRTX_CSTR("v"),
			                          MRTX_BYTES(val, sizeof(val))), MRTX_OK);
		}
		assert_int_equal(mrtx_commit(txn), MRTX_OK);
	}
}

/*
 * A fresh process opens the store (mrtx_open: mdb_reader_check) and
 * reports how many dead readers' slots were cleared; exit code = that count
 * (capped), 100+ on error.
 */
static int opener_child(const char *path)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		store_info info;
		mrtx_db *db = NULL;
		int rc;

		rc = mrtx_open(&db, path, NULL);
		if (rc || store_get_info(mrtx__db_store(db), &info))
			_exit(100);
		mrtx_close(db);
		_exit(info.stale_readers_cleared > 99 ? 99 : info.stale_readers_cleared);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_true(WEXITSTATUS(status) < 100);
	return WEXITSTATUS(status);
}

static void stale_readers(void **state)
{
	enum { CYCLES = 40 };
	char *path = tu_tmpdir("readers");
	size_t used_early = 0, used_end, used_live;
	store_info info;
	mrtx_db *db;
	pid_t live;

	(void)state;
	assert_non_null(path);
	/* The parent keeps the store open throughout, as a long-lived server
	 * would, so LMDB never resets the lock file: only mdb_reader_check can
	 * free a dead reader's slot. */
	db = open_opts(path, 0, 0, NULL);
	assert_int_equal(mrtx_create_table(db, "t", FAMS, 1), MRTX_OK);
	churn(db, 0);
	for (int i = 0; i < CYCLES; i++) {
		pid_t pid = reader_child(path);
		int cleared;

		assert_int_equal(store_get_info(mrtx__db_store(db), &info), MRTX_OK);
		assert_int_equal(info.num_readers, 1); /* the child, alive */
		assert_int_equal(info.stale_readers_cleared, 0);
		kill_child(pid);
		/* The next process to open the store clears the dead slot. */
		cleared = opener_child(path);
		if (cleared != 1)
			fail_msg("cycle %d: opening cleared %d dead reader slots, want 1", i, cleared);
		assert_int_equal(store_get_info(mrtx__db_store(db), &info), MRTX_OK);
		assert_int_equal(info.num_readers, 0);
		assert_int_equal(info.stale_readers_cleared, 0); /* the opener did it */
		churn(db, i);
		if (i == 4)
			used_early = info.used_bytes;
	}
	assert_int_equal(store_get_info(mrtx__db_store(db), &info), MRTX_OK);
	used_end = info.used_bytes;
	/* store_get_info clears dead slots too (a long-lived process's check). */
	pid_t dead = reader_child(path);
	kill_child(dead);
	assert_int_equal(store_get_info(mrtx__db_store(db), &info), MRTX_OK);
	assert_int_equal(info.stale_readers_cleared, 1);
	/* Control: a reader that stays pins a snapshot and the file does grow. */
	live = reader_child(path);
	for (int i = 0; i < 10; i++)
		churn(db, i + 200);
	assert_int_equal(store_get_info(mrtx__db_store(db), &info), MRTX_OK);
	used_live = info.used_bytes;
	kill_child(live);
	print_message("# used bytes: after 5 kill cycles %zu, after %d: %zu; "
	              "10 churns under one pinned reader: %zu\n", used_early, CYCLES,
	              used_end, used_live);
	if (used_end > used_early + used_early / 2)
		fail_msg("file grows across kill cycles: %zu -> %zu bytes", used_early, used_end);
	assert_true(used_live > used_end + 100000);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* ------------------------------------------------------------ threads */

/*
 * One mrtx_db shared by threads (the header promises thread safety), with
 * each thread also opening and closing its own handle on the same path
 * (the per-process environment registry) and creating a table that the
 * others attach lazily.  Run under TSan in CI; the invariant is a
 * conserved sum.
 */
#define NTHREADS 4
#define NACCT 16
#define ROUNDS 60

typedef struct tctx {
	mrtx_db *db;
	const char *path;
	int id;
	unsigned seed;
	int from, to;
} tctx;

static long parse_bal(mrtx_bytes v)
{
	char buf[24];
	size_t n = v.size < sizeof(buf) - 1 ? v.size : sizeof(buf) - 1;

	memcpy(buf, v.data, n);
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

static int transfer(mrtx_txn *txn, void *payload)
{
	tctx *c = payload;
	char fr[8], to[8], buf[24];
	long a, b;
	mrtx_bytes v;
	int rc;

	snprintf(fr, sizeof(fr), "a%d", c->from);
	snprintf(to, sizeof(to), "a%d", c->to);
	if ((rc = mrtx_get(txn, "bank", MRTX_CSTR(fr), "f", MRTX_CSTR("bal"), &v)))
		return rc;
	a = parse_bal(v);
	if ((rc = mrtx_get(txn, "bank", MRTX_CSTR(to), "f", MRTX_CSTR("bal"), &v)))
		return rc;
	b = parse_bal(v);
	snprintf(buf, sizeof(buf), "%ld", a - 1);
	if ((rc = mrtx_put(txn, "bank", MRTX_CSTR(fr), "f", MRTX_CSTR("bal"),
	                   MRTX_CSTR(buf))))
		return rc;
	snprintf(buf, sizeof(buf), "%ld", b + 1);
	return mrtx_put(txn, "bank", MRTX_CSTR(to), "f", MRTX_CSTR("bal"),
	                MRTX_CSTR(buf));
}

static void *worker(void *arg)
{
	tctx *c = arg;
	char tname[16];
	long failures = 0;

	snprintf(tname, sizeof(tname), "t%d", c->id);
	for (int i = 0; i < ROUNDS; i++) {
		mrtx_db *mine = NULL;
		int rc;

		c->from = (int)(rand_r(&c->seed) % NACCT);
		c->to = (c->from + 1 + (int)(rand_r(&c->seed) % (NACCT - 1))) % NACCT;
		rc = mrtx_run(c->db, transfer, c, 1000);
		failures += rc != MRTX_OK;
		if (i % 25 == 0) {
			store_info info;

			/* A second handle on the same path shares the environment
			 * (with the same options: see shared_open_options). */
			mrtx_options o = MRTX_OPTIONS_INIT;

			o.durability = MRTX_NOSYNC;
			if (mrtx_open(&mine, c->path, &o) != MRTX_OK)
				failures++;
			else if (mrtx_create_table(mine, tname, FAMS, 1) != MRTX_OK ||
			         store_get_info(mrtx__db_store(mine), &info) != MRTX_OK)
				failures++;
			mrtx_close(mine);
		}
	}
	return (void *)failures;
}

static void threads_share_one_store(void **state)
{
	char *path = tu_tmpdir("threads");
	pthread_t th[NTHREADS];
	tctx ctx[NTHREADS];
	mrtx_db *db;
	long total = 0;

	(void)state;
	assert_non_null(path);
	db = open_opts(path, 0, 0, NULL);
	assert_int_equal(mrtx_create_table(db, "bank", FAMS, 1), MRTX_OK);
	for (int i = 0; i < NACCT; i++) {
		char r[8];

		snprintf(r, sizeof(r), "a%d", i);
		assert_int_equal(tu_put_str(db, "bank", r, "f:bal", "100"), MRTX_OK);
	}
	for (int i = 0; i < NTHREADS; i++) {
		ctx[i] = (tctx){ db, path, i, 7u * (unsigned)i + 1u, 0, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, worker, &ctx[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++) {
		void *ret;

		assert_int_equal(pthread_join(th[i], &ret), 0);
		assert_int_equal((long)ret, 0);
	}
	for (int i = 0; i < NACCT; i++) {
		char r[8], buf[24];

		snprintf(r, sizeof(r), "a%d", i);
		assert_int_equal(tu_get_str(db, "bank", r, "f:bal", buf, sizeof(buf)), MRTX_OK);
		total += strtol(buf, NULL, 10);
	}
	assert_int_equal(total, 100 * NACCT);
	for (int i = 0; i < NTHREADS; i++) {
		const char *const *fams;
		size_t nf;
		char t[16];

		snprintf(t, sizeof(t), "t%d", i);
		assert_int_equal(mrtx_table_families(db, t, &fams, &nf), MRTX_OK);
	}
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* Flip one payload byte of the first data record of row (a one-letter
 * row of the store's first table) that is a cell (lock: its lock record),
 * writing it back without its seal matching: damage below LMDB. */
static void raw_flip(const char *path, char row, int lock)
{
	MDB_env *env = raw_open(path, 0);
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_dbi dbi;
	MDB_val k = { 1, "\1" }, v;
	int rc, done = 0;

	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
	assert_int_equal(mdb_cursor_open(txn, dbi, &cur), 0);
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0 && !done;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		const uint8_t *kd = k.mv_data;
		uint8_t key[64], val[256];

		/* P . row . 0x00 0x01 . (0xFF | fid . qualifier) */
		if (k.mv_size < 6 || kd[2] != (uint8_t)row || kd[3] != 0 || kd[4] != 1 ||
		    (kd[5] == 0xFF) != lock || k.mv_size > sizeof(key) || v.mv_size > sizeof(val))
			continue;
		memcpy(key, kd, k.mv_size);
		memcpy(val, v.mv_data, v.mv_size);
		val[lock ? 1 : 9] ^= 0x20; /* (a cell: its value's first byte) */
		k = (MDB_val){ k.mv_size, key };
		v = (MDB_val){ v.mv_size, val };
		assert_int_equal(mdb_cursor_put(cur, &k, &v, MDB_CURRENT), 0);
		done = 1;
	}
	assert_true(done);
	mdb_cursor_close(cur);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

/* Every copy of bytes pat[0..n) in path's data.mdb gets byte `at` set to
 * to: damage where the bytes lie, which LMDB's own writes never make. */
static void file_poke_all(const char *path, const uint8_t *pat, size_t n, size_t at, uint8_t to)
{
	char f[4096];
	FILE *fp;
	uint8_t *d;
	long len;
	size_t hits = 0;

	join(f, sizeof(f), path, "data.mdb");
	assert_non_null(fp = fopen(f, "r+b"));
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	assert_true((len = ftell(fp)) > 0);
	assert_non_null(d = malloc((size_t)len));
	rewind(fp);
	assert_int_equal(fread(d, 1, (size_t)len, fp), (size_t)len);
	for (size_t i = 0; i + n <= (size_t)len; i++)
		if (memcmp(d + i, pat, n) == 0) {
			d[i + at] = to;
			hits++;
		}
	assert_true(hits > 0);
	rewind(fp);
	assert_int_equal(fwrite(d, 1, (size_t)len, fp), (size_t)len);
	assert_int_equal(fclose(fp), 0);
	free(d);
}

/* A fresh LMDB store (the test is skipped on RADOS, which has no file). */
static mrtx_db *fresh_lmdb(const char *tag, char **path)
{
	mrtx_db *db = tu_open_fresh(tag, path, NULL);

	assert_non_null(db);
	if (tu_rados()) {
		mrtx_close(db);
		tu_rmrf(*path);
		free(*path);
		skip();
	}
	return db;
}

/* Where the node of the record whose value holds marker lies in path's
 * data.mdb: *node, the file offset of its header (u16 size low, u16 size
 * high, u16 flags, u16 key size, then the key and the data), and *ksize;
 * *last, the last page written.  Read through raw LMDB from a sound file:
 * a pointer's page number is its page header's first 8 bytes. */
static void node_of(const char *path, const char *marker, long *node, size_t *ksize,
                    size_t *last)
{
	MDB_env *env = raw_open(path, MDB_RDONLY);
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_dbi dbi;
	MDB_val k, v;
	MDB_stat ms;
	MDB_envinfo info;
	int rc, found = 0;

	assert_int_equal(mdb_env_stat(env, &ms), 0);
	assert_int_equal(mdb_env_info(env, &info), 0);
	*last = info.me_last_pgno;
	assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
	assert_int_equal(mdb_cursor_open(txn, dbi, &cur), 0);
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && !found;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		uintptr_t at = (uintptr_t)k.mv_data - 8, page = at & ~((uintptr_t)ms.ms_psize - 1);
		uint64_t pgno;

		if (!memmem(v.mv_data, v.mv_size, marker, strlen(marker)))
			continue;
		memcpy(&pgno, (const void *)page, 8);
		*node = (long)(pgno * ms.ms_psize + (at - page));
		*ksize = k.mv_size;
		found = 1;
	}
	assert_true(found);
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

/* Write n bytes at offset off of path's data.mdb; *was gets what was there. */
static void file_write_at(const char *path, long off, const void *b, size_t n, void *was)
{
	char f[4096];
	int fd;

	join(f, sizeof(f), path, "data.mdb");
	assert_true((fd = open(f, O_RDWR)) >= 0);
	if (was)
		assert_int_equal(pread(fd, was, n, off), (ssize_t)n);
	assert_int_equal(pwrite(fd, b, n, off), (ssize_t)n);
	assert_int_equal(close(fd), 0);
}

/* mrtx_get of row's cell f:q is MRTX_ECORRUPT, its message with words,
 * and row a still reads. */
static void get_corrupt(const char *path, const char *row, const char *words)
{
	mrtx_db *db = open_opts(path, 0, 0, NULL);
	mrtx_txn *txn;
	mrtx_bytes v;
	char buf[16];
	int rc;

	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	rc = mrtx_get(txn, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q"), &v);
	if (rc != MRTX_ECORRUPT || !strstr(mrtx_errmsg(), words))
		fail_msg("row %s, its size damaged: %s: %s", row, mrtx_strerror(rc), mrtx_errmsg());
	mrtx_abort(txn);
	assert_int_equal(tu_get_str(db, "t", "a", "f:q", buf, sizeof(buf)), MRTX_OK);
	assert_string_equal(buf, "va");
	mrtx_close(db);
}

/* A damaged size or overflow page number in a leaf sends a record's bytes
 * past the end of the data file; LMDB hands them back unchecked, and the
 * read of them (the seal's CRC) faulted.  Each is MRTX_ECORRUPT, and the
 * store reads whole once the bytes are back.
 * Checks I20 (DESIGN §10) and I27. */
static void damaged_sizes(void **state)
{
	static const char PAST[] = "runs past its page or past the end of the data file";
	static char big[3000];
	char *path, buf[32];
	size_t ksize, last;
	long node;
	uint8_t was[8], hi[2] = { 0, 1 }; /* the size's high half: +16 MiB */
	uint64_t far;
	mrtx_db *db;
	mrtx_bytes v;
	mrtx_txn *txn;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	memcpy(big, "SPAN-BIG-MARKER", 15);
	db = fresh_lmdb("sizes", &path);
	if (!lmdb_span_found()) { /* (a map this file system does not show) */
		mrtx_close(db);
		tu_rmrf(path);
		free(path);
		skip();
	}
	assert_int_equal(mrtx_create_table(db, "t", FAMS, 1), MRTX_OK);
	assert_int_equal(tu_put_str(db, "t", "a", "f:q", "va"), MRTX_OK);
	assert_int_equal(tu_put_str(db, "t", "b", "f:q", "SPAN-SMALL-MARKER"), MRTX_OK);
	assert_int_equal(tu_put_str(db, "t", "c", "f:q", big), MRTX_OK);
	mrtx_close(db);

	/* a value in its leaf, its size 16 MiB more */
	node_of(path, "SPAN-SMALL-MARKER", &node, &ksize, &last);
	file_write_at(path, node + 2, hi, 2, was);
	get_corrupt(path, "b", PAST);
	file_write_at(path, node + 2, was, 2, NULL);
	/* a value on overflow pages: its size, then its first page's number
	 * (past the last page written, which LMDB itself refuses) */
	node_of(path, "SPAN-BIG-MARKER", &node, &ksize, &last);
	file_write_at(path, node + 2, hi, 2, was);
	get_corrupt(path, "c", PAST);
	file_write_at(path, node + 2, was, 2, NULL);
	far = last + 16;
	file_write_at(path, node + 8 + (long)ksize, &far, 8, was);
	get_corrupt(path, "c", "MDB_PAGE_NOTFOUND");
	file_write_at(path, node + 8 + (long)ksize, was, 8, NULL);

	db = open_opts(path, 0, 0, NULL);
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	assert_int_equal(mrtx_get(txn, "t", MRTX_CSTR("c"), "f", MRTX_CSTR("q"), &v), MRTX_OK);
	assert_int_equal(v.size, strlen(big));
	assert_memory_equal(v.data, big, v.size);
	mrtx_abort(txn);
	assert_int_equal(tu_get_str(db, "t", "b", "f:q", buf, sizeof(buf)), MRTX_OK);
	assert_string_equal(buf, "SPAN-SMALL-MARKER");
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* A raw LMDB environment in a fresh directory (*path), its map map_size
 * bytes (0: LMDB's default), registered in se for the size bounds, and a
 * write transaction on its main database. */
static void span_env_open(const char *tag, size_t map_size, char **path, MDB_env **env,
                          lmdb_span_env *se, MDB_txn **txn, MDB_dbi *dbi)
{
	*path = tu_fsdir(tag);
	assert_int_equal(mdb_env_create(env), 0);
	if (map_size)
		assert_int_equal(mdb_env_set_mapsize(*env, map_size), 0);
	assert_int_equal(mdb_env_open(*env, *path, MDB_NOTLS | MDB_NOSYNC, 0600), 0);
	lmdb_span_add(se, *env);
	assert_int_equal(mdb_txn_begin(*env, NULL, 0, txn), 0);
	assert_int_equal(mdb_dbi_open(*txn, NULL, 0, dbi), 0);
}

/* Undo span_env_open (the transaction aborted, cur closed when not NULL). */
static void span_env_close(char *path, MDB_env *env, lmdb_span_env *se, MDB_txn *txn,
                           MDB_cursor *cur)
{
	if (cur)
		mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	lmdb_span_del(se);
	mdb_env_close(env);
	tu_rmrf(path);
	free(path);
}

/* A damaged size in a page a write transaction holds in memory (LMDB's
 * copy, apart from the map) is refused too: a value stored after its key
 * in a leaf is under half a page, whatever the map says (I27). */
static void damaged_size_in_copy(void **state)
{
	static char val[100];
	static lmdb_span_env se; /* (static: a failed assertion leaves it listed) */
	char *path;
	MDB_env *env;
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_dbi dbi;
	MDB_val k, v;
	uint8_t *node, was[2];

	(void)state;
	memset(val, 'y', sizeof(val));
	span_env_open("copy", 0, &path, &env, &se, &txn, &dbi);
	for (char c = '1'; c <= '3'; c++) {
		char kb[2] = { 'k', c };

		k = (MDB_val){ 2, kb };
		v = (MDB_val){ sizeof(val), val };
		assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
	}
	assert_int_equal(mdb_cursor_open(txn, dbi, &cur), 0);
	k = (MDB_val){ 2, "k2" };
	assert_int_equal(mdb_cursor_get(cur, &k, &v, MDB_SET_KEY), 0);
	assert_ptr_equal(v.mv_data, (uint8_t *)k.mv_data + 2); /* (inline) */
	assert_false(se.lo && (uintptr_t)k.mv_data >= se.lo && (uintptr_t)k.mv_data < se.top);
	assert_int_equal(lmdb_span_rec(&k, &v), 1);
	/* the node's size, high half (u16 lo, u16 hi, u16 flags, u16 key size) */
	node = (uint8_t *)k.mv_data - 8;
	memcpy(was, node + 2, 2);
	node[2] = 1;
	node[3] = 0;
	k = (MDB_val){ 2, "k2" };
	assert_int_equal(mdb_cursor_get(cur, &k, &v, MDB_SET_KEY), 0);
	assert_int_equal(v.mv_size, sizeof(val) + 65536);
	assert_int_equal(lmdb_span_rec(&k, &v), 0);
	assert_int_equal(lmdb_unseal(&k, &v), LMDB_BADSPAN);
	memcpy(node + 2, was, 2);
	span_env_close(path, env, &se, txn, cur);
}

/* A write transaction of more dirty pages than LMDB keeps (2^17) spills
 * some to the file, past the newest meta page's last page, and reads them
 * back from the map: sound records there pass the bound, which is the
 * file's length (I27), and every record read passes. */
static void spilled_pages_pass(void **state)
{
	static char val[1000];
	static lmdb_span_env se; /* (static: a failed assertion leaves it listed) */
	char *path;
	MDB_env *env;
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_dbi dbi;
	MDB_val k, v;
	long n = 0, refused = 0, in_map = 0;
	int rc;

	(void)state;
	memset(val, 'x', sizeof(val));
	span_env_open("spill", (size_t)4 << 30, &path, &env, &se, &txn, &dbi);
	if (!se.lo) { /* (a map this file system does not show: nothing judged) */
		span_env_close(path, env, &se, txn, NULL);
		skip();
	}
	for (long i = 0; i < 600000; i++) {
		char kb[16];

		k = (MDB_val){ (size_t)snprintf(kb, sizeof(kb), "k%09ld", i), kb };
		v = (MDB_val){ sizeof(val), val };
		assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
	}
	assert_int_equal(mdb_cursor_open(txn, dbi, &cur), 0);
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		uintptr_t a = (uintptr_t)v.mv_data;

		n++;
		in_map += a >= se.lo && a < se.top;
		refused += !lmdb_span_rec(&k, &v);
	}
	assert_int_equal(rc, MDB_NOTFOUND);
	assert_int_equal(n, 600000);
	/* (the spill happened: some records are read from the map, whose
	 * committed pages are the two meta pages alone) */
	assert_true(in_map > 0);
	assert_int_equal(refused, 0);
	span_env_close(path, env, &se, txn, cur);
}

/* Every data record carries a checksum (storage/lmdb/lmdb_seal.h): a byte
 * changed in a value or in a lock record is MRTX_ECORRUPT, never data, and
 * the rest of the store still reads.
 * Checks I20 (DESIGN §10). */
static void sealed_records(void **state)
{
	char *path;
	mrtx_db *db;
	mrtx_txn *txn;
	mrtx_bytes v;
	char buf[16];

	(void)state;
	db = fresh_lmdb("sealed", &path);
	assert_int_equal(mrtx_create_table(db, "t", FAMS, 1), MRTX_OK);
	assert_int_equal(tu_put_str(db, "t", "a", "f:q", "va"), MRTX_OK);
	assert_int_equal(tu_put_str(db, "t", "b", "f:q", "vb"), MRTX_OK);
	assert_int_equal(tu_put_str(db, "t", "c", "f:q", "vc"), MRTX_OK);
	mrtx_close(db);
	raw_flip(path, 'b', 0);
	raw_flip(path, 'c', 1);
	db = open_opts(path, 0, 0, NULL);
	assert_int_equal(tu_get_str(db, "t", "a", "f:q", buf, sizeof(buf)), MRTX_OK);
	assert_string_equal(buf, "va");
	for (const char *row = "b"; *row; row = *row == 'b' ? "c" : "") {
		assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
		assert_int_equal(mrtx_get(txn, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q"), &v),
		                 MRTX_ECORRUPT);
		assert_non_null(strstr(mrtx_errmsg(), "checksum does not match"));
		assert_non_null(strstr(mrtx_errmsg(), "check --deep"));
		mrtx_abort(txn);
	}
	/* a scan meets the damage: an error, not a short result */
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	assert_int_equal(tu_scan_all(txn, "t"), MRTX_ECORRUPT);
	mrtx_abort(txn);
	mrtx_close(db);
	{
		/* the upgrade's recount reads every lock record: it says so too */
		uint64_t cells;

		assert_int_equal(mrtx_upgrade(path, &cells), MRTX_ECORRUPT);
		assert_non_null(strstr(mrtx_errmsg(), "checksum does not match"));
	}
	tu_rmrf(path);
	free(path);
}

/* The store at path refused at the open as damaged, the message saying
 * needle. */
static void open_corrupt(const char *path, const char *needle)
{
	int rc;

	assert_null(open_opts(path, 0, 0, &rc));
	assert_int_equal(rc, MRTX_ECORRUPT);
	if (!strstr(mrtx_errmsg(), needle))
		fail_msg("want '%s' in: %s", needle, mrtx_errmsg());
}

/* Every metadata record carries a checksum too (format 7), and the format
 * record tallies them (format 8): a byte changed in a table's version
 * policies, which the collector acts on, or in the format record, a policy
 * record gone whole, or an older copy of one, is MRTX_ECORRUPT at the
 * open, never a policy, a default, an old policy or a format; the store
 * reads again once the bytes are back.
 * Checks I20 (DESIGN §10). */
static void sealed_metadata(void **state)
{
	char *path;
	mrtx_db *db;
	mrtx_family_spec fam = { "f", 3, 0, 0 };
	uint8_t pol[64], bad[64], fmt[32];
	size_t pn, fn;
	uint64_t cells;
	char buf[16];
	int rc;

	(void)state;
	db = fresh_lmdb("sealedmeta", &path);
	assert_int_equal(mrtx_create_table2(db, "t", &fam, 1), MRTX_OK);
	assert_int_equal(tu_put_str(db, "t", "r", "f:q", "v1"), MRTX_OK);
	assert_int_equal(tu_put_str(db, "t", "r", "f:q", "v2"), MRTX_OK);
	mrtx_close(db);

	/* the TTL of family f set to 1 ms (its seal left as it was): read as
	 * a policy, the reads would hide the cells and gc delete them */
	pn = tu_lmdb_get(path, "\0p/t", 4, pol, sizeof(pol));
	assert_int_equal(pn, 16 + LMDB_SEAL);
	memcpy(bad, pol, pn);
	bad[8] ^= 1;
	raw_put(path, NULL, "\0p/t", 4, bad, pn);
	open_corrupt(path, "checksum does not match");
	raw_put(path, NULL, "\0p/t", 4, pol, pn);
	assert_non_null(db = open_opts(path, 0, 0, NULL));
	assert_int_equal(tu_get_str(db, "t", "r", "f:q", buf, sizeof(buf)), MRTX_OK);
	assert_string_equal(buf, "v2");
	mrtx_close(db);

	/* the policies' key changed (p/t to p/s: a lookup of t's finds none,
	 * and would give it the defaults): the record's seal, which covers
	 * its key, fails where the open walks the metadata */
	tu_lmdb_put(path, "\0p/t", 4, NULL, 0, 0);
	raw_put(path, NULL, "\0p/s", 4, pol, pn);
	open_corrupt(path, "checksum does not match");
	tu_lmdb_put(path, "\0p/s", 4, NULL, 0, 0);
	raw_put(path, NULL, "\0p/t", 4, pol, pn);
	/* ... its first byte changed where it lies in the file (0x00 to 0x01:
	 * it would sort among the data, and a walk of the keys from 0x00 ends
	 * on it, the rest of the metadata behind) */
	{
		uint8_t pat[8];

		memcpy(pat, "\0p/t", 4);
		memcpy(pat + 4, pol, 4);
		file_poke_all(path, pat, sizeof(pat), 0, 1);
		open_corrupt(path, "keys out of order");
		pat[0] = 1;
		file_poke_all(path, pat, sizeof(pat), 0, 0);
	}
	tu_lmdb_put(path, "\0p/t", 4, NULL, 0, 1);
	/* ... renamed and sealed anew (no damage does that; a writer's bug
	 * could): policies of no table */
	tu_lmdb_put(path, "\0p/s", 4, pol, 16, 1);
	open_corrupt(path, "version policies of table 's'");
	tu_lmdb_put(path, "\0p/s", 4, NULL, 0, 1);
	tu_lmdb_put(path, "\0p/t", 4, pol, 16, 1);

	/* the policies lost whole (as when a leaf page's node count is
	 * lowered, or a slot sent past the record: the key is met by no walk,
	 * and a lookup of it reads as never written, so t would read with
	 * the defaults and gc delete the versions they keep): the format
	 * record counts the metadata records, and the open's walk compares */
	tu_lmdb_put(path, "\0p/t", 4, NULL, 0, 0);
	open_corrupt(path, "do not match their count");
	assert_int_equal(mrtx_upgrade(path, &cells), MRTX_ECORRUPT);
	assert_non_null(strstr(mrtx_errmsg(), "do not match their count"));
	raw_put(path, NULL, "\0p/t", 4, pol, pn);
	/* ... and one record more than was written (well sealed, of a kind the
	 * open does not judge: an upper layer's), the format record as it
	 * was before it */
	{
		uint8_t was[32];
		size_t wn = tu_lmdb_get(path, "\0format", 7, was, sizeof(was));

		tu_lmdb_put(path, "\0x/extra", 8, "e", 1, 1);
		tu_lmdb_put(path, "\0format", 7, was, wn, 0);
		open_corrupt(path, "do not match their count");
		tu_lmdb_put(path, "\0x/extra", 8, NULL, 0, 0);
	}
	/* an overwrite or delete of a record whose seal was damaged: refused,
	 * as the tally cannot take out its part (sound records would then
	 * never match it again) */
	{
		MDB_env *env;
		MDB_txn *txn;
		MDB_dbi dbi;
		MDB_val key = { 4, "\0p/t" }, val = { 16, pol };

		memcpy(bad, pol, pn);
		bad[pn - 1] ^= 1;
		raw_put(path, NULL, "\0p/t", 4, bad, pn);
		env = raw_open(path, 0);
		assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
		assert_int_equal(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
		assert_int_equal(lmdb_put(txn, dbi, &key, &val, 0), LMDB_BADSUM);
		mdb_txn_abort(txn);
		assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
		assert_int_equal(lmdb_del(txn, dbi, &key), LMDB_BADSUM);
		mdb_txn_abort(txn);
		mdb_env_close(env);
		raw_put(path, NULL, "\0p/t", 4, pol, pn);
	}
	/* a format record sealed but of no format-8 length: the tally cannot
	 * move, and says the format record is malformed, not that a record
	 * went missing; and a metadata put whose flags would not hand back the
	 * old record (MDB_APPEND) is refused before it writes */
	{
		MDB_env *env;
		MDB_txn *txn;
		MDB_dbi dbi;
		uint8_t four[4] = { 8, 0, 0, 0 };
		MDB_val key = { 4, "\0p/t" }, val = { 16, pol };
		MDB_val fk = { 7, "\0format" }, fv = { 4, four };
		MDB_val nk = { 6, "\0x/new" }, nv = { 1, "n" };

		env = raw_open(path, 0);
		assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
		assert_int_equal(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
		assert_int_equal(lmdb_put(txn, dbi, &key, &val, MDB_APPEND), EINVAL);
		assert_int_equal(lmdb_put(txn, dbi, &fk, &fv, 0), 0);
		assert_int_equal(lmdb_put(txn, dbi, &nk, &nv, 0), LMDB_BADFORMAT);
		assert_int_equal(lmdb_del(txn, dbi, &key), LMDB_BADFORMAT);
		mdb_txn_abort(txn);
		mdb_env_close(env);
	}
	/* ... and an older copy of it read in its place (a branch pointer sent
	 * back to the leaf as it was before the policies changed: the record's
	 * seal is its own, and the count is as it was): the digest */
	{
		mrtx_family_spec five = { "f", 5, 0, 0 };
		uint8_t now[64];
		size_t nn;

		assert_non_null(db = open_opts(path, 0, 0, NULL));
		assert_int_equal(mrtx_alter_family(db, "t", &five), MRTX_OK);
		mrtx_close(db);
		nn = tu_lmdb_get(path, "\0p/t", 4, now, sizeof(now));
		raw_put(path, NULL, "\0p/t", 4, pol, pn);
		open_corrupt(path, "do not match their digest");
		raw_put(path, NULL, "\0p/t", 4, now, nn);
		assert_non_null(db = open_opts(path, 0, 0, NULL));
		assert_int_equal(mrtx_alter_family(db, "t", &fam), MRTX_OK);
		mrtx_close(db);
		assert_int_equal(tu_lmdb_get(path, "\0p/t", 4, now, sizeof(now)), pn);
		assert_memory_equal(now, pol, pn);
	}

	/* the format record flipped to an earlier format: damage, not a store
	 * to upgrade (whose seal pass would seal sealed records again) */
	fn = tu_lmdb_get(path, "\0format", 7, fmt, sizeof(fmt));
	assert_int_equal(fn, 16 + LMDB_SEAL);
	assert_int_equal(fmt[0], 8);
	fmt[0] = 5;
	raw_put(path, NULL, "\0format", 7, fmt, fn);
	open_corrupt(path, "checksum does not match");
	assert_int_equal(mrtx_upgrade(path, &cells), MRTX_ECORRUPT);
	/* a bare format 8 or 7 (no seal) is damage too */
	for (uint8_t f = 7; f <= 8; f++) {
		fmt[0] = f;
		raw_put(path, NULL, "\0format", 7, fmt, 4);
		assert_null(db = open_opts(path, 0, 0, &rc));
		assert_int_equal(rc, MRTX_ECORRUPT);
		assert_int_equal(mrtx_upgrade(path, &cells), MRTX_ECORRUPT);
	}
	raw_put(path, NULL, "\0format", 7, fmt, fn);
	assert_non_null(db = open_opts(path, 0, 0, NULL));
	assert_int_equal(tu_get_str(db, "t", "r", "f:q", buf, sizeof(buf)), MRTX_OK);
	assert_string_equal(buf, "v2");
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* Two rows put in one two-phase transaction (its prewrite adds unsettled
 * lock records, so the write moves the metadata's count of them). */
static int put_two(mrtx_db *db, const char *v)
{
	mrtx_txn *txn;
	int rc;

	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	if ((rc = mrtx_put(txn, "t", MRTX_CSTR("a"), "f", MRTX_CSTR("q"), MRTX_CSTR(v))) ||
	    (rc = mrtx_put(txn, "t", MRTX_CSTR("b"), "f", MRTX_CSTR("q"), MRTX_CSTR(v)))) {
		mrtx_abort(txn);
		return rc;
	}
	return mrtx_commit(txn);
}

/* In a child process (no cmocka asserts: a failing one would go on with
 * the parent's tests): write the format record's bytes as they are to fd,
 * then put payload v[0..n) sealed in its place.  0, or 1. */
static int child_put_format(const char *path, int fd, const void *v, size_t n)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = { 7, "\0format" }, old, val = { n, (void *)(uintptr_t)v };

	if (mdb_env_create(&env) || mdb_env_set_mapsize(env, (size_t)1 << 30) ||
	    mdb_env_open(env, path, MDB_NOTLS, 0600))
		return 1;
	if (mdb_txn_begin(env, NULL, 0, &txn) || mdb_dbi_open(txn, NULL, 0, &dbi) ||
	    mdb_get(txn, dbi, &k, &old) ||
	    write(fd, old.mv_data, old.mv_size) != (ssize_t)old.mv_size ||
	    lmdb_put(txn, dbi, &k, &val, 0) || mdb_txn_commit(txn))
		return 1;
	mdb_env_close(env);
	return 0;
}

/* The format record damaged (sealed, of no format-8 length) under an open
 * handle, by another process: a write that must move the tally fails
 * before LMDB's commit runs, so it surely wrote nothing -- MRTX_ECORRUPT
 * saying the format record is malformed, never MRTX_EUNKNOWN nor "a record
 * lost" -- and the store, its format record put back, holds none of it. */
static void commit_meets_bad_format(void **state)
{
	static const uint8_t four[4] = { 8, 0, 0, 0 };
	uint8_t was[64];
	ssize_t wn;
	char *path, buf[16];
	mrtx_db *db;
	pid_t pid;
	int st, rc, fds[2];

	(void)state;
	setenv("MRTX_TWO_PHASE", "1", 1);
	db = fresh_lmdb("badformat", &path);
	unsetenv("MRTX_TWO_PHASE");
	assert_int_equal(mrtx_create_table(db, "t", FAMS, 1), MRTX_OK);
	assert_int_equal(put_two(db, "v1"), MRTX_OK);
	/* (another process: LMDB wants one environment per file and process) */
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_put_format(path, fds[1], four, sizeof(four)));
	close(fds[1]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	wn = read(fds[0], was, sizeof(was));
	close(fds[0]);
	assert_true(wn > 0 && (size_t)wn < sizeof(was));
	rc = put_two(db, "v2");
	if (rc != MRTX_ECORRUPT || !strstr(mrtx_errmsg(), "format record is malformed"))
		fail_msg("commit over a malformed format record: %s: %s", mrtx_strerror(rc),
		         mrtx_errmsg());
	mrtx_close(db);
	tu_lmdb_put(path, "\0format", 7, was, (size_t)wn, 0);
	assert_non_null(db = open_opts(path, 0, 0, NULL));
	assert_int_equal(tu_get_str(db, "t", "a", "f:q", buf, sizeof(buf)), MRTX_OK);
	assert_string_equal(buf, "v1");
	assert_int_equal(tu_get_str(db, "t", "b", "f:q", buf, sizeof(buf)), MRTX_OK);
	assert_string_equal(buf, "v1");
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(full_store),
		cmocka_unit_test(file_modes),
		cmocka_unit_test(not_a_store),
		cmocka_unit_test(damaged_metadata),
		cmocka_unit_test(sealed_records),
		cmocka_unit_test(damaged_sizes),
		cmocka_unit_test(spilled_pages_pass),
		cmocka_unit_test(damaged_size_in_copy),
		cmocka_unit_test(sealed_metadata),
		cmocka_unit_test(commit_meets_bad_format),
		cmocka_unit_test(lock_bound_to_store),
		cmocka_unit_test(stale_readers),
		cmocka_unit_test(threads_share_one_store),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
