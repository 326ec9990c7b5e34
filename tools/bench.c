/*
 * bench.c - `mrtx bench`: what the protocol costs against plain LMDB.
 *
 * Every workload runs mrtx and a native-LMDB baseline in the same process
 * run, alternating in rounds on fresh stores, so machine noise hits both
 * sides alike; the report is ops/s for both and their ratio.  The
 * baselines are the only place outside storage/ that includes <lmdb.h>.
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
#include "txn/admin.h"

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

char *fresh_dir(bcfg *c, const char *kind)
{
	char *p;

	if (asprintf(&p, "%s/%s-%d", c->dir, kind, c->seq++) < 0)
		die("alloc", "out of memory");
	if (mkdir(p, 0700) && errno != EEXIST)
		die("mkdir", strerror(errno));
	return p;
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

static int lmdb_put_rows(fixture *f, char rows[][32], int nrows, int cells)
{
	char key[32], v[16];
	MDB_txn *t;
	int rc;

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
	return lmdb_put_rows(f, row, 1, 4);
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

/* ------------------------------------------------------ thread phases */

typedef struct tphase {
	fixture *f;
	int mrtx, nthreads, id;
	volatile int *stop;
	long ops;
} tphase;

struct multi_payload {
	char rows[4][32];
};

static int multi_fn(mrtx_txn *txn, void *p)
{
	struct multi_payload *m = p;
	char v[16];
	int rc = 0;

	memset(v, 'v', sizeof(v));
	for (int r = 0; r < 4 && rc == 0; r++)
		rc = mrtx_put(txn, "t", MRTX_CSTR(m->rows[r]), "f", MRTX_CSTR("q0"),
		              MRTX_BYTES(v, sizeof(v)));
	return rc;
}

static void *multi_thread(void *arg)
{
	tphase *p = arg;
	unsigned seed = 7u + (unsigned)p->id;
	struct multi_payload m;

	while (!*p->stop) {
		int rc;

		for (int r = 0; r < 4; r++)
			snprintf(m.rows[r], sizeof(m.rows[r]), "m%07d", rand_r(&seed) % 100000);
		rc = p->mrtx ? mrtx_run(p->f->db, multi_fn, &m, 100) :
		               lmdb_put_rows(p->f, m.rows, 4, 1);
		if (rc)
			die("multi_row", p->mrtx ? mrtx_errmsg() : mdb_strerror(rc));
		p->ops++;
	}
	return NULL;
}

double run_threads(fixture *f, int use_mrtx, int nthreads, double secs)
{
	pthread_t th[64];
	tphase p[64];
	volatile int stop = 0;
	double t0 = now_s(), t;
	long total = 0;

	for (int i = 0; i < nthreads; i++) {
		p[i] = (tphase){ f, use_mrtx, nthreads, i, &stop, 0 };
		pthread_create(&th[i], NULL, multi_thread, &p[i]);
	}
	while (now_s() - t0 < secs)
		usleep(10000);
	stop = 1;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		total += p[i].ops;
	}
	t = now_s() - t0;
	return (double)total / t;
}

/* ------------------------------------------------- interactive (procs) */

struct inter_payload {
	unsigned seed;
	int a, b;
};

static int inter_fn(mrtx_txn *txn, void *p)
{
	struct inter_payload *ip = p;
	char ra[32], rb[32], v[16];
	mrtx_bytes x;
	int rc;

	snprintf(ra, sizeof(ra), "r%08d", ip->a);
	snprintf(rb, sizeof(rb), "r%08d", ip->b);
	if ((rc = mrtx_get(txn, "t", MRTX_CSTR(ra), "f", MRTX_CSTR("q0"), &x)) &&
	    rc != MRTX_NOTFOUND)
		return rc;
	if ((rc = mrtx_get(txn, "t", MRTX_CSTR(rb), "f", MRTX_CSTR("q0"), &x)) &&
	    rc != MRTX_NOTFOUND)
		return rc;
	usleep(200); /* think time */
	memset(v, 'w', sizeof(v));
	if ((rc = mrtx_put(txn, "t", MRTX_CSTR(ra), "f", MRTX_CSTR("q0"), MRTX_BYTES(v, 16))))
		return rc;
	return mrtx_put(txn, "t", MRTX_CSTR(rb), "f", MRTX_CSTR("q0"), MRTX_BYTES(v, 16));
}

static int inter_lmdb(MDB_env *env, MDB_dbi dbi, int a, int b)
{
	char ka[32], kb[32], v[16];
	MDB_val k, d;
	MDB_txn *t;
	int rc;

	snprintf(ka, sizeof(ka), "r%08d/q0", a);
	snprintf(kb, sizeof(kb), "r%08d/q0", b);
	if ((rc = mdb_txn_begin(env, NULL, 0, &t)))
		return rc;
	k = (MDB_val){ strlen(ka), ka };
	mdb_get(t, dbi, &k, &d);
	k = (MDB_val){ strlen(kb), kb };
	mdb_get(t, dbi, &k, &d);
	usleep(200); /* think time with the write lock held */
	memset(v, 'w', sizeof(v));
	d = (MDB_val){ sizeof(v), v };
	k = (MDB_val){ strlen(ka), ka };
	if (!(rc = mdb_put(t, dbi, &k, &d, 0))) {
		k = (MDB_val){ strlen(kb), kb };
		rc = mdb_put(t, dbi, &k, &d, 0);
	}
	if (rc) {
		mdb_txn_abort(t);
		return rc;
	}
	return mdb_txn_commit(t);
}

static void inter_child(const fixture *f, int use_mrtx, int durability, int id,
                        volatile long *ops, volatile int *stop)
{
	struct inter_payload ip = { 99u + (unsigned)id, 0, 0 };
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

		ip.a = rand_r(&ip.seed) % 1000;
		do
			ip.b = rand_r(&ip.seed) % 1000;
		while (ip.b == ip.a);
		rc = use_mrtx ? mrtx_run(db, inter_fn, &ip, 1000) : inter_lmdb(env, dbi, ip.a, ip.b);
		if (rc)
			_exit(4);
		__atomic_add_fetch(ops, 1, __ATOMIC_RELAXED);
	}
	_exit(0);
}

double run_procs(fixture *f, int use_mrtx, int durability, int nprocs, double secs)
{
	struct shm { long ops; int stop; } *shm;
	pid_t pids[64];
	double t0, t;
	int bad = 0;

	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED)
		die("mmap", strerror(errno));
	memset(shm, 0, sizeof(*shm));
	t0 = now_s();
	for (int i = 0; i < nprocs; i++)
		if ((pids[i] = fork()) == 0)
			inter_child(f, use_mrtx, durability, i, &shm->ops, &shm->stop);
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
	t = (double)shm->ops / t;
	munmap(shm, sizeof(*shm));
	return t;
}

