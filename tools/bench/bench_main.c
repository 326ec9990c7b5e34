/*
 * bench_main.c - `mrtx bench STORE [--quick] [--json]`: runs every
 * workload, the protocol accounting (store calls per commit, memory per
 * buffered mutation) and the recovery throughput, then reports.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_int.h"
#include "txn/admin.h"


/* ------------------------------------------------------- workloads */

static void wl_single(bcfg *c, int durability, bres *r)
{
	fixture f;

	fixture_open(c, &f, durability);
	alternate(c, &f, op_single_mrtx, op_single_lmdb, r);
	fixture_close(&f);
	*r = (bres){ "single_row", mode_name(durability), r->mrtx_ops, r->base_ops, 0.9, 1, 1, 0,
	             "txn/s" };
}

static void wl_get(bcfg *c, bres *r)
{
	fixture f;

	fixture_open(c, &f, MRTX_NOSYNC);
	for (long i = 0; i < 1000; i++) {
		unsigned s = 0;
		op_single_mrtx(&f, &s, i);
		op_single_lmdb(&f, &s, i);
	}
	alternate(c, &f, op_get_mrtx, op_get_lmdb, r);
	fixture_close(&f);
	*r = (bres){ "get", "nosync", r->mrtx_ops, r->base_ops, 0.9, 1, 1, 0, "get/s" };
}

/* readonly: committed one-get read-only transactions in sync mode against
 * raw LMDB reads; a synced store's reads make no fdatasync (DESIGN §9.1). */
static void wl_readonly(bcfg *c, bres *r)
{
	fixture f;

	fixture_open(c, &f, MRTX_SYNC);
	for (long i = 0; i < 1000; i++) {
		unsigned s = 0;
		op_single_mrtx(&f, &s, i);
		op_single_lmdb(&f, &s, i);
	}
	alternate(c, &f, op_rocommit_mrtx, op_get_lmdb, r);
	fixture_close(&f);
	*r = (bres){ "readonly", "sync", r->mrtx_ops, r->base_ops, 0.5, 1, 1, 0, "txn/s" };
}

/*
 * multi_row: 8 threads of 4-row transactions, sync; mrtx, LMDB, SQLite and
 * (when built with it) RocksDB pessimistic and optimistic alternate in
 * slices of about half a second (rounds x phase seconds per side in all):
 * this VM's fdatasync swings between fast and slow spells of
 * seconds, and short slices spread a spell over every side instead of
 * landing it on one side's whole phase.  After the slices every side's
 * store is checked against the log of its committed transactions
 * (check_groups).
 */
#define MULTI_SLICE_S 0.5

/* transactions committed by all of lg's threads */
static double mlog_total(const mlog *lg)
{
	long n = 0;

	for (int i = 0; i < MULTI_THREADS; i++)
		n += lg->th[i].n;
	return (double)n;
}

/* the better of the two RocksDB sides */
static double rocks_best(const brocks *k)
{
	return k->pess_ops >= k->opt_ops ? k->pess_ops : k->opt_ops;
}

/* A side that committed nothing would make its ratio infinite: both
 * RocksDB sides must have made progress (neither stalled in lock waits). */
static void rocks_progressed(const brocks *k, const char *workload)
{
	if (k->has && (k->pess_ops <= 0 || k->opt_ops <= 0))
		die(workload, "a rocksdb side committed no transaction");
}

/* the rate of lg's transactions over secs, and their retries per txn */
static double mlog_rate(const mlog *lg, double secs, double *retries)
{
	double n = mlog_total(lg);

	*retries = n > 0 ? (double)lg->retries / n : 0;
	return secs > 0 ? n / secs : 0;
}

static void wl_multi(bcfg *c, bres *r, bsql *q, brocks *k)
{
	double mt = 0, bt = 0, st = 0, pt = 0, ot = 0, total = c->rounds * c->phase_s;
	int slices = (int)(total / MULTI_SLICE_S + 0.5);
	mlog lm, ll, ls, lp, lo;
	rocks *rp, *ro;
	char *spath;
	fixture f;

	if (slices < c->rounds)
		slices = c->rounds;
	fixture_open(c, &f, MRTX_SYNC);
	spath = sqlite_create(c);
	rp = rocks_open(c, ROCKS_PESSIMISTIC, MRTX_SYNC);
	ro = rocks_open(c, ROCKS_OPTIMISTIC, MRTX_SYNC);
	mlog_init(&lm);
	mlog_init(&ll);
	mlog_init(&ls);
	mlog_init(&lp);
	mlog_init(&lo);
	/* each side's rate: its transactions over its time, as alternate() */
	for (int i = 0; i < slices; i++) {
		mt += run_threads(&f, 1, total / slices, &lm);
		bt += run_threads(&f, 0, total / slices, &ll);
		st += sqlite_run_threads(spath, total / slices, &ls);
		if (rp)
			pt += rocks_run_threads(rp, total / slices, &lp);
		if (ro)
			ot += rocks_run_threads(ro, total / slices, &lo);
	}
	check_fixture_groups(&f, 1, &lm);
	check_fixture_groups(&f, 0, &ll);
	sqlite_check_groups(spath, &ls);
	*k = (brocks){ rp && ro, MULTI_THREADS, 0, 0, 0, 0, 0 };
	if (k->has) {
		rocks_check_groups(rp, &lp);
		rocks_check_groups(ro, &lo);
		k->pess_ops = mlog_rate(&lp, pt, &k->pess_retries);
		k->opt_ops = mlog_rate(&lo, ot, &k->opt_retries);
		rocks_progressed(k, "multi_row");
	}
	rocks_close(rp);
	rocks_close(ro);
	fixture_close(&f);
	*r = (bres){ "multi_row", "sync", mlog_total(&lm) / mt, mlog_total(&ll) / bt, 2.0, 1,
	             MULTI_THREADS, 0, "txn/s" };
	*q = (bsql){ 1, mlog_total(&ls) / st, 0, 0, 0, 0, 0, 0 };
	q->imm_retries = mlog_total(&ls) > 0 ? (double)ls.retries / mlog_total(&ls) : 0;
	mlog_free(&lm);
	mlog_free(&ll);
	mlog_free(&ls);
	mlog_free(&lp);
	mlog_free(&lo);
	free(spath);
}

/*
 * ts: the store's timestamp source (admin_ts_next, DESIGN §9), alone, by
 * one thread and by 8 at once (one shared counter: the 8 contend on it).
 * Reported, not compared: a snapshot read or a commit will take one each,
 * so its cost is to be read against `get` and `single_row` nosync.
 */
static void wl_ts(bcfg *c, int threads, bres *r)
{
	fixture f;
	double rate;

	fixture_open(c, &f, MRTX_NOSYNC);
	rate = bench_ts_rate(f.db, threads, c->rounds * c->phase_s);
	fixture_close(&f);
	*r = (bres){ "ts", "-", rate, 0, 0, 0, threads, 0, "ts/s" };
}

/*
 * interactive: 8 processes of transfers between 1,000 accounts; mrtx,
 * LMDB, SQLite with BEGIN IMMEDIATE and SQLite with BEGIN DEFERRED, and
 * (when built with it) RocksDB pessimistic and optimistic (each on its own
 * database) alternate in rounds.  RocksDB opens a store in one process
 * only: its side is 8 threads of this process.  After every phase that
 * side's balances must still sum to 1,000 x 1,000.
 */
#define INTER_PAR 8

static void wl_interactive(bcfg *c, int durability, bres *r, bsql *q, brocks *k)
{
	double ms = 0, bs = 0, is = 0, ds = 0, ps = 0, os = 0;
	pcount ic = { 0, 0 }, dc = { 0, 0 }, pc = { 0, 0 }, oc = { 0, 0 };
	char *imm, *def;
	rocks *rp, *ro;
	fixture f;

	fixture_open(c, &f, durability);
	imm = sqlite_create(c);
	def = sqlite_create(c);
	rp = rocks_open(c, ROCKS_PESSIMISTIC, durability);
	ro = rocks_open(c, ROCKS_OPTIMISTIC, durability);
	load_accounts(&f);
	sqlite_load_accounts(imm);
	sqlite_load_accounts(def);
	if (rp && ro) {
		rocks_load_accounts(rp);
		rocks_load_accounts(ro);
	}
	/* the children open the stores themselves */
	mrtx_close(f.db);
	f.db = NULL;
	for (int i = 0; i < c->rounds; i++) {
		ms += run_procs(&f, SIDE_MRTX, NULL, durability, 8, c->phase_s, NULL);
		check_fixture_balances(&f, SIDE_MRTX);
		bs += run_procs(&f, SIDE_LMDB, NULL, durability, 8, c->phase_s, NULL);
		check_fixture_balances(&f, SIDE_LMDB);
		is += run_procs(&f, SIDE_SQLITE_IMM, imm, durability, 8, c->phase_s, &ic);
		sqlite_check_balances(imm, "sqlite (BEGIN IMMEDIATE)");
		ds += run_procs(&f, SIDE_SQLITE_DEF, def, durability, 8, c->phase_s, &dc);
		sqlite_check_balances(def, "sqlite (BEGIN DEFERRED)");
		if (rp && ro) {
			ps += rocks_run_transfers(rp, INTER_PAR, c->phase_s, &pc);
			rocks_check_balances(rp);
			os += rocks_run_transfers(ro, INTER_PAR, c->phase_s, &oc);
			rocks_check_balances(ro);
		}
	}
	*k = (brocks){ rp && ro, INTER_PAR, ps / c->rounds, os / c->rounds, 0, 0, 0 };
	k->pess_retries = pc.txns ? (double)pc.retries / (double)pc.txns : 0;
	k->opt_retries = oc.txns ? (double)oc.retries / (double)oc.txns : 0;
	rocks_progressed(k, "interactive");
	rocks_close(rp);
	rocks_close(ro);
	fixture_close(&f);
	*r = (bres){ "interactive", mode_name(durability), ms / c->rounds, bs / c->rounds,
	             durability == MRTX_NOSYNC ? 3.0 : 1.5, 1, 0, 8, "txn/s" };
	*q = (bsql){ 1, 0, durability == MRTX_SYNC ? 1.5 : 0, 1, is / c->rounds, ds / c->rounds,
	             0, 0 };
	q->ops = q->imm_ops > q->def_ops ? q->imm_ops : q->def_ops;
	q->imm_retries = ic.txns ? (double)ic.retries / (double)ic.txns : 0;
	q->def_retries = dc.txns ? (double)dc.retries / (double)dc.txns : 0;
	free(imm);
	free(def);
}

/* A dead process's owner identity: a child reports itself and exits. */
static void dead_owner(lock_owner *out)
{
	int fds[2], st;
	pid_t pid;

	if (pipe(fds))
		die("pipe", strerror(errno));
	if ((pid = fork()) == 0) {
		const lock_owner *o = lock_self_owner();

		_exit(write(fds[1], o, sizeof(*o)) == (ssize_t)sizeof(*o) ? 0 : 1);
	}
	if (read(fds[0], out, sizeof(*out)) != (ssize_t)sizeof(*out))
		die("owner", "child did not report");
	waitpid(pid, &st, 0);
	close(fds[0]);
	close(fds[1]);
}

/* Write ntxn abandoned 2-row transactions into table t (PREWRITTEN, dead
 * owner): rows p0000000, s0000000, p0000001, ... */
static void make_stale(mrtx_db *db, long ntxn)
{
	static char val[16] = "stale-value";
	char (*names)[32] = calloc((size_t)ntxn * 2, sizeof(*names));
	mrtx_bytes *rows = calloc((size_t)ntxn * 2, sizeof(*rows));
	lock_owner owner;

	if (!names || !rows)
		die("alloc", "out of memory");
	for (long i = 0; i < ntxn; i++) {
		snprintf(names[2 * i], 32, "p%07ld", i);
		snprintf(names[2 * i + 1], 32, "s%07ld", i);
		rows[2 * i] = MRTX_BYTES(names[2 * i], 8);
		rows[2 * i + 1] = MRTX_BYTES(names[2 * i + 1], 8);
	}
	dead_owner(&owner);
	if (admin_plant_abandoned(db, "t", rows, (size_t)ntxn, &owner, MRTX_CSTR(val)))
		die("stale locks", mrtx_errmsg());
	free(rows);
	free(names);
}

static void wl_recover(bcfg *c, bres *r, recover_stats *rs)
{
	recover_opts ro = { 0, 0, 0 };
	recover_stats again;
	long ntxn = c->quick ? 10000 : 50000;
	double t0, secs;
	fixture f;

	fixture_open(c, &f, MRTX_NOSYNC);
	make_stale(f.db, ntxn);
	t0 = now_s();
	if (admin_recover(f.db, &ro, rs, NULL, NULL))
		die("recover", mrtx_errmsg());
	secs = now_s() - t0;
	/* every lock resolved: a second sweep must meet none */
	if (rs->rolled_back != (unsigned long)ntxn ||
	    admin_recover(f.db, &ro, &again, NULL, NULL) || again.locks_seen != 0)
		die("recover", "the sweep did not resolve every stale lock");
	fixture_close(&f);
	*r = (bres){ "recover", "nosync", (double)(2 * ntxn) / secs, 0, 50000, 0, 1, 0,
	             "locks/s" };
}

/* --------------------------------------------------------- accounting */

typedef struct calls {
	int rows;
	unsigned long write_calls, write_txns, read_txns;
} calls;

static void count_calls(bcfg *c, calls *out, size_t n)
{
	fixture f;

	fixture_open(c, &f, MRTX_NOSYNC);
	/* a first transaction loads the handle's index declarations (once) */
	if (mrtx_put_row(f.db, "warm-up", 1))
		die("calls", mrtx_errmsg());
	for (size_t i = 0; i < n; i++) {
		admin_counters a, b;
		mrtx_txn *txn;
		char row[32];

		admin_counters_get(f.db, &a);
		if (mrtx_begin(f.db, &txn))
			die("calls", mrtx_errmsg());
		for (int k = 0; k < out[i].rows; k++) {
			snprintf(row, sizeof(row), "c%d-%05d", (int)(i % 100), k % 100000);
			if (mrtx_put(txn, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q"), MRTX_CSTR("v")))
				die("calls", mrtx_errmsg());
		}
		if (mrtx_commit(txn))
			die("calls", mrtx_errmsg());
		admin_counters_get(f.db, &b);
		out[i].write_calls = b.write_calls - a.write_calls;
		out[i].write_txns = b.write_txns - a.write_txns;
		out[i].read_txns = b.read_txns - a.read_txns;
	}
	fixture_close(&f);
}

/* Bytes per buffered mutation beyond its key and value (100 cells/row). */
static double mem_per_mutation(bcfg *c)
{
	size_t payload = 0, mem;
	fixture f;
	mrtx_txn *txn;

	fixture_open(c, &f, MRTX_NOSYNC);
	if (mrtx_begin(f.db, &txn))
		die("mem", mrtx_errmsg());
	for (int r = 0; r < 100; r++)
		for (int q = 0; q < 100; q++) {
			char row[9], qual[9];

			snprintf(row, sizeof(row), "row%05d", r);
			snprintf(qual, sizeof(qual), "qua%05d", q);
			if (mrtx_put(txn, "t", MRTX_BYTES(row, 8), "f", MRTX_BYTES(qual, 8),
			             MRTX_BYTES("valvalva", 8)))
				die("mem", mrtx_errmsg());
			payload += 8 + 8 + 8; /* row + qualifier + value */
		}
	mem = admin_txn_mem(txn);
	mrtx_abort(txn);
	fixture_close(&f);
	return ((double)mem - (double)payload) / 10000.0;
}

/* ------------------------------------------------------------ report */

/* 1 met, 0 not, -1 no target */
static int met(const bres *r)
{
	if (!r->target)
		return -1;
	return (r->has_base ? r->mrtx_ops / r->base_ops : r->mrtx_ops) >= r->target;
}

static int sql_met(const bres *r, const bsql *q)
{
	return q->has && q->target ? r->mrtx_ops / q->ops >= q->target : -1;
}


static int rocks_met(const bres *r, const brocks *k)
{
	return k->has && k->target ? r->mrtx_ops / rocks_best(k) >= k->target : -1;
}

static const char *json_bool(int m)
{
	return m < 0 ? "null" : m ? "true" : "false";
}

static const char *verified(const bres *r)
{
	static const char *const sums[] = { "interactive", "transfers", "audit_writes",
	                                    "audit_scans", "scan", "scan_writing" };

	for (size_t i = 0; i < sizeof(sums) / sizeof(sums[0]); i++)
		if (strcmp(r->name, sums[i]) == 0)
			return "balance_sum";
	return
	       strcmp(r->name, "multi_row") == 0 ? "row_groups" : NULL;
}

static void report(const bcfg *c, bres *r, const bsql *q, const brocks *k, size_t n,
                   const calls *cl, size_t ncl, double mem, const recover_stats *rs)
{
	int built = rocks_built();

	/* ncl == 0: the accounting was not run (--only) */
	if (c->json) {
		printf("{\"quick\": %s, \"phase_seconds\": %.2f, \"rounds\": %d, "
		       "\"rocksdb_baseline\": %s, \"workloads\": [", c->quick ? "true" : "false",
		       c->phase_s, c->rounds, built ? "true" : "false");
		for (size_t i = 0; i < n; i++) {
			printf("%s\n  {\"name\": \"%s\", \"durability\": \"%s\", \"mrtx_ops_per_s\": %.1f",
			       i ? "," : "", r[i].name, r[i].mode, r[i].mrtx_ops);
			if (r[i].has_base)
				printf(", \"baseline_ops_per_s\": %.1f, \"ratio\": %.3f", r[i].base_ops,
				       r[i].mrtx_ops / r[i].base_ops);
			else
				printf(", \"ratio\": null");
			if (r[i].target)
				printf(", \"target\": %.2f", r[i].target);
			else
				printf(", \"target\": null");
			printf(", \"threads\": %d, \"processes\": %d, \"unit\": \"%s\"",
			       r[i].threads, r[i].procs, r[i].unit);
			printf(", \"met\": %s", json_bool(met(&r[i])));
			if (q[i].has) {
				printf(", \"sqlite_ops_per_s\": %.1f, \"sqlite_ratio\": %.3f", q[i].ops,
				       r[i].mrtx_ops / q[i].ops);
				if (q[i].target)
					printf(", \"sqlite_target\": %.2f", q[i].target);
				else
					printf(", \"sqlite_target\": null");
				printf(", \"sqlite_met\": %s", json_bool(sql_met(&r[i], &q[i])));
				if (q[i].variants)
					printf(", \"sqlite_variant\": \"%s\", \"sqlite_immediate_ops_per_s\": %.1f"
					       ", \"sqlite_deferred_ops_per_s\": %.1f"
					       ", \"sqlite_immediate_retries_per_txn\": %.3f"
					       ", \"sqlite_deferred_retries_per_txn\": %.3f",
					       q[i].imm_ops >= q[i].def_ops ? "immediate" : "deferred",
					       q[i].imm_ops, q[i].def_ops, q[i].imm_retries, q[i].def_retries);
				else
					printf(", \"sqlite_retries_per_txn\": %.3f", q[i].imm_retries);
			} else {
				printf(", \"sqlite_ratio\": null");
			}
			if (k[i].has)
				printf(", \"rocksdb_pessimistic_ops_per_s\": %.1f"
				       ", \"rocksdb_optimistic_ops_per_s\": %.1f, \"rocksdb_ops_per_s\": %.1f"
				       ", \"rocksdb_variant\": \"%s\", \"rocksdb_ratio\": %.3f"
				       ", \"rocksdb_pessimistic_retries_per_txn\": %.3f"
				       ", \"rocksdb_optimistic_retries_per_txn\": %.3f"
				       ", \"rocksdb_threads\": %d",
				       k[i].pess_ops, k[i].opt_ops, rocks_best(&k[i]),
				       k[i].pess_ops >= k[i].opt_ops ? "pessimistic" : "optimistic",
				       r[i].mrtx_ops / rocks_best(&k[i]), k[i].pess_retries,
				       k[i].opt_retries, k[i].threads);
			if (k[i].has && k[i].target)
				printf(", \"rocksdb_target\": %.2f, \"rocksdb_met\": %s", k[i].target,
				       json_bool(rocks_met(&r[i], &k[i])));
			else if (k[i].has)
				printf(", \"rocksdb_target\": null, \"rocksdb_met\": null");
			else
				printf(", \"rocksdb_ratio\": null");
			if (verified(&r[i]))
				printf(", \"verified\": \"%s\"", verified(&r[i]));
			else
				printf(", \"verified\": null");
			printf("}");
		}
		printf("\n], \"store_calls_per_commit\": [");
		for (size_t i = 0; i < ncl; i++)
			printf("%s{\"rows\": %d, \"store_write_calls\": %lu, \"lmdb_write_txns\": %lu, "
			       "\"lmdb_read_txns\": %lu}", i ? ", " : "", cl[i].rows, cl[i].write_calls,
			       cl[i].write_txns, cl[i].read_txns);
		printf("], \"bytes_per_buffered_mutation\": %.1f, \"recover\": {\"locks\": %lu, "
		       "\"rolled_back_txns\": %lu}}\n", mem, rs->locks_seen, rs->rolled_back);
		return;
	}
	printf("%-12s %-11s %4s %11s %11s %6s %7s %4s %12s %6s %7s %4s %13s %6s %7s %4s\n",
	       "workload", "durability", "par", "mrtx ops/s", "lmdb ops/s", "ratio", "target",
	       "met", "sqlite ops/s", "ratio", "target", "met", "rocksdb ops/s", "ratio", "target",
	       "met");
	for (size_t i = 0; i < n; i++) {
		char par[16], base[32] = "-", ratio[16] = "-", target[16] = "report";
		char sops[32] = "-", sratio[16] = "-", starget[16] = "-";
		char kops[32] = "-", kratio[16] = "-", ktarget[16] = "-";
		int m = met(&r[i]), sm = sql_met(&r[i], &q[i]), km = rocks_met(&r[i], &k[i]);

		snprintf(par, sizeof(par), r[i].procs ? "%dp" : "%dt",
		         r[i].procs ? r[i].procs : r[i].threads);
		if (r[i].has_base) {
			snprintf(base, sizeof(base), "%.0f", r[i].base_ops);
			snprintf(ratio, sizeof(ratio), "%.2f", r[i].mrtx_ops / r[i].base_ops);
		}
		if (r[i].target)
			snprintf(target, sizeof(target), r[i].has_base ? ">= %.1f" : ">= %.0f",
			         r[i].target);
		if (q[i].has) {
			snprintf(sops, sizeof(sops), "%.0f", q[i].ops);
			snprintf(sratio, sizeof(sratio), "%.2f", r[i].mrtx_ops / q[i].ops);
			if (q[i].target)
				snprintf(starget, sizeof(starget), ">= %.1f", q[i].target);
			else
				snprintf(starget, sizeof(starget), "report");
		}
		if (k[i].has) {
			snprintf(kops, sizeof(kops), "%.0f", rocks_best(&k[i]));
			snprintf(kratio, sizeof(kratio), "%.2f", r[i].mrtx_ops / rocks_best(&k[i]));
			if (k[i].target)
				snprintf(ktarget, sizeof(ktarget), ">= %.1f", k[i].target);
			else
				snprintf(ktarget, sizeof(ktarget), "report");
		}
		printf("%-12s %-11s %4s %11.0f %11s %6s %7s %4s %12s %6s %7s %4s %13s %6s %7s %4s\n",
		       r[i].name, r[i].mode, par, r[i].mrtx_ops, base, ratio, target,
		       m < 0 ? "-" : m ? "yes" : "no", sops, sratio, starget,
		       sm < 0 ? "-" : sm ? "yes" : "no", kops, kratio, ktarget,
		       km < 0 ? "-" : km ? "yes" : "no");
	}
	for (size_t i = 0; i < n; i++) {
		if (q[i].has && q[i].variants)
			printf("%s %s sqlite: BEGIN IMMEDIATE %.0f txn/s (%.2f busy retries/txn), "
			       "BEGIN DEFERRED %.0f txn/s (%.2f busy retries/txn); the better is "
			       "reported\n", r[i].name, r[i].mode, q[i].imm_ops, q[i].imm_retries,
			       q[i].def_ops, q[i].def_retries);
		else if (q[i].has)
			printf("%s %s sqlite: BEGIN IMMEDIATE, %.2f busy retries/txn\n", r[i].name,
			       r[i].mode, q[i].imm_retries);
	}
	for (size_t i = 0; i < n; i++)
		if (k[i].has)
			printf("%s %s rocksdb (%d threads in one process%s): pessimistic TransactionDB "
			       "%.0f txn/s (%.2f retries/txn), OptimisticTransactionDB %.0f txn/s "
			       "(%.2f retries/txn); mrtx / the better %.2f\n", r[i].name, r[i].mode,
			       k[i].threads, r[i].procs ? ", against mrtx's processes: a RocksDB store "
			       "opens in one process only" : "", k[i].pess_ops, k[i].pess_retries,
			       k[i].opt_ops, k[i].opt_retries, r[i].mrtx_ops / rocks_best(&k[i]));
	for (size_t i = 0; i < n; i++)
		if (!built && (strcmp(r[i].name, "interactive") == 0 ||
		               strcmp(r[i].name, "multi_row") == 0)) {
			printf("rocksdb: baseline absent (this mrtx was built without RocksDB)\n");
			break;
		}
	for (size_t i = 0; i < n; i++)
		if (strcmp(r[i].name, "interactive") == 0) {
			printf("checked: interactive: after every phase, each side's %d balances sum "
			       "to %d\n", BAL_ACCOUNTS, BAL_ACCOUNTS * BAL_INIT);
			break;
		}
	for (size_t i = 0; i < n; i++)
		if (strcmp(r[i].name, "multi_row") == 0) {
			printf("checked: multi_row: on each side every 4-row group is whole and holds "
			       "the last write to it of some thread (its thread's last)\n");
			break;
		}
	if (ncl == 0)
		return;
	printf("\nstore calls per transaction, begin to commit (blind puts, one cell per row):\n");
	for (size_t i = 0; i < ncl; i++)
		printf("  %2d rows: %lu store write calls, %lu LMDB write txns, %lu LMDB read txns\n",
		       cl[i].rows, cl[i].write_calls, cl[i].write_txns, cl[i].read_txns);
	printf("bytes per buffered mutation beyond key and value (100 cells/row): %.1f\n", mem);
}

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: mrtx bench DIR|rados://POOL/NAME[?...] [--quick] [--only W] [--json]\n"
	           "       mrtx bench DIR --only scaling [--durability D] [--points N] [...]\n"
	           "  Runs each workload for mrtx and for a native-LMDB baseline, alternating,\n"
	           "  on fresh stores created under DIR, and prints ops/s and ratios;\n"
	           "  multi_row and interactive also run against SQLite (WAL mode,\n"
	           "  synchronous=FULL for sync, OFF for nosync) in the same rounds, and check\n"
	           "  every side's store afterwards (interactive: transfers whose balances\n"
	           "  must keep their sum; multi_row: 4-row groups that must stay whole).\n"
	           "  When built with RocksDB they also run against a RocksDB TransactionDB\n"
	           "  (pessimistic) and OptimisticTransactionDB at RocksDB's defaults, WAL on\n"
	           "  (synced at every commit for sync), conflicts and lock timeouts retried,\n"
	           "  as 8 threads of one process (interactive's mrtx side is 8 processes: a\n"
	           "  RocksDB store opens in one process only); --json adds to those workloads\n"
	           "  rocksdb_pessimistic_ops_per_s, rocksdb_optimistic_ops_per_s,\n"
	           "  rocksdb_ops_per_s and rocksdb_variant (the better), rocksdb_ratio (mrtx /\n"
	           "  the better), rocksdb_{pessimistic,optimistic}_retries_per_txn and\n"
	           "  rocksdb_threads; \"rocksdb_baseline\" at the top says whether it was\n"
	           "  built (false: each rocksdb_ratio null).  With a\n"
	           "  rados:// address: single_row, multi_row, one_tablet (4 rows of one\n"
	           "  tablet: a one-phase commit) and latency (commit latency by\n"
	           "  rows) against raw guarded RADOS writes, ts and snapshot (read-only\n"
	           "  transactions whose first read takes the snapshot) reported alone, and\n"
	           "  with --only scan alone scan_100k (a read-only scan of 100,000 one-cell\n"
	           "  rows against a raw read of every omap key of the same tablet objects,\n"
	           "  alternating; --quick 10,000 rows), on stores NAME-b<pid>-<n> whose\n"
	           "  objects are removed at the end.\n"
	           "  --quick  short phases (about 30 s in all)\n"
	           "  transfers, audit and scan run mrtx and the two RocksDB DBs (each side\n"
	           "  threads of this process on one handle): transfers 8 threads of\n"
	           "  interactive's transfers; audit 7 of them and an eighth thread reading\n"
	           "  every balance in one scan (RocksDB: an iterator on the transaction's\n"
	           "  snapshot), its sum checked, reported as audit_writes and audit_scans;\n"
	           "  scan that reader alone and beside one transferring thread\n"
	           "  (scan_writing), nosync; their rows carry rocksdb_target and\n"
	           "  rocksdb_met in --json.\n"
	           "  --only W run one workload (default: every workload of the default\n"
	           "           run): single_row, multi_row, interactive,\n"
	           "           transfers, audit, scan, get,\n"
	           "           readonly (committed one-get read-only transactions, sync),\n"
	           "           recover, calls (store calls per commit, memory per mutation),\n"
	           "           ts (timestamps a second, 1 and 8 threads),\n"
	           "           longscan (a read-only scan of 100,000 rows retried under 8\n"
	           "           writers until it commits or 30 s pass, --quick 10,000 rows and\n"
	           "           5 s; not in the default run; --json: {\"longscan\": {...}})\n"
	           "           scaling (not in the default run, about 3 minutes per\n"
	           "           durability, --quick about 40 s: txn/s of mrtx, LMDB and the\n"
	           "           two RocksDB DBs against threads, 1 to 16 threads of\n"
	           "           interactive's transfers, and against rows per transaction,\n"
	           "           one thread's blind puts of 1 to 256 rows; every store\n"
	           "           checked; --json: {\"scaling\": {\"threads\": [...],\n"
	           "           \"rows\": [...]}}; scripts/bench-plots.sh draws them)\n"
	           "  --durability sync|nosync|both  scaling's durability (default sync)\n"
	           "  --points N  scaling: only the first N points of each sweep (default:\n"
	           "              every point)\n"
	           "  --json   one JSON object on stdout\n");
	return rc;
}

static int known_workload(const char *w)
{
	static const char *const names[] = { "single_row", "multi_row", "interactive",
	                                     "transfers", "audit", "scan", "get", "readonly",
	                                     "recover", "calls", "ts", "longscan",
	                                     "scaling" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(w, names[i]) == 0)
			return 1;
	return 0;
}

/* A usage error: what was wrong, on stderr; exit status 2. */
__attribute__((format(printf, 1, 2))) static int bench_usage_err(const char *fmt, ...)
{
	va_list ap;

	fputs("mrtx: bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (mrtx bench --help lists the options)\n", stderr);
	return 2;
}

int cmd_bench(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "quick", no_argument, NULL, 'q' }, { "json", no_argument, NULL, 'j' },
		{ "only", required_argument, NULL, 'o' }, { "help", no_argument, NULL, 'h' },
		{ "durability", required_argument, NULL, 'd' },
		{ "points", required_argument, NULL, 'p' }, { NULL, 0, NULL, 0 }
	};
	calls cl[5] = { { 1, 0, 0, 0 }, { 2, 0, 0, 0 }, { 4, 0, 0, 0 }, { 16, 0, 0, 0 },
	                { 64, 0, 0, 0 } };
	bcfg c = { NULL, 0, 0, 2.0, 3, 0 };
	recover_stats rs;
	bres r[24];
	bsql q[24];
	brocks k[24];
	size_t n = 0;
	double mem = 0;
	const char *only = NULL, *durability = NULL;
	struct stat sb;
	int opt, points = 0;

	optind = 1;
	opterr = 0; /* (the messages below say what was wrong) */
	while ((opt = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
		if (opt == 'q')
			c.quick = 1;
		else if (opt == 'j')
			c.json = 1;
		else if (opt == 'o')
			only = optarg;
		else if (opt == 'h')
			return usage(stdout, 0);
		else if (opt == 'd')
			durability = optarg;
		else if (opt == 'p' && (points = atoi(optarg)) <= 0)
			return bench_usage_err("--points '%s': expected a number of points, 1 or more",
			                       optarg);
		else if (opt == ':')
			return bench_usage_err("%s needs a value", argv[optind - 1]);
		else if (opt == '?')
			return bench_usage_err("unknown option '%s'", argv[optind - 1]);
	}
	if (optind == argc)
		return bench_usage_err("expected DIR (a directory for its stores, or a rados:// "
		                       "address)");
	if (optind != argc - 1)
		return bench_usage_err("one DIR only, not '%s'", argv[argc - 1]);
	if ((durability || points) && !(only && strcmp(only, "scaling") == 0))
		return bench_usage_err("--durability and --points are options of --only scaling");
	c.dir = argv[optind];
	if (c.quick) {
		c.phase_s = 0.5;
		c.rounds = 2;
	}
	if (strncmp(c.dir, "rados://", 8) == 0)
		return bench_rados(&c, c.dir, only);
	if (only && !known_workload(only)) {
		fprintf(stderr, "mrtx: bench: unknown workload '%s' (single_row, multi_row, "
		        "interactive, transfers, audit, scan, get, readonly, recover, calls, ts, longscan, "
		        "scaling)\n", only);
		return 2;
	}
	if (mkdir(c.dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "mrtx: bench: %s: %s\n", c.dir, strerror(errno));
		return 1;
	}
	if (stat(c.dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
		fprintf(stderr, "mrtx: bench: %s is not a directory\n", c.dir);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	if (only && strcmp(only, "longscan") == 0)
		return bench_longscan(&c);
	if (only && strcmp(only, "scaling") == 0)
		return bench_scaling(&c, durability, points);
#define WANT(name) (!only || strcmp(only, name) == 0)
	memset(&rs, 0, sizeof(rs));
	memset(q, 0, sizeof(q));
	memset(k, 0, sizeof(k));
	if (WANT("single_row")) {
		wl_single(&c, MRTX_SYNC, &r[n++]);
		wl_single(&c, MRTX_NOSYNC, &r[n++]);
	}
	if (WANT("multi_row")) {
		wl_multi(&c, &r[n], &q[n], &k[n]);
		n++;
	}
	if (WANT("interactive")) {
		wl_interactive(&c, MRTX_NOSYNC, &r[n], &q[n], &k[n]);
		n++;
		wl_interactive(&c, MRTX_SYNC, &r[n], &q[n], &k[n]);
		n++;
	}
	if (WANT("transfers") || WANT("audit") || WANT("scan"))
		n += wl_transfers(&c, only, &r[n], &k[n]);
	if (WANT("get"))
		wl_get(&c, &r[n++]);
	if (WANT("readonly"))
		wl_readonly(&c, &r[n++]);
	if (WANT("recover"))
		wl_recover(&c, &r[n++], &rs);
	if (WANT("ts")) {
		wl_ts(&c, 1, &r[n++]);
		wl_ts(&c, MULTI_THREADS, &r[n++]);
	}
	if (WANT("calls")) {
		count_calls(&c, cl, 5);
		mem = mem_per_mutation(&c);
	}
#undef WANT
	if (n == 0 && only && strcmp(only, "calls") != 0) {
		fprintf(stderr, "mrtx: bench: unknown workload '%s' (single_row, multi_row, "
		        "interactive, transfers, audit, scan, get, readonly, recover, calls, ts, longscan, "
		        "scaling)\n", only);
		return 2;
	}
	report(&c, r, q, k, n, cl, (!only || strcmp(only, "calls") == 0) ? 5 : 0, mem, &rs);
	return 0;
}
