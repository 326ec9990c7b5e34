/* bench_int.h - pieces of `mrtx bench` shared by its files. */
#ifndef MRTX_TOOL_BENCH_INT_H
#define MRTX_TOOL_BENCH_INT_H

#include <lmdb.h>

#include "bench.h"
#include "mrtx.h"

typedef struct bcfg {
	const char *dir;
	int quick, json;
	double phase_s; /* seconds per phase */
	int rounds;
	int seq;        /* fresh store counter */
} bcfg;

typedef struct bres {
	const char *name, *mode;
	double mrtx_ops, base_ops, target;
	int has_base, threads, procs;
	const char *unit;
} bres;

typedef struct fixture {
	mrtx_db *db;
	MDB_env *env;
	MDB_dbi dbi;
	char *mdir, *ldir;
	void *ext; /* the RADOS bench's own state (bench_rados.c) */
} fixture;

typedef int (*op_fn)(fixture *f, unsigned *seed, long i);

/* The SQLite side of a workload (bench_sqlite.c); has == 0: none. */
typedef struct bsql {
	int has;
	double ops;             /* interactive: the better of the two variants */
	double target;          /* for mrtx / SQLite; 0: report only */
	int variants;           /* interactive: BEGIN IMMEDIATE and BEGIN DEFERRED */
	double imm_ops, def_ops;
	double imm_retries, def_retries; /* busy retries per committed txn */
} bsql;

/* The RocksDB side of a workload (bench_rocksdb.c); has == 0: none.
 * Rates in txn/s, retries per committed transaction. */
typedef struct brocks {
	int has;
	int threads;            /* in one process */
	double pess_ops, opt_ops;
	double pess_retries, opt_retries;
	double target;          /* for mrtx / the better of the two; 0: report */
} brocks;

/* interactive: BAL_ACCOUNTS accounts (rows r%08d, cell f:q0; LMDB and
 * SQLite key "r%08d/q0") of BAL_INIT each, 16-byte decimal balances */
#define BAL_ACCOUNTS 1000
#define BAL_INIT 1000
void bal_encode(char v[16], long long x);
int bal_decode(const void *p, size_t n, long long *out);
/* the next transfer: x from account *a to account *b */
void inter_pick(unsigned *seed, int *a, int *b, int *x);
/* an mrtx transfer (mrtx_run's fn): read both balances, think 200 us,
 * write a - x and b + x */
struct inter_payload {
	unsigned seed;
	int a, b, x;
	int bad; /* a balance did not decode */
};
int inter_fn(mrtx_txn *txn, void *p);

/* multi_row: MULTI_THREADS threads; a transaction writes the 4 rows of one
 * of MULTI_GROUPS groups (rows scattered over m0000000..m0099999), all with
 * its own id "TT:SSSSSSSSSSSSS" (thread, sequence number) */
#define MULTI_THREADS 8
#define MULTI_GROUPS 25000
typedef struct mthr {
	unsigned seed;
	long n;      /* committed transactions */
	int *groups; /* groups[s]: the group transaction s wrote */
	long cap;
} mthr;
typedef struct mlog {
	mthr th[MULTI_THREADS]; /* carried from round to round */
	long retries;           /* SQLite: busy retries */
} mlog;
void mlog_init(mlog *lg);
void mlog_free(mlog *lg);
/* thread id's next transaction: its group, rows and value (16 bytes + NUL) */
int multi_pick(mthr *t, int id, char rows[4][32], char v[17]);
void multi_done(mthr *t, int group);

/* Reads one cell (row's f:q0, or key "row/q0") into v: 1, or 0 if absent. */
typedef int (*cell_reader)(void *ctx, const char *row, char v[16]);
/* Die unless the BAL_ACCOUNTS balances sum to BAL_ACCOUNTS * BAL_INIT. */
void check_balances(const char *side, cell_reader rd, void *ctx);
/* Die unless every group's 4 rows agree with lg (see bench.c); returns
 * the number of groups found written. */
long check_groups(const char *side, cell_reader rd, void *ctx, const mlog *lg);

/* bench_sqlite.c: the SQLite baseline (WAL; synchronous FULL for
 * MRTX_SYNC, OFF otherwise), table kv(k TEXT PRIMARY KEY, v BLOB) */
char *sqlite_create(bcfg *c);
void sqlite_load_accounts(const char *path);
void sqlite_inter_child(const char *path, int immediate, int durability, int id,
                        volatile long *ops, volatile long *retries, volatile int *stop)
	__attribute__((noreturn));
/* multi_row's threads on SQLite for secs; returns the phase's seconds
 * (connections opened and closed outside them); lg counts the txns */
double sqlite_run_threads(const char *path, double secs, mlog *lg);
void sqlite_check_balances(const char *path, const char *side);
long sqlite_check_groups(const char *path, const mlog *lg);

double now_s(void);
void die(const char *step, const char *msg) __attribute__((noreturn));
char *fresh_dir(bcfg *c, const char *kind);
unsigned env_flags(int durability);
/* "sync", "nosync" or "nometasync" */
const char *mode_name(int durability);
void fixture_open(bcfg *c, fixture *f, int durability);
void fixture_close(fixture *f);
int mrtx_put_row(mrtx_db *db, const char *row, int cells);
void alternate(bcfg *c, fixture *f, op_fn m, op_fn b, bres *r);
int op_single_mrtx(fixture *f, unsigned *seed, long i);
int op_single_lmdb(fixture *f, unsigned *seed, long i);
int op_get_mrtx(fixture *f, unsigned *seed, long i);
int op_rocommit_mrtx(fixture *f, unsigned *seed, long i);
int op_get_lmdb(fixture *f, unsigned *seed, long i);
/* multi_row's threads on mrtx or LMDB for secs; returns the phase's
 * seconds; lg counts the txns */
double run_threads(fixture *f, int use_mrtx, double secs, mlog *lg);
/* Timestamps a second (admin_ts_next) taken by `threads` threads
 * (1..MULTI_THREADS) of db's store, over secs (the `ts` workload). */
double bench_ts_rate(mrtx_db *db, int threads, double secs);
double bench_snapshot_rate(mrtx_db *db, const char *row, double secs);
/* `mrtx bench DIR --only longscan` (bench_scan.c): returns the exit status. */
int bench_longscan(bcfg *c);
/* ... on db, whose table t (family f) it fills (RADOS: bench_rados.c). */
int bench_longscan_on(bcfg *c, mrtx_db *db);
/* `mrtx bench DIR --only transfers|audit|scan` (bench_transfer.c): the
 * threaded workloads against RocksDB, results appended to r and k */
size_t wl_transfers(bcfg *c, const char *only, bres *r, brocks *k);
/* `mrtx bench rados://...`: returns the exit status. */
int bench_rados(bcfg *c, const char *uri, const char *only);
/* scan_100k on db, a fresh RADOS store whose objects are named
 * store_prefix.* (bench_rscan.c); raw: the run's rraw (rados_raw.h). */
struct rraw;
int bench_rados_scan(bcfg *c, mrtx_db *db, struct rraw *raw, const char *store_prefix);
/* interactive sides */
enum { SIDE_MRTX, SIDE_LMDB, SIDE_SQLITE_IMM, SIDE_SQLITE_DEF };
/* committed transactions and busy retries (SQLite), added up */
typedef struct pcount {
	long txns, retries;
} pcount;
/* cnt may be NULL */
double run_procs(fixture *f, int who, const char *sqlite_path, int durability, int nprocs,
                 double secs, pcount *cnt);
void load_accounts(fixture *f);
typedef struct rocks rocks;
/* The bank on every threaded side: f (mrtx and LMDB) and the two RocksDB
 * stores (*rp, *ro NULL in a build without RocksDB), fresh, at
 * durability, every account given BAL_INIT; bank_close ends them. */
void bank_open(bcfg *c, int durability, fixture *f, rocks **rp, rocks **ro);
void bank_close(fixture *f, rocks *rp, rocks *ro);
void check_fixture_balances(fixture *f, int who);
long check_fixture_groups(fixture *f, int use_mrtx, const mlog *lg);

/* bench_rocksdb.c: the RocksDB baseline, a TransactionDB (pessimistic)
 * or an OptimisticTransactionDB at RocksDB's defaults, WAL on, synced at
 * every commit for MRTX_SYNC; keys "row/q0" as LMDB's.  Built without
 * RocksDB, bench_norocksdb.c stands in: rocks_open returns NULL. */
enum { ROCKS_PESSIMISTIC, ROCKS_OPTIMISTIC };
/* 1 in a build with RocksDB, 0 without */
int rocks_built(void);
rocks *rocks_open(bcfg *c, int kind, int durability);
void rocks_close(rocks *r);
void rocks_load_accounts(rocks *r);
/* interactive's transfers by nthreads threads of this process for secs:
 * returns txn/s; cnt (may be NULL) adds the transactions and retries */
double rocks_run_transfers(rocks *r, int nthreads, double secs, pcount *cnt);
/* multi_row's threads for secs: returns the phase's seconds; lg counts */
double rocks_run_threads(rocks *r, double secs, mlog *lg);
/* writers transfer threads and auditors audit threads (a snapshot
 * transaction iterating every account, sum checked) of this process for
 * secs: returns the seconds; cnt adds the transfers and their retries,
 * *audits the audits */
double rocks_run_mixed(rocks *r, int writers, int auditors, double secs, pcount *cnt,
                       long *audits);
void rocks_check_balances(rocks *r);
long rocks_check_groups(rocks *r, const mlog *lg);

/* `mrtx bench DIR --only scaling` (bench_scaling.c): durability "sync",
 * "nosync" or "both" (NULL: sync); points > 0 keeps the first points of
 * each sweep.  Returns the exit status. */
int bench_scaling(bcfg *c, const char *durability, int points);
/* its transfers on LMDB, from any thread (bench.c): 0, an LMDB error, or
 * -1 (an account missing or not a balance) */
int inter_lmdb(MDB_env *env, MDB_dbi dbi, int a, int b, int x);
/* one LMDB write txn putting cells q0.. of rows (value: 16 bytes, or NULL
 * for "vvvv...") */
int lmdb_put_rows(fixture *f, char rows[][32], int nrows, int cells, const char *value);
/* cell_readers of f->db's (ctx: the mrtx_db) and f's LMDB store (ctx: f) */
int read_mrtx(void *ctx, const char *row, char v[16]);
int read_lmdb(void *ctx, const char *row, char v[16]);
/* its blind puts: one thread's transactions of nrows (<= PUT_MAX) puts of
 * 16-byte values to rows r%08d drawn from PUT_ROWS; last[i] is the number
 * of the last transaction that wrote row i (-1: none) */
#define PUT_ROWS 100000
#define PUT_MAX 256
typedef struct plog {
	int nrows;
	unsigned seed;
	long txns, retries;
	long *last;
} plog;
/* the next transaction's distinct rows and value (16 bytes + NUL) */
void plog_pick(plog *lg, char rows[][32], char v[17]);
/* Die unless every row holds exactly its last write in lg; returns the
 * rows found. */
long check_puts(const char *side, cell_reader rd, void *ctx, const plog *lg);
/* lg's transactions on RocksDB by this thread for secs: returns the
 * seconds; lg counts them and their retries */
double rocks_run_puts(rocks *r, double secs, plog *lg);
long rocks_check_puts(rocks *r, const plog *lg);

#endif
