/*
 * bench_ts.c - `mrtx bench`'s figures of the store's timestamp source: the
 * `ts` workload (timestamps a second by 1 and by 8 threads), and the rate
 * of read-only transactions whose first read takes a snapshot (RADOS).
 * Reported alone: there is no baseline to hold them against.
 */
#include <pthread.h>
#include <stdint.h>

#include "bench_int.h"
#include "txn/admin.h"

typedef struct ts_arg {
	_Alignas(64) mrtx_db *db; /* (a line each: the counts are not shared) */
	double secs;
	long n;
} ts_arg;

static void *ts_loop(void *arg)
{
	ts_arg *a = arg;
	double t0 = now_s();
	uint64_t t;

	do {
		for (int i = 0; i < 16; i++, a->n++)
			if (admin_ts_next(a->db, &t))
				die("ts", mrtx_errmsg());
	} while (now_s() - t0 < a->secs);
	return NULL;
}

/* Read-only transactions of one get of a row that exists, committed, one
 * after another for secs: on RADOS each takes its snapshot from the
 * oracle at its first read (DESIGN §9.1, I17).  Transactions a second. */
double bench_snapshot_rate(mrtx_db *db, const char *row, double secs)
{
	double t0 = now_s(), t;
	long n = 0;

	do {
		mrtx_txn *txn;
		mrtx_bytes v;

		if (mrtx_begin(db, &txn) ||
		    mrtx_get(txn, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q0"), &v) ||
		    mrtx_commit(txn))
			die("snapshot", mrtx_errmsg());
		n++;
	} while ((t = now_s() - t0) < secs);
	return (double)n / t;
}

double bench_ts_rate(mrtx_db *db, int threads, double secs)
{
	pthread_t th[MULTI_THREADS];
	ts_arg a[MULTI_THREADS];
	double t0, total = 0;
	uint64_t t;

	if (threads < 1 || threads > MULTI_THREADS)
		die("ts", "bad thread count");
	for (int i = 0; i < threads; i++)
		a[i] = (ts_arg){ db, secs, 0 };
	if (admin_ts_next(db, &t)) /* (LMDB: maps the page; not timed) */
		die("ts", mrtx_errmsg());
	t0 = now_s();
	for (int i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, ts_loop, &a[i]))
			die("ts", "cannot start a thread");
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		total += (double)a[i].n;
	}
	return total / (now_s() - t0);
}
