/* testutil.c - see testutil.h. */
#include "testutil.h"
#include "recovery/recovery.h"
#include "storage/common.h"
#include "txn/admin_test.h"

#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * MRTX_TEST_STORE=rados (with MRTX_TEST_RADOS_CONF, a cluster's ceph.conf;
 * tests/rados/rados_suite.sh sets both): every "fresh store" a test asks for is a
 * new RADOS store rados://mrtx/<tag>-<pid>-<n>-<random> instead of a
 * directory, so the same test runs against the distributed backend.
 */
int tu_rados(void)
{
	const char *s = getenv("MRTX_TEST_STORE");

	return s && strcmp(s, "rados") == 0;
}

char *tu_fsdir(const char *tag)
{
	const char *base = getenv("TMPDIR");
	char *p;

	if (!base || !*base)
		base = "/tmp";
	if (asprintf(&p, "%s/mrtx-test-%s-XXXXXX", base, tag) < 0)
		return NULL;
	if (!mkdtemp(p)) {
		free(p);
		return NULL;
	}
	return p;
}

char *tu_tmpdir(const char *tag)
{
	static unsigned long counter;
	char *p;

	if (tu_rados()) {
		const char *conf = getenv("MRTX_TEST_RADOS_CONF");
		unsigned r;

		if (!conf || !*conf) {
			fprintf(stderr, "MRTX_TEST_STORE=rados needs MRTX_TEST_RADOS_CONF\n");
			return NULL;
		}
		r = (unsigned)rand() ^ (unsigned)time(NULL) * 2654435761u;
		if (asprintf(&p, "rados://mrtx/%s-%d-%lu-%08x?conf=%s", tag, (int)getpid(),
		             ++counter, r, conf) < 0)
			return NULL;
		return p;
	}
	return tu_fsdir(tag);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

void tu_rmrf(const char *path)
{
	/* a test cluster's stores are thrown away with the cluster */
	if (path && strncmp(path, "rados://", 8) != 0)
		nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

mrtx_db *tu_open_fresh(const char *tag, char **path_out, const mrtx_options *opts)
{
	return tu_open_fresh_k(tag, path_out, opts, NULL);
}

mrtx_db *tu_open_fresh_k(const char *tag, char **path_out, const mrtx_options *opts,
                         const mrtx__knobs *k)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db = NULL;
	char *path = tu_tmpdir(tag);

	if (!path)
		return NULL;
	if (opts)
		o = *opts;
	else
		o.durability = MRTX_NOSYNC;
	if (o.version == MRTX_OPTIONS_VERSION && o.create == MRTX_CREATE_DEFAULT)
		o.create = MRTX_CREATE_IF_MISSING; /* (a fresh RADOS address too) */
	if (mrtx__open_knobs(&db, path, &o, k) != MRTX_OK) {
		fprintf(stderr, "mrtx_open(%s): %s\n", path, mrtx_errmsg());
		free(path);
		return NULL;
	}
	*path_out = path;
	return db;
}

static void split_fq(const char *fq, char *fam, size_t famsz, const char **qual)
{
	const char *c = strchr(fq, ':');
	size_t n = c ? (size_t)(c - fq) : strlen(fq);

	if (n >= famsz)
		n = famsz - 1;
	memcpy(fam, fq, n);
	fam[n] = '\0';
	*qual = c ? c + 1 : "";
}

int tu_get_str(mrtx_db *db, const char *table, const char *row, const char *fq,
               char *buf, size_t bufsz)
{
	char fam[80];
	const char *qual;
	mrtx_txn *txn;
	mrtx_bytes v;
	int rc;

	split_fq(fq, fam, sizeof(fam), &qual);
	if ((rc = mrtx_begin(db, &txn)) != MRTX_OK)
		return rc;
	rc = mrtx_get(txn, table, MRTX_CSTR(row), fam, MRTX_CSTR(qual), &v);
	if (rc == MRTX_OK) {
		size_t n = v.size < bufsz - 1 ? v.size : bufsz - 1;
		memcpy(buf, v.data, n);
		buf[n] = '\0';
	}
	mrtx_abort(txn);
	return rc;
}

int tu_put_str(mrtx_db *db, const char *table, const char *row, const char *fq,
               const char *value)
{
	char fam[80];
	const char *qual;
	mrtx_txn *txn;
	int rc;

	split_fq(fq, fam, sizeof(fam), &qual);
	if ((rc = mrtx_begin(db, &txn)) != MRTX_OK)
		return rc;
	rc = mrtx_put(txn, table, MRTX_CSTR(row), fam, MRTX_CSTR(qual), MRTX_CSTR(value));
	if (rc != MRTX_OK) {
		mrtx_abort(txn);
		return rc;
	}
	return mrtx_commit(txn);
}

/* ---- additions for the core protocol tests ---- */
#include <stdarg.h>
#include <errno.h>
#include <sys/wait.h>

mrtx_db *tu_open(const char *path, const mrtx_options *opts)
{
	return tu_open_k(path, opts, NULL);
}

mrtx_db *tu_open_k(const char *path, const mrtx_options *opts, const mrtx__knobs *k)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db = NULL;

	if (opts)
		o = *opts;
	else
		o.durability = MRTX_NOSYNC;
	if (o.version == MRTX_OPTIONS_VERSION && o.create == MRTX_CREATE_DEFAULT)
		o.create = MRTX_CREATE_IF_MISSING; /* (a fresh RADOS address too) */
	if (mrtx__open_knobs(&db, path, &o, k) != MRTX_OK) {
		fprintf(stderr, "mrtx_open(%s): %s\n", path, mrtx_errmsg());
		return NULL;
	}
	return db;
}

int tu_table(mrtx_db *db, const char *table, ...)
{
	const char *fams[16];
	size_t n = 0;
	va_list ap;

	va_start(ap, table);
	while (n < 16 && (fams[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	return mrtx_create_table(db, table, fams, n);
}

int tu_wait(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return tu_status(st);
}

int tu_status(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return -1;
}

int tu_put(mrtx_db *db, const char *table, mrtx_bytes row, const char *family,
           mrtx_bytes qual, mrtx_bytes value)
{
	mrtx_txn *txn;
	int rc;

	if ((rc = mrtx_begin(db, &txn)) != MRTX_OK)
		return rc;
	if ((rc = mrtx_put(txn, table, row, family, qual, value)) != MRTX_OK) {
		mrtx_abort(txn);
		return rc;
	}
	return mrtx_commit(txn);
}

int tu_cell_is(mrtx_db *db, const char *table, mrtx_bytes row, const char *family,
               mrtx_bytes qual, mrtx_bytes want, int *rc_out)
{
	mrtx_txn *txn;
	mrtx_bytes v;
	int rc, ok;

	if ((rc = mrtx_begin(db, &txn)) != MRTX_OK) {
		if (rc_out)
			*rc_out = rc;
		return 0;
	}
	rc = mrtx_get(txn, table, row, family, qual, &v);
	if (rc_out)
		*rc_out = rc;
	if (!want.data)
		ok = rc == MRTX_NOTFOUND;
	else
		ok = rc == MRTX_OK && v.size == want.size &&
		     (v.size == 0 || memcmp(v.data, want.data, v.size) == 0);
	mrtx_abort(txn);
	return ok;
}

static uint64_t rng_state;
unsigned long tu_seed_used;

void tu_rng_seed(unsigned long dflt)
{
	const char *s = getenv("MRTX_SEED");

	tu_seed_used = s ? strtoul(s, NULL, 0) : dflt;
	rng_state = tu_seed_used * 0x9E3779B97F4A7C15ull + 1;
}

uint64_t tu_rng64(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

uint32_t tu_rng(void)
{
	return (uint32_t)(tu_rng64() >> 32);
}

size_t tu_expect_settled(mrtx_db *db, const store_table *t)
{
	store *st = mrtx__db_store(db);
	store_filter f = STORE_FILTER_ALL;
	store_range r = { { NULL, 0 }, 0, { NULL, 0 } };
	store_row *rows;
	mrtx_arena a;
	size_t n;
	int more;

	f.lock_only = 1;
	arena_init(&a);
	assert_int_equal(store_scan_rows(st, t, &r, 0, &f, 0, &a, &rows, &n, &more), MRTX_OK);
	for (size_t k = 0; k < n; k++) {
		lock_rec rec;

		if (lockio_decode(st, t, rows[k].row, rows[k].lock, &a, &rec))
			fail_msg("table %s: lock does not decode: %s", t->name, mrtx_errmsg());
		if (rec.state != LOCK_STABLE)
			fail_msg("table %s row %.*s: lock left %s", t->name, (int)rows[k].row.size,
			         (const char *)rows[k].row.data, lock_state_name(rec.state));
	}
	arena_free(&a);
	return n;
}

unsigned long tu_open_locks(mrtx_db *db)
{
	recover_opts ro = { 0, 0, 1 };
	recover_stats st;

	assert_int_equal(recover_sweep(mrtx__db_store(db), &ro, &st, NULL, NULL), 0);
	return st.locks_seen;
}

void tu_fp_hold(const char *fp, unsigned at, const char *tag, char *go, size_t n)
{
	char spec[512];
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	snprintf(go, n, "%s/mrtx-%s-go.%d", dir, tag, (int)getpid());
	unlink(go);
	if (at)
		snprintf(spec, sizeof(spec), "%s=wait:%s@%u", fp, go, at);
	else
		snprintf(spec, sizeof(spec), "%s=wait:%s", fp, go);
	assert_int_equal(mrtx_failpoints_set(spec), MRTX_OK);
}

void tu_fp_wait(const char *fp, int hits)
{
	for (int i = 0; mrtx_failpoint_hits(fp) < hits; i++) {
		assert_true(i < 120000);
		usleep(5000);
	}
}

void tu_fp_release(const char *go, pthread_t th)
{
	FILE *f = fopen(go, "w");

	assert_non_null(f);
	fclose(f);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(mrtx_failpoints_set(NULL), MRTX_OK);
	unlink(go);
}

void tu_clock_reset(void)
{
	atomic_store(&mrtx__clock_frozen_us, 0);
	atomic_store(&mrtx__clock_step_us, 0);
}

/* ---- an LMDB store as an older mrtx wrote it ---- */

#include <lmdb.h>

#include "storage/lmdb/lmdb_seal.h"

/* Strip the seals of the metadata records (data: of every record) and set
 * the bare format record to fmt. */
static void lmdb_strip(const char *path, int data, uint32_t fmt)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_dbi dbi;
	MDB_val k, v;
	MDB_val fk = { 7, (void *)"\0format" }, fv = { 4, &fmt };
	int rc;

	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_mapsize(env, (size_t)1 << 30), 0);
	assert_int_equal(mdb_env_open(env, path, MDB_NOTLS, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
	assert_int_equal(mdb_cursor_open(txn, dbi, &cur), 0);
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		uint8_t key[512], *val;
		MDB_val kc, vc;

		if (!data && ((const uint8_t *)k.mv_data)[0] != 0)
			break;
		assert_int_equal(lmdb_unseal(&k, &v), 0);
		assert_true(k.mv_size <= sizeof(key));
		memcpy(key, k.mv_data, k.mv_size);
		assert_non_null(val = malloc(v.mv_size + 1));
		memcpy(val, v.mv_data, v.mv_size);
		kc = (MDB_val){ k.mv_size, key };
		vc = (MDB_val){ v.mv_size, val };
		assert_int_equal(mdb_cursor_put(cur, &kc, &vc, MDB_CURRENT), 0);
		free(val);
		k = kc;
	}
	assert_true(rc == MDB_NOTFOUND || (rc == 0 && !data));
	mdb_cursor_close(cur);
	assert_int_equal(mdb_put(txn, dbi, &fk, &fv, 0), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

void tu_lmdb_put(const char *path, const void *k, size_t kn, const void *v, size_t vn,
                 int sealed)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val key = { kn, (void *)(uintptr_t)k }, val = { vn, (void *)(uintptr_t)v };

	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_mapsize(env, (size_t)1 << 30), 0);
	assert_int_equal(mdb_env_open(env, path, MDB_NOTLS, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
	if (!v)
		assert_int_equal(sealed ? lmdb_del(txn, dbi, &key) : mdb_del(txn, dbi, &key, NULL), 0);
	else
		assert_int_equal(sealed ? lmdb_put(txn, dbi, &key, &val, 0) :
		                 mdb_put(txn, dbi, &key, &val, 0), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

size_t tu_lmdb_get(const char *path, const void *k, size_t kn, void *buf, size_t cap)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val key = { kn, (void *)(uintptr_t)k }, val;

	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_open(env, path, MDB_NOTLS | MDB_RDONLY, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
	assert_int_equal(mdb_get(txn, dbi, &key, &val), 0);
	assert_true(val.mv_size <= cap);
	memcpy(buf, val.mv_data, val.mv_size);
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return val.mv_size;
}

void tu_lmdb_unseal(const char *path)
{
	lmdb_strip(path, 1, 5);
}

void tu_lmdb_format6(const char *path)
{
	lmdb_strip(path, 0, 6);
}

void tu_lmdb_format7(const char *path)
{
	uint32_t fmt = 7;

	tu_lmdb_put(path, "\0format", 7, &fmt, sizeof(fmt), 1);
}

int tu_scan_all(mrtx_txn *txn, const char *table)
{
	mrtx_scan_spec sp;
	mrtx_scanner *sc;
	mrtx_cell c;
	int rc;

	memset(&sp, 0, sizeof(sp));
	sp.table = table;
	if ((rc = mrtx_scan_open(txn, &sp, &sc)))
		return rc;
	while ((rc = mrtx_scan_next(sc, &c)) == MRTX_OK)
		;
	mrtx_scan_close(sc);
	return rc == MRTX_NOTFOUND ? MRTX_OK : rc;
}
