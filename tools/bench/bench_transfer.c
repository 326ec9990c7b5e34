/*
 * bench_transfer.c - the threaded workloads of `mrtx bench` against
 * RocksDB's two transaction DBs, every side threads of this one process
 * sharing one handle (how RocksDB is used, and what an embedding
 * application does with mrtx):
 *
 *   transfers     8 threads of interactive's transfers (read two of 1,000
 *                 balances, think 200 us, write both), nosync, sync and
 *                 nometasync (RocksDB's WAL unsynced on that row);
 *   audit_writes  7 of those threads while an eighth audits: ...
 *   audit_scans   ... a transaction that reads every balance in one scan
 *                 (mrtx: mrtx_scan_open over the table; RocksDB: an
 *                 iterator on the transaction's snapshot) and checks the
 *                 sum, sync and nosync;
 *   scan          the audit alone, nosync: 1,000-row scans in a
 *                 transaction per second;
 *   scan_writing  the same with one transferring thread beside it.
 *
 * Sides alternate in rounds (mrtx, RocksDB pessimistic, RocksDB
 * optimistic), each on its own fresh store; every round ends with the
 * balances summed on that side, and every audit checks its own sum.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench_int.h"

#define MAX_THREADS 16

typedef struct xthr {
	mrtx_db *db;
	int id, audit;
	volatile int *stop;
	long ops;
} xthr;

struct audit_payload {
	long long sum;
	long n;
	int bad;
};

/* Read every balance in one scan and add them up. */
static int audit_fn(mrtx_txn *txn, void *p)
{
	struct audit_payload *a = p;
	mrtx_scan_spec spec = { .table = "t", .family = "f" };
	mrtx_scanner *s;
	mrtx_cell cell;
	long long bal;
	int rc;

	a->sum = 0;
	a->n = 0;
	if ((rc = mrtx_scan_open(txn, &spec, &s)))
		return rc;
	while ((rc = mrtx_scan_next(s, &cell)) == MRTX_OK) {
		if (bal_decode(cell.value.data, cell.value.size, &bal)) {
			a->bad = 1;
			rc = MRTX_ECORRUPT;
			break;
		}
		a->sum += bal;
		a->n++;
	}
	mrtx_scan_close(s);
	return rc == MRTX_NOTFOUND ? MRTX_OK : rc;
}

static void *xthread(void *arg)
{
	xthr *p = arg;
	struct inter_payload ip = { 99u + (unsigned)p->id, 0, 0, 0, 0 };
	struct audit_payload ap = { 0, 0, 0 };

	while (!*p->stop) {
		int rc;

		if (p->audit) {
			rc = mrtx_run(p->db, audit_fn, &ap, 1000);
			if (rc == 0 && (ap.n != BAL_ACCOUNTS ||
			                ap.sum != (long long)BAL_ACCOUNTS * BAL_INIT))
				die("audit check", "mrtx: a transaction's balances do not sum to the total");
		} else {
			inter_pick(&ip.seed, &ip.a, &ip.b, &ip.x);
			rc = mrtx_run(p->db, inter_fn, &ip, 1000);
		}
		if (rc)
			die(p->audit ? "audit" : "transfers",
			    rc == MRTX_NOTFOUND ? "an account is missing" :
			    ip.bad || ap.bad ? "an account holds no balance" : mrtx_errmsg());
		p->ops++;
	}
	return NULL;
}

/* writers + auditors threads on db for secs: returns the seconds */
static double mrtx_run_mixed(mrtx_db *db, int writers, int auditors, double secs,
                             long *txns, long *audits)
{
	pthread_t th[MAX_THREADS];
	xthr p[MAX_THREADS];
	volatile int stop = 0;
	double t0 = now_s();

	for (int i = 0; i < writers + auditors; i++) {
		p[i] = (xthr){ db, i, i >= writers, &stop, 0 };
		if (pthread_create(&th[i], NULL, xthread, &p[i]))
			die("transfers", "cannot start a thread");
	}
	while (now_s() - t0 < secs)
		usleep(10000);
	stop = 1;
	for (int i = 0; i < writers + auditors; i++) {
		pthread_join(th[i], NULL);
		*(p[i].audit ? audits : txns) += p[i].ops;
	}
	if (mrtx_flush(db))
		die("transfers", mrtx_errmsg());
	return now_s() - t0;
}

/* One side's totals over the rounds. */
typedef struct tally {
	double secs;
	pcount cnt;
	long audits;
} tally;

/*
 * One workload: writers and auditors on every side, rounds alternating;
 * fills r[0] (the writers' rate) and, with auditors, r[1] (audits/s),
 * with their RocksDB sides in k.  Returns the rows filled.
 */
static size_t mixed(bcfg *c, const char *name, const char *aname, int durability,
                    int writers, int auditors, double wtarget, double atarget, bres *r,
                    brocks *k)
{
	tally m = { 0 }, ps = { 0 }, os = { 0 };
	rocks *rp, *ro;
	fixture f;
	size_t n = 0;

	bank_open(c, durability, &f, &rp, &ro);
	for (int i = 0; i < c->rounds; i++) {
		m.secs += mrtx_run_mixed(f.db, writers, auditors, c->phase_s, &m.cnt.txns,
		                         &m.audits);
		check_fixture_balances(&f, SIDE_MRTX);
		if (rp && ro) {
			ps.secs += rocks_run_mixed(rp, writers, auditors, c->phase_s, &ps.cnt,
			                           &ps.audits);
			rocks_check_balances(rp);
			os.secs += rocks_run_mixed(ro, writers, auditors, c->phase_s, &os.cnt,
			                           &os.audits);
			rocks_check_balances(ro);
		}
	}
	bank_close(&f, rp, ro);
#define RATE(t, x) ((t).secs > 0 ? (double)(x) / (t).secs : 0)
#define RETRIES(t) ((t).cnt.txns ? (double)(t).cnt.retries / (double)(t).cnt.txns : 0)
	if (name) {
		r[n] = (bres){ name, mode_name(durability), RATE(m, m.cnt.txns), 0, 0, 0,
		               writers, 0, "txn/s" };
		k[n] = (brocks){ rp && ro, writers + auditors, RATE(ps, ps.cnt.txns),
		                 RATE(os, os.cnt.txns), RETRIES(ps), RETRIES(os), wtarget };
		n++;
	}
	if (auditors) {
		r[n] = (bres){ aname, mode_name(durability), RATE(m, m.audits), 0, 0, 0,
		               auditors, 0, "scans/s" };
		k[n] = (brocks){ rp && ro, writers + auditors, RATE(ps, ps.audits),
		                 RATE(os, os.audits), 0, 0, atarget };
		n++;
	}
#undef RATE
#undef RETRIES
	return n;
}

size_t wl_transfers(bcfg *c, const char *only, bres *r, brocks *k)
{
	size_t n = 0;

#define WANT(name) (!only || strcmp(only, name) == 0)
	if (WANT("transfers")) {
		n += mixed(c, "transfers", NULL, MRTX_NOSYNC, 8, 0, 0, 0, r + n, k + n);
		n += mixed(c, "transfers", NULL, MRTX_SYNC, 8, 0, 1.2, 0, r + n, k + n);
		/* (mrtx's middle level against RocksDB's WAL unsynced: both
		 * lose only the last commits in an OS crash, never half of one) */
		n += mixed(c, "transfers", NULL, MRTX_NOMETASYNC, 8, 0, 0, 0, r + n, k + n);
	}
	if (WANT("audit")) {
		n += mixed(c, "audit_writes", "audit_scans", MRTX_NOSYNC, 7, 1, 0, 0, r + n, k + n);
		n += mixed(c, "audit_writes", "audit_scans", MRTX_SYNC, 7, 1, 1.0, 1.5, r + n,
		           k + n);
	}
	if (WANT("scan")) {
		n += mixed(c, NULL, "scan", MRTX_NOSYNC, 0, 1, 0, 1.0, r + n, k + n);
		n += mixed(c, NULL, "scan_writing", MRTX_NOSYNC, 1, 1, 0, 1.0, r + n, k + n);
	}
#undef WANT
	return n;
}
