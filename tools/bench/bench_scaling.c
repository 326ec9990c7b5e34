/*
 * bench_scaling.c - `mrtx bench DIR --only scaling`: throughput against
 * threads and against rows per transaction, for mrtx, native LMDB and
 * RocksDB's TransactionDB (pessimistic) and OptimisticTransactionDB.  Not
 * in the default run: about three minutes per durability.
 *
 *   threads  1, 2, 4, 8 and 16 threads of interactive's transfers (read
 *            two of 1,000 balances, think 200 us, write both), every side
 *            threads of this process: mrtx on one handle the threads share
 *            (mrtx_run of inter_fn); LMDB a write transaction per transfer,
 *            held across the think time, on one MDB_NOTLS environment;
 *            RocksDB as the transfers workload (rocks_run_mixed).  Every
 *            side's balances are summed after every round.
 *   rows     one thread committing transactions of N blind puts (N = 1, 2,
 *            4, ..., 256) of 16-byte values to distinct rows drawn from
 *            100,000: one mrtx transaction, one LMDB write transaction, one
 *            RocksDB transaction each.  One thread, so that the curve is
 *            the cost of a transaction's size alone (the threads sweep has
 *            the contention) and every store can be compared row by row
 *            with a shadow of the last value written to each row
 *            (check_puts) at the end of the point.
 *
 * Every point opens fresh stores for every side and alternates the sides
 * in rounds: twice bcfg's rounds, of a quarter of its phase (6 of 0.5 s,
 * --quick 4 of 0.125 s), as short as multi_row's slices, since this VM's
 * fdatasync swings between fast and slow spells of seconds and short
 * rounds spread a spell over every side; a side's rate is its
 * transactions over its own time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include "bench_int.h"

enum { SC_MRTX, SC_LMDB, SC_PESS, SC_OPT, SC_SIDES };

static const char *const side_key[SC_SIDES] = { "mrtx", "lmdb", "rocksdb_pessimistic",
	                                        "rocksdb_optimistic" };

static const int thread_points[] = { 1, 2, 4, 8, 16 };
static const int row_points[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256 };
#define NPOINTS(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define SC_MAX_THREADS 16

/* One point of a sweep: txn/s per side (< 0: the side is absent), and
 * RocksDB's retries per committed transaction. */
typedef struct spoint {
	int durability;
	int x; /* threads, or rows per transaction */
	double rate[SC_SIDES];
	double retries[SC_SIDES];
} spoint;

/* ------------------------------------------------------------ threads */

typedef struct sthr {
	fixture *f;
	int use_mrtx, id;
	int *stop; /* read and set with __atomic builtins */
	long ops;
} sthr;

static void *transfer_thread(void *arg)
{
	sthr *p = arg;
	struct inter_payload ip = { 99u + (unsigned)p->id, 0, 0, 0, 0 };

	while (!__atomic_load_n(p->stop, __ATOMIC_RELAXED)) {
		int rc;

		inter_pick(&ip.seed, &ip.a, &ip.b, &ip.x);
		rc = p->use_mrtx ? mrtx_run(p->f->db, inter_fn, &ip, 1000) :
		                   inter_lmdb(p->f->env, p->f->dbi, ip.a, ip.b, ip.x);
		if (rc && p->use_mrtx)
			die("scaling transfers", rc == MRTX_NOTFOUND ? "mrtx: an account is missing" :
			    ip.bad ? "mrtx: an account holds no balance" : mrtx_errmsg());
		if (rc)
			die("scaling transfers", rc == -1 || rc == MDB_NOTFOUND ?
			    "lmdb: an account is missing or holds no balance" : mdb_strerror(rc));
		p->ops++;
	}
	return NULL;
}

/* nthreads transferring threads on f's mrtx or LMDB store for secs:
 * returns the seconds, adds the transfers to *txns */
static double run_transfers(fixture *f, int use_mrtx, int nthreads, double secs, long *txns)
{
	pthread_t th[SC_MAX_THREADS];
	sthr p[SC_MAX_THREADS];
	int stop = 0;
	double t0 = now_s();

	for (int i = 0; i < nthreads; i++) {
		p[i] = (sthr){ f, use_mrtx, i, &stop, 0 };
		if (pthread_create(&th[i], NULL, transfer_thread, &p[i]))
			die("scaling transfers", "cannot start a thread");
	}
	while (now_s() - t0 < secs)
		usleep(10000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		*txns += p[i].ops;
	}
	if (use_mrtx && mrtx_flush(f->db))
		die("scaling transfers", mrtx_errmsg());
	return now_s() - t0;
}

static double rate_of(long n, double secs)
{
	return secs > 0 ? (double)n / secs : 0;
}

static void point_threads(bcfg *c, int durability, int nthreads, double secs, spoint *pt)
{
	double t[SC_SIDES] = { 0 };
	long n[SC_SIDES] = { 0 }, audits = 0;
	pcount pc = { 0, 0 }, oc = { 0, 0 };
	rocks *rp, *ro;
	fixture f;

	bank_open(c, durability, &f, &rp, &ro);
	for (int i = 0; i < c->rounds; i++) {
		t[SC_MRTX] += run_transfers(&f, 1, nthreads, secs, &n[SC_MRTX]);
		check_fixture_balances(&f, SIDE_MRTX);
		t[SC_LMDB] += run_transfers(&f, 0, nthreads, secs, &n[SC_LMDB]);
		check_fixture_balances(&f, SIDE_LMDB);
		if (rp && ro) {
			t[SC_PESS] += rocks_run_mixed(rp, nthreads, 0, secs, &pc, &audits);
			rocks_check_balances(rp);
			t[SC_OPT] += rocks_run_mixed(ro, nthreads, 0, secs, &oc, &audits);
			rocks_check_balances(ro);
		}
	}
	n[SC_PESS] = pc.txns;
	n[SC_OPT] = oc.txns;
	*pt = (spoint){ durability, nthreads, { 0 }, { 0 } };
	for (int s = 0; s < SC_SIDES; s++)
		pt->rate[s] = s >= SC_PESS && !(rp && ro) ? -1 : rate_of(n[s], t[s]);
	pt->retries[SC_PESS] = pc.txns ? (double)pc.retries / (double)pc.txns : 0;
	pt->retries[SC_OPT] = oc.txns ? (double)oc.retries / (double)oc.txns : 0;
	bank_close(&f, rp, ro);
}

/* --------------------------------------------------------------- rows */

static void put_row_name(char row[32], long i)
{
	snprintf(row, 32, "r%08ld", i);
}

void plog_pick(plog *lg, char rows[][32], char v[17])
{
	for (int j = 0; j < lg->nrows; j++) {
		long i;

		/* distinct rows: last[i] is this transaction's number once picked */
		do
			i = rand_r(&lg->seed) % PUT_ROWS;
		while (lg->last[i] == lg->txns);
		lg->last[i] = lg->txns;
		put_row_name(rows[j], i);
	}
	snprintf(v, 17, "%016ld", lg->txns);
}

long check_puts(const char *who, cell_reader rd, void *ctx, const plog *lg)
{
	char row[32], v[16], want[17], msg[200];
	long found = 0;

	for (long i = 0; i < PUT_ROWS; i++) {
		int present;

		put_row_name(row, i);
		present = rd(ctx, row, v);
		if (!present && lg->last[i] < 0)
			continue;
		snprintf(want, sizeof(want), "%016ld", lg->last[i]);
		if (!present || lg->last[i] < 0 || memcmp(v, want, 16)) {
			snprintf(msg, sizeof(msg), "%s: row %s holds %s%.*s%s, its last committed "
			         "write is %s", who, row, present ? "'" : "", present ? 16 : 7,
			         present ? v : "nothing", present ? "'" : "",
			         lg->last[i] < 0 ? "none" : want);
			die("scaling check", msg);
		}
		found++;
	}
	return found;
}

static void plog_init(plog *lg, int nrows)
{
	*lg = (plog){ nrows, 42, 0, 0, malloc(PUT_ROWS * sizeof(long)) };
	if (!lg->last)
		die("alloc", "out of memory");
	for (long i = 0; i < PUT_ROWS; i++)
		lg->last[i] = -1;
}

struct puts_payload {
	char (*rows)[32];
	int n;
	const char *v;
};

static int puts_fn(mrtx_txn *txn, void *p)
{
	struct puts_payload *pp = p;
	int rc = 0;

	for (int j = 0; j < pp->n && rc == 0; j++)
		rc = mrtx_put(txn, "t", MRTX_CSTR(pp->rows[j]), "f", MRTX_CSTR("q0"),
		              MRTX_BYTES(pp->v, 16));
	return rc;
}

/* lg's transactions on f's mrtx or LMDB store for secs: returns the
 * seconds */
static double run_puts(fixture *f, int use_mrtx, double secs, plog *lg)
{
	char rows[PUT_MAX][32], v[17];
	struct puts_payload pp = { rows, lg->nrows, v };
	double t0 = now_s();

	do {
		int rc;

		plog_pick(lg, rows, v);
		rc = use_mrtx ? mrtx_run(f->db, puts_fn, &pp, 1000) :
		                lmdb_put_rows(f, rows, lg->nrows, 1, v);
		if (rc)
			die("scaling puts", use_mrtx ? mrtx_errmsg() : mdb_strerror(rc));
		lg->txns++;
	} while (now_s() - t0 < secs);
	if (use_mrtx && mrtx_flush(f->db))
		die("scaling puts", mrtx_errmsg());
	return now_s() - t0;
}

static void point_rows(bcfg *c, int durability, int nrows, double secs, spoint *pt)
{
	double t[SC_SIDES] = { 0 };
	plog lg[SC_SIDES];
	rocks *rp, *ro;
	fixture f;

	fixture_open(c, &f, durability);
	rp = rocks_open(c, ROCKS_PESSIMISTIC, durability);
	ro = rocks_open(c, ROCKS_OPTIMISTIC, durability);
	for (int s = 0; s < SC_SIDES; s++)
		plog_init(&lg[s], nrows);
	for (int i = 0; i < c->rounds; i++) {
		t[SC_MRTX] += run_puts(&f, 1, secs, &lg[SC_MRTX]);
		t[SC_LMDB] += run_puts(&f, 0, secs, &lg[SC_LMDB]);
		if (rp && ro) {
			t[SC_PESS] += rocks_run_puts(rp, secs, &lg[SC_PESS]);
			t[SC_OPT] += rocks_run_puts(ro, secs, &lg[SC_OPT]);
		}
	}
	check_puts("mrtx", read_mrtx, f.db, &lg[SC_MRTX]);
	check_puts("lmdb", read_lmdb, &f, &lg[SC_LMDB]);
	*pt = (spoint){ durability, nrows, { 0 }, { 0 } };
	if (rp && ro) {
		rocks_check_puts(rp, &lg[SC_PESS]);
		rocks_check_puts(ro, &lg[SC_OPT]);
	}
	for (int s = 0; s < SC_SIDES; s++) {
		pt->rate[s] = s >= SC_PESS && !(rp && ro) ? -1 : rate_of(lg[s].txns, t[s]);
		pt->retries[s] = lg[s].txns ? (double)lg[s].retries / (double)lg[s].txns : 0;
		free(lg[s].last);
	}
	rocks_close(rp);
	rocks_close(ro);
	fixture_close(&f);
}

/* ------------------------------------------------------------- report */

static void json_rate(const char *key, const char *unit, double rate)
{
	if (rate < 0)
		printf(", \"%s_%s_per_s\": null", key, unit);
	else
		printf(", \"%s_%s_per_s\": %.1f", key, unit, rate);
}

static void json_points(const char *name, const spoint *p, int n)
{
	int rows = strcmp(name, "rows") == 0;

	printf("\"%s\": [", name);
	for (int i = 0; i < n; i++) {
		printf("%s\n    {\"durability\": \"%s\", \"threads\": %d", i ? "," : "",
		       mode_name(p[i].durability), rows ? 1 : p[i].x);
		if (rows)
			printf(", \"rows\": %d", p[i].x);
		for (int s = 0; s < SC_SIDES; s++) {
			json_rate(side_key[s], "txn", p[i].rate[s]);
			if (rows)
				json_rate(side_key[s], "rows", p[i].rate[s] < 0 ? -1 :
				          p[i].rate[s] * p[i].x);
		}
		for (int s = SC_PESS; s < SC_SIDES; s++)
			if (p[i].rate[s] < 0)
				printf(", \"%s_retries_per_txn\": null", side_key[s]);
			else
				printf(", \"%s_retries_per_txn\": %.3f", side_key[s], p[i].retries[s]);
		printf("}");
	}
	printf("]");
}

static void fmt_rate(char *buf, size_t size, double rate)
{
	if (rate < 0)
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%.0f", rate);
}

static void fmt_ratio(char *buf, size_t size, double a, double b)
{
	if (a < 0 || b <= 0)
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%.2f", a / b);
}

/* the better of the two RocksDB sides, or -1 */
static double rocks_better(const spoint *p)
{
	return p->rate[SC_PESS] > p->rate[SC_OPT] ? p->rate[SC_PESS] : p->rate[SC_OPT];
}

static void text_points(const char *name, const spoint *p, int n)
{
	int rows = strcmp(name, "rows") == 0;
	int last = -1;

	for (int i = 0; i < n; i++) {
		char r[SC_SIDES][24], rl[16], rk[16];

		if (p[i].durability != last) {
			last = p[i].durability;
			if (rows)
				printf("\nscaling %s, rows: one thread, transactions of N blind puts "
				       "(16-byte values, distinct rows of %d)\n%6s %11s %11s %11s %11s "
				       "%10s %10s   %11s %11s %11s %11s\n", mode_name(last), PUT_ROWS,
				       "rows", "mrtx txn/s", "lmdb", "rocks pess", "rocks opt",
				       "mrtx/lmdb", "mrtx/rocks", "mrtx rows/s", "lmdb", "rocks pess",
				       "rocks opt");
			else
				printf("\nscaling %s, threads: interactive transfers (read 2 of %d "
				       "balances, think 200 us, write 2), threads of one process\n"
				       "%6s %11s %11s %11s %11s %10s %10s %10s %10s\n", mode_name(last),
				       BAL_ACCOUNTS, "thr", "mrtx txn/s", "lmdb", "rocks pess",
				       "rocks opt", "mrtx/lmdb", "mrtx/rocks", "pess retr", "opt retr");
		}
		for (int s = 0; s < SC_SIDES; s++)
			fmt_rate(r[s], sizeof(r[s]), p[i].rate[s]);
		fmt_ratio(rl, sizeof(rl), p[i].rate[SC_MRTX], p[i].rate[SC_LMDB]);
		fmt_ratio(rk, sizeof(rk), p[i].rate[SC_MRTX], rocks_better(&p[i]));
		printf("%6d %11s %11s %11s %11s %10s %10s", p[i].x, r[0], r[1], r[2], r[3], rl, rk);
		if (rows) {
			for (int s = 0; s < SC_SIDES; s++)
				fmt_rate(r[s], sizeof(r[s]), p[i].rate[s] < 0 ? -1 : p[i].rate[s] * p[i].x);
			printf("   %11s %11s %11s %11s\n", r[0], r[1], r[2], r[3]);
		} else if (p[i].rate[SC_PESS] < 0) {
			printf(" %10s %10s\n", "-", "-");
		} else {
			printf(" %10.3f %10.3f\n", p[i].retries[SC_PESS], p[i].retries[SC_OPT]);
		}
	}
}

static void progress(const char *sweep, int durability, int x)
{
	if (isatty(2))
		fprintf(stderr, "mrtx: bench: scaling %s %s %d\n", mode_name(durability), sweep, x);
}

int bench_scaling(bcfg *c, const char *durability, int points)
{
	int modes[2], nmodes = 0, nt = NPOINTS(thread_points), nr = NPOINTS(row_points);
	spoint tp[2 * NPOINTS(thread_points)], rp[2 * NPOINTS(row_points)];
	int ntp = 0, nrp = 0;
	bcfg sc = *c; /* c's stores counter carries on in sc */
	double secs = c->phase_s / 4;

	if (!durability || strcmp(durability, "sync") == 0 || strcmp(durability, "both") == 0)
		modes[nmodes++] = MRTX_SYNC;
	if (durability && (strcmp(durability, "nosync") == 0 || strcmp(durability, "both") == 0))
		modes[nmodes++] = MRTX_NOSYNC;
	if (nmodes == 0) {
		fprintf(stderr, "mrtx: bench: --durability: '%s' is not sync, nosync or both\n",
		        durability);
		return 2;
	}
	sc.rounds = 2 * c->rounds;
	if (points > 0 && points < nt)
		nt = points;
	if (points > 0 && points < nr)
		nr = points;
	for (int m = 0; m < nmodes; m++) {
		for (int i = 0; i < nt; i++) {
			progress("threads", modes[m], thread_points[i]);
			point_threads(&sc, modes[m], thread_points[i], secs, &tp[ntp++]);
		}
		for (int i = 0; i < nr; i++) {
			progress("rows", modes[m], row_points[i]);
			point_rows(&sc, modes[m], row_points[i], secs, &rp[nrp++]);
		}
	}
	if (c->json) {
		printf("{\"scaling\": {\"quick\": %s, \"rounds\": %d, \"round_seconds\": %.2f, "
		       "\"rocksdb_baseline\": %s,\n  ", c->quick ? "true" : "false", sc.rounds, secs,
		       rocks_built() ? "true" : "false");
		json_points("threads", tp, ntp);
		printf(",\n  ");
		json_points("rows", rp, nrp);
		printf("}}\n");
		return 0;
	}
	printf("mrtx bench scaling: %d rounds of %.2f s per side and point, sides alternating, "
	       "fresh stores per point; txn/s unless stated", sc.rounds, secs);
	text_points("threads", tp, ntp);
	text_points("rows", rp, nrp);
	printf("\n");
	if (!rocks_built())
		printf("rocksdb: baseline absent (this mrtx was built without RocksDB)\n");
	printf("checked: threads: after every round, each side's %d balances sum to %d\n",
	       BAL_ACCOUNTS, BAL_ACCOUNTS * BAL_INIT);
	printf("checked: rows: at the end of every point, each side's %d rows hold exactly "
	       "the last value written to each\n", PUT_ROWS);
	return 0;
}
