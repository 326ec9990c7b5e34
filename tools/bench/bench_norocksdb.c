/*
 * bench_norocksdb.c - stands in for bench_rocksdb.c in a build without
 * RocksDB: there is no RocksDB store to open, so `mrtx bench` reports the
 * baseline absent and calls nothing else here.
 */
#include "bench_int.h"

int rocks_built(void)
{
	return 0;
}

rocks *rocks_open(bcfg *c, int kind, int durability)
{
	(void)c;
	(void)kind;
	(void)durability;
	return NULL;
}

void rocks_close(rocks *r)
{
	(void)r;
}

static void absent(void) __attribute__((noreturn));
static void absent(void)
{
	die("rocksdb", "this mrtx was built without RocksDB");
}

void rocks_load_accounts(rocks *r)
{
	(void)r;
	absent();
}

double rocks_run_transfers(rocks *r, int nthreads, double secs, pcount *cnt)
{
	(void)r;
	(void)nthreads;
	(void)secs;
	(void)cnt;
	absent();
}

double rocks_run_threads(rocks *r, double secs, mlog *lg)
{
	(void)r;
	(void)secs;
	(void)lg;
	absent();
}

double rocks_run_mixed(rocks *r, int writers, int auditors, double secs, pcount *cnt,
                       long *audits)
{
	(void)r;
	(void)writers;
	(void)auditors;
	(void)secs;
	(void)cnt;
	(void)audits;
	absent();
}

void rocks_check_balances(rocks *r)
{
	(void)r;
	absent();
}

long rocks_check_groups(rocks *r, const mlog *lg)
{
	(void)r;
	(void)lg;
	absent();
}

double rocks_run_puts(rocks *r, double secs, plog *lg)
{
	(void)r;
	(void)secs;
	(void)lg;
	absent();
}

long rocks_check_puts(rocks *r, const plog *lg)
{
	(void)r;
	(void)lg;
	absent();
}
