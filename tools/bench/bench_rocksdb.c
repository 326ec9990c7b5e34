/*
 * bench_rocksdb.c - the RocksDB baseline of `mrtx bench` (multi_row and
 * interactive), in the same rounds as mrtx, LMDB and SQLite
 * (bench_main.c), through RocksDB's C API (<rocksdb/c.h>) only.
 *
 * Two stores per workload, fresh, under the bench directory: a
 * TransactionDB (pessimistic: a key is locked when first read for update
 * or written, until commit) and an OptimisticTransactionDB (no locks: the
 * keys read for update or written are validated at commit, which fails
 * with Busy when another transaction wrote one since).  Both at RocksDB's
 * defaults (options, lock timeouts, no deadlock detection), with the WAL
 * on: MRTX_SYNC syncs the WAL at every commit (rocksdb_writeoptions_set_sync),
 * MRTX_NOSYNC leaves it to the OS, as LMDB's MDB_NOSYNC.  Keys are
 * LMDB's: "row/q0", 16-byte values.
 *
 * A RocksDB store opens in one process only, so where mrtx runs processes
 * (interactive: 8) RocksDB runs as many threads of this process, sharing
 * one handle, which is how RocksDB is meant to be used.
 *
 * interactive: read both balances for update, think 200 us, write both,
 * commit.  The pessimistic side reads the lower-numbered account first,
 * so two transfers over the same accounts queue instead of deadlocking
 * (RocksDB detects no deadlock by default: each would wait out its
 * 1-second lock timeout); the optimistic side reads in the transfer's
 * order, as mrtx does.  multi_row: the 4 rows' puts, commit.  A Busy,
 * TimedOut or TryAgain status anywhere rolls the transaction back and
 * runs it again from the start (counted as a retry).
 */
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_int.h"

#define MAX_RETRIES 100000
#define MAX_THREADS 64

struct rocks {
	int kind;
	char *dir;
	rocksdb_options_t *opt;
	rocksdb_transactiondb_options_t *tdb_opt;
	rocksdb_transactiondb_t *tdb;       /* ROCKS_PESSIMISTIC */
	rocksdb_optimistictransactiondb_t *odb; /* ROCKS_OPTIMISTIC */
	rocksdb_transaction_options_t *txn_opt;
	rocksdb_optimistictransaction_options_t *otxn_opt;
	/* audits: transactions that take a snapshot at their begin */
	rocksdb_transaction_options_t *snap_txn_opt;
	rocksdb_optimistictransaction_options_t *snap_otxn_opt;
	rocksdb_writeoptions_t *wo;
	rocksdb_readoptions_t *ro;
};

static const char *kind_name(const rocks *r)
{
	return r->kind == ROCKS_PESSIMISTIC ? "rocksdb pessimistic" : "rocksdb optimistic";
}

/* Dies with err (which RocksDB allocated) unless it is NULL. */
static void rk_check(const rocks *r, const char *step, char *err)
{
	char msg[512];

	if (!err)
		return;
	snprintf(msg, sizeof(msg), "%s: %s", kind_name(r), err);
	rocksdb_free(err);
	die(step, msg);
}

/*
 * 1 when err says the transaction met another one and may succeed if run
 * again: Busy (an optimistic conflict, a pessimistic write conflict),
 * TimedOut (a lock wait) or TryAgain (too little memtable history to
 * validate); frees err.  Any other status is fatal.
 */
static int rk_retryable(const rocks *r, const char *step, char *err)
{
	static const char *const codes[] = { "Resource busy", "Operation timed out",
	                                     "Operation failed. Try again." };

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (strncmp(err, codes[i], strlen(codes[i])) == 0) {
			rocksdb_free(err);
			return 1;
		}
	rk_check(r, step, err);
	return 0;
}

int rocks_built(void)
{
	return 1;
}

rocks *rocks_open(bcfg *c, int kind, int durability)
{
	rocks *r = calloc(1, sizeof(*r));
	char *err = NULL;

	if (!r)
		die("alloc", "out of memory");
	r->kind = kind;
	r->dir = fresh_dir(c, kind == ROCKS_PESSIMISTIC ? "rocksdb-pess" : "rocksdb-opt");
	r->opt = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(r->opt, 1);
	/* an earlier run's store of the same name goes first */
	rocksdb_destroy_db(r->opt, r->dir, &err);
	rk_check(r, "rocksdb destroy", err);
	if (kind == ROCKS_PESSIMISTIC) {
		r->tdb_opt = rocksdb_transactiondb_options_create();
		r->txn_opt = rocksdb_transaction_options_create();
		r->snap_txn_opt = rocksdb_transaction_options_create();
		rocksdb_transaction_options_set_set_snapshot(r->snap_txn_opt, 1);
		r->tdb = rocksdb_transactiondb_open(r->opt, r->tdb_opt, r->dir, &err);
	} else {
		r->otxn_opt = rocksdb_optimistictransaction_options_create();
		r->snap_otxn_opt = rocksdb_optimistictransaction_options_create();
		rocksdb_optimistictransaction_options_set_set_snapshot(r->snap_otxn_opt, 1);
		r->odb = rocksdb_optimistictransactiondb_open(r->opt, r->dir, &err);
	}
	rk_check(r, "rocksdb open", err);
	r->wo = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(r->wo, durability == MRTX_SYNC);
	r->ro = rocksdb_readoptions_create();
	return r;
}

void rocks_close(rocks *r)
{
	if (!r)
		return;
	if (r->tdb)
		rocksdb_transactiondb_close(r->tdb);
	if (r->odb)
		rocksdb_optimistictransactiondb_close(r->odb);
	if (r->tdb_opt)
		rocksdb_transactiondb_options_destroy(r->tdb_opt);
	if (r->txn_opt)
		rocksdb_transaction_options_destroy(r->txn_opt);
	if (r->otxn_opt)
		rocksdb_optimistictransaction_options_destroy(r->otxn_opt);
	if (r->snap_txn_opt)
		rocksdb_transaction_options_destroy(r->snap_txn_opt);
	if (r->snap_otxn_opt)
		rocksdb_optimistictransaction_options_destroy(r->snap_otxn_opt);
	rocksdb_writeoptions_destroy(r->wo);
	rocksdb_readoptions_destroy(r->ro);
	rocksdb_options_destroy(r->opt);
	free(r->dir);
	free(r);
}

/* A transaction, reusing old (may be NULL) when given. */
static rocksdb_transaction_t *rk_begin(rocks *r, rocksdb_transaction_t *old)
{
	rocksdb_transaction_t *t =
		r->kind == ROCKS_PESSIMISTIC ?
			rocksdb_transaction_begin(r->tdb, r->wo, r->txn_opt, old) :
			rocksdb_optimistictransaction_begin(r->odb, r->wo, r->otxn_opt, old);

	if (!t)
		die("rocksdb begin", "no transaction");
	return t;
}

/* Undo a failed attempt; a rollback that fails leaves nothing to retry. */
static void rk_rollback(rocks *r, rocksdb_transaction_t *t)
{
	char *err = NULL;

	rocksdb_transaction_rollback(t, &err);
	rk_check(r, "rocksdb rollback", err);
}

void rocks_load_accounts(rocks *r)
{
	rocksdb_transaction_t *t = rk_begin(r, NULL);
	char key[32], v[16], *err = NULL;

	bal_encode(v, BAL_INIT);
	for (int i = 0; i < BAL_ACCOUNTS && !err; i++) {
		int n = snprintf(key, sizeof(key), "r%08d/q0", i);

		rocksdb_transaction_put(t, key, (size_t)n, v, sizeof(v), &err);
	}
	rk_check(r, "rocksdb load", err);
	rocksdb_transaction_commit(t, &err);
	rk_check(r, "rocksdb load", err);
	rocksdb_transaction_destroy(t);
}

/* ------------------------------------------------------- interactive */

typedef struct rthr {
	rocks *r;
	int id;
	volatile int *stop;
	long ops, retries;
	mthr *t; /* multi_row: this thread's log */
	int writers; /* rocks_run_mixed: threads below this id transfer */
} rthr;

/* One attempt at a transfer in *tp (begun here, kept for reuse): 0 when
 * it committed, 1 when it met another transaction (rolled back). */
static int transfer_once(rocks *r, rocksdb_transaction_t **tp, int a, int b, int x)
{
	/* the order the accounts are read (locked, pessimistic) in */
	int first = r->kind == ROCKS_PESSIMISTIC && b < a ? 1 : 0;
	char keys[2][32], v[16], *err = NULL;
	size_t klen[2];
	long long bal[2];
	rocksdb_transaction_t *t = *tp = rk_begin(r, *tp);

	klen[0] = (size_t)snprintf(keys[0], sizeof(keys[0]), "r%08d/q0", a);
	klen[1] = (size_t)snprintf(keys[1], sizeof(keys[1]), "r%08d/q0", b);
	for (int j = 0; j < 2; j++) {
		int i = j ^ first;
		size_t vlen = 0;
		char *p = rocksdb_transaction_get_for_update(t, r->ro, keys[i], klen[i], &vlen, 1,
		                                             &err);

		if (err)
			goto conflict;
		if (!p)
			die("interactive check", "rocksdb: an account is missing");
		if (bal_decode(p, vlen, &bal[i])) {
			rocksdb_free(p);
			die("interactive check", "rocksdb: an account holds no balance");
		}
		rocksdb_free(p);
	}
	usleep(200); /* think time */
	for (int i = 0; i < 2; i++) {
		bal_encode(v, i == 0 ? bal[0] - x : bal[1] + x);
		rocksdb_transaction_put(t, keys[i], klen[i], v, sizeof(v), &err);
		if (err)
			goto conflict;
	}
	rocksdb_transaction_commit(t, &err);
	if (!err)
		return 0;
conflict:
	rk_retryable(r, "interactive", err);
	rk_rollback(r, t);
	return 1;
}

static void *transfer_thread(void *arg)
{
	rthr *p = arg;
	unsigned seed = 99u + (unsigned)p->id;
	rocksdb_transaction_t *t = NULL;

	while (!*p->stop) {
		int a, b, x, n = 0;

		inter_pick(&seed, &a, &b, &x);
		while (transfer_once(p->r, &t, a, b, x)) {
			p->retries++;
			if (++n == MAX_RETRIES)
				die("interactive", "a rocksdb transfer conflicted 100000 times in a row");
		}
		p->ops++;
	}
	if (t)
		rocksdb_transaction_destroy(t);
	return NULL;
}

/* nthreads threads running fn over p[] for secs; returns the seconds. */
static double run_for(void *(*fn)(void *), rthr *p, int nthreads, double secs)
{
	pthread_t th[MAX_THREADS];
	double t0 = now_s();

	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, fn, &p[i]))
			die("rocksdb", "cannot start a thread");
	while (now_s() - t0 < secs)
		usleep(10000);
	*p[0].stop = 1;
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	return now_s() - t0;
}

double rocks_run_transfers(rocks *r, int nthreads, double secs, pcount *cnt)
{
	rthr p[MAX_THREADS];
	volatile int stop = 0;
	long ops = 0;
	double t;

	if (nthreads < 1 || nthreads > MAX_THREADS)
		die("interactive", "rocksdb: bad thread count");
	for (int i = 0; i < nthreads; i++)
		p[i] = (rthr){ r, i, &stop, 0, 0, NULL, nthreads };
	t = run_for(transfer_thread, p, nthreads, secs);
	for (int i = 0; i < nthreads; i++) {
		ops += p[i].ops;
		if (cnt) {
			cnt->txns += p[i].ops;
			cnt->retries += p[i].retries;
		}
	}
	return (double)ops / t;
}

/*
 * One audit: a transaction with a snapshot (set at its begin) iterates the
 * BAL_ACCOUNTS accounts with an iterator on that snapshot, as a RocksDB
 * user reads a consistent range in a transaction, and dies unless they
 * sum to BAL_ACCOUNTS x BAL_INIT.
 */
static void audit_once(rocks *r, rocksdb_transaction_t **tp, rocksdb_readoptions_t *ro)
{
	rocksdb_transaction_t *t = *tp =
		r->kind == ROCKS_PESSIMISTIC ?
			rocksdb_transaction_begin(r->tdb, r->wo, r->snap_txn_opt, *tp) :
			rocksdb_optimistictransaction_begin(r->odb, r->wo, r->snap_otxn_opt, *tp);
	const rocksdb_snapshot_t *snap;
	rocksdb_iterator_t *it;
	long long sum = 0, bal;
	long n = 0;
	char *err = NULL;

	if (!t)
		die("rocksdb begin", "no transaction");
	snap = rocksdb_transaction_get_snapshot(t);
	rocksdb_readoptions_set_snapshot(ro, snap);
	it = rocksdb_transaction_create_iterator(t, ro);
	for (rocksdb_iter_seek(it, "r", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl), *v = rocksdb_iter_value(it, &vl);

		if (kl == 0 || k[0] != 'r')
			break;
		if (bal_decode(v, vl, &bal))
			die("audit check", "rocksdb: an account holds no balance");
		sum += bal;
		n++;
	}
	rocksdb_iter_get_error(it, &err);
	rk_check(r, "rocksdb audit", err);
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_set_snapshot(ro, NULL);
	rocksdb_free((void *)snap);
	rocksdb_transaction_commit(t, &err);
	rk_check(r, "rocksdb audit", err);
	if (n != BAL_ACCOUNTS || sum != (long long)BAL_ACCOUNTS * BAL_INIT)
		die("audit check", "rocksdb: a snapshot's balances do not sum to the total");
}

static void *audit_thread(void *arg)
{
	rthr *p = arg;
	rocksdb_transaction_t *t = NULL;
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();

	while (!*p->stop) {
		audit_once(p->r, &t, ro);
		p->ops++;
	}
	if (t)
		rocksdb_transaction_destroy(t);
	rocksdb_readoptions_destroy(ro);
	return NULL;
}

/* p[i] runs audit_thread for i >= writers, transfer_thread below */
static void *mixed_thread(void *arg)
{
	rthr *p = arg;

	return p->id >= p->writers ? audit_thread(arg) : transfer_thread(arg);
}

double rocks_run_mixed(rocks *r, int writers, int auditors, double secs, pcount *cnt,
                       long *audits)
{
	rthr p[MAX_THREADS];
	volatile int stop = 0;
	double t;

	if (writers < 0 || auditors < 0 || writers + auditors < 1 ||
	    writers + auditors > MAX_THREADS)
		die("transfers", "rocksdb: bad thread count");
	for (int i = 0; i < writers + auditors; i++)
		p[i] = (rthr){ r, i, &stop, 0, 0, NULL, writers };
	t = run_for(mixed_thread, p, writers + auditors, secs);
	for (int i = 0; i < writers + auditors; i++)
		if (i < writers) {
			cnt->txns += p[i].ops;
			cnt->retries += p[i].retries;
		} else {
			*audits += p[i].ops;
		}
	return t;
}

/* --------------------------------------------------------- multi_row */

static int multi_once(rocks *r, rocksdb_transaction_t **tp, char rows[4][32], const char *v)
{
	rocksdb_transaction_t *t = *tp = rk_begin(r, *tp);
	char key[48], *err = NULL;

	for (int j = 0; j < 4 && !err; j++) {
		int n = snprintf(key, sizeof(key), "%.31s/q0", rows[j]);

		rocksdb_transaction_put(t, key, (size_t)n, v, 16, &err);
	}
	if (!err)
		rocksdb_transaction_commit(t, &err);
	if (!err)
		return 0;
	rk_retryable(r, "multi_row", err);
	rk_rollback(r, t);
	return 1;
}

static void *multi_thread(void *arg)
{
	rthr *p = arg;
	rocksdb_transaction_t *t = NULL;
	char rows[4][32], v[17];

	while (!*p->stop) {
		int g = multi_pick(p->t, p->id, rows, v), n = 0;

		while (multi_once(p->r, &t, rows, v)) {
			p->retries++;
			if (++n == MAX_RETRIES)
				die("multi_row", "a rocksdb transaction conflicted 100000 times in a row");
		}
		multi_done(p->t, g);
	}
	if (t)
		rocksdb_transaction_destroy(t);
	return NULL;
}

double rocks_run_threads(rocks *r, double secs, mlog *lg)
{
	rthr p[MULTI_THREADS];
	volatile int stop = 0;
	double t;

	for (int i = 0; i < MULTI_THREADS; i++)
		p[i] = (rthr){ r, i, &stop, 0, 0, &lg->th[i], 0 };
	t = run_for(multi_thread, p, MULTI_THREADS, secs);
	for (int i = 0; i < MULTI_THREADS; i++)
		lg->retries += p[i].retries;
	return t;
}

/* ------------------------------------------------------------ checks */

/* Reads at one snapshot of the whole store (no writer runs meanwhile,
 * but the check should not depend on that). */
typedef struct rreader {
	rocks *r;
	rocksdb_t *base; /* optimistic: the DB under the transaction layer */
	const rocksdb_snapshot_t *snap;
	rocksdb_readoptions_t *ro;
} rreader;

static void reader_open(rreader *rd, rocks *r)
{
	memset(rd, 0, sizeof(*rd));
	rd->r = r;
	if (r->kind == ROCKS_PESSIMISTIC) {
		rd->snap = rocksdb_transactiondb_create_snapshot(r->tdb);
	} else {
		rd->base = rocksdb_optimistictransactiondb_get_base_db(r->odb);
		rd->snap = rocksdb_create_snapshot(rd->base);
	}
	rd->ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_snapshot(rd->ro, rd->snap);
}

static void reader_close(rreader *rd)
{
	rocksdb_readoptions_destroy(rd->ro);
	if (rd->base) {
		rocksdb_release_snapshot(rd->base, rd->snap);
		rocksdb_optimistictransactiondb_close_base_db(rd->base);
	} else {
		rocksdb_transactiondb_release_snapshot(rd->r->tdb, rd->snap);
	}
}

static int read_rocks(void *ctx, const char *row, char v[16])
{
	rreader *rd = ctx;
	char key[48], *err = NULL, *p;
	size_t vlen = 0;
	int n = snprintf(key, sizeof(key), "%s/q0", row);

	p = rd->base ? rocksdb_get(rd->base, rd->ro, key, (size_t)n, &vlen, &err) :
	               rocksdb_transactiondb_get(rd->r->tdb, rd->ro, key, (size_t)n, &vlen, &err);
	rk_check(rd->r, "check", err);
	if (!p)
		return 0;
	if (vlen != 16) {
		rocksdb_free(p);
		die("check", "a rocksdb value is not 16 bytes");
	}
	memcpy(v, p, 16);
	rocksdb_free(p);
	return 1;
}

void rocks_check_balances(rocks *r)
{
	rreader rd;

	reader_open(&rd, r);
	check_balances(kind_name(r), read_rocks, &rd);
	reader_close(&rd);
}

long rocks_check_groups(rocks *r, const mlog *lg)
{
	rreader rd;
	long n;

	reader_open(&rd, r);
	n = check_groups(kind_name(r), read_rocks, &rd, lg);
	reader_close(&rd);
	return n;
}

/* ----------------------------------------------- scaling's blind puts */

/* One attempt at rows' puts in *tp (begun here, kept for reuse): 0 when
 * it committed, 1 when it met another transaction (rolled back). */
static int puts_once(rocks *r, rocksdb_transaction_t **tp, char rows[][32], int n,
                     const char *v)
{
	rocksdb_transaction_t *t = *tp = rk_begin(r, *tp);
	char key[48], *err = NULL;

	for (int j = 0; j < n && !err; j++) {
		int k = snprintf(key, sizeof(key), "%.31s/q0", rows[j]);

		rocksdb_transaction_put(t, key, (size_t)k, v, 16, &err);
	}
	if (!err)
		rocksdb_transaction_commit(t, &err);
	if (!err)
		return 0;
	rk_retryable(r, "scaling", err);
	rk_rollback(r, t);
	return 1;
}

double rocks_run_puts(rocks *r, double secs, plog *lg)
{
	rocksdb_transaction_t *t = NULL;
	char rows[PUT_MAX][32], v[17];
	double t0 = now_s();

	do {
		int n = 0;

		plog_pick(lg, rows, v);
		while (puts_once(r, &t, rows, lg->nrows, v)) {
			lg->retries++;
			if (++n == MAX_RETRIES)
				die("scaling", "a rocksdb transaction conflicted 100000 times in a row");
		}
		lg->txns++;
	} while (now_s() - t0 < secs);
	if (t)
		rocksdb_transaction_destroy(t);
	return now_s() - t0;
}

long rocks_check_puts(rocks *r, const plog *lg)
{
	rreader rd;
	long n;

	reader_open(&rd, r);
	n = check_puts(kind_name(r), read_rocks, &rd, lg);
	reader_close(&rd);
	return n;
}
