/*
 * bench.c - `mrtx bench`: what the protocol costs against plain LMDB.
 *
 * Every workload runs mrtx and a native-LMDB baseline in the same process
 * run, alternating in rounds on fresh stores, so machine noise hits both
 * sides alike; the report is ops/s for both and their ratio.  The
 * baselines are the only place outside storage/ that includes <lmdb.h>.
 * multi_row and interactive have SQLite and RocksDB sides too
 * (bench_sqlite.c, bench_rocksdb.c), in the same rounds, and every side's
 * store is checked after the run: interactive transfers between accounts
 * whose sum must stay exact; multi_row writes groups of 4 rows that must
 * stay whole (check_groups).
 */
#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_int.h"
#include "mrtx.h"

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void die(const char *step, const char *msg)
{
	fprintf(stderr, "mrtx: bench: %s: %s\n", step, msg);
	exit(1);
}

/*
 * DIR/KIND-N, empty of any earlier run's store: the files of an LMDB (mrtx
 * or baseline) store and of a SQLite database, by name, and nothing else.
 */
char *fresh_dir(bcfg *c, const char *kind)
{
	static const char *const files[] = { "data.mdb", "lock.mdb", "ts.shm", "bench.db",
	                                     "bench.db-wal", "bench.db-shm", "bench.db-journal" };
	char *p;

	if (asprintf(&p, "%s/%s-%d", c->dir, kind, c->seq++) < 0)
		die("alloc", "out of memory");
	if (mkdir(p, 0700) && errno != EEXIST)
		die("mkdir", strerror(errno));
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char f[4096];

		snprintf(f, sizeof(f), "%s/%s", p, files[i]);
		if (unlink(f) && errno != ENOENT)
			die(f, strerror(errno));
	}
	return p;
}

const char *mode_name(int d)
{
	return d == MRTX_NOSYNC ? "nosync" : d == MRTX_NOMETASYNC ? "nometasync" : "sync";
}

unsigned env_flags(int durability)
{
	return MDB_NOTLS | (durability == MRTX_NOSYNC ? MDB_NOSYNC :
	                    durability == MRTX_NOMETASYNC ? MDB_NOMETASYNC : 0);
}

/* ------------------------------------------------------------ fixtures */

void fixture_open(bcfg *c, fixture *f, int durability)
{
	static const char *const fams[] = { "f" };
	mrtx_options o = MRTX_OPTIONS_INIT;
	MDB_txn *t;
	int rc;

	memset(f, 0, sizeof(*f));
	f->mdir = fresh_dir(c, "mrtx");
	f->ldir = fresh_dir(c, "lmdb");
	o.durability = durability;
	if (mrtx_open(&f->db, f->mdir, &o) || mrtx_create_table(f->db, "t", fams, 1))
		die("open", mrtx_errmsg());
	if ((rc = mdb_env_create(&f->env)) || (rc = mdb_env_set_mapsize(f->env, (size_t)1 << 30)) ||
	    (rc = mdb_env_set_maxreaders(f->env, 1022)) ||
	    (rc = mdb_env_open(f->env, f->ldir, env_flags(durability), 0600)) ||
	    (rc = mdb_txn_begin(f->env, NULL, 0, &t)) || (rc = mdb_dbi_open(t, NULL, 0, &f->dbi)) ||
	    (rc = mdb_txn_commit(t)))
		die("lmdb open", mdb_strerror(rc));
}

void fixture_close(fixture *f)
{
	mrtx_close(f->db);
	mdb_env_close(f->env);
	free(f->mdir);
	free(f->ldir);
}

/* --------------------------------------------------------- op bodies */

int mrtx_put_row(mrtx_db *db, const char *row, int cells)
{
	char q[16], v[16];
	mrtx_txn *txn;
	int rc;

	if ((rc = mrtx_begin(db, &txn)))
		return rc;
	memset(v, 'v', sizeof(v));
	for (int i = 0; i < cells && rc == 0; i++) {
		snprintf(q, sizeof(q), "q%d", i);
		rc = mrtx_put(txn, "t", MRTX_CSTR(row), "f", MRTX_CSTR(q), MRTX_BYTES(v, sizeof(v)));
	}
	if (rc) {
		mrtx_abort(txn);
		return rc;
	}
	return mrtx_commit(txn);
}

/* value: 16 bytes, or NULL for "vvvv..." */
int lmdb_put_rows(fixture *f, char rows[][32], int nrows, int cells, const char *value)
{
	char key[48], v[16];
	MDB_txn *t;
	int rc;

	if (value)
		memcpy(v, value, sizeof(v));
	else
		memset(v, 'v', sizeof(v));
	if ((rc = mdb_txn_begin(f->env, NULL, 0, &t)))
		return rc;
	for (int r = 0; r < nrows; r++)
		for (int i = 0; i < cells && rc == 0; i++) {
			MDB_val k, d = { sizeof(v), v };

			k.mv_size = (size_t)snprintf(key, sizeof(key), "%s/q%d", rows[r], i);
			k.mv_data = key;
			rc = mdb_put(t, f->dbi, &k, &d, 0);
		}
	if (rc) {
		mdb_txn_abort(t);
		return rc;
	}
	return mdb_txn_commit(t);
}

/* ------------------------------------------------ single-thread phases */

/* One side's position in its op sequence, carried from slice to slice. */
typedef struct side {
	unsigned seed;
	long n;     /* ops so far */
	double t;   /* their time */
} side;

/* Run op for secs, continuing s's sequence (rows, random draws). */
static void run_phase(fixture *f, op_fn op, double secs, side *s)
{
	double t0 = now_s();

	do {
		int rc = op(f, &s->seed, s->n);

		if (rc && rc != MRTX_CONFLICT)
			die("op", rc < -30900 ? mrtx_errmsg() : mdb_strerror(rc));
		s->n++;
	} while (now_s() - t0 < secs);
	/* the side's own background work is its cost: the tails of RADOS
	 * commits (mrtx_flush) finish inside its time, not in the other's */
	if (f->db)
		(void)mrtx_flush(f->db);
	s->t += now_s() - t0;
}

/*
 * Single-thread workloads alternate in slices of about a quarter second
 * (rounds x phase seconds per side in all), so that a slow spell of a
 * shared machine lands on both sides instead of on one 2-second phase;
 * each side's rate is its ops over its time.  Each side continues its op
 * sequence (rows, random draws) from slice to slice.
 */
#define SLICE_S 0.25

void alternate(bcfg *c, fixture *f, op_fn m, op_fn b, bres *r)
{
	double total = c->rounds * c->phase_s;
	int slices = (int)(total / SLICE_S + 0.5);
	side ms = { 42, 0, 0 }, bs = { 42, 0, 0 };

	if (slices < c->rounds)
		slices = c->rounds;
	for (int i = 0; i < slices; i++) {
		run_phase(f, m, total / slices, &ms);
		run_phase(f, b, total / slices, &bs);
	}
	r->mrtx_ops = (double)ms.n / ms.t;
	r->base_ops = (double)bs.n / bs.t;
	r->has_base = 1;
}

int op_single_mrtx(fixture *f, unsigned *seed, long i)
{
	char row[32];

	(void)seed;
	snprintf(row, sizeof(row), "r%08ld", i % 10000);
	return mrtx_put_row(f->db, row, 4);
}

int op_single_lmdb(fixture *f, unsigned *seed, long i)
{
	char row[1][32];

	(void)seed;
	snprintf(row[0], sizeof(row[0]), "r%08ld", i % 10000);
	return lmdb_put_rows(f, row, 1, 4, NULL);
}

int op_get_mrtx(fixture *f, unsigned *seed, long i)
{
	char row[32];
	mrtx_txn *txn;
	mrtx_bytes v;
	int rc;

	(void)i;
	snprintf(row, sizeof(row), "r%08d", rand_r(seed) % 1000);
	if ((rc = mrtx_begin(f->db, &txn)))
		return rc;
	rc = mrtx_get(txn, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q0"), &v);
	mrtx_abort(txn);
	return rc;
}

/* A read-only transaction of one get, committed: in sync mode its commit
 * makes what it read durable (DESIGN §8, I23), nothing when it already is. */
int op_rocommit_mrtx(fixture *f, unsigned *seed, long i)
{
	char row[32];
	mrtx_txn *txn;
	mrtx_bytes v;
	int rc;

	(void)i;
	snprintf(row, sizeof(row), "r%08d", rand_r(seed) % 1000);
	if ((rc = mrtx_begin(f->db, &txn)))
		return rc;
	if ((rc = mrtx_get(txn, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q0"), &v))) {
		mrtx_abort(txn);
		return rc;
	}
	return mrtx_commit(txn);
}

int op_get_lmdb(fixture *f, unsigned *seed, long i)
{
	char key[32];
	MDB_txn *t;
	MDB_val k, v;
	int rc;

	(void)i;
	k.mv_size = (size_t)snprintf(key, sizeof(key), "r%08d/q0", rand_r(seed) % 1000);
	k.mv_data = key;
	if ((rc = mdb_txn_begin(f->env, NULL, MDB_RDONLY, &t)))
		return rc;
	rc = mdb_get(t, f->dbi, &k, &v);
	mdb_txn_abort(t);
	return rc;
}

/* ------------------------------------------------ verifiable workloads */

void bal_encode(char v[16], long long x)
{
	char b[32];

	snprintf(b, sizeof(b), "%016lld", x);
	memcpy(v, b, 16);
}

int bal_decode(const void *p, size_t n, long long *out)
{
	char b[17], *end;

	if (n != 16)
		return -1;
	memcpy(b, p, 16);
	b[16] = 0;
	if (!(b[0] == '-' || (b[0] >= '0' && b[0] <= '9')))
		return -1;
	errno = 0;
	*out = strtoll(b, &end, 10);
	return errno || end != b + 16 ? -1 : 0;
}

void inter_pick(unsigned *seed, int *a, int *b, int *x)
{
	*a = rand_r(seed) % BAL_ACCOUNTS;
	do
		*b = rand_r(seed) % BAL_ACCOUNTS;
	while (*b == *a);
	*x = 1 + rand_r(seed) % 9;
}

void mlog_init(mlog *lg)
{
	memset(lg, 0, sizeof(*lg));
	for (int i = 0; i < MULTI_THREADS; i++)
		lg->th[i].seed = 7u + (unsigned)i;
}

void mlog_free(mlog *lg)
{
	for (int i = 0; i < MULTI_THREADS; i++)
		free(lg->th[i].groups);
}

/* Group g's rows: 4g..4g+3 through a bijection of 0..99999 (7919 is prime
 * to 100000), so a transaction's rows lie apart in the key space. */
static void group_rows(int g, char rows[4][32])
{
	for (int j = 0; j < 4; j++)
		snprintf(rows[j], 32, "m%07ld", ((long)(4 * g + j) * 7919L) % 100000L);
}

int multi_pick(mthr *t, int id, char rows[4][32], char v[17])
{
	int g = rand_r(&t->seed) % MULTI_GROUPS;

	group_rows(g, rows);
	snprintf(v, 17, "%02d:%013ld", id, t->n);
	return g;
}

void multi_done(mthr *t, int group)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 4096;
		if (!(t->groups = realloc(t->groups, (size_t)t->cap * sizeof(*t->groups))))
			die("alloc", "out of memory");
	}
	t->groups[t->n++] = group;
}

void check_balances(const char *who, cell_reader rd, void *ctx)
{
	long long sum = 0, x;
	char row[32], v[16], msg[160];

	for (int i = 0; i < BAL_ACCOUNTS; i++) {
		snprintf(row, sizeof(row), "r%08d", i);
		if (!rd(ctx, row, v)) {
			snprintf(msg, sizeof(msg), "%s: account %s is missing", who, row);
			die("interactive check", msg);
		}
		if (bal_decode(v, 16, &x)) {
			snprintf(msg, sizeof(msg), "%s: account %s holds no balance '%.16s'", who, row,
			         v);
			die("interactive check", msg);
		}
		sum += x;
	}
	if (sum != (long long)BAL_ACCOUNTS * BAL_INIT) {
		snprintf(msg, sizeof(msg), "%s: the %d balances sum to %lld, not %lld: money was "
		         "created or lost", who, BAL_ACCOUNTS, sum, (long long)BAL_ACCOUNTS * BAL_INIT);
		die("interactive check", msg);
	}
}

/*
 * Every group's 4 rows are all absent, if no committed transaction wrote
 * the group, or all hold one id T:S, where thread T's last committed
 * transaction on the group is its S-th: no torn group (atomicity), no
 * committed group missing, no write a later one of the same thread
 * overwrote winning (a lost write).  Which thread's write should win a
 * group is not known (their order is not logged), so that is not checked.
 */
long check_groups(const char *who, cell_reader rd, void *ctx, const mlog *lg)
{
	long *last = malloc((size_t)MULTI_THREADS * MULTI_GROUPS * sizeof(*last)), found = 0;
	char rows[4][32], v[4][16], msg[200];

	if (!last)
		die("alloc", "out of memory");
	for (long i = 0; i < (long)MULTI_THREADS * MULTI_GROUPS; i++)
		last[i] = -1;
	for (int t = 0; t < MULTI_THREADS; t++)
		for (long s = 0; s < lg->th[t].n; s++)
			last[(long)t * MULTI_GROUPS + lg->th[t].groups[s]] = s;
	for (int g = 0; g < MULTI_GROUPS; g++) {
		int present = 0, written = 0, t = -1;
		long s = -1;
		char id[17];

		group_rows(g, rows);
		for (int j = 0; j < 4; j++)
			present += rd(ctx, rows[j], v[j]);
		for (int k = 0; k < MULTI_THREADS; k++)
			written |= last[(long)k * MULTI_GROUPS + g] >= 0;
		if (present == 0 && !written)
			continue;
		if (present != 4) {
			snprintf(msg, sizeof(msg), "%s: group %d (rows %s %s %s %s): %d of 4 rows "
			         "present%s", who, g, rows[0], rows[1], rows[2], rows[3], present,
			         written ? ", after committed writes" : ", never written");
			die("multi_row check", msg);
		}
		for (int j = 1; j < 4; j++)
			if (memcmp(v[j], v[0], 16)) {
				snprintf(msg, sizeof(msg), "%s: group %d torn: row %s holds %.16s, row %s "
				         "%.16s", who, g, rows[0], v[0], rows[j], v[j]);
				die("multi_row check", msg);
			}
		memcpy(id, v[0], 16);
		id[16] = 0;
		if (sscanf(id, "%2d:%13ld", &t, &s) != 2 || t < 0 || t >= MULTI_THREADS ||
		    last[(long)t * MULTI_GROUPS + g] != s) {
			snprintf(msg, sizeof(msg), "%s: group %d holds '%s', which is not the last "
			         "committed transaction of its thread on it", who, g, id);
			die("multi_row check", msg);
		}
		found++;
	}
	free(last);
	return found;
}

int read_mrtx(void *ctx, const char *row, char v[16])
{
	mrtx_txn *txn;
	mrtx_bytes x;
	int rc;

	if (mrtx_begin(ctx, &txn))
		die("check", mrtx_errmsg());
	rc = mrtx_get(txn, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q0"), &x);
	if (rc && rc != MRTX_NOTFOUND)
		die("check", mrtx_errmsg());
	if (rc == 0 && x.size != 16)
		die("check", "a value is not 16 bytes");
	if (rc == 0)
		memcpy(v, x.data, 16);
	mrtx_abort(txn);
	return rc == 0;
}

int read_lmdb(void *ctx, const char *row, char v[16])
{
	fixture *f = ctx;
	char key[48];
	MDB_txn *t;
	MDB_val k, d;
	int rc;

	k.mv_size = (size_t)snprintf(key, sizeof(key), "%s/q0", row);
	k.mv_data = key;
	if ((rc = mdb_txn_begin(f->env, NULL, MDB_RDONLY, &t)))
		die("check", mdb_strerror(rc));
	rc = mdb_get(t, f->dbi, &k, &d);
	if (rc && rc != MDB_NOTFOUND)
		die("check", mdb_strerror(rc));
	if (rc == 0 && d.mv_size != 16)
		die("check", "a value is not 16 bytes");
	if (rc == 0)
		memcpy(v, d.mv_data, 16);
	mdb_txn_abort(t);
	return rc == 0;
}

/* Give every account BAL_INIT, on both of f's stores. */
void load_accounts(fixture *f)
{
	char row[32], key[48], v[16];
	MDB_txn *t;
	int rc;

	bal_encode(v, BAL_INIT);
	for (int i = 0; i < BAL_ACCOUNTS; i += 100) {
		mrtx_txn *txn;

		if (mrtx_begin(f->db, &txn))
			die("load", mrtx_errmsg());
		for (int j = i; j < i + 100 && j < BAL_ACCOUNTS; j++) {
			snprintf(row, sizeof(row), "r%08d", j);
			if (mrtx_put(txn, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q0"), MRTX_BYTES(v, 16)))
				die("load", mrtx_errmsg());
		}
		if (mrtx_commit(txn))
			die("load", mrtx_errmsg());
	}
	if ((rc = mdb_txn_begin(f->env, NULL, 0, &t)))
		die("load", mdb_strerror(rc));
	for (int i = 0; i < BAL_ACCOUNTS && rc == 0; i++) {
		MDB_val k, d = { 16, v };

		k.mv_size = (size_t)snprintf(key, sizeof(key), "r%08d/q0", i);
		k.mv_data = key;
		rc = mdb_put(t, f->dbi, &k, &d, 0);
	}
	if (rc || (rc = mdb_txn_commit(t)))
		die("load", mdb_strerror(rc));
}

void bank_open(bcfg *c, int durability, fixture *f, rocks **rp, rocks **ro)
{
	fixture_open(c, f, durability);
	*rp = rocks_open(c, ROCKS_PESSIMISTIC, durability);
	*ro = rocks_open(c, ROCKS_OPTIMISTIC, durability);
	load_accounts(f);
	if (*rp && *ro) {
		rocks_load_accounts(*rp);
		rocks_load_accounts(*ro);
	}
}

void bank_close(fixture *f, rocks *rp, rocks *ro)
{
	rocks_close(rp);
	rocks_close(ro);
	fixture_close(f);
}

/* The balances on f's mrtx (SIDE_MRTX) or LMDB store. */
void check_fixture_balances(fixture *f, int who)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db = f->db;

	if (who != SIDE_MRTX) {
		check_balances("lmdb", read_lmdb, f);
		return;
	}
	if (!db && mrtx_open(&db, f->mdir, &o))
		die("check", mrtx_errmsg());
	check_balances("mrtx", read_mrtx, db);
	if (db != f->db)
		mrtx_close(db);
}

long check_fixture_groups(fixture *f, int use_mrtx, const mlog *lg)
{
	return use_mrtx ? check_groups("mrtx", read_mrtx, f->db, lg) :
	                  check_groups("lmdb", read_lmdb, f, lg);
}

/* ------------------------------------------------------ thread phases */

typedef struct tphase {
	fixture *f;
	int mrtx, id;
	volatile int *stop;
	mthr *t;
} tphase;

struct multi_payload {
	char rows[4][32];
	char v[17];
};

static int multi_fn(mrtx_txn *txn, void *p)
{
	struct multi_payload *m = p;
	int rc = 0;

	for (int r = 0; r < 4 && rc == 0; r++)
		rc = mrtx_put(txn, "t", MRTX_CSTR(m->rows[r]), "f", MRTX_CSTR("q0"),
		              MRTX_BYTES(m->v, 16));
	return rc;
}

static void *multi_thread(void *arg)
{
	tphase *p = arg;
	struct multi_payload m;

	while (!*p->stop) {
		int g = multi_pick(p->t, p->id, m.rows, m.v), rc;

		rc = p->mrtx ? mrtx_run(p->f->db, multi_fn, &m, 100) :
		               lmdb_put_rows(p->f, m.rows, 4, 1, m.v);
		if (rc)
			die("multi_row", p->mrtx ? mrtx_errmsg() : mdb_strerror(rc));
		multi_done(p->t, g);
	}
	return NULL;
}

/* MULTI_THREADS threads for secs; lg carries each thread's sequence. */
double run_threads(fixture *f, int use_mrtx, double secs, mlog *lg)
{
	pthread_t th[MULTI_THREADS];
	tphase p[MULTI_THREADS];
	volatile int stop = 0;
	double t0 = now_s();

	for (int i = 0; i < MULTI_THREADS; i++) {
		p[i] = (tphase){ f, use_mrtx, i, &stop, &lg->th[i] };
		pthread_create(&th[i], NULL, multi_thread, &p[i]);
	}
	while (now_s() - t0 < secs)
		usleep(10000);
	stop = 1;
	for (int i = 0; i < MULTI_THREADS; i++)
		pthread_join(th[i], NULL);
	return now_s() - t0;
}

/* ------------------------------------------------- interactive (procs) */

/* A transfer: read both balances, think, write a - x and b + x. */
int inter_fn(mrtx_txn *txn, void *p)
{
	struct inter_payload *ip = p;
	char ra[32], rb[32], v[16];
	mrtx_bytes va, vb;
	long long ba, bb;
	int rc;

	snprintf(ra, sizeof(ra), "r%08d", ip->a);
	snprintf(rb, sizeof(rb), "r%08d", ip->b);
	if ((rc = mrtx_get(txn, "t", MRTX_CSTR(ra), "f", MRTX_CSTR("q0"), &va)) ||
	    (rc = mrtx_get(txn, "t", MRTX_CSTR(rb), "f", MRTX_CSTR("q0"), &vb)))
		return rc;
	if (bal_decode(va.data, va.size, &ba) || bal_decode(vb.data, vb.size, &bb)) {
		ip->bad = 1;
		return MRTX_ECORRUPT;
	}
	usleep(200); /* think time */
	bal_encode(v, ba - ip->x);
	if ((rc = mrtx_put(txn, "t", MRTX_CSTR(ra), "f", MRTX_CSTR("q0"), MRTX_BYTES(v, 16))))
		return rc;
	bal_encode(v, bb + ip->x);
	return mrtx_put(txn, "t", MRTX_CSTR(rb), "f", MRTX_CSTR("q0"), MRTX_BYTES(v, 16));
}

/* 0, an LMDB error, or -1 (an account missing or not a balance) */
int inter_lmdb(MDB_env *env, MDB_dbi dbi, int a, int b, int x)
{
	char ka[32], kb[32], v[16];
	long long ba, bb;
	MDB_val k, d;
	MDB_txn *t;
	int rc;

	snprintf(ka, sizeof(ka), "r%08d/q0", a);
	snprintf(kb, sizeof(kb), "r%08d/q0", b);
	if ((rc = mdb_txn_begin(env, NULL, 0, &t)))
		return rc;
	k = (MDB_val){ strlen(ka), ka };
	if ((rc = mdb_get(t, dbi, &k, &d)) || bal_decode(d.mv_data, d.mv_size, &ba))
		goto fail;
	k = (MDB_val){ strlen(kb), kb };
	if ((rc = mdb_get(t, dbi, &k, &d)) || bal_decode(d.mv_data, d.mv_size, &bb))
		goto fail;
	usleep(200); /* think time with the write lock held */
	bal_encode(v, ba - x);
	d = (MDB_val){ sizeof(v), v };
	k = (MDB_val){ strlen(ka), ka };
	if ((rc = mdb_put(t, dbi, &k, &d, 0)))
		goto fail;
	bal_encode(v, bb + x);
	d = (MDB_val){ sizeof(v), v };
	k = (MDB_val){ strlen(kb), kb };
	if ((rc = mdb_put(t, dbi, &k, &d, 0)))
		goto fail;
	return mdb_txn_commit(t);
fail:
	mdb_txn_abort(t);
	return rc ? rc : -1;
}

static void child_fail(const char *who, const char *msg)
{
	fprintf(stderr, "mrtx: bench: interactive (%s): %s\n", who, msg);
	_exit(4);
}

static void inter_child(const fixture *f, int use_mrtx, int durability, int id,
                        volatile long *ops, volatile int *stop)
{
	struct inter_payload ip = { 99u + (unsigned)id, 0, 0, 0, 0 };
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db = NULL;
	MDB_env *env = NULL;
	MDB_txn *t;
	MDB_dbi dbi = 0;

	o.durability = durability;
	if (use_mrtx ? mrtx_open(&db, f->mdir, &o) != 0 :
	    (mdb_env_create(&env) || mdb_env_set_maxreaders(env, 1022) ||
	     mdb_env_open(env, f->ldir, env_flags(durability), 0600) ||
	     mdb_txn_begin(env, NULL, MDB_RDONLY, &t) || mdb_dbi_open(t, NULL, 0, &dbi) ||
	     mdb_txn_commit(t)))
		_exit(3);
	while (!*stop) {
		int rc;

		inter_pick(&ip.seed, &ip.a, &ip.b, &ip.x);
		rc = use_mrtx ? mrtx_run(db, inter_fn, &ip, 1000) :
		                inter_lmdb(env, dbi, ip.a, ip.b, ip.x);
		if (rc && use_mrtx)
			child_fail("mrtx", rc == MRTX_NOTFOUND ? "an account is missing" :
			           ip.bad ? "an account holds no balance" : mrtx_errmsg());
		if (rc)
			child_fail("lmdb", rc == -1 || rc == MDB_NOTFOUND ?
			           "an account is missing or holds no balance" : mdb_strerror(rc));
		__atomic_add_fetch(ops, 1, __ATOMIC_RELAXED);
	}
	if (use_mrtx)
		mrtx_close(db);
	else
		mdb_env_close(env);
	_exit(0);
}

double run_procs(fixture *f, int who, const char *sqlite_path, int durability, int nprocs,
                 double secs, pcount *cnt)
{
	struct shm { long ops, retries; int stop; } *shm;
	pid_t pids[64];
	double t0, t;
	int bad = 0;

	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED)
		die("mmap", strerror(errno));
	memset(shm, 0, sizeof(*shm));
	fflush(NULL); /* nothing buffered is written twice by a child */
	t0 = now_s();
	for (int i = 0; i < nprocs; i++)
		if ((pids[i] = fork()) == 0) {
			if (who == SIDE_SQLITE_IMM || who == SIDE_SQLITE_DEF)
				sqlite_inter_child(sqlite_path, who == SIDE_SQLITE_IMM, durability, i,
				                   &shm->ops, &shm->retries, &shm->stop);
			inter_child(f, who == SIDE_MRTX, durability, i, &shm->ops, &shm->stop);
		}
	while (now_s() - t0 < secs)
		usleep(10000);
	shm->stop = 1;
	for (int i = 0; i < nprocs; i++) {
		int st;

		waitpid(pids[i], &st, 0);
		bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	}
	t = now_s() - t0;
	if (bad)
		die("interactive", "a worker process failed");
	if (cnt) {
		cnt->txns += shm->ops;
		cnt->retries += shm->retries;
	}
	t = (double)shm->ops / t;
	munmap(shm, sizeof(*shm));
	return t;
}
